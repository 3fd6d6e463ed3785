// The device's one interleave point. Time advances in windows that end at the next grid line
// (a multiple of interleaveQuantumPs) or the next event, whichever is first; in each window
// every running engine executes, in engine order, up to the window's end. Sleeping engines
// cost nothing: when no engine runs, time jumps straight to the next event.
// Windows never depend on where the host stops a step, so a run split into many steps,
// or saved and restored in the middle, is identical to one uninterrupted run.

import { Device, statAdd, tracePoint } from "./core/device";
import { hartAt } from "./engine/engines";
import { consoleWantsDrain } from "./engine/console";
import { Hart, EngineState } from "./engine/hart";
import { wake, interruptEngine } from "./engine/wake";
import { mailboxArrive } from "./engine/mailbox";
import { transportPortTx } from "./nic/transport";
import { mrtTimer } from "./metaroce/tx";
import { nicTimer } from "./rocev2/rx";
import { rxArrive } from "./nic/rx";
import { execute } from "./engine/exec";
import { executeProfiled } from "./engine/profile";
import { executeJit } from "./engine/jit";
import {
  aheadActive, aheadCommit, aheadMayRun, aheadStart, aheadMode, aheadParked, aheadStopped, aheadWindow, aheadSettleAll, aheadReplayWith, aheadDue, AHEAD_NO_ENGINE,
} from "./engine/ahead";
import { debugOf, runEngineDebug, executeLogged, DebugStop } from "./engine/debug";
import { interruptToTake, takeTrap, pendingIrqs, timerBound } from "./engine/trap";
import { nextEventTime, handlingTop, handled, topKind, topA, topB, EventKind } from "./core/sched";
import { cyclesCeil, psOfCycle, minU64, NEVER } from "./core/time";
import { fifoPush, fifoPop } from "./core/fifo";
import { hbmTick } from "./mem/hbm";
import { gridLoaded, gridComputed, gridRetry } from "./compute/grid";
import { nicPhase, startNextRequest } from "./nic/requester";
import { dbqArrive } from "./nic/doorbells";
import { qpAt } from "./nic/verbs";
import {
  STEP_STOP_WHEN_QUIESCENT, STAT_SCHED_EVENTS, STAT_SCHED_WINDOWS, STAT_ENGINE_WAKEUPS, STAT_MBOX_IN_OVERFLOW, TP_ENGINE_WAKE, TP_ENGINE_START,
} from "./generated/layouts";

/**
 * Runs one engine until its cycle count reaches `limit`, it sleeps, exits or faults; then, while
 * what it runs is private, on ahead up to `horizon` (engine/ahead.ts). An engine ahead of the
 * window waits for the window its clock is in.
 */
function runEngine(dev: Device, h: Hart, limit: u64, horizon: u64): void {
  if (aheadActive(dev, h.id)) {
    if (h.cycle >= limit) return;
    aheadCommit(dev, h); // its window has come: it is where the windows have it
  }
  const logging = debugOf(dev).logCap != 0;
  while (h.state == EngineState.Running && h.cycle < limit) {
    const irq = interruptToTake(h);
    if (irq != 0) {
      takeTrap(dev, h, irq, 0);
      continue;
    }
    // stop early where the timer interrupt would become takeable
    const stop = timerBound(h, limit);
    if (logging) executeLogged(dev, h, stop);
    else if (dev.cfg.profile != 0) executeProfiled(dev, h, stop);
    else if (dev.cfg.jit != 0) executeJit(dev, h, stop);
    else execute(dev, h, stop);
  }
  if (horizon <= limit || logging || dev.cfg.profile != 0 || h.cycle < limit || !aheadMayRun(h)) return;
  const end = timerBound(h, horizon); // no further than its timer's interrupt
  if (end > h.cycle) runAhead(dev, h, end);
}

/** A settle's run again (engine/ahead.ts): private instructions only, to `target`, in the interpreter. */
function replay(dev: Device, h: Hart, target: u64): void {
  while (h.state == EngineState.Running && h.cycle < target) execute(dev, h, target);
}
aheadReplayWith(replay);

/** Runs engine `h` ahead to cycle `end`, or to where it parks before an instruction that is not private. */
function runAhead(dev: Device, h: Hart, end: u64): void {
  aheadStart(dev, h, end);
  aheadMode(dev, true);
  while (h.state == EngineState.Running && h.cycle < end && !aheadParked) {
    if (dev.cfg.jit != 0) executeJit(dev, h, end);
    else execute(dev, h, end);
  }
  const parked = aheadParked;
  aheadMode(dev, false);
  aheadStopped(dev, h, parked);
}

function runEvents(dev: Device): void {
  while (dev.evCount != 0 && nextEventTime(dev) <= dev.now) {
    const t = nextEventTime(dev);
    const kind = topKind(dev), a = topA(dev), b = topB(dev);
    handlingTop(dev);
    statAdd(dev, STAT_SCHED_EVENTS, 1);
    switch (kind) {
      case EventKind.Timer: {
        const h = hartAt(dev, a);
        h.timerPending = 0;
        if (h.state == EngineState.Sleeping && h.wakeGen == b) wake(dev, h, t);
        break;
      }
      case EventKind.HbmTick: hbmTick(dev, t); break;
      case EventKind.NicPhase: nicPhase(dev, a, b, t); break;
      case EventKind.NicStartNext: qpAt(dev, a).startNextPending = 0; startNextRequest(dev, a, t); break;
      case EventKind.Doorbell: dbqArrive(dev, a, t); break;
      case EventKind.Mailbox: mailboxArrive(dev, t); break;
      case EventKind.PortTx: transportPortTx(dev, a, t); break;
      case EventKind.RxArrive: rxArrive(dev, t); break;
      case EventKind.NicTimer: nicTimer(dev, a, t); break;
      case EventKind.MrtTimer: mrtTimer(dev, a, t); break;
      case EventKind.ComputeLoaded: gridLoaded(dev, t); break;
      case EventKind.ComputeDone: gridComputed(dev, t, b); break;
      case EventKind.ComputeRetry: gridRetry(dev, t); break;
      default: break;
    }
    handled(dev);
  }
}

function countInState(dev: Device, state: EngineState): u32 {
  let n: u32 = 0;
  for (let i: u32 = 0; i < dev.cfg.engines; i++) if (hartAt(dev, i).state == state) n++;
  return n;
}

/** True when a ring the host drains is half full: the host should drain before more runs. */
function hostShouldDrain(dev: Device): bool {
  if (dev.trCount * 2 >= dev.trCap) return true;
  for (let i: u32 = 0; i < dev.cfg.engines; i++) if (consoleWantsDrain(hartAt(dev, i))) return true;
  return false;
}


/**
 * Advances the device to exactly `until`: the last window is cut there, and an idle device's
 * clock moves there too. Returns the device time, which is earlier only when a ring needs
 * draining, when the device has failed (Device.fatal), or, with STEP_STOP_WHEN_QUIESCENT, when
 * nothing can ever happen again (the clock then stays where the last thing happened).
 * An engine runs every instruction that starts before a window's end, so its own clock may
 * pass the end by less than one instruction's cost.
 * While a debugger has the device stopped (engine/debug.ts) it returns at once; after its stop
 * the first step finishes the interrupted window, to the end that window had.
 */
export function step(dev: Device, until: u64, flags: u32): u64 {
  const t = stepWindows(dev, until, flags);
  aheadSettleAll(dev);
  return t;
}

/**
 * How far past a window's end an engine may run ahead (engine/ahead.ts): long enough that a
 * window costs a compute-bound engine little, short enough that engines spinning in private
 * loops leave the others' windows and the host's checks between them coming often (at the
 * default 200 ns quantum, 0.8 ms of an engine's time, ~5 ms of the host's for 16 engines), and
 * that a settle has little to run again. Each run ahead saves the pages the engine stores to,
 * the first store to each leaving translated code for the interpreter: at 1,024 quanta the
 * bench's classic kernels left it every ~8,000 instructions; 4,096 ran them 13 % faster,
 * CoreMark-like 7 %.
 */
const AHEAD_QUANTA: u64 = 4096;

function stepWindows(dev: Device, until: u64, flags: u32): u64 {
  const q = dev.cfg.interleaveQuantumPs;
  const d = debugOf(dev);
  if (d.stop != DebugStop.None) return dev.now; // a debugger holds the device: time stands still
  if (d.pausedEnd != 0 && (!finishPausedWindow(dev) || hostShouldDrain(dev))) return dev.now;
  while (dev.now < until && dev.fatal == 0) {
    runEvents(dev);
    if (dev.fatal != 0) break;
    const tNext = nextEventTime(dev);
    if (countInState(dev, EngineState.Running) == 0) {
      const quiescent = tNext == NEVER && countInState(dev, EngineState.Sleeping) == 0;
      if (quiescent && (flags & STEP_STOP_WHEN_QUIESCENT) != 0) break;
      dev.now = tNext < until ? tNext : until;
      continue;
    }
    if (skipWindows(dev, q, minU64(tNext, until))) continue;
    const grid = (dev.now / q + 1) * q;
    const end = minU64(minU64(grid, tNext), until);
    // an engine may run ahead to the next event (the NIC's DMA comes from events), the step's end
    const horizon = minU64(minU64(dev.now + AHEAD_QUANTA * q, tNext), until);
    if (!runWindow(dev, 0, end, horizon)) break;
    if (hostShouldDrain(dev)) break;
  }
  return dev.now;
}

/**
 * Moves the device over the windows before `before` in which no engine runs: every running
 * engine is ahead (engine/ahead.ts) of their ends. Each counts as the window it is (the device's
 * windows statistic); nothing else happens in them, and there is no event before `before`.
 * Returns whether it moved.
 */
function skipWindows(dev: Device, q: u64, before: u64): bool {
  const due = aheadDue(dev);
  if (due == 0) return false;
  const khz = dev.cfg.engineClockKhz;
  let now = dev.now, n: u64 = 0;
  for (;;) {
    const end = (now / q + 1) * q;
    if (end >= before || cyclesCeil(end, khz) > due) break;
    now = end;
    n++;
  }
  if (n == 0) return false;
  dev.now = now;
  statAdd(dev, STAT_SCHED_WINDOWS, n);
  return true;
}

/**
 * Runs the running engines from engine `first` on, in engine order, up to `end`, and moves the
 * device there. Returns false when a debugger's stop interrupted the window (engine/debug.ts):
 * time stays at the window's start and the next step goes on with the engine that stopped.
 */
function runWindow(dev: Device, first: u32, end: u64, horizon: u64): bool {
  const limit = cyclesCeil(end, dev.cfg.engineClockKhz);
  const ahead = cyclesCeil(horizon, dev.cfg.engineClockKhz);
  const d = debugOf(dev);
  for (let i: u32 = first; i < dev.cfg.engines; i++) {
    const h = hartAt(dev, i);
    if (h.state != EngineState.Running) continue;
    aheadWindow(i, limit);
    if (d.on == 0) runEngine(dev, h, limit, ahead);
    else if (runEngineDebug(dev, h, limit)) {
      aheadWindow(AHEAD_NO_ENGINE, 0);
      d.pausedEnd = end;
      d.pausedNext = i;
      return false;
    }
  }
  aheadWindow(AHEAD_NO_ENGINE, 0);
  dev.now = end;
  statAdd(dev, STAT_SCHED_WINDOWS, 1);
  return true;
}

/** The rest of a window a debugger's stop interrupted; false when it stopped again. */
function finishPausedWindow(dev: Device): bool {
  const d = debugOf(dev);
  const end = d.pausedEnd;
  d.pausedEnd = 0;
  return runWindow(dev, d.pausedNext, end, end);
}

/** True when an engine's console or the trace ring holds something for the host to read. */
export function hasOutput(dev: Device): bool {
  if (dev.trCount != 0) return true;
  for (let i: u32 = 0; i < dev.cfg.engines; i++) {
    const h = hartAt(dev, i);
    if (h.console.count != 0 || h.consoleLines.count != 0) return true;
  }
  return false;
}

/** When something next happens in the device: now while an engine runs, else its next event (NEVER: nothing ever will). */
export function nextActivity(dev: Device): u64 {
  if (countInState(dev, EngineState.Running) != 0) return dev.now;
  return nextEventTime(dev);
}

/** Starts engine `i` at `pc` at the current device time. */
export function startEngine(dev: Device, i: u32, pc: u32): void {
  const h = hartAt(dev, i);
  h.pc = pc;
  h.state = EngineState.Running;
  h.cycle = cyclesCeil(dev.now, dev.cfg.engineClockKhz);
  tracePoint(dev, dev.now, TP_ENGINE_START, i, pc);
}

