// The engines' JIT (config field `jit`, assembly/engine/jit.ts) against the interpreter: the
// same programs run both ways must end byte for byte the same — registers, pc, cycle and
// instret counts, trap cause and value, every engine's SRAM, HBM, console, the device's stats —
// and the JIT must actually have run (translations made, counted).
import { describe, expect, it } from "vitest";
import { readFileSync, readdirSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { Device, type DeviceOptions } from "../host/device.js";
import { coreModule } from "../host/platform/node.js";
import { runFirmware } from "../host/fw/run.js";
import { writeElf, programElf, assemble, R, I, S, B, J, CODE_BASE } from "./helpers/rv.js";
import { rng, garbage } from "./helpers/garbage.js";
import { MMIO, REGIONS } from "../host/generated/layouts.js";
import { jitModulesClear } from "../host/jit-modules.js";
import { readSections, readSymbols } from "../host/elf.js";
import { endState } from "./helpers/engine-state.js";

type Config = Record<string, number>;

async function garbageRun(seed: number, config: Config, untilPs: bigint, options: DeviceOptions = {}) {
  const next = rng(seed);
  const dev = await Device.create(coreModule(), { engines: 16, nullGuardBytes: 0, ...config }, options);
  dev.loadElf(writeElf(0, [{ vaddr: 0, data: new Uint8Array(garbage(next, 4096).buffer), flags: 7 }]));
  for (let e = 0; e < 16; e++) dev.core.startEngine(dev.handle, e, (next() % 4096) * 4);
  dev.run(untilPs);
  return dev;
}


/**
 * Random hot code: loops (each run 5 to 60 times) whose bodies draw every RV32IM computational
 * instruction with random registers and immediates, loads and stores of every width to SRAM and
 * HBM (now and then misaligned, or to MMIO, which a translation leaves to the interpreter),
 * reads of mcycle and minstret (exact counts mid-run), short forward branches, and calls. Each
 * engine exits with a checksum of its registers. Code that gets hot is what the JIT translates.
 */
function hotCode(seed: number): Uint32Array {
  const next = rng(seed);
  const pick = <T>(a: readonly T[]) => a[next() % a.length];
  const out: number[] = [];
  const li = (rd: number, v: number) => { const lo = (v << 20) >> 20, hi = (v - lo) >>> 0; out.push(((hi & 0xfffff000) | (rd << 7) | 0x37) >>> 0, I(lo, rd, 0, rd, 0x13)); };
  const DATA = 0x8000, HBM = REGIONS.HBM.base + 0x1000;
  const rd = () => (next() % 16 === 0 ? 0 : 2 + (next() % 14)); // x0 now and then; x1 is the link register
  const rs = () => next() % 16;
  for (let r = 2; r < 16; r++) li(r, next());
  li(20, DATA); li(21, HBM);
  const calls: number[] = []; // where `jal ra, f` was emitted, patched to f at the end
  const loops = 3 + (next() % 4);
  for (let l = 0; l < loops; l++) {
    li(22, 5 + (next() % 56));
    const top = out.length;
    const body = 5 + (next() % 25);
    for (let k = 0; k < body; k++) {
      const c = next() % 100;
      if (c < 30) { // OP and M: funct7 0 (all eight), 0x20 (SUB, SRA), 1 (MUL..REMU)
        const f7 = pick([0, 0, 0x20, 1, 1]), f3 = f7 === 0x20 ? pick([0, 5]) : next() % 8;
        out.push(R(f7, rs(), rs(), f3, rd(), 0x33));
      } else if (c < 50) { // OP-IMM, shifts with their funct7
        const f3 = next() % 8, imm = f3 === 1 ? next() % 32 : f3 === 5 ? (next() % 32) | pick([0, 0x400]) : (next() % 4096) - 2048;
        out.push(I(imm, rs(), f3, rd(), 0x13));
      } else if (c < 55) out.push(((next() & 0xfffff000) | (rd() << 7) | pick([0x37, 0x17])) >>> 0); // LUI AUIPC
      else if (c < 68) { // loads: mostly aligned to SRAM or HBM; misaligned or MMIO 1 in 30
        const f3 = pick([0, 1, 2, 4, 5]), size = 1 << (f3 & 3), odd = next() % 30 === 0;
        const base = odd && next() % 2 ? 0 : pick([20, 21]);
        out.push(I(base === 0 ? pick([0x10, 0x7f0]) : (next() % 64) * size + (odd ? 1 : 0), base, f3, rd(), 0x03));
      } else if (c < 80) { // stores likewise (x0 as base: the low SRAM words or MMIO)
        const f3 = next() % 3, size = 1 << f3, odd = next() % 30 === 0;
        const base = odd && next() % 2 ? 0 : pick([20, 21]);
        out.push(S(base === 0 ? 0x100 : (next() % 64) * size + (odd ? 1 : 0), rs(), base, f3, 0x23));
      } else if (c < 85) out.push(I(pick([0xb00, 0xb02, 0xb80, 0xb82]), 0, 2, rd(), 0x73)); // csrr mcycle, minstret (and the high halves)
      else if (c < 95 && k < body - 3) { // a short forward branch
        const skip = 1 + (next() % 3);
        out.push(B(4 * (skip + 1), rs(), rs(), pick([0, 1, 4, 5, 6, 7])));
      } else { calls.push(out.length); out.push(0); } // jal ra, f
    }
    out.push(I(-1, 22, 0, 22, 0x13)); // addi x22, x22, -1
    out.push(B(4 * (top - out.length), 0, 22, 1)); // bne x22, x0, top
  }
  // exit with a checksum of x2..x15
  out.push(I(0, 0, 0, 23, 0x13));
  for (let r = 2; r < 16; r++) out.push(R(0, r, 23, 4, 23, 0x33), I(5, 23, 1, 24, 0x13), R(0, 24, 23, 0, 23, 0x33)); // x23 ^= r; x23 += x23 << 5
  li(25, MMIO.SYS.EXIT);
  out.push(S(0, 23, 25, 2, 0x23));
  const f = out.length; // f: two instructions and a return
  out.push(I(3, 5, 0, 5, 0x13), R(0, 6, 5, 4, 6, 0x33), I(0, 1, 0, 0, 0x67));
  for (const at of calls) out[at] = J(4 * (f - at), 1);
  return Uint32Array.from(out);
}

const COMPUTE_ELF = new Uint8Array(readFileSync(new URL("../firmware/bench/compute.elf", import.meta.url)));

/** A device of `passes.length` engines running the compute benchmark, engine e over passes[e] passes, not yet run. */
async function computeDevice(config: Config, passes: number[], options: DeviceOptions = {}) {
  const dev = await Device.create(coreModule(), { engines: passes.length, ...config }, options);
  dev.start(dev.loadElf(COMPUTE_ELF).entry);
  passes.forEach((p, e) => dev.mailboxPush(e, p));
  return dev;
}

/** The assembly program `src` run to its end (1 ms) on `engines` engines, with the JIT on or off (`options`: e.g. jitHot). */
async function programRun(src: string, engines: number, jit: number, options: DeviceOptions = {}) {
  const dev = await Device.create(coreModule(), { engines, jit }, options);
  dev.start(dev.loadElf(programElf(src)).entry);
  dev.run(1_000_000_000n);
  return dev;
}

/**
 * The assembly program `src` on one engine, interpreted and translated from its 16th landing:
 * both end exited, alike, and the translated run retires over 90 % of its instructions in
 * translated code; its JIT counts.
 */
async function translatedAlike(src: string) {
  const a = await programRun(src, 1, 0), b = await programRun(src, 1, 1, { jitHot: 16 });
  expect(a.engine(0).state).toBe("exited");
  expect(endState(b)).toEqual(endState(a));
  const s = b.jitStats();
  expect(s.instructions).toBeGreaterThan(0.9 * b.engine(0).instructions);
  return s;
}

/**
 * `code` on two engines (`config`), interpreted and with the JIT, stepped by windows of up to ~6
 * engine cycles (random, from `seed`; up to `maxPs`) to its end: after every step both engines'
 * state and registers are alike, and the JIT translated some of it. Returns the steps.
 */
async function steppedAlike(code: Uint32Array, seed: number, maxPs = 4200, config: Config = {}) {
  const a = await codeDevice(code, { engines: 2, jit: 0, ...config }), b = await codeDevice(code, { engines: 2, jit: 1, ...config });
  const look = (dev: Device) => [0, 1].map((e) => ({ ...dev.engine(e), regs: Array.from({ length: 32 }, (_, r) => dev.core.engineReg(dev.handle, e, r) >>> 0) }));
  const next = rng(seed);
  let t = 0n, steps = 0;
  while (a.engine(0).state === "running" || a.engine(1).state === "running") {
    t += BigInt(200 + (next() % (maxPs - 200))); // (730 ps an engine cycle)
    a.step(t); b.step(t);
    expect(look(b), `step ${steps} to ${t} ps`).toEqual(look(a));
    steps++;
  }
  expect(a.engine(0).state).toBe("exited");
  expect(b.jitStats().translated).toBeGreaterThan(0);
  expect(endState(b)).toEqual(endState(a));
  return steps;
}

/**
 * A loop (`body`, at label loop1: it counts t1 down from 1000 and adds to t0 with an `addi t0,
 * t0, 1` three instructions before its end, where the store below finds it) runs 1000 times
 * (translated), has that addi rewritten to add 2, and runs another 1000 times. Interpreted and
 * translated, the program exits with `exitCode` and ends alike, the translation dropped.
 */
async function rewrittenAlike(body: string, exitCode: number) {
  const src = `
      li t1, 1000
      li t0, 0
      li t3, 0x00228293
      li t5, 0
    again:
    loop1:${body}
      bne t5, zero, done
      li t5, 1
      auipc t4, 0
      sw t3, -24(t4)        # over loop1's addi t0, 24 bytes back
      li t1, 1000
      j again
    done:
      li t2, ${MMIO.SYS.EXIT}
      sw t0, 0(t2)
    `;
  const a = await programRun(src, 1, 0), b = await programRun(src, 1, 1);
  expect(a.engine(0).exitCode).toBe(exitCode);
  expect(endState(b)).toEqual(endState(a));
  expect(b.jitStats().invalidations).toBeGreaterThanOrEqual(1);
}

/**
 * A loop at `at` (the setup at CODE_BASE jumps to it, zeros between) that rewrites its first
 * instruction each time round, addi t0, t0, 1 and 2 in turn, by `sw t3, 0(t4)` (t4 = at) among
 * other stores through t4 (jit.ts `group`: one check before them covers them all): interpreted
 * and translated it ends alike with 500 + 2 x 500 (an engine that kept a stale translation of
 * the loop would not), and the translated run drops translations. The bytes the stores span.
 */
async function groupStoresAlike(at: number, stores: string[]): Promise<number> {
  const setup = `
      li t0, 0
      li t1, 1000
      li t3, 0x00128293
      li t5, 0x00300000
      li t4, ${at}
      j loop`;
  const pad = (at - CODE_BASE) / 4 - assemble(setup, CODE_BASE).length;
  const src = `${setup}
${"      .word 0\n".repeat(pad)}    loop:
      addi t0, t0, 1
      xor t3, t3, t5
${stores.map((st) => `      ${st}`).join("\n")}
      addi t1, t1, -1
      bne t1, zero, loop
      li t2, ${MMIO.SYS.EXIT}
      sw t0, 0(t2)
      .word 0`;
  expect(assemble(src, CODE_BASE)[(at - CODE_BASE) / 4]).toBe(0x00128293); // (the loop is where the stores go)
  const a = await programRun(src, 1, 0), b = await programRun(src, 1, 1);
  expect(a.engine(0).exitCode).toBe(1500);
  expect(endState(b)).toEqual(endState(a));
  expect(b.jitStats().invalidations).toBeGreaterThanOrEqual(1);
  const offsets = stores.map((st) => Number(/, (-?\w+)\(/.exec(st)![1]));
  return Math.max(...offsets) + 4 - Math.min(...offsets);
}

/** A device whose engines start at CODE_BASE, where `code` is loaded; not yet run. */
async function codeDevice(code: Uint32Array, config: Config, options: DeviceOptions = {}) {
  const dev = await Device.create(coreModule(), config, options);
  dev.start(dev.loadElf(writeElf(CODE_BASE, [{ vaddr: CODE_BASE, data: new Uint8Array(code.buffer), flags: 7 }])).entry);
  return dev;
}

async function hotRun(seed: number, config: Config, options: DeviceOptions = {}) {
  const dev = await codeDevice(hotCode(seed), { engines: 4, ...config }, options);
  dev.run(200_000_000n);
  return dev;
}

describe("the JIT runs programs exactly as the interpreter does", () => {
  it("random code (the fuzz test's generator): every engine, SRAM, HBM and stat alike, with hot code translated", async () => {
    let translated = 0;
    for (let seed = 1; seed <= 12; seed++) {
      // every third seed with a 1 ns interleave quantum: windows end inside blocks all the time
      const quantum: Config = seed % 3 === 0 ? { interleaveQuantumPs: 1000 } : {};
      // the JIT held to the interpreter window by window (run-ahead off: it makes fewer window
      // starts, so less is translated), and the two again with run-ahead on
      const a = await garbageRun(seed, { jit: 0, ...quantum }, 20_000_000n, { runAhead: false });
      const b = await garbageRun(seed, { jit: 1, ...quantum }, 20_000_000n, { runAhead: false });
      expect(endState(b), `seed ${seed}`).toEqual(endState(a));
      expect(a.jitStats().translated).toBe(0);
      translated += b.jitStats().translated;
      expect(endState(await garbageRun(seed, { jit: 1, ...quantum }, 20_000_000n)), `seed ${seed}, run-ahead`).toEqual(endState(a));
      expect(endState(await garbageRun(seed, { jit: 0, ...quantum }, 20_000_000n)), `seed ${seed}, run-ahead`).toEqual(endState(a));
    }
    expect(translated).toBeGreaterThan(50);
  });

  it("random hot code (every computational instruction, loads and stores of every width, counters read mid-run): alike", async () => {
    let translated = 0, exited = 0, inTranslated = 0, all = 0;
    for (let seed = 1; seed <= 24; seed++) {
      const quantum: Config = seed % 4 === 0 ? { interleaveQuantumPs: 1000 } : {};
      const a = await hotRun(seed, { jit: 0, ...quantum });
      // (translating at the 48th landing: these programs run a few thousand instructions, and
      // the default, 255, leaves nearly all of them to the interpreter)
      const b = await hotRun(seed, { jit: 1, ...quantum }, { jitHot: 48 });
      expect(endState(b), `seed ${seed}`).toEqual(endState(a));
      translated += b.jitStats().translated;
      inTranslated += b.jitStats().instructions;
      all += [0, 1, 2, 3].reduce((n, e) => n + b.engine(e).instructions, 0);
      exited += [0, 1, 2, 3].filter((e) => a.engine(e).state === "exited").length;
    }
    // most programs run to their exit (the rest fault on a misaligned or MMIO access, or a store over their code)
    expect(exited).toBeGreaterThan(48);
    // hot code runs translated: regions where jumps land (a window's start is translated alone only
    // at its 255th run, so most windows start in the interpreter)
    expect(translated).toBeGreaterThan(24);
    expect(inTranslated / all).toBeGreaterThan(0.06);
  });

  it("the ISA conformance program, on 16 engines and on 7 with a 1 ns quantum: the same result and console to the byte", async () => {
    const elf = new Uint8Array(readFileSync(new URL("../firmware/tests/isa/isa.elf", import.meta.url)));
    for (const config of [{ engines: 16, nullGuardBytes: 0 }, { engines: 7, interleaveQuantumPs: 1000, nullGuardBytes: 0 }] as Config[]) {
      const interp = await runFirmware(elf, { config: { ...config, jit: 0 }, untilPs: 20e9 });
      const jit = await runFirmware(elf, { config: { ...config, jit: 1 }, untilPs: 20e9 });
      expect(JSON.stringify(jit, (_, v) => (typeof v === "bigint" ? v.toString() : v))).toBe(JSON.stringify(interp, (_, v) => (typeof v === "bigint" ? v.toString() : v)));
      expect(interp.engines.every((e) => e.state === "exited" && e.exitCode === 0)).toBe(true);
    }
  });

  it("the ISA conformance program translated where code first lands (jitHot 1): every case's code runs translated, same verdicts", async () => {
    // The riscv-tests-style conformance program (firmware/tests/isa/, 584 numbered cases): at the
    // default threshold (255 landings) a case runs once and is interpreted; with jitHot 1 the code
    // of every case on every engine must have run translated, and the run must end as the
    // interpreter's: every case passed, console, registers, memories, counts alike.
    const elf = new Uint8Array(readFileSync(new URL("../firmware/tests/isa/isa.elf", import.meta.url)));
    const cases = readSymbols(readSections(elf)).filter((s) => /^isa_case_\d+$/.test(s.name));
    expect(cases.length).toBe(584);
    for (const config of [{ engines: 16, nullGuardBytes: 0 }, { engines: 7, interleaveQuantumPs: 1000, nullGuardBytes: 0 }] as Config[]) {
      const run = async (jit: number, jitHot?: number) => {
        // a cache that never fills: a flush would forget what ran translated before it
        const dev = await Device.create(coreModule(), { ...config, jit, jitBlocks: 16384 }, jitHot === undefined ? {} : { jitHot });
        dev.start(dev.loadElf(elf).entry);
        dev.run(20_000_000_000n);
        return dev;
      };
      const interp = await run(0), first = await run(1, 1), hot = await run(1);
      expect(endState(first)).toEqual(endState(interp));
      for (let e = 0; e < config.engines; e++) {
        expect([interp.engine(e).state, interp.engine(e).exitCode]).toEqual(["exited", 0]);
        expect(interp.console(e)).toContain(`isa: ${cases.length}/${cases.length} passed`);
        expect(cases.filter((c) => !first.jitTranslatedAt(e, c.value)).map((c) => c.name), `engine ${e}`).toEqual([]);
      }
      // at the default threshold little of it is: the cases run once each (those translated are
      // what the regions of the hot return of isa_case_end take in, after its way out to them)
      expect(cases.filter((c) => hot.jitTranslatedAt(0, c.value)).length).toBeLessThan(cases.length / 10);
      // (regions entered at their loops' heads serve the landings there: 2,233 translations against 499)
      expect(first.jitStats().translated).toBeGreaterThan(4 * hot.jitStats().translated);
      expect(first.jitStats().flushes).toBe(0);
    }
  });

  it("every firmware example, run by the CLI with --set jit=1, prints exactly its golden output (test/golden/fw-*.json)", () => {
    const examples = readdirSync(new URL("../firmware/examples/", import.meta.url)).filter((f) => f.endsWith(".elf")).sort();
    expect(examples.length).toBeGreaterThanOrEqual(7);
    for (const elf of examples) {
      const name = elf.replace(/\.elf$/, "");
      const golden = JSON.parse(readFileSync(new URL(`golden/fw-${name}.json`, import.meta.url), "utf8"));
      const r = spawnSync(process.execPath, ["bin/menic.js", "fw", "run", `firmware/examples/${elf}`, "--json", "--set", "jit=1"], { cwd: new URL("..", import.meta.url), encoding: "utf8" });
      expect({ status: r.status, output: JSON.parse(r.stdout) }, name).toEqual({ status: golden.result.exitStatus, output: golden.result.output });
    }
  });

  it("a window may end at any instruction of translated code: stepped a few cycles at a time, every step ends alike", async () => {
    // a loop of ALU runs of mixed costs (1, 3 and 34 cycles), a store and a load between them, a
    // write to x0 (its slot keeps the value until the next instruction), a jal x0 to the next
    // block and a branch back: each step cuts a window somewhere else in it
    const code = assemble(`
      li x20, 0x8000
      li x5, 1
      li x6, 3
      li x22, 300
      top:
      add x5, x5, x6
      mul x6, x6, x5
      addi x7, x5, 3
      div x8, x6, x7
      xor x9, x8, x5
      sw x8, 0(x20)
      addi x9, x9, 1
      slli x11, x9, 2
      lw x10, 0(x20)
      addi x0, x10, 1
      jal x0, next
      next:
      add x12, x12, x11
      addi x0, x12, 7
      addi x22, x22, -1
      bne x22, x0, top
      li x25, ${MMIO.SYS.EXIT}
      sw x0, 0(x25)
    `, CODE_BASE);
    expect(await steppedAlike(code, 7)).toBeGreaterThan(5000);
  });

  it("a branch over a few ALU instructions runs them by select: a window may end anywhere around it, stepped, alike", async () => {
    // a CRC's bit steps (a branch over one xor, and over three instructions) and the compute
    // benchmark's shape (a branch back to the loop's store, whose fall-through runs two
    // instructions and jumps there; its block loads from HBM, dearer than the SRAM its window
    // check counts): both ways taken by the data, windows cut everywhere
    const code = assemble(`
      li x20, 0x8000
      li x21, ${REGIONS.HBM.base + 0x100}
      li x5, 0x1234
      lui x6, 10
      addi x6, x6, 1
      li x22, 700
      j check
      body:
      sw x5, 0(x20)
      sw x5, 0(x21)
      addi x22, x22, -1
      beq x22, x0, done
      check:
      andi x7, x5, 1
      srli x5, x5, 1
      beq x7, x0, skip1
      xor x5, x5, x6
      skip1:
      andi x7, x5, 1
      srli x5, x5, 1
      bne x7, x0, skip2
      xor x5, x5, x6
      addi x9, x9, 3
      mul x10, x5, x6
      skip2:
      lw x13, 0(x21)
      add x5, x5, x13
      add x5, x5, x22
      andi x8, x5, 0x100
      beq x8, x0, body
      srli x13, x13, 3
      xor x5, x5, x13
      j body
      done:
      li x25, ${MMIO.SYS.EXIT}
      sw x0, 0(x25)
    `, CODE_BASE);
    // steps of up to ~6 cycles, and of up to ~40 with an HBM load of 9 (137 by default), so that
    // the block with it runs translated in some and windows end in its skipped instructions
    expect(await steppedAlike(code, 11)).toBeGreaterThan(5000);
    expect(await steppedAlike(code, 12, 30_000, { cpiLoadHbm: 9 })).toBeGreaterThan(1000);
  });

  it("a loop of one block runs four copies a turn: a window may end in any of them, stepped, alike", async () => {
    // blocks that branch back to their start (jit.ts `unrolled`), 2,001 turns each, so the last
    // turn of four copies leaves from the first: one with a load and a store in HBM, dearer
    // than the SRAM their window check counts for every copy after theirs; one in SRAM alone
    const code = assemble(`
      li x20, 0x8000
      li x21, ${REGIONS.HBM.base + 0x100}
      li x22, 2001
      li x5, 7
      top:
      lw x13, 0(x21)
      add x5, x5, x13
      mul x6, x5, x22
      sw x6, 0(x20)
      sw x5, 4(x21)
      addi x20, x20, 4
      addi x22, x22, -1
      bne x22, x0, top
      li x22, 2001
      top2:
      add x5, x5, x22
      sb x5, 0(x20)
      addi x20, x20, 1
      addi x22, x22, -1
      bne x22, x0, top2
      li x25, ${MMIO.SYS.EXIT}
      sw x5, 0(x25)
    `, CODE_BASE);
    expect(await steppedAlike(code, 13, 100_000)).toBeGreaterThan(2000);
    expect(await steppedAlike(code, 14, 100_000, { cpiLoadHbm: 9, cpiStoreHbm: 5 })).toBeGreaterThan(500);
  });

  it("a block translated alone where windows started gets its region once jumps land there: stepped, then run, alike", async () => {
    // a two-block loop (the jal splits it); stepped a few cycles at a time, windows start
    // everywhere in it and those blocks are translated alone; then run at once, the loop's jumps
    // land on them, and they must become the loop's region (else every iteration leaves it)
    const code = assemble(`
      li x5, 1
      li x22, 20000
      top:
      add x5, x5, x22
      xor x6, x5, x22
      jal x0, next
      next:
      add x7, x7, x6
      addi x22, x22, -1
      bne x22, x0, top
      li x25, ${MMIO.SYS.EXIT}
      sw x0, 0(x25)
    `, CODE_BASE);
    const run = async (jit: number) => {
      const dev = await codeDevice(code, { engines: 1, jit });
      const next = rng(3);
      let t = 0n;
      for (let k = 0; k < 3000; k++) { t += BigInt(200 + (next() % 3000)); dev.step(t); }
      const before = dev.jitStats(), windows = dev.stats()["sched.windows"];
      dev.run(10_000_000_000n);
      return { dev, before, after: dev.jitStats(), windows: dev.stats()["sched.windows"] - windows };
    };
    const a = await run(0), b = await run(1);
    expect(endState(b.dev)).toEqual(endState(a.dev));
    expect(a.dev.engine(0).state).toBe("exited");
    expect(b.before.translated).toBeGreaterThan(0);
    // run at once (~15,000 iterations, ~30 a window): at most two calls a window, the block
    // where it started and the loop's region
    expect(b.windows).toBeGreaterThan(200);
    expect(b.after.calls - b.before.calls).toBeLessThanOrEqual(2 * b.windows);
  });

  it("the compute benchmark firmware: same mailbox answer, cycles and instructions; a run of it is mostly translated code", async () => {
    const run = async (jit: number, runAhead = false) => {
      const dev = await computeDevice({ jit }, [20, 20, 20, 20], { runAhead });
      dev.run(10_000_000_000n);
      return { dev, answers: Array.from({ length: 4 }, (_, e) => dev.mailboxPop(e)), state: endState(dev) };
    };
    const a = await run(0), b = await run(1);
    expect(b.answers).toEqual(a.answers);
    expect(b.state).toEqual(a.state);
    expect(a.state.engines.every((e) => e.report.state === "exited")).toBe(true);
    // the engines share the translations of the one image they run
    const s = b.dev.jitStats();
    expect(s.translated).toBeGreaterThan(0);
    expect(s.translated).toBeLessThan(40);
    expect(s.invalidations).toBe(0);
    // an engine's window (~200 instructions at the default 200 ns quantum) runs to its end in
    // translated code: at most two calls, the block where the window started jumping into the
    // loop's region; the few calls that leave an instruction to the interpreter are the mailbox's
    const instructions = b.state.engines.reduce((n, e) => n + e.report.instructions, 0);
    const engineWindows = 4 * b.state.stats["sched.windows"];
    expect(s.calls).toBeGreaterThan(0.9 * engineWindows);
    expect(s.calls).toBeLessThan(2 * engineWindows);
    expect(instructions / s.calls).toBeGreaterThan(100);
    expect(s.sideExits).toBeLessThan(40);
    // with run-ahead (docs/engine.md, "Run-ahead") the same, the engines past their windows for
    // all but their first and last steps (the mailbox's), and a call runs many windows
    const c = await run(1, true);
    expect(c.answers).toEqual(a.answers);
    expect(c.state).toEqual(a.state);
    expect(c.dev.aheadStats().instructions).toBeGreaterThan(0.9 * instructions);
    expect(c.dev.jitStats().calls).toBeLessThan(engineWindows / 4);
  });
});

describe("translations follow the code", () => {
  it("a store into an instruction a branch skips drops the translation that runs it by select", async () => {
    // the beq skips the addi on even counts: 500 + 2 x 500 (an engine that kept the old
    // translation would end with 1000)
    await rewrittenAlike(`
      andi t6, t1, 1
      beq t6, zero, even
      addi t0, t0, 1
    even:
      addi t1, t1, -1
      bne t1, zero, loop1`, 1500);
  });

  it("a store into translated code drops it: a program that rewrites its hot loop ends as interpreted", async () => {
    // 1000 + 2 x 1000 (an engine that kept the old translation would end with 2000)
    await rewrittenAlike(`
      addi t0, t0, 1
      addi t1, t1, -1
      bne t1, zero, loop1`, 3000);
  });

  it("a loop's stores to the clean page one of them found still trap when misaligned", async () => {
    // the innermost loop's first store finds its page clean (jit.ts cleanLoop); in the last turn
    // the second store, 2 bytes off, is misaligned: a store address fault (mcause 6) at the same
    // pc, with the same state, as interpreted; most of the 999 turns before it ran translated
    const src = `
      li t0, 0x8000
      li t1, 1000
      li t2, 0
      li t5, 1
    loop:
      sw t1, 0(t0)
      add t3, t0, t2
      sw t1, 4(t3)
      addi t1, t1, -1
      li t2, 0
      bne t1, t5, next
      li t2, 2
    next:
      bne t1, zero, loop
      li t2, ${MMIO.SYS.EXIT}
      sw zero, 0(t2)
    `;
    const a = await programRun(src, 1, 0), b = await programRun(src, 1, 1);
    expect(a.engine(0)).toMatchObject({ state: "faulted", mcause: 6, mtval: 0x8006 });
    expect(endState(b)).toEqual(endState(a));
    expect(b.jitStats().instructions).toBeGreaterThan(5000);
  });

  it("a group's stores across pages: each page is checked, a store into translated code drops it", async () => {
    // the stores go to 0x4fc (setup's page, no translated code) and into the loop at 0x500
    expect(await groupStoresAlike(0x500, ["sw zero, -4(t4)", "sw t3, 0(t4)"])).toBeLessThan(256);
    // into the loop at 0x5c0, then to 0x620 (a page of no code)
    expect(await groupStoresAlike(0x5c0, ["sw t3, 0(t4)", "sw zero, 0x60(t4)"])).toBeLessThan(256);
    // across three pages, the middle one the loop's: stores that far apart are not grouped
    expect(await groupStoresAlike(0x500, ["sw zero, -4(t4)", "sw t3, 0(t4)", "sw zero, 256(t4)"])).toBeGreaterThan(256);
  });

  it("a region of ~500 stores, the most code a translation makes, is translated whole and runs alike", async () => {
    // a loop of 8 blocks of 62 stores each (a branch never taken ends each block): one region of
    // 506 instructions, each store with its checks and the window's exit before it (the module
    // is ~70 KB: it overran the emit buffer before the buffer was sized for JIT_MAX_INSNS)
    const blocks = Array.from({ length: 8 }, (_, b) =>
      Array.from({ length: 62 }, (_, k) => `      sw t1, ${4 * (62 * b + k)}(t0)`).join("\n") + `\n      bne t2, zero, out`).join("\n");
    const src = `
      li t0, 0x8000
      li t1, 300
      li t2, 0
    loop:
${blocks}
      addi t1, t1, -1
      bne t1, zero, loop
    out:
      lw a0, 0(t0)
      lw a1, 1980(t0)
      add a0, a0, a1
      li t2, ${MMIO.SYS.EXIT}
      sw a0, 0(t2)
    `;
    const a = await programRun(src, 1, 0), b = await programRun(src, 1, 1, { jitHot: 1 });
    expect(a.engine(0).state).toBe("exited");
    expect(a.engine(0).exitCode).toBe(2); // both words last written with t1 = 1
    expect(endState(b)).toEqual(endState(a));
    const s = b.jitStats();
    expect(s.compileFailures).toBe(0);
    expect(s.instructions).toBeGreaterThan(0.9 * b.engine(0).instructions);
  });

  it("a call's return into the region it was called from is a branch, not a way out: 2,000 calls, alike", async () => {
    const src = `
      li t1, 2000
      li a0, 0
    loop:
      jal ra, f
      addi t1, t1, -1
      bne t1, zero, loop
      li t2, ${MMIO.SYS.EXIT}
      sw a0, 0(t2)
    f:
      addi a0, a0, 3
      add a0, a0, t1
      jalr zero, 0(ra)
    `;
    // the loop's region holds f and the call's next instruction: a return lands in it; only
    // the first landings, before the region is hot, leave
    const s = await translatedAlike(src);
    expect(s.jumpsOut).toBeLessThan(60);
  });

  it("an indirect jump's targets join its region (a switch's jump table): 3,000 jumps, alike, few ways out", async () => {
    // a jump through a table of four cases, picked by the loop counter: until the region has
    // jumped out 32 times with targets it lacks, each jump leaves it; then its entry is
    // translated again with the cases in it, and the jumps stay
    const src = `
      li t1, 3000
      li a0, 0
    loop:
      andi t2, t1, 3
      slli t2, t2, 3
      auipc t3, 0
      add t3, t3, t2
      jalr zero, 12(t3)
      addi a0, a0, 1
      j next
      addi a0, a0, 5
      j next
      xor a0, a0, t1
      j next
      add a0, a0, a0
      j next
    next:
      addi t1, t1, -1
      bne t1, zero, loop
      li t2, ${MMIO.SYS.EXIT}
      sw a0, 0(t2)
    `;
    const s = await translatedAlike(src);
    expect(s.jumpsOut).toBeLessThan(200); // (with the cases never taken in: 2,984)
  });

  it("irreducible flow (a loop entered at two places) stays in its region: 3,000 turns, alike", async () => {
    // A and B form one loop that the outer loop enters at A or at B by turns: neither
    // dominates the other, so the region keeps them as roots of a dispatch loop
    const src = `
      li s1, 100
      li a0, 0
    outer:
      li t1, 30
      andi t2, s1, 1
      bne t2, zero, B
    A:
      addi a0, a0, 3
      addi t1, t1, -1
      beq t1, zero, done
    B:
      addi a0, a0, 5
      addi t1, t1, -1
      beq t1, zero, done
      andi t2, a0, 4
      bne t2, zero, A
      j B
    done:
      addi s1, s1, -1
      bne s1, zero, outer
      li t2, ${MMIO.SYS.EXIT}
      sw a0, 0(t2)
    `;
    const s = await translatedAlike(src);
    expect(s.jumpsOut).toBeLessThan(100); // (with such edges leaving the region instead: 2,982)
  });

  it("a region is entered at its loops' heads: a kernel of three inner loops is one translation, alike", async () => {
    // three inner loops in a loop of passes, each hot on its own: the first one's region holds
    // them all, and the interpreter's landings at the others' heads (after a call leaves at a
    // window's end) go into it, not into regions of their own holding the kernel again (3
    // translations without: jit.ts `claimEntries`)
    const s = await translatedAlike(`
      li s0, 300
      li s1, 0x8000
      li t0, 0
    pass:
      li t1, 24
    sum:
      add t0, t0, t1
      addi t1, t1, -1
      bne t1, zero, sum
      li t1, 24
      addi t2, s1, 0
    fill:
      sw t0, 0(t2)
      addi t2, t2, 4
      addi t1, t1, -1
      bne t1, zero, fill
      li t1, 24
      addi t2, s1, 0
    fold:
      lw t3, 0(t2)
      xor t0, t0, t3
      slli t0, t0, 1
      addi t2, t2, 4
      addi t1, t1, -1
      bne t1, zero, fold
      addi s0, s0, -1
      bne s0, zero, pass
      li t2, ${MMIO.SYS.EXIT}
      sw t0, 0(t2)
    `);
    expect(s.translated).toBe(1);
  });

  it("an inner loop entered past its head (an insertion sort, as a C compiler lays it out): 20 sorts, alike", async () => {
    // the hottest landing is the inner loop's head (A), which the code enters at B, by the
    // block at Y running on into A's instructions: from A the outer loop is entered at two
    // places, so the region copies its entry block (jit.ts copyEntry) and the inner loop is a
    // wasm loop (the keys are filled 8 a turn, so that the fill's loop lands less often and the
    // region made at A is the one that runs the sort). 20 passes fill 64 keys by xorshift and
    // sort them; the exit folds three keys
    const src = `
      li s3, 0x8000
      li t4, 64
      li a2, 12345
      li s8, 20
      li a0, 0
    pass:
      li a1, 0
      addi a4, s3, 0
    fill:
${Array.from({ length: 8 }, (_, k) => `      slli a3, a2, 13
      xor a2, a3, a2
      srli a3, a2, 17
      xor a2, a3, a2
      slli a3, a2, 5
      xor a2, a3, a2
      sw a2, ${4 * k}(a4)`).join("\n")}
      addi a4, a4, 32
      addi a1, a1, 8
      bne a1, t4, fill
      li a1, 1
      addi a3, s3, 4
      j Y
    X:
      slli a4, a7, 2
      add a4, a4, s3
      sw a5, 0(a4)
      addi a1, a1, 1
      addi a3, a3, 4
      beq a1, t4, sorted
    Y:
      slli a4, a1, 2
      add a4, a4, s3
      lw a5, 0(a4)
      addi t1, a3, 0
      addi a7, a1, 0
    A:
      lw t2, -4(t1)
      bgeu a5, t2, X
      addi a7, a7, -1
      sw t2, 0(t1)
      addi t1, t1, -4
      bne a7, zero, A
      li a7, 0
      j X
    sorted:
      lw t2, 0(s3)
      lw t3, 128(s3)
      lw t5, 252(s3)
      xor t2, t2, t3
      add a0, a0, t5
      xor a0, a0, t2
      addi s8, s8, -1
      bne s8, zero, pass
      li t2, ${MMIO.SYS.EXIT}
      sw a0, 0(t2)
    `;
    const s = await translatedAlike(src);
    expect(s.jumpsOut).toBeLessThan(100);
  });

  it("the check of a store against translated code is exact to the word and the engine", async () => {
    // f's last translated word is its jalr; the word after it is data (and no code runs on
    // into f). Engine 0 calls f 1000 times, storing into that data word each time (no
    // translation reads it: nothing to drop), then stores f's own jalr over itself (translated
    // code: dropped once). Engine 1 calls f once (not hot: no translation of its own reads f)
    // and stores over its own copy of that jalr 1000 times (nothing to drop). The stores run in
    // translated code: one invalidation in all.
    const JALR_RA = 0x00008067; // jalr x0, 0(ra)
    const src = `
      j start
    f:
      auipc t4, 0
      addi t0, t0, 1
      jalr x0, 0(ra)
      .word 0
    start:
      csrr s0, mhartid
      li t1, 1000
      li t0, 0
      li t6, ${JALR_RA}
      bne s0, zero, eng1
    loop0:
      jal ra, f
      sw zero, 12(t4)       # the data word after f
      addi t1, t1, -1
      bne t1, zero, loop0
      sw t6, 8(t4)          # f's jalr, over itself
      j done
    eng1:
      jal ra, f
    loop1:
      sw t6, 8(t4)          # engine 1's own copy of f's jalr
      addi t1, t1, -1
      bne t1, zero, loop1
    done:
      li t2, ${MMIO.SYS.EXIT}
      sw t0, 0(t2)
    `;
    const a = await programRun(src, 2, 0), b = await programRun(src, 2, 1);
    expect([a.engine(0).exitCode, a.engine(1).exitCode]).toEqual([1000, 1]);
    expect(endState(b)).toEqual(endState(a));
    expect(b.jitStats().translated).toBeGreaterThan(0);
    expect(b.jitStats().invalidations).toBe(1);
    // a store the check wrongly took for one into code would go to the interpreter (which
    // checks again, exactly): a side exit per iteration
    expect(b.jitStats().sideExits).toBeLessThan(10);
  });

  it("code the host writes between steps is seen: a new image loaded over translated code runs as the new code", async () => {
    const prog = (k: number) => programElf(`
      li t1, 2000
      li t0, 0
    loop:
      addi t0, t0, ${k}
      addi t1, t1, -1
      bne t1, zero, loop
      li t2, ${MMIO.SYS.EXIT}
      sw t0, 0(t2)
    `);
    const run = async (jit: number) => {
      const dev = await Device.create(coreModule(), { engines: 1, jit });
      dev.start(dev.loadElf(prog(1)).entry);
      dev.run(1_000_000_000n);
      const first = dev.engine(0).exitCode;
      dev.start(dev.loadElf(prog(3)).entry); // same addresses, another increment
      dev.run(2_000_000_000n);
      return { first, second: dev.engine(0).exitCode, state: endState(dev), stats: dev.jitStats() };
    };
    const a = await run(0), b = await run(1);
    expect([a.first, a.second]).toEqual([2000, 6000]);
    expect([b.first, b.second]).toEqual([2000, 6000]);
    expect(b.state).toEqual(a.state);
    expect(b.stats.translated).toBeGreaterThanOrEqual(2);
  });

  it("a full cache is emptied and hot code translated again (jitBlocks bounds it), with the same results", async () => {
    const elf = new Uint8Array(readFileSync(new URL("../firmware/tests/isa/isa.elf", import.meta.url)));
    const run = async (config: Config) => {
      const dev = await Device.create(coreModule(), { engines: 4, nullGuardBytes: 0, ...config });
      dev.start(dev.loadElf(elf).entry);
      dev.run(20_000_000_000n);
      return dev;
    };
    const a = await run({ jit: 0 }), b = await run({ jit: 1, jitBlocks: 16 });
    expect(endState(b)).toEqual(endState(a));
    expect(a.engine(0).exitCode).toBe(0);
    // the program makes about 25 translations: a cache of 16 is emptied, and what is hot after
    // that translated again
    expect(b.jitStats().flushes).toBeGreaterThanOrEqual(1);
    expect(b.jitStats().translated).toBeGreaterThan(16);
  });

  it("code that leaves at once is judged after 256 calls and interpreted; code that runs a while is kept", async () => {
    // a loop whose MMIO load (left to the interpreter) comes `before` instructions into it: each
    // call into its translation retires that many and leaves
    const loop = (before: number) => `
      li t1, 3000
      li t2, ${MMIO.SYS.NUM_ENGINES}
      li a0, 0
    loop:
      ${"addi a0, a0, 1\n".repeat(before)}
      lw t3, 0(t2)
      add a0, a0, t3
      addi t1, t1, -1
      bne t1, zero, loop
      li t2, ${MMIO.SYS.EXIT}
      sw a0, 0(t2)
    `;
    const run = async (before: number) => {
      const a = await programRun(loop(before), 1, 0), b = await programRun(loop(before), 1, 1, { jitHot: 16 });
      expect(a.engine(0).exitCode).toBe(3000 * (before + 1));
      expect(endState(b)).toEqual(endState(a));
      return b.jitStats();
    };
    const leaves = await run(0), stays = await run(6);
    // no instruction before the MMIO load: 256 calls into the loop's region, then it is
    // interpreted there (the single block after the load is judged too); kept, 3,000 and more
    expect(leaves.calls).toBeLessThanOrEqual(2 * 256);
    expect(leaves.instructions).toBeLessThan(2 * 256 * 4);
    // six before it: every turn calls the translation, which retires six or more
    expect(stays.calls).toBeGreaterThan(3000);
    expect(stays.instructions).toBeGreaterThan(4 * 3000);
  });
});

describe("translations are a cache, never state", () => {
  it("code the host cannot compile (as a page's main thread refuses modules over 4 KiB) is interpreted, with the same results", async () => {
    const run = async (jit: number) => {
      const dev = await computeDevice({ jit }, [5, 5]);
      dev.run(10_000_000_000n);
      return dev;
    };
    const a = await run(0);
    const Module = WebAssembly.Module;
    jitModulesClear(); // (else translations compiled by an earlier test are found compiled)
    try {
      (WebAssembly as { Module: unknown }).Module = function refuse() { throw new RangeError("WebAssembly.Module(): buffer too large for synchronous compilation"); };
      const b = await run(1);
      expect(endState(b)).toEqual(endState(a));
      expect(b.jitStats().translated).toBe(0);
      expect(b.jitStats().compileFailures).toBeGreaterThan(0);
    } finally {
      (WebAssembly as { Module: unknown }).Module = Module;
    }
  });

  it("a snapshot taken in jit mode restores in interpreter mode (and back) and continues exactly as an interpreted run", async () => {
    const start = (jit: number) => computeDevice({ jit }, [6, 9]);
    const ref = await start(0);
    ref.run(1_000_000_000n);
    const jit = await start(1);
    jit.step(40_000_000n); // mid-run: the two engines need about 90 and 130 us
    expect(jit.jitStats().translated).toBeGreaterThan(0);
    const interp = await Device.restore(coreModule(), jit.save(), { jit: 0 });
    interp.run(1_000_000_000n);
    expect(interp.config.get("jit")).toBe(0n);
    expect(interp.jitStats().translated).toBe(0);
    const mid = await start(0);
    mid.step(40_000_000n);
    const back = await Device.restore(coreModule(), mid.save(), { jit: 1 });
    back.run(1_000_000_000n);
    for (const d of [interp, back]) {
      const s = endState(d), r = endState(ref);
      expect(s.engines).toEqual(r.engines);
      expect([s.hbmHash, s.nowPs]).toEqual([r.hbmHash, r.nowPs]);
    }
    expect(back.jitStats().translated).toBeGreaterThan(0);
  });
});

