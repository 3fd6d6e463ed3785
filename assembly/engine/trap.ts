// Trap entry and interrupt state (privileged spec 3.1.6, 3.1.7, 3.1.9, 3.3.2).

import { Device, statAdd, tracePoint } from "../core/device";
import { Hart, EngineState, CAUSE_INTERRUPT, MSTATUS_MIE, MSTATUS_MPIE, MSTATUS_MPP, MIP_MTIP, MIP_MEIP, MIP_MSIP, IRQ_EXTERNAL, IRQ_TIMER, IRQ_SOFTWARE } from "./hart";
import { psOfCycle } from "../core/time";
import {
  STAT_ENGINE_TRAPS, STAT_ENGINE_INTERRUPTS, STAT_ENGINE_FAULTS, TP_ENGINE_TRAP, TP_ENGINE_FAULT, TP_ENGINE_MRET,
} from "../generated/layouts";

/** mip as the engine sees it now: MTIP from its own time against mtimecmp, MEIP from its mailbox. */
@inline export function pendingIrqs(h: Hart): u32 {
  let mip: u32 = 0;
  if (h.cycle >= h.mtimecmp) mip |= MIP_MTIP;
  if (h.mboxIn.count != 0 || h.nicIrq.count != 0) mip |= MIP_MEIP;
  if (h.msip != 0) mip |= MIP_MSIP;
  return mip;
}

/** Where engine `h` must stop, at `limit` or earlier: its timer's compare, when the timer interrupt is enabled and would become takeable first. */
@inline export function timerBound(h: Hart, limit: u64): u64 {
  return (h.mstatus & MSTATUS_MIE) != 0 && (h.mie & MIP_MTIP) != 0 && h.mtimecmp < limit ? h.mtimecmp : limit;
}

/** Highest-priority interrupt pending and enabled (external, then software, then timer, as the privileged spec orders them), or 0. */
@inline export function interruptToTake(h: Hart): u32 {
  if ((h.mstatus & MSTATUS_MIE) == 0) return 0;
  const p = pendingIrqs(h) & h.mie;
  if (p & MIP_MEIP) return CAUSE_INTERRUPT | IRQ_EXTERNAL;
  if (p & MIP_MSIP) return CAUSE_INTERRUPT | IRQ_SOFTWARE;
  if (p & MIP_MTIP) return CAUSE_INTERRUPT | IRQ_TIMER;
  return 0;
}

/**
 * Takes a trap at h.pc (the faulting instruction, or the next one for an interrupt).
 * With no handler installed (mtvec base 0) the engine stops in state Faulted instead.
 */
export function takeTrap(dev: Device, h: Hart, cause: u32, tval: u32): void {
  const epc = h.pc;
  h.mepc = epc & ~3;
  h.mcause = cause;
  h.mtval = tval;
  h.cycle += <u64>dev.cfg.cpiTrap;
  const t = psOfCycle(h.cycle, dev.cfg.engineClockKhz);
  const base = h.mtvec & ~3;
  if (base == 0) {
    h.state = EngineState.Faulted;
    statAdd(dev, STAT_ENGINE_FAULTS, 1);
    tracePoint(dev, t, TP_ENGINE_FAULT, h.id, cause);
    return;
  }
  const mie = h.mstatus & MSTATUS_MIE;
  h.mstatus = (h.mstatus & ~(MSTATUS_MIE | MSTATUS_MPIE)) | (mie ? MSTATUS_MPIE : 0) | MSTATUS_MPP;
  const isInterrupt = (cause & CAUSE_INTERRUPT) != 0;
  h.pc = isInterrupt && (h.mtvec & 1) ? base + ((cause & 0x7fffffff) << 2) : base;
  statAdd(dev, isInterrupt ? STAT_ENGINE_INTERRUPTS : STAT_ENGINE_TRAPS, 1);
  tracePoint(dev, t, TP_ENGINE_TRAP, h.id, cause);
}

/** MRET: back to mepc with MIE restored from MPIE. */
export function mret(dev: Device, h: Hart): void {
  const mpie = h.mstatus & MSTATUS_MPIE;
  h.mstatus = (h.mstatus & ~MSTATUS_MIE) | (mpie ? MSTATUS_MIE : 0) | MSTATUS_MPIE | MSTATUS_MPP;
  h.pc = h.mepc;
  tracePoint(dev, psOfCycle(h.cycle, dev.cfg.engineClockKhz), TP_ENGINE_MRET, h.id, h.mepc);
}
