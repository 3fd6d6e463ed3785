// The engines' one decode table (layouts/isa.json) against what runs. For a large deterministic
// sample of instruction words — every major opcode x funct3 x a set of funct7 values (every
// funct5, with and without aq/rl) x three register patterns, neighbours of the fixed SYSTEM
// words, every CSR instruction on a list of CSR numbers, and 100,000 words from a seeded
// generator — the interpreter traps with an illegal instruction (mcause 2) at the word exactly
// when the table lists no instruction for it (or, for a CSR instruction, when the CSR file has no
// such CSR or it writes a read-only one), and the generated decoder insnClass, by which the JIT
// decides what it translates, gives each word the class of the table's instruction that matches
// it. The table is read here by its own matcher (a mask and a match per instruction, searched
// in turn), not by scripts/gen-isa.mjs's nested switches.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { Device } from "../host/device.js";
import { coreModule } from "../host/platform/node.js";
import { ENGINE_STATE } from "../host/generated/layouts.js";
import { xorshift32 } from "./helpers/xorshift.js";

interface Insn { name: string; opcode: string; class: string; funct3?: number; funct7?: string; funct5?: string; rs2?: number; word?: string }
const isa = JSON.parse(readFileSync(new URL("../layouts/isa.json", import.meta.url), "utf8")) as {
  opcodes: { name: string; value: string }[];
  classes: { name: string }[];
  instructions: Insn[];
};

/** Each instruction as the bits it fixes (mask) and their values (match), with its class's number (InsnClass: 1 + its index). */
const MATCHERS = isa.instructions.map((e) => {
  const opc = Number(isa.opcodes.find((o) => o.name === e.opcode)!.value);
  let mask = 0x7f, match = (opc << 2) | 3;
  const field = (v: number | string | undefined, lo: number, width: number) => {
    if (v === undefined) return;
    mask |= ((2 ** width - 1) << lo) >>> 0;
    match |= (Number(v) << lo) >>> 0;
  };
  field(e.funct3, 12, 3);
  field(e.funct7, 25, 7);
  field(e.funct5, 27, 5);
  field(e.rs2, 20, 5);
  if (e.word !== undefined) { mask = 0xffffffff; match = Number(e.word); }
  return { name: e.name, mask: mask >>> 0, match: match >>> 0, cls: 1 + isa.classes.findIndex((c) => c.name === e.class), csr: e.class.startsWith("csr") };
});

/** The table's instruction for word `w`, or undefined (illegal); two matching would be a broken table. */
function lookUp(w: number) {
  const hits = MATCHERS.filter((m) => ((w & m.mask) >>> 0) === m.match);
  if (hits.length > 1) throw new Error(`${hex(w)} matches ${hits.map((m) => m.name).join(" and ")}`);
  return hits[0];
}

const hex = (w: number) => "0x" + (w >>> 0).toString(16).padStart(8, "0");
const word = (f7: number, rs2: number, rs1: number, f3: number, rd: number, opc: number, low = 3) =>
  ((f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | (opc << 2) | low) >>> 0;

/** The sample: deterministic, the same words on every run. */
function sample(): number[] {
  const out: number[] = [];
  // funct7 values: the OP and shift selectors, every funct5 (with aq/rl clear and set), others
  const f7s = [0x00, 0x01, 0x20, 0x21, 0x40, 0x60, 0x7f];
  for (let f5 = 0; f5 < 32; f5++) f7s.push(f5 << 2, (f5 << 2) | 3);
  const regs = [[0, 0, 0], [1, 2, 3], [31, 31, 31]];
  for (let opc = 0; opc < 32; opc++)
    for (let f3 = 0; f3 < 8; f3++)
      for (const f7 of f7s)
        for (const [rd, rs1, rs2] of regs) out.push(word(f7, rs2, rs1, f3, rd, opc));
  // 16-bit encodings (bits 1:0 not 11) of a few opcodes
  for (const low of [0, 1, 2]) for (let opc = 0; opc < 32; opc += 3) out.push(word(0, 0, 0, 0, 0, opc, low));
  // ECALL EBREAK MRET WFI and each of them with one bit flipped above the opcode
  for (const w of [0x00000073, 0x00100073, 0x30200073, 0x10500073]) {
    out.push(w);
    for (let b = 7; b < 32; b++) out.push((w ^ (1 << b)) >>> 0);
  }
  // CSR instructions: existing CSRs, read-only ones (bits 11:10 = 3), and numbers that exist on no engine
  for (const csr of [0x300, 0x301, 0x304, 0x310, 0x340, 0x341, 0x342, 0x343, 0x344, 0xb00, 0xb02, 0xb80, 0xb82, 0xc00, 0xc01, 0xc02, 0xc80, 0xf11, 0xf14, 0x000, 0x302, 0x7b0, 0xfff])
    for (let f3 = 0; f3 < 8; f3++) for (const rs1 of [0, 9]) out.push(word(csr >> 5, csr & 31, rs1, f3, 10, 0x1c));
  const next = xorshift32(0x15a7ab1e);
  for (let i = 0; i < 100_000; i++) out.push(next());
  return out;
}

const CAUSE_ILLEGAL = 2;
const CSR_MTVEC = 0x305, CSR_MEPC = 0x341;
/** Where each engine finds the word it executes: above the NULL guard and out of reach of an x0-relative store (±2 KiB). */
const AT = 0x8000;
const ENGINES = 64;

describe("the decode table (layouts/isa.json)", () => {
  it("is what the interpreter and the generated decoder take to be legal, word for word", async () => {
    const words = sample();
    expect(words.length).toBeGreaterThan(130_000);
    let dev = await Device.create(coreModule(), { engines: ENGINES, jit: 0 });
    const c = dev.core;
    const mismatches: string[] = [];
    let illegal = 0, legal = 0;
    /** Does the CSR instruction `w` trap as illegal? The CSR file (engine/csr.ts): no such CSR, or a write to a read-only one (privileged spec 2.1). */
    const csrTraps = (w: number) => {
      const csr = w >>> 20, f3 = (w >>> 12) & 7, rs1 = (w >>> 15) & 31;
      const writes = f3 === 1 || f3 === 5 || rs1 !== 0;
      return c.engineCsr(dev.handle, 0, csr) === -1n || (writes && csr >>> 10 === 3);
    };
    let t = dev.nowPs;
    for (let at = 0; at < words.length; at += ENGINES) {
      const batch = words.slice(at, at + ENGINES);
      const mem = new DataView(c.memory.buffer);
      batch.forEach((w, e) => {
        mem.setUint32(c.sramPtr(dev.handle, e) + AT, w, true); // the word after it is 0: illegal, so a legal word traps there, at AT + 4, or where it jumps
        for (let r = 1; r < 32; r++) c.engineSetReg(dev.handle, e, r, 0);
        c.startEngine(dev.handle, e, AT);
      });
      t += 20_000n; // ~27 cycles: a word that loops on itself runs a while and stays legal
      dev.step(t);
      batch.forEach((w, e) => {
        const trappedHere = c.engineState(dev.handle, e) === ENGINE_STATE.FAULTED && c.engineMcause(dev.handle, e) === CAUSE_ILLEGAL && Number(c.engineCsr(dev.handle, e, CSR_MEPC)) === AT;
        const insn = lookUp(w);
        const want = insn === undefined || (insn.csr && csrTraps(w));
        if (want) illegal++; else legal++;
        if (trappedHere !== want) mismatches.push(`${hex(w)} (${insn?.name ?? "none"}): the table says ${want ? "illegal" : "legal"}, the interpreter ${trappedHere ? "traps" : "runs it"}`);
        const cls = c.insnClassOf(w) >>> 0;
        if (cls !== (insn?.cls ?? 0)) mismatches.push(`${hex(w)} (${insn?.name ?? "none"}): the table's class ${insn?.cls ?? 0}, insnClass ${cls}`);
      });
      // a word that installed a trap handler (csrrwi mtvec, ...) leaves its engine unable to fault: start again
      if (batch.some((_, e) => c.engineCsr(dev.handle, e, CSR_MTVEC) !== 0n)) {
        dev = await Device.create(coreModule(), { engines: ENGINES, jit: 0 });
        t = dev.nowPs;
      }
      if (mismatches.length > 20) break;
    }
    expect(mismatches).toEqual([]);
    // the sample exercises both answers in bulk (random words are mostly illegal): 15,034 and 139,999
    expect(legal).toBeGreaterThan(12_000);
    expect(illegal).toBeGreaterThan(120_000);
  }, 120_000);

  it("lists every instruction once: no two of its instructions match one word", () => {
    for (const a of MATCHERS) for (const b of MATCHERS) {
      if (a === b) continue;
      const common = (a.mask & b.mask) >>> 0;
      expect(((a.match & common) >>> 0) !== ((b.match & common) >>> 0), `${a.name} and ${b.name}`).toBe(true);
    }
    expect(MATCHERS.length).toBe(68); // RV32I 40 (FENCE.TSO and PAUSE are FENCE encodings), FENCE.I, M 8, A 11, Zicsr 6, MRET WFI
  });
});
