/*
 * rv32i.S: the RV32I base instructions (unprivileged spec chapter 2), cases 100-999.
 * ECALL and EBREAK are in traps.S, FENCE at the end of this file.
 */
#include "isa.h"

	.section .data
	.balign 16
ld_b:	.byte 0xff, 0x00, 0xf0, 0x0f
ld_b80:	.byte 0x80, 0x7f
	.balign 4
ld_h:	.half 0x00ff, 0xff00, 0x0ff0, 0xf00f
ld_h80:	.half 0x8000, 0x7fff
ld_w:	.word 0x00ff00ff, 0xff00ff00, 0x0ff00ff0, 0xf00ff00f
st_buf:	.word 0xdeadbeef, 0xdeadbeef, 0xdeadbeef, 0xdeadbeef
	.word 0x66666666
st_merge:
	.word 0
	.word 0x55555555

	.text
	.globl isa_group_rv32i
isa_group_rv32i:

	/* ---- LUI ---- */
	CASE_BEGIN 100
	lui a4, 0
	CHECK a4, 0
	CASE_END
	CASE_BEGIN 101
	lui a4, 0xfffff
	CHECK a4, 0xfffff000
	CASE_END
	CASE_BEGIN 102
	lui a4, 0x7ffff
	CHECK a4, 0x7ffff000
	CASE_END
	CASE_BEGIN 103
	lui a4, 0x80000
	srai a4, a4, 12
	CHECK a4, 0xfff80000
	CASE_END
	CASE_BEGIN 104
	li a4, -1
	lui a4, 0x12345
	CHECK a4, 0x12345000
	CASE_END
	CASE_BEGIN 105
	lui zero, 0x80000
	CHECK zero, 0
	CASE_END

	/* ---- AUIPC: expected values built with lui/addi (LA_ABS), not with auipc ---- */
	CASE_BEGIN 120
.Lauipc120:
	auipc a4, 0
	LA_ABS a5, .Lauipc120
	CHECK_R a4, a5
	CASE_END
	CASE_BEGIN 121
.Lauipc121:
	auipc a4, 1
	LA_ABS a5, .Lauipc121
	li t0, 0x1000
	add a5, a5, t0
	CHECK_R a4, a5
	CASE_END
	CASE_BEGIN 122
.Lauipc122:
	auipc a4, 0xfffff
	LA_ABS a5, .Lauipc122
	li t0, -0x1000
	add a5, a5, t0
	CHECK_R a4, a5
	CASE_END
	CASE_BEGIN 123
.Lauipc123:
	auipc a4, 0x80000
	LA_ABS a5, .Lauipc123
	li t0, 0x80000000
	add a5, a5, t0
	CHECK_R a4, a5
	CASE_END
	CASE_BEGIN 124
	auipc zero, 1
	CHECK zero, 0
	CASE_END

	/* ---- JAL: link = pc + 4, forward, backward, far, rd = x0 ---- */
	CASE_BEGIN 140
	li a5, 0
	jal a4, .Ljal140t
.Ljal140l:
	addi a5, a5, 1
.Ljal140t:
	CHECK a5, 0
	CHECK_LA a4, .Ljal140l
	CASE_END

	CASE_BEGIN 141
	li a5, 0
	j .Ljal141f
.Ljal141b:
	j .Ljal141d
.Ljal141f:
	jal a4, .Ljal141b
.Ljal141l:
	addi a5, a5, 1
.Ljal141d:
	CHECK a5, 0
	CHECK_LA a4, .Ljal141l
	CASE_END

	CASE_BEGIN 142
	jal ra, .Ljal142t
.Ljal142l:
	li ra, 0
.Ljal142t:
	mv a4, ra
	CHECK_LA a4, .Ljal142l
	CASE_END

	/* far forward JAL (immediate bits 11 and 19:12) into .farcode, which returns via a4 */
	CASE_BEGIN 143
	li a5, 0
	jal a4, isa_far_fwd
.Ljal143l:
	CHECK a5, 1
	CHECK_LA a4, .Ljal143l
	CASE_END

	/* far backward JAL: .farcode jumps back here with `jal a4, isa_far_back_ret` */
	CASE_BEGIN 144
	li a4, 0
	j isa_far_back
	.globl isa_far_back_ret
isa_far_back_ret:
	CHECK_LA a4, isa_far_back + 4
	CASE_END

	/* rd = x0: the link value is discarded */
	CASE_BEGIN 145
	jal zero, .Ljal145t
	li a5, 1
.Ljal145t:
	CHECK zero, 0
	CASE_END

	/* ---- JALR: link, offsets, bit 0 cleared, rd = rs1, rd = x0 ---- */
	CASE_BEGIN 160
	li a5, 0
	LA_ABS t0, .Ljalr160t
	jalr a4, 0(t0)
.Ljalr160l:
	addi a5, a5, 1
.Ljalr160t:
	CHECK a5, 0
	CHECK_LA a4, .Ljalr160l
	CASE_END

	CASE_BEGIN 161
	li a5, 0
	LA_ABS t0, .Ljalr161t - 8
	jalr a4, 8(t0)
.Ljalr161l:
	addi a5, a5, 1
.Ljalr161t:
	CHECK a5, 0
	CHECK_LA a4, .Ljalr161l
	CASE_END

	CASE_BEGIN 162
	li a5, 0
	LA_ABS t0, .Ljalr162t + 16
	jalr a4, -16(t0)
.Ljalr162l:
	addi a5, a5, 1
.Ljalr162t:
	CHECK a5, 0
	CHECK_LA a4, .Ljalr162l
	CASE_END

	/* target bit 0 set in rs1: cleared, no trap */
	CASE_BEGIN 163
	li a5, 0
	LA_ABS t0, .Ljalr163t + 1
	TRAP_ARM
	jalr a4, 0(t0)
.Ljalr163l:
	addi a5, a5, 1
.Ljalr163t:
	TRAP_CHECK_NONE
	CHECK a5, 0
	CHECK_LA a4, .Ljalr163l
	CASE_END

	/* target bit 0 set by the offset: cleared, no trap */
	CASE_BEGIN 164
	li a5, 0
	LA_ABS t0, .Ljalr164t
	TRAP_ARM
	jalr a4, 1(t0)
.Ljalr164l:
	addi a5, a5, 1
.Ljalr164t:
	TRAP_CHECK_NONE
	CHECK a5, 0
	CHECK_LA a4, .Ljalr164l
	CASE_END

	/* rd = rs1: the target uses the old rs1 */
	CASE_BEGIN 165
	li a5, 0
	LA_ABS a4, .Ljalr165t
	jalr a4, 0(a4)
.Ljalr165l:
	addi a5, a5, 1
.Ljalr165t:
	CHECK a5, 0
	CHECK_LA a4, .Ljalr165l
	CASE_END

	CASE_BEGIN 166
	li a5, 0
	LA_ABS t0, .Ljalr166t
	jalr zero, 0(t0)
	addi a5, a5, 1
.Ljalr166t:
	CHECK a5, 0
	CHECK zero, 0
	CASE_END

	/* ---- branches: signed and unsigned boundaries ---- */
	TEST_BR2_OP_TAKEN 200, beq, 0, 0
	TEST_BR2_OP_TAKEN 201, beq, -1, -1
	TEST_BR2_OP_TAKEN 202, beq, 0x80000000, 0x80000000
	TEST_BR2_OP_NOTTAKEN 203, beq, 0, 1
	TEST_BR2_OP_NOTTAKEN 204, beq, -1, 1
	TEST_BR2_OP_NOTTAKEN 205, beq, 0x80000000, 0x7fffffff
	TEST_BR2_OP_TAKEN 220, bne, 0, 1
	TEST_BR2_OP_TAKEN 221, bne, -1, 1
	TEST_BR2_OP_TAKEN 222, bne, 0x80000000, 0x7fffffff
	TEST_BR2_OP_NOTTAKEN 223, bne, 0, 0
	TEST_BR2_OP_NOTTAKEN 224, bne, -1, -1
	TEST_BR2_OP_NOTTAKEN 225, bne, 0x80000000, 0x80000000
	TEST_BR2_OP_TAKEN 240, blt, 0, 1
	TEST_BR2_OP_TAKEN 241, blt, -1, 1
	TEST_BR2_OP_TAKEN 242, blt, -2, -1
	TEST_BR2_OP_TAKEN 243, blt, 0x80000000, 0x7fffffff
	TEST_BR2_OP_NOTTAKEN 244, blt, 1, 0
	TEST_BR2_OP_NOTTAKEN 245, blt, 1, -1
	TEST_BR2_OP_NOTTAKEN 246, blt, -1, -2
	TEST_BR2_OP_NOTTAKEN 247, blt, 0x7fffffff, 0x80000000
	TEST_BR2_OP_NOTTAKEN 248, blt, 0, 0
	TEST_BR2_OP_TAKEN 260, bge, 0, 0
	TEST_BR2_OP_TAKEN 261, bge, 1, 0
	TEST_BR2_OP_TAKEN 262, bge, 1, -1
	TEST_BR2_OP_TAKEN 263, bge, -1, -2
	TEST_BR2_OP_TAKEN 264, bge, 0x7fffffff, 0x80000000
	TEST_BR2_OP_NOTTAKEN 265, bge, 0, 1
	TEST_BR2_OP_NOTTAKEN 266, bge, -1, 1
	TEST_BR2_OP_NOTTAKEN 267, bge, -2, -1
	TEST_BR2_OP_NOTTAKEN 268, bge, 0x80000000, 0x7fffffff
	TEST_BR2_OP_TAKEN 280, bltu, 0, 1
	TEST_BR2_OP_TAKEN 281, bltu, 0xfffffffe, 0xffffffff
	TEST_BR2_OP_TAKEN 282, bltu, 0, 0xffffffff
	TEST_BR2_OP_TAKEN 283, bltu, 0x7fffffff, 0x80000000
	TEST_BR2_OP_NOTTAKEN 284, bltu, 1, 0
	TEST_BR2_OP_NOTTAKEN 285, bltu, 0xffffffff, 0
	TEST_BR2_OP_NOTTAKEN 286, bltu, 0x80000000, 0x7fffffff
	TEST_BR2_OP_NOTTAKEN 287, bltu, 5, 5
	TEST_BR2_OP_TAKEN 300, bgeu, 0, 0
	TEST_BR2_OP_TAKEN 301, bgeu, 1, 0
	TEST_BR2_OP_TAKEN 302, bgeu, 0xffffffff, 0xfffffffe
	TEST_BR2_OP_TAKEN 303, bgeu, 0xffffffff, 0
	TEST_BR2_OP_TAKEN 304, bgeu, 0x80000000, 0x7fffffff
	TEST_BR2_OP_NOTTAKEN 305, bgeu, 0, 1
	TEST_BR2_OP_NOTTAKEN 306, bgeu, 0xfffffffe, 0xffffffff
	TEST_BR2_OP_NOTTAKEN 307, bgeu, 0, 0xffffffff
	TEST_BR2_OP_NOTTAKEN 308, bgeu, 0x7fffffff, 0x80000000

	/* far branches (B-immediate bits 11 and 12), forwards then backwards */
	CASE_BEGIN 320
	li a5, 0
	li a2, 3
	li a3, 3
	beq a2, a3, .Lbr320f
	addi a5, a5, 1
.Lbr320b:
	j .Lbr320d
	.skip 3000
.Lbr320f:
	bgeu a2, a3, .Lbr320b
	addi a5, a5, 2
.Lbr320d:
	CHECK a5, 0
	CASE_END

	/* ---- loads: sign and zero extension, positive and negative offsets ---- */
	TEST_LD_OP 340, lb, 0xffffffff, 0, ld_b
	TEST_LD_OP 341, lb, 0x00000000, 1, ld_b
	TEST_LD_OP 342, lb, 0xfffffff0, 2, ld_b
	TEST_LD_OP 343, lb, 0x0000000f, 3, ld_b
	TEST_LD_OP 344, lb, 0xffffffff, -3, ld_b + 3
	TEST_LD_OP 345, lb, 0xfffffff0, -1, ld_b + 3
	TEST_LD_OP 346, lb, 0xffffff80, 0, ld_b80
	TEST_LD_OP 347, lb, 0x0000007f, 1, ld_b80
	TEST_LD_OP 360, lh, 0x000000ff, 0, ld_h
	TEST_LD_OP 361, lh, 0xffffff00, 2, ld_h
	TEST_LD_OP 362, lh, 0x00000ff0, 4, ld_h
	TEST_LD_OP 363, lh, 0xfffff00f, 6, ld_h
	TEST_LD_OP 364, lh, 0x000000ff, -6, ld_h + 6
	TEST_LD_OP 365, lh, 0xffffff00, -4, ld_h + 6
	TEST_LD_OP 366, lh, 0xffff8000, 0, ld_h80
	TEST_LD_OP 367, lh, 0x00007fff, 2, ld_h80
	TEST_LD_OP 380, lw, 0x00ff00ff, 0, ld_w
	TEST_LD_OP 381, lw, 0xff00ff00, 4, ld_w
	TEST_LD_OP 382, lw, 0x0ff00ff0, 8, ld_w
	TEST_LD_OP 383, lw, 0xf00ff00f, 12, ld_w
	TEST_LD_OP 384, lw, 0x00ff00ff, -12, ld_w + 12
	TEST_LD_OP 385, lw, 0xff00ff00, -8, ld_w + 12
	TEST_LD_OP 400, lbu, 0x000000ff, 0, ld_b
	TEST_LD_OP 401, lbu, 0x00000000, 1, ld_b
	TEST_LD_OP 402, lbu, 0x000000f0, 2, ld_b
	TEST_LD_OP 403, lbu, 0x0000000f, 3, ld_b
	TEST_LD_OP 404, lbu, 0x000000ff, -3, ld_b + 3
	TEST_LD_OP 405, lbu, 0x000000f0, -1, ld_b + 3
	TEST_LD_OP 406, lbu, 0x00000080, 0, ld_b80
	TEST_LD_OP 420, lhu, 0x000000ff, 0, ld_h
	TEST_LD_OP 421, lhu, 0x0000ff00, 2, ld_h
	TEST_LD_OP 422, lhu, 0x00000ff0, 4, ld_h
	TEST_LD_OP 423, lhu, 0x0000f00f, 6, ld_h
	TEST_LD_OP 424, lhu, 0x000000ff, -6, ld_h + 6
	TEST_LD_OP 425, lhu, 0x0000ff00, -4, ld_h + 6
	TEST_LD_OP 428, lhu, 0x00008000, 0, ld_h80

	/* rd = rs1 */
	CASE_BEGIN 426
	la a2, ld_w + 4
	lw a2, 0(a2)
	CHECK a2, 0xff00ff00
	CASE_END

	/* little-endian byte order */
	CASE_BEGIN 427
	la a2, st_merge
	li a3, 0x11223344
	sw a3, 0(a2)
	lbu a4, 0(a2)
	CHECK a4, 0x44
	lbu a4, 3(a2)
	CHECK a4, 0x11
	lhu a4, 2(a2)
	CHECK a4, 0x1122
	CASE_END

	/* ---- stores ---- */
	TEST_ST_OP 440, lb, sb, 0xffffffaa, 0, st_buf
	TEST_ST_OP 441, lb, sb, 0x00000000, 1, st_buf
	TEST_ST_OP 442, lb, sb, 0xffffffa0, 2, st_buf
	TEST_ST_OP 443, lb, sb, 0x0000000a, 3, st_buf
	TEST_ST_OP 444, lb, sb, 0xffffffaa, -3, st_buf + 7
	TEST_ST_OP 445, lb, sb, 0x0000000a, 0, st_buf + 7
	TEST_ST_OP 460, lh, sh, 0x000000aa, 0, st_buf
	TEST_ST_OP 461, lh, sh, 0xffffaa00, 2, st_buf
	TEST_ST_OP 462, lh, sh, 0x00000aa0, 4, st_buf
	TEST_ST_OP 463, lh, sh, 0xffffa00a, 6, st_buf
	TEST_ST_OP 464, lh, sh, 0x000000aa, -6, st_buf + 12
	TEST_ST_OP 465, lh, sh, 0xffffa00a, 0, st_buf + 12
	TEST_ST_OP 480, lw, sw, 0x00aa00aa, 0, st_buf
	TEST_ST_OP 481, lw, sw, 0xaa00aa00, 4, st_buf
	TEST_ST_OP 482, lw, sw, 0x0aa00aa0, 8, st_buf
	TEST_ST_OP 483, lw, sw, 0xa00aa00a, 12, st_buf
	TEST_ST_OP 484, lw, sw, 0x12345678, -12, st_buf + 12
	TEST_ST_OP 485, lw, sw, 0x58213098, -8, st_buf + 12

	/* SB and SH write only their bytes of the word, and nothing around it */
	CASE_BEGIN 486
	la a2, st_merge
	li a3, 0x11223344
	sw a3, 0(a2)
	li a3, 0xffffffaa
	sb a3, 1(a2)
	lw a4, 0(a2)
	CHECK a4, 0x1122aa44
	li a3, 0x1234beef
	sh a3, 2(a2)
	lw a4, 0(a2)
	CHECK a4, 0xbeefaa44
	li a3, 0x77
	sb a3, 0(a2)
	lw a4, 0(a2)
	CHECK a4, 0xbeefaa77
	li a3, 0xcafe0000
	sh a3, 0(a2)
	lw a4, 0(a2)
	CHECK a4, 0xbeef0000
	lw a4, 4(a2)
	CHECK a4, 0x55555555
	lw a4, -4(a2)
	CHECK a4, 0x66666666
	CASE_END

	/* store of the base register itself */
	CASE_BEGIN 487
	la a2, st_merge
	sw a2, 0(a2)
	lw a4, 0(a2)
	CHECK_LA a4, st_merge
	CASE_END

	/* ---- register-immediate ---- */
	TEST_IMM_OP 500, addi, 0x0000000a, 0x00000003, 7
	TEST_IMM_OP 501, addi, 0xfffff800, 0x00000000, -2048
	TEST_IMM_OP 502, addi, 0x7ffff800, 0x80000000, -2048
	TEST_IMM_OP 503, addi, 0x800007fe, 0x7fffffff, 2047
	TEST_IMM_OP 504, addi, 0x00000000, 0xffffffff, 1
	TEST_IMM_OP 505, addi, 0x80000000, 0x7fffffff, 1
	TEST_IMM_SRC1_EQ_DEST 506, addi, 0x00000018, 0x0000000d, 11
	TEST_IMM_ZEROSRC1 507, addi, 0x00000020, 32
	TEST_IMM_ZERODEST 508, addi, 0x00000021, 50
	TEST_IMM_OP 520, slti, 0x00000001, 0x00000003, 7
	TEST_IMM_OP 521, slti, 0x00000000, 0x00000007, 3
	TEST_IMM_OP 522, slti, 0x00000001, 0x80000000, 0
	TEST_IMM_OP 523, slti, 0x00000000, 0x7fffffff, -2048
	TEST_IMM_OP 524, slti, 0x00000000, 0x00000000, -1
	TEST_IMM_OP 525, slti, 0x00000000, 0xffffffff, -1
	TEST_IMM_SRC1_EQ_DEST 526, slti, 0x00000001, 0x0000000b, 13
	TEST_IMM_ZERODEST 527, slti, 0x00ff00ff, -1
	TEST_IMM_OP 540, sltiu, 0x00000001, 0x00000003, 7
	TEST_IMM_OP 541, sltiu, 0x00000000, 0x00000007, 3
	TEST_IMM_OP 542, sltiu, 0x00000000, 0x80000000, 0
	TEST_IMM_OP 543, sltiu, 0x00000001, 0x7fffffff, -2048
	TEST_IMM_OP 544, sltiu, 0x00000001, 0x00000000, -1
	TEST_IMM_OP 545, sltiu, 0x00000000, 0xffffffff, -1
	TEST_IMM_SRC1_EQ_DEST 546, sltiu, 0x00000001, 0x0000000b, 13
	TEST_IMM_ZERODEST 547, sltiu, 0x00ff00ff, -1
	TEST_IMM_OP 560, xori, 0xff00f00f, 0x00ff0f00, -241
	TEST_IMM_OP 561, xori, 0x0ff00f00, 0x0ff00ff0, 240
	TEST_IMM_OP 562, xori, 0xedcba987, 0x12345678, -1
	TEST_IMM_SRC1_EQ_DEST 563, xori, 0xff00fff0, 0xff00ff00, 240
	TEST_IMM_ZERODEST 564, xori, 0x00ff00ff, 1807
	TEST_IMM_OP 580, ori, 0xffffff0f, 0xff00ff00, -241
	TEST_IMM_OP 581, ori, 0x0ff00ff0, 0x0ff00ff0, 240
	TEST_IMM_OP 582, ori, 0xfffffe78, 0x12345678, -2048
	TEST_IMM_SRC1_EQ_DEST 583, ori, 0xff00fff0, 0xff00ff00, 240
	TEST_IMM_ZERODEST 584, ori, 0x00ff00ff, 1807
	TEST_IMM_OP 600, andi, 0xff00ff00, 0xff00ff00, -241
	TEST_IMM_OP 601, andi, 0x000000f0, 0x0ff00ff0, 240
	TEST_IMM_OP 602, andi, 0x12345000, 0x12345678, -2048
	TEST_IMM_SRC1_EQ_DEST 603, andi, 0x00000000, 0xff00ff00, 240
	TEST_IMM_ZERODEST 604, andi, 0x00ff00ff, 1807
	TEST_IMM_OP 620, slli, 0x00000001, 0x00000001, 0
	TEST_IMM_OP 621, slli, 0x80000000, 0x00000001, 31
	TEST_IMM_OP 622, slli, 0xffffff80, 0xffffffff, 7
	TEST_IMM_OP 623, slli, 0x48484000, 0x21212121, 14
	TEST_IMM_OP 624, slli, 0x80000000, 0x21212121, 31
	TEST_IMM_SRC1_EQ_DEST 625, slli, 0x00000080, 0x00000001, 7
	TEST_IMM_ZERODEST 626, slli, 0x00000021, 20
	TEST_IMM_OP 640, srli, 0x80000000, 0x80000000, 0
	TEST_IMM_OP 641, srli, 0x00000001, 0x80000001, 31
	TEST_IMM_OP 642, srli, 0x7fffffff, 0xffffffff, 1
	TEST_IMM_OP 643, srli, 0x00008484, 0x21212121, 14
	TEST_IMM_OP 644, srli, 0x00000000, 0x21212121, 31
	TEST_IMM_SRC1_EQ_DEST 645, srli, 0x01000000, 0x80000000, 7
	TEST_IMM_ZERODEST 646, srli, 0x00000021, 10
	TEST_IMM_OP 660, srai, 0xc0000000, 0x80000000, 1
	TEST_IMM_OP 661, srai, 0xffffffff, 0x80000001, 31
	TEST_IMM_OP 662, srai, 0x3fffffff, 0x7fffffff, 1
	TEST_IMM_OP 663, srai, 0xfffe0606, 0x81818181, 14
	TEST_IMM_OP 664, srai, 0xffffffff, 0x81818181, 31
	TEST_IMM_SRC1_EQ_DEST 665, srai, 0xff000000, 0x80000000, 7
	TEST_IMM_ZERODEST 666, srai, 0x00000021, 10
	/* ---- register-register ---- */
	TEST_RR_OP 700, add, 0x0000000a, 0x00000003, 0x00000007
	TEST_RR_OP 701, add, 0x7fff8000, 0x80000000, 0xffff8000
	TEST_RR_OP 702, add, 0x80007ffe, 0x7fffffff, 0x00007fff
	TEST_RR_OP 703, add, 0x00000000, 0xffffffff, 0x00000001
	TEST_RR_OP 704, add, 0xfffffffe, 0xffffffff, 0xffffffff
	TEST_RR_OP 705, add, 0x80000000, 0x00000001, 0x7fffffff
	TEST_RR_SRC1_EQ_DEST 706, add, 0x00000018, 0x0000000d, 0x0000000b
	TEST_RR_SRC2_EQ_DEST 707, add, 0x00000019, 0x0000000e, 0x0000000b
	TEST_RR_SRC12_EQ_DEST 708, add, 0x0000001a, 0x0000000d
	TEST_RR_ZEROSRC1 709, add, 0x0000000f, 0x0000000f
	TEST_RR_ZEROSRC2 710, add, 0x00000020, 0x00000020
	TEST_RR_ZERODEST 711, add, 0x00000010, 0x0000001e
	TEST_RR_OP 720, sub, 0xfffffffc, 0x00000003, 0x00000007
	TEST_RR_OP 721, sub, 0x00008000, 0x00000000, 0xffff8000
	TEST_RR_OP 722, sub, 0x7fffffff, 0x80000000, 0x00000001
	TEST_RR_OP 723, sub, 0x80007fff, 0x7fffffff, 0xffff8000
	TEST_RR_OP 724, sub, 0x00000000, 0xffffffff, 0xffffffff
	TEST_RR_SRC1_EQ_DEST 725, sub, 0x00000002, 0x0000000d, 0x0000000b
	TEST_RR_SRC2_EQ_DEST 726, sub, 0x00000003, 0x0000000e, 0x0000000b
	TEST_RR_SRC12_EQ_DEST 727, sub, 0x00000000, 0x0000000d
	TEST_RR_ZERODEST 728, sub, 0x00000010, 0x0000001e
	TEST_RR_OP 740, sll, 0x00000001, 0x00000001, 0x00000000
	TEST_RR_OP 741, sll, 0x80000000, 0x00000001, 0x0000001f
	TEST_RR_OP 742, sll, 0xffffff80, 0xffffffff, 0x00000007
	TEST_RR_OP 743, sll, 0x48484000, 0x21212121, 0x0000000e
	TEST_RR_OP 744, sll, 0x21212121, 0x21212121, 0xffffffc0
	TEST_RR_OP 745, sll, 0x90909080, 0x21212121, 0xffffffe7
	TEST_RR_OP 746, sll, 0x80000000, 0x21212121, 0xffffffff
	TEST_RR_OP 747, sll, 0x00000001, 0x00000001, 0x00000020
	TEST_RR_OP 748, sll, 0x00000002, 0x00000001, 0x00000021
	TEST_RR_SRC12_EQ_DEST 749, sll, 0x00000018, 0x00000003
	TEST_RR_ZEROSRC1 750, sll, 0x00000000, 0x0000000f
	TEST_RR_ZERODEST 751, sll, 0x00000001, 0x00000007
	TEST_RR_OP 760, slt, 0x00000000, 0x00000000, 0x00000000
	TEST_RR_OP 761, slt, 0x00000001, 0x00000003, 0x00000007
	TEST_RR_OP 762, slt, 0x00000000, 0x00000007, 0x00000003
	TEST_RR_OP 763, slt, 0x00000001, 0x80000000, 0x7fffffff
	TEST_RR_OP 764, slt, 0x00000000, 0x7fffffff, 0x80000000
	TEST_RR_OP 765, slt, 0x00000001, 0xffffffff, 0x00000001
	TEST_RR_OP 766, slt, 0x00000000, 0x00000001, 0xffffffff
	TEST_RR_SRC1_EQ_DEST 767, slt, 0x00000000, 0x0000000e, 0x0000000d
	TEST_RR_SRC12_EQ_DEST 768, slt, 0x00000000, 0x0000000d
	TEST_RR_ZEROSRC1 769, slt, 0x00000000, 0xffffffff
	TEST_RR_ZEROSRC2 770, slt, 0x00000001, 0xffffffff
	TEST_RR_OP 780, sltu, 0x00000000, 0x00000000, 0x00000000
	TEST_RR_OP 781, sltu, 0x00000001, 0x00000003, 0x00000007
	TEST_RR_OP 782, sltu, 0x00000000, 0x00000007, 0x00000003
	TEST_RR_OP 783, sltu, 0x00000000, 0x80000000, 0x7fffffff
	TEST_RR_OP 784, sltu, 0x00000001, 0x7fffffff, 0x80000000
	TEST_RR_OP 785, sltu, 0x00000000, 0xffffffff, 0x00000001
	TEST_RR_OP 786, sltu, 0x00000001, 0x00000001, 0xffffffff
	TEST_RR_SRC1_EQ_DEST 787, sltu, 0x00000000, 0x0000000e, 0x0000000d
	TEST_RR_SRC12_EQ_DEST 788, sltu, 0x00000000, 0x0000000d
	TEST_RR_ZEROSRC1 789, sltu, 0x00000001, 0xffffffff
	TEST_RR_ZEROSRC2 790, sltu, 0x00000000, 0xffffffff
	TEST_RR_OP 800, xor, 0xf00ff00f, 0xff00ff00, 0x0f0f0f0f
	TEST_RR_OP 801, xor, 0xff00ff00, 0x0ff00ff0, 0xf0f0f0f0
	TEST_RR_OP 802, xor, 0x00ff00ff, 0xf00ff00f, 0xf0f0f0f0
	TEST_RR_SRC2_EQ_DEST 803, xor, 0xf00ff00f, 0xff00ff00, 0x0f0f0f0f
	TEST_RR_SRC12_EQ_DEST 804, xor, 0x00000000, 0xff00ff00
	TEST_RR_ZERODEST 805, xor, 0x11111111, 0x22222222
	TEST_RR_OP 820, srl, 0x80000000, 0x80000000, 0x00000000
	TEST_RR_OP 821, srl, 0x40000000, 0x80000000, 0x00000001
	TEST_RR_OP 822, srl, 0x00000001, 0x80000001, 0x0000001f
	TEST_RR_OP 823, srl, 0x00000001, 0xffffffff, 0x0000001f
	TEST_RR_OP 824, srl, 0x00008484, 0x21212121, 0x0000000e
	TEST_RR_OP 825, srl, 0x21212121, 0x21212121, 0xffffffc0
	TEST_RR_OP 826, srl, 0x00424242, 0x21212121, 0xffffffe7
	TEST_RR_OP 827, srl, 0x80000000, 0x80000000, 0x00000020
	TEST_RR_OP 828, srl, 0x40000000, 0x80000000, 0x00000021
	TEST_RR_SRC12_EQ_DEST 829, srl, 0x00000000, 0x00000007
	TEST_RR_ZERODEST 830, srl, 0x00000010, 0x0000001e
	TEST_RR_OP 840, sra, 0x80000000, 0x80000000, 0x00000000
	TEST_RR_OP 841, sra, 0xc0000000, 0x80000000, 0x00000001
	TEST_RR_OP 842, sra, 0xffffffff, 0x80000001, 0x0000001f
	TEST_RR_OP 843, sra, 0x00000000, 0x7fffffff, 0x0000001f
	TEST_RR_OP 844, sra, 0xfffe0606, 0x81818181, 0x0000000e
	TEST_RR_OP 845, sra, 0x81818181, 0x81818181, 0xffffffc0
	TEST_RR_OP 846, sra, 0xff030303, 0x81818181, 0xffffffe7
	TEST_RR_OP 847, sra, 0xffffffff, 0x81818181, 0xffffffff
	TEST_RR_OP 848, sra, 0xc0000000, 0x80000000, 0x00000021
	TEST_RR_SRC12_EQ_DEST 849, sra, 0x00000000, 0x00000007
	TEST_RR_ZERODEST 850, sra, 0x00000010, 0x0000001e
	TEST_RR_OP 860, or, 0xff0fff0f, 0xff00ff00, 0x0f0f0f0f
	TEST_RR_OP 861, or, 0xfff0fff0, 0x0ff00ff0, 0xf0f0f0f0
	TEST_RR_OP 862, or, 0xf0fff0ff, 0xf00ff00f, 0xf0f0f0f0
	TEST_RR_SRC2_EQ_DEST 863, or, 0xff0fff0f, 0xff00ff00, 0x0f0f0f0f
	TEST_RR_SRC12_EQ_DEST 864, or, 0xff00ff00, 0xff00ff00
	TEST_RR_ZERODEST 865, or, 0x11111111, 0x22222222
	TEST_RR_OP 880, and, 0x0f000f00, 0xff00ff00, 0x0f0f0f0f
	TEST_RR_OP 881, and, 0x00f000f0, 0x0ff00ff0, 0xf0f0f0f0
	TEST_RR_OP 882, and, 0xf000f000, 0xf00ff00f, 0xf0f0f0f0
	TEST_RR_SRC2_EQ_DEST 883, and, 0x0f000f00, 0xff00ff00, 0x0f0f0f0f
	TEST_RR_SRC12_EQ_DEST 884, and, 0xff00ff00, 0xff00ff00
	TEST_RR_ZERODEST 885, and, 0x11111111, 0x22222222

	/* ---- writes to x0 are discarded ---- */
	CASE_BEGIN 920
	la a2, ld_w
	lw zero, 0(a2)
	CHECK zero, 0
	lbu zero, 0(a2)
	CHECK zero, 0
	CASE_END

	CASE_BEGIN 921
	addi zero, zero, 5
	li a2, 0x12345678
	add zero, a2, a2
	lui zero, 0x12345
	jal zero, .Lx0_921
.Lx0_921:
	add a4, zero, zero
	CHECK a4, 0
	CHECK zero, 0
	CASE_END

	/* ---- FENCE: a no-op for a single engine, every predecessor/successor set ---- */
	CASE_BEGIN 900
	la a2, st_merge
	li a3, 0x900
	TRAP_ARM
	sw a3, 0(a2)
	fence
	lw a4, 0(a2)
	fence rw, rw
	fence iorw, iorw
	fence r, w
	fence w, r
	fence o, i
	TRAP_CHECK_NONE
	CHECK a4, 0x900
	CASE_END

	/* FENCE.TSO (fm = 1000) is a base-ISA FENCE encoding */
	CASE_BEGIN 901
	TRAP_ARM
	fence.tso
	TRAP_CHECK_NONE
	CASE_END

	jr s0

	/* Far code for the JAL cases 143 and 144: the linker places .farcode after the data. */
	.section .farcode, "ax", @progbits
	.balign 4
	.globl isa_far_fwd
isa_far_fwd:
	addi a5, a5, 1
	jalr zero, 0(a4)
	.globl isa_far_back
isa_far_back:
	jal a4, isa_far_back_ret
