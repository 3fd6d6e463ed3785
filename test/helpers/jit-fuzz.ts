// The translator (assembly/engine/jit.ts) against the interpreter on random programs: the
// differential fuzz of test/jit-fuzz.test.ts (JIT_FUZZ_PROGRAMS, 10^4 in CI) and of npm run soak
// (bench/jit-fuzz.ts, 10^6). Each program is drawn from its seed, run by the interpreter and by
// the translator translating code where it first lands (jitHot 1), and the two runs must end
// with the same registers, memories, cycles, traps, console and statistics.
//
// A program (RV32IMA + Zicsr) is a random sequence of constructs that always ends: ALU and M
// instructions, loads and stores of every width to SRAM, HBM and MMIO (console, device facts,
// mtime, the mailbox; now and then misaligned or to an unmapped or read-only address: a trap),
// AMOs and LR/SC, CSR instructions (counters, mscratch, mepc, PMP, unknown numbers, writes to
// read-only ones), ecall, ebreak, illegal words, forward branches, computed jumps (now and then
// misaligned), calls, counted loops, and loops that rewrite one of their own instructions
// (sw, sh or sb over it, then fence.i or not). Its trap handler folds mcause, mepc and mtval
// into x31, counts the trap, skips the instruction and returns; at the 64th trap it exits with
// x31. Two engines run it (different register values from mhartid), sharing the HBM words.
import { Device } from "../../host/device.js";
import { REGIONS, MMIO } from "../../host/generated/layouts.js";
import { R, I, S, B, J, CODE_BASE, writeElf } from "./rv.js";
import { rng } from "./garbage.js";
import { endState } from "./engine-state.js";

/** SRAM the programs touch: code from CODE_BASE up, data at DATA, the handler's trap count at TRAPS. */
const SRAM_BYTES = 16384, DATA = 0x3000, TRAPS = 0x3800;
/** HBM words the engines share. */
const HBM_DATA = REGIONS.HBM.base + 0x100, HBM_BYTES = 65536;
/** Traps before a program exits from its handler (a program that traps in a loop still ends). */
const TRAP_LIMIT = 64;
/** Simulated time a program is given: the longest take about 10 us. */
export const FUZZ_UNTIL_PS = 100_000_000n;

// registers: 1 calls' return address; 2..22 random code writes; 23 loop counter; 24, 25 scratch; 26 SRAM data; 27 HBM data; 28..31 the handler's
const X_LOOP = 23, X_T0 = 24, X_T1 = 25, X_SRAM = 26, X_HBM = 27, X_SUM = 31;

const OP = 0x33, OP_IMM = 0x13, LOAD = 0x03, STORE = 0x23, AMO = 0x2f, SYSTEM = 0x73;
const FENCE = 0x0ff0000f, FENCE_I = 0x0000100f, ECALL = 0x00000073, EBREAK = 0x00100073, MRET = 0x30200073;
const CSR_MTVEC = 0x305, CSR_MEPC = 0x341, CSR_MCAUSE = 0x342, CSR_MTVAL = 0x343, CSR_MHARTID = 0xf14;
/** CSRs random code reads and writes: mscratch, mepc, mcause, mtval, mstatus, mie, the counters
 * and their read-only user views (a write traps), misa, mhartid, PMP (read 0), unknown (trap). */
const CSRS = [0x340, 0x340, 0x341, 0x342, 0x343, 0x300, 0x304, 0xb00, 0xb02, 0xb80, 0xb82, 0xc00, 0xc02, 0xc01, 0x301, 0xf14, 0x3a0, 0x3b0, 0x3ef, 0x7c0, 0x180];

/** A random program for `seed`: its words, linked at CODE_BASE. */
export function fuzzProgram(seed: number): Uint32Array {
  const next = rng(seed * 2654435761 + 1);
  const pick = <T>(a: readonly T[]) => a[next() % a.length];
  const chance = (n: number) => next() % n === 0;
  const out: number[] = [];
  const pc = () => CODE_BASE + 4 * out.length;
  const li = (rd: number, v: number) => { const lo = (v << 20) >> 20, hi = (v - lo) >>> 0; out.push(((hi & 0xfffff000) | (rd << 7) | 0x37) >>> 0, I(lo, rd, 0, rd, OP_IMM)); };
  const rd = () => 2 + (next() % 21); // x1 only by calls (their return address)
  const rs = () => next() % 32;
  const alu = () => {
    if (chance(2)) {
      const f7 = pick([0, 0, 0x20, 1, 1]), f3 = f7 === 0x20 ? pick([0, 5]) : next() % 8;
      out.push(R(f7, rs(), rs(), f3, rd(), OP));
    } else {
      const f3 = next() % 8, imm = f3 === 1 ? next() % 32 : f3 === 5 ? (next() % 32) | pick([0, 0x400]) : (next() % 4096) - 2048;
      out.push(I(imm, rs(), f3, rd(), OP_IMM));
    }
  };
  const memBase = () => pick([X_SRAM, X_SRAM, X_HBM]);
  /** an offset for an access of `size` bytes: aligned within 256 bytes, misaligned 1 in 40 */
  const offset = (size: number) => (next() % (256 / size)) * size + (size > 1 && chance(40) ? 1 + (next() % (size - 1)) : 0);
  const load = () => {
    const f3 = pick([0, 1, 2, 4, 5]), size = 1 << (f3 & 3);
    if (chance(60)) out.push(I(pick([0x10, 0x3fc]), 0, f3, rd(), LOAD)); // in the NULL guard: a load access fault
    else out.push(I(offset(size), memBase(), f3, rd(), LOAD));
  };
  const store = () => {
    const f3 = next() % 3, size = 1 << f3;
    if (chance(60)) out.push(S(0x20, rs(), 0, f3, STORE)); // in the NULL guard: a store access fault
    else out.push(S(offset(size), rs(), memBase(), f3, STORE));
  };
  const amo = () => {
    const f5 = pick([0, 1, 2, 3, 4, 8, 12, 16, 20, 24, 28]), base = memBase(), off = (next() % 64) * 4 + (chance(40) ? 2 : 0);
    out.push(I(off, base, 0, X_T0, OP_IMM)); // addi t0, base, off
    out.push(R((f5 << 2) | (next() % 4), f5 === 2 ? 0 : rs(), X_T0, 2, rd(), AMO)); // aq, rl at random
  };
  const lrsc = () => {
    const base = memBase(), off = (next() % 64) * 4;
    out.push(I(off, base, 0, X_T0, OP_IMM));
    out.push(R(2 << 2, 0, X_T0, 2, rd(), AMO)); // lr.w
    for (let k = next() % 3; k > 0; k--) chance(2) ? alu() : store();
    out.push(R(3 << 2, rs(), X_T0, 2, rd(), AMO)); // sc.w
  };
  const csr = () => {
    const c = pick(CSRS), f3 = pick([1, 2, 3, 5, 6, 7]);
    out.push(I(c, f3 >= 5 ? next() % 32 : rs(), f3, rd(), SYSTEM));
  };
  const mmio = () => {
    const k = next() % 8;
    if (k < 3) { li(X_T1, MMIO.SYS.CONSOLE_TX); out.push(S(0, rs(), X_T1, next() % 3, STORE)); } // a character of any width
    else if (k < 5) { li(X_T1, pick([MMIO.SYS.NUM_ENGINES, MMIO.SYS.SRAM_BYTES, MMIO.SYS.HBM_BYTES, MMIO.SYS.CLOCK_KHZ, MMIO.TIMER.MTIME_LO, MMIO.MBOX.OUT_FREE])); out.push(I(0, X_T1, 2, rd(), LOAD)); }
    else if (k < 6) { li(X_T1, MMIO.MBOX.OUT_DATA); out.push(S(0, rs(), X_T1, 2, STORE)); }
    else if (k < 7) { li(X_T1, MMIO.SYS.NUM_ENGINES); out.push(S(0, rs(), X_T1, 2, STORE)); } // read-only: a store access fault
    else { li(X_T1, MMIO.SYS.CONSOLE_TX); out.push(I(0, X_T1, 2, rd(), LOAD)); } // write-only: a load access fault
  };
  const trap = () => out.push(pick([ECALL, EBREAK, 0xffffffff, 0x00000000, R(0, 0, 0, 4, 0, SYSTEM)])); // the last three illegal
  const skipOver = () => { // a branch over n instructions, which rejoin its target by running on to it or (1 in 3) by a jal x0
    const n = 1 + (next() % 3), join = chance(3);
    out.push(B(4 * (n + 1 + (join ? 1 : 0)), rs(), rs(), pick([0, 1, 4, 5, 6, 7])));
    for (let k = 0; k < n; k++) alu();
    if (join) out.push(J(4, 0));
  };
  const computedJump = () => { // auipc t0, 0; jalr rd, 8 + 4n (t0): over n instructions (+2: misaligned, a trap)
    const n = 1 + (next() % 3);
    out.push(((X_T0 << 7) | 0x17) >>> 0, I(8 + 4 * n + (chance(10) ? 2 : 0) + (chance(4) ? 1 : 0), X_T0, 0, chance(2) ? 0 : rd(), 0x67));
    for (let k = 0; k < n; k++) alu();
  };
  /** loads and stores through one base (one check covers them in translated code, jit.ts
   * `group`): across SRAM's end or the guard's, in data 1 KiB either way (stores pages apart;
   * below the trap count), across HBM's end, in HBM, at MMIO (loads); now and then misaligned,
   * an instruction between, the base moved */
  const group = () => {
    const where = next() % 6;
    const base = [SRAM_BYTES - 4 * (next() % 8), CODE_BASE - 16 + 4 * (next() % 8), DATA + 1024, HBM_DATA + 4 * (next() % 16), REGIONS.HBM.base + HBM_BYTES - 4 * (next() % 8), MMIO.SYS.NUM_ENGINES][where]!;
    li(X_T1, base + (chance(8) ? 1 + (next() % 3) : 0));
    for (let k = 2 + (next() % 5); k > 0; k--) {
      const isStore = where !== 5 && chance(2), f3 = isStore ? next() % 3 : pick([0, 1, 2, 4, 5]), size = 1 << (f3 & 3);
      const off = where === 2 ? ((next() % 2048) - 1024) & -size : size * ((next() % 16) - 8) + (chance(30) ? 1 : 0);
      if (isStore) out.push(S(off, rs(), X_T1, f3, STORE));
      else out.push(I(off, X_T1, f3, chance(k === 1 ? 3 : 12) ? X_T1 : rd(), LOAD)); // a load into the base (the last, now and then)
      if (chance(4)) alu();
      if (chance(8)) out.push(I(4 * ((next() % 5) - 2), X_T1, 0, X_T1, OP_IMM)); // the base moves: a new group
    }
  };
  const calls: number[] = [];
  const call = () => { calls.push(out.length); out.push(0); };
  const simple = () => {
    const c = next() % 106;
    if (c < 30) alu();
    else if (c < 42) load();
    else if (c < 54) store();
    else if (c < 60) amo();
    else if (c < 63) lrsc();
    else if (c < 70) csr();
    else if (c < 75) mmio();
    else if (c < 76) trap();
    else if (c < 86) skipOver();
    else if (c < 90) computedJump();
    else if (c < 94) call();
    else if (c < 96) out.push(((next() & 0xfffff000) | (rd() << 7) | pick([0x37, 0x17])) >>> 0); // LUI AUIPC
    else if (c < 100) out.push(pick([FENCE, FENCE_I]));
    else group();
  };
  const loop = () => {
    li(X_LOOP, 2 + (next() % 19));
    const top = out.length;
    for (let k = 3 + (next() % 10); k > 0; k--) simple();
    out.push(I(-1, X_LOOP, 0, X_LOOP, OP_IMM));
    out.push(B(4 * (top - out.length), 0, X_LOOP, 1)); // bne x23, x0, top
  };
  const selfModifying = () => { // a loop that rewrites its first instruction each time round
    li(X_LOOP, 2 + (next() % 19));
    const top = out.length, target = pc(), r = rd();
    out.push(I((next() % 4096) - 2048, r, 0, r, OP_IMM)); // addi r, r, imm: rewritten below
    for (let k = next() % 6; k > 0; k--) simple();
    li(X_T0, target);
    const how = next() % 3;
    if (how === 0) { li(X_T1, I((next() % 4096) - 2048, r, pick([0, 4, 6, 7]), r, OP_IMM)); out.push(S(0, X_T1, X_T0, 2, STORE)); } // sw: another OP-IMM
    else if (how === 1) { li(X_T1, next() & 0xffff); out.push(S(2, X_T1, X_T0, 1, STORE)); } // sh: the immediate's upper bits and rs1's
    else out.push(S(3, X_LOOP, X_T0, 0, STORE)); // sb: the immediate's top byte becomes the loop count
    if (!chance(4)) out.push(FENCE_I);
    out.push(I(-1, X_LOOP, 0, X_LOOP, OP_IMM));
    out.push(B(4 * (top - out.length), 0, X_LOOP, 1)); // bne x23, x0, top
  };

  // entry: the handler, data bases, random registers (engine 1's differ)
  const setMtvec = out.length;
  out.push(0, 0, I(CSR_MTVEC, X_T0, 1, 0, SYSTEM)); // li t0, handler (patched); csrw mtvec, t0
  li(X_SRAM, DATA); li(X_HBM, HBM_DATA);
  for (let r = 1; r <= 22; r++) li(r, next());
  out.push(I(CSR_MHARTID, 0, 2, X_T0, SYSTEM), I(7, X_T0, 1, X_T0, OP_IMM));
  for (let r = 1; r <= 22; r++) out.push(R(0, X_T0, r, 0, r, OP));
  for (let n = 15 + (next() % 25); n > 0; n--) {
    const c = next() % 10;
    if (c < 2) loop();
    else if (c < 3) selfModifying();
    else simple();
  }
  // exit with a checksum of x1..x22
  out.push(I(0, 0, 0, X_T0, OP_IMM));
  for (let r = 1; r <= 22; r++) out.push(R(0, r, X_T0, 4, X_T0, OP), I(5, X_T0, 1, X_T1, OP_IMM), R(0, X_T1, X_T0, 0, X_T0, OP));
  li(X_T1, MMIO.SYS.EXIT);
  out.push(S(0, X_T0, X_T1, 2, STORE));
  // functions the calls go to: a few instructions and a return
  const fns: number[] = [];
  for (let f = 0; f < 3; f++) {
    fns.push(out.length);
    for (let k = 1 + (next() % 4); k > 0; k--) chance(3) ? load() : alu();
    out.push(I(0, 1, 0, 0, 0x67)); // jalr x0, 0(ra)
  }
  for (const at of calls) { const f = pick(fns); out[at] = J(4 * (f - at), 1); }
  // the trap handler: x31 folds mcause, mepc, mtval; the count at TRAPS; exit at TRAP_LIMIT; else skip the instruction
  const handler = pc();
  out.push(I(CSR_MCAUSE, 0, 2, 28, SYSTEM), I(CSR_MEPC, 0, 2, 29, SYSTEM), I(CSR_MTVAL, 0, 2, 30, SYSTEM));
  out.push(R(0, 28, X_SUM, 0, X_SUM, OP), I(5, X_SUM, 1, 28, OP_IMM), R(0, 28, X_SUM, 4, X_SUM, OP), R(0, 30, X_SUM, 4, X_SUM, OP), R(0, 29, X_SUM, 0, X_SUM, OP));
  li(29, TRAPS);
  out.push(I(0, 29, 2, 30, LOAD), I(1, 30, 0, 30, OP_IMM), S(0, 30, 29, 2, STORE), I(TRAP_LIMIT, 0, 0, 28, OP_IMM));
  out.push(B(16, 28, 30, 6)); // bltu x30, x28, resume (over the exit's three words)
  li(29, MMIO.SYS.EXIT);
  out.push(S(0, X_SUM, 29, 2, STORE));
  out.push(I(CSR_MEPC, 0, 2, 29, SYSTEM), I(4, 29, 0, 29, OP_IMM), I(CSR_MEPC, 29, 1, 0, SYSTEM), MRET);
  const lo = (handler << 20) >> 20;
  out[setMtvec] = ((((handler - lo) >>> 0) & 0xfffff000) | (X_T0 << 7) | 0x37) >>> 0;
  out[setMtvec + 1] = I(lo, X_T0, 0, X_T0, OP_IMM);
  if (pc() > DATA) throw new Error(`fuzz program ${seed} is ${out.length} words: past its data at 0x${DATA.toString(16)}`);
  return Uint32Array.from(out);
}

/** Programs run one after another on the same two devices before they are made anew (making one costs ~20 ms). */
export const FUZZ_BATCH = 50;

/** The batch seed `seed` belongs to starts at this seed. */
const batchOf = (seed: number) => seed - ((seed - 1) % FUZZ_BATCH);

/** Every fourth batch runs with a 1 ns interleave quantum: windows end anywhere in translated code. */
function fuzzConfig(batch: number, jit: number) {
  return { engines: 2, sramBytes: SRAM_BYTES, hbmBytes: HBM_BYTES, jit, ...(Math.floor((batch - 1) / FUZZ_BATCH) % 4 === 3 ? { interleaveQuantumPs: 1000 } : {}) };
}

/** Program `seed` loaded over the whole of both engines' SRAM above the guard and the HBM they use, and started. */
function load(dev: Device, seed: number): void {
  const sram = new Uint8Array(SRAM_BYTES - CODE_BASE);
  sram.set(new Uint8Array(fuzzProgram(seed).buffer));
  const hbm = new Uint8Array(0x400);
  dev.start(dev.loadElf(writeElf(CODE_BASE, [{ vaddr: CODE_BASE, data: sram, flags: 7 }, { vaddr: REGIONS.HBM.base, data: hbm, flags: 6 }])).entry);
}

/** The first place two values differ, as a path and both values; null when they are equal. */
export function firstDifference(a: unknown, b: unknown, path = ""): string | null {
  if (Object.is(a, b)) return null;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return `${path || "(value)"}: interpreter ${String(a)}, translator ${String(b)}`;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    const d = firstDifference((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], path ? `${path}.${k}` : k);
    if (d !== null) return d;
  }
  return null;
}

/** The engines' registers, pc, counts and state: what a step-by-step comparison looks at. */
function enginesNow(dev: Device) {
  return Array.from({ length: dev.engines }, (_, e) => ({ ...dev.engine(e), regs: Array.from({ length: 32 }, (_, r) => dev.core.engineReg(dev.handle, e, r) >>> 0) }));
}

/** What the programs run so far did, in the interpreter's run (and the translator's translations). */
export interface FuzzTally { programs: number; traps: number; exits: number; translated: number; translatedInstructions: number; aheadInstructions: number }

/**
 * Two devices, the interpreter's, windows only (run-ahead off), and the translator's (jitHot 1:
 * code is translated where it first lands) with run-ahead on (docs/engine.md, "Run-ahead"),
 * running programs one after another: the end state of each must be the same.
 * Devices are made anew every FUZZ_BATCH programs, so a program's run depends only on the
 * programs of its batch before it (the failure message says how to replay them).
 */
export class FuzzRig {
  private interp: Device | null = null;
  private jit: Device | null = null;
  readonly tally: FuzzTally = { programs: 0, traps: 0, exits: 0, translated: 0, translatedInstructions: 0, aheadInstructions: 0 };

  constructor(private readonly module: WebAssembly.Module) {}

  /** Runs program `seed` both ways; throws an Error naming the seed, the first differing field and where the runs first part. */
  async run(seed: number): Promise<void> {
    const batch = batchOf(seed);
    if (this.interp === null || this.jit === null || seed === batch) await this.open(batch);
    const a = this.interp!, b = this.jit!;
    const traps = a.stats()["engine.traps"], jitBefore = b.jitStats(), aheadBefore = b.aheadStats();
    await this.advance(seed);
    const d = firstDifference(endState(a), endState(b));
    if (d !== null) {
      throw new Error(`jit fuzz: program seed ${seed} ends differently in the translator (jitHot 1, run-ahead on) and the interpreter (run-ahead off): ${d}; ` +
        `${await firstDivergence(this.module, seed)}. Replay its batch: JIT_FUZZ_SEED=${batch} JIT_FUZZ_PROGRAMS=${seed - batch + 1} npx vitest run test/jit-fuzz.test.ts`);
    }
    const jitAfter = b.jitStats();
    this.tally.programs++;
    this.tally.traps += a.stats()["engine.traps"] - traps;
    this.tally.exits += [0, 1].filter((e) => a.engine(e).state === "exited").length;
    this.tally.translated += jitAfter.translated - jitBefore.translated;
    this.tally.translatedInstructions += jitAfter.instructions - jitBefore.instructions;
    this.tally.aheadInstructions += b.aheadStats().instructions - aheadBefore.instructions;
  }

  private async open(batch: number): Promise<void> {
    this.interp = await Device.create(this.module, fuzzConfig(batch, 0), { runAhead: false });
    this.jit = await Device.create(this.module, fuzzConfig(batch, 1), { jitHot: 1 });
  }

  /** Loads program `seed` on both devices and runs it its time. */
  async advance(seed: number): Promise<void> {
    for (const dev of [this.interp!, this.jit!]) { load(dev, seed); dev.run(dev.nowPs + FUZZ_UNTIL_PS); }
  }

  /** Loads program `seed` on both devices; the caller steps them. */
  loadBoth(seed: number): [Device, Device] {
    load(this.interp!, seed); load(this.jit!, seed);
    return [this.interp!, this.jit!];
  }

  async begin(seed: number): Promise<void> { await this.open(batchOf(seed)); }
}

/**
 * Program `seed` run afresh on both devices (its batch before it first) for `spanPs` of its
 * time: where the engines differ then (a path, both values and the interpreter's pc), or null.
 * A run cut there is the whole run's up to there (one window boundary more, in both alike).
 */
async function cutAt(module: WebAssembly.Module, seed: number, spanPs: bigint): Promise<string | null> {
  const rig = new FuzzRig(module);
  await rig.begin(seed);
  for (let s = batchOf(seed); s < seed; s++) await rig.advance(s);
  const [a, b] = rig.loadBoth(seed);
  const end = a.nowPs + spanPs;
  a.run(end); b.run(end);
  const d = firstDifference(enginesNow(a), enginesNow(b));
  if (d === null) return null;
  const e = Number(/^(\d+)/.exec(d)?.[1] ?? 0);
  return `engine ${e} at pc 0x${a.engine(e).pc.toString(16)} in the interpreter: engines.${d}`;
}

/** When the two runs of program `seed` first part, to the nanosecond (bisecting on runs cut short), and how. */
async function firstDivergence(module: WebAssembly.Module, seed: number): Promise<string> {
  const whole = await cutAt(module, seed, FUZZ_UNTIL_PS);
  if (whole === null) return "the engines' registers, pc and counts agree: the difference is in memory, the console or the statistics";
  let lo = 0n, hi = FUZZ_UNTIL_PS / 1000n, how = whole; // in ns: alike at lo, parted by hi
  while (hi - lo > 1n) {
    const mid = (lo + hi) / 2n;
    const d = await cutAt(module, seed, mid * 1000n);
    if (d === null) lo = mid; else { hi = mid; how = d; }
  }
  return `the runs first part within ${hi} ns of the program's start: ${how}`;
}
