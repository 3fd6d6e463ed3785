/*
 * multi.S: atomics and visibility across engines (docs/engine.md "Atomics" and
 * "Interleaving"), cases 2100-2199.  Shared words live in the .hbm section, loaded once
 * for the whole device.  Every case works for 1 to 64 engines: with one engine the races
 * have a single participant and the LR/SC pair cases fall back to single-engine checks.
 * Engines run in time windows, so every wait is a plain spin loop on a shared word.
 */
#include "isa.h"

#define RACE_ITERS 1000		/* amoadd / amoor / amoxor per engine */
#define MINMAX_ITERS 100	/* amomin / amomax / amominu / amomaxu per engine */
#define LRSC_ITERS 200		/* LR/SC increments per engine */
#define LOCK_ITERS 100		/* lock-protected plain increments per engine */
#define XOR_MUL 0x9e3779b1	/* odd, so (i * XOR_MUL) differs for every i */

/* per LR/SC pair (engines 2j and 2j+1): 16 words */
#define PAIR_W1 0		/* 2120: word the even engine reserves */
#define PAIR_F1 4		/* 2120: even -> odd: reserved */
#define PAIR_G1 8		/* 2120: odd -> even: W1 written */
#define PAIR_H1 12		/* 2120: even -> odd: SC done */
#define PAIR_W2 16		/* 2121: word the even engine reserves */
#define PAIR_X2 20		/* 2121: the word next to it, which the odd engine writes */
#define PAIR_F2 24
#define PAIR_G2 28
#define PAIR_H2 32
#define PAIR_U 36		/* scratch of an engine without a partner */
#define PAIR_BYTES 64

	.section .hbm, "aw", @progbits
	.balign 64
	.globl hbm_amo, hbm_scratch, hbm_code_word
hbm_amo:	.space 4 * ISA_MAX_ENGINES		/* rv32a.S: one word per engine */
hbm_scratch:	.word 0, 0				/* traps.S: misaligned accesses */
hbm_code_word:	.word 0x00000013			/* traps.S: a nop, not executable */
	.balign 64
bar_count:	.word 0
bar_gen:	.word 0
arrive:		.word 0
race_cnt:	.word 0
race_oldsum:	.word 0
race_or:	.word 0, 0
race_xor:	.word 0
race_max:	.word 0x80000000
race_min:	.word 0x7fffffff
race_maxu:	.word 0
race_minu:	.word 0xffffffff
lrsc_cnt:	.word 0
lock:		.word 0
locked_cnt:	.word 0
	.balign 64
slots:		.space 4 * ISA_MAX_ENGINES
	.balign 64
pairs:		.space PAIR_BYTES * ISA_MAX_ENGINES / 2

	.text

/*
 * isa_barrier: wait until every engine (s2 of them) has arrived.  The last to arrive
 * resets the count and bumps the generation the others spin on.  Reading the generation
 * before arriving is safe: it cannot change until this engine has arrived.
 * Clobbers t0-t4.
 */
	.globl isa_barrier
isa_barrier:
	la t0, bar_gen
	lw t1, 0(t0)
	la t2, bar_count
	li t3, 1
	amoadd.w t3, t3, (t2)
	addi t4, s2, -1
	bne t3, t4, 1f
	sw zero, 0(t2)
	fence rw, rw
	li t3, 1
	amoadd.w zero, t3, (t0)
	ret
1:	lw t3, 0(t0)
	beq t3, t1, 1b
	fence rw, rw
	ret

	.globl isa_group_multi
isa_group_multi:

	/* ---- a barrier built from AMOs: every engine arrived ---- */
	CASE_BEGIN 2100
	la a2, arrive
	li a3, 1
	amoadd.w zero, a3, (a2)
	jal ra, isa_barrier
	lw a4, 0(a2)
	CHECK_R a4, s2
	CASE_END

	/* plain stores before a barrier are visible to every engine after it */
	CASE_BEGIN 2101
	la a2, slots
	slli t0, s1, 2
	add t0, a2, t0
	addi t1, s1, 1
	sw t1, 0(t0)
	jal ra, isa_barrier
	li a4, 0		/* mismatches */
	li a5, 0		/* engine index */
1:	lw t1, 0(a2)
	addi a5, a5, 1
	beq t1, a5, 2f
	addi a4, a4, 1
2:	addi a2, a2, 4
	bltu a5, s2, 1b
	CHECK a4, 0
	CASE_END

	/* ---- AMOs, LR/SC and a lock racing from all engines ---- */
	jal ra, isa_barrier
	li s3, 0		/* sum of the old values amoadd returned */
	li s4, 0		/* k */
	li a6, 1
	andi t0, s1, 31
	sll s5, a6, t0		/* this engine's bit */
	srli t0, s1, 5
	slli t0, t0, 2
	la s6, race_or
	add s6, s6, t0		/* its word of race_or */
	li t0, RACE_ITERS
	mul s7, s1, t0		/* first xor index of this engine: hartid * RACE_ITERS */
	li s8, XOR_MUL
	la a2, race_cnt
	la a3, race_xor
.Lrace:
	amoadd.w t1, a6, (a2)
	add s3, s3, t1
	amoor.w zero, s5, (s6)
	add t2, s7, s4
	mul t2, t2, s8
	amoxor.w zero, t2, (a3)
	addi s4, s4, 1
	li t0, RACE_ITERS
	bltu s4, t0, .Lrace
	la a2, race_oldsum
	amoadd.w zero, s3, (a2)

	/* min/max: engine h offers h * MINMAX_ITERS + k, k < MINMAX_ITERS, in four forms */
	li s4, 0
	li t0, MINMAX_ITERS
	mul s7, s1, t0
.Lminmax:
	add t1, s7, s4
	li t2, -5000
	add t2, t1, t2
	la a2, race_max
	amomax.w zero, t2, (a2)		/* max: (N-1)*100+99-5000, from 0x80000000 */
	li t2, 5000
	sub t2, t2, t1
	la a2, race_min
	amomin.w zero, t2, (a2)		/* min: 5000-((N-1)*100+99), from 0x7fffffff */
	li t2, 0x80000000
	add t2, t2, t1
	la a2, race_maxu
	amomaxu.w.aqrl zero, t2, (a2)	/* maxu: 0x80000000+(N-1)*100+99, from 0 */
	addi t2, t1, 1
	la a2, race_minu
	amominu.w.aq zero, t2, (a2)	/* minu: 1, from 0xffffffff */
	addi s4, s4, 1
	li t0, MINMAX_ITERS
	bltu s4, t0, .Lminmax

	/* LR/SC increment loop */
	li s4, 0
	la a2, lrsc_cnt
.Llrsc:
	lr.w t1, (a2)
	addi t1, t1, 1
	sc.w t2, t1, (a2)
	bnez t2, .Llrsc
	addi s4, s4, 1
	li t0, LRSC_ITERS
	bltu s4, t0, .Llrsc

	/* a test-and-set lock from amoswap protecting plain loads and stores */
	li s4, 0
	la a2, lock
	la a3, locked_cnt
.Llock:
	li t1, 1
	amoswap.w.aq t1, t1, (a2)
	bnez t1, .Llock
	lw t2, 0(a3)
	addi t2, t2, 1
	sw t2, 0(a3)
	amoswap.w.rl zero, zero, (a2)
	addi s4, s4, 1
	li t0, LOCK_ITERS
	bltu s4, t0, .Llock

	jal ra, isa_barrier

	/* amoadd.w of 1, RACE_ITERS times by every engine */
	CASE_BEGIN 2102
	la a2, race_cnt
	lw a4, 0(a2)
	li t0, RACE_ITERS
	mul a5, s2, t0
	CHECK_R a4, a5
	CASE_END

	/* the old values returned were 0 .. S-1 once each: their sum is S(S-1)/2,
	 * S = RACE_ITERS * engines (below 2^32 for 64 engines) */
	CASE_BEGIN 2103
	la a2, race_oldsum
	lw a4, 0(a2)
	li t0, RACE_ITERS
	mul a5, s2, t0
	addi t1, a5, -1
	mul a5, a5, t1
	srli a5, a5, 1
	CHECK_R a4, a5
	CASE_END

	/* amoor.w of 1 << (hartid % 32) into word hartid / 32: all engine bits set, so the
	 * hartids are distinct and cover 0 .. engines-1 */
	CASE_BEGIN 2104
	li t0, 32
	mv t1, s2
	bltu t1, t0, 1f
	mv t1, t0
1:	sub t2, s2, t1		/* engines beyond 32 */
	li t3, 1
	sll a5, t3, t1		/* (1 << n) - 1, with n = 32 giving all ones */
	addi a5, a5, -1
	bne t1, t0, 2f
	li a5, -1
2:	la a2, race_or
	lw a4, 0(a2)
	CHECK_R a4, a5
	sll a5, t3, t2
	addi a5, a5, -1
	bne t2, t0, 3f
	li a5, -1
3:	lw a4, 4(a2)
	CHECK_R a4, a5
	CASE_END

	/* amoxor.w of i * XOR_MUL for every i < S: recompute the XOR here */
	CASE_BEGIN 2105
	li t0, RACE_ITERS
	mul t1, s2, t0
	li t2, 0
	li a5, 0
	li t3, XOR_MUL
1:	mul t4, t2, t3
	xor a5, a5, t4
	addi t2, t2, 1
	bltu t2, t1, 1b
	la a2, race_xor
	lw a4, 0(a2)
	CHECK_R a4, a5
	CASE_END

	/* signed and unsigned min/max across engines */
	CASE_BEGIN 2106
	li t0, MINMAX_ITERS
	mul t1, s2, t0
	addi t1, t1, -1		/* largest offer: (N-1)*100+99 */
	la a2, race_max
	lw a4, 0(a2)
	li a5, -5000
	add a5, t1, a5
	CHECK_R a4, a5
	la a2, race_min
	lw a4, 0(a2)
	li a5, 5000
	sub a5, a5, t1
	CHECK_R a4, a5
	la a2, race_maxu
	lw a4, 0(a2)
	li a5, 0x80000000
	add a5, a5, t1
	CHECK_R a4, a5
	la a2, race_minu
	lw a4, 0(a2)
	CHECK a4, 1
	CASE_END

	/* LR/SC increments: none lost */
	CASE_BEGIN 2107
	la a2, lrsc_cnt
	lw a4, 0(a2)
	li t0, LRSC_ITERS
	mul a5, s2, t0
	CHECK_R a4, a5
	CASE_END

	/* lock-protected plain increments: none lost, lock free */
	CASE_BEGIN 2108
	la a2, locked_cnt
	lw a4, 0(a2)
	li t0, LOCK_ITERS
	mul a5, s2, t0
	CHECK_R a4, a5
	la a2, lock
	lw a4, 0(a2)
	CHECK a4, 0
	CASE_END

	/* ---- LR/SC between engines 2j (A) and 2j+1 (B); a2 = this pair's block ---- */
	srli t0, s1, 1
	slli t0, t0, 6			/* PAIR_BYTES = 64 */
	la a2, pairs
	add s9, a2, t0
	srli s10, s1, 1			/* j */

	/* 2120: a store (even j) or an AMO (odd j) by B to the word A reserved breaks the
	 * reservation: A's SC fails (rd = 1) and the word keeps B's value.
	 * Without a partner: an SC to another address than the reservation fails. */
	CASE_BEGIN 2120
	li t0, 0xb0000000
	add s3, t0, s10			/* B's value */
	li t0, 0xa0000000
	add s4, t0, s10			/* A's value */
	andi t0, s1, 1
	bnez t0, .Lpair1_b
	addi t0, s1, 1
	bgeu t0, s2, .Lpair1_alone
	/* A */
	addi a2, s9, PAIR_W1
	lr.w t1, (a2)
	li t1, 1
	sw t1, PAIR_F1(s9)
1:	lw t1, PAIR_G1(s9)
	beqz t1, 1b
	sc.w a4, s4, (a2)
	lw a5, PAIR_W1(s9)
	li t1, 1
	sw t1, PAIR_H1(s9)
	CHECK a4, 1
	CHECK_R a5, s3
	j .Lpair1_done
.Lpair1_b:
1:	lw t1, PAIR_F1(s9)
	beqz t1, 1b
	addi a2, s9, PAIR_W1
	andi t0, s10, 1
	bnez t0, 2f
	sw s3, 0(a2)
	j 3f
2:	amoswap.w zero, s3, (a2)
3:	li t1, 1
	sw t1, PAIR_G1(s9)
4:	lw t1, PAIR_H1(s9)
	beqz t1, 4b
	lw a5, PAIR_W1(s9)
	CHECK_R a5, s3
	j .Lpair1_done
.Lpair1_alone:
	addi a2, s9, PAIR_W1
	addi a3, s9, PAIR_U
	lr.w t1, (a2)
	sc.w a4, s4, (a3)
	CHECK a4, 1
	lw a5, 0(a3)
	CHECK a5, 0
	sc.w a4, s4, (a2)		/* the failed SC cleared the reservation */
	CHECK a4, 1
	lw a5, 0(a2)
	CHECK a5, 0
.Lpair1_done:
	CASE_END

	/* 2121: a load by B of the reserved word, and a store by B to the word next to it,
	 * leave A's reservation intact: A's SC succeeds (rd = 0).
	 * Without a partner: LR then SC succeeds. */
	CASE_BEGIN 2121
	li t0, 0xc0000000
	add s3, t0, s10			/* B's value, for the neighbouring word */
	li t0, 0xd0000000
	add s4, t0, s10			/* A's value */
	andi t0, s1, 1
	bnez t0, .Lpair2_b
	addi t0, s1, 1
	bgeu t0, s2, .Lpair2_alone
	/* A */
	addi a2, s9, PAIR_W2
	lr.w t1, (a2)
	li t1, 1
	sw t1, PAIR_F2(s9)
1:	lw t1, PAIR_G2(s9)
	beqz t1, 1b
	sc.w a4, s4, (a2)
	lw a5, PAIR_W2(s9)
	li t1, 1
	sw t1, PAIR_H2(s9)
	CHECK a4, 0
	CHECK_R a5, s4
	lw a5, PAIR_X2(s9)
	CHECK_R a5, s3
	j .Lpair2_done
.Lpair2_b:
1:	lw t1, PAIR_F2(s9)
	beqz t1, 1b
	lw a4, PAIR_W2(s9)
	sw s3, PAIR_X2(s9)
	li t1, 1
	sw t1, PAIR_G2(s9)
	CHECK a4, 0
2:	lw t1, PAIR_H2(s9)
	beqz t1, 2b
	li t0, 0xd0000000
	add t0, t0, s10
	lw a5, PAIR_W2(s9)
	CHECK_R a5, t0
	j .Lpair2_done
.Lpair2_alone:
	addi a2, s9, PAIR_W2
	lr.w t1, (a2)
	sc.w a4, s4, (a2)
	CHECK a4, 0
	lw a5, 0(a2)
	CHECK_R a5, s4
.Lpair2_done:
	CASE_END

	jr s0
