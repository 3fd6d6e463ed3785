// The core's debugger support (assembly/engine/debug.ts) through host/debug/target.ts:
// breakpoints, watchpoints and single steps stop the whole device between two instructions of
// one engine, time stands still while it is stopped, and a run with stops computes exactly
// what a run without one does.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { Device } from "../host/device.js";
import { coreModule } from "../host/platform/node.js";
import { EngineDebugger, PC_REGNUM, type DebugStopEvent } from "../host/debug/target.js";
import { Symbolizer } from "../host/debug/symbolize.js";
import { assemble, writeElf, I, reg, CODE_BASE } from "./helpers/rv.js";

const psum = new Uint8Array(readFileSync("firmware/examples/psum.elf"));
const symbols = Symbolizer.fromElf(psum);
const MAIN = symbols.lookup("main")!.start;
const PRINTF = symbols.lookup("printf")!.start;
const TOTAL_LO = 0x80000004; // psum.elf's total_lo (llvm-nm)
const UNTIL = 1_000_000_000_000n;

async function device(config: Record<string, number> = {}): Promise<Device> {
  const dev = await Device.create(coreModule(), { engines: 16, ...config });
  dev.start(dev.loadElf(psum).entry);
  return dev;
}

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/** Everything a program computes and what it cost: registers, memories, consoles, counts, stats, time. */
function outcome(dev: Device) {
  const engines = Array.from({ length: dev.engines }, (_, e) => ({
    ...dev.engine(e),
    regs: Array.from({ length: 32 }, (_, r) => dev.reg(e, r)),
    console: dev.console(e),
    sram: sha(new Uint8Array(dev.core.memory.buffer, dev.core.sramPtr(dev.handle, e), dev.sramBytes)),
  }));
  return { engines, hbm: sha(dev.readHbm(0, dev.hbmBytes)), stats: dev.stats(), now: dev.nowPs };
}

/** Runs to the end, handing every stop to `onStop`, which must leave the device ready to go on. */
function runWithStops(d: EngineDebugger, onStop: (s: DebugStopEvent) => void): void {
  for (let n = 0; n < 100_000; n++) {
    const r = d.run(UNTIL, 16n);
    if (r.kind === "ended") return;
    if (r.kind === "stopped") onStop(r.stop);
  }
  throw new Error("runWithStops: the run did not end");
}

/** Stepping over a breakpoint or watchpoint the way GDB does: remove it, step the engine, put it back. */
function stepOver(d: EngineDebugger, engine: number, remove: () => void, restore: () => void): DebugStopEvent {
  remove();
  d.step(engine);
  const r = d.run(UNTIL, 16n);
  restore();
  if (r.kind !== "stopped") throw new Error(`step over: ${r.kind}`);
  return r.stop;
}

describe("the engines under a debugger", () => {
  it("stops at breakpoints and watchpoints and steps, and ends exactly as a run without any", async () => {
    const plain = await device();
    plain.run(UNTIL);
    const want = outcome(plain);

    const dev = await device();
    const d = new EngineDebugger(dev);
    expect(d.setBreakpoint(MAIN, true)).toBe(true);
    expect(d.setBreakpoint(PRINTF, true)).toBe(true);
    expect(d.setWatchpoint("write", TOTAL_LO, 4, true)).toBe(true);
    const mainHits: number[] = [], printfHits: number[] = [], watchHits: number[] = [];
    let steps = 0;
    runWithStops(d, (s) => {
      const pc = dev.engine(s.engine).pc;
      if (s.reason === "breakpoint") {
        expect([MAIN, PRINTF]).toContain(pc);
        (pc === MAIN ? mainHits : printfHits).push(s.engine);
        // time stands still while stopped: stepping the device does nothing
        const now = dev.nowPs, cycles = dev.engine(s.engine).cycles;
        expect(dev.step(UNTIL)).toBe(now);
        expect(dev.engine(s.engine).cycles).toBe(cycles);
        const next = stepOver(d, s.engine, () => d.setBreakpoint(pc, false), () => d.setBreakpoint(pc, true));
        expect(next).toMatchObject({ engine: s.engine, reason: "step" });
        expect(dev.engine(s.engine).pc).toBe(pc + 4); // main and printf open with a straight-line instruction
        // a few more single steps of the same engine: each retires one instruction
        for (let k = 0; k < 3; k++) {
          const before = dev.engine(s.engine).instructions;
          d.step(s.engine);
          const r = d.run(UNTIL, 16n);
          expect(r.kind).toBe("stopped");
          if (r.kind === "stopped" && r.stop.reason === "step") {
            expect(dev.engine(s.engine).instructions).toBe(before + 1);
            steps++;
          }
        }
      } else if (s.reason === "watch-write") {
        expect(s.addr).toBe(TOTAL_LO);
        const ir = new DataView(d.readMemory(s.engine, pc, 4)!.buffer).getUint32(0, true);
        expect(ir & 0x7f).toBe(0x2f); // stopped before the amoadd that writes total_lo
        watchHits.push(s.engine);
        const before = dev.readHbm(4, 4);
        const next = stepOver(d, s.engine, () => d.setWatchpoint("write", TOTAL_LO, 4, false), () => d.setWatchpoint("write", TOTAL_LO, 4, true));
        expect(next.reason).toBe("step");
        if (s.engine !== 0 || watchHits.length > 1) expect(dev.readHbm(4, 4)).not.toEqual(before); // every partial sum is non-zero
      } else throw new Error(`unexpected stop ${JSON.stringify(s)}`);
    });
    expect(mainHits).toEqual(Array.from({ length: 16 }, (_, e) => e)); // engine order, each once
    expect(printfHits).toEqual([0]); // only engine 0 prints
    expect(watchHits.sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, e) => e));
    expect(steps).toBeGreaterThan(40);
    expect(outcome(dev)).toEqual(want);
    expect(dev.console(0)).toContain(": ok");
  });

  it("read and access watchpoints stop before the instruction that reads; a profiled run under a debugger matches a profiled one without", async () => {
    const plain = await device({ engines: 4, profile: 1 });
    plain.run(UNTIL);
    const want = outcome(plain);
    const dev = await device({ engines: 4, profile: 1 });
    const d = new EngineDebugger(dev);
    // engine 0 reads total_lo (and total_hi) once at the end, after the last barrier; amoadds read it too
    d.setWatchpoint("read", TOTAL_LO, 4, true);
    d.setWatchpoint("access", 0x80000000, 4, true); // total_hi
    const seen: string[] = [];
    runWithStops(d, (s) => {
      seen.push(`${s.reason}@${s.engine}:${s.addr.toString(16)}`);
      const kind = s.reason === "watch-read" ? "read" : "access";
      const addr = s.reason === "watch-read" ? TOTAL_LO : 0x80000000;
      stepOver(d, s.engine, () => d.setWatchpoint(kind, addr, 4, false), () => d.setWatchpoint(kind, addr, 4, true));
    });
    // each of 4 engines: amoadd on total_lo (read), amoadd on total_hi (access); engine 0 then loads both
    expect(seen.filter((x) => x.startsWith("watch-read")).length).toBe(5);
    expect(seen.filter((x) => x.startsWith("watch-access")).length).toBe(5);
    expect(seen.at(-1)).toMatch(/@0:/);
    expect(outcome(dev)).toEqual(want);
  });

  it("a breakpoint resumed without being removed does not stop again at once; detaching runs on at full speed", async () => {
    const plain = await device({ engines: 2 });
    plain.run(UNTIL);
    const dev = await device({ engines: 2 });
    const d = new EngineDebugger(dev);
    d.setBreakpoint(MAIN, true);
    let r = d.run(UNTIL);
    expect(r).toMatchObject({ kind: "stopped", stop: { engine: 0, reason: "breakpoint" } });
    r = d.run(UNTIL);
    expect(r).toMatchObject({ kind: "stopped", stop: { engine: 1, reason: "breakpoint" } });
    d.detach();
    while ((r = d.run(UNTIL)).kind === "slice");
    expect(r.kind).toBe("ended");
    expect(outcome(dev)).toEqual(outcome(plain));
  });

  it("resuming some engines: they run alone as far as the device's order allows, the rest unseen, and the end is unchanged", async () => {
    const plain = await device({ engines: 4 });
    plain.run(UNTIL);
    const dev = await device({ engines: 4 });
    const d = new EngineDebugger(dev);
    const instret = () => Array.from({ length: 4 }, (_, e) => dev.engine(e).instructions);
    d.setBreakpoint(MAIN, true);
    expect(d.run(UNTIL)).toMatchObject({ kind: "stopped", stop: { engine: 0, reason: "breakpoint" } });
    // GDB's single step over a breakpoint: a breakpoint on the next instruction, engine 0 alone
    d.setBreakpoint(MAIN, false);
    d.setBreakpoint(MAIN + 4, true);
    d.only([0]);
    expect(d.run(UNTIL)).toMatchObject({ kind: "stopped", stop: { engine: 0, reason: "breakpoint" } });
    expect(dev.engine(0).pc).toBe(MAIN + 4);
    d.setBreakpoint(MAIN + 4, false);
    // engine 0 alone again: it runs to the end of its turn in the window, then the device holds
    let before = instret();
    expect(d.run(UNTIL)).toMatchObject({ kind: "stopped", stop: { engine: 0, reason: "held" } });
    let after = instret();
    expect(after[0]).toBeGreaterThan(before[0]!);
    expect(after.slice(1)).toEqual(before.slice(1));
    // engine 2 alone: engine 1 comes first in the window and runs unseen (the breakpoint at main
    // does not stop it), then engine 2 runs and stops there
    d.setBreakpoint(MAIN, true);
    d.only([2]);
    before = instret();
    expect(d.run(UNTIL)).toMatchObject({ kind: "stopped", stop: { engine: 2, reason: "breakpoint" } });
    after = instret();
    expect(after[1]).toBeGreaterThan(before[1]!);
    expect(dev.engine(1).pc).not.toBe(MAIN);
    expect(after[3]).toBe(before[3]);
    // and alone again, the device holds before engine 3's turn
    d.setBreakpoint(MAIN, false);
    expect(d.run(UNTIL)).toMatchObject({ kind: "stopped", stop: { engine: 2, reason: "held" } });
    expect(dev.engine(2).instructions).toBeGreaterThan(after[2]!);
    expect(dev.engine(3).instructions).toBe(before[3]);
    expect(() => d.only([4])).toThrow(/engines 0..3/);
    // every engine again, to the end: the same as a run without a debugger
    d.only(null);
    let r;
    while ((r = d.run(UNTIL)).kind !== "ended") expect(r.kind).toBe("slice");
    expect(outcome(dev)).toEqual(outcome(plain));
  });

  it("reads and writes registers and memory through an engine's map only", async () => {
    const dev = await device({ engines: 2 });
    const d = new EngineDebugger(dev);
    d.setRegister(1, 5, 0x12345678);
    d.setRegister(1, 0, 7); // x0 stays 0
    d.setRegister(1, PC_REGNUM, MAIN);
    const regs = d.registers(1);
    expect(regs.length).toBe(33);
    expect(regs[5]).toBe(0x12345678);
    expect(regs[0]).toBe(0);
    expect(regs[PC_REGNUM]).toBe(MAIN);
    expect(d.registers(0)[5]).toBe(0);
    expect(() => d.setRegister(1, 33, 0)).toThrow(/x0..x31 and pc/);
    expect(() => d.registers(2)).toThrow(/engine must be an integer in \[0, 1\]/);

    expect(d.readMemory(0, 0, 4)).toBeNull(); // the NULL guard
    expect(d.readMemory(0, dev.nullGuardBytes - 1, 4)).toBeNull();
    expect(d.readMemory(0, 0x10000000, 4)).toBeNull(); // MMIO: reading it has effects
    expect(d.readMemory(0, 0x80000000 + dev.hbmBytes, 1)).toBeNull();
    expect(d.readMemory(0, dev.sramBytes - 2, 8)!.length).toBe(2); // cut at the region's end
    expect(d.writeMemory(0, dev.sramBytes - 2, new Uint8Array(8))).toBe(false);
    // SRAM is per engine, HBM shared
    expect(d.writeMemory(1, 0x2000, Uint8Array.of(1, 2, 3))).toBe(true);
    expect([...d.readMemory(1, 0x2000, 3)!]).toEqual([1, 2, 3]);
    expect([...d.readMemory(0, 0x2000, 3)!]).toEqual([0, 0, 0]);
    expect(d.writeMemory(1, 0x80000100, Uint8Array.of(9, 8))).toBe(true);
    expect([...d.readMemory(0, 0x80000100, 2)!]).toEqual([9, 8]);
    expect([...dev.readHbm(0x100, 2)]).toEqual([9, 8]);
  });

  it("a watchpoint stops only an instruction that accesses memory: an illegal load encoding faults", async () => {
    // funct3 3 of LOAD is RV64's `ld`, illegal here (layouts/isa.json): it reads nothing, so the
    // access watchpoint over its address lets it run into its illegal-instruction trap; the same
    // place with `lw` stops before it
    const stopAt = async (f3: number) => {
      const code = Uint32Array.from([...assemble("li t0, 0x80000000", CODE_BASE), I(0, reg("t0"), f3, reg("t1"), 0x03)]);
      const dev = await Device.create(coreModule(), { engines: 1 });
      dev.start(dev.loadElf(writeElf(CODE_BASE, [{ vaddr: CODE_BASE, data: new Uint8Array(code.buffer) }])).entry);
      const d = new EngineDebugger(dev);
      expect(d.setWatchpoint("access", 0x80000000, 4, true)).toBe(true);
      const r = d.run(UNTIL);
      return { stop: r.kind === "stopped" ? r.stop.reason : r.kind, pc: dev.engine(0).pc - CODE_BASE, mcause: dev.engine(0).mcause };
    };
    expect(await stopAt(2)).toEqual({ stop: "watch-access", pc: 8, mcause: null });
    expect(await stopAt(3)).toEqual({ stop: "fault", pc: 8, mcause: 2 });
  });

  it("tables have a fixed size and say when they are full or hold no such entry", async () => {
    const d = new EngineDebugger(await device({ engines: 1 }));
    for (let i = 0; i < 64; i++) expect(d.setBreakpoint(0x1000 + 4 * i, true)).toBe(true);
    expect(d.setBreakpoint(0x2000, true)).toBe(false);
    expect(d.setBreakpoint(0x1000, true)).toBe(true); // already there
    expect(d.setBreakpoint(0x3000, false)).toBe(false);
    expect(d.setBreakpoint(0x1000, false)).toBe(true);
    expect(d.setBreakpoint(0x2000, true)).toBe(true);
    for (let i = 0; i < 16; i++) expect(d.setWatchpoint("write", 0x80000000 + 8 * i, 4, true)).toBe(true);
    expect(d.setWatchpoint("read", 0x80001000, 4, true)).toBe(false);
    expect(d.setWatchpoint("read", 0x80000000, 4, false)).toBe(false); // that one is a write watchpoint
    expect(d.setWatchpoint("write", 0x80000000, 0, true)).toBe(false);
  });
});
