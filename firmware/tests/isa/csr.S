/*
 * csr.S: Zicsr instructions (unprivileged spec chapter 7) and the machine CSRs of
 * docs/engine.md "CSRs", cases 1400-1599; the counters, cases 1600-1699.
 * Illegal CSR accesses (unknown number, write to a read-only CSR) are in traps.S.
 */
#include "isa.h"

	.text
	.globl isa_group_csr
isa_group_csr:

	/* ---- the six CSR instructions, on mscratch ---- */
	TEST_CSR 1400, csrrw, mscratch, 0x22222222, 0x11111111, 0x22222222
	TEST_CSR 1401, csrrs, mscratch, 0xfff0f0f0, 0xf0f0f0f0, 0x0ff00000
	TEST_CSR 1402, csrrc, mscratch, 0x00f0f0f0, 0xf0f0f0f0, 0xf0000001
	/* the 5-bit immediate is zero-extended */
	TEST_CSRI 1403, csrrwi, mscratch, 0x0000001f, 0xcafebabe, 31
	TEST_CSRI 1404, csrrsi, mscratch, 0x80000111, 0x80000100, 0x11
	TEST_CSRI 1405, csrrci, mscratch, 0x800000e0, 0x800000ff, 0x1f

	/* CSRRS/CSRRC with rs1 = x0 and CSRRSI/CSRRCI with uimm = 0 do not write: legal on
	 * read-only CSRs, and mscratch keeps its value */
	CASE_BEGIN 1406
	li a3, 0x1406
	csrw mscratch, a3
	TRAP_ARM
	csrrs a4, mscratch, zero
	csrrc a4, mscratch, zero
	csrrsi a4, mscratch, 0
	csrrci a4, mscratch, 0
	csrrs a5, mhartid, zero
	csrrc a5, mhartid, zero
	csrrsi a5, mhartid, 0
	csrrci a5, mvendorid, 0
	csrrs a6, cycle, zero
	TRAP_CHECK_NONE
	CHECK a4, 0x1406
	csrr a4, mscratch
	CHECK a4, 0x1406
	CASE_END

	/* CSRRW with rd = x0 writes; x0 stays 0 */
	CASE_BEGIN 1407
	li a3, 0x1407
	csrrw zero, mscratch, a3
	CHECK zero, 0
	csrr a4, mscratch
	CHECK a4, 0x1407
	csrrwi zero, mscratch, 7
	csrr a4, mscratch
	CHECK a4, 7
	CASE_END

	/* rd = rs1: the old CSR value goes to rd, the old rs1 to the CSR */
	CASE_BEGIN 1408
	li a3, 0xaaaa5555
	csrw mscratch, a3
	li a3, 0x5555aaaa
	csrrw a3, mscratch, a3
	CHECK a3, 0xaaaa5555
	csrr a4, mscratch
	CHECK a4, 0x5555aaaa
	li a3, 0x0000ffff
	csrrs a3, mscratch, a3
	CHECK a3, 0x5555aaaa
	csrr a4, mscratch
	CHECK a4, 0x5555ffff
	CASE_END

	/* every bit of mscratch */
	CASE_BEGIN 1409
	li a3, -1
	csrw mscratch, a3
	csrr a4, mscratch
	CHECK a4, 0xffffffff
	csrw mscratch, zero
	csrr a4, mscratch
	CHECK a4, 0
	CASE_END

	/* ---- machine CSRs of docs/engine.md ---- */
	/* mepc: bits 1:0 read 0 */
	CASE_BEGIN 1500
	li a3, 0x00001003
	csrw mepc, a3
	csrr a4, mepc
	CHECK a4, 0x00001000
	li a3, 0x80000006
	csrw mepc, a3
	csrr a4, mepc
	CHECK a4, 0x80000004
	CASE_END

	/* mtvec: direct and vectored modes read back */
	CASE_BEGIN 1501
	csrr a6, mtvec
	CHECK_LA a6, isa_trap_entry
	LA_ABS a3, isa_trap_vectors + 1
	csrw mtvec, a3
	csrr a4, mtvec
	LA_ABS a3, isa_trap_entry
	csrw mtvec, a3
	CHECK_LA a4, isa_trap_vectors + 1
	csrr a4, mtvec
	CHECK_LA a4, isa_trap_entry
	CASE_END

	/* mcause and mtval are writable */
	CASE_BEGIN 1502
	li a3, 0x12345678
	csrw mtval, a3
	csrr a4, mtval
	CHECK a4, 0x12345678
	li a3, CAUSE_ILLEGAL
	csrw mcause, a3
	csrr a4, mcause
	CHECK a4, CAUSE_ILLEGAL
	li a3, CAUSE_IRQ_TIMER
	csrw mcause, a3
	csrr a4, mcause
	CHECK a4, CAUSE_IRQ_TIMER
	CASE_END

	/* mstatus: only MIE and MPIE are writable, MPP reads 3 (mie = 0: no interrupt) */
	CASE_BEGIN 1503
	csrw mstatus, zero
	csrr a4, mstatus
	CHECK a4, MSTATUS_MPP
	li a3, MSTATUS_MIE | MSTATUS_MPIE
	csrw mstatus, a3
	csrr a4, mstatus
	CHECK a4, MSTATUS_MPP | MSTATUS_MIE | MSTATUS_MPIE
	csrci mstatus, MSTATUS_MIE
	csrr a4, mstatus
	CHECK a4, MSTATUS_MPP | MSTATUS_MPIE
	li a3, -1
	csrw mstatus, a3
	csrr a4, mstatus
	CHECK a4, MSTATUS_MPP | MSTATUS_MIE | MSTATUS_MPIE
	csrw mstatus, zero
	csrr a4, mstatus
	CHECK a4, MSTATUS_MPP
	csrr a4, mstatush
	CHECK a4, 0
	CASE_END

	/* mie: MSIE (bit 3), MTIE (bit 7) and MEIE (bit 11) only (mstatus.MIE = 0: no interrupt) */
	CASE_BEGIN 1504
	li a3, -1
	csrw mie, a3
	csrr a4, mie
	csrw mie, zero
	CHECK a4, MIP_MSIP | MIP_MTIP | MIP_MEIP
	csrr a4, mie
	CHECK a4, 0
	CASE_END

	/* mip: nothing pending (mtimecmp all ones, mailbox empty) */
	CASE_BEGIN 1505
	csrr a4, mip
	CHECK a4, 0
	CASE_END

	/* misa = RV32 I M A; writes ignored (no trap) */
	CASE_BEGIN 1506
	csrr a4, misa
	CHECK a4, 0x40001101
	TRAP_ARM
	csrw misa, zero
	TRAP_CHECK_NONE
	csrr a4, misa
	CHECK a4, 0x40001101
	CASE_END

	/* mvendorid, marchid, mimpid, mstatush read 0 */
	CASE_BEGIN 1507
	csrr a4, mvendorid
	CHECK a4, 0
	csrr a4, marchid
	CHECK a4, 0
	csrr a4, mimpid
	CHECK a4, 0
	csrr a4, mstatush
	CHECK a4, 0
	CASE_END

	/* mhartid: this engine's id, below the number of engines */
	CASE_BEGIN 1508
	csrr a4, mhartid
	CHECK_R a4, s1
	sltu a4, a4, s2
	CHECK a4, 1
	CASE_END

	/* PMP with no entries (privileged spec 3.7.1): pmpcfg0-15 and pmpaddr0-63 read 0 and
	 * ignore writes; no trap */
	CASE_BEGIN 1509
	li a3, -1
	li a5, 0x1509
	TRAP_ARM
	csrw 0x3a0, a3		/* pmpcfg0 */
	csrw 0x3af, a3		/* pmpcfg15 */
	csrw 0x3b0, a3		/* pmpaddr0 */
	csrrs a5, 0x3ef, a3	/* pmpaddr63 */
	TRAP_CHECK_NONE
	CHECK a5, 0
	csrr a4, 0x3a0
	CHECK a4, 0
	csrr a4, 0x3af
	CHECK a4, 0
	csrr a4, 0x3b0
	CHECK a4, 0
	csrr a4, 0x3ef
	CHECK a4, 0
	CASE_END

	/* ---- counters (docs/engine.md: a read returns the count before the reading
	 * instruction; default CPI table of docs/memory-map.md) ---- */
	CASE_BEGIN 1600
	csrr a2, minstret
	csrr a3, minstret
	sub a4, a3, a2
	CHECK a4, 1
	CASE_END

	/* cpiCsr = 2 */
	CASE_BEGIN 1601
	csrr a2, mcycle
	csrr a3, mcycle
	sub a4, a3, a2
	CHECK a4, 2
	CASE_END

	/* 10 ALU instructions between the reads: 11 retired, 2 + 10 x cpiAlu cycles */
	CASE_BEGIN 1602
	csrr a2, minstret
	.rept 10
	addi a5, a5, 1
	.endr
	csrr a3, minstret
	sub a4, a3, a2
	CHECK a4, 11
	CASE_END

	CASE_BEGIN 1603
	csrr a2, mcycle
	.rept 5
	add a5, a5, a6
	xori a6, a6, 3
	.endr
	csrr a3, mcycle
	sub a4, a3, a2
	CHECK a4, 12
	CASE_END

	/* cpiMul = 3 */
	CASE_BEGIN 1604
	csrr a2, mcycle
	mul a5, a5, a6
	csrr a3, mcycle
	sub a4, a3, a2
	CHECK a4, 5
	CASE_END

	/* cpiDiv = 34 */
	CASE_BEGIN 1605
	li a6, 7
	csrr a2, mcycle
	divu a5, a5, a6
	csrr a3, mcycle
	sub a4, a3, a2
	CHECK a4, 36
	CASE_END

	/* cpiLoadSram = 2 */
	CASE_BEGIN 1606
	la a6, isa_stack_top - 4
	csrr a2, mcycle
	lw a5, 0(a6)
	csrr a3, mcycle
	sub a4, a3, a2
	CHECK a4, 4
	CASE_END

	/* cpiStoreSram = 1 */
	CASE_BEGIN 1607
	la a6, isa_stack_top - 4
	csrr a2, mcycle
	sw a5, 0(a6)
	csrr a3, mcycle
	sub a4, a3, a2
	CHECK a4, 3
	CASE_END

	/* cpiBranchTaken = 3 */
	CASE_BEGIN 1608
	csrr a2, mcycle
	beq zero, zero, .Lcpi1608
.Lcpi1608:
	csrr a3, mcycle
	sub a4, a3, a2
	CHECK a4, 5
	CASE_END

	/* not-taken branch: cpiAlu = 1 */
	CASE_BEGIN 1609
	csrr a2, mcycle
	bne zero, zero, .Lcpi1609
.Lcpi1609:
	csrr a3, mcycle
	sub a4, a3, a2
	CHECK a4, 3
	CASE_END

	/* cpiJump = 2 */
	CASE_BEGIN 1610
	csrr a2, mcycle
	jal zero, .Lcpi1610
.Lcpi1610:
	csrr a3, mcycle
	sub a4, a3, a2
	CHECK a4, 4
	CASE_END

	/* user views: cycle = mcycle, instret = minstret (one CSR read apart) */
	CASE_BEGIN 1611
	csrr a2, mcycle
	csrr a3, cycle
	sub a4, a3, a2
	CHECK a4, 2
	csrr a2, minstret
	csrr a3, instret
	sub a4, a3, a2
	CHECK a4, 1
	csrr a2, mcycleh
	csrr a3, cycleh
	CHECK_R a3, a2
	csrr a2, minstreth
	csrr a3, instreth
	CHECK_R a3, a2
	CASE_END

	/* time = mtime: advances by cpiCsr between two reads, agrees with MTIME_LO/HI */
	CASE_BEGIN 1612
	csrr a2, time
	csrr a3, time
	sub a4, a3, a2
	CHECK a4, 2
	LA_ABS a6, MENIC_TIMER_MTIME_LO
	csrr a2, time
	lw a3, 0(a6)
	csrr a4, time
	sltu a5, a3, a2
	CHECK a5, 0
	sltu a5, a4, a3
	CHECK a5, 0
	sub a5, a4, a2
	sltiu a5, a5, 64
	CHECK a5, 1
	csrr a2, timeh
	lw a3, 4(a6)
	CHECK_R a3, a2
	CASE_END

	/* minstret is writable; the next read is the value written, or one more if the
	 * writing instruction counts itself (the spec leaves this open, see README) */
	CASE_BEGIN 1613
	li a3, 100
	csrw minstret, a3
	csrr a4, minstret
	addi a4, a4, -100
	sltiu a4, a4, 2
	CHECK a4, 1
	CASE_END

	/* mcycle is writable; the next read is the value written plus 0 to cpiCsr */
	CASE_BEGIN 1614
	li a3, 1000
	csrw mcycle, a3
	csrr a4, mcycle
	addi a4, a4, -1000
	sltiu a4, a4, 3
	CHECK a4, 1
	CASE_END

	/* the high halves are writable */
	CASE_BEGIN 1615
	csrw mcycle, zero
	li a3, 5
	csrw mcycleh, a3
	csrr a4, mcycleh
	CHECK a4, 5
	csrr a4, cycleh
	CHECK a4, 5
	csrw minstret, zero
	li a3, 7
	csrw minstreth, a3
	csrr a4, minstreth
	CHECK a4, 7
	csrr a4, instreth
	CHECK a4, 7
	CASE_END

	/* minstret carries into minstreth */
	CASE_BEGIN 1616
	csrw minstreth, zero
	li a3, -1
	csrw minstret, a3
	nop
	csrr a4, minstreth
	csrr a5, minstret
	CHECK a4, 1
	sltiu a5, a5, 4
	CHECK a5, 1
	CASE_END

	/* mcycle carries into mcycleh */
	CASE_BEGIN 1617
	csrw mcycleh, zero
	li a3, -5
	csrw mcycle, a3
	.rept 6
	nop
	.endr
	csrr a4, mcycleh
	csrr a5, mcycle
	CHECK a4, 1
	sltiu a5, a5, 16
	CHECK a5, 1
	CASE_END

	csrw mcycleh, zero
	csrw minstreth, zero
	jr s0
