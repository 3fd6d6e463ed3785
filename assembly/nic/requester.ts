// The requester half of the NIC: each send queue runs its requests in order, one at a time,
// through phases:
//   Head  decode and key checks (nicWqeLatencyPs), then reading the source: over PCIe from
//         host memory, or the HBM latency;
//   Flow  the HBM part of the transfer as a shared-bandwidth stream (mem/hbm.ts);
//   Tail  writing a host-memory destination over PCIe, then the completion entry;
//   Done  the bytes land, completions are written, the next request starts.
// A transfer to a QP talks to its responder in packets (packet.ts): the First packet when it
// starts, answered with where the bytes will go or why not; the Last packet at Done, where
// the responder places the bytes and completes its side. Retries (receiver not ready, the
// destination silent) wait in phase Wait and start again. Local operations — REDUCE on the
// engine's reduction block and COPY (local-ops.ts) — run the same phases with no responder.
// Placement happens at Done: nothing of a request is visible before it completes.

import { nicOf } from "./state";
import { Device, statAdd, tracePoint } from "../core/device";
import { copyBytes } from "../core/copy";
import { Qp, qpAt, qpWqe, sqSlot, mrCheck, NOT_ARMED } from "./verbs";
import { dmaCopy, dmaIsHbm, dmaIsHost, dmaIsSram, sramDmaPs } from "../mem/dma";
import { schedule, EventKind } from "../core/sched";
import { hbmStart, FlowClass } from "../mem/hbm";
import { pcieRead, pcieWrite, PcieDir } from "../mem/pcie";
import { cqeVisible } from "./completions";
import { readyTime, flush, qpError, completeHead } from "./queues";
import { Packet, PacketKind, packetOut, packetIn } from "./packet";
import { NicPhase, FLOW_ENDED, REQ_DST_HOST, REQ_REDUCE, REQ_DST_SRAM, REQ_REMOTE, phaseAt, fail, noAnswer, notReady } from "./phases";
import { transportRequestPackets, transportSend } from "./transport";
import { psnAdd } from "./psn";
import { OUT_MAX, outDrain } from "./outstanding";
import { loopbackRequest } from "./loopback";
import { checkCopy, checkReduce, reduceBlockOf, placeReduce, freeBlock } from "./local-ops";
import {
  OPCODE_RDMA_READ, OPCODE_REDUCE, OPCODE_COPY,
  STATUS_SUCCESS, STATUS_LOC_QP_OP_ERR, STATUS_LOC_PROT_ERR, STATUS_WR_FLUSH_ERR, STATUS_RETRY_EXC_ERR, STATUS_RNR_RETRY_EXC_ERR,
  ACCESS_LOCAL_WRITE, QP_STATE_RTS, QP_STATE_ERR,
  WQE_SIZE, WQE_OPCODE, WQE_NSRC, WQE_LADDR, WQE_LENGTH, WQE_LKEY, WQE_RADDR, WQE_RKEY, WQE_IMM,
  STAT_NIC_WQES, STAT_HBM_FLOW_FULL, TP_NIC_WQE_START,
} from "../generated/layouts";

/** Starts the next request of a send queue if it is runnable now, or arranges to look again. */
export function startNextRequest(dev: Device, qpn: u32, t: u64): void {
  const q = qpAt(dev, qpn);
  if (!q.valid) return;
  // acknowledged RoCEv2 messages whose completions are visible now complete first
  if (q.outAcked > 0 && !outDrain(dev, q, qpn, t, false)) qpError(dev, qpn, t);
  if (q.busy) return;
  if (q.state == QP_STATE_ERR) { flush(dev, qpn, t); return; }
  if (q.state != QP_STATE_RTS || q.sqCi == q.announced) return;
  if (q.remote && q.outCount >= OUT_MAX) return; // an ACK makes room and looks again (outAck)
  const ready = readyTime(dev, q, qpn);
  if (ready > t) {
    if (!q.startNextPending) {
      q.startNextPending = 1;
      schedule(dev, ready, EventKind.NicStartNext, qpn, 0);
    }
    return;
  }
  q.busy = 1;
  q.gen++;
  q.msgPsnSet = 0;
  q.retriesLeft = <u32>dev.cfg.transportRetries;
  q.rnrLeft = <u32>dev.cfg.rnrRetries;
  copyBytes(qpWqe(dev, qpn), sqSlot(dev, q, q.sqCi), WQE_SIZE);
  statAdd(dev, STAT_NIC_WQES, 1);
  tracePoint(dev, t, TP_NIC_WQE_START, 0xffff, qpn);
  beginRequest(dev, qpn, t);
}

/** Is a Nak's status the receiver-not-ready answer? */
@inline function isRnr(a: Packet): bool {
  return a.kind == PacketKind.Nak && a.status == STATUS_RNR_RETRY_EXC_ERR;
}

/** The local side of a transfer's checks: a known opcode and the local key. */
function checkLocal(dev: Device, q: Qp, w: usize): u32 {
  const op = <u32>load<u8>(w + WQE_OPCODE);
  if (op > OPCODE_RDMA_READ) return STATUS_LOC_QP_OP_ERR;
  const len = <u64>load<u32>(w + WQE_LENGTH);
  if (!mrCheck(dev, load<u32>(w + WQE_LKEY), false, q.pd, load<u64>(w + WQE_LADDR), len, op == OPCODE_RDMA_READ ? ACCESS_LOCAL_WRITE : 0)) return STATUS_LOC_PROT_ERR;
  return STATUS_SUCCESS;
}

/** Sends the request's packet of `kind` to its destination; true with the answer in packetIn. */
function sendPacket(dev: Device, q: Qp, qpn: u32, w: usize, kind: PacketKind, t: u64): bool {
  const p = packetOut(nicOf(dev).packets);
  p.kind = kind;
  p.op = <u32>load<u8>(w + WQE_OPCODE);
  p.srcQpn = qpn;
  p.destQpn = q.destQpn;
  p.raddr = load<u64>(w + WQE_RADDR);
  p.rkey = load<u32>(w + WQE_RKEY);
  p.length = load<u32>(w + WQE_LENGTH);
  p.imm = load<u32>(w + WQE_IMM);
  p.payload = load<u64>(w + WQE_LADDR);
  return loopbackRequest(dev, p, t, packetIn(nicOf(dev).packets));
}

/** Checks a request, asks its destination, then starts its Head phase (again after a Wait). */
function beginRequest(dev: Device, qpn: u32, t: u64): void {
  const q = qpAt(dev, qpn);
  const w = qpWqe(dev, qpn);
  q.reqFlags = 0;
  q.status = STATUS_SUCCESS;
  if (q.state == QP_STATE_ERR) {
    // the QP went to error while this request waited (a retry timer, the reduction block)
    q.status = STATUS_WR_FLUSH_ERR;
    phaseAt(dev, q, qpn, NicPhase.Tail, t);
    return;
  }
  const op = <u32>load<u8>(w + WQE_OPCODE);
  if (op == OPCODE_REDUCE) { beginReduce(dev, q, qpn, w, t); return; }
  const len = <u64>load<u32>(w + WQE_LENGTH);
  let src = load<u64>(w + WQE_LADDR), dst = load<u64>(w + WQE_RADDR);
  if (op == OPCODE_COPY) {
    const status = checkCopy(dev, q, w);
    if (status != STATUS_SUCCESS) { fail(dev, q, qpn, t, status); return; }
    src = load<u64>(w + WQE_RADDR);
    dst = load<u64>(w + WQE_LADDR);
  } else {
    const status = checkLocal(dev, q, w);
    if (status != STATUS_SUCCESS) { fail(dev, q, qpn, t, status); return; }
    if (q.remote) { beginRemote(dev, q, qpn, w, t); return; }
    if (!sendPacket(dev, q, qpn, w, PacketKind.ReqFirst, t)) { noAnswer(dev, q, qpn, t); return; }
    const a = packetIn(nicOf(dev).packets);
    if (isRnr(a)) { notReady(dev, q, qpn, t); return; }
    if (a.kind == PacketKind.Nak) { fail(dev, q, qpn, t, a.status); return; }
    if (op == OPCODE_RDMA_READ) { src = dst; dst = load<u64>(w + WQE_LADDR); }
    else dst = a.placeAddr;
  }

  // timing: read the source, stream the HBM side, write a host destination; an engine SRAM
  // side moves at the NIC's DMA rate after its own short latency
  let head = t + dev.cfg.nicWqeLatencyPs;
  if (len > 0 && dmaIsHost(dev, src, len)) head = pcieRead(dev, head, len);
  else if (dmaIsSram(dev, src, len)) head += dev.cfg.nicSramLatencyPs + sramDmaPs(dev, len);
  else head += dev.cfg.hbmLatencyPs;
  let hbmBytes: u64 = 0;
  if (dmaIsHbm(dev, src, len)) hbmBytes += len;
  if (dmaIsHbm(dev, dst, len)) hbmBytes += len;
  if (len > 0 && dmaIsHost(dev, dst, len)) q.reqFlags |= REQ_DST_HOST;
  if (len > 0 && dmaIsSram(dev, dst, len)) q.reqFlags |= REQ_DST_SRAM;
  q.reqBytes = hbmBytes;
  q.reqLen = len;
  phaseAt(dev, q, qpn, NicPhase.Head, head);
}

/**
 * A transfer to another device (through nic/transport.ts: rocev2/ or metaroce/): the source is read (Head,
 * Flow), then its packets go out on the QP's port and the answer decides. A READ reads nothing
 * here: its bytes come back in the responses and land as they arrive.
 */
function beginRemote(dev: Device, q: Qp, qpn: u32, w: usize, t: u64): void {
  const op = <u32>load<u8>(w + WQE_OPCODE);
  const len = <u64>load<u32>(w + WQE_LENGTH);
  const src = load<u64>(w + WQE_LADDR);
  let head = t + dev.cfg.nicWqeLatencyPs;
  q.reqBytes = 0;
  q.reqLen = len;
  if (op != OPCODE_RDMA_READ) {
    if (len > 0 && dmaIsHost(dev, src, len)) head = pcieRead(dev, head, len);
    else if (dmaIsSram(dev, src, len)) head += dev.cfg.nicSramLatencyPs + sramDmaPs(dev, len);
    else head += dev.cfg.hbmLatencyPs;
    if (dmaIsHbm(dev, src, len)) q.reqBytes = len;
  }
  q.reqFlags = REQ_REMOTE;
  phaseAt(dev, q, qpn, NicPhase.Head, head);
}

/** The source has been read: the request's packets go to its port (the same PSNs on a retry). */
function startSend(dev: Device, q: Qp, qpn: u32, t: u64): void {
  const op = <u32>load<u8>(qpWqe(dev, qpn) + WQE_OPCODE);
  if (!q.msgPsnSet) {
    const w = qpWqe(dev, qpn);
    q.msgPsn = q.sqPsn;
    const packets = transportRequestPackets(dev, op, load<u32>(w + WQE_LENGTH));
    q.msgLastPsn = psnAdd(q.msgPsn, packets - 1);
    q.sqPsn = psnAdd(q.msgLastPsn, 1);
    q.msgPsnSet = 1;
  }
  transportSend(dev, q, qpn, op, t);
}

/** A REDUCE's start: its operands checked, then its reduction block taken (Head) or waited for. */
function beginReduce(dev: Device, q: Qp, qpn: u32, w: usize, t: u64): void {
  const status = checkReduce(dev, q, w);
  if (status != STATUS_SUCCESS) { fail(dev, q, qpn, t, status); return; }
  const len = <u64>load<u32>(w + WQE_LENGTH);
  const block = reduceBlockOf(dev, q, qpn);
  const busy = nicOf(dev).blocks + (<usize>block << 2);
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
  phaseAt(dev, q, qpn, NicPhase.Head, t + dev.cfg.nicWqeLatencyPs + dev.cfg.reduceSetupPs + dev.cfg.hbmLatencyPs);
}

/** The NicPhase event: the request of `qpn` has finished its current phase at `t`. */
export function nicPhase(dev: Device, qpn: u32, genWord: u32, t: u64): void {
  // a flow that ended freed a slot of the flow table, even when its request was abandoned
  if ((genWord & FLOW_ENDED) != 0 && nicOf(dev).flowWaiters > 0) wakeFlowWaiter(dev, t);
  const q = qpAt(dev, qpn);
  if (!q.valid || !q.busy || (q.gen & ~FLOW_ENDED) != (genWord & ~FLOW_ENDED)) return;
  switch (q.phase) {
    case NicPhase.Wait: beginRequest(dev, qpn, t); return;
    case NicPhase.Head: startFlow(dev, q, qpn, t); return;
    case NicPhase.Flow: startTail(dev, q, qpn, t); return;
    case NicPhase.Tail: startTail(dev, q, qpn, t); return;
    case NicPhase.Done: completeRequest(dev, qpn, t); return;
    default: return;
  }
}

/** Streams the request's HBM bytes, or goes straight to the tail when it has none. */
function startFlow(dev: Device, q: Qp, qpn: u32, t: u64): void {
  if (q.status != STATUS_SUCCESS || q.reqBytes == 0) { startTail(dev, q, qpn, t); return; }
  let peak = nicOf(dev).nicDmaBytesPerPs;
  let cls = FlowClass.Nic;
  if (q.reqFlags & REQ_REDUCE) {
    // sources stream at reduceBytesPerCycle; the destination write rides along
    const nsrc = <f64>load<u8>(qpWqe(dev, qpn) + WQE_NSRC);
    peak = nicOf(dev).reduceBytesPerPs * (nsrc + 1) / nsrc;
    cls = FlowClass.Reduce;
  }
  q.phase = NicPhase.Flow;
  if (!hbmStart(dev, t, q.reqBytes, peak, cls, EventKind.NicPhase, qpn, (q.gen & ~FLOW_ENDED) | FLOW_ENDED)) {
    // the flow table is full: wait, without polling, until a flow ends
    statAdd(dev, STAT_HBM_FLOW_FULL, 1);
    q.phase = NicPhase.Head;
    q.waitFlow = 1;
    nicOf(dev).flowWaiters++;
  }
}

/** Restarts one request waiting for a flow slot, taking QPs round robin from the last woken. */
function wakeFlowWaiter(dev: Device, t: u64): void {
  for (let k: u32 = 1; k <= dev.cfg.maxQps; k++) {
    const qpn = (nicOf(dev).flowWaitNext + k) % dev.cfg.maxQps;
    const q = qpAt(dev, qpn);
    if (!q.waitFlow) continue;
    q.waitFlow = 0;
    nicOf(dev).flowWaiters--;
    nicOf(dev).flowWaitNext = qpn;
    startFlow(dev, q, qpn, t);
    return;
  }
}

/**
 * The Tail phase, once the source is read (and streamed): a remote request's packets go out; a
 * local one writes a host or SRAM destination, and reaches Done when its completion can be seen.
 */
function startTail(dev: Device, q: Qp, qpn: u32, t: u64): void {
  if (q.status == STATUS_SUCCESS && (q.reqFlags & REQ_REMOTE)) { startSend(dev, q, qpn, t); return; }
  let end = t;
  if (q.status == STATUS_SUCCESS && (q.reqFlags & REQ_DST_HOST)) end = pcieWrite(dev, PcieDir.Up, t, q.reqLen);
  if (q.status == STATUS_SUCCESS && (q.reqFlags & REQ_DST_SRAM)) end = t + dev.cfg.nicSramLatencyPs + sramDmaPs(dev, q.reqLen);
  phaseAt(dev, q, qpn, NicPhase.Done, cqeVisible(dev, q.sendCq, end));
}

/**
 * Finishes a transfer at Done: the local checks again, then the Last packet, where the
 * responder places the bytes (or, for a READ, answers with them). False when the responder
 * was not ready and the request waits to try again.
 */
function finishTransfer(dev: Device, q: Qp, qpn: u32, w: usize, t: u64): bool {
  // placement sees the world as it is now: keys deregistered, the destination gone or in
  // error (it no longer answers: as if the retries ran out, nothing placed), the receive
  // another request took in the meantime (receiver not ready again)
  const op = <u32>load<u8>(w + WQE_OPCODE);
  const len = <u64>load<u32>(w + WQE_LENGTH);
  if (op == OPCODE_COPY) {
    q.status = checkCopy(dev, q, w);
    if (q.status == STATUS_SUCCESS && len > 0) dmaCopy(dev, load<u64>(w + WQE_LADDR), load<u64>(w + WQE_RADDR), len);
    return true;
  }
  q.status = checkLocal(dev, q, w);
  if (q.status != STATUS_SUCCESS) return true;
  if (!sendPacket(dev, q, qpn, w, PacketKind.ReqLast, t)) { q.status = STATUS_RETRY_EXC_ERR; return true; }
  const a = packetIn(nicOf(dev).packets);
  if (isRnr(a)) { notReady(dev, q, qpn, t); return false; }
  if (a.kind == PacketKind.Nak) q.status = a.status;
  else if (a.kind == PacketKind.ReadResponse && len > 0) dmaCopy(dev, load<u64>(w + WQE_LADDR), a.payload, len);
  return true;
}

/** Places the bytes, writes the completion and starts the next request. */
function completeRequest(dev: Device, qpn: u32, t: u64): void {
  const q = qpAt(dev, qpn);
  const w = qpWqe(dev, qpn);
  // the request executes now: what its placement does to its own QP (a SEND to itself that
  // fails the receive moves it to ERR) leaves it to complete itself, before the entries behind
  q.phase = NicPhase.Completing;
  if (q.reqFlags & REQ_REDUCE) {
    // the block is released whatever the outcome; the operands' keys are checked again
    releaseBlock(dev, q.reqBlock, t);
    if (q.status == STATUS_SUCCESS) q.status = checkReduce(dev, q, w);
    if (q.status == STATUS_SUCCESS) placeReduce(dev, w);
  } else if (q.status == STATUS_SUCCESS && (q.reqFlags & REQ_REMOTE) == 0) {
    if (!finishTransfer(dev, q, qpn, w, t)) return;
  }
  const status = q.status;
  if (!completeHead(dev, q, qpn, status, t) || status != STATUS_SUCCESS) qpError(dev, qpn, t);
  startNextRequest(dev, qpn, t);
}

/** Frees a reduction block and restarts the first QP (in QP order) waiting for it. */
function releaseBlock(dev: Device, block: u32, t: u64): void {
  const next = freeBlock(dev, block);
  if (next >= 0) beginRequest(dev, <u32>next, t);
}
