// Queue-pair state the NIC keeps apart from any request's phases: which announced send entries
// are runnable when (ready ranges), the head's completion, and the error and reset transitions,
// which complete or discard what is outstanding. Both halves of the NIC and the control path
// move QPs through here.

import { nicOf } from "./state";
import { Device, statAdd, tracePoint } from "../core/device";
import { Qp, qpAt, qpWqe, qpRanges, sqSlot, rqSlot, RANGES, QP_RANGE_BYTES, NOT_ARMED } from "./verbs";
import { cqPush } from "./completions";
import { outFlush } from "./outstanding";
import { NicPhase, FLOW_ENDED, REQ_REMOTE, REQ_REDUCE, phaseAt, finishRequest } from "./phases";
import { freeBlock } from "./local-ops";
import { unschedule, EventKind } from "../core/sched";
import { maxU64 } from "../core/time";
import {
  OPCODE_RECV, STATUS_SUCCESS, STATUS_WR_FLUSH_ERR, QP_STATE_RESET, QP_STATE_ERR, WQE_WR_ID, WQE_OPCODE, WQE_FLAGS, WQE_LENGTH, WR_FLAG_SIGNALED,
  STAT_NIC_FLUSHED, STAT_NIC_ERRORS, TP_NIC_WQE_DONE,
} from "../generated/layouts";

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

// ---- completing the head, error and reset

/**
 * The request in flight (its WQE copied to qpWqe) is over with `status`: its completion (when
 * signaled, or an error) and the queue moves past it. False when its CQ is overrun.
 */
export function completeHead(dev: Device, q: Qp, qpn: u32, status: u32, t: u64): bool {
  const w = qpWqe(dev, qpn);
  const signaled = q.sigAll != 0 || (load<u8>(w + WQE_FLAGS) & WR_FLAG_SIGNALED) != 0 || status != STATUS_SUCCESS;
  let ok = true;
  if (signaled) ok = cqPush(dev, q.sendCq, t, load<u64>(w + WQE_WR_ID), status == STATUS_SUCCESS ? load<u32>(w + WQE_LENGTH) : 0, 0, false, qpn, status, load<u8>(w + WQE_OPCODE));
  tracePoint(dev, t, TP_NIC_WQE_DONE, 0xffff, (qpn << 8) | status);
  if (status == STATUS_WR_FLUSH_ERR) statAdd(dev, STAT_NIC_FLUSHED, 1);
  else if (status != STATUS_SUCCESS) statAdd(dev, STAT_NIC_ERRORS, 1);
  finishRequest(q);
  return ok;
}

/**
 * Ends the request in flight at once: its QP went to ERR (IB spec 10.3.1), and the entries
 * behind it are flushed next, since a send queue completes in the order it was posted. A
 * request that has executed keeps its outcome: one whose checks failed, or one a RoCEv2 answer
 * completed (bytes landed or refused), completes with that status; one still executing (bytes
 * not placed, answer not in) completes with WR_FLUSH_ERR and places nothing. Its pending phase
 * is dropped, so a QP created in this slot starts with none (an HBM flow's end still comes: it
 * frees a slot of the flow table); a reduction block it holds goes to the next QP waiting.
 */
function endInFlight(dev: Device, q: Qp, qpn: u32, t: u64): void {
  const answered = q.phase == NicPhase.Done && (q.reqFlags & REQ_REMOTE) != 0;
  completeHead(dev, q, qpn, q.status != STATUS_SUCCESS || answered ? q.status : STATUS_WR_FLUSH_ERR, t);
  q.gen++;
  unschedule(dev, EventKind.NicPhase, qpn, FLOW_ENDED);
  if (q.waitFlow) {
    q.waitFlow = 0;
    nicOf(dev).flowWaiters--;
  }
  if (q.waitBlock != NOT_ARMED) q.waitBlock = NOT_ARMED;
  else if (q.reqFlags & REQ_REDUCE) {
    // the waiter starts again in an event of its own at `t`, as a retry does
    const next = freeBlock(dev, q.reqBlock);
    if (next >= 0) phaseAt(dev, qpAt(dev, <u32>next), <u32>next, NicPhase.Wait, t);
  }
}

/**
 * Completes every outstanding entry of an errored QP (IB spec 10.7.3.1), in the order posted:
 * messages sent and not acknowledged, the request in flight (endInFlight), then the rest with
 * WR_FLUSH_ERR, each once. A request whose Done is running (it made its own QP fail, as a SEND
 * to itself does) completes itself first; its startNextRequest flushes the rest.
 */
export function flush(dev: Device, qpn: u32, t: u64): void {
  const q = qpAt(dev, qpn);
  outFlush(dev, qpn, t);
  if (q.busy && q.phase != NicPhase.Completing) endInFlight(dev, q, qpn, t);
  if (!q.busy) {
    for (let i = q.sqCi; i != q.announced; i++) {
      const w = sqSlot(dev, q, i);
      if (!cqPush(dev, q.sendCq, t, load<u64>(w + WQE_WR_ID), 0, 0, false, qpn, STATUS_WR_FLUSH_ERR, load<u8>(w + WQE_OPCODE))) break;
      statAdd(dev, STAT_NIC_FLUSHED, 1);
    }
    q.sqCi = q.announced;
  }
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
  q.rqCi = q.rqPi;
  q.nranges = 0;
  // the request's PSNs start again from 0 (the transport's own state: transportReset)
  q.sqPsn = 0;
  q.outCount = 0; // sent and not acknowledged: discarded too
  q.outAcked = 0;
  q.rtxActive = 0;
  q.state = QP_STATE_RESET;
}
