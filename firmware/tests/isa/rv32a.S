/*
 * rv32a.S: the A extension on one engine (unprivileged spec chapter 14), cases 1200-1399:
 * every AMO on private SRAM and on this engine's HBM word, signed and unsigned min/max
 * boundaries, aq/rl bits, rd = x0, rd = rs1, rd = rs2; LR/SC success and the failures of
 * docs/engine.md "Atomics" that one engine can cause (SC without reservation, SC to
 * another address, every SC clears the reservation).  Races between engines: multi.S.
 */
#include "isa.h"

	.section .data
	.balign 16
amo_w:	.word 0
amo_w2:	.word 0

	.text
	.globl isa_group_rv32a
isa_group_rv32a:

	/* ---- LR/SC on one engine ---- */
	/* LR then SC to the same word: rd = 0 and memory written */
	CASE_BEGIN 1200
	la a2, amo_w
	li a3, 0x12345678
	sw a3, 0(a2)
	lr.w a4, (a2)
	CHECK a4, 0x12345678
	li a3, 0x0badf00d
	sc.w a5, a3, (a2)
	CHECK a5, 0
	lw a4, 0(a2)
	CHECK a4, 0x0badf00d
	CASE_END

	/* the same on this engine's HBM word */
	CASE_BEGIN 1201
	la a2, hbm_amo
	slli t0, s1, 2
	add a2, a2, t0
	li a3, 0x2468ace0
	sw a3, 0(a2)
	lr.w a4, (a2)
	CHECK a4, 0x2468ace0
	li a3, 0x13579bdf
	sc.w a5, a3, (a2)
	CHECK a5, 0
	lw a4, 0(a2)
	CHECK a4, 0x13579bdf
	CASE_END

	/* every SC clears the reservation: a second SC fails (rd = 1), memory unchanged */
	CASE_BEGIN 1202
	la a2, amo_w
	sw zero, 0(a2)
	lr.w a4, (a2)
	li a3, 1
	sc.w a5, a3, (a2)
	CHECK a5, 0
	li a3, 2
	sc.w a5, a3, (a2)
	CHECK a5, 1
	lw a4, 0(a2)
	CHECK a4, 1
	CASE_END

	/* SC to another address than the reservation fails and clears the reservation */
	CASE_BEGIN 1203
	la a2, amo_w
	la a6, amo_w2
	li a3, 0x11
	sw a3, 0(a2)
	li a3, 0x22
	sw a3, 0(a6)
	lr.w a4, (a2)
	li a3, 0x33
	sc.w a5, a3, (a6)
	CHECK a5, 1
	lw a4, 0(a6)
	CHECK a4, 0x22
	li a3, 0x44
	sc.w a5, a3, (a2)
	CHECK a5, 1
	lw a4, 0(a2)
	CHECK a4, 0x11
	CASE_END

	/* aq/rl bits do not change the semantics */
	CASE_BEGIN 1204
	la a2, amo_w
	li a3, 7
	sw a3, 0(a2)
	lr.w.aq a4, (a2)
	CHECK a4, 7
	li a3, 8
	sc.w.rl a5, a3, (a2)
	CHECK a5, 0
	lr.w.aqrl a4, (a2)
	CHECK a4, 8
	li a3, 9
	sc.w.aqrl a5, a3, (a2)
	CHECK a5, 0
	lw a4, 0(a2)
	CHECK a4, 9
	CASE_END

	/* SC with rd = rs2: memory gets the old rs2, rd gets 0 */
	CASE_BEGIN 1205
	la a2, amo_w
	lr.w a4, (a2)
	li a3, 0x5ca1ab1e
	sc.w a3, a3, (a2)
	CHECK a3, 0
	lw a4, 0(a2)
	CHECK a4, 0x5ca1ab1e
	CASE_END

	/* a store of this engine to another word does not break the reservation */
	CASE_BEGIN 1206
	la a2, amo_w
	la a6, amo_w2
	lr.w a4, (a2)
	li a3, 0x66
	sw a3, 0(a6)
	li a3, 0x77
	sc.w a5, a3, (a2)
	CHECK a5, 0
	lw a4, 0(a2)
	CHECK a4, 0x77
	CASE_END

	/* ---- AMOs: rd = old value, memory = op(old, rs2) ---- */
	TEST_AMO_OP 1220, amoswap.w, 0x55555555, 0xaaaaaaaa, 0x55555555, amo_w
	TEST_AMO_OP_HBM 1221, amoswap.w, 0x80000000, 0x7fffffff, 0x80000000
	TEST_AMO_OP 1222, amoswap.w.aqrl, 0x00000000, 0xffffffff, 0x00000000, amo_w
	TEST_AMO_OP 1240, amoadd.w, 0x00000000, 0xffffffff, 0x00000001, amo_w
	TEST_AMO_OP 1241, amoadd.w, 0x80000000, 0x7fffffff, 0x00000001, amo_w
	TEST_AMO_OP_HBM 1242, amoadd.w, 0xfffff800, 0x80000000, 0x7ffff800
	TEST_AMO_OP 1243, amoadd.w.aq, 0x00000003, 0x00000001, 0x00000002, amo_w
	TEST_AMO_OP 1260, amoxor.w, 0xf0f0f0f0, 0xff00ff00, 0x0ff00ff0, amo_w
	TEST_AMO_OP_HBM 1261, amoxor.w, 0x00000000, 0x12345678, 0x12345678
	TEST_AMO_OP 1262, amoxor.w.rl, 0xedcba987, 0x12345678, 0xffffffff, amo_w
	TEST_AMO_OP 1280, amoand.w, 0x0f000f00, 0xff00ff00, 0x0ff00ff0, amo_w
	TEST_AMO_OP_HBM 1281, amoand.w, 0x00000000, 0xaaaaaaaa, 0x55555555
	TEST_AMO_OP 1282, amoand.w.aqrl, 0x80000001, 0x80000001, 0xffffffff, amo_w
	TEST_AMO_OP 1300, amoor.w, 0xfff0fff0, 0xff00ff00, 0x0ff00ff0, amo_w
	TEST_AMO_OP_HBM 1301, amoor.w, 0xffffffff, 0xaaaaaaaa, 0x55555555
	TEST_AMO_OP 1302, amoor.w.aq, 0x00000000, 0x00000000, 0x00000000, amo_w
	TEST_AMO_OP 1320, amomin.w, 0x80000000, 0x80000000, 0x00000001, amo_w
	TEST_AMO_OP 1321, amomin.w, 0xffffffff, 0x00000005, 0xffffffff, amo_w
	TEST_AMO_OP_HBM 1322, amomin.w, 0x7ffffffe, 0x7fffffff, 0x7ffffffe
	TEST_AMO_OP 1323, amomin.w.aqrl, 0x00000007, 0x00000007, 0x00000007, amo_w
	TEST_AMO_OP 1340, amomax.w, 0x00000001, 0x80000000, 0x00000001, amo_w
	TEST_AMO_OP 1341, amomax.w, 0x00000005, 0xffffffff, 0x00000005, amo_w
	TEST_AMO_OP_HBM 1342, amomax.w, 0x7fffffff, 0x7fffffff, 0x80000000
	TEST_AMO_OP 1343, amomax.w.rl, 0xfffffffe, 0xfffffffe, 0x80000000, amo_w
	TEST_AMO_OP 1360, amominu.w, 0x00000001, 0x80000000, 0x00000001, amo_w
	TEST_AMO_OP 1361, amominu.w, 0x00000005, 0xffffffff, 0x00000005, amo_w
	TEST_AMO_OP_HBM 1362, amominu.w, 0x7fffffff, 0x7fffffff, 0x80000000
	TEST_AMO_OP 1363, amominu.w.aq, 0x00000000, 0x00000000, 0xffffffff, amo_w
	TEST_AMO_OP 1380, amomaxu.w, 0x80000000, 0x80000000, 0x00000001, amo_w
	TEST_AMO_OP 1381, amomaxu.w, 0xffffffff, 0xffffffff, 0x00000005, amo_w
	TEST_AMO_OP_HBM 1382, amomaxu.w, 0x80000000, 0x7fffffff, 0x80000000
	TEST_AMO_OP 1383, amomaxu.w.aqrl, 0xffffffff, 0x00000000, 0xffffffff, amo_w

	/* rd = x0: memory still updated */
	CASE_BEGIN 1390
	la a2, amo_w
	li a3, 40
	sw a3, 0(a2)
	li a3, 2
	amoadd.w zero, a3, (a2)
	CHECK zero, 0
	lw a4, 0(a2)
	CHECK a4, 42
	CASE_END

	/* rd = rs2: memory gets the old rs2, rd the old memory */
	CASE_BEGIN 1391
	la a2, amo_w
	li a3, 0x1111
	sw a3, 0(a2)
	li a3, 0x2222
	amoswap.w a3, a3, (a2)
	CHECK a3, 0x1111
	lw a4, 0(a2)
	CHECK a4, 0x2222
	li a3, 0x0100
	amoadd.w a3, a3, (a2)
	CHECK a3, 0x2222
	lw a4, 0(a2)
	CHECK a4, 0x2322
	CASE_END

	/* rd = rs1: the address is used before rd is written */
	CASE_BEGIN 1392
	la a2, amo_w
	li a3, 0x30
	sw a3, 0(a2)
	li a3, 0x0c
	mv a6, a2
	amoor.w a6, a3, (a6)
	CHECK a6, 0x30
	lw a4, 0(a2)
	CHECK a4, 0x3c
	CASE_END

	jr s0
