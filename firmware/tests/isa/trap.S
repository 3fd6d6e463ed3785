/*
 * trap.S: the trap handler of the ISA program, its vector table and the panic exit.
 *
 * isa_trap_entry (mtvec, direct mode) records mcause, mepc, mtval, mstatus and mip in
 * .lowdata and counts the trap.  A synchronous trap resumes at tr_resume when a case set
 * it (the fetch-fault cases, whose mepc is the bad target), else at mepc + 4, skipping the
 * faulting instruction.  An interrupt (mcause bit 31) records mtime and mtimecmp, silences
 * the timer (mtimecmp = all ones) and returns to mepc, the interrupted instruction.
 * A trap while tr_expect = 0 is unexpected: it is counted, the first one recorded, and
 * after ISA_MAX_UNEXPECTED of them the program gives up (isa_panic) rather than loop.
 * The handler uses only t0 and t1, saved in .lowdata, so it may interrupt any code.
 */
#include "isa.h"

#define ISA_MAX_UNEXPECTED 16

	.text
	.balign 4
	.globl isa_trap_entry
isa_trap_entry:
	sw t0, %lo(h_t0)(zero)
	sw t1, %lo(h_t1)(zero)
	csrr t0, mcause
	sw t0, %lo(tr_cause)(zero)
	csrr t1, mepc
	sw t1, %lo(tr_epc)(zero)
	csrr t1, mtval
	sw t1, %lo(tr_tval)(zero)
	csrr t1, mstatus
	sw t1, %lo(tr_status)(zero)
	csrr t1, mip
	sw t1, %lo(tr_mip)(zero)
	lw t1, %lo(tr_count)(zero)
	addi t1, t1, 1
	sw t1, %lo(tr_count)(zero)

	lw t1, %lo(tr_expect)(zero)
	bnez t1, .Lexpected
	lw t1, %lo(tr_unexp)(zero)
	bnez t1, .Lnot_first
	sw t0, %lo(ux_cause)(zero)
	csrr t1, mepc
	sw t1, %lo(ux_epc)(zero)
	csrr t1, mtval
	sw t1, %lo(ux_tval)(zero)
	li t1, 0
.Lnot_first:
	addi t1, t1, 1
	sw t1, %lo(tr_unexp)(zero)
	li t0, ISA_MAX_UNEXPECTED
	bltu t1, t0, .Lexpected
	LA_ABS t1, isa_panic
	csrw mepc, t1
	j .Lout

.Lexpected:
	sw zero, %lo(tr_expect)(zero)
	csrr t0, mcause
	bltz t0, .Lirq
	lw t1, %lo(tr_resume)(zero)
	bnez t1, .Lresume
	csrr t1, mepc
	addi t1, t1, 4
.Lresume:
	csrw mepc, t1
	sw zero, %lo(tr_resume)(zero)
.Lout:
	lw t0, %lo(h_t0)(zero)
	lw t1, %lo(h_t1)(zero)
	mret

.Lirq:
	LA_ABS t0, MENIC_TIMER_MTIME_LO
	lw t1, 0(t0)
	sw t1, %lo(tr_mtime_lo)(zero)
	lw t1, 4(t0)
	sw t1, %lo(tr_mtime_hi)(zero)
	lw t1, 8(t0)
	sw t1, %lo(tr_cmp_lo)(zero)
	lw t1, 12(t0)
	sw t1, %lo(tr_cmp_hi)(zero)
	li t1, -1
	sw t1, 12(t0)
	sw t1, 8(t0)
	j .Lout

/*
 * Vector table for mtvec mode 1: synchronous traps enter at the base, interrupt <cause>
 * at base + 4 * cause.  Entry i records i in tr_vec, then joins isa_trap_entry.
 */
	.balign 64
	.globl isa_trap_vectors
isa_trap_vectors:
	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	j .Lvec\i
	.endr
	.irp i, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
.Lvec\i:
	sw t0, %lo(h_t2)(zero)
	li t0, \i
	sw t0, %lo(tr_vec)(zero)
	lw t0, %lo(h_t2)(zero)
	j isa_trap_entry
	.endr

/* Too many unexpected traps: report the first and exit with ISA_EXIT_PANIC. */
	.globl isa_panic
isa_panic:
	la sp, isa_stack_top
	la a0, str_panic
	jal ra, isa_puts
	lw a0, %lo(ux_cause)(zero)
	jal ra, isa_puthex
	la a0, str_epc
	jal ra, isa_puts
	lw a0, %lo(ux_epc)(zero)
	jal ra, isa_puthex
	la a0, str_tval
	jal ra, isa_puts
	lw a0, %lo(ux_tval)(zero)
	jal ra, isa_puthex
	li a0, '\n'
	jal ra, isa_putc
	li a0, ISA_EXIT_PANIC
	j isa_exit

	.section .rodata
str_panic:
	.asciz "isa: PANIC too many unexpected traps; first: mcause 0x"
	.globl str_epc, str_tval
str_epc:
	.asciz " mepc 0x"
str_tval:
	.asciz " mtval 0x"
