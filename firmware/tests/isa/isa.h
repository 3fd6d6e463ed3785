/*
 * isa.h: macros and register conventions of the menic ISA conformance program.
 * Included (through the C preprocessor) by every .S file of firmware/tests/isa.
 *
 * The style follows riscv-tests (isa/macros/scalar/test_macros.h): one macro per kind of
 * case, every case with an explicit number.  Unlike riscv-tests a case does not stop the
 * program on failure: it prints one console line, `ok <num>` or
 * `FAIL <num> got 0x<got> want 0x<want>` (the first mismatching check of the case), and the
 * program goes on.  The contract tested is docs/engine.md.
 *
 * Register conventions (every .S file of this folder):
 *   gp   number of the current case                 tp   1 once a check of the case failed
 *   ra   link of the check/report calls             t6   scratch of the macros
 *   a0   value got, a1 value wanted (CHECK*)        sp   stack (report routines only)
 *   s0   return address of the running group        s1   mhartid, s2 number of engines
 *   s11  trap count before a TRAP_ARM
 * Case bodies use t0-t5, a2-a7 and s3-s10 only.  A CHECK clobbers a0, a1, ra, t6;
 * CASE_END clobbers every caller-saved register (t*, a*, ra).
 *
 * Case numbers are unique: each CASE_BEGIN defines the global label isa_case_<num> (the
 * case's first instruction, handy in a disassembly), so a duplicate number does not
 * assemble (same file) or link (two files); it also appends <num> to the non-allocated
 * section .isa_cases, which test/isa.test.ts reads from the ELF to know the full list.
 */
#ifndef ISA_H
#define ISA_H

#include <menic/memmap.h>

/* The last word of the engine MMIO window: no register there, so every access faults
 * (docs/memory-map.md: an address outside a register faults). */
#define ISA_MMIO_HOLE (MENIC_MMIO_BASE + MENIC_MMIO_WINDOW - 4)

/* mstatus bits (privileged spec 3.1.6.1) */
#define MSTATUS_MIE 0x8
#define MSTATUS_MPIE 0x80
#define MSTATUS_MPP 0x1800
/* mie / mip bits (privileged spec 3.1.9) */
#define MIP_MSIP 0x8
#define MIP_MTIP 0x80
#define MIP_MEIP 0x800
/* mcause values (docs/engine.md, traps table) */
#define CAUSE_MISALIGNED_FETCH 0
#define CAUSE_FETCH_ACCESS 1
#define CAUSE_ILLEGAL 2
#define CAUSE_BREAKPOINT 3
#define CAUSE_MISALIGNED_LOAD 4
#define CAUSE_LOAD_ACCESS 5
#define CAUSE_MISALIGNED_STORE 6
#define CAUSE_STORE_ACCESS 7
#define CAUSE_ECALL_M 11
#define CAUSE_IRQ_TIMER 0x80000007
#define CAUSE_IRQ_EXTERNAL 0x8000000b

/* Exit code when the program gives up after too many unexpected traps (trap.S). */
#define ISA_EXIT_PANIC 0xdead

/* Engines of the device this program supports (layouts/config.json: engines in [1, 64]). */
#define ISA_MAX_ENGINES 64

/* Address of a label (or a constant), with lui/addi rather than auipc, so that the expected
 * addresses of the AUIPC, JAL and trap cases do not depend on AUIPC. */
.macro LA_ABS reg, sym
	lui \reg, %hi(\sym)
	addi \reg, \reg, %lo(\sym)
.endm

/* ---------------------------------------------------------------------------------------
 * Case framing and checks
 * ------------------------------------------------------------------------------------- */

.macro CASE_BEGIN num
	.globl isa_case_\num
isa_case_\num:
	.pushsection .isa_cases, "", @progbits
	.word \num
	.popsection
	li gp, \num
	li tp, 0
.endm

.macro CASE_END
	jal ra, isa_case_end
.endm

/* got: a register (not a1, t6); want: a constant */
.macro CHECK got, want
	mv a0, \got
	li a1, \want
	jal ra, isa_check
.endm

/* got and want: registers (neither of them t6) */
.macro CHECK_R got, want
	mv t6, \want
	mv a0, \got
	mv a1, t6
	jal ra, isa_check
.endm

/* got: a register; want: the address of a label */
.macro CHECK_LA got, label
	mv a0, \got
	LA_ABS a1, \label
	jal ra, isa_check
.endm

/* got: the word at a label of .lowdata; want: a constant */
.macro CHECK_MEM sym, want
	lw a0, %lo(\sym)(zero)
	li a1, \want
	jal ra, isa_check
.endm

/* ---------------------------------------------------------------------------------------
 * Traps.  The handler (trap.S) records mcause, mepc, mtval and mstatus in .lowdata and
 * resumes at tr_resume when it is set, else at mepc + 4.  TRAP_ARM marks the next trap as
 * expected and snapshots the trap count in s11.
 * ------------------------------------------------------------------------------------- */

.macro TRAP_ARM
	lw s11, %lo(tr_count)(zero)
	li t6, 1
	sw t6, %lo(tr_expect)(zero)
.endm

/* Exactly one trap since TRAP_ARM, with this mcause and mepc. */
.macro TRAP_CHECK_CAUSE_EPC cause, epc_label
	lw a0, %lo(tr_count)(zero)
	addi a1, s11, 1
	jal ra, isa_check
	CHECK_MEM tr_cause, \cause
	lw a0, %lo(tr_epc)(zero)
	LA_ABS a1, \epc_label
	jal ra, isa_check
.endm

/* ... and mtval equal to a constant */
.macro TRAP_CHECK cause, epc_label, tval
	TRAP_CHECK_CAUSE_EPC \cause, \epc_label
	CHECK_MEM tr_tval, \tval
.endm

/* ... and mtval equal to a register (not t6, a0, a1) */
.macro TRAP_CHECK_R cause, epc_label, tvalreg
	TRAP_CHECK_CAUSE_EPC \cause, \epc_label
	lw a0, %lo(tr_tval)(zero)
	mv a1, \tvalreg
	jal ra, isa_check
.endm

/* ... and mtval equal to the address of a label */
.macro TRAP_CHECK_LA cause, epc_label, tval_label
	TRAP_CHECK_CAUSE_EPC \cause, \epc_label
	lw a0, %lo(tr_tval)(zero)
	LA_ABS a1, \tval_label
	jal ra, isa_check
.endm

/* No trap since TRAP_ARM (and disarm). */
.macro TRAP_CHECK_NONE
	sw zero, %lo(tr_expect)(zero)
	lw a0, %lo(tr_count)(zero)
	mv a1, s11
	jal ra, isa_check
.endm

/* One instruction that must raise an illegal-instruction trap with mtval = its bits and
 * no other effect (a CSR instruction with rd = a4 leaves a4 unchanged). */
.macro TEST_ILLEGAL num, inst:vararg
	CASE_BEGIN \num
	li a4, 0x5a5a5a5a
	li a3, 0
	TRAP_ARM
.Lill\@:
	\inst
	LA_ABS t5, .Lill\@
	lw t5, 0(t5)
	TRAP_CHECK_R CAUSE_ILLEGAL, .Lill\@, t5
	CHECK a4, 0x5a5a5a5a
	CASE_END
.endm

/* One load, store or AMO at `addr` (a constant or a label expression) that must trap with
 * `cause` and mtval = addr, leaving the destination register unchanged.
 * inst uses a2 as the address and a3 as data or destination, e.g. `lw a3, 0(a2)`. */
.macro TEST_MEM_TRAP num, cause, addr, inst:vararg
	CASE_BEGIN \num
	LA_ABS a2, \addr
	li a3, 0x5a5a5a5a
	TRAP_ARM
.Lmt\@:
	\inst
	TRAP_CHECK_R \cause, .Lmt\@, a2
	CHECK a3, 0x5a5a5a5a
	CASE_END
.endm

/* ---------------------------------------------------------------------------------------
 * Integer cases, after riscv-tests test_macros.h.  Sources in a2/a3, result in a4.
 * ------------------------------------------------------------------------------------- */

.macro TEST_IMM_OP num, inst, result, val1, imm
	CASE_BEGIN \num
	li a2, \val1
	\inst a4, a2, \imm
	CHECK a4, \result
	CASE_END
.endm

.macro TEST_IMM_SRC1_EQ_DEST num, inst, result, val1, imm
	CASE_BEGIN \num
	li a2, \val1
	\inst a2, a2, \imm
	CHECK a2, \result
	CASE_END
.endm

.macro TEST_IMM_ZEROSRC1 num, inst, result, imm
	CASE_BEGIN \num
	\inst a4, zero, \imm
	CHECK a4, \result
	CASE_END
.endm

/* A write to x0 is discarded: x0 still reads 0. */
.macro TEST_IMM_ZERODEST num, inst, val1, imm
	CASE_BEGIN \num
	li a2, \val1
	\inst zero, a2, \imm
	CHECK zero, 0
	CASE_END
.endm

.macro TEST_RR_OP num, inst, result, val1, val2
	CASE_BEGIN \num
	li a2, \val1
	li a3, \val2
	\inst a4, a2, a3
	CHECK a4, \result
	CASE_END
.endm

.macro TEST_RR_SRC1_EQ_DEST num, inst, result, val1, val2
	CASE_BEGIN \num
	li a2, \val1
	li a3, \val2
	\inst a2, a2, a3
	CHECK a2, \result
	CASE_END
.endm

.macro TEST_RR_SRC2_EQ_DEST num, inst, result, val1, val2
	CASE_BEGIN \num
	li a2, \val1
	li a3, \val2
	\inst a3, a2, a3
	CHECK a3, \result
	CASE_END
.endm

.macro TEST_RR_SRC12_EQ_DEST num, inst, result, val1
	CASE_BEGIN \num
	li a2, \val1
	\inst a2, a2, a2
	CHECK a2, \result
	CASE_END
.endm

.macro TEST_RR_ZEROSRC1 num, inst, result, val
	CASE_BEGIN \num
	li a3, \val
	\inst a4, zero, a3
	CHECK a4, \result
	CASE_END
.endm

.macro TEST_RR_ZEROSRC2 num, inst, result, val
	CASE_BEGIN \num
	li a2, \val
	\inst a4, a2, zero
	CHECK a4, \result
	CASE_END
.endm

.macro TEST_RR_ZERODEST num, inst, val1, val2
	CASE_BEGIN \num
	li a2, \val1
	li a3, \val2
	\inst zero, a2, a3
	CHECK zero, 0
	CASE_END
.endm

/* Load `inst a4, offset(a2)` with a2 = base (a label); a4 must be `result`. */
.macro TEST_LD_OP num, inst, result, offset, base
	CASE_BEGIN \num
	la a2, \base
	\inst a4, \offset(a2)
	CHECK a4, \result
	CASE_END
.endm

/* Store `result` with `st` at offset(base) and load it back with `ld`. */
.macro TEST_ST_OP num, ld, st, result, offset, base
	CASE_BEGIN \num
	la a2, \base
	li a3, \result
	\st a3, \offset(a2)
	\ld a4, \offset(a2)
	CHECK a4, \result
	CASE_END
.endm

/* The branch must be taken, forwards and backwards; a5 counts fall-throughs. */
.macro TEST_BR2_OP_TAKEN num, inst, val1, val2
	CASE_BEGIN \num
	li a5, 0
	li a2, \val1
	li a3, \val2
	\inst a2, a3, .Lbt2\@
	addi a5, a5, 1
.Lbt1\@:
	j .Lbt3\@
	addi a5, a5, 2
.Lbt2\@:
	\inst a2, a3, .Lbt1\@
	addi a5, a5, 4
.Lbt3\@:
	CHECK a5, 0
	CASE_END
.endm

/* The branch must not be taken, whichever way its target lies. */
.macro TEST_BR2_OP_NOTTAKEN num, inst, val1, val2
	CASE_BEGIN \num
	li a5, 0
	li a2, \val1
	li a3, \val2
.Lbn1\@:
	\inst a2, a3, .Lbn2\@
	addi a5, a5, 1
	\inst a2, a3, .Lbn1\@
	addi a5, a5, 2
.Lbn2\@:
	CHECK a5, 3
	CASE_END
.endm

/* AMO on the word at `base` (a label): memory `init`, rs2 `val`: rd gets init,
 * memory becomes `result`. */
.macro TEST_AMO_OP num, inst, result, init, val, base
	CASE_BEGIN \num
	la a2, \base
	li a3, \init
	sw a3, 0(a2)
	li a3, \val
	\inst a4, a3, (a2)
	CHECK a4, \init
	lw a5, 0(a2)
	CHECK a5, \result
	CASE_END
.endm

/* Same on this engine's word of the HBM array hbm_amo (shared section, one word per
 * engine, so that the engines do not disturb each other). */
.macro TEST_AMO_OP_HBM num, inst, result, init, val
	CASE_BEGIN \num
	la a2, hbm_amo
	slli t0, s1, 2
	add a2, a2, t0
	li a3, \init
	sw a3, 0(a2)
	li a3, \val
	\inst a4, a3, (a2)
	CHECK a4, \init
	lw a5, 0(a2)
	CHECK a5, \result
	CASE_END
.endm

/* CSR instruction `inst a4, csr, a3` on a CSR holding `init`, a3 = `val`: a4 must get
 * `init` and the CSR must then read `result`. */
.macro TEST_CSR num, inst, csr, result, init, val
	CASE_BEGIN \num
	li a3, \init
	csrw \csr, a3
	li a3, \val
	\inst a4, \csr, a3
	CHECK a4, \init
	csrr a5, \csr
	CHECK a5, \result
	CASE_END
.endm

/* The same with a 5-bit immediate: `inst a4, csr, uimm`. */
.macro TEST_CSRI num, inst, csr, result, init, uimm
	CASE_BEGIN \num
	li a3, \init
	csrw \csr, a3
	\inst a4, \csr, \uimm
	CHECK a4, \init
	csrr a5, \csr
	CHECK a5, \result
	CASE_END
.endm

#endif
