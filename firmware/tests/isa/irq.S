/*
 * irq.S: the machine timer interrupt (docs/engine.md "Traps", privileged spec 3.1.9 and
 * 3.2.1), WFI, and vectored mtvec, cases 2000-2099.
 * The handler (trap.S) silences the timer (mtimecmp = all ones) before it returns.
 */
#include "isa.h"

/* Timer interrupt delay in engine cycles: far more than the instructions between
 * programming mtimecmp and reaching the WFI, so the interrupt comes during the WFI. */
#define TIMER_DELTA 2000

/* mtimecmp <- mtime + TIMER_DELTA (64-bit), written high-low-high so that no
 * intermediate value is below the target (privileged spec 3.2.1).  Leaves the target
 * in a6 (low) and a7 (high).  Clobbers t0-t2. */
.macro TIMER_ARM
	LA_ABS t0, MENIC_TIMER_MTIME_LO
1:	lw a7, 4(t0)
	lw a6, 0(t0)
	lw t1, 4(t0)
	bne a7, t1, 1b
	li t1, TIMER_DELTA
	add a6, a6, t1
	sltu t1, a6, t1
	add a7, a7, t1
	li t1, -1
	sw t1, 12(t0)
	sw a6, 8(t0)
	sw a7, 12(t0)
.endm

/* mtimecmp <- all ones: no timer interrupt.  Clobbers t0, t1. */
.macro TIMER_OFF
	LA_ABS t0, MENIC_TIMER_MTIMECMP_LO
	li t1, -1
	sw t1, 4(t0)
	sw t1, 0(t0)
.endm

/* mtimecmp <- 0: MTIP pending at once.  Clobbers t0. */
.macro TIMER_NOW
	LA_ABS t0, MENIC_TIMER_MTIMECMP_LO
	sw zero, 0(t0)
	sw zero, 4(t0)
.endm

	.text
	.globl isa_group_irq
isa_group_irq:
	csrw mie, zero
	csrw mstatus, zero

	/* MTIP pending with mie.MTIE = 1 and mstatus.MIE = 0: no interrupt, and WFI returns
	 * at once; mip shows MTIP until mtimecmp moves past mtime */
	CASE_BEGIN 2000
	TIMER_NOW
	li t0, MIP_MTIP
	csrw mie, t0
	TRAP_ARM
	nop
	wfi
	nop
	TRAP_CHECK_NONE
	csrr a4, mip
	CHECK a4, MIP_MTIP
	TIMER_OFF
	csrr a4, mip
	CHECK a4, 0
	csrw mie, zero
	CASE_END

	/* MTIP pending, MTIE = 0, MIE = 1: no interrupt */
	CASE_BEGIN 2001
	TIMER_NOW
	TRAP_ARM
	csrsi mstatus, MSTATUS_MIE
	nop
	nop
	csrci mstatus, MSTATUS_MIE
	TRAP_CHECK_NONE
	TIMER_OFF
	CASE_END

	/* MTIP pending and MTIE = 1: the interrupt is taken right after the instruction that
	 * sets MIE, with mepc = the next instruction and mtval = 0 */
	CASE_BEGIN 2002
	li t0, -1
	csrw mtval, t0
	TIMER_NOW
	li t0, MIP_MTIP
	csrw mie, t0
	TRAP_ARM
	csrsi mstatus, MSTATUS_MIE
.Lirq2002n:
	nop
	csrr a4, mstatus
	csrw mstatus, zero
	csrw mie, zero
	TRAP_CHECK CAUSE_IRQ_TIMER, .Lirq2002n, 0
	CHECK_MEM tr_status, MSTATUS_MPP | MSTATUS_MPIE
	lw a5, %lo(tr_mip)(zero)
	andi a5, a5, MIP_MTIP
	CHECK a5, MIP_MTIP
	CHECK a4, MSTATUS_MPP | MSTATUS_MPIE | MSTATUS_MIE
	CASE_END

	/* WFI sleeps until mtime >= mtimecmp; the interrupt is then taken with mepc = the
	 * instruction after the WFI; the handler sees mtime >= mtimecmp; mcycle counted the
	 * cycles asleep */
	CASE_BEGIN 2003
	csrr s3, mcycle
	TIMER_ARM
	li t0, MIP_MTIP
	csrw mie, t0
	TRAP_ARM
	csrsi mstatus, MSTATUS_MIE
	wfi
.Lirq2003n:
	csrr s4, mcycle
	csrw mstatus, zero
	csrw mie, zero
	TRAP_CHECK CAUSE_IRQ_TIMER, .Lirq2003n, 0
	/* the handler read the target back from mtimecmp */
	lw a4, %lo(tr_cmp_lo)(zero)
	CHECK_R a4, a6
	lw a4, %lo(tr_cmp_hi)(zero)
	CHECK_R a4, a7
	/* mtime (handler) >= mtimecmp: !(hi < cmp_hi) && !(hi == cmp_hi && lo < cmp_lo) */
	lw a2, %lo(tr_mtime_lo)(zero)
	lw a3, %lo(tr_mtime_hi)(zero)
	sltu a4, a3, a7
	CHECK a4, 0
	sltu a4, a2, a6
	xor a5, a3, a7
	seqz a5, a5
	and a4, a4, a5
	CHECK a4, 0
	sub a4, s4, s3
	li t0, TIMER_DELTA
	sltu a4, a4, t0
	CHECK a4, 0
	CASE_END

	/* WFI with mstatus.MIE = 0 still sleeps until mip & mie != 0, then execution goes on
	 * after it without a trap */
	CASE_BEGIN 2004
	TIMER_ARM
	li t0, MIP_MTIP
	csrw mie, t0
	TRAP_ARM
	wfi
	TRAP_CHECK_NONE
	csrr a4, mip
	CHECK a4, MIP_MTIP
	LA_ABS t0, MENIC_TIMER_MTIME_LO
	lw a2, 0(t0)
	lw a3, 4(t0)
	sltu a4, a3, a7
	CHECK a4, 0
	sltu a4, a2, a6
	xor a5, a3, a7
	seqz a5, a5
	and a4, a4, a5
	CHECK a4, 0
	TIMER_OFF
	csrw mie, zero
	CASE_END

	/* vectored mtvec: the timer interrupt enters at base + 4 * 7 */
	CASE_BEGIN 2005
	li t0, -1
	sw t0, %lo(tr_vec)(zero)
	LA_ABS t0, isa_trap_vectors + 1
	csrw mtvec, t0
	TIMER_ARM
	li t0, MIP_MTIP
	csrw mie, t0
	TRAP_ARM
	csrsi mstatus, MSTATUS_MIE
	wfi
.Lirq2005n:
	csrw mstatus, zero
	csrw mie, zero
	LA_ABS t0, isa_trap_entry
	csrw mtvec, t0
	TRAP_CHECK CAUSE_IRQ_TIMER, .Lirq2005n, 0
	CHECK_MEM tr_vec, 7
	CASE_END

	/* vectored mtvec: synchronous traps enter at the base */
	CASE_BEGIN 2006
	li t0, -1
	sw t0, %lo(tr_vec)(zero)
	LA_ABS t0, isa_trap_vectors + 1
	csrw mtvec, t0
	TRAP_ARM
.Lirq2006e:
	ecall
	LA_ABS t0, isa_trap_entry
	csrw mtvec, t0
	TRAP_CHECK CAUSE_ECALL_M, .Lirq2006e, 0
	CHECK_MEM tr_vec, 0
	CASE_END

	/* mip.MEIP follows the mailbox: empty, so MEIE alone raises nothing */
	CASE_BEGIN 2007
	LA_ABS t0, MENIC_MBOX_IN_COUNT
	lw a4, 0(t0)
	CHECK a4, 0
	li t0, MIP_MEIP
	csrw mie, t0
	TRAP_ARM
	csrsi mstatus, MSTATUS_MIE
	nop
	csrw mstatus, zero
	csrw mie, zero
	TRAP_CHECK_NONE
	csrr a4, mip
	CHECK a4, 0
	CASE_END

	jr s0
