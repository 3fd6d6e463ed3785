// Queue-pair state the NIC keeps apart from any request: which announced send entries are
// runnable when (ready ranges), and the error and reset transitions, which complete or discard
// what is outstanding. Both halves of the NIC and the control path move QPs through here.

import { Device, statAdd } from "../core/device";
import { Qp, qpAt, qpRanges, sqSlot, rqSlot, RANGES, QP_RANGE_BYTES } from "./verbs";
import { cqPush } from "./completions";
import { outFlush } from "./outstanding";
import { maxU64 } from "../core/time";
import { OPCODE_RECV, STATUS_WR_FLUSH_ERR, QP_STATE_RESET, QP_STATE_ERR, WQE_WR_ID, WQE_OPCODE, STAT_NIC_FLUSHED } from "../generated/layouts";

// ---- ready ranges: each announced entry becomes runnable at the time its fetch completes

export function rangePush(dev: Device, q: Qp, qpn: u32, end: u32, time: u64): void {
  const r = qpRanges(dev, qpn);
  const n = q.nranges;
  if (n > 0) {
    const last = r + <usize>(n - 1) * 16;
    const lastT = load<u64>(last, 8);
    // ranges complete in order: a later range is never ready before an earlier one
    if (time <= lastT || n == RANGES) {
      store<u32>(last, end);
      store<u64>(last, maxU64(time, lastT), 8);
      return;
    }
  }
  store<u32>(r + <usize>n * 16, end);
  store<u64>(r + <usize>n * 16, time, 8);
  q.nranges = n + 1;
}

/** When entry sqCi becomes runnable; drops ranges already consumed. */
export function readyTime(dev: Device, q: Qp, qpn: u32): u64 {
  const r = qpRanges(dev, qpn);
  while (q.nranges > 0 && <i32>(load<u32>(r) - q.sqCi) <= 0) {
    memory.copy(r, r + 16, QP_RANGE_BYTES - 16);
    q.nranges--;
  }
  return q.nranges > 0 ? load<u64>(r, 8) : 0;
}

// ---- error and reset

/** Completes every outstanding entry of an errored QP with WR_FLUSH_ERR (IB spec 10.7.3.1). */
export function flush(dev: Device, qpn: u32, t: u64): void {
  const q = qpAt(dev, qpn);
  // messages sent and not yet acknowledged are older than anything in the queue
  outFlush(dev, qpn, t);
  // a request in flight completes by itself; the entries behind it complete now, once
  let from = q.busy ? q.sqCi + 1 : q.sqCi;
  if (<i32>(q.sqFlushed - from) > 0) from = q.sqFlushed;
  for (let i = from; i != q.announced; i++) {
    const w = sqSlot(dev, q, i);
    if (!cqPush(dev, q.sendCq, t, load<u64>(w + WQE_WR_ID), 0, 0, false, qpn, STATUS_WR_FLUSH_ERR, load<u8>(w + WQE_OPCODE))) break;
    statAdd(dev, STAT_NIC_FLUSHED, 1);
  }
  q.sqFlushed = q.announced;
  if (!q.busy) q.sqCi = q.announced;
  for (; q.rqCi != q.rqPi; q.rqCi++) {
    const w = rqSlot(dev, q, q.rqCi);
    if (!cqPush(dev, q.recvCq, t, load<u64>(w + WQE_WR_ID), 0, 0, false, qpn, STATUS_WR_FLUSH_ERR, OPCODE_RECV)) break;
    statAdd(dev, STAT_NIC_FLUSHED, 1);
  }
  q.rqCi = q.rqPi;
}

/** Moves a QP to the error state and flushes it. */
export function qpError(dev: Device, qpn: u32, t: u64): void {
  const q = qpAt(dev, qpn);
  q.state = QP_STATE_ERR;
  flush(dev, qpn, t);
}

/** Moves a QP to RESET: every outstanding entry is discarded without a completion (IB spec 10.3.1). */
export function qpReset(dev: Device, qpn: u32): void {
  const q = qpAt(dev, qpn);
  // the entries are skipped, not forgotten: indices stay in step with the poster's own
  q.sqCi = q.announced;
  q.sqFlushed = q.announced;
  q.rqCi = q.rqPi;
  q.nranges = 0;
  // RoCEv2 starts again from PSN 0 on both sides
  q.sqPsn = 0;
  q.ePsn = 0;
  q.msn = 0;
  q.rxOp = 0;
  q.nakSent = 0;
  q.rateMbps = 0; // DCQCN starts again at line rate
  q.outCount = 0; // sent and not acknowledged: discarded too
  q.outAcked = 0;
  q.rtxActive = 0;
  q.lastCnpAt = 0;
  q.state = QP_STATE_RESET;
}
