// What a debugger attached to the engines (host/debug/gdb.ts) asks of the core: breakpoints,
// watchpoints and single steps, checked one instruction at a time, and the device stopping
// between two instructions of one engine when one of them hits. A stop ends the step loop's
// window where it is (run.ts keeps where to go on); nothing runs until the host resumes, so
// simulated time of the whole device is frozen while a debugger looks at it.
// Same results as a run without a debugger: engines execute one instruction per call into the
// interpreter, with interrupts checked before each (as engine/profile.ts, whose argument holds
// here too), and a check only reads state. The state is plain data in the arena (create.ts).

import { Device } from "../core/device";
import { Hart, EngineState } from "./hart";
import { execute } from "./exec";
import { executeProfiled } from "./profile";
import { interruptToTake, takeTrap, timerBound } from "./trap";
import { immI, immS } from "./decode";
import { InsnClass, insnClass, rdOf, rs1Of, funct3Of, loadBytes, storeBytes } from "../generated/isa";

export const MAX_BREAKPOINTS: u32 = 64;
export const MAX_WATCHPOINTS: u32 = 16;
const WATCH_BYTES: usize = 12; // address u32, length u32, kind u32

/** Why the device stopped for the debugger (0: it did not). */
export const enum DebugStop {
  None = 0,
  Breakpoint = 1, // the engine is at a breakpoint, its instruction not yet executed
  Step = 2, // the engine being stepped has executed one instruction (or taken an interrupt)
  WatchWrite = 3, // the instruction at pc (not yet executed) writes a watched address
  WatchRead = 4, // ... reads one
  WatchAccess = 5, // ... reads or writes one (an access watchpoint)
  Fault = 6, // the engine faulted (trapped with no handler)
  Held = 7, // an engine the debugger did not resume was next to run, after one it did resume ran (debugOnly)
}

/** Watchpoint kinds, as the GDB remote protocol numbers them minus 2 (Z2 write, Z3 read, Z4 access). */
export const WATCH_WRITE: u32 = 0;
export const WATCH_READ: u32 = 1;
export const WATCH_ACCESS: u32 = 2;

const NO_ENGINE: u32 = 0xffffffff;

@unmanaged export class Debug {
  on: u32; // a debugger is attached: engines run through runEngineDebug
  stop: u32; // DebugStop: the device is stopped (step() returns at once) until debugResume
  stopEngine: u32;
  stopAddr: u32; // the watched address that was accessed (watch stops)
  stepEngine: u32; // the engine to stop after one instruction, or NO_ENGINE
  markEngine: u32; // the engine and the point (pc, instret) of the last breakpoint or watch stop:
  markPc: u32; //     that instruction is not checked again when it runs on resume (nor when an MMIO store runs again)
  markInstret: u64;
  pausedEnd: u64; // ps: the end of the window a stop interrupted (0: none), to go on from
  pausedNext: u32; // the engine that window goes on with
  only: u64; // engines the debugger resumed (bit per engine; all ones: every engine), debugOnly
  ranOnly: u32; // one of them has executed an instruction since the resume
  lastRan: u32; // ... and this one last
  nBreak: u32;
  nWatch: u32;
  breaks: usize; // MAX_BREAKPOINTS addresses
  watches: usize; // MAX_WATCHPOINTS records of WATCH_BYTES
  // the instruction log (below): host scratch memory, never part of a run's state
  // (Device.restore switches it off)
  logBuf: usize; // logCap records of INSN_LOG_BYTES
  logCap: u32; // 0: no log
  logCount: u64; // instructions logged, including those past logCap (not stored)
  logMask: u64; // the engines logged, a bit each
}

/** Arena bytes of the debug state. */
export function debugBytes(): usize {
  return ((offsetof<Debug>() + 15) & ~(<usize>15)) + <usize>MAX_BREAKPOINTS * 4 + <usize>MAX_WATCHPOINTS * WATCH_BYTES;
}

/** Lays the debug state out at `base` (zeroed, debugBytes long). */
export function debugInit(base: usize): void {
  const d = changetype<Debug>(base);
  d.breaks = base + ((offsetof<Debug>() + 15) & ~(<usize>15));
  d.watches = d.breaks + <usize>MAX_BREAKPOINTS * 4;
  d.stepEngine = NO_ENGINE;
  d.markEngine = NO_ENGINE;
  d.only = U64.MAX_VALUE;
}

@inline export function debugOf(dev: Device): Debug { return changetype<Debug>(dev.debug); }

/** Attaches (1) or detaches (0) the debugger; detaching forgets breakpoints, watchpoints and a step. */
export function debugAttach(dev: Device, on: u32): void {
  const d = debugOf(dev);
  d.on = on != 0 ? 1 : 0;
  if (on == 0) {
    d.nBreak = 0;
    d.nWatch = 0;
    d.stepEngine = NO_ENGINE;
    d.only = U64.MAX_VALUE;
    d.stop = DebugStop.None;
  }
}

/** Sets or clears a breakpoint at `addr`. False when the table is full (set) or holds no such breakpoint (clear). */
export function debugBreak(dev: Device, addr: u32, set: bool): bool {
  const d = debugOf(dev);
  for (let i: u32 = 0; i < d.nBreak; i++) {
    const p = d.breaks + (<usize>i << 2);
    if (load<u32>(p) != addr) continue;
    if (set) return true;
    d.nBreak--;
    store<u32>(p, load<u32>(d.breaks + (<usize>d.nBreak << 2)));
    return true;
  }
  if (!set || d.nBreak >= MAX_BREAKPOINTS) return false;
  store<u32>(d.breaks + (<usize>d.nBreak << 2), addr);
  d.nBreak++;
  return true;
}

/** Sets or clears a watchpoint of `kind` (WATCH_*) on [addr, addr + len). False when full, not found or len is 0. */
export function debugWatch(dev: Device, addr: u32, len: u32, kind: u32, set: bool): bool {
  const d = debugOf(dev);
  if (len == 0 || kind > WATCH_ACCESS) return false;
  for (let i: u32 = 0; i < d.nWatch; i++) {
    const p = d.watches + <usize>i * WATCH_BYTES;
    if (load<u32>(p) != addr || load<u32>(p, 4) != len || load<u32>(p, 8) != kind) continue;
    if (set) return true;
    d.nWatch--;
    memory.copy(p, d.watches + <usize>d.nWatch * WATCH_BYTES, WATCH_BYTES);
    return true;
  }
  if (!set || d.nWatch >= MAX_WATCHPOINTS) return false;
  const p = d.watches + <usize>d.nWatch * WATCH_BYTES;
  store<u32>(p, addr);
  store<u32>(p, len, 4);
  store<u32>(p, kind, 8);
  d.nWatch++;
  return true;
}

/** Stops the device after engine `engine` has executed one instruction (NO_ENGINE: no step). */
export function debugStep(dev: Device, engine: u32): void {
  debugOf(dev).stepEngine = engine;
}

/**
 * Resumes only the engines of `mask` (bit i: engine i), as a debugger does to step one engine
 * over a breakpoint. Engines still run in the device's order, which debugging must not change:
 * the device stops (DebugStop.Held, on the resumed engine that ran last) when, after a resumed
 * engine has executed an instruction, another engine is next to run; engines that come before
 * any resumed one run as they would, unseen: no breakpoint, watchpoint or fault of theirs
 * stops the device, since to the debugger they are stopped.
 */
export function debugOnly(dev: Device, mask: u64): void {
  debugOf(dev).only = mask;
}

/** Lets a stopped device run on (from where its window was interrupted). */
export function debugResume(dev: Device): void {
  const d = debugOf(dev);
  d.stop = DebugStop.None;
  d.ranOnly = 0;
}

function stopAt(d: Debug, h: Hart, why: DebugStop, addr: u32): void {
  d.stop = why;
  d.stopEngine = h.id;
  d.stopAddr = addr;
  if (why == DebugStop.Step) d.stepEngine = NO_ENGINE;
  if (why == DebugStop.Step || why == DebugStop.Fault) return;
  // a step's stop leaves no mark: the next instruction may well be the one a watchpoint is for
  d.markEngine = h.id;
  d.markPc = h.pc;
  d.markInstret = h.instret;
}

/**
 * The watch stop the instruction `ir` at h.pc causes, or None: its address and width decoded as
 * exec.ts does (an illegal encoding accesses nothing: layouts/isa.json, through insnClass).
 */
function watchHit(d: Debug, h: Hart, ir: u32): DebugStop {
  let addr: u32, size: u32, reads: bool, writes: bool;
  const base = load<u32>(h.regs + (<usize>rs1Of(ir) << 2));
  switch (insnClass(ir)) {
    case InsnClass.Load: addr = base + immI(ir); size = loadBytes(funct3Of(ir)); reads = true; writes = false; break;
    case InsnClass.Store: addr = base + immS(ir); size = storeBytes(funct3Of(ir)); reads = false; writes = true; break;
    case InsnClass.Lr: addr = base; size = 4; reads = true; writes = false; break;
    case InsnClass.Sc: addr = base; size = 4; reads = false; writes = true; break;
    case InsnClass.Amo: addr = base; size = 4; reads = true; writes = true; break;
    default: return DebugStop.None;
  }
  for (let i: u32 = 0; i < d.nWatch; i++) {
    const p = d.watches + <usize>i * WATCH_BYTES;
    const wa = load<u32>(p), wl = load<u32>(p, 4), kind = load<u32>(p, 8);
    if (addr - wa >= wl && wa - addr >= size) continue; // [addr, addr+size) and [wa, wa+wl) do not overlap
    let why = DebugStop.None;
    if (kind == WATCH_WRITE && writes) why = DebugStop.WatchWrite;
    else if (kind == WATCH_READ && reads) why = DebugStop.WatchRead;
    else if (kind == WATCH_ACCESS) why = DebugStop.WatchAccess;
    if (why != DebugStop.None) {
      d.stopAddr = addr > wa ? addr : wa; // an address inside both: the client finds its watchpoint by it
      return why;
    }
  }
  return DebugStop.None;
}

/** Stops before the instruction at h.pc when it is at a breakpoint or touches a watched address. */
function checkBefore(dev: Device, d: Debug, h: Hart): bool {
  if (d.markEngine == h.id && d.markPc == h.pc && d.markInstret == h.instret) return false; // stopped here already
  for (let i: u32 = 0; i < d.nBreak; i++) {
    if (load<u32>(d.breaks + (<usize>i << 2)) == h.pc) { stopAt(d, h, DebugStop.Breakpoint, 0); return true; }
  }
  if (d.nWatch == 0 || h.pc >= dev.cfg.sramBytes || h.pc < dev.cfg.nullGuardBytes) return false; // no watch, or the fetch faults
  const why = watchHit(d, h, load<u32>(h.sram + <usize>h.pc));
  if (why == DebugStop.None) return false;
  stopAt(d, h, why, d.stopAddr);
  return true;
}

/**
 * run.ts's runEngine with a debugger attached: one instruction at a time, each checked first.
 * Returns true when the device stopped (the engine may have cycles of the window left).
 */
export function runEngineDebug(dev: Device, h: Hart, limit: u64): bool {
  const d = debugOf(dev);
  while (h.state == EngineState.Running && h.cycle < limit) {
    const resumed = ((d.only >> <u64>h.id) & 1) != 0;
    if (!resumed && d.ranOnly != 0) {
      d.stop = DebugStop.Held;
      d.stopEngine = d.lastRan;
      d.stopAddr = 0;
      return true;
    }
    const stepping = d.stepEngine == h.id;
    const irq = interruptToTake(h);
    if (irq != 0) {
      takeTrap(dev, h, irq, 0);
      if (h.state == EngineState.Faulted && resumed) { stopAt(d, h, DebugStop.Fault, 0); return true; }
      if (stepping) { stopAt(d, h, DebugStop.Step, 0); return true; }
      continue;
    }
    // an engine the debugger did not resume runs unseen: to the debugger it is stopped
    if (resumed && checkBefore(dev, d, h)) return true;
    const stop = timerBound(h, limit);
    const pc = h.pc, instret = h.instret;
    if (d.logCap != 0) executeLogged(dev, h, stop);
    else if (dev.cfg.profile != 0) executeProfiled(dev, h, stop);
    else execute(dev, h, stop < h.cycle + 1 ? stop : h.cycle + 1); // one instruction: each costs at least a cycle
    if (resumed && d.only != U64.MAX_VALUE) { d.ranOnly = 1; d.lastRan = h.id; }
    if (h.state == EngineState.Faulted && resumed) { stopAt(d, h, DebugStop.Fault, 0); return true; }
    // a step is done once the instruction retired or trapped (an MMIO store told to wait runs again)
    if (stepping && (h.pc != pc || h.instret != instret || h.state != EngineState.Running)) { stopAt(d, h, DebugStop.Step, 0); return true; }
  }
  return false;
}

// ---- The instruction log (`menic fw run --log insn`, host/debug/insn-log.ts): like the cycle
// profiler (profile.ts) it runs an engine one instruction per call into the interpreter, and
// records each instruction that retired or trapped: engine, pc, the instruction word, and the
// register it wrote with its new value (or the trap's mcause). An instruction told to wait (an
// MMIO store stalled on a full doorbell queue) is recorded when it runs. Records go to a buffer
// the host gives (debugOf(dev).logBuf); past its capacity they are counted, not stored. It only
// reads state, so a logged run computes exactly what an unlogged one does.

/** Bytes of a record: pc u32, instruction u32, value u32 (rd's new value, or mcause), engine u16, rd u8, flags u8. */
export const INSN_LOG_BYTES: usize = 16;
/** Record flags: the instruction retired; it trapped (value is mcause). */
export const INSN_LOG_RETIRED: u8 = 1;
export const INSN_LOG_TRAPPED: u8 = 2;

/** Executes one instruction of `h` (if its cycle is below `stop`) and logs it when its engine is logged. */
export function executeLogged(dev: Device, h: Hart, stop: u64): void {
  if (h.state != EngineState.Running || h.cycle >= stop) return;
  const pc = h.pc, instret = h.instret;
  const ir = pc >= dev.cfg.nullGuardBytes && pc <= dev.cfg.sramBytes - 4 ? load<u32>(h.sram + <usize>pc) : 0;
  if (dev.cfg.profile != 0) executeProfiled(dev, h, stop);
  else execute(dev, h, h.cycle + 1); // one instruction: every instruction costs at least one cycle
  const retired = h.instret != instret;
  if (!retired && h.pc == pc && h.state == EngineState.Running) return; // told to wait: runs again
  const d = debugOf(dev);
  if (((d.logMask >> <u64>h.id) & 1) == 0) return;
  if (d.logCount < <u64>d.logCap) {
    const p = d.logBuf + <usize>d.logCount * INSN_LOG_BYTES;
    const rd = rdOf(ir);
    store<u32>(p, pc);
    store<u32>(p, ir, 4);
    store<u32>(p, retired ? load<u32>(h.regs + (<usize>rd << 2)) : h.mcause, 8);
    store<u16>(p, <u16>h.id, 12);
    store<u8>(p, <u8>rd, 14);
    store<u8>(p, retired ? INSN_LOG_RETIRED : INSN_LOG_TRAPPED, 15);
  }
  d.logCount++;
}

/** Logs the engines in `mask` into `cap` records at `buf` from now on (cap 0: no log), counting from 0. */
export function insnLogSet(dev: Device, buf: usize, cap: u32, mask: u64): void {
  const d = debugOf(dev);
  d.logBuf = cap != 0 ? buf : 0;
  d.logCap = buf != 0 ? cap : 0;
  d.logMask = mask;
  d.logCount = 0;
}
