/*
 * traps.S: every synchronous trap cause of docs/engine.md "Traps", cases 1700-1999, with
 * mcause, mepc and mtval checked exactly; mstatus MIE/MPIE across trap entry and MRET.
 * The handler (trap.S) resumes at mepc + 4, or at tr_resume for the fetch faults.
 * Misaligned jump and branch targets are written as .word: the assembler refuses them.
 */
#include "isa.h"

	.section .data
	.balign 16
mis_buf:
	.word 0x01020304, 0x05060708, 0x090a0b0c, 0x0d0e0f10

	.text
	.globl isa_group_traps
isa_group_traps:

	/* ---- cause 0: instruction address misaligned (mepc = the jump, mtval = target);
	 * the jump does not write rd ---- */
	CASE_BEGIN 1700
	li a4, 0x1700
	TRAP_ARM
.Lmf1700:
	.word 0x0060076f		/* jal a4, .+6 */
	TRAP_CHECK_LA CAUSE_MISALIGNED_FETCH, .Lmf1700, .Lmf1700 + 6
	CHECK a4, 0x1700
	CASE_END

	CASE_BEGIN 1701
	li a4, 0x1701
	LA_ABS t0, .Lmf1701t + 2
	TRAP_ARM
.Lmf1701:
	jalr a4, 0(t0)
.Lmf1701t:
	nop
	TRAP_CHECK_LA CAUSE_MISALIGNED_FETCH, .Lmf1701, .Lmf1701t + 2
	CHECK a4, 0x1701
	CASE_END

	/* JALR target (rs1 + 3) & ~1 = rs1 + 2: misaligned, mtval has bit 0 clear */
	CASE_BEGIN 1702
	li a4, 0x1702
	LA_ABS t0, .Lmf1702t
	TRAP_ARM
.Lmf1702:
	jalr a4, 3(t0)
.Lmf1702t:
	nop
	TRAP_CHECK_LA CAUSE_MISALIGNED_FETCH, .Lmf1702, .Lmf1702t + 2
	CHECK a4, 0x1702
	CASE_END

	/* taken branch to a misaligned target, forwards and backwards */
	CASE_BEGIN 1703
	TRAP_ARM
.Lmf1703:
	.word 0x00000363		/* beq zero, zero, .+6 */
	TRAP_CHECK_LA CAUSE_MISALIGNED_FETCH, .Lmf1703, .Lmf1703 + 6
	CASE_END

	CASE_BEGIN 1704
	li a2, -1
	li a3, 1
	TRAP_ARM
.Lmf1704:
	.word 0xfed64fe3		/* blt a2, a3, .-2 */
	TRAP_CHECK_LA CAUSE_MISALIGNED_FETCH, .Lmf1704, .Lmf1704 - 2
	CASE_END

	/* a branch that is not taken does not check its target */
	CASE_BEGIN 1705
	li a2, 1
	li a3, -1
	li a5, 0
	TRAP_ARM
	.word 0x00001363		/* bne zero, zero, .+6 */
	.word 0x00d64363		/* blt a2, a3, .+6 */
	addi a5, a5, 1
	TRAP_CHECK_NONE
	CHECK a5, 1
	CASE_END

	/* ---- cause 1: instruction access fault (mepc = mtval = the fetch address); the
	 * JALR itself retired and wrote its link ---- */
	CASE_BEGIN 1720
	LA_ABS t0, .Lif1720r
	sw t0, %lo(tr_resume)(zero)
	li t1, 0x00f00000		/* in the SRAM window, beyond the configured SRAM */
	TRAP_ARM
	jalr a4, 0(t1)
.Lif1720r:
	TRAP_CHECK CAUSE_FETCH_ACCESS, 0x00f00000, 0x00f00000
	CHECK_LA a4, .Lif1720r
	CASE_END

	/* the first address past the configured SRAM (SYS.SRAM_BYTES) */
	CASE_BEGIN 1721
	LA_ABS t0, .Lif1721r
	sw t0, %lo(tr_resume)(zero)
	LA_ABS t0, MENIC_SYS_SRAM_BYTES
	lw a6, 0(t0)
	TRAP_ARM
	jalr a4, 0(a6)
.Lif1721r:
	lw a0, %lo(tr_count)(zero)
	addi a1, s11, 1
	jal ra, isa_check
	CHECK_MEM tr_cause, CAUSE_FETCH_ACCESS
	lw a0, %lo(tr_epc)(zero)
	mv a1, a6
	jal ra, isa_check
	lw a0, %lo(tr_tval)(zero)
	mv a1, a6
	jal ra, isa_check
	CASE_END

	/* fetch from the HBM window and from the MMIO window: only SRAM is executable */
	CASE_BEGIN 1722
	LA_ABS t0, .Lif1722r
	sw t0, %lo(tr_resume)(zero)
	LA_ABS t1, hbm_code_word
	TRAP_ARM
	jalr a4, 0(t1)
.Lif1722r:
	TRAP_CHECK_LA CAUSE_FETCH_ACCESS, hbm_code_word, hbm_code_word
	CASE_END

	CASE_BEGIN 1723
	LA_ABS t0, .Lif1723r
	sw t0, %lo(tr_resume)(zero)
	LA_ABS t1, MENIC_SYS_NUM_ENGINES
	TRAP_ARM
	jalr a4, 0(t1)
.Lif1723r:
	TRAP_CHECK_LA CAUSE_FETCH_ACCESS, MENIC_SYS_NUM_ENGINES, MENIC_SYS_NUM_ENGINES
	CASE_END

	/* ---- cause 2: illegal instruction, mtval = the instruction bits ---- */
	TEST_ILLEGAL 1740, .word 0x00000000
	TEST_ILLEGAL 1741, .word 0xffffffff
	TEST_ILLEGAL 1742, .word 0x0000000b		/* custom-0 opcode */
	TEST_ILLEGAL 1743, .word 0x02001013		/* slli x0, x0, 32: shamt[5] set */
	TEST_ILLEGAL 1744, .word 0x20005013		/* SRLI/SRAI with imm[11:5] = 0x10 */
	TEST_ILLEGAL 1745, .word 0x08000033		/* OP with funct7 = 0x04 */
	TEST_ILLEGAL 1746, .word 0x40001033		/* SLL with funct7 = 0x20 */
	TEST_ILLEGAL 1747, .word 0x00003003		/* LD (RV64) */
	TEST_ILLEGAL 1748, .word 0x00006003		/* LWU (RV64) */
	TEST_ILLEGAL 1749, .word 0x00003023		/* SD (RV64) */
	TEST_ILLEGAL 1750, .word 0x00002063		/* BRANCH funct3 = 2 */
	TEST_ILLEGAL 1751, .word 0x00001067		/* JALR funct3 = 1 */
	TEST_ILLEGAL 1752, .word 0x0000302f		/* AMOADD.D (RV64A) */
	TEST_ILLEGAL 1753, .word 0x3000202f		/* AMO funct5 = 00110 */
	TEST_ILLEGAL 1754, .word 0x00004073		/* SYSTEM funct3 = 4 */
	TEST_ILLEGAL 1755, .word 0x10200073		/* SRET: no S-mode */
	TEST_ILLEGAL 1756, .word 0x00300073		/* SYSTEM funct12 = 3 */
	/* CSR numbers not in docs/engine.md */
	TEST_ILLEGAL 1760, csrr a4, 0x7a0		/* tselect: no trigger module */
	TEST_ILLEGAL 1761, csrr a4, 0x180		/* satp */
	TEST_ILLEGAL 1762, csrr a4, 0x003		/* fcsr */
	TEST_ILLEGAL 1763, csrr a4, 0xb03		/* mhpmcounter3 */
	TEST_ILLEGAL 1764, csrr a4, 0xc03		/* hpmcounter3 */
	TEST_ILLEGAL 1765, csrr a4, 0x306		/* mcounteren */
	TEST_ILLEGAL 1766, csrrw a4, 0x7c0, a3		/* custom machine CSR */
	/* writes to read-only CSRs; CSRRS/CSRRC with rs1 != x0 write even when rs1 holds 0 */
	TEST_ILLEGAL 1770, csrw mhartid, a3
	TEST_ILLEGAL 1771, csrrw a4, mhartid, a3
	TEST_ILLEGAL 1772, csrrs a4, mvendorid, a3
	TEST_ILLEGAL 1773, csrrc a4, marchid, a3
	TEST_ILLEGAL 1774, csrrsi a4, mimpid, 1
	TEST_ILLEGAL 1775, csrrwi a4, cycle, 0
	TEST_ILLEGAL 1776, csrw time, a3
	TEST_ILLEGAL 1777, csrw instret, a3
	TEST_ILLEGAL 1778, csrrci a4, cycleh, 1
	TEST_ILLEGAL 1779, csrw timeh, a3

	/* the read-only CSR really kept its value */
	CASE_BEGIN 1780
	csrr a4, mhartid
	CHECK_R a4, s1
	CASE_END

	/* ---- cause 3: breakpoint, mtval = its pc ---- */
	CASE_BEGIN 1790
	TRAP_ARM
.Lbp1790:
	ebreak
	TRAP_CHECK_LA CAUSE_BREAKPOINT, .Lbp1790, .Lbp1790
	CASE_END

	/* ---- cause 4: load address misaligned (also LR), mtval = the address ---- */
	TEST_MEM_TRAP 1800, CAUSE_MISALIGNED_LOAD, mis_buf + 1, lw a3, 0(a2)
	TEST_MEM_TRAP 1801, CAUSE_MISALIGNED_LOAD, mis_buf + 2, lw a3, 0(a2)
	TEST_MEM_TRAP 1802, CAUSE_MISALIGNED_LOAD, mis_buf + 7, lw a3, 0(a2)
	TEST_MEM_TRAP 1803, CAUSE_MISALIGNED_LOAD, mis_buf + 1, lh a3, 0(a2)
	TEST_MEM_TRAP 1804, CAUSE_MISALIGNED_LOAD, mis_buf + 3, lh a3, 0(a2)
	TEST_MEM_TRAP 1805, CAUSE_MISALIGNED_LOAD, mis_buf + 5, lhu a3, 0(a2)
	TEST_MEM_TRAP 1806, CAUSE_MISALIGNED_LOAD, mis_buf + 2, lr.w a3, (a2)
	TEST_MEM_TRAP 1807, CAUSE_MISALIGNED_LOAD, hbm_scratch + 2, lw a3, 0(a2)
	/* the effective address is what must be aligned: base misaligned, offset fixes it */
	CASE_BEGIN 1808
	LA_ABS a2, mis_buf + 1
	TRAP_ARM
	lw a3, 3(a2)
	TRAP_CHECK_NONE
	CHECK a3, 0x05060708
	CASE_END

	/* ---- cause 5: load access fault, mtval = the address ---- */
	TEST_MEM_TRAP 1820, CAUSE_LOAD_ACCESS, 0x0f000000, lw a3, 0(a2)
	TEST_MEM_TRAP 1821, CAUSE_LOAD_ACCESS, 0x00f00000, lw a3, 0(a2)
	TEST_MEM_TRAP 1822, CAUSE_LOAD_ACCESS, 0x0f000000, lbu a3, 0(a2)
	TEST_MEM_TRAP 1823, CAUSE_LOAD_ACCESS, MENIC_SYS_EXIT, lw a3, 0(a2)	/* write-only */
	TEST_MEM_TRAP 1824, CAUSE_LOAD_ACCESS, MENIC_SYS_CONSOLE_TX, lw a3, 0(a2)	/* write-only */
	TEST_MEM_TRAP 1825, CAUSE_LOAD_ACCESS, ISA_MMIO_HOLE, lw a3, 0(a2)	/* no register */
	/* the first address past the configured SRAM and past the configured HBM */
	CASE_BEGIN 1826
	LA_ABS t0, MENIC_SYS_SRAM_BYTES
	lw a2, 0(t0)
	li a3, 0x5a5a5a5a
	TRAP_ARM
.Lla1826:
	lw a3, 0(a2)
	TRAP_CHECK_R CAUSE_LOAD_ACCESS, .Lla1826, a2
	CHECK a3, 0x5a5a5a5a
	CASE_END
	CASE_BEGIN 1827
	LA_ABS t0, MENIC_SYS_HBM_BYTES
	lw a2, 0(t0)
	LA_ABS t0, MENIC_HBM_BASE
	add a2, a2, t0
	li a3, 0x5a5a5a5a
	TRAP_ARM
.Lla1827:
	lw a3, 0(a2)
	TRAP_CHECK_R CAUSE_LOAD_ACCESS, .Lla1827, a2
	CHECK a3, 0x5a5a5a5a
	CASE_END

	/* ---- cause 6: store/AMO address misaligned (also SC), memory unchanged ---- */
	TEST_MEM_TRAP 1840, CAUSE_MISALIGNED_STORE, mis_buf + 2, sw a3, 0(a2)
	TEST_MEM_TRAP 1841, CAUSE_MISALIGNED_STORE, mis_buf + 5, sw a3, 0(a2)
	TEST_MEM_TRAP 1842, CAUSE_MISALIGNED_STORE, mis_buf + 1, sh a3, 0(a2)
	TEST_MEM_TRAP 1843, CAUSE_MISALIGNED_STORE, mis_buf + 7, sh a3, 0(a2)
	TEST_MEM_TRAP 1844, CAUSE_MISALIGNED_STORE, mis_buf + 2, amoadd.w a3, a3, (a2)
	TEST_MEM_TRAP 1845, CAUSE_MISALIGNED_STORE, mis_buf + 1, amoswap.w a3, a3, (a2)
	TEST_MEM_TRAP 1846, CAUSE_MISALIGNED_STORE, mis_buf + 6, sc.w a3, a3, (a2)
	TEST_MEM_TRAP 1847, CAUSE_MISALIGNED_STORE, hbm_scratch + 2, amoor.w a3, a3, (a2)
	TEST_MEM_TRAP 1848, CAUSE_MISALIGNED_STORE, hbm_scratch + 1, sw a3, 0(a2)
	CASE_BEGIN 1849
	la a2, mis_buf
	lw a3, 0(a2)
	CHECK a3, 0x01020304
	lw a3, 4(a2)
	CHECK a3, 0x05060708
	lw a3, 8(a2)
	CHECK a3, 0x090a0b0c
	la a2, hbm_scratch
	lw a3, 0(a2)
	CHECK a3, 0
	CASE_END

	/* ---- cause 7: store/AMO access fault ---- */
	TEST_MEM_TRAP 1860, CAUSE_STORE_ACCESS, MENIC_SYS_NUM_ENGINES, sw a3, 0(a2)	/* read-only */
	TEST_MEM_TRAP 1861, CAUSE_STORE_ACCESS, MENIC_TIMER_MTIME_LO, sw a3, 0(a2)	/* read-only */
	TEST_MEM_TRAP 1862, CAUSE_STORE_ACCESS, 0x0f000000, sw a3, 0(a2)
	TEST_MEM_TRAP 1863, CAUSE_STORE_ACCESS, 0x0f000000, sb a3, 0(a2)
	TEST_MEM_TRAP 1864, CAUSE_STORE_ACCESS, 0x00f00000, sw a3, 0(a2)
	TEST_MEM_TRAP 1865, CAUSE_STORE_ACCESS, ISA_MMIO_HOLE, sw a3, 0(a2)	/* no register */
	/* AMOs and LR/SC to the MMIO window, even on read-write registers */
	TEST_MEM_TRAP 1866, CAUSE_STORE_ACCESS, MENIC_TIMER_MTIMECMP_LO, amoor.w a3, zero, (a2)
	TEST_MEM_TRAP 1867, CAUSE_STORE_ACCESS, MENIC_SYS_NUM_ENGINES, amoadd.w a3, zero, (a2)
	TEST_MEM_TRAP 1868, CAUSE_LOAD_ACCESS, MENIC_TIMER_MTIME_LO, lr.w a3, (a2)
	TEST_MEM_TRAP 1869, CAUSE_STORE_ACCESS, MENIC_TIMER_MTIMECMP_HI, sc.w a3, zero, (a2)
	CASE_BEGIN 1870
	LA_ABS t0, MENIC_SYS_SRAM_BYTES
	lw a2, 0(t0)
	TRAP_ARM
.Lsa1870:
	sw a3, 0(a2)
	TRAP_CHECK_R CAUSE_STORE_ACCESS, .Lsa1870, a2
	CASE_END
	CASE_BEGIN 1871
	LA_ABS t0, MENIC_SYS_HBM_BYTES
	lw a2, 0(t0)
	LA_ABS t0, MENIC_HBM_BASE
	add a2, a2, t0
	TRAP_ARM
.Lsa1871:
	sw a3, 0(a2)
	TRAP_CHECK_R CAUSE_STORE_ACCESS, .Lsa1871, a2
	CASE_END
	/* the read-only registers kept their values */
	CASE_BEGIN 1872
	LA_ABS t0, MENIC_SYS_NUM_ENGINES
	lw a4, 0(t0)
	CHECK_R a4, s2
	LA_ABS t0, MENIC_TIMER_MTIMECMP_HI
	lw a4, 0(t0)
	CHECK a4, 0xffffffff
	CASE_END

	/* ---- cause 11: ecall from M-mode, mtval = 0 ---- */
	CASE_BEGIN 1880
	li t0, -1
	csrw mtval, t0
	TRAP_ARM
.Lec1880:
	ecall
	TRAP_CHECK CAUSE_ECALL_M, .Lec1880, 0
	CASE_END

	/* ---- mstatus across trap entry and MRET: MPIE <- MIE, MIE <- 0; then
	 * MIE <- MPIE, MPIE <- 1.  mie = 0, so MIE = 1 lets no interrupt in. ---- */
	CASE_BEGIN 1900
	csrw mie, zero
	csrw mstatus, zero
	TRAP_ARM
.Lec1900:
	ecall
	TRAP_CHECK CAUSE_ECALL_M, .Lec1900, 0
	CHECK_MEM tr_status, MSTATUS_MPP
	csrr a4, mstatus
	CHECK a4, MSTATUS_MPP | MSTATUS_MPIE
	CASE_END

	CASE_BEGIN 1901
	csrw mie, zero
	csrwi mstatus, MSTATUS_MIE
	TRAP_ARM
.Lec1901:
	ecall
	csrr a4, mstatus
	csrw mstatus, zero
	TRAP_CHECK CAUSE_ECALL_M, .Lec1901, 0
	CHECK_MEM tr_status, MSTATUS_MPP | MSTATUS_MPIE
	CHECK a4, MSTATUS_MPP | MSTATUS_MPIE | MSTATUS_MIE
	CASE_END

	/* MRET without a trap: pc <- mepc, MIE <- MPIE (1), MPIE <- 1 */
	CASE_BEGIN 1920
	li a5, 0
	LA_ABS t0, .Lmret1920t
	csrw mepc, t0
	li t0, MSTATUS_MPIE
	csrw mstatus, t0
	mret
	addi a5, a5, 1
.Lmret1920t:
	csrr a4, mstatus
	csrw mstatus, zero
	CHECK a5, 0
	CHECK a4, MSTATUS_MPP | MSTATUS_MPIE | MSTATUS_MIE
	CASE_END

	/* MPIE = 0, MIE = 1: after MRET MIE = 0, MPIE = 1 */
	CASE_BEGIN 1921
	li a5, 0
	LA_ABS t0, .Lmret1921t
	csrw mepc, t0
	csrwi mstatus, MSTATUS_MIE
	mret
	addi a5, a5, 1
.Lmret1921t:
	csrr a4, mstatus
	csrw mstatus, zero
	CHECK a5, 0
	CHECK a4, MSTATUS_MPP | MSTATUS_MPIE
	CASE_END

	/* MRET counts as one retired instruction */
	CASE_BEGIN 1922
	LA_ABS t0, .Lmret1922t
	csrw mepc, t0
	csrr a2, minstret
	mret
.Lmret1922t:
	csrr a3, minstret
	csrw mstatus, zero
	sub a4, a3, a2
	CHECK a4, 2
	CASE_END

	jr s0
