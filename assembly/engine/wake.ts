// Waking engines: an interrupt source that becomes pending wakes an engine sleeping in wfi.
// Blocks that raise interrupts (the NIC, the mailbox, timers) call this; it only changes the
// engine's state and clock, and the step loop (run.ts) runs it in its next window.

import { Device, statAdd, tracePoint } from "../core/device";
import { Hart, EngineState } from "./hart";
import { hartAt } from "./engines";
import { pendingIrqs } from "./trap";
import { cyclesCeil, psOfCycle } from "../core/time";
import { STAT_ENGINE_WAKEUPS, TP_ENGINE_WAKE } from "../generated/layouts";

/** An interrupt source of engine `e` became pending at `t`: wake it if it sleeps for it. */
export function interruptEngine(dev: Device, e: u32, t: u64): void {
  const h = hartAt(dev, e);
  if (h.state == EngineState.Sleeping && (pendingIrqs(h) & h.mie) != 0) wake(dev, h, t);
}

/** Wakes a sleeping engine at time `t` (not before its own local time). */
export function wake(dev: Device, h: Hart, t: u64): void {
  h.state = EngineState.Running;
  if (t > h.sleepStart) h.sleepPs += t - h.sleepStart;
  const c = cyclesCeil(t, dev.cfg.engineClockKhz);
  if (c > h.cycle) h.cycle = c;
  statAdd(dev, STAT_ENGINE_WAKEUPS, 1);
  tracePoint(dev, psOfCycle(h.cycle, dev.cfg.engineClockKhz), TP_ENGINE_WAKE, h.id, pendingIrqs(h));
}

