// The engine MMIO window (layouts/memmap.json): console, exit, device facts, machine timer,
// the host mailbox, the NIC interface and software interrupts between engines. Accesses must hit a register's address exactly; anything else is an
// access fault. Loads return MMIO_FAULT for a fault. A byte or halfword store to a register
// writes the low bytes of the value; the express window takes stores of any width at any
// (aligned) offset and writes exactly those bytes.

import { nicOf } from "../nic/state";
import { Device, statAdd, tracePoint } from "../core/device";
import { Hart, EngineState } from "./hart";
import { hartAt } from "./engines";
import { interruptEngine } from "./wake";
import { psOfCycle, cyclesCeil } from "../core/time";
import { fifoPush, fifoPop } from "../core/fifo";
import { consoleWrite } from "./console";
import { cqSetCi, cqAt } from "../nic/verbs";
import { DbKind, dbqAt, dbqRoom, dbqPush, dbqHeadArrival, dbqStall } from "../nic/doorbells";
import { nicCommand, cmdArg, cmdResult, ownsCq } from "../nic/commands";
import {
  SYS_BASE, SYS_CONSOLE_TX, SYS_EXIT, SYS_NUM_ENGINES, SYS_SRAM_BYTES, SYS_HBM_BYTES, SYS_CLOCK_KHZ,
  TIMER_BASE, TIMER_MTIME_LO, TIMER_MTIME_HI, TIMER_MTIMECMP_LO, TIMER_MTIMECMP_HI,
  MBOX_BASE, MBOX_OUT_DATA, MBOX_OUT_FREE, MBOX_IN_DATA, MBOX_IN_COUNT, SWI_BASE, SWI_MSIP, SWI_RAISE, STAT_ENGINE_BAD_RAISE,
  STAT_MBOX_OUT_OVERFLOW, TP_ENGINE_EXIT, STAT_NIC_BAD_DOORBELL,
  NIC_BASE, NIC_CMD, NIC_CMD_ARG0, NIC_CMD_RESULT, NIC_SQ_DB, NIC_RQ_DB, NIC_CQ_CI, NIC_CQ_ARM, NIC_IRQ_COUNT, NIC_IRQ_CQN, NIC_EXPRESS, NIC_EXPRESS_SIZE, WQE_SIZE, WQE_QPN,
} from "../generated/layouts";

export const MMIO_FAULT: i64 = -1;
/** Set in a store's result when it cannot complete yet: the engine waits the cycles in the low bits and executes it again. */
export const MMIO_RETRY: i64 = 1 << 40;

/** Reads the register at `addr`; MMIO_FAULT if there is none or it is write-only. */
export function mmioLoad(dev: Device, h: Hart, addr: u32): i64 {
  switch (addr) {
    case SYS_BASE + SYS_NUM_ENGINES: return <i64>dev.cfg.engines;
    case SYS_BASE + SYS_SRAM_BYTES: return <i64>dev.cfg.sramBytes;
    case SYS_BASE + SYS_HBM_BYTES: return <i64>dev.cfg.hbmBytes;
    case SYS_BASE + SYS_CLOCK_KHZ: return <i64>(<u32>dev.cfg.engineClockKhz);
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
    case SWI_BASE + SWI_MSIP: return <i64>h.msip;
    default: return MMIO_FAULT;
  }
}

/**
 * Writes the register at `addr`; returns the cycles the store costs the engine (cpiMmio; the
 * express window's cpiExpress; a NIC command's stall on top), or MMIO_FAULT if there is no
 * such register or it is read-only.
 */
export function mmioStore(dev: Device, h: Hart, addr: u32, v: u32, bytes: u32): i64 {
  const cost = <i64>dev.cfg.cpiMmio;
  const off = addr - (NIC_BASE + NIC_EXPRESS);
  if (off < NIC_EXPRESS_SIZE) return expressStore(dev, h, off, v, bytes);
  if (bytes < 4) v &= (1 << (bytes << 3)) - 1;
  switch (addr) {
    case SYS_BASE + SYS_CONSOLE_TX:
      consoleWrite(dev, h, v);
      return cost;
    case SYS_BASE + SYS_EXIT: {
      h.exitCode = v;
      h.state = EngineState.Exited;
      tracePoint(dev, psOfCycle(h.cycle, dev.cfg.engineClockKhz), TP_ENGINE_EXIT, h.id, v);
      return cost;
    }
    case TIMER_BASE + TIMER_MTIMECMP_LO: h.mtimecmp = (h.mtimecmp & 0xffffffff00000000) | <u64>v; return cost;
    case TIMER_BASE + TIMER_MTIMECMP_HI: h.mtimecmp = (h.mtimecmp & 0xffffffff) | (<u64>v << 32); return cost;
    case MBOX_BASE + MBOX_OUT_DATA:
      if (!fifoPush(h.mboxOut, v)) statAdd(dev, STAT_MBOX_OUT_OVERFLOW, 1);
      return cost;
    case SWI_BASE + SWI_MSIP: h.msip = v & 1; return cost;
    case SWI_BASE + SWI_RAISE:
      if (v >= dev.cfg.engines) { statAdd(dev, STAT_ENGINE_BAD_RAISE, 1); return cost; }
      hartAt(dev, v).msip = 1;
      interruptEngine(dev, v, psOfCycle(h.cycle, dev.cfg.engineClockKhz));
      return cost;
    case NIC_BASE + NIC_SQ_DB: case NIC_BASE + NIC_RQ_DB: {
      const kind = addr == NIC_BASE + NIC_SQ_DB ? DbKind.Sq : DbKind.Rq;
      return engineDoorbell(dev, h, kind, v >> 16, v & 0xffff, 0, cost);
    }
    // an engine reports consumption of, and arms, only CQs of its own; other writes are dropped and counted
    case NIC_BASE + NIC_CQ_CI:
      if (ownsCq(dev, h.id, v >> 16)) cqSetCi(dev, v >> 16, v & 0xffff);
      else statAdd(dev, STAT_NIC_BAD_DOORBELL, 1);
      return cost;
    case NIC_BASE + NIC_CMD: return cost + <i64>nicCommand(dev, h, v);
    case NIC_BASE + NIC_CQ_ARM: {
      if (ownsCq(dev, h.id, v)) cqAt(dev, v).armEngine = h.id;
      else statAdd(dev, STAT_NIC_BAD_DOORBELL, 1);
      return cost;
    }
    default: {
      const argOff = addr - (NIC_BASE + NIC_CMD_ARG0);
      if (argOff < 32 && (argOff & 3) == 0) { cmdArg(h, argOff >> 2, v); return cost; }
      return MMIO_FAULT;
    }
  }
}

/** A store of `bytes` bytes at offset `off` of the express window; the one that writes its last byte is the doorbell. */
function expressStore(dev: Device, h: Hart, off: u32, v: u32, bytes: u32): i64 {
  const buf = nicOf(dev).engExpress + <usize>h.id * WQE_SIZE;
  if (bytes == 1) store<u8>(buf + off, <u8>v);
  else if (bytes == 2) store<u16>(buf + off, <u16>v);
  else store<u32>(buf + off, v);
  const cost = <i64>dev.cfg.cpiExpress;
  if (off + bytes != NIC_EXPRESS_SIZE) return cost;
  return engineDoorbell(dev, h, DbKind.Express, load<u32>(buf + WQE_QPN), 0, buf, cost);
}

/**
 * Sends a doorbell from engine `h` to the NIC, arriving after nicDoorbellLatencyPs. When the
 * engine's doorbell queue is full the store waits for the oldest one to arrive and runs again.
 */
function engineDoorbell(dev: Device, h: Hart, kind: DbKind, qpn: u32, pi16: u32, wqe: usize, cost: i64): i64 {
  const q = dbqAt(dev, h.id);
  if (dbqRoom(q) == 0) {
    dbqStall(dev);
    const arrives = cyclesCeil(dbqHeadArrival(q), dev.cfg.engineClockKhz);
    const wait = arrives > h.cycle + <u64>cost ? arrives - h.cycle : <u64>cost;
    return MMIO_RETRY | <i64>wait;
  }
  dbqPush(dev, h.id, psOfCycle(h.cycle, dev.cfg.engineClockKhz) + dev.cfg.nicDoorbellLatencyPs, kind, qpn, pi16, wqe);
  return cost;
}
