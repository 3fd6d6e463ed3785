// The engine MMIO window (layouts/memmap.json): console, exit, device facts, machine timer
// and the host mailbox. Accesses must hit a register's address exactly; anything else is an
// access fault. Loads return MMIO_FAULT for a fault.

import { Device, statAdd, tracePoint } from "./device";
import { Hart, EngineState } from "./hart";
import {
  SYS_BASE, SYS_CONSOLE_TX, SYS_EXIT, SYS_NUM_ENGINES, SYS_SRAM_BYTES, SYS_HBM_BYTES, SYS_CLOCK_KHZ,
  TIMER_BASE, TIMER_MTIME_LO, TIMER_MTIME_HI, TIMER_MTIMECMP_LO, TIMER_MTIMECMP_HI,
  MBOX_BASE, MBOX_OUT_DATA, MBOX_OUT_FREE, MBOX_IN_DATA, MBOX_IN_COUNT,
  STAT_CONSOLE_DROPPED, STAT_MBOX_OUT_OVERFLOW, TP_ENGINE_EXIT, STAT_NIC_EXPRESS_FULL,
  NIC_BASE, NIC_CMD, NIC_CMD_ARG0, NIC_CMD_RESULT, NIC_SQ_DB, NIC_RQ_DB, NIC_CQ_CI, NIC_CQ_ARM, NIC_IRQ_COUNT, NIC_IRQ_CQN, NIC_EXPRESS, NIC_EXPRESS_SIZE, WQE_SIZE,
} from "./generated/layouts";
import { psOfCycle } from "./time";
import { fifoPush, fifoPop } from "./fifo";
import { schedule, EventKind } from "./sched";
import { cqSetCi, cqAt } from "./verbs";
import { expressClaim } from "./nic";
import { nicCommand, cmdArg, cmdResult } from "./nic-cmd";

export const MMIO_FAULT: i64 = -1;

/** Reads the register at `addr`; MMIO_FAULT if there is none or it is write-only. */
export function mmioLoad(dev: Device, h: Hart, addr: u32): i64 {
  switch (addr) {
    case SYS_BASE + SYS_NUM_ENGINES: return <i64>dev.engines;
    case SYS_BASE + SYS_SRAM_BYTES: return <i64>dev.sramBytes;
    case SYS_BASE + SYS_HBM_BYTES: return <i64>dev.hbmBytes;
    case SYS_BASE + SYS_CLOCK_KHZ: return <i64>(<u32>dev.khz);
    case TIMER_BASE + TIMER_MTIME_LO: return <i64>(<u32>h.cycle);
    case TIMER_BASE + TIMER_MTIME_HI: return <i64>(<u32>(h.cycle >> 32));
    case TIMER_BASE + TIMER_MTIMECMP_LO: return <i64>(<u32>h.mtimecmp);
    case TIMER_BASE + TIMER_MTIMECMP_HI: return <i64>(<u32>(h.mtimecmp >> 32));
    case MBOX_BASE + MBOX_OUT_FREE: return <i64>(h.mboxOut.cap - h.mboxOut.count);
    case MBOX_BASE + MBOX_IN_COUNT: return <i64>h.mboxIn.count;
    case MBOX_BASE + MBOX_IN_DATA: return h.mboxIn.count == 0 ? 0 : <i64>fifoPop(h.mboxIn);
    case NIC_BASE + NIC_IRQ_COUNT: return <i64>h.nicIrq.count;
    case NIC_BASE + NIC_IRQ_CQN: return h.nicIrq.count == 0 ? <i64>0xffffffff : <i64>fifoPop(h.nicIrq);
    case NIC_BASE + NIC_CMD_RESULT: return <i64>cmdResult(h);
    default: return MMIO_FAULT;
  }
}

/**
 * Writes the register at `addr`; returns the cycles the store costs the engine (cpiMmio; the
 * express window's cpiExpress; a NIC command's stall on top), or MMIO_FAULT if there is no
 * such register or it is read-only.
 */
export function mmioStore(dev: Device, h: Hart, addr: u32, v: u32): i64 {
  const cost = <i64>dev.cpiMmio;
  switch (addr) {
    case SYS_BASE + SYS_CONSOLE_TX:
      if (!fifoPush(h.console, v)) statAdd(dev, STAT_CONSOLE_DROPPED, 1);
      return cost;
    case SYS_BASE + SYS_EXIT: {
      h.exitCode = v;
      h.state = EngineState.Exited;
      tracePoint(dev, psOfCycle(h.cycle, dev.khz), TP_ENGINE_EXIT, h.id, v);
      return cost;
    }
    case TIMER_BASE + TIMER_MTIMECMP_LO: h.mtimecmp = (h.mtimecmp & 0xffffffff00000000) | <u64>v; return cost;
    case TIMER_BASE + TIMER_MTIMECMP_HI: h.mtimecmp = (h.mtimecmp & 0xffffffff) | (<u64>v << 32); return cost;
    case MBOX_BASE + MBOX_OUT_DATA:
      if (!fifoPush(h.mboxOut, v)) statAdd(dev, STAT_MBOX_OUT_OVERFLOW, 1);
      return cost;
    case NIC_BASE + NIC_SQ_DB: case NIC_BASE + NIC_RQ_DB: {
      // the doorbell reaches the NIC's logic after nicDoorbellLatencyPs
      const kind = addr == NIC_BASE + NIC_SQ_DB ? EventKind.NicSqDoorbell : EventKind.NicRqDoorbell;
      schedule(dev, psOfCycle(h.cycle, dev.khz) + dev.nicDoorbellLatencyPs, kind, (h.id << 16) | (v >> 16), v & 0xffff);
      return cost;
    }
    case NIC_BASE + NIC_CQ_CI: cqSetCi(dev, v >> 16, v & 0xffff); return cost;
    case NIC_BASE + NIC_CMD: return cost + <i64>nicCommand(dev, h, v);
    case NIC_BASE + NIC_CQ_ARM: {
      if (v < dev.maxCqs && cqAt(dev, v).valid) cqAt(dev, v).armEngine = h.id;
      return cost;
    }
    default: {
      const argOff = addr - (NIC_BASE + NIC_CMD_ARG0);
      if (argOff < 32) { cmdArg(h, argOff >> 2, v); return cost; }
      const off = addr - (NIC_BASE + NIC_EXPRESS);
      if (off < NIC_EXPRESS_SIZE) {
        const buf = dev.engExpress + <usize>h.id * WQE_SIZE;
        store<u32>(buf + off, v);
        // the store to the last word is the doorbell (docs/nic.md)
        if (off == NIC_EXPRESS_SIZE - 4) {
          const slot = expressClaim(dev, buf);
          if (slot < 0) statAdd(dev, STAT_NIC_EXPRESS_FULL, 1);
          else schedule(dev, psOfCycle(h.cycle, dev.khz) + dev.nicDoorbellLatencyPs, EventKind.NicExpress, <u32>slot, h.id);
        }
        return <i64>dev.cpiExpress;
      }
      return MMIO_FAULT;
    }
  }
}
