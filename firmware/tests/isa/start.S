/*
 * start.S: reset entry, main sequence and summary of the ISA conformance program.
 *
 * Every engine runs this image on its own SRAM copy; the .hbm section is shared.  The
 * program prints
 *     isa: engine <mhartid> of <engines>
 *     isa: cases <total>
 * then one `ok <num>` / `FAIL <num> ...` line per case, and finally
 *     isa: <passed>/<total> passed
 * and writes MENIC_SYS_EXIT with the number of cases that did not pass (0: all passed).
 * <total> is the number of words in the .isa_cases section (link.ld: isa_ncases).
 */
#include "isa.h"

/*
 * .lowdata sits at address 0, below 2 KiB, so that the trap handler and the report
 * routines address it as %lo(sym)(zero) without a base register (link.ld checks the
 * bound).  The first 16 bytes are a pad: an illegal encoding that a faulty decoder took
 * for a load or store at 0(x0) hits the pad rather than the handler's state.
 */
	.section .lowdata, "aw", @progbits
	.balign 4
	.globl lowdata_pad
lowdata_pad:	.word 0, 0, 0, 0
	.irp name, h_t0, h_t1, h_t2, tr_cause, tr_epc, tr_tval, tr_status, tr_mip, tr_count, tr_expect, tr_unexp, tr_resume, tr_vec, tr_mtime_lo, tr_mtime_hi, tr_cmp_lo, tr_cmp_hi, ux_cause, ux_epc, ux_tval, rep_got, rep_want, rep_run, rep_pass, rst_or, rst_minstret, rst_mcycle, rst_mstatus, rst_mtvec, rst_mie, rst_mip, rst_cmp_lo, rst_cmp_hi
	.globl \name
\name:	.word 0
	.endr

	.section .text.start, "ax", @progbits
	.globl _start
_start:
	/* Reset state first, before anything writes a register: the OR of x1..x31, then
	 * minstret (30 instructions retired) and mcycle (30 x cpiAlu + cpiCsr). */
	or x1, x1, x2
	.irp r, 3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	or x1, x1, x\r
	.endr
	csrr x2, minstret
	csrr x3, mcycle
	sw x1, %lo(rst_or)(zero)
	sw x2, %lo(rst_minstret)(zero)
	sw x3, %lo(rst_mcycle)(zero)
	csrr x2, mstatus
	sw x2, %lo(rst_mstatus)(zero)
	csrr x2, mtvec
	sw x2, %lo(rst_mtvec)(zero)
	csrr x2, mie
	sw x2, %lo(rst_mie)(zero)
	csrr x2, mip
	sw x2, %lo(rst_mip)(zero)
	LA_ABS x2, MENIC_TIMER_MTIMECMP_LO
	lw x3, 0(x2)
	sw x3, %lo(rst_cmp_lo)(zero)
	lw x3, 4(x2)
	sw x3, %lo(rst_cmp_hi)(zero)

	la sp, isa_stack_top
	li tp, 0
	csrr s1, mhartid
	LA_ABS t0, MENIC_SYS_NUM_ENGINES
	lw s2, 0(t0)
	LA_ABS t0, isa_trap_entry
	csrw mtvec, t0

	la a0, str_engine
	jal ra, isa_puts
	mv a0, s1
	jal ra, isa_putdec
	la a0, str_of
	jal ra, isa_puts
	mv a0, s2
	jal ra, isa_putdec
	la a0, str_cases
	jal ra, isa_puts
	LA_ABS a0, isa_ncases
	jal ra, isa_putdec
	li a0, '\n'
	jal ra, isa_putc

	jal s0, isa_group_reset
	jal s0, isa_group_rv32i
	jal s0, isa_group_rv32m
	jal s0, isa_group_rv32a
	jal s0, isa_group_csr
	jal s0, isa_group_traps
	jal s0, isa_group_irq
	jal s0, isa_group_multi

	/* last case: no trap happened that a case did not expect */
	CASE_BEGIN 2900
	CHECK_MEM tr_unexp, 0
	CASE_END

	lw t0, %lo(tr_unexp)(zero)
	beqz t0, 1f
	la a0, str_unexpected
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
1:
	la a0, str_summary
	jal ra, isa_puts
	lw a0, %lo(rep_pass)(zero)
	jal ra, isa_putdec
	li a0, '/'
	jal ra, isa_putc
	LA_ABS a0, isa_ncases
	jal ra, isa_putdec
	la a0, str_passed
	jal ra, isa_puts
	/* exit code: cases that did not pass, counting cases that never reported */
	LA_ABS a0, isa_ncases
	lw t0, %lo(rep_pass)(zero)
	sub a0, a0, t0

	.globl isa_exit
isa_exit:
	LA_ABS t0, MENIC_SYS_EXIT
	sw a0, 0(t0)
1:	j 1b

/* ---- reset state, recorded by _start (docs/engine.md "Reset"), cases 1-99 ---- */
	.text
isa_group_reset:
	/* every x register is 0 */
	CASE_BEGIN 1
	CHECK_MEM rst_or, 0
	CASE_END
	/* minstret = 0 at reset: 30 instructions retired before the read */
	CASE_BEGIN 2
	CHECK_MEM rst_minstret, 30
	CASE_END
	/* mcycle = 0 at reset: 30 ALU instructions and one CSR read before the read */
	CASE_BEGIN 3
	CHECK_MEM rst_mcycle, 32
	CASE_END
	CASE_BEGIN 4
	CHECK_MEM rst_mstatus, 0x1800
	CASE_END
	CASE_BEGIN 5
	CHECK_MEM rst_mtvec, 0
	CASE_END
	CASE_BEGIN 6
	CHECK_MEM rst_mie, 0
	CASE_END
	CASE_BEGIN 7
	CHECK_MEM rst_mip, 0
	CASE_END
	/* mtimecmp = all ones */
	CASE_BEGIN 8
	CHECK_MEM rst_cmp_lo, 0xffffffff
	CHECK_MEM rst_cmp_hi, 0xffffffff
	CASE_END
	/* 1 <= engines <= 64 and mhartid < engines */
	CASE_BEGIN 9
	addi a2, s2, -1
	sltiu a2, a2, ISA_MAX_ENGINES
	CHECK a2, 1
	sltu a2, s1, s2
	CHECK a2, 1
	CASE_END
	/* SRAM_BYTES: a multiple of 4 KiB holding this image; HBM_BYTES a multiple of 64 KiB
	 * holding the .hbm section (layouts/config.json ranges) */
	CASE_BEGIN 10
	LA_ABS t0, MENIC_SYS_SRAM_BYTES
	lw a2, 0(t0)
	li a3, 0xfff
	and a3, a2, a3
	CHECK a3, 0
	LA_ABS a3, isa_sram_end
	sltu a3, a2, a3
	CHECK a3, 0
	LA_ABS t0, MENIC_SYS_HBM_BYTES
	lw a2, 0(t0)
	li a3, 0xffff
	and a3, a2, a3
	CHECK a3, 0
	LA_ABS a3, isa_hbm_size
	sltu a3, a2, a3
	CHECK a3, 0
	CASE_END
	jr s0

	.section .rodata
str_engine:
	.asciz "isa: engine "
str_of:
	.asciz " of "
str_cases:
	.asciz "\nisa: cases "
str_summary:
	.asciz "isa: "
str_passed:
	.asciz " passed\n"
str_unexpected:
	.asciz "isa: unexpected trap; first: mcause 0x"

	.section .stack, "aw", @nobits
	.balign 16
	.space 1024
	.globl isa_stack_top
isa_stack_top:
