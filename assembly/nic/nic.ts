// The NIC front end: doorbells, work-request execution for loopback between queue pairs of
// this device, local REDUCE and COPY, completions and completion interrupts.
// Each send queue runs its requests in order, one at a time, through phases:
//   Head  decode and key checks (nicWqeLatencyPs), then reading the source: over PCIe from
//         host memory, or the HBM latency;
//   Flow  the HBM part of the transfer as a shared-bandwidth stream (hbm.ts);
//   Tail  writing a host-memory destination over PCIe, then the completion entry;
//   Done  the bytes land, completions are written, the next request starts.
// Retries (receiver not ready, target not answering) wait in phase Wait and start again.
// Placement happens at Done: nothing of a request is visible before it completes.

import { Device, statAdd, tracePoint } from "../core/device";
import { hartAt } from "../engine/hart";
import { Qp, qpAt, cqAt, qpRanges, qpWqe, sqSlot, rqSlot, mrCheck, OWNER_HOST, NOT_ARMED, RANGES, QP_RANGE_BYTES } from "./verbs";
import { dmaPtr, dmaIsHbm, dmaIsHost, dmaIsSram } from "../mem/dma";
import { schedule, EventKind } from "../core/sched";
import { hbmStart, FlowClass } from "../mem/hbm";
import { pcieRead, pcieWrite, PcieDir } from "../mem/pcie";
import { fifoPush } from "../core/fifo";
import { reduceKernel, reduceElementBytes, reduceOpKnown } from "../mem/reduce";
import { interruptEngine } from "../engine/wake";
import { maxU64 } from "../core/time";
import {
  OPCODE_RDMA_WRITE, OPCODE_RDMA_WRITE_WITH_IMM, OPCODE_SEND, OPCODE_SEND_WITH_IMM, OPCODE_RDMA_READ, OPCODE_REDUCE,
  OPCODE_COPY, OPCODE_RECV, WR_FLAG_SIGNALED,
  STATUS_SUCCESS, STATUS_LOC_LEN_ERR, STATUS_LOC_QP_OP_ERR, STATUS_LOC_PROT_ERR, STATUS_WR_FLUSH_ERR, STATUS_REM_INV_REQ_ERR,
  STATUS_REM_ACCESS_ERR, STATUS_REM_OP_ERR, STATUS_RETRY_EXC_ERR, STATUS_RNR_RETRY_EXC_ERR,
  ACCESS_LOCAL_WRITE, ACCESS_REMOTE_WRITE, ACCESS_REMOTE_READ, QP_STATE_RESET, QP_STATE_RTR, QP_STATE_RTS, QP_STATE_ERR,
  WQE_SIZE, WQE_OPCODE, WQE_FLAGS, WQE_DTYPE, WQE_REDOP, WQE_QPN, WQE_WR_ID, WQE_LADDR, WQE_LENGTH, WQE_LKEY, WQE_RADDR,
  WQE_RKEY, WQE_IMM, WQE_NSRC, WQE_SRC_ADDR, WQE_SRC_LKEY, WQE_SRC_ADDR_STRIDE,
  CQE_SIZE, CQE_WR_ID, CQE_BYTE_LEN, CQE_IMM, CQE_QPN, CQE_STATUS, CQE_OPCODE, CQE_FLAGS, CQE_OWNER,
  STAT_NIC_WQES, STAT_NIC_ERRORS, STAT_NIC_FLUSHED, STAT_NIC_BAD_DOORBELL, STAT_NIC_RNR_RETRIES, STAT_NIC_TRANSPORT_RETRIES,
  STAT_CQ_OVERRUN, STAT_HBM_FLOW_FULL, TP_NIC_DOORBELL, TP_NIC_WQE_START, TP_NIC_WQE_DONE, TP_NIC_CQE,
} from "../generated/layouts";

export const enum NicPhase {
  Idle = 0,
  Head = 1,
  Flow = 2,
  Tail = 3,
  Done = 4,
  Wait = 5, // a retry timer, or the reduction block
}

// request flags kept in Qp.reqFlags
const REQ_DST_HOST: u32 = 1;
const REQ_REDUCE: u32 = 2;
const REQ_DST_SRAM: u32 = 4;

// ---- ready ranges: each announced entry becomes runnable at the time its fetch completes

function rangePush(dev: Device, q: Qp, qpn: u32, end: u32, time: u64): void {
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
function readyTime(dev: Device, q: Qp, qpn: u32): u64 {
  const r = qpRanges(dev, qpn);
  while (q.nranges > 0 && <i32>(load<u32>(r) - q.sqCi) <= 0) {
    memory.copy(r, r + 16, QP_RANGE_BYTES - 16);
    q.nranges--;
  }
  return q.nranges > 0 ? load<u64>(r, 8) : 0;
}

// ---- completions

/** Writes a CQE; false when the CQ is (or just became) overrun. */
function cqPush(dev: Device, cqn: u32, t: u64, wrId: u64, byteLen: u32, imm: u32, hasImm: bool, qpn: u32, status: u32, opcode: u32): bool {
  if (cqn >= dev.maxCqs) return false;
  const c = cqAt(dev, cqn);
  if (!c.valid) return false;
  if (c.overrun || c.pi - c.ci >= c.depth) {
    c.overrun = 1;
    statAdd(dev, STAT_CQ_OVERRUN, 1);
    return false;
  }
  const p = dmaPtr(dev, c.base + <u64>(c.pi % c.depth) * CQE_SIZE, CQE_SIZE);
  store<u64>(p + CQE_WR_ID, wrId);
  store<u32>(p + CQE_BYTE_LEN, byteLen);
  store<u32>(p + CQE_IMM, hasImm ? imm : 0);
  store<u32>(p + CQE_QPN, qpn);
  store<u8>(p + CQE_STATUS, <u8>status);
  store<u8>(p + CQE_OPCODE, <u8>opcode);
  store<u8>(p + CQE_FLAGS, hasImm ? 1 : 0);
  store<u8>(p + CQE_OWNER, ((c.pi / c.depth) & 1) == 0 ? 1 : 0);
  c.pi++;
  tracePoint(dev, t, TP_NIC_CQE, 0xffff, cqn);
  if (c.armEngine != NOT_ARMED) {
    const e = c.armEngine;
    c.armEngine = NOT_ARMED;
    if (e < dev.engines) {
      fifoPush(hartAt(dev, e).nicIrq, cqn);
      interruptEngine(dev, e, t);
    }
  }
  return true;
}

/** Time a completion written at `t` into CQ `cqn` becomes visible to its consumer. */
function cqeVisible(dev: Device, cqn: u32, t: u64): u64 {
  if (cqn >= dev.maxCqs) return t;
  const c = cqAt(dev, cqn);
  if (dmaIsHost(dev, c.base, CQE_SIZE)) return pcieWrite(dev, PcieDir.Up, t, CQE_SIZE);
  return t + (dmaIsSram(dev, c.base, CQE_SIZE) ? dev.nicSramLatencyPs : dev.hbmLatencyPs);
}

/** Completes every outstanding entry of an errored QP with WR_FLUSH_ERR (IB spec 10.7.3.1). */
function flush(dev: Device, qpn: u32, t: u64): void {
  const q = qpAt(dev, qpn);
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
  q.state = QP_STATE_RESET;
}

// ---- execution

function phaseAt(dev: Device, q: Qp, qpn: u32, phase: u32, t: u64): void {
  q.phase = phase;
  schedule(dev, t, EventKind.NicPhase, qpn, q.gen & ~FLOW_ENDED);
}

/** Starts the next request of a send queue if it is runnable now, or arranges to look again. */
export function kick(dev: Device, qpn: u32, t: u64): void {
  const q = qpAt(dev, qpn);
  if (!q.valid || q.busy) return;
  if (q.state == QP_STATE_ERR) { flush(dev, qpn, t); return; }
  if (q.state != QP_STATE_RTS || q.sqCi == q.announced) return;
  const ready = readyTime(dev, q, qpn);
  if (ready > t) {
    if (!q.kickPending) {
      q.kickPending = 1;
      schedule(dev, ready, EventKind.NicKick, qpn, 0);
    }
    return;
  }
  q.busy = 1;
  q.gen++;
  q.retriesLeft = <u32>dev.transportRetries;
  q.rnrLeft = <u32>dev.rnrRetries;
  memory.copy(qpWqe(dev, qpn), sqSlot(dev, q, q.sqCi), WQE_SIZE);
  statAdd(dev, STAT_NIC_WQES, 1);
  tracePoint(dev, t, TP_NIC_WQE_START, 0xffff, qpn);
  attempt(dev, qpn, t);
}

/** Ends the request early with an error status, after the decode latency. */
function fail(dev: Device, q: Qp, qpn: u32, t: u64, status: u32, rxStatus: u32): void {
  q.status = status;
  q.rxStatus = rxStatus;
  phaseAt(dev, q, qpn, NicPhase.Tail, t + dev.nicWqeLatencyPs);
}

// outcomes of check()
const CHECK_OK: u32 = 0;
const CHECK_FAILED: u32 = 1; // q.status and q.rxStatus say why
const CHECK_NO_TARGET: u32 = 2; // the target QP does not answer (not ready, or gone)
const CHECK_NO_RECV: u32 = 3; // the target has no posted receive (receiver not ready)

/**
 * Checks the request of `qpn` (its WQE copy `w`) against keys, the target and its receive
 * queue as they are at this moment, and sets q.reqSrc/q.reqDst. It runs when a request starts
 * and again when it places its bytes (`final`), so that a key deregistered or a receive taken
 * by another request in between is seen. The target's receive is chosen only when `final`.
 */
function check(dev: Device, q: Qp, w: usize, final: bool): u32 {
  const op = <u32>load<u8>(w + WQE_OPCODE);
  const len = <u64>load<u32>(w + WQE_LENGTH);
  const laddr = load<u64>(w + WQE_LADDR), lkey = load<u32>(w + WQE_LKEY);
  const raddr = load<u64>(w + WQE_RADDR), rkey = load<u32>(w + WQE_RKEY);
  q.status = STATUS_SUCCESS;
  q.rxStatus = STATUS_SUCCESS;
  q.reqSrc = laddr;
  q.reqDst = raddr;
  if (op == OPCODE_COPY) {
    if (!mrCheck(dev, rkey, false, q.pd, raddr, len, 0) || !mrCheck(dev, lkey, false, q.pd, laddr, len, ACCESS_LOCAL_WRITE)) return failed(q, STATUS_LOC_PROT_ERR, STATUS_SUCCESS);
    q.reqSrc = raddr;
    q.reqDst = laddr;
    return CHECK_OK;
  }
  if (op > OPCODE_RDMA_READ) return failed(q, STATUS_LOC_QP_OP_ERR, STATUS_SUCCESS);
  const isRead = op == OPCODE_RDMA_READ;
  if (!mrCheck(dev, lkey, false, q.pd, laddr, len, isRead ? ACCESS_LOCAL_WRITE : 0)) return failed(q, STATUS_LOC_PROT_ERR, STATUS_SUCCESS);
  // the target must answer: a QP that is not ready (or is gone) never does
  if (q.destQpn >= dev.maxQps) return CHECK_NO_TARGET;
  const d = qpAt(dev, q.destQpn);
  if (!d.valid || (d.state != QP_STATE_RTR && d.state != QP_STATE_RTS)) return CHECK_NO_TARGET;
  if (op == OPCODE_RDMA_WRITE || op == OPCODE_RDMA_WRITE_WITH_IMM || isRead) {
    if (!mrCheck(dev, rkey, true, d.pd, raddr, len, isRead ? ACCESS_REMOTE_READ : ACCESS_REMOTE_WRITE)) return failed(q, STATUS_REM_ACCESS_ERR, STATUS_SUCCESS);
  }
  if (isRead) { q.reqSrc = raddr; q.reqDst = laddr; }
  if (op == OPCODE_RDMA_WRITE || isRead) return CHECK_OK;
  // SEND, SEND_WITH_IMM and WRITE_WITH_IMM consume the target's next posted receive
  if (d.rqCi == d.rqPi) return CHECK_NO_RECV;
  if (op == OPCODE_RDMA_WRITE_WITH_IMM) return CHECK_OK;
  const r = rqSlot(dev, d, d.rqCi);
  q.reqDst = load<u64>(r + WQE_LADDR); // where the bytes will go, for timing, until final
  if (!final) return CHECK_OK;
  if (len > <u64>load<u32>(r + WQE_LENGTH)) return failed(q, STATUS_REM_INV_REQ_ERR, STATUS_LOC_LEN_ERR);
  if (!mrCheck(dev, load<u32>(r + WQE_LKEY), false, d.pd, q.reqDst, len, ACCESS_LOCAL_WRITE)) return failed(q, STATUS_REM_OP_ERR, STATUS_LOC_PROT_ERR);
  return CHECK_OK;
}

@inline function failed(q: Qp, status: u32, rxStatus: u32): u32 {
  q.status = status;
  q.rxStatus = rxStatus;
  return CHECK_FAILED;
}

/** The target did not answer: wait for the transport timer, or fail when retries are exhausted. */
function noTarget(dev: Device, q: Qp, qpn: u32, t: u64): void {
  if (q.retriesLeft == 0) { fail(dev, q, qpn, t, STATUS_RETRY_EXC_ERR, STATUS_SUCCESS); return; }
  q.retriesLeft--;
  statAdd(dev, STAT_NIC_TRANSPORT_RETRIES, 1);
  phaseAt(dev, q, qpn, NicPhase.Wait, t + dev.transportTimeoutPs);
}

/** The target had no receive posted: wait for the RNR timer, or fail when retries are exhausted. */
function noRecv(dev: Device, q: Qp, qpn: u32, t: u64): void {
  if (q.rnrLeft == 0) { fail(dev, q, qpn, t, STATUS_RNR_RETRY_EXC_ERR, STATUS_SUCCESS); return; }
  q.rnrLeft--;
  statAdd(dev, STAT_NIC_RNR_RETRIES, 1);
  phaseAt(dev, q, qpn, NicPhase.Wait, t + dev.rnrTimerPs);
}

/** Checks a request against keys, queues and the target, then starts its Head phase. */
function attempt(dev: Device, qpn: u32, t: u64): void {
  const q = qpAt(dev, qpn);
  const w = qpWqe(dev, qpn);
  q.reqFlags = 0;
  if (q.state == QP_STATE_ERR) {
    // the QP went to error while this request waited (a retry timer, the reduction block)
    q.status = STATUS_WR_FLUSH_ERR;
    q.rxStatus = STATUS_SUCCESS;
    phaseAt(dev, q, qpn, NicPhase.Tail, t);
    return;
  }
  if (<u32>load<u8>(w + WQE_OPCODE) == OPCODE_REDUCE) { attemptReduce(dev, q, qpn, w, t); return; }
  const outcome = check(dev, q, w, false);
  if (outcome == CHECK_FAILED) { fail(dev, q, qpn, t, q.status, q.rxStatus); return; }
  if (outcome == CHECK_NO_TARGET) { noTarget(dev, q, qpn, t); return; }
  if (outcome == CHECK_NO_RECV) { noRecv(dev, q, qpn, t); return; }

  // timing: read the source, stream the HBM side, write a host destination; an engine SRAM
  // side moves at the NIC's DMA rate after its own short latency
  const len = <u64>load<u32>(w + WQE_LENGTH);
  const src = q.reqSrc, dst = q.reqDst;
  let head = t + dev.nicWqeLatencyPs;
  if (len > 0 && dmaIsHost(dev, src, len)) head = pcieRead(dev, head, len);
  else if (dmaIsSram(dev, src, len)) head += dev.nicSramLatencyPs + sramPs(dev, len);
  else head += dev.hbmLatencyPs;
  let hbmBytes: u64 = 0;
  if (dmaIsHbm(dev, src, len)) hbmBytes += len;
  if (dmaIsHbm(dev, dst, len)) hbmBytes += len;
  if (len > 0 && dmaIsHost(dev, dst, len)) q.reqFlags |= REQ_DST_HOST;
  if (len > 0 && dmaIsSram(dev, dst, len)) q.reqFlags |= REQ_DST_SRAM;
  q.reqBytes = hbmBytes;
  q.reqLen = len;
  phaseAt(dev, q, qpn, NicPhase.Head, head);
}

/** Checks a REDUCE's operands: LOC_QP_OP_ERR, LOC_LEN_ERR or LOC_PROT_ERR, else SUCCESS. */
function checkReduce(dev: Device, q: Qp, w: usize): u32 {
  const nsrc = <u32>load<u8>(w + WQE_NSRC);
  const dtype = <u32>load<u8>(w + WQE_DTYPE), redop = <u32>load<u8>(w + WQE_REDOP);
  const len = <u64>load<u32>(w + WQE_LENGTH);
  const esize = reduceElementBytes(dtype);
  if (nsrc < 2 || nsrc > 8 || esize == 0 || !reduceOpKnown(redop)) return STATUS_LOC_QP_OP_ERR;
  if (len % esize != 0) return STATUS_LOC_LEN_ERR;
  const dst = load<u64>(w + WQE_LADDR);
  // the reduction block sits beside HBM: every operand must be there
  if (!dmaIsHbm(dev, dst, len) || !mrCheck(dev, load<u32>(w + WQE_LKEY), false, q.pd, dst, len, ACCESS_LOCAL_WRITE)) return STATUS_LOC_PROT_ERR;
  for (let i: u32 = 0; i < nsrc; i++) {
    const a = <u64>load<u32>(w + WQE_SRC_ADDR + i * WQE_SRC_ADDR_STRIDE);
    if (!dmaIsHbm(dev, a, len) || !mrCheck(dev, load<u32>(w + WQE_SRC_LKEY + i * WQE_SRC_ADDR_STRIDE), false, q.pd, a, len, 0)) return STATUS_LOC_PROT_ERR;
  }
  return STATUS_SUCCESS;
}

function attemptReduce(dev: Device, q: Qp, qpn: u32, w: usize, t: u64): void {
  const status = checkReduce(dev, q, w);
  if (status != STATUS_SUCCESS) { fail(dev, q, qpn, t, status, STATUS_SUCCESS); return; }
  q.status = STATUS_SUCCESS;
  q.rxStatus = STATUS_SUCCESS;
  const len = <u64>load<u32>(w + WQE_LENGTH);
  const block = q.owner == OWNER_HOST ? qpn % dev.engines : q.owner;
  const busy = dev.blocks + (<usize>block << 2);
  if (load<u32>(busy) != 0) {
    q.waitBlock = block; // woken when the block frees
    q.phase = NicPhase.Wait;
    return;
  }
  store<u32>(busy, 1);
  q.waitBlock = NOT_ARMED;
  q.reqFlags = REQ_REDUCE;
  q.reqBlock = block;
  q.reqLen = len;
  q.reqBytes = <u64>(<u32>load<u8>(w + WQE_NSRC) + 1) * len; // K sources read, one destination written
  phaseAt(dev, q, qpn, NicPhase.Head, t + dev.nicWqeLatencyPs + dev.reduceSetupPs + dev.hbmLatencyPs);
}

// set in the event's generation word when a request's HBM flow has ended
const FLOW_ENDED: u32 = 0x80000000;

/** The NicPhase event: the request of `qpn` has finished its current phase at `t`. */
export function nicPhase(dev: Device, qpn: u32, genWord: u32, t: u64): void {
  // a flow that ended freed a slot of the flow table, even when its request was abandoned
  if ((genWord & FLOW_ENDED) != 0 && dev.flowWaiters > 0) wakeFlowWaiter(dev, t);
  const q = qpAt(dev, qpn);
  if (!q.valid || !q.busy || (q.gen & ~FLOW_ENDED) != (genWord & ~FLOW_ENDED)) return;
  switch (q.phase) {
    case NicPhase.Wait: attempt(dev, qpn, t); return;
    case NicPhase.Head: startFlow(dev, q, qpn, t); return;
    case NicPhase.Flow: tail(dev, q, qpn, t); return;
    case NicPhase.Tail: tail(dev, q, qpn, t); return;
    case NicPhase.Done: done(dev, qpn, t); return;
    default: return;
  }
}

/** Streams the request's HBM bytes, or goes straight to the tail when it has none. */
function startFlow(dev: Device, q: Qp, qpn: u32, t: u64): void {
  if (q.status != STATUS_SUCCESS || q.reqBytes == 0) { tail(dev, q, qpn, t); return; }
  let peak = dev.nicDmaBytesPerPs;
  let cls = FlowClass.Nic;
  if (q.reqFlags & REQ_REDUCE) {
    // sources stream at reduceBytesPerCycle; the destination write rides along
    const nsrc = <f64>load<u8>(qpWqe(dev, qpn) + WQE_NSRC);
    peak = dev.reduceBytesPerPs * (nsrc + 1) / nsrc;
    cls = FlowClass.Reduce;
  }
  q.phase = NicPhase.Flow;
  if (!hbmStart(dev, t, q.reqBytes, peak, cls, EventKind.NicPhase, qpn, (q.gen & ~FLOW_ENDED) | FLOW_ENDED)) {
    // the flow table is full: wait, without polling, until a flow ends
    statAdd(dev, STAT_HBM_FLOW_FULL, 1);
    q.phase = NicPhase.Head;
    q.waitFlow = 1;
    dev.flowWaiters++;
  }
}

/** Restarts one request waiting for a flow slot, taking QPs round robin from the last woken. */
function wakeFlowWaiter(dev: Device, t: u64): void {
  for (let k: u32 = 1; k <= dev.maxQps; k++) {
    const qpn = (dev.flowWaitNext + k) % dev.maxQps;
    const q = qpAt(dev, qpn);
    if (!q.waitFlow) continue;
    q.waitFlow = 0;
    dev.flowWaiters--;
    dev.flowWaitNext = qpn;
    startFlow(dev, q, qpn, t);
    return;
  }
}

/** Stops a request waiting for a flow slot from waiting (it is ending). */
function stopWaitingFlow(dev: Device, q: Qp): void {
  if (!q.waitFlow) return;
  q.waitFlow = 0;
  dev.flowWaiters--;
}

/** Time to move `len` bytes through an engine's NIC interface at the NIC's DMA rate. */
@inline function sramPs(dev: Device, len: u64): u64 {
  return <u64>Math.ceil(<f64>len / dev.nicDmaBytesPerPs);
}

function tail(dev: Device, q: Qp, qpn: u32, t: u64): void {
  let end = t;
  if (q.status == STATUS_SUCCESS && (q.reqFlags & REQ_DST_HOST)) end = pcieWrite(dev, PcieDir.Up, t, q.reqLen);
  if (q.status == STATUS_SUCCESS && (q.reqFlags & REQ_DST_SRAM)) end = t + dev.nicSramLatencyPs + sramPs(dev, q.reqLen);
  phaseAt(dev, q, qpn, NicPhase.Done, cqeVisible(dev, q.sendCq, end));
}

/** Places the bytes, writes the completions and starts the next request. */
function done(dev: Device, qpn: u32, t: u64): void {
  const q = qpAt(dev, qpn);
  const w = qpWqe(dev, qpn);
  const op = <u32>load<u8>(w + WQE_OPCODE);
  const len = <u32>load<u32>(w + WQE_LENGTH);
  const imm = load<u32>(w + WQE_IMM);
  const consumesRecv = op == OPCODE_SEND || op == OPCODE_SEND_WITH_IMM || op == OPCODE_RDMA_WRITE_WITH_IMM;
  if (q.reqFlags & REQ_REDUCE) {
    // the block is released whatever the outcome; the operands' keys are checked again
    releaseBlock(dev, q.reqBlock, t);
    if (q.status == STATUS_SUCCESS) q.status = checkReduce(dev, q, w);
  } else if (q.status == STATUS_SUCCESS) {
    // placement sees the world as it is now: keys deregistered, the target gone or in error
    // (it no longer answers: as if the retries ran out, nothing placed), the receive another
    // request took in the meantime (receiver not ready again)
    const outcome = check(dev, q, w, true);
    if (outcome == CHECK_NO_TARGET) q.status = STATUS_RETRY_EXC_ERR;
    else if (outcome == CHECK_NO_RECV) { noRecv(dev, q, qpn, t); return; }
  }
  let status = q.status;
  if (status == STATUS_SUCCESS) {
    if (q.reqFlags & REQ_REDUCE) {
      const nsrc = <u32>load<u8>(w + WQE_NSRC);
      for (let i: u32 = 0; i < nsrc; i++) {
        store<u32>(dev.reduceSrcs + (<usize>i << 2), <u32>dmaPtr(dev, <u64>load<u32>(w + WQE_SRC_ADDR + i * WQE_SRC_ADDR_STRIDE), <u64>len));
      }
      reduceKernel(<u32>dmaPtr(dev, load<u64>(w + WQE_LADDR), <u64>len), dev.reduceSrcs, nsrc, len, load<u8>(w + WQE_REDOP), load<u8>(w + WQE_DTYPE));
    } else if (len > 0) {
      memory.copy(dmaPtr(dev, q.reqDst, <u64>len), dmaPtr(dev, q.reqSrc, <u64>len), len);
    }
    if (consumesRecv) {
      const d = qpAt(dev, q.destQpn);
      const r = rqSlot(dev, d, d.rqCi);
      d.rqCi++;
      const rxOp = op == OPCODE_RDMA_WRITE_WITH_IMM ? OPCODE_RDMA_WRITE_WITH_IMM : OPCODE_RECV;
      if (!cqPush(dev, d.recvCq, t, load<u64>(r + WQE_WR_ID), len, imm, op != OPCODE_SEND, q.destQpn, STATUS_SUCCESS, rxOp)) qpError(dev, q.destQpn, t);
    }
  } else if (q.rxStatus != STATUS_SUCCESS) {
    // the target's posted receive fails too, and the target QP goes to error (IB spec 9.9.3);
    // the receive is the one check() just looked at, still the target's next
    const d = qpAt(dev, q.destQpn);
    const r = rqSlot(dev, d, d.rqCi);
    d.rqCi++;
    cqPush(dev, d.recvCq, t, load<u64>(r + WQE_WR_ID), 0, 0, false, q.destQpn, q.rxStatus, OPCODE_RECV);
    statAdd(dev, STAT_NIC_ERRORS, 1);
    qpError(dev, q.destQpn, t);
  }
  const signaled = q.sigAll != 0 || (load<u8>(w + WQE_FLAGS) & WR_FLAG_SIGNALED) != 0 || status != STATUS_SUCCESS;
  let cqOk = true;
  if (signaled) cqOk = cqPush(dev, q.sendCq, t, load<u64>(w + WQE_WR_ID), status == STATUS_SUCCESS ? len : 0, 0, false, qpn, status, op);
  tracePoint(dev, t, TP_NIC_WQE_DONE, 0xffff, (qpn << 8) | status);
  finishRequest(q);
  if (status != STATUS_SUCCESS) {
    statAdd(dev, status == STATUS_WR_FLUSH_ERR ? STAT_NIC_FLUSHED : STAT_NIC_ERRORS, 1);
    qpError(dev, qpn, t);
  } else if (!cqOk) {
    qpError(dev, qpn, t);
  }
  kick(dev, qpn, t);
}

/** The request at sqCi has completed: move past it and the entries flushed behind it. */
function finishRequest(q: Qp): void {
  q.sqCi++;
  if (<i32>(q.sqFlushed - q.sqCi) > 0) q.sqCi = q.sqFlushed;
  q.busy = 0;
  q.phase = NicPhase.Idle;
}

/**
 * Ends the request in flight on `qpn` at once with WR_FLUSH_ERR (the QP is being destroyed):
 * its pending events find a new generation and do nothing, and a reduction block it holds
 * goes to the next QP waiting for it.
 */
export function abandonRequest(dev: Device, qpn: u32, t: u64): void {
  const q = qpAt(dev, qpn);
  if (!q.busy) return;
  const w = qpWqe(dev, qpn);
  cqPush(dev, q.sendCq, t, load<u64>(w + WQE_WR_ID), 0, 0, false, qpn, STATUS_WR_FLUSH_ERR, load<u8>(w + WQE_OPCODE));
  statAdd(dev, STAT_NIC_FLUSHED, 1);
  finishRequest(q);
  q.gen++;
  stopWaitingFlow(dev, q);
  if (q.waitBlock != NOT_ARMED) q.waitBlock = NOT_ARMED;
  else if (q.reqFlags & REQ_REDUCE) releaseBlock(dev, q.reqBlock, t);
}

/** Frees a reduction block and restarts the first QP (in QP order) waiting for it. */
function releaseBlock(dev: Device, block: u32, t: u64): void {
  store<u32>(dev.blocks + (<usize>block << 2), 0);
  for (let i: u32 = 0; i < dev.maxQps; i++) {
    const q = qpAt(dev, i);
    if (q.valid && q.busy && q.waitBlock == block) {
      q.waitBlock = NOT_ARMED;
      attempt(dev, i, t);
      return;
    }
  }
}

// ---- doorbells

/** Who may ring a QP's doorbells: its owner. */
@inline function mayRing(q: Qp, ringer: u32): bool {
  return q.valid != 0 && q.owner == ringer;
}

/**
 * A doorbell that announces more entries than the ring has room for: the owner overwrote
 * entries the NIC had not finished with. It is dropped and counted, and the QP goes to the
 * error state (what the NIC knew of completes with WR_FLUSH_ERR), so nothing runs from a ring
 * the NIC cannot trust.
 */
function overrunDoorbell(dev: Device, qpn: u32, t: u64): void {
  statAdd(dev, STAT_NIC_BAD_DOORBELL, 1);
  qpError(dev, qpn, t);
}

/** A classic send doorbell reached the NIC at `t`: fetch the new entries, then run them. */
export function sqDoorbell(dev: Device, qpn: u32, ringer: u32, pi16: u32, t: u64): void {
  tracePoint(dev, t, TP_NIC_DOORBELL, 0xffff, qpn);
  if (qpn >= dev.maxQps || !mayRing(qpAt(dev, qpn), ringer)) { statAdd(dev, STAT_NIC_BAD_DOORBELL, 1); return; }
  const q = qpAt(dev, qpn);
  const n = (pi16 - q.announced) & 0xffff;
  if (n == 0) return;
  if (n > q.sqDepth - (q.announced - q.sqCi)) { overrunDoorbell(dev, qpn, t); return; }
  const bytes = <u64>n * WQE_SIZE;
  const fetched = dmaIsHost(dev, q.sqBase, 1) ? pcieRead(dev, t, bytes)
    : t + (dmaIsSram(dev, q.sqBase, 1) ? dev.nicSramLatencyPs + sramPs(dev, bytes) : dev.hbmLatencyPs);
  q.announced += n;
  rangePush(dev, q, qpn, q.announced, fetched);
  kick(dev, qpn, t);
}

export function rqDoorbell(dev: Device, qpn: u32, ringer: u32, pi16: u32, t: u64): void {
  if (qpn >= dev.maxQps || !mayRing(qpAt(dev, qpn), ringer)) { statAdd(dev, STAT_NIC_BAD_DOORBELL, 1); return; }
  const q = qpAt(dev, qpn);
  const n = (pi16 - q.rqPi) & 0xffff;
  if (n > q.rqDepth - (q.rqPi - q.rqCi)) { overrunDoorbell(dev, qpn, t); return; }
  q.rqPi += n;
  if (q.state == QP_STATE_ERR) flush(dev, qpn, t);
}

/** An express doorbell (its WQE at wasm address `e`) reached the NIC: the entry came with it, so it is runnable at once. */
export function expressDoorbell(dev: Device, e: usize, ringer: u32, t: u64): void {
  const qpn = load<u32>(e + WQE_QPN);
  tracePoint(dev, t, TP_NIC_DOORBELL, 0xffff, qpn);
  if (qpn >= dev.maxQps || !mayRing(qpAt(dev, qpn), ringer)) { statAdd(dev, STAT_NIC_BAD_DOORBELL, 1); return; }
  const q = qpAt(dev, qpn);
  if (q.announced - q.sqCi >= q.sqDepth) { overrunDoorbell(dev, qpn, t); return; }
  // the NIC keeps the entry in the ring slot it occupies, so every entry runs from one place
  memory.copy(sqSlot(dev, q, q.announced), e, WQE_SIZE);
  q.announced++;
  rangePush(dev, q, qpn, q.announced, t);
  kick(dev, qpn, t);
}
