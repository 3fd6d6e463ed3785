// The engines' JIT (config field `jit`): hot straight-line code is translated into a WebAssembly
// function, which the host compiles (env.jitCompile) into the core's function table; the
// run loop then calls it instead of interpreting. Translations live in jit-cache.ts.
//
// A block runs straight on from its first instruction to its first branch or jump (included), to
// an instruction it does not translate (excluded: SYSTEM, AMO, anything illegal: what is legal is
// layouts/isa.json's, through insnClass, as for the interpreter), or to JIT_BLOCK_INSNS
// instructions. A translation is a region of blocks: the one where the interpreter lands after a
// jump or taken branch (executeJit counts those landings: JIT_HOT of them, or as many as the
// host's jitSetHot says, translate it) and the blocks its branches and jumps reach, up to
// JIT_REGION_BLOCKS of them, in one function with the registers they touch in locals; after a
// call, the call's next instruction too, which a return reaches by a branch; and the places its
// indirect jumps went out to before (jitNoteTarget: the entry is translated again with them).
// Where a window starts (any instruction: a window ends anywhere) the interpreter runs up to the
// first landing; at a place's JIT_HOT_MAX-th window start only the block there is translated
// ("single"): it jumps into the region of the loop it is part of, so each window runs one small
// extra translation rather than a whole copy of the loop per place windows start (15 copies of
// the compute benchmark's loop); a single block that jumps land on gets its region once that is
// hot. The region's blocks are structured wasm: loops as wasm loops, branches forward out of
// wasm blocks (regionCfg, tree); an entry on a loop the code enters elsewhere is copied, so
// that the loop need not be a root (copyEntry). A region that holds all it reaches is entered
// at its loops' heads too: landings there go into it rather than into regions of their own
// (entries). A branch in a loop over one to three ALU
// instructions that rejoin its target (a CRC's bit step, a conditional update) runs them by wasm
// select, so a branch that goes either way by the data costs the host no mispredicted branch
// (skip). A loop of one block runs four copies of it per wasm loop turn, with one window
// check, one count and V8's check for interrupts once (unrolled). A block's loads and stores
// through one base register that nothing between them
// writes share one check, and run as plain wasm accesses when it passes (group); an innermost
// loop's stores remember the clean page one of them found (cleanLoop). It counts each
// instruction's cycles as the interpreter would (fixed costs summed at translation, a load's or
// store's by where it goes). Every exit sets pc, why and the count in locals and branches to one
// epilogue, which stores the registers, pc, cycle and instret back: at a JALR, at a block
// outside the region, at an instruction left to the interpreter, or at the window's end. An
// access's ways to the interpreter share one exit (slowStart): each exit is an edge into the
// epilogue with every register a phi there, and V8's optimising compile of the translations
// took twice as long with one exit per way.
//
// Identical to the interpreter, instruction for instruction:
// - the window: a block runs unchecked when the interpreter would run all of it before `stop`
//   (blockStart; an access that goes to HBM, dearer than the SRAM access counted, checks
//   again); otherwise it leaves before the block and the interpreter runs it up to stop;
// - anything the interpreter does more than compute — an MMIO access, a misaligned or faulting
//   address, a store into a word of translated code or one that run-ahead must save the page for,
//   an HBM store while a reservation is held, a jump to a bad address — leaves the block before
//   that instruction, with the state as it was before it, and the interpreter executes it ("side
//   exit");
// - x0: its slot is 0 (the interpreter zeroes it after each write); a write to x0 is dropped.

import { Device, Config } from "../core/device";
import { Hart, EngineState } from "./hart";
import { engOf, Engines, hartAt } from "./engines";
import { execute } from "./exec";
import { immI, immS, immB, immJ } from "./decode";
import { memOf, hbmMapped } from "../mem/dma";
import { AHEAD_PAGE_SHIFT, PAGE_CODE, PAGE_JOURNAL } from "./pages";
import {
  JitCache, Block, jitCacheOf, jitRecordsMade, blockAt, mapSlot, mapSlotMade, heatOf, landingsReach, checkedAt, codePagesOf, pageFlagsOf, jitInvalidate, jitFlush, jitNoteTarget,
  JIT_MAX_INSNS, JIT_HOT_MAX, JIT_REGION_BLOCKS, JIT_PAGE_SHIFT, JIT_RECORD_BYTES, JIT_BUF_BYTES, JIT_TARGETS, JIT_TARGETS_AT, JIT_GENERATIONS, JIT_ENTRIES, JIT_ENTRIES_AT, JIT_JUDGE_CALLS, JIT_SLOW_INSNS,
  NO_BLOCK, NOT_TRANSLATABLE, NO_TABLE,
} from "./jit-cache";
import { HBM_BASE } from "../generated/layouts";
import {
  InsnClass, insnClass, classHas, INSN_READS_RS1, INSN_READS_RS2, INSN_WRITES_RD, rdOf, rs1Of, rs2Of, funct3Of, funct7Of, funct10Of, loadBytes, storeBytes,
  F3_BEQ, F3_BNE, F3_BLT, F3_BGE, F3_BLTU, F3_LB, F3_LH, F3_LW, F3_LBU, F3_SB, F3_SH,
  F3_ADDI, F3_SLTI, F3_SLTIU, F3_XORI, F3_ORI, F3_ANDI, F3_SLLI, F7_SRLI,
  F10_ADD, F10_SUB, F10_SLL, F10_SLT, F10_SLTU, F10_XOR, F10_SRL, F10_SRA, F10_OR, F10_AND,
  F10_MUL, F10_MULH, F10_MULHU, F10_DIV, F10_REM, F10_REMU,
} from "../generated/isa";

/**
 * The host compiles `len` bytes at `ptr` (a module exporting `f`) and puts `f` at function table
 * index `table` (NO_TABLE: a new one); returns the index, or NO_TABLE when it cannot compile it.
 */
@external("env", "jitCompile")
declare function jitCompile(ptr: usize, len: u32, table: u32): u32;

// ---- wasm encoding --------------------------------------------------------------------------

let out: usize = 0; // write position

let outEnd: usize = 0; // the emit buffer's end: nothing is written past it (a module that does not fit is not made)

@inline function byte(b: u32): void {
  if (out < outEnd) store<u8>(out, <u8>b);
  out++;
}

function uleb(v: u32): void {
  do {
    let b = v & 0x7f;
    v >>= 7;
    if (v != 0) b |= 0x80;
    byte(b);
  } while (v != 0);
}

function sleb(v: i64): void {
  for (;;) {
    const b = <u32>(v & 0x7f);
    v >>= 7;
    if ((v == 0 && (b & 0x40) == 0) || (v == -1 && (b & 0x40) != 0)) { byte(b); return; }
    byte(b | 0x80);
  }
}

/** A 5-byte LEB128 placeholder for a size, patched by `patch` (wasm allows padded LEBs). */
function placeholder(): usize { const at = out; out += 5; return at; }

function patch(at: usize): void {
  if (at + 5 > outEnd) return; // (the module did not fit: translate drops it)
  let v = <u32>(out - at - 5);
  for (let i: usize = 0; i < 5; i++) {
    store<u8>(at + i, <u8>((v & 0x7f) | (i < 4 ? 0x80 : 0)));
    v >>= 7;
  }
}

// opcodes
const IF: u32 = 0x04, END: u32 = 0x0b, ELSE: u32 = 0x05, DROP: u32 = 0x1a, SELECT: u32 = 0x1b;
const LOCAL_GET: u32 = 0x20, LOCAL_SET: u32 = 0x21, LOCAL_TEE: u32 = 0x22;
const I32_LOAD: u32 = 0x28, I64_LOAD: u32 = 0x29, I32_LOAD8_S: u32 = 0x2c, I32_LOAD8_U: u32 = 0x2d, I32_LOAD16_S: u32 = 0x2e, I32_LOAD16_U: u32 = 0x2f, I64_LOAD32_U: u32 = 0x35;
const I32_STORE: u32 = 0x36, I64_STORE: u32 = 0x37, I32_STORE8: u32 = 0x3a, I32_STORE16: u32 = 0x3b;
const I32_CONST: u32 = 0x41, I64_CONST: u32 = 0x42;
const BLOCK: u32 = 0x02, LOOP: u32 = 0x03, BR: u32 = 0x0c, BR_IF: u32 = 0x0d, BR_TABLE: u32 = 0x0e, I64_LT_U: u32 = 0x54, I64_GE_U: u32 = 0x5a;
const I32_EQZ: u32 = 0x45, I32_EQ: u32 = 0x46, I32_NE: u32 = 0x47, I32_LT_S: u32 = 0x48, I32_LT_U: u32 = 0x49, I32_GE_S: u32 = 0x4e, I32_GE_U: u32 = 0x4f;
const I32_ADD: u32 = 0x6a, I32_SUB: u32 = 0x6b, I32_MUL: u32 = 0x6c, I32_DIV_S: u32 = 0x6d, I32_DIV_U: u32 = 0x6e, I32_REM_S: u32 = 0x6f, I32_REM_U: u32 = 0x70;
const I32_AND: u32 = 0x71, I32_OR: u32 = 0x72, I32_XOR: u32 = 0x73, I32_SHL: u32 = 0x74, I32_SHR_S: u32 = 0x75, I32_SHR_U: u32 = 0x76, I32_ROTR: u32 = 0x78;
const I64_SUB: u32 = 0x7d, I64_LT_S: u32 = 0x53, I64_ADD: u32 = 0x7c, I64_MUL: u32 = 0x7e, I64_AND: u32 = 0x83, I64_SHL: u32 = 0x86, I64_SHR_S: u32 = 0x87, I64_SHR_U: u32 = 0x88;
const I32_WRAP_I64: u32 = 0xa7, I64_EXTEND_I32_S: u32 = 0xac, I64_EXTEND_I32_U: u32 = 0xad;
const VOID: u32 = 0x40, T_I32: u32 = 0x7f, T_I64: u32 = 0x7e;

// locals: the parameters h (i32), stop (i64) and the cache, a local per register (x1..x31),
// temporaries, the root to run next (L_BI), and the count (L_CNT)
const L_H: u32 = 0, L_STOP: u32 = 1, L_CTX: u32 = 2; // L_CTX: the device's JitCache (see `address`)
@inline function lReg(r: u32): u32 { return 3 + r; } // (3, x0's, is not used)
const L_ADDR: u32 = 35, L_TMP: u32 = 36, L_A: u32 = 37, L_B: u32 = 38, L_PTR: u32 = 39, L_BI: u32 = 40;
const L_REGS: u32 = 41, L_SRAM: u32 = 42; // the engine's: a translation serves every engine with the same code
const L_PAGES: u32 = 43; // the engine's run-ahead page bytes (JitCache.pageFlags), for stores
const L_PC: u32 = 44, L_WHY: u32 = 45; // where and why it leaves (the epilogue stores them)
const L_TAKEN: u32 = 46; // a skipping branch's (`skip`): taken
const L_GBASE: u32 = 47; // a group's (`group`): the wasm address its offsets are from
const L_CLO: u32 = 48, L_CLEN: u32 = 49; // a loop's clean page (`cleanLoop`): its first byte, its length (0: none yet)
const I32_LOCALS: u32 = 47; // locals 3..49
const L_CNT: u32 = 50, L_HBMC: u32 = 51; // L_HBMC: an HBM load's cycles, shifted as in L_CNT
const I64_LOCALS: u32 = 2; // locals 50..51

// L_CNT counts two things in one i64, so that a block's end adds one constant: the cycles left to
// `stop` (stop - cycle, signed: a window check is one compare with a constant) above CNT_SHIFT,
// the instructions retired since entry below it. A call is given at most JIT_CALL_CYCLES cycles
// (executeJit), so those instructions (a cycle each at least) stay below 2^CNT_SHIFT.
const CNT_SHIFT: u64 = 24;
const CNT_RETIRED: u64 = (<u64>1 << CNT_SHIFT) - 1;
/** Cycles a call into a translation may run at most (executeJit cuts a longer window into calls). */
const JIT_CALL_CYCLES: u64 = <u64>1 << 22;

@inline function get(l: u32): void { byte(LOCAL_GET); uleb(l); }
/** Adds `retired` instructions and charges `n` cycles. */
function count(retired: u64, n: u64): void {
  const delta = retired - (n << CNT_SHIFT);
  if (delta != 0) { get(L_CNT); i64c(delta); op(I64_ADD); set(L_CNT); }
}
/** Charges `n` cycles. */
@inline function cycles(n: u64): void { count(0, n); }
/** Pushes whether the window ends before `n` more cycles: cycle + n >= stop. */
function windowEndsIn(n: u64): void { get(L_CNT); i64c((n + 1) << CNT_SHIFT); op(I64_LT_S); }
@inline function set(l: u32): void { byte(LOCAL_SET); uleb(l); }
@inline function i32c(v: u32): void { byte(I32_CONST); sleb(<i64><i32>v); }
@inline function i64c(v: u64): void { byte(I64_CONST); sleb(<i64>v); }
@inline function op(o: u32): void { byte(o); }
/** A memory access at absolute address `offset` + the i32 on the stack. */
@inline function mem(o: u32, align: u32, offset: u32): void { byte(o); uleb(align); uleb(offset); }

// ---- decoding -------------------------------------------------------------------------------

const K_NONE: u32 = 0, K_ALU: u32 = 1, K_LOAD: u32 = 2, K_STORE: u32 = 3, K_END: u32 = 4;

/** What a block does with instruction `ir` at `pc`: K_NONE (not translated: the block ends before it), K_END (translated, ends the block), or go on. */
function kindOf(ir: u32, pc: u32, guard: u32): u32 {
  switch (insnClass(ir)) {
    case InsnClass.Lui: case InsnClass.Auipc: case InsnClass.Fence:
    case InsnClass.AluImm: case InsnClass.Alu: case InsnClass.Mul: case InsnClass.Div: return K_ALU;
    case InsnClass.Load: return K_LOAD;
    case InsnClass.Store: return K_STORE;
    case InsnClass.Branch: return ((pc + immB(ir)) & 3) != 0 ? K_NONE : K_END; // a bad target is the interpreter's to fault
    case InsnClass.Jal: {
      const t = pc + immJ(ir);
      return (t & 3) != 0 || t < guard ? K_NONE : K_END;
    }
    case InsnClass.Jalr: return K_END;
    default: return K_NONE; // illegal, AMO, SYSTEM: the interpreter's
  }
}

// ---- translation ----------------------------------------------------------------------------

// Why a translation returned: it jumped out of the region (the run loop looks for another;
// EXIT_INDIRECT: through a JALR, and the run loop notes where), it left an instruction to the
// interpreter, or the window is nearly over (the interpreter ends it).
const EXIT_JUMP: u32 = 0, EXIT_INTERP: u32 = 1, EXIT_WINDOW: u32 = 2, EXIT_INDIRECT: u32 = 3;

/** Instructions per block at most. */
const JIT_BLOCK_INSNS: u32 = 64;

// the region being translated: its blocks' first pc and length
const rPc = new StaticArray<u32>(JIT_REGION_BLOCKS);
const rN = new StaticArray<u32>(JIT_REGION_BLOCKS);
// a block that ends with a branch over a few ALU instructions (skipOf): those instructions and
// how they rejoin, else 0; and the words its code is read from (its own, and those it skips)
const rSkip = new StaticArray<u32>(JIT_REGION_BLOCKS);
const rSkipOf = new StaticArray<u32>(JIT_REGION_BLOCKS); // what it could skip (skipOf), in a loop or not
const rCover = new StaticArray<u32>(JIT_REGION_BLOCKS);
let rCount: i32 = 0;
let rInsns: u32 = 0;
let rEntryCopy: i32 = -1; // the entry's copy (`copyEntry`), or -1
let rFull: bool = false; // a block it reaches was left out for want of room (JIT_REGION_BLOCKS, JIT_MAX_INSNS)
let rUsed: u32 = 0; // registers any of its instructions reads or writes
let rWritten: u32 = 0; // registers any of them writes: stored back at every exit
// the targets of indirect jumps the region takes in (an earlier translation's: jitNoteTarget)
const rTargets = new StaticArray<u32>(JIT_TARGETS);
let rTargetCount: u32 = 0;
let rGeneration: u32 = 0;

// per instruction being emitted
let pend: u64 = 0; // fixed cycles of the block's instructions so far, not yet charged to L_CNT
let pendN: u64 = 0; // instructions of an unrolled loop's earlier copies (`unrolled`), not yet counted in L_CNT
let unrollTail: u64 = 0; // the cycles of an unrolled loop's later copies that its window check covered (`unrolled`)
let curBlock: i32 = 0; // the block being emitted

// The wasm labels open where code is being emitted, outermost first: the exits' block (every
// exit branches to it, the epilogue follows it), a loop whose header is a block of the region, a
// block after whose end a block of the region follows, an `if`. A branch's depth is its label's
// distance from the top.
const C_EXIT: u32 = 0, C_LOOP: u32 = 1, C_BLOCK: u32 = 2, C_IF: u32 = 3, C_TOP: u32 = 4, C_JOIN: u32 = 5;
const CTX_MAX: i32 = 1024;
const ctxKind = new StaticArray<u32>(CTX_MAX);
const ctxNode = new StaticArray<i32>(CTX_MAX);
let ctxN: i32 = 0;

/** Opens a label: `what` (BLOCK, LOOP or IF) with result type `type` (VOID: none), of kind `kind` for region block `node`. */
function open(what: u32, kind: u32, node: i32, type: u32 = VOID): void {
  byte(what); byte(type);
  if (ctxN < CTX_MAX) { unchecked(ctxKind[ctxN] = kind); unchecked(ctxNode[ctxN] = node); }
  ctxN++;
}

function close(): void { op(END); ctxN--; }

/** Branches to the innermost label of `kind` for `node`. */
function brTo(kind: u32, node: i32): void {
  for (let i = min(ctxN, CTX_MAX) - 1; i >= 0; i--) {
    if (unchecked(ctxKind[i]) == kind && unchecked(ctxNode[i]) == node) { byte(BR); uleb(<u32>(ctxN - 1 - i)); return; }
  }
  unreachable(); // (the structure puts every branch inside its label)
}

/** Pushes register r's value. */
function reg(r: u32): void {
  if (r == 0) i32c(0);
  else get(lReg(r));
}

/** Pops the stack into register r (x0: dropped). */
function setReg(r: u32): void {
  if (r == 0) { op(DROP); return; }
  set(lReg(r));
}

/**
 * Leaves the region through its epilogue (`epilogue`), with pc (a constant, or with `pcFromAddr`
 * the value in L_ADDR), pend + extra more cycles and `retired` more instructions in L_CNT.
 */
function exit(pc: u32, pcFromAddr: bool, retired: u32, extra: u64, code: u32): void {
  if (pcFromAddr) get(L_ADDR); else i32c(pc);
  set(L_PC);
  count(<u64>retired + pendN, pend + extra);
  i32c(code); set(L_WHY);
  byte(BR); uleb(<u32>(ctxN - 1)); // to the exits' block
}

/** Where every exit goes: the registers the region writes go back, then pc, cycle, instret; returns L_WHY. */
function epilogue(): void {
  for (let r: u32 = 1; r < 32; r++) {
    if ((rWritten & (<u32>1 << r)) == 0) continue;
    get(L_REGS); get(lReg(r)); mem(I32_STORE, 2, 4 * r);
  }
  get(L_H); get(L_PC); mem(I32_STORE, 2, <u32>offsetof<Hart>("pc"));
  get(L_H); get(L_STOP); get(L_CNT); i64c(CNT_SHIFT); op(I64_SHR_S); op(I64_SUB); mem(I64_STORE, 3, <u32>offsetof<Hart>("cycle"));
  get(L_H); get(L_H); mem(I64_LOAD, 3, <u32>offsetof<Hart>("instret"));
  get(L_CNT); i64c(CNT_RETIRED); op(I64_AND); op(I64_ADD);
  mem(I64_STORE, 3, <u32>offsetof<Hart>("instret"));
  get(L_WHY);
}

/** Leaves before instruction `k` of the block at `pc`, for the interpreter to execute it. */
@inline function sideExit(pc: u32, k: u32): void { exit(pc, false, k, 0, EXIT_INTERP); }

/** Opens a wasm `if` (no result) on the i32 on the stack. */
@inline function ifThen(): void { open(IF, C_IF, -1); }
@inline function endIf(): void { close(); }

/** The region's block starting at `pc`, or -1 (the entry's copy, when it has one: `copyEntry`). */
function regionBlock(pc: u32): i32 {
  for (let i = firstTarget(); i < rCount; i++) if (unchecked(rPc[i]) == pc) return i;
  return -1;
}

/** The first block an edge may go to: the entry, or 1 when the entry has a copy (`copyEntry`) that edges go to instead. */
@inline function firstTarget(): i32 { return rEntryCopy >= 0 ? 1 : 0; }

/**
 * The cycles from instruction `from` of the block at `pc` (n instructions) to the start of its
 * last, with its loads and stores in SRAM (their cycles depend on where they go: HBM's are more,
 * and an access there checks again, in `address`).
 */
function restCycles(cfg: Config, h: Hart, pc: u32, n: u32, from: u32): u64 {
  let cycles: u64 = 0;
  for (let t = from; t + 1 < n; t++) {
    const ir = load<u32>(h.sram + <usize>(pc + 4 * t));
    const kind = kindOf(ir, pc + 4 * t, cfg.nullGuardBytes);
    cycles += kind == K_LOAD ? <u64>cfg.cpiLoadSram : kind == K_STORE ? <u64>cfg.cpiStoreSram : fixedCost(cfg, ir);
  }
  return cycles;
}

/**
 * restCycles of the current block (at `bpc`, n instructions) from its instruction `from`, and when
 * its branch skips instructions (`skip`), on to the last of them it runs when not taken.
 */
function blockRest(cfg: Config, h: Hart, bpc: u32, n: u32, from: u32): u64 {
  const sk = unchecked(rSkip[curBlock]);
  return restCycles(cfg, h, bpc, n, from) + (sk != 0 ? skipSpan(cfg, h, bpc + 4 * (n - 1), sk) : 0);
}

/**
 * Before the block at `bpc` (n instructions): when the window ends inside it (its last
 * instruction would start at or after `stop`), leaves (EXIT_WINDOW), and the interpreter runs the
 * instructions that start before stop. Else the whole block runs unchecked, but for an access
 * that goes to HBM, whose cycles are more than the SRAM ones counted here: it checks again.
 */
function blockStart(dev: Device, h: Hart, bpc: u32, n: u32): void {
  leaveBefore(bpc, blockRest(dev.cfg, h, bpc, n, 0));
}

/** Leaves before the block at `bpc` (EXIT_WINDOW) when the window ends before `n` more cycles. */
function leaveBefore(bpc: u32, n: u64): void {
  windowEndsIn(n);
  ifThen(); exit(bpc, false, 0, 0, EXIT_WINDOW); endIf();
}

/**
 * The current block's branch at `pc` (its condition on the stack) to `target` skips the few ALU
 * instructions after it (rSkip): not taken, they run and execution rejoins `target`, by falling
 * into it or by a `jal x0` to it. The translation runs them whatever the branch does and keeps
 * each result only when it is not taken (a wasm select: no host branch to mispredict on data, as
 * a CRC's bit step has); cycles and instructions are counted by the way taken, as the
 * interpreter would. The block's window check covered the skipped instructions (blockStart).
 */
function skip(dev: Device, h: Hart, pc: u32, target: u32): void {
  const cfg = dev.cfg, n = unchecked(rN[curBlock]), sk = unchecked(rSkip[curBlock]);
  const m = sk & SKIP_COUNT, rejoin = (sk & SKIP_JAL) != 0 ? <u64>1 : 0;
  set(L_TAKEN);
  let skipped: u64 = rejoin != 0 ? <u64>cfg.cpiJump : 0; // the skipped instructions' cycles (and the jal's)
  for (let t: u32 = 0; t < m; t++) {
    const at = pc + 4 + 4 * t, ir = load<u32>(h.sram + <usize>at), rd = rdOf(ir);
    skipped += fixedCost(cfg, ir);
    if (rd == 0) continue;
    get(lReg(rd)); aluValue(ir, at); get(L_TAKEN); op(SELECT); set(lReg(rd));
  }
  const taken = pend + <u64>cfg.cpiBranchTaken, notTaken = pend + <u64>cfg.cpiAlu + skipped;
  get(L_CNT);
  i64c(<u64>n - (taken << CNT_SHIFT)); i64c(<u64>n + <u64>m + rejoin - (notTaken << CNT_SHIFT)); get(L_TAKEN); op(SELECT);
  op(I64_ADD); set(L_CNT);
  pend = 0;
  const j = regionBlock(target);
  if (j < 0) exit(target, false, 0, 0, EXIT_JUMP);
  else goTo(dev, h, j);
}

/** The cycles from a branch that skips (at `pc`, skip `sk`), not taken, to the start of the last instruction it skips to: its window (blockStart). */
function skipSpan(cfg: Config, h: Hart, pc: u32, sk: u32): u64 {
  const m = sk & SKIP_COUNT, last = (sk & SKIP_JAL) != 0 ? m : m - 1; // (the jal starts after the last skipped)
  let cycles = <u64>cfg.cpiAlu;
  for (let t: u32 = 0; t < last; t++) cycles += fixedCost(cfg, load<u32>(h.sram + <usize>(pc + 4 + 4 * t)));
  return cycles;
}

/**
 * The block ends and execution goes on at `next` (its last instruction's cycles `extra`): into
 * the region's block there (which checks the window first), else out of the region.
 */
function blockEnd(dev: Device, h: Hart, next: u32, extra: u64): void {
  const cur = curBlock, n = unchecked(rN[cur]);
  const j = regionBlock(next);
  if (j < 0) { exit(next, false, n, extra, EXIT_JUMP); return; }
  count(<u64>n + pendN, pend + extra);
  goTo(dev, h, j);
}

/** Goes on from the current block, its cycles and instructions counted, to the region's block j. */
function goTo(dev: Device, h: Hart, j: i32): void {
  const cur = curBlock, how = edgeKind(cur, j);
  if (how == E_BACK) { brTo(C_LOOP, j); return; } // to the loop j heads
  if (how == E_DISPATCH) { i32c(<u32>unchecked(rRoot[j])); set(L_BI); brTo(C_TOP, -1); return; } // another root's
  if (unchecked(rForwardIn[j]) > 1 || unchecked(rOnEntryPath[j])) { brTo(C_BLOCK, j); return; } // j follows the end of a block
  // j is reached from here alone (else by its loop's way back): its code goes here
  const p0 = pend, n0 = pendN, t0 = unrollTail;
  tree(dev, h, j);
  curBlock = cur; pend = p0; pendN = n0; unrollTail = t0;
}

/**
 * Pushes the wasm address of the `bytes`-wide access at x[rs1] + `imm` (kept in L_ADDR),
 * charging its cycles to L_CNT; leaves the region when the access is misaligned (the interpreter
 * traps it) or not plain SRAM or HBM (or is a store the interpreter must see).
 */
function address(dev: Device, h: Hart, bpc: u32, n: u32, k: u32, rs1: u32, imm: u32, bytes: u32, isStore: bool): void {
  const pc = bpc + 4 * k;
  const cfg = dev.cfg;
  reg(rs1); i32c(imm); op(I32_ADD); set(L_ADDR);
  const sh: u32 = bytes == 4 ? 2 : bytes == 2 ? 1 : 0; // (aligned: to `bytes`)
  // a store of an innermost loop, to the clean page an earlier one found (below), aligned:
  // nothing more to check (`cleanLoop`)
  const clean = isStore && cleanLoop >= 0;
  if (clean) {
    get(L_ADDR); get(L_CLO); op(I32_SUB); if (sh != 0) { i32c(sh); op(I32_ROTR); }
    get(L_CLEN); if (sh != 0) { i32c(sh); op(I32_SHR_U); }
    op(I32_LT_U);
    open(IF, C_IF, -1, T_I32);
    get(L_ADDR); get(L_SRAM); op(I32_ADD);
    cycles(<u64>cfg.cpiStoreSram);
    op(ELSE);
  }
  inSram(cfg, sh, bytes); // aligned and in SRAM above the guard
  open(IF, C_IF, -1, T_I32);
  {
    get(L_ADDR); get(L_SRAM); op(I32_ADD);
    if (isStore) {
      // the page's byte (ahead.ts): 0, the common case, when it holds no translated code and
      // need not be saved for a run ahead; else the interpreter stores (and saves the page, or
      // drops the translations) when the page is to be saved or the word holds translated code
      set(L_PTR);
      get(L_ADDR); i32c(AHEAD_PAGE_SHIFT); op(I32_SHR_U); get(L_PAGES); op(I32_ADD);
      mem(I32_LOAD8_U, 0, 0); byte(LOCAL_TEE); uleb(L_TMP);
      ifThen();
      open(BLOCK, C_IF, -1); slowStart();
      get(L_TMP); i32c(PAGE_JOURNAL); op(I32_AND); slowIf();
      // the engines' SRAMs lie one after another, as their code-page bytes do (a byte per page):
      // the pointer's page, less the first SRAM's, is the byte's index from the first engine's
      get(L_PTR); i32c(JIT_PAGE_SHIFT); op(I32_SHR_U);
      get(L_CTX); mem(I32_LOAD, 2, <u32>offsetof<JitCache>("pagesBias")); op(I32_ADD);
      mem(I32_LOAD8_U, 0, 0); slowIf();
      byte(BR); uleb(1); // (to the end of the outer block: the store goes on)
      slowEnd(pc, k);
      close();
      if (clean) { // a clean page: the loop's next stores to it check no more
        op(ELSE);
        get(L_ADDR); i32c(~((<u32>1 << AHEAD_PAGE_SHIFT) - 1)); op(I32_AND); set(L_CLO);
        i32c(<u32>1 << AHEAD_PAGE_SHIFT); set(L_CLEN);
      }
      endIf();
      get(L_PTR);
    }
    cycles(isStore ? <u64>cfg.cpiStoreSram : <u64>cfg.cpiLoadSram);
  }
  op(ELSE);
  {
    // (each way to the interpreter below branches to one exit: each exit costs V8 compile time)
    open(BLOCK, C_IF, -1, T_I32); slowStart();
    // misaligned (the interpreter traps it), or not SRAM
    if (sh != 0) { get(L_ADDR); i32c(bytes - 1); op(I32_AND); slowIf(); }
    get(L_ADDR); i32c(HBM_BASE); op(I32_SUB); byte(LOCAL_TEE); uleb(L_TMP); i32c(hbmMapped(cfg)); op(I32_GE_U);
    slowIf(); // MMIO, or nothing: the interpreter's
    // HBM is shared: an engine running ahead parks before it (the interpreter's)
    get(L_CTX); mem(I32_LOAD, 2, <u32>offsetof<JitCache>("ahead")); slowIf();
    // the device's engines block and HBM, through L_CTX: a translation's bytes hold nothing of one
    // device's, so devices of one configuration running one image share its compiled module
    // the block's window check counted this access's SRAM cycles: with HBM's, the window may end
    // before the block's last instruction, and the interpreter is to run from this one
    const rest = pend + blockRest(cfg, h, bpc, n, k + 1) + unrollTail;
    if (isStore) { // reservations to break: the interpreter's
      get(L_CTX); mem(I32_LOAD, 2, <u32>offsetof<JitCache>("eng")); mem(I32_LOAD, 2, <u32>offsetof<Engines>("resvCount"));
      slowIf();
      windowEndsIn(rest + <u64>cfg.cpiStoreHbm); slowIf();
      cycles(<u64>cfg.cpiStoreHbm);
    } else {
      get(L_CTX); mem(I32_LOAD, 2, <u32>offsetof<JitCache>("eng")); mem(I64_LOAD32_U, 2, <u32>offsetof<Engines>("cpiLoadHbmNow"));
      i64c(CNT_SHIFT); op(I64_SHL); set(L_HBMC);
      get(L_CNT); get(L_HBMC); op(I64_SUB); i64c((rest + 1) << CNT_SHIFT); op(I64_LT_S); slowIf();
      get(L_CNT); get(L_HBMC); op(I64_SUB); set(L_CNT);
    }
    get(L_TMP); get(L_CTX); mem(I32_LOAD, 2, <u32>offsetof<JitCache>("hbm")); op(I32_ADD);
    byte(BR); uleb(1); // (the address, out of the outer block)
    slowEnd(pc, k);
    close();
  }
  close();
  if (clean) close();
}

/**
 * The head of the innermost loop being emitted whose stores remember the clean page they found
 * (its byte 0: no journal, no translated code), so that the next ones to it check one range
 * (an insertion sort's inner loop shifting words up: 2,251 -> 2,755 MIPS). Two locals, set
 * before the loop and used in it alone: a clean page remembered by every store of a region
 * held two host registers through large regions (CoreMark-like 29 % slower). Exact: a page's
 * byte changes only outside translated code, and a call ends first. -1: none.
 */
let cleanLoop: i32 = -1;

/** Is block x the head of an innermost loop (no other loop's head among the blocks it dominates) with a store in it? */
function cleanLoopAt(cfg: Config, h: Hart, x: i32): bool {
  const m: u32 = (<u32>1 << AHEAD_PAGE_SHIFT) - 1;
  if ((cfg.nullGuardBytes & m) != 0 || (cfg.sramBytes & m) != 0) return false; // (a page holding SRAM above the guard is all such)
  let store = false;
  for (let y = 0; y < rCount; y++) {
    if (unchecked(rRpo[y]) < 0 || !(y == x || dominates(x, y))) continue;
    if (y != x && unchecked(rLoopHead[y])) return false;
    const pc = unchecked(rPc[y]), n = unchecked(rN[y]);
    for (let k: u32 = 0; k < n; k++) if (insnClass(load<u32>(h.sram + <usize>(pc + 4 * k))) == InsnClass.Store) store = true;
  }
  return store;
}

/**
 * Pushes whether the `bytes` from the address in L_ADDR lie in SRAM above the guard, and the
 * address is aligned to 2^sh, in one compare: the guard and the SRAM's size are multiples of 4,
 * so rotating addr - guard right by sh puts a misaligned address's low bits on top, past any
 * SRAM. (bytes <= SRAM above the guard.)
 */
function inSram(cfg: Config, sh: u32, bytes: u32): void {
  get(L_ADDR); i32c(cfg.nullGuardBytes); op(I32_SUB);
  if (sh != 0) { i32c(sh); op(I32_ROTR); }
  i32c(((cfg.sramBytes - cfg.nullGuardBytes - bytes) >> sh) + 1); op(I32_LT_U);
}

// An access's ways to the interpreter share one exit: inside a wasm block with one (slowStart),
// each condition branches out of the inner block (slowIf) to the exit after it (slowEnd); the
// way on branches past it, to the end of the outer block.
@inline function slowStart(): void { open(BLOCK, C_IF, -1); }
@inline function slowIf(): void { byte(BR_IF); uleb(0); }
function slowEnd(pc: u32, k: u32): void { close(); sideExit(pc, k); }

// A group: loads and stores of one block through one base register that no instruction between
// them writes (the last may be a load into it), as a function's saves and restores of registers
// through sp, or a row of a matrix through its pointer. One check before them covers them all:
// every member in SRAM above the guard and aligned, and the pages the stores touch neither to be
// saved for a run ahead nor holding translated code. Then its span (its first member to its last)
// runs with each member a plain wasm access at a constant offset; else the span runs as it
// would without the group, each access checked (`address`), so code whose base points elsewhere
// (HBM, MMIO, a misaligned or faulting address) is run as before.

/** Instructions a group's span holds at most (its code is emitted twice). */
const G_SPAN: u32 = 24;
/** A group's stores span at most this many bytes, so they touch at most two pages (AHEAD_PAGE_SHIFT). */
const G_STORE_SPAN: i32 = 1 << AHEAD_PAGE_SHIFT;
let gFrom: u32 = 0; // the span's first instruction in its block
let gMembers: u32 = 0; // bit t: the span's instruction t is a member
let gBase: u32 = 0; // the base register
let gLo: i32 = 0; // the checked range, as offsets from the base: [gLo, gEnd)
let gEnd: i32 = 0;
let gSh: u32 = 0; // log2 of the alignment checked at gLo
let gStoreLo: i32 = 0, gStoreEnd: i32 = 0; // the store members' range (empty: none)
let gFast: bool = false; // the span's unchecked arm is being emitted

@inline function inGroup(k: u32): bool { return ((gMembers >> (k - gFrom)) & 1) != 0; }

/** An access's offset, and how many bytes it is (0: not a load or store through `base`). */
function accessOf(ir: u32, base: u32): i32 {
  const c = insnClass(ir);
  if (c == InsnClass.Load) return rs1Of(ir) == base ? <i32>loadBytes(funct3Of(ir)) : 0;
  if (c == InsnClass.Store) return rs1Of(ir) == base ? <i32>storeBytes(funct3Of(ir)) : 0;
  return 0;
}

/**
 * Finds a group whose span starts at instruction k of the block at `bpc` (n instructions; its
 * last is never in a span, it ends the block): sets the g* variables and returns the span's end
 * (exclusive), or k when there is none (k is not an access, or no other access joins it).
 */
function groupAt(cfg: Config, h: Hart, bpc: u32, n: u32, k: u32): u32 {
  const ir0 = load<u32>(h.sram + <usize>(bpc + 4 * k)), base = rs1Of(ir0);
  if (base == 0 || accessOf(ir0, base) == 0) return k;
  // the span: up to an instruction that writes the base (a load into it is the last it holds)
  let end = k, widest: i32 = 0, ref: i32 = 0;
  for (let t = k; t + 1 < n && t - k < G_SPAN; t++) {
    const ir = load<u32>(h.sram + <usize>(bpc + 4 * t)), w = accessOf(ir, base);
    const writes = regWritten(ir) == base;
    if (writes && w == 0) break;
    end = t + 1;
    if (w > widest) { widest = w; ref = offsetOf(ir); }
    if (writes) break;
  }
  // the members: each aligned when the widest is (offsets from it a multiple of their width);
  // stores in a range of at most G_STORE_SPAN bytes, else the group has none
  gSh = widest == 4 ? 2 : widest == 2 ? 1 : 0;
  let lo: i32 = i32.MAX_VALUE, hi: i32 = i32.MIN_VALUE, sLo: i32 = i32.MAX_VALUE, sHi: i32 = i32.MIN_VALUE;
  for (let t = k; t < end; t++) {
    const ir = load<u32>(h.sram + <usize>(bpc + 4 * t)), w = alignedWith(ir, base, ref);
    if (w == 0 || insnClass(ir) != InsnClass.Store) continue;
    sLo = min(sLo, offsetOf(ir)); sHi = max(sHi, offsetOf(ir) + w);
  }
  const stores = sLo < sHi && sHi - sLo <= G_STORE_SPAN;
  let members: u32 = 0, count = 0, last = k;
  for (let t = k; t < end; t++) {
    const ir = load<u32>(h.sram + <usize>(bpc + 4 * t)), w = alignedWith(ir, base, ref);
    if (w == 0 || (!stores && insnClass(ir) == InsnClass.Store)) continue;
    members |= <u32>1 << (t - k); count++; last = t;
    lo = min(lo, offsetOf(ir)); hi = max(hi, offsetOf(ir) + w);
  }
  if (count < 2 || (members & 1) == 0) return k;
  // the range checked starts at or below the lowest member, where the widest's alignment holds
  const a = <i32>1 << gSh;
  lo -= ((lo - ref) % a + a) % a;
  if (<i64>hi - <i64>lo > <i64>(cfg.sramBytes - cfg.nullGuardBytes)) return k;
  gFrom = k; gMembers = members; gBase = base; gLo = lo; gEnd = hi;
  if (stores) { gStoreLo = sLo; gStoreEnd = sHi; } else { gStoreLo = 0; gStoreEnd = 0; }
  return last + 1;
}

/** accessOf `ir` when it is aligned whenever the access at offset `ref` from the base is (its offset from it a multiple of its width), else 0. */
function alignedWith(ir: u32, base: u32, ref: i32): i32 {
  const w = accessOf(ir, base);
  return w != 0 && (offsetOf(ir) - ref) % w == 0 ? w : 0;
}

/** A load's or store's offset from its base register. */
function offsetOf(ir: u32): i32 { return <i32>(insnClass(ir) == InsnClass.Store ? immS(ir) : immI(ir)); }

/** Pushes the byte of the run-ahead page (ahead.ts) of the base's address + `off`, an SRAM address. */
function groupPage(off: i32): void {
  get(L_ADDR); i32c(<u32>(off - gLo)); op(I32_ADD); i32c(AHEAD_PAGE_SHIFT); op(I32_SHR_U); get(L_PAGES); op(I32_ADD);
  mem(I32_LOAD8_U, 0, 0);
}

/** Emits the group's span, instructions gFrom to end - 1 of the block at `bpc` (n instructions). */
function group(dev: Device, h: Hart, bpc: u32, n: u32, end: u32): void {
  const cfg = dev.cfg;
  // the range in SRAM above the guard, and aligned (inSram)
  reg(gBase); i32c(<u32>gLo); op(I32_ADD); set(L_ADDR);
  inSram(cfg, gSh, <u32>(gEnd - gLo));
  if (gStoreLo < gStoreEnd) { // the stores' pages: their bytes 0 (no journal, no translated code)
    open(IF, C_IF, -1, T_I32);
    groupPage(gStoreLo); groupPage(gStoreEnd - 1); op(I32_OR); op(I32_EQZ);
    op(ELSE); i32c(0);
    close();
  }
  const p0 = pend;
  ifThen();
  get(L_ADDR); get(L_SRAM); op(I32_ADD); set(L_GBASE);
  gFast = true;
  for (let t = gFrom; t < end; t++) emitInsn(dev, h, load<u32>(h.sram + <usize>(bpc + 4 * t)), bpc, t, n);
  gFast = false;
  count(0, pend - p0); pend = p0;
  op(ELSE);
  for (let t = gFrom; t < end; t++) emitInsn(dev, h, load<u32>(h.sram + <usize>(bpc + 4 * t)), bpc, t, n);
  count(0, pend - p0); pend = p0;
  endIf();
}

/** A member's access in the group's unchecked arm: pushes L_GBASE and returns the member's offset from it; charges its SRAM cycles. */
function groupAccess(imm: u32, cycles: u32): u32 {
  get(L_GBASE);
  pend += <u64>cycles;
  return <u32>(<i32>imm - gLo);
}

/** Pushes the value ALU instruction `ir` at `pc` (LUI, AUIPC, OP-IMM, OP and the M extension's) computes. */
function aluValue(ir: u32, pc: u32): void {
  const rs1 = rs1Of(ir), rs2 = rs2Of(ir), f3 = funct3Of(ir), cls = insnClass(ir);
  switch (cls) {
    case InsnClass.Lui: i32c(ir & 0xfffff000); break;
    case InsnClass.Auipc: i32c(pc + (ir & 0xfffff000)); break;
    case InsnClass.AluImm: {
      const imm = immI(ir);
      reg(rs1);
      switch (f3) {
        case F3_ADDI: i32c(imm); op(I32_ADD); break;
        case F3_SLTI: i32c(imm); op(I32_LT_S); break;
        case F3_SLTIU: i32c(imm); op(I32_LT_U); break;
        case F3_XORI: i32c(imm); op(I32_XOR); break;
        case F3_ORI: i32c(imm); op(I32_OR); break;
        case F3_ANDI: i32c(imm); op(I32_AND); break;
        case F3_SLLI: i32c(imm & 31); op(I32_SHL); break;
        default: i32c(imm & 31); op(funct7Of(ir) == F7_SRLI ? I32_SHR_U : I32_SHR_S); break; // SRLI SRAI
      }
      break;
    }
    case InsnClass.Alu: case InsnClass.Mul: case InsnClass.Div: {
      const sel = funct10Of(ir);
      if (cls == InsnClass.Div) { // DIV DIVU REM REMU: the spec's results for x/0 and MIN/-1, which trap in wasm
        reg(rs1); set(L_A); reg(rs2); set(L_B);
        const signed = sel == F10_DIV || sel == F10_REM, rem = sel == F10_REM || sel == F10_REMU;
        get(L_A);
        // a safe divisor: 1 where the spec fixes the result (b == 0; MIN / -1, where a / 1 and a % 1 are it)
        i32c(1); get(L_B);
        get(L_B); op(I32_EQZ);
        if (signed) { get(L_A); i32c(0x80000000); op(I32_EQ); get(L_B); i32c(0xffffffff); op(I32_EQ); op(I32_AND); op(I32_OR); }
        op(SELECT);
        op(signed ? (rem ? I32_REM_S : I32_DIV_S) : (rem ? I32_REM_U : I32_DIV_U));
        // b == 0: -1 for a division, a for a remainder
        if (rem) get(L_A); else i32c(0xffffffff);
        get(L_B); op(SELECT);
      } else if (cls == InsnClass.Mul && sel != F10_MUL) { // MULH MULHSU MULHU
        reg(rs1); op(sel == F10_MULHU ? I64_EXTEND_I32_U : I64_EXTEND_I32_S);
        reg(rs2); op(sel == F10_MULH ? I64_EXTEND_I32_S : I64_EXTEND_I32_U);
        op(I64_MUL); i64c(32); op(sel == F10_MULHU ? I64_SHR_U : I64_SHR_S); op(I32_WRAP_I64);
      } else {
        reg(rs1); reg(rs2);
        switch (sel) {
          case F10_ADD: op(I32_ADD); break;
          case F10_SUB: op(I32_SUB); break;
          case F10_SLL: op(I32_SHL); break; // wasm takes the shift amount mod 32, as RISC-V does
          case F10_SLT: op(I32_LT_S); break;
          case F10_SLTU: op(I32_LT_U); break;
          case F10_XOR: op(I32_XOR); break;
          case F10_SRL: op(I32_SHR_U); break;
          case F10_SRA: op(I32_SHR_S); break;
          case F10_OR: op(I32_OR); break;
          case F10_AND: op(I32_AND); break;
          default: op(I32_MUL); break; // MUL
        }
      }
      break;
    }
    default: unreachable(); // (not an ALU instruction)
  }
}

/** Emits instruction `ir`, the k-th of the current block (at `bpc`, n instructions). */
function emitInsn(dev: Device, h: Hart, ir: u32, bpc: u32, k: u32, n: u32): void {
  const pc = bpc + 4 * k, last = k == n - 1;
  const cfg = dev.cfg;
  const rd = rdOf(ir), rs1 = rs1Of(ir), rs2 = rs2Of(ir), f3 = funct3Of(ir);
  const cAlu = <u64>cfg.cpiAlu;
  const cls = insnClass(ir);
  switch (cls) {
    case InsnClass.Fence: pend += cAlu; break; // FENCE, FENCE.I: no-ops (memory is sequentially consistent)
    case InsnClass.Lui: case InsnClass.Auipc: case InsnClass.AluImm: case InsnClass.Alu: case InsnClass.Mul: case InsnClass.Div:
      aluValue(ir, pc); setReg(rd); pend += fixedCost(cfg, ir);
      break;
    case InsnClass.Load: {
      // a group's member in its unchecked arm: at an offset from L_GBASE; else checked (`address`)
      let at: u32 = 0;
      if (gFast && inGroup(k)) at = groupAccess(immI(ir), cfg.cpiLoadSram);
      else address(dev, h, bpc, n, k, rs1, immI(ir), loadBytes(f3), false);
      switch (f3) {
        case F3_LB: mem(I32_LOAD8_S, 0, at); break;
        case F3_LH: mem(I32_LOAD16_S, 1, at); break;
        case F3_LW: mem(I32_LOAD, 2, at); break;
        case F3_LBU: mem(I32_LOAD8_U, 0, at); break;
        default: mem(I32_LOAD16_U, 1, at); break; // LHU
      }
      setReg(rd);
      break;
    }
    case InsnClass.Store: {
      let at: u32 = 0;
      if (gFast && inGroup(k)) at = groupAccess(immS(ir), cfg.cpiStoreSram);
      else { address(dev, h, bpc, n, k, rs1, immS(ir), storeBytes(f3), true); set(L_PTR); get(L_PTR); }
      reg(rs2);
      if (f3 == F3_SB) mem(I32_STORE8, 0, at);
      else if (f3 == F3_SH) mem(I32_STORE16, 1, at);
      else mem(I32_STORE, 2, at); // SW
      break;
    }
    case InsnClass.Branch: { // the block's end
      taken(ir);
      if (unchecked(rSkip[curBlock]) != 0) { skip(dev, h, pc, pc + immB(ir)); return; }
      const p0 = pend;
      ifThen();
      blockEnd(dev, h, pc + immB(ir), <u64>cfg.cpiBranchTaken);
      endIf();
      pend = p0;
      blockEnd(dev, h, pc + 4, cAlu);
      return;
    }
    case InsnClass.Jal: { // the block's end
      i32c(pc + 4); setReg(rd);
      blockEnd(dev, h, pc + immJ(ir), <u64>cfg.cpiJump);
      return;
    }
    case InsnClass.Jalr: { // the block's and the region's end; a bad target is the interpreter's to fault
      reg(rs1); i32c(immI(ir)); op(I32_ADD); i32c(~(<u32>1)); op(I32_AND); set(L_ADDR);
      get(L_ADDR); i32c(3); op(I32_AND); get(L_ADDR); i32c(cfg.nullGuardBytes); op(I32_LT_U); op(I32_OR);
      ifThen(); sideExit(pc, k); endIf();
      i32c(pc + 4); setReg(rd);
      // to a block of the region, a branch: a call's next instruction for a return (the ISA's
      // hint), any target an earlier translation's jumps took (a jump table's)
      const isReturn = rd == 0 && (rs1 == 1 || rs1 == 5);
      for (let j = firstTarget(); j < rCount; j++) {
        const at = unchecked(rPc[j]);
        if (!(isReturn && isReturnSite(h, at)) && !isTarget(at)) continue;
        get(L_ADDR); i32c(at); op(I32_EQ);
        const p0 = pend;
        ifThen(); blockEnd(dev, h, at, <u64>cfg.cpiJump); endIf();
        pend = p0;
      }
      exit(0, true, k + 1, <u64>cfg.cpiJump, EXIT_INDIRECT);
      return;
    }
    default: break;
  }
  // the block ends after this instruction without a jump (its length, or an instruction it leaves to the interpreter)
  if (last) blockEnd(dev, h, pc + 4, 0);
}

/** Pushes whether branch `ir` is taken. */
function taken(ir: u32): void {
  reg(rs1Of(ir)); reg(rs2Of(ir));
  switch (funct3Of(ir)) {
    case F3_BEQ: op(I32_EQ); break;
    case F3_BNE: op(I32_NE); break;
    case F3_BLT: op(I32_LT_S); break;
    case F3_BGE: op(I32_GE_S); break;
    case F3_BLTU: op(I32_LT_U); break;
    default: op(I32_GE_U); break; // BGEU
  }
}

/** Registers an instruction reads (bit r): its class's (layouts/isa.json). */
function regsRead(ir: u32): u32 {
  const c = insnClass(ir);
  let m: u32 = 0;
  if (classHas(INSN_READS_RS1, c)) m |= <u32>1 << rs1Of(ir);
  if (classHas(INSN_READS_RS2, c)) m |= <u32>1 << rs2Of(ir);
  return m;
}

/** The register an instruction writes, 32 for none. */
function regWritten(ir: u32): u32 {
  return classHas(INSN_WRITES_RD, insnClass(ir)) ? rdOf(ir) : 32;
}

/** The cycles of an instruction that does not touch memory and is not a block's last (ALU only). */
function fixedCost(cfg: Config, ir: u32): u64 {
  const c = insnClass(ir);
  if (c == InsnClass.Mul) return <u64>cfg.cpiMul;
  if (c == InsnClass.Div) return <u64>cfg.cpiDiv;
  return <u64>cfg.cpiAlu;
}

// rSkip: the skipped instructions (SKIP_COUNT's bits), and SKIP_JAL when a `jal x0` rejoins
const SKIP_COUNT: u32 = 0xff, SKIP_JAL: u32 = 0x100;
/** ALU instructions a branch skips at most (`skip`). */
const SKIP_MAX: u32 = 3;

/**
 * Does the branch `ir` at `pc` skip 1 to SKIP_MAX ALU instructions (not DIV or REM) that rejoin
 * its target, by running into it or by a `jal x0` to it? Their count (and SKIP_JAL), else 0.
 */
function skipOf(cfg: Config, h: Hart, pc: u32, ir: u32): u32 {
  const target = pc + immB(ir);
  for (let t: u32 = 0; t <= SKIP_MAX; t++) {
    const at = pc + 4 + 4 * t;
    if (at == target) return t; // (0: a branch to the next instruction skips nothing)
    if (at + 4 > cfg.sramBytes) return 0;
    const w = load<u32>(h.sram + <usize>at), c = insnClass(w);
    if (c == InsnClass.Jal) return t != 0 && rdOf(w) == 0 && at + immJ(w) == target ? t | SKIP_JAL : 0;
    if (t == SKIP_MAX || !(c == InsnClass.Lui || c == InsnClass.Auipc || c == InsnClass.AluImm || c == InsnClass.Alu || c == InsnClass.Mul)) return 0;
  }
  return 0;
}

/** The registers instruction `ir` of the region reads and writes: in rUsed, and in rWritten. */
function noteRegs(ir: u32): void {
  rUsed |= regsRead(ir);
  const w = regWritten(ir);
  if (w < 32) { rUsed |= <u32>1 << w; rWritten |= <u32>1 << w; }
}

/**
 * Adds the block of engine `h` at `pc` to the region (when it has room and the block's first
 * instruction is one a block runs); returns its index or -1.
 */
function addBlock(cfg: Config, h: Hart, pc: u32): i32 {
  if (pc < cfg.nullGuardBytes || pc >= cfg.sramBytes || (pc & 3) != 0) return -1;
  if (rCount == JIT_REGION_BLOCKS || rInsns == JIT_MAX_INSNS) { rFull = true; return -1; }
  let n: u32 = 0;
  while (n < JIT_BLOCK_INSNS && rInsns + n < JIT_MAX_INSNS && pc + 4 * n + 4 <= cfg.sramBytes) {
    const at = pc + 4 * n, ir = load<u32>(h.sram + <usize>at);
    const kind = kindOf(ir, at, cfg.nullGuardBytes);
    if (kind == K_NONE) break;
    noteRegs(ir);
    n++;
    if (kind == K_END) break;
  }
  if (n == 0) return -1;
  if (rInsns + n == JIT_MAX_INSNS) rFull = true;
  // a branch that skips a few ALU instructions: they are this block's too (`skip`)
  const lastPc = pc + 4 * (n - 1), last = load<u32>(h.sram + <usize>lastPc);
  let sk = insnClass(last) == InsnClass.Branch ? skipOf(cfg, h, lastPc, last) : 0;
  const more = (sk & SKIP_COUNT) + ((sk & SKIP_JAL) != 0 ? 1 : 0);
  if (rInsns + n + more > JIT_MAX_INSNS) sk = 0;
  for (let t: u32 = 0; sk != 0 && t < (sk & SKIP_COUNT); t++) noteRegs(load<u32>(h.sram + <usize>(lastPc + 4 + 4 * t)));
  const i = rCount++;
  unchecked(rPc[i] = pc);
  unchecked(rN[i] = n);
  unchecked(rSkipOf[i] = sk);
  unchecked(rSkip[i] = 0); // (skipInLoops decides)
  unchecked(rCover[i] = sk != 0 ? n + more : n);
  rInsns += unchecked(rCover[i]);
  return i;
}

/**
 * The blocks of the region that could skip (rSkipOf) and lie on a cycle of its edges skip
 * (rSkip): a branch in a loop is where the data decides its way again and again (a CRC's bit
 * step); elsewhere a select costs more than a branch the host predicts (soft-float routines
 * ran 12 % slower). True when any does, and the edges must be found again.
 */
const reach = new StaticArray<u64>(JIT_REGION_BLOCKS); // (skipInLoops, copyEntry)
function skipInLoops(): bool {
  reachable();
  let any = false;
  for (let i = 0; i < rCount; i++) {
    if (unchecked(rSkipOf[i]) == 0 || (unchecked(reach[i]) & (<u64>1 << <u64>i)) == 0) continue;
    unchecked(rSkip[i] = unchecked(rSkipOf[i]));
    any = true;
  }
  return any;
}

/** reach[i]: the blocks reachable from block i by one edge or more. */
function reachable(): void {
  for (let i = 0; i < rCount; i++) unchecked(reach[i] = 0);
  for (let e = 0; e < eCount; e++) unchecked(reach[unchecked(eFrom[e])] |= <u64>1 << <u64>unchecked(eTo[e]));
  let changed = true;
  while (changed) {
    changed = false;
    for (let i = 0; i < rCount; i++) {
      let r = unchecked(reach[i]);
      for (let j = 0; j < rCount; j++) if ((unchecked(reach[i]) & (<u64>1 << <u64>j)) != 0) r |= unchecked(reach[j]);
      if (r != unchecked(reach[i])) { unchecked(reach[i] = r); changed = true; }
    }
  }
}

/**
 * The entry where translations are made is where jumps land most: often the head of an inner
 * loop that the code enters elsewhere (past its head, as a compiler lays out a loop whose test
 * comes first, or from a block that runs on into the head's instructions). From there the
 * region is irreducible: the loop's other blocks become roots (regionCfg), and each time round
 * it goes through the dispatch loop twice. A copy of the entry block as a block of the region,
 * the target of every edge to the entry's pc, leaves the entry itself as a root no edge reaches,
 * run once per call, so the loop can be a wasm loop. Made when the entry is on a cycle of the
 * region's and the copy leaves fewer edges on cycles going through the dispatch loop
 * (`dispatchesOnCycles`); else the region stays as it was. Then finds the edges again.
 */
function copyEntry(h: Hart): void {
  if (rRootCount == 1 || rCount == JIT_REGION_BLOCKS || rInsns + unchecked(rCover[0]) > JIT_MAX_INSNS) return;
  const before = dispatchesOnCycles();
  if (before == 0) return;
  const k = rCount++;
  unchecked(rPc[k] = unchecked(rPc[0])); unchecked(rN[k] = unchecked(rN[0]));
  unchecked(rSkipOf[k] = unchecked(rSkipOf[0])); unchecked(rSkip[k] = unchecked(rSkip[0])); unchecked(rCover[k] = unchecked(rCover[0]));
  rInsns += unchecked(rCover[0]);
  rEntryCopy = k;
  regionCfg(h);
  if (dispatchesOnCycles() < before) return;
  rCount--; rInsns -= unchecked(rCover[0]); rEntryCopy = -1; // (no better: as it was)
  regionCfg(h);
}

/** The region's edges that go through the dispatch loop (to another root) from a block on a cycle. */
function dispatchesOnCycles(): u32 {
  reachable();
  let n: u32 = 0;
  for (let e = 0; e < eCount; e++) {
    const f = unchecked(eFrom[e]), t = unchecked(eTo[e]);
    if (unchecked(rRpo[f]) >= 0 && (unchecked(reach[f]) & (<u64>1 << <u64>f)) != 0 && edgeKind(f, t) == E_DISPATCH) n++;
  }
  return n;
}

/** Is `pc` one of the indirect jumps' targets the region takes in? */
function isTarget(pc: u32): bool {
  for (let i: u32 = 0; i < rTargetCount; i++) if (unchecked(rTargets[i]) == pc) return true;
  return false;
}

// ---- the region's control flow ---------------------------------------------------------------
//
// A region's blocks become structured wasm (as in Ramsey's "Beyond Relooper", 2022). Its edges
// (a block's branch, jump or fall-through to a block of the region; a JALR's compares) are
// ordered depth first from its roots, dominators found, and each block's code is emitted once,
// where its dominator tree puts it:
// - a block that heads a loop (an edge back to it from a block it dominates) inside a wasm
//   `loop`, which that edge branches to;
// - a block reached by several edges going forward after the end of a wasm `block` those edges
//   branch out of, inside its dominator's code;
// - any other block in place, at the end of the one edge reaching it.
// The entry is a root; so is a block entered from more than one root's tree or by an edge
// back from a block it does not dominate (irreducible flow: a merge sort's loops). With more
// than one root, the roots' trees lie in a dispatch loop whose br_table picks one (L_BI), and an
// edge to a root from outside its tree sets L_BI and branches to that loop. So loops run as wasm
// loops, with no dispatch per iteration, and irreducible ones stay in the region.

const E_FORWARD: u32 = 1, E_BACK: u32 = 2, E_DISPATCH: u32 = 3;
const EDGES_MAX: i32 = JIT_REGION_BLOCKS * (JIT_REGION_BLOCKS + 2);
const eFrom = new StaticArray<i32>(EDGES_MAX);
const eTo = new StaticArray<i32>(EDGES_MAX);
let eCount: i32 = 0;
const S_ROOT: i32 = JIT_REGION_BLOCKS; // the roots' dominator (no block)
const rRoot = new StaticArray<i32>(JIT_REGION_BLOCKS); // the block's index among the roots, or -1
const rRoots = new StaticArray<i32>(JIT_REGION_BLOCKS); // the roots, the entry first
let rRootCount: i32 = 0;
const rRpo = new StaticArray<i32>(JIT_REGION_BLOCKS + 1); // reverse postorder number (S_ROOT's 0), -1 when unreached
const rIdom = new StaticArray<i32>(JIT_REGION_BLOCKS + 1);
const rPreds = new StaticArray<u64>(JIT_REGION_BLOCKS);
const rForwardIn = new StaticArray<u32>(JIT_REGION_BLOCKS); // edges going forward into the block
const rLoopHead = new StaticArray<bool>(JIT_REGION_BLOCKS);
const rOrder = new StaticArray<i32>(JIT_REGION_BLOCKS + 1); // by reverse postorder
let rReached: i32 = 0; // blocks reached, with S_ROOT
let rPost: i32 = 0;
const mChildren = new StaticArray<i32>(JIT_REGION_BLOCKS); // the merge children of the blocks `tree` is in, a stack
let mTop: i32 = 0;

function addEdge(from: i32, to: u32): void {
  const j = regionBlock(to);
  if (j < 0 || eCount == EDGES_MAX) return;
  unchecked(eFrom[eCount] = from); unchecked(eTo[eCount] = j);
  eCount++;
}

function makeRoot(i: i32): void {
  unchecked(rRoot[i] = rRootCount);
  unchecked(rRoots[rRootCount] = i);
  rRootCount++;
}

/** Depth first from block i, along edges to blocks that are not roots: postorder into rOrder's top. */
function dfs(i: i32): void {
  unchecked(rRpo[i] = 0);
  for (let e = 0; e < eCount; e++) {
    if (unchecked(eFrom[e]) != i) continue;
    const j = unchecked(eTo[e]);
    if (unchecked(rRpo[j]) < 0 && unchecked(rRoot[j]) < 0) dfs(j);
  }
  unchecked(rOrder[JIT_REGION_BLOCKS - rPost] = i);
  rPost++;
}

function intersect(a: i32, b: i32): i32 {
  while (a != b) {
    while (unchecked(rRpo[a]) > unchecked(rRpo[b])) a = unchecked(rIdom[a]);
    while (unchecked(rRpo[b]) > unchecked(rRpo[a])) b = unchecked(rIdom[b]);
  }
  return a;
}

function dominates(a: i32, b: i32): bool {
  while (b != a && b != S_ROOT) b = unchecked(rIdom[b]);
  return b == a;
}

/** Orders the blocks depth first from S_ROOT (to the roots in order) and finds their dominators. */
function orderRegion(): void {
  for (let i = 0; i <= S_ROOT; i++) unchecked(rRpo[i] = -1);
  rPost = 0;
  for (let r = rRootCount - 1; r >= 0; r--) { // (postorder: the entry's tree last, so first in reverse)
    const i = unchecked(rRoots[r]);
    if (unchecked(rRpo[i]) < 0) dfs(i);
  }
  unchecked(rOrder[JIT_REGION_BLOCKS - rPost] = S_ROOT);
  rPost++;
  rReached = rPost;
  for (let k = 0; k < rReached; k++) { // postorder was filled from the top: move it down, numbering
    const i = unchecked(rOrder[JIT_REGION_BLOCKS + 1 - rReached + k]);
    unchecked(rOrder[k] = i);
    unchecked(rRpo[i] = k);
  }
  for (let i = 0; i < rCount; i++) unchecked(rPreds[i] = 0);
  for (let e = 0; e < eCount; e++) {
    const f = unchecked(eFrom[e]), t = unchecked(eTo[e]);
    if (unchecked(rRpo[f]) >= 0 && unchecked(rRoot[t]) < 0) unchecked(rPreds[t] |= <u64>1 << <u64>f);
  }
  // dominators (Cooper, Harvey and Kennedy's iteration over reverse postorder)
  for (let i = 0; i < S_ROOT; i++) unchecked(rIdom[i] = unchecked(rRoot[i]) >= 0 ? S_ROOT : -1);
  unchecked(rIdom[S_ROOT] = S_ROOT);
  let changed = true;
  while (changed) {
    changed = false;
    for (let k = 1; k < rReached; k++) {
      const b = unchecked(rOrder[k]);
      if (unchecked(rRoot[b]) >= 0) continue;
      let idom = -1;
      const preds = unchecked(rPreds[b]);
      for (let p = 0; p < rCount; p++) {
        if ((preds & (<u64>1 << <u64>p)) == 0 || unchecked(rIdom[p]) < 0) continue;
        idom = idom < 0 ? p : intersect(p, idom);
      }
      if (idom != unchecked(rIdom[b])) { unchecked(rIdom[b] = idom); changed = true; }
    }
  }
}

/** The region's edges, roots, order and dominators (translate, before emitting). */
function regionCfg(h: Hart): void {
  eCount = 0;
  rRootCount = 0;
  for (let i = 0; i < rCount; i++) {
    unchecked(rRoot[i] = -1);
    const lastPc = unchecked(rPc[i]) + 4 * (unchecked(rN[i]) - 1), ir = load<u32>(h.sram + <usize>lastPc);
    switch (insnClass(ir)) {
      case InsnClass.Branch: addEdge(i, lastPc + immB(ir)); if (unchecked(rSkip[i]) == 0) addEdge(i, lastPc + 4); break;
      case InsnClass.Jal: addEdge(i, lastPc + immJ(ir)); break;
      case InsnClass.Jalr: {
        const isReturn = rdOf(ir) == 0 && (rs1Of(ir) == 1 || rs1Of(ir) == 5);
        for (let j = 0; j < rCount; j++) {
          const at = unchecked(rPc[j]);
          if ((isReturn && isReturnSite(h, at)) || isTarget(at)) addEdge(i, at);
        }
        break;
      }
      default: addEdge(i, lastPc + 4); // (a block that ends without a jump)
    }
  }
  makeRoot(0);
  for (;;) { // a block entered from two roots' trees, or back from a block it does not dominate, is a root too
    orderRegion();
    const roots = rRootCount;
    for (let k = 1; k < rReached; k++) {
      const i = unchecked(rOrder[k]);
      if (unchecked(rRoot[i]) < 0 && unchecked(rIdom[i]) == S_ROOT) makeRoot(i);
    }
    for (let e = 0; e < eCount; e++) {
      const f = unchecked(eFrom[e]), t = unchecked(eTo[e]);
      if (unchecked(rRpo[f]) < 0 || unchecked(rRoot[t]) >= 0 || unchecked(rRpo[t]) > unchecked(rRpo[f]) || dominates(t, f)) continue;
      makeRoot(t);
    }
    if (rRootCount == roots) break;
  }
  for (let i = 0; i < rCount; i++) { unchecked(rForwardIn[i] = 0); unchecked(rLoopHead[i] = false); }
  for (let e = 0; e < eCount; e++) {
    const f = unchecked(eFrom[e]), t = unchecked(eTo[e]);
    if (unchecked(rRpo[f]) < 0) continue;
    const how = edgeKind(f, t);
    if (how == E_FORWARD) unchecked(rForwardIn[t] += 1);
    else if (how == E_BACK) unchecked(rLoopHead[t] = true);
  }
}

/** How the edge from block `from` (reached) to block `to` goes. */
function edgeKind(from: i32, to: i32): u32 {
  if (unchecked(rRpo[to]) > unchecked(rRpo[from]) && unchecked(rRoot[to]) < 0) return E_FORWARD;
  return dominates(to, from) ? E_BACK : E_DISPATCH;
}

/** Emits the roots' trees: the entry's alone, or all of them in the dispatch loop (L_BI: the root; 0, the entry, on entry). */
function roots(dev: Device, h: Hart): void {
  if (rRootCount == 1) { tree(dev, h, 0); return; }
  open(LOOP, C_TOP, -1);
  for (let r = rRootCount - 1; r >= 0; r--) open(BLOCK, C_BLOCK, unchecked(rRoots[r]));
  get(L_BI); byte(BR_TABLE); uleb(<u32>rRootCount);
  for (let r = 0; r < rRootCount; r++) uleb(<u32>r);
  uleb(<u32>rRootCount - 1);
  for (let r = 0; r < rRootCount; r++) { close(); tree(dev, h, unchecked(rRoots[r])); }
  close();
}

/** Emits block x and the blocks it dominates (its loop around them when it heads one). */
function tree(dev: Device, h: Hart, x: i32): void {
  // x's merge children (dominated by x, reached by more than one edge going forward), the
  // latest in reverse postorder first: its wasm block outermost, its code last
  const base = mTop;
  for (let k = rReached - 1; k > 0; k--) {
    const y = unchecked(rOrder[k]);
    if (y != x && unchecked(rRoot[y]) < 0 && unchecked(rIdom[y]) == x && (unchecked(rForwardIn[y]) > 1 || unchecked(rOnEntryPath[y]))) { unchecked(mChildren[mTop] = y); mTop++; }
  }
  const loop = unchecked(rLoopHead[x]);
  const clean = loop && cleanLoop < 0 && cleanLoopAt(dev.cfg, h, x);
  if (clean) { i32c(0); set(L_CLEN); cleanLoop = x; } // (no clean page yet)
  if (loop) open(LOOP, C_LOOP, x);
  within(dev, h, x, base, base);
  if (loop) close();
  if (clean) cleanLoop = -1;
  mTop = base;
}

/** Emits block x inside the wasm blocks of its merge children from the `i`-th on, each child after its block's end. */
function within(dev: Device, h: Hart, x: i32, i: i32, base: i32): void {
  if (i == mTop) { toEntries(x); blockCode(dev, h, x); return; }
  const y = unchecked(mChildren[i]);
  open(BLOCK, C_BLOCK, y);
  within(dev, h, x, i + 1, base);
  close();
  tree(dev, h, y);
}

// Entries. A region is entered at its entry, and at the heads of its loops (up to JIT_ENTRIES):
// the places where jumps land most in a kernel are its loops' heads, and each one translated as
// a region of its own held nearly the whole kernel again (classic: 8 regions of ~32 KB, V8's
// optimising compile of them ~1 s of a core in a first run of ~1.3 s). Wasm cannot branch into
// a loop, so a call for an entry inside one goes there the way the code is nested: from the
// top of each block's code on the entry's path in the dominator tree, a branch past the code
// to the wasm block its next block on the path follows (such a block is always emitted after
// a wasm block's end, never in place: rOnEntryPath). The hart's pc word names the entry until
// the call is there (the prologue writes the entry's number, odd, no pc), then ENTERED (every
// exit stores pc): one test of a word in memory per block on an entry's path, and no local
// live through the function (one more, as the entry's number, cost classic's loops 13 %).

const rEntryBlocks = new StaticArray<i32>(JIT_ENTRIES); // the entries' blocks
/** The hart's pc word once a call is at its entry (odd: no pc); entry k's number while it is on its way there: ENTERED + 2 (k + 1). */
const ENTERED: u32 = 1;
@inline function entryWord(k: u32): u32 { return ENTERED + 2 * (k + 1); }
let rEntryCount: u32 = 0;
const rOnEntryPath = new StaticArray<bool>(JIT_REGION_BLOCKS); // on the path from a root to an entry (not a root)

/** The root whose tree holds block i. */
function rootOf(i: i32): i32 {
  while (unchecked(rRoot[i]) < 0) i = unchecked(rIdom[i]);
  return i;
}

/**
 * Chooses the region's entries besides its own, when it holds all it reaches (a full one left
 * blocks out, which a region made at the loop's head would hold: CoreMark-like's regions, 48
 * blocks each, left theirs 28 % more often entered at their loops' heads, 20 % slower): the
 * heads of its loops (not the entry's pc: a copy of it is not another entry), JIT_ENTRIES at
 * most; none for a block translated alone (`single`). Marks their paths.
 */
function chooseEntries(single: bool): void {
  rEntryCount = 0;
  for (let i = 0; i < rCount; i++) unchecked(rOnEntryPath[i] = false);
  if (single || rFull) return;
  for (let i = firstTarget(); i < rCount && rEntryCount < JIT_ENTRIES; i++) {
    if (!unchecked(rLoopHead[i]) || unchecked(rRpo[i]) < 0 || unchecked(rPc[i]) == unchecked(rPc[0])) continue;
    unchecked(rEntryBlocks[rEntryCount] = i);
    rEntryCount++;
    for (let y = i; unchecked(rRoot[y]) < 0; y = unchecked(rIdom[y])) unchecked(rOnEntryPath[y] = true);
  }
}

/** Sets the hart's pc to ENTERED: the call is at its entry. */
function entered(): void { get(L_H); i32c(ENTERED); mem(I32_STORE, 2, <u32>offsetof<Hart>("pc")); }

/** Before block x's code: a call for an entry below x goes on to the wasm block after which x's child on the way there follows (ENTERED once that child is the entry). */
function toEntries(x: i32): void {
  let any = false;
  for (let k: u32 = 0; k < rEntryCount; k++) {
    const e = unchecked(rEntryBlocks[k]);
    let y = e;
    while (unchecked(rRoot[y]) < 0 && unchecked(rIdom[y]) != x) y = unchecked(rIdom[y]);
    if (unchecked(rRoot[y]) >= 0) continue; // (not below x)
    if (!any) {
      get(L_H); mem(I32_LOAD, 2, <u32>offsetof<Hart>("pc")); byte(LOCAL_TEE); uleb(L_TMP); i32c(ENTERED); op(I32_NE);
      ifThen(); any = true;
    }
    get(L_TMP); i32c(entryWord(k)); op(I32_EQ);
    ifThen();
    if (y == e) entered();
    brTo(C_BLOCK, y);
    endIf();
  }
  if (any) endIf();
}

/** The prologue's part for the entries: from the hart's pc, the root to start at (L_BI) and the pc word (ENTERED, or the entry's number on the way to it). */
function entryPrologue(): void {
  if (rEntryCount == 0) return;
  get(L_H); mem(I32_LOAD, 2, <u32>offsetof<Hart>("pc")); set(L_TMP);
  entered();
  for (let k: u32 = 0; k < rEntryCount; k++) {
    const e = unchecked(rEntryBlocks[k]), r = rootOf(e);
    get(L_TMP); i32c(unchecked(rPc[e])); op(I32_EQ);
    ifThen();
    if (r != e) { get(L_H); i32c(entryWord(k)); mem(I32_STORE, 2, <u32>offsetof<Hart>("pc")); }
    if (unchecked(rRoot[r]) != 0) { i32c(<u32>unchecked(rRoot[r])); set(L_BI); }
    endIf();
  }
}

/**
 * Engine `engine`'s map sends its landings at translation `id`'s entries there: where it has
 * none, a block translated alone (a window's start), or `was` (the translation `id` replaces).
 */
function claimEntries(c: JitCache, engine: u32, id: i32, was: Block | null): void {
  const b = blockAt(c, id);
  for (let k: u32 = 0; k < b.entries; k++) {
    const pc = load<u32>(b.words + JIT_ENTRIES_AT + <usize>k * 4);
    const slot = mapSlotMade(c, engine, pc >> 2), cur = load<i32>(slot);
    if (cur == NO_BLOCK || (cur >= 0 && (blockAt(c, cur).single != 0 || changetype<usize>(blockAt(c, cur)) == changetype<usize>(was)))) store<i32>(slot, id);
  }
}

/** Emits the code of block i (each of its edges ends it, in blockEnd). */
function blockCode(dev: Device, h: Hart, i: i32): void {
  curBlock = i;
  pend = 0; pendN = 0; unrollTail = 0;
  const bpc = unchecked(rPc[i]), n = unchecked(rN[i]);
  const copies = unrollOf(dev.cfg, h, i);
  if (copies > 1) { unrolled(dev, h, i, copies); return; }
  blockStart(dev, h, bpc, n);
  insns(dev, h, bpc, n, n);
}

/** Emits instructions 0 to `to` - 1 of the current block (at `bpc`, n instructions). */
function insns(dev: Device, h: Hart, bpc: u32, n: u32, to: u32): void {
  for (let k: u32 = 0; k < to;) {
    const end = groupAt(dev.cfg, h, bpc, n, k);
    if (end > k) { group(dev, h, bpc, n, end); k = end; continue; }
    emitInsn(dev, h, load<u32>(h.sram + <usize>(bpc + 4 * k)), bpc, k, n);
    k++;
  }
}

/** Instructions a one-block loop holds at most to be unrolled (`unrolled`). */
const UNROLL_INSNS: u32 = 16;
/** Copies of an unrolled loop's block. */
const UNROLL_COPIES: u32 = 4;

/**
 * How many copies of block i its loop runs per wasm loop turn (`unrolled`): UNROLL_COPIES when it
 * is a loop of its own (its branch, which skips nothing, goes back to its start) of at most
 * UNROLL_INSNS instructions, else 1.
 */
function unrollOf(cfg: Config, h: Hart, i: i32): u32 {
  const bpc = unchecked(rPc[i]), n = unchecked(rN[i]);
  if (!unchecked(rLoopHead[i]) || unchecked(rSkip[i]) != 0 || n > UNROLL_INSNS) return 1;
  const last = bpc + 4 * (n - 1), ir = load<u32>(h.sram + <usize>last);
  return insnClass(ir) == InsnClass.Branch && last + immB(ir) == bpc ? UNROLL_COPIES : 1;
}

/**
 * A loop of one block (i, heading a wasm loop) emitted as `copies` copies of it per wasm loop
 * turn: one window check for all of them, V8's check for interrupts at the wasm loop's head
 * once, and the count once, on the way back; each copy's branch out goes, counted, past the
 * copies to the block's way on (a sieve's or a hash's loop of four or five instructions ran
 * ~25 host instructions a turn, a third of them these). The window check covers the copies'
 * cycles to the last one's branch; an access that goes to HBM checks again for the copies
 * after its own too (unrollTail), and when the window ends within them the interpreter runs
 * what is left of it, as it does after any window check.
 */
function unrolled(dev: Device, h: Hart, i: i32, copies: u32): void {
  const cfg = dev.cfg, bpc = unchecked(rPc[i]), n = unchecked(rN[i]);
  const ir = load<u32>(h.sram + <usize>(bpc + 4 * (n - 1)));
  const body = blockRest(cfg, h, bpc, n, 0), turn = body + <u64>cfg.cpiBranchTaken;
  leaveBefore(bpc, <u64>(copies - 1) * turn + body);
  open(BLOCK, C_JOIN, i);
  for (let c: u32 = 0; c < copies; c++) {
    unrollTail = <u64>(copies - 1 - c) * turn;
    insns(dev, h, bpc, n, n - 1);
    taken(ir);
    const done = <u64>(c + 1) * <u64>n;
    if (c + 1 < copies) { // not taken: out, past the copies; taken: into the next copy
      op(I32_EQZ);
      ifThen(); count(done, pend + <u64>cfg.cpiAlu); brTo(C_JOIN, i); endIf();
      pend += <u64>cfg.cpiBranchTaken; pendN = done;
      continue;
    }
    ifThen(); count(done, pend + <u64>cfg.cpiBranchTaken); brTo(C_LOOP, i); endIf();
    count(done, pend + <u64>cfg.cpiAlu);
  }
  close();
  pend = 0; pendN = 0; unrollTail = 0;
  const j = regionBlock(bpc + 4 * n); // on, counted
  if (j < 0) exit(bpc + 4 * n, false, 0, 0, EXIT_JUMP);
  else goTo(dev, h, j);
}

/** Does a block of the region end with a call (JAL or JALR that links) whose next instruction is `pc`? */
function isReturnSite(h: Hart, pc: u32): bool {
  for (let i = 0; i < rCount; i++) {
    const last = unchecked(rPc[i]) + 4 * (unchecked(rN[i]) - 1), ir = load<u32>(h.sram + <usize>last);
    const c = insnClass(ir);
    if ((c == InsnClass.Jal || c == InsnClass.Jalr) && rdOf(ir) != 0 && last + 4 == pc) return true;
  }
  return false;
}

/**
 * Where block i can go next without leaving through a JALR: its branch's or jump's targets, or
 * the next instruction; after a call, the call's target, then where its return lands.
 */
function successors(cfg: Config, h: Hart, i: i32): void {
  const pc = unchecked(rPc[i]), n = unchecked(rN[i]);
  const lastPc = pc + 4 * (n - 1), ir = load<u32>(h.sram + <usize>lastPc);
  const c = insnClass(ir);
  if (c == InsnClass.Jalr) { if (rdOf(ir) != 0) want(cfg, h, lastPc + 4); return; }
  if (c == InsnClass.Jal) {
    want(cfg, h, lastPc + immJ(ir));
    if (rdOf(ir) != 0) want(cfg, h, lastPc + 4);
    return;
  }
  if (c == InsnClass.Branch) want(cfg, h, lastPc + immB(ir));
  want(cfg, h, lastPc + 4);
}

function want(cfg: Config, h: Hart, pc: u32): void {
  if (regionBlock(pc) < 0) addBlock(cfg, h, pc);
}

/**
 * Translates the region of engine `h` entered at `pc` (in SRAM, aligned, above the guard) into
 * a new record of `c` (with `single`, only the block at `pc`); with `from` (the entry's last
 * translation), with the targets its indirect jumps took as blocks too. Returns its id, or
 * NOT_TRANSLATABLE when the instruction at `pc` is not one a block runs.
 */
function translate(dev: Device, c: JitCache, h: Hart, pc: u32, single: bool, from: Block | null = null): i32 {
  const cfg = dev.cfg;
  rCount = 0; rInsns = 0; rUsed = 0; rWritten = 0; rTargetCount = 0; rGeneration = 0; rEntryCopy = -1; rFull = false;
  if (from) { // (read before anything else: a flush below reuses its record)
    rTargetCount = from.targets;
    for (let i: u32 = 0; i < rTargetCount; i++) unchecked(rTargets[i] = load<u32>(from.words + JIT_TARGETS_AT + <usize>i * 4));
    rGeneration = from.generation + 1;
  }
  if (addBlock(cfg, h, pc) < 0) return NOT_TRANSLATABLE;
  jitRecordsMade(c);
  if (c.eng == 0) { // what translated code reads of the device (its bytes hold none of it)
    c.eng = changetype<usize>(engOf(dev));
    c.hbm = memOf(dev).hbm;
    // the engines' SRAMs lie one after another, as their code-page bytes do (a byte per page)
    c.pagesBias = c.codePages - (hartAt(dev, 0).sram >> JIT_PAGE_SHIFT);
  }
  // another engine running the same code here has translated it already: share (engines
  // running one image are the common case, and compiling a module costs the host ~1 ms)
  for (let e: u32 = 0; e < c.engines; e++) {
    if (e == h.id) continue;
    const at = mapSlot(c, e, pc >> 2);
    const other = at == 0 ? NO_BLOCK : load<i32>(at);
    if (other >= 0 && blockAt(c, other).slow != 0) return NOT_TRANSLATABLE; // (judged not worth it: see JIT_SLOW_INSNS)
    if (other >= 0 && blockAt(c, other).single == <u32>single && blockAt(c, other).generation >= rGeneration && stillTrue(blockAt(c, other), h)) {
      store<u32>(checkedAt(c, h.id, other), c.epoch);
      markCode(c, h.id, blockAt(c, other));
      claimEntries(c, h.id, other, null);
      return other;
    }
  }
  if (!single) {
    for (let i: u32 = 0; i < rTargetCount; i++) want(cfg, h, unchecked(rTargets[i])); // before the blocks the entry reaches
    for (let i = 0; i < rCount; i++) successors(cfg, h, i); // breadth first: rCount grows as it goes
  }
  regionCfg(h);
  if (!single) copyEntry(h);
  if (skipInLoops()) regionCfg(h);
  chooseEntries(single);
  if (c.count == c.cap) jitFlush(c);
  const id = <i32>c.count;
  c.count++;
  const b = blockAt(c, id);
  b.n = <u32>rCount;
  b.single = <u32>single;
  b.targets = b.targetsIn = rTargetCount;
  b.jumpsOut = 0;
  b.generation = rGeneration;
  b.calls = 0;
  b.retired = 0;
  b.slow = 0;
  store<u32>(checkedAt(c, h.id, id), c.epoch);
  // what it was translated from: (pc, n) per block, then the words
  if (b.words == 0) b.words = heap.alloc(JIT_RECORD_BYTES); // a device that translates little keeps little
  let w = b.words + <usize>JIT_REGION_BLOCKS * 8;
  for (let i = 0; i < rCount; i++) {
    const bpc = unchecked(rPc[i]), n = unchecked(rCover[i]);
    store<u32>(b.words + <usize>i * 8, bpc);
    store<u32>(b.words + <usize>i * 8 + 4, n);
    memory.copy(w, h.sram + <usize>bpc, <usize>n * 4);
    w += <usize>n * 4;
  }
  for (let i: u32 = 0; i < rTargetCount; i++) store<u32>(b.words + JIT_TARGETS_AT + <usize>i * 4, unchecked(rTargets[i]));
  b.entries = rEntryCount;
  for (let k: u32 = 0; k < rEntryCount; k++) store<u32>(b.words + JIT_ENTRIES_AT + <usize>k * 4, unchecked(rPc[unchecked(rEntryBlocks[k])]));

  // the module: one function f(h: i32, stop: i64, cache: i32) -> i32 over the core's memory
  out = c.buf;
  outEnd = c.buf + <usize>JIT_BUF_BYTES;
  byte(0x00); byte(0x61); byte(0x73); byte(0x6d); byte(1); byte(0); byte(0); byte(0);
  byte(1); let s = placeholder(); uleb(1); byte(0x60); uleb(3); byte(T_I32); byte(T_I64); byte(T_I32); uleb(1); byte(T_I32); patch(s); // types
  byte(2); s = placeholder(); uleb(1); // imports: env.memory
  uleb(3); byte(0x65); byte(0x6e); byte(0x76);
  uleb(6); byte(0x6d); byte(0x65); byte(0x6d); byte(0x6f); byte(0x72); byte(0x79);
  byte(2); byte(0); uleb(0); patch(s);
  byte(3); s = placeholder(); uleb(1); uleb(0); patch(s); // functions
  byte(7); s = placeholder(); uleb(1); uleb(1); byte(0x66); byte(0); uleb(0); patch(s); // exports: f
  byte(10); s = placeholder(); uleb(1);
  const body = placeholder();
  uleb(2); uleb(I32_LOCALS); byte(T_I32); uleb(I64_LOCALS); byte(T_I64);
  // prologue: the engine's register block and SRAM; the registers the region touches; the cycle
  get(L_H); mem(I32_LOAD, 2, <u32>offsetof<Hart>("regs")); set(L_REGS);
  get(L_H); mem(I32_LOAD, 2, <u32>offsetof<Hart>("sram")); set(L_SRAM);
  // the engine's run-ahead page bytes (jit-cache.ts pageFlagsOf)
  get(L_CTX); mem(I32_LOAD, 2, <u32>offsetof<JitCache>("pageFlags"));
  get(L_H); mem(I32_LOAD, 2, <u32>offsetof<Hart>("id")); i32c(cfg.sramBytes >> AHEAD_PAGE_SHIFT); op(I32_MUL); op(I32_ADD); set(L_PAGES);
  for (let r: u32 = 1; r < 32; r++) {
    if ((rUsed & (<u32>1 << r)) == 0) continue;
    get(L_REGS); mem(I32_LOAD, 2, 4 * r); set(lReg(r));
  }
  get(L_STOP); get(L_H); mem(I64_LOAD, 3, <u32>offsetof<Hart>("cycle")); op(I64_SUB); i64c(CNT_SHIFT); op(I64_SHL); set(L_CNT);
  entryPrologue();
  // the region's blocks in structured control flow (regionCfg, tree), inside the exits' block
  ctxN = 0;
  mTop = 0;
  open(BLOCK, C_EXIT, -1);
  roots(dev, h);
  close();
  epilogue();
  op(END);
  patch(body);
  patch(s);
  const len = <u32>(out - c.buf);
  const slot = load<u32>(c.tables + <usize>id * 4);
  // a module larger than the buffer (none of the benchmarks' comes near) is not made: interpret
  const table = out > outEnd ? NO_TABLE : jitCompile(c.buf, len, slot);
  if (table == NO_TABLE) { // the host could not compile it (a browser's main thread refuses large modules): interpret
    c.count--;
    c.compileFailures++;
    return NOT_TRANSLATABLE;
  }
  b.table = table;
  store<u32>(c.tables + <usize>id * 4, table);
  c.translated++;
  c.emittedBytes += len;
  markCode(c, h.id, b);
  claimEntries(c, h.id, id, from);
  return id;
}

/** Engine `engine` runs translation `b`: a store or DMA into the words it was read from drops the engine's translations. */
function markCode(c: JitCache, engine: u32, b: Block): void {
  const pages = codePagesOf(c, engine), flags = pageFlagsOf(c, engine);
  for (let i: u32 = 0; i < b.n; i++) {
    const bpc = load<u32>(b.words + <usize>i * 8), n = load<u32>(b.words + <usize>i * 8 + 4);
    for (let p = bpc >> JIT_PAGE_SHIFT; p <= (bpc + 4 * n - 1) >> JIT_PAGE_SHIFT; p++) store<u8>(pages + <usize>p, 1);
    for (let p = bpc >> AHEAD_PAGE_SHIFT; p <= (bpc + 4 * n - 1) >> AHEAD_PAGE_SHIFT; p++) {
      store<u8>(flags + <usize>p, <u8>(<u32>load<u8>(flags + <usize>p) | PAGE_CODE));
    }
  }
}

/** Does translation `b` still hold the instructions it was translated from? */
function stillTrue(b: Block, h: Hart): bool {
  let w = b.words + <usize>JIT_REGION_BLOCKS * 8;
  for (let i: u32 = 0; i < b.n; i++) {
    const at = h.sram + <usize>load<u32>(b.words + <usize>i * 8), n = <usize>load<u32>(b.words + <usize>i * 8 + 4);
    for (let k: usize = 0; k < n; k++) if (load<u32>(at + k * 4) != load<u32>(w + k * 4)) return false;
    w += n * 4;
  }
  return true;
}

/**
 * Translates the entry of engine `h`'s translation `b` again, with the targets its indirect jumps
 * took (jitNoteTarget), for the engine's map there; when that makes nothing, `b` stays, and
 * is not tried again.
 */
function retranslate(dev: Device, c: JitCache, h: Hart, b: Block): void {
  const entry = load<u32>(b.words), flushes = c.flushes;
  const id = translate(dev, c, h, entry, false, b);
  if (id >= 0) store<i32>(mapSlotMade(c, h.id, entry >> 2), id);
  else if (c.flushes == flushes) b.generation = JIT_GENERATIONS;
  // (else a flush dropped every translation, b's too: the entry is NO_BLOCK, to be hot again)
}

/** Counts a call into `b` that retired `insns` instructions; at the JIT_JUDGE_CALLS-th, judges it (JIT_SLOW_INSNS). */
function judge(b: Block, insns: u64): void {
  b.retired += insns;
  if (++b.calls == JIT_JUDGE_CALLS && b.retired < <u64>JIT_JUDGE_CALLS * JIT_SLOW_INSNS) b.slow = 1;
}

/**
 * Runs engine `h` to `stop` as `execute` would, through translated blocks where there are
 * some; returns early (as `execute` may) after an instruction the run loop must look at.
 */
export function executeJit(dev: Device, h: Hart, stop: u64): void {
  const c = jitCacheOf(dev);
  if (changetype<usize>(c) == 0) { execute(dev, h, stop, false); return; }
  const cfg = dev.cfg;
  const guard = cfg.nullGuardBytes, sramBytes = cfg.sramBytes;
  let landed = false; // pc is where a jump landed (else where the window started)
  while (h.state == EngineState.Running && h.cycle < stop) {
    const pc = h.pc;
    const atLanding = landed;
    landed = true;
    if (pc >= guard && pc < sramBytes && (pc & 3) == 0) {
      let slot = mapSlot(c, h.id, pc >> 2);
      let id = slot == 0 ? NO_BLOCK : load<i32>(slot);
      if (id == NO_BLOCK) {
        if (slot == 0) slot = mapSlotMade(c, h.id, pc >> 2);
        const hp = heatOf(slot, pc >> 2);
        if (landingsReach(hp, atLanding || c.hot == 1 ? c.hot : JIT_HOT_MAX)) {
          id = translate(dev, c, h, pc, !atLanding);
          store<i32>(slot, id);
          store<u8>(hp, 0);
        }
      } else if (id >= 0 && atLanding && blockAt(c, id).single != 0) {
        // a window's start translated as one block, which jumps land on too: hot, it gets its region
        const hp = heatOf(slot, pc >> 2);
        if (landingsReach(hp, c.hot)) {
          const flushes = c.flushes;
          const full = translate(dev, c, h, pc, false);
          if (full >= 0 || c.flushes != flushes) { id = full; store<i32>(slot, id); } // (a flush dropped the block)
          store<u8>(hp, 0);
        }
      }
      if (id >= 0 && blockAt(c, id).slow != 0) { store<i32>(slot, NOT_TRANSLATABLE); id = NO_BLOCK; } // (judged: JIT_SLOW_INSNS)
      if (id >= 0) {
        const b = blockAt(c, id);
        const checked = checkedAt(c, h.id, id);
        if (load<u32>(checked) != c.epoch) {
          if (stillTrue(b, h)) store<u32>(checked, c.epoch);
          else { jitInvalidate(c, h.id); id = NO_BLOCK; }
        }
        if (id >= 0) {
          const before = h.instret;
          const callStop = stop - h.cycle > JIT_CALL_CYCLES ? h.cycle + JIT_CALL_CYCLES : stop; // (L_CNT's bound)
          const why = call_indirect<u32>(b.table, changetype<usize>(h), callStop, changetype<usize>(c));
          c.calls++;
          c.retired += h.instret - before;
          if (b.calls < JIT_JUDGE_CALLS && c.hot != 1) judge(b, h.instret - before);
          if (why == EXIT_JUMP) { c.jumpsOut++; continue; }
          if (why == EXIT_INDIRECT) {
            c.jumpsOut++;
            // (made again from its entry: a call at another of its entries only notes the target,
            // for the translation that the entry's slot holds, which the entries' slots follow)
            if (b.single == 0 && jitNoteTarget(b, h.pc) && pc == load<u32>(b.words)) retranslate(dev, c, h, b);
            continue;
          }
          if (why == EXIT_INTERP) { c.sideExits++; execute(dev, h, h.cycle + 1, false); return; } // the instruction it left to the interpreter
          // the window ends in the block it left before: the interpreter runs its instructions
          // that start before stop (stopping first where the run loop must look: the run loop
          // calls again while the window lasts); or the call's bound came first, exactly: on
          // from there as from a window's start
          if (h.cycle < callStop) { execute(dev, h, callStop, false); return; }
          if (h.cycle >= stop || h.state != EngineState.Running) return;
          landed = false;
          continue;
        }
      }
    }
    if (!execute(dev, h, stop, true)) return;
  }
}
