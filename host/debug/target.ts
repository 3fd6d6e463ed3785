// A device's engines as a debugger sees them (the core's side is assembly/engine/debug.ts):
// registers, memory through an engine's map, breakpoints, watchpoints, single steps, and a run
// that goes on until the device stops for the debugger, the program ends, or a slice of
// simulated time has passed (so a client can interrupt). No Node APIs: the GDB stub
// (host/debug/gdb.ts) drives it whatever carries its packets.
//
// Debugging never changes what the program computes: breakpoints and watchpoints only read
// state, a stop freezes the whole device (no engine runs, no event fires, time stands still),
// and the run is cut into slices at multiples of interleaveQuantumPs, where a split run is
// identical to an uninterrupted one (ARCHITECTURE.md, "The device event loop").

import type { Device } from "../device.js";
import { REGIONS, STEP } from "../generated/layouts.js";

/** held: `only` resumed some engines, one of them ran, and another was next to run (the stop names the one that ran). */
export type StopReason = "breakpoint" | "step" | "watch-write" | "watch-read" | "watch-access" | "fault" | "held";
/** The core's DebugStop numbers (engine/debug.ts), 1-based. */
const STOP_REASONS: readonly StopReason[] = ["breakpoint", "step", "watch-write", "watch-read", "watch-access", "fault", "held"];

export interface DebugStopEvent {
  engine: number;
  reason: StopReason;
  /** The watched address accessed (watch stops), else 0. */
  addr: number;
}

export type WatchKind = "write" | "read" | "access";
const WATCH_KINDS: readonly WatchKind[] = ["write", "read", "access"];

/** How a slice of the run ended. */
export type RunOutcome = { kind: "stopped"; stop: DebugStopEvent } | { kind: "ended" } | { kind: "slice" };

/** Registers GDB numbers for riscv32: x0..x31, then pc. */
export const PC_REGNUM = 32;
const NO_ENGINE = 0xffffffff;

export class EngineDebugger {
  private readonly quantumPs: bigint;
  /** The last run stopped inside a window, which the next one finishes. */
  private interrupted = false;

  constructor(readonly dev: Device) {
    this.quantumPs = dev.config.get("interleaveQuantumPs")!;
    dev.core.debugAttach(dev.handle, 1);
  }

  get engines(): number {
    return this.dev.engines;
  }

  /** Forgets breakpoints, watchpoints and a pending step; the device runs on at full speed. */
  detach(): void {
    this.dev.core.debugAttach(this.dev.handle, 0);
  }

  setBreakpoint(addr: number, on: boolean): boolean {
    return this.dev.core.debugBreak(this.dev.handle, addr >>> 0, on ? 1 : 0) !== 0;
  }

  setWatchpoint(kind: WatchKind, addr: number, len: number, on: boolean): boolean {
    return this.dev.core.debugWatch(this.dev.handle, addr >>> 0, len >>> 0, WATCH_KINDS.indexOf(kind), on ? 1 : 0) !== 0;
  }

  /** The next run stops once `engine` has executed one instruction (null: no step). */
  step(engine: number | null): void {
    this.dev.core.debugStep(this.dev.handle, engine === null ? NO_ENGINE : this.engineIndex(engine));
  }

  /**
   * The next runs resume only `engines` (null: all), as a debugger steps one engine over a
   * breakpoint: engines keep the device's order, the others run unseen only until one of these
   * has run, and the device stops ("held") when another engine is next (engine/debug.ts debugOnly).
   */
  only(engines: readonly number[] | null): void {
    let mask = engines === null ? (1n << 64n) - 1n : 0n;
    for (const e of engines ?? []) mask |= 1n << BigInt(this.engineIndex(e));
    this.dev.core.debugOnly(this.dev.handle, mask);
  }

  /** Why the device is stopped for the debugger, or null. */
  stopped(): DebugStopEvent | null {
    const c = this.dev.core, h = this.dev.handle;
    const why = c.debugStopReason(h);
    if (why === 0) return null;
    return { engine: c.debugStopEngine(h) >>> 0, reason: STOP_REASONS[why - 1]!, addr: c.debugStopAddr(h) >>> 0 };
  }

  /** x0..x31 and pc of `engine`. */
  registers(engine: number): number[] {
    const regs = Array.from({ length: 32 }, (_, r) => this.dev.reg(engine, r));
    regs.push(this.dev.engine(engine).pc);
    return regs;
  }

  /** CSR `csr` of `engine` as the engine would read it; null for one it does not have. */
  csr(engine: number, csr: number): number | null {
    return this.dev.csr(engine, csr);
  }

  /** One line about `engine` for a thread list: its state (and exit code). */
  describe(engine: number): string {
    const e = this.dev.engine(engine);
    return `engine ${engine} ${e.state}${e.state === "exited" ? ` (${e.exitCode})` : ""}`;
  }

  /** Writes register `r` (0..31, PC_REGNUM); x0 stays 0 as in the engine. */
  setRegister(engine: number, r: number, value: number): void {
    const e = this.engineIndex(engine);
    if (r === PC_REGNUM) this.dev.core.engineSetPc(this.dev.handle, e, value >>> 0);
    else if (Number.isInteger(r) && r >= 0 && r < 32) this.dev.core.engineSetReg(this.dev.handle, e, r, value >>> 0);
    else throw new RangeError(`register ${r}: the engines have x0..x31 and pc (${PC_REGNUM})`);
  }

  /**
   * Where [addr, addr + len) lies in wasm memory for `engine`: its SRAM from the NULL guard up,
   * or HBM. The MMIO window is not memory (reading a register can pop a FIFO), so it and
   * anything unmapped give null; a range running past its region's end is cut there.
   */
  private locate(engine: number, addr: number, len: number): { at: number; len: number } | null {
    const dev = this.dev;
    const a = addr >>> 0;
    let base: number, lo: number, hi: number;
    if (a >= dev.nullGuardBytes && a < dev.sramBytes) {
      base = dev.core.sramPtr(dev.handle, this.engineIndex(engine)) >>> 0;
      lo = REGIONS.SRAM.base;
      hi = dev.sramBytes;
    } else if (a >= REGIONS.HBM.base && a - REGIONS.HBM.base < dev.hbmDataBytes) {
      base = dev.core.hbmPtr(dev.handle) >>> 0;
      lo = REGIONS.HBM.base;
      hi = REGIONS.HBM.base + dev.hbmDataBytes;
    } else return null;
    return { at: base + (a - lo), len: Math.min(len, hi - a) };
  }

  /** Up to `len` bytes from `addr` as `engine` sees them (fewer at the end of a region); null when addr is not memory. */
  readMemory(engine: number, addr: number, len: number): Uint8Array | null {
    const r = this.locate(engine, addr, len);
    if (!r) return null;
    return new Uint8Array(this.dev.core.memory.buffer, r.at, r.len).slice();
  }

  /** Writes `data` at `addr` as `engine` sees it; false (nothing written) unless all of it is memory. */
  writeMemory(engine: number, addr: number, data: Uint8Array): boolean {
    const r = this.locate(engine, addr, data.length);
    if (!r || r.len !== data.length) return false;
    new Uint8Array(this.dev.core.memory.buffer, r.at, r.len).set(data);
    return true;
  }

  /**
   * Runs on from where the device is (finishing a window a stop interrupted) towards `untilPs`,
   * for at most `sliceQuanta` interleave quanta of simulated time, as Device.run would
   * (STOP_WHEN_QUIESCENT): "stopped" when the debugger's checks stopped it, "ended" when no
   * engine can run any more or time reached `untilPs`, else "slice".
   */
  run(untilPs: bigint, sliceQuanta = 64n): RunOutcome {
    const dev = this.dev;
    // after a stop the window it interrupted is finished first, even when no engine is left running
    const resuming = this.interrupted;
    this.interrupted = false;
    dev.core.debugResume(dev.handle);
    const q = this.quantumPs;
    let t = dev.nowPs;
    if (!resuming && (t >= untilPs || dev.allStopped())) return { kind: "ended" };
    const sliceEnd = (t / q + sliceQuanta) * q;
    const end = sliceEnd < untilPs ? sliceEnd : untilPs;
    t = dev.step(end, STEP.STOP_WHEN_QUIESCENT);
    const stop = this.stopped();
    if (stop) {
      this.interrupted = true;
      return { kind: "stopped", stop };
    }
    if (dev.allStopped()) {
      // Device.run's one step would have gone on past the slice's end to where nothing more
      // happens (STOP_WHEN_QUIESCENT): so does this one
      if (t === end && end < untilPs) dev.step(untilPs, STEP.STOP_WHEN_QUIESCENT);
      return { kind: "ended" };
    }
    return t >= untilPs ? { kind: "ended" } : { kind: "slice" };
  }

  private engineIndex(i: number): number {
    if (!Number.isInteger(i) || i < 0 || i >= this.dev.engines) throw new RangeError(`engine ${i}: the device has engines 0..${this.dev.engines - 1}`);
    return i;
  }
}
