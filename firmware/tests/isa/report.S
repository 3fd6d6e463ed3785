/*
 * report.S: console output and the per-case report of the ISA program.
 * The console routines are leaf functions that write MENIC_SYS_CONSOLE_TX one byte per
 * store; they avoid DIV so that a broken divider cannot garble the report.
 */
#include "isa.h"

	.text

/* isa_check: a0 got, a1 want.  The first mismatch of a case is kept for its FAIL line.
 * Clobbers nothing but tp. */
	.globl isa_check
isa_check:
	beq a0, a1, 1f
	bnez tp, 1f
	li tp, 1
	sw a0, %lo(rep_got)(zero)
	sw a1, %lo(rep_want)(zero)
1:	ret

/* isa_case_end: print `ok <gp>` or `FAIL <gp> got 0x.. want 0x..` and count. */
	.globl isa_case_end
isa_case_end:
	addi sp, sp, -16
	sw ra, 12(sp)
	lw t0, %lo(rep_run)(zero)
	addi t0, t0, 1
	sw t0, %lo(rep_run)(zero)
	bnez tp, .Lfail
	lw t0, %lo(rep_pass)(zero)
	addi t0, t0, 1
	sw t0, %lo(rep_pass)(zero)
	la a0, str_ok
	jal ra, isa_puts
	mv a0, gp
	jal ra, isa_putdec
	j .Lnewline
.Lfail:
	la a0, str_fail
	jal ra, isa_puts
	mv a0, gp
	jal ra, isa_putdec
	la a0, str_got
	jal ra, isa_puts
	lw a0, %lo(rep_got)(zero)
	jal ra, isa_puthex
	la a0, str_want
	jal ra, isa_puts
	lw a0, %lo(rep_want)(zero)
	jal ra, isa_puthex
.Lnewline:
	li a0, '\n'
	jal ra, isa_putc
	li tp, 0
	lw ra, 12(sp)
	addi sp, sp, 16
	ret

/* isa_putc: a0 = byte.  Clobbers t0. */
	.globl isa_putc
isa_putc:
	LA_ABS t0, MENIC_SYS_CONSOLE_TX
	sw a0, 0(t0)
	ret

/* isa_puts: a0 = NUL-terminated string.  Clobbers a0, t0, t1. */
	.globl isa_puts
isa_puts:
	LA_ABS t0, MENIC_SYS_CONSOLE_TX
1:	lbu t1, 0(a0)
	beqz t1, 2f
	sw t1, 0(t0)
	addi a0, a0, 1
	j 1b
2:	ret

/* isa_putdec: a0 = unsigned value, in decimal by repeated subtraction of powers of ten.
 * Clobbers a0, t0-t5. */
	.globl isa_putdec
isa_putdec:
	LA_ABS t0, MENIC_SYS_CONSOLE_TX
	la t1, pow10
	li t4, 0		/* a digit was printed */
	li t5, 1
1:	lw t2, 0(t1)
	li t3, 0
2:	bltu a0, t2, 3f
	sub a0, a0, t2
	addi t3, t3, 1
	j 2b
3:	bnez t3, 4f
	bnez t4, 4f
	bne t2, t5, 5f		/* leading zero, unless it is the units digit */
4:	li t4, 1
	addi t3, t3, '0'
	sw t3, 0(t0)
5:	addi t1, t1, 4
	bne t2, t5, 1b
	ret

/* isa_puthex: a0 = value, as 8 lower-case hex digits.  Clobbers t0-t3. */
	.globl isa_puthex
isa_puthex:
	LA_ABS t0, MENIC_SYS_CONSOLE_TX
	li t1, 28
1:	srl t2, a0, t1
	andi t2, t2, 15
	li t3, 10
	bltu t2, t3, 2f
	addi t2, t2, 'a' - '0' - 10
2:	addi t2, t2, '0'
	sw t2, 0(t0)
	addi t1, t1, -4
	bgez t1, 1b
	ret

	.section .rodata
	.balign 4
pow10:
	.word 1000000000, 100000000, 10000000, 1000000, 100000, 10000, 1000, 100, 10, 1
str_ok:
	.asciz "ok "
str_fail:
	.asciz "FAIL "
str_got:
	.asciz " got 0x"
str_want:
	.asciz " want 0x"
