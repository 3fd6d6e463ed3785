// RoCEv2 out of the ports: which QP sends next on a port, and the frames it sends. A port
// sends answers (ACK, NAK, READ responses) before requests, and takes QPs with requests round
// robin, one packet each. Frames are wire-exact (Ethernet II, IPv4, UDP 4791, BTH, RETH, AETH,
// ImmDt, payload, pad, ICRC: layouts/headers/), built in the ports' scratch frame and written
// to the transmit ring with the time their last bit leaves the port.

import { Device, statAdd } from "../core/device";
import { schedule, unschedule, EventKind } from "../core/sched";
import { NEVER } from "../core/time";
import { Qp, qpAt, qpWqe, NOT_ARMED } from "../nic/verbs";
import { rcOf } from "./qp";
import { dmaPtr } from "../mem/dma";
import {
  Port, PORT_STRIDE, WIRE_OVERHEAD, portsOf, portAt, txRoom, framePs, wakePort, portWakeAt, emit,
} from "../nic/ports";
import { NicPhase } from "../nic/phases";
import { packetsOf, psnAdd } from "../nic/psn";
import { outAt, outFirstPsn, outLastPsn, outPush, startNextAt } from "../nic/outstanding";
import { icrcIpv4 } from "../checksum/icrc";
import { ethIpUdp } from "../nic/ethernet";
import {
  ETH_SIZE, UDP_PORT_ROCEV2,
  BTH_SIZE, BTH_P_KEY_DEFAULT, BTH_PSN_MASK, setBthOpcode, setBthSe, setBthMigReq, setBthPadCnt, setBthTVer, setBthPKey,
  setBthFecn, setBthBecn, setBthDestQp, setBthAckReq, setBthPsn,
  RETH_SIZE, setRethVa, setRethRkey, setRethDmaLength, AETH_SIZE, setAethSyndrome, setAethMsn, IMM_DT_SIZE, setImmDtData,
  ICRC_SIZE, OP_RC_SEND_FIRST, OP_RC_SEND_MIDDLE, OP_RC_SEND_LAST, OP_RC_SEND_LAST_IMM, OP_RC_SEND_ONLY, OP_RC_SEND_ONLY_IMM,
  OP_RC_WRITE_FIRST, OP_RC_WRITE_MIDDLE, OP_RC_WRITE_LAST, OP_RC_WRITE_LAST_IMM, OP_RC_WRITE_ONLY, OP_RC_WRITE_ONLY_IMM,
  OP_RC_READ_REQUEST, OP_RC_READ_RESPONSE_FIRST, OP_RC_READ_RESPONSE_MIDDLE, OP_RC_READ_RESPONSE_LAST, OP_RC_READ_RESPONSE_ONLY,
  OP_RC_ACK, OP_CNP, CNP_SIZE,
} from "../generated/headers";
import {
  OPCODE_RDMA_WRITE, OPCODE_RDMA_WRITE_WITH_IMM, OPCODE_SEND, OPCODE_SEND_WITH_IMM, OPCODE_RDMA_READ,
  WQE_OPCODE, WQE_LENGTH, WQE_LADDR, WQE_RADDR, WQE_RKEY, WQE_IMM,
  STAT_ROCE_RATE_CUTS, STAT_ROCE_CNPS_SENT,
} from "../generated/layouts";

// answers a responder QP sends (RcQp.respKind)
export const RESP_NONE: u32 = 0;
export const RESP_ACK: u32 = 1; // ACK or NAK: respSyndrome says which
export const RESP_READ: u32 = 2; // READ response packets, rdLen bytes from rdVa

// ---- the lists of QPs waiting for a port

function listPush(dev: Device, headTail: usize, qpn: u32, viaResp: bool): void {
  const tail = load<u32>(headTail, 4);
  if (tail == 0) store<u32>(headTail, qpn + 1);
  else if (viaResp) rcOf(qpAt(dev, tail - 1)).respNext = qpn + 1;
  else rcOf(qpAt(dev, tail - 1)).txNext = qpn + 1;
  store<u32>(headTail, qpn + 1, 4);
}

/** Removes the head of a list; returns its qpn. */
function listPop(dev: Device, headTail: usize, viaResp: bool): u32 {
  const qpn = load<u32>(headTail) - 1;
  const q = qpAt(dev, qpn);
  const r = rcOf(q);
  const next = viaResp ? r.respNext : r.txNext;
  store<u32>(headTail, next);
  if (next == 0) store<u32>(headTail, 0, 4);
  if (viaResp) { r.respNext = 0; r.respListed = 0; } else { r.txNext = 0; r.txListed = 0; }
  return qpn;
}

@inline function dataList(port: Port): usize { return changetype<usize>(port) + offsetof<Port>("dataHead"); }
@inline function respList(port: Port): usize { return changetype<usize>(port) + offsetof<Port>("respHead"); }

/** QP `qpn` has request packets to send (txPsn .. msgLastPsn of its current message). */
export function queueRequest(dev: Device, q: Qp, qpn: u32, t: u64): void {
  const r = rcOf(q);
  if (!r.txListed) {
    r.txListed = 1;
    listPush(dev, dataList(portAt(dev, q.port)), qpn, false);
  }
  wakePort(dev, q.port, t);
}

/** QP `qpn` has an answer to send: an ACK or NAK (RESP_ACK), or READ response packets (RESP_READ). */
export function queueAnswer(dev: Device, q: Qp, qpn: u32, kind: u32, t: u64): void {
  const r = rcOf(q);
  // a later ACK replaces one not sent yet; READ responses are never replaced by an ACK
  if (r.respKind != RESP_READ || kind == RESP_READ) r.respKind = kind;
  if (!r.respListed) {
    r.respListed = 1;
    listPush(dev, respList(portAt(dev, q.port)), qpn, true);
  }
  wakePort(dev, q.port, t);
}

/** Takes QP `qpn` out of its port's lists (it is being destroyed, or moves to another port). */
function unlistQp(dev: Device, q: Qp, qpn: u32): void {
  if (!q.remote) return;
  const r = rcOf(q);
  const port = portAt(dev, q.port);
  if (r.txListed) unlink(dev, dataList(port), qpn, false);
  if (r.respListed) unlink(dev, respList(port), qpn, true);
  r.respKind = RESP_NONE;
}

/** QP `qpn` is being destroyed (its slot may be reused at once): off its port's lists, and its NicTimer event gone. */
export function rocev2Close(dev: Device, q: Qp, qpn: u32): void {
  unlistQp(dev, q, qpn);
  const r = rcOf(q);
  if (r.timerPending) { unschedule(dev, EventKind.NicTimer, qpn); r.timerPending = 0; }
}

function unlink(dev: Device, headTail: usize, qpn: u32, viaResp: bool): void {
  let prev: u32 = 0; // qpn + 1 of the entry before, 0 at the head
  let cur = load<u32>(headTail);
  while (cur != 0 && cur != qpn + 1) {
    prev = cur;
    const c = rcOf(qpAt(dev, cur - 1));
    cur = viaResp ? c.respNext : c.txNext;
  }
  if (cur == 0) return;
  const q = qpAt(dev, qpn);
  const r = rcOf(q);
  const next = viaResp ? r.respNext : r.txNext;
  if (prev == 0) store<u32>(headTail, next);
  else if (viaResp) rcOf(qpAt(dev, prev - 1)).respNext = next;
  else rcOf(qpAt(dev, prev - 1)).txNext = next;
  if (load<u32>(headTail, 4) == qpn + 1) store<u32>(headTail, prev, 4);
  if (viaResp) { r.respNext = 0; r.respListed = 0; } else { r.txNext = 0; r.txListed = 0; }
}

/**
 * The request at the head of QP `qpn` (operation `op`) has its source read: a WRITE or SEND joins
 * the outstanding messages and the queue starts its next entry; a READ waits for its responses.
 */
export function rocev2Send(dev: Device, q: Qp, qpn: u32, op: u32, t: u64): void {
  // its send cursor, and a READ's response cursor, at the message's first PSN (a retry's too)
  const r = rcOf(q);
  r.txPsn = q.msgPsn;
  r.rspPsn = q.msgPsn;
  r.rspAsked = NOT_ARMED;
  if (op != OPCODE_RDMA_READ) {
    outPush(dev, q, qpn, qpWqe(dev, qpn), q.msgPsn, q.msgLastPsn);
    queueRequest(dev, q, qpn, t);
    startNextAt(dev, q, qpn, t);
    return;
  }
  q.phase = NicPhase.Send;
  queueRequest(dev, q, qpn, t);
}

/** Does QP `q` owe its peer an answer (an ACK, NAK, READ response or CNP), or is it half way through receiving a message? */
export function rocev2Answering(q: Qp): bool {
  const r = rcOf(q);
  return r.rxOp != 0 || r.respKind != RESP_NONE || r.cnpPending != 0 || r.rdLen != 0;
}

/** QP `qpn` now sends on another port (a re-split): off its old port's lists, and DCQCN back at line rate (its rate was the old path's). */
export function rocev2Moved(dev: Device, q: Qp, qpn: u32): void {
  const r = rcOf(q);
  unlistQp(dev, q, qpn); // idle entries of its old port's lists
  r.rateMbps = 0;
  r.targetMbps = 0;
  r.nextTxAt = 0;
  r.dcqcnAt = NEVER;
  r.dcqcnStage = 0;
  r.byteStage = 0;
  r.bytesSinceStage = 0;
}

/** The PortTx event: port `p` is free at `t`; it sends its next frame, if any. */
export function portTx(dev: Device, p: u32, t: u64): void {
  const port = portAt(dev, p);
  port.txPending = 0;
  while (port.respHead != 0 || port.dataHead != 0) {
    const answer = port.respHead != 0;
    const list = answer ? respList(port) : dataList(port);
    if (!answer && !paceHead(dev, port, t)) return; // every sender waits for its rate: woken then
    const qpn = load<u32>(list) - 1;
    const q = qpAt(dev, qpn);
    const wire = answer ? buildAnswer(dev, q, qpn) : buildRequest(dev, q, qpn);
    if (wire == 0) { listPop(dev, list, answer); continue; } // nothing left
    const full = dev.cfg.timingMode == 0;
    const hdrLen = portsOf(dev).frameHdrLen;
    if (!txRoom(dev, full ? wire - hdrLen : 0)) { port.blocked = 1; return; }
    const end = t + framePs(dev, wire);
    emit(dev, p, end, wire, hdrLen);
    port.busyUntil = end;
    // the packet is on its way: advance the sender, and keep or drop it from the list
    const more = answer ? answerSent(dev, q) : requestSent(dev, q, qpn, t, end, wire);
    listPop(dev, list, answer);
    if (more) {
      if (answer) rcOf(q).respListed = 1; else rcOf(q).txListed = 1;
      listPush(dev, list, qpn, answer); // round robin: to the back
    }
    portWakeAt(dev, port, p, end);
    return;
  }
}

/**
 * Brings the first QP of the port's request list that its DCQCN rate lets send at `t` to the
 * head (the ones before it go to the back, keeping their turns). False when none may send yet:
 * the port then looks again when the first of them may.
 */
function paceHead(dev: Device, port: Port, t: u64): bool {
  const list = dataList(port);
  let wait = NEVER;
  let n: u32 = 0;
  for (let k = port.dataHead; k != 0; k = rcOf(qpAt(dev, k - 1)).txNext) n++;
  for (let k: u32 = 0; k < n; k++) {
    const q = qpAt(dev, load<u32>(list) - 1);
    const r = rcOf(q);
    const may = q.holdUntil > t ? q.holdUntil : r.rateMbps == 0 || r.nextTxAt <= t ? 0 : r.nextTxAt;
    if (may == 0 || (q.phase != NicPhase.Send && !q.rtxActive)) return true;
    if (may < wait) wait = may;
    const qpn = listPop(dev, list, false);
    r.txListed = 1;
    listPush(dev, list, qpn, false);
  }
  if (wait != NEVER) portWakeAt(dev, port, portIndex(dev, port), wait);
  return false;
}

@inline function portIndex(dev: Device, port: Port): u32 {
  return <u32>((changetype<usize>(port) - portsOf(dev).port) / PORT_STRIDE);
}

// ---- frames

/**
 * Writes Ethernet, IPv4, UDP and BTH for a packet of QP `q` with `ext` bytes of extension
 * headers and `payload` bytes of payload; returns the offset of the extension headers.
 */
function headers(dev: Device, q: Qp, qpn: u32, op: u32, psn: u32, ackReq: bool, ext: u32, payload: u32): usize {
  const pad: u32 = (4 - (payload & 3)) & 3;
  // one UDP source port per QP: ECMP keeps a QP on one path, QPs spread over paths
  const bth = ethIpUdp(dev, q.port, q.destDevice, 0xc000 | (qpn & 0x3fff), UDP_PORT_ROCEV2, BTH_SIZE + ext + payload + pad + ICRC_SIZE);
  store<u64>(bth, 0);
  store<u32>(bth, 0, 8);
  setBthOpcode(bth, op);
  setBthSe(bth, 0);
  setBthMigReq(bth, 0);
  setBthPadCnt(bth, pad);
  setBthTVer(bth, 0);
  setBthPKey(bth, BTH_P_KEY_DEFAULT);
  setBthFecn(bth, 0);
  setBthBecn(bth, 0);
  setBthDestQp(bth, q.destQpn);
  setBthAckReq(bth, ackReq ? 1 : 0);
  setBthPsn(bth, psn);
  return bth + BTH_SIZE;
}

/**
 * Copies `payload` bytes from DMA address `from` after the headers at `at`, pads, and writes
 * the ICRC (full mode; timing mode carries no bytes). Returns the frame's wire length and
 * records its header length.
 */
function finish(dev: Device, at: usize, from: u64, payload: u32): u32 {
  const s = portsOf(dev);
  const f = s.frame;
  const hdrLen = <u32>(at - f);
  const pad: u32 = (4 - (payload & 3)) & 3;
  const wire = hdrLen + payload + pad + ICRC_SIZE;
  s.frameHdrLen = hdrLen;
  if (dev.cfg.timingMode == 0) {
    if (payload > 0) memory.copy(at, dmaPtr(dev, from, <u64>payload), payload);
    for (let k: u32 = 0; k < pad; k++) store<u8>(at + payload + k, 0);
    const ip = f + ETH_SIZE;
    store<u32>(at + payload + pad, icrcIpv4(ip, wire - ETH_SIZE)); // little-endian: the ICRC's wire order
  }
  return wire;
}

/** Builds QP `q`'s next request packet — a message sent again first, else its head's — ; 0 when it has none left to send. */
function buildRequest(dev: Device, q: Qp, qpn: u32): u32 {
  const r = rcOf(q);
  if (q.rtxActive) {
    // the outstanding messages come first: they are older than the head
    const e = outAt(dev, q, qpn, q.rtxK);
    return buildData(dev, q, qpn, e, outFirstPsn(e), q.rtxPsn);
  }
  if (q.phase != NicPhase.Send || !q.busy) return 0;
  if (((r.txPsn - q.msgPsn) & BTH_PSN_MASK) > ((q.msgLastPsn - q.msgPsn) & BTH_PSN_MASK)) return 0;
  return buildData(dev, q, qpn, qpWqe(dev, qpn), q.msgPsn, r.txPsn);
}

/** Builds packet `psn` of the message whose WQE is at `w` and whose first PSN is `msgPsn`. */
function buildData(dev: Device, q: Qp, qpn: u32, w: usize, msgPsn: u32, psn: u32): u32 {
  const op = <u32>load<u8>(w + WQE_OPCODE);
  const len = load<u32>(w + WQE_LENGTH);
  const mtu = dev.cfg.mtuBytes;
  if (op == OPCODE_RDMA_READ) {
    // from PSN `psn` on: asked again from a missing response, it asks only for the rest of
    // the READ, the responses before it being in (IBA vol. 1 9.7.5.1.3)
    const done = ((psn - msgPsn) & BTH_PSN_MASK) * mtu;
    const at = headers(dev, q, qpn, OP_RC_READ_REQUEST, psn, true, RETH_SIZE, 0);
    setRethVa(at, load<u64>(w + WQE_RADDR) + <u64>done);
    setRethRkey(at, load<u32>(w + WQE_RKEY));
    setRethDmaLength(at, len - done);
    return finish(dev, at + RETH_SIZE, 0, 0);
  }
  const k = (psn - msgPsn) & BTH_PSN_MASK;
  const n = packetsOf(len, mtu);
  const first = k == 0, last = k == n - 1;
  const off = k * mtu;
  const plen = last ? len - off : mtu;
  const isWrite = op == OPCODE_RDMA_WRITE || op == OPCODE_RDMA_WRITE_WITH_IMM;
  const imm = last && (op == OPCODE_RDMA_WRITE_WITH_IMM || op == OPCODE_SEND_WITH_IMM);
  let opc: u32;
  if (isWrite) opc = first && last ? (imm ? OP_RC_WRITE_ONLY_IMM : OP_RC_WRITE_ONLY) : first ? OP_RC_WRITE_FIRST : last ? (imm ? OP_RC_WRITE_LAST_IMM : OP_RC_WRITE_LAST) : OP_RC_WRITE_MIDDLE;
  else opc = first && last ? (imm ? OP_RC_SEND_ONLY_IMM : OP_RC_SEND_ONLY) : first ? OP_RC_SEND_FIRST : last ? (imm ? OP_RC_SEND_LAST_IMM : OP_RC_SEND_LAST) : OP_RC_SEND_MIDDLE;
  const ext = (isWrite && first ? RETH_SIZE : 0) + (imm ? IMM_DT_SIZE : 0);
  let at = headers(dev, q, qpn, opc, psn, last, ext, plen);
  if (isWrite && first) {
    setRethVa(at, load<u64>(w + WQE_RADDR));
    setRethRkey(at, load<u32>(w + WQE_RKEY));
    setRethDmaLength(at, len);
    at += RETH_SIZE;
  }
  if (imm) { setImmDtData(at, load<u32>(w + WQE_IMM)); at += IMM_DT_SIZE; }
  q.txBytes += plen;
  return finish(dev, at, load<u64>(w + WQE_LADDR) + <u64>off, plen);
}

/** After a request packet of `wire` bytes went out from `start` to `end`: the next PSN; true while more remain. */
function requestSent(dev: Device, q: Qp, qpn: u32, start: u64, end: u64, wire: u32): bool {
  const r = rcOf(q);
  if (r.rateMbps > 0) {
    // paced: the next packet no sooner than its size at the QP's rate after this one began
    r.nextTxAt = start + <u64>Math.ceil(<f64>(wire + WIRE_OVERHEAD) * 8e6 / r.rateMbps);
    r.bytesSinceStage += <u64>wire;
    if (r.bytesSinceStage >= <u64>dev.cfg.dcqcnByteCounter) {
      r.bytesSinceStage = 0;
      r.byteStage++;
      dcqcnIncrease(dev, q);
    }
  }
  if (q.rtxActive) {
    // the send cursor over the outstanding messages: on to its next packet, then the next message
    const e = outAt(dev, q, qpn, q.rtxK);
    const was = q.rtxPsn;
    q.rtxPsn = psnAdd(q.rtxPsn, 1);
    if (was == outLastPsn(e)) {
      if (r.timerAt == NEVER || r.timerAt == 0) armTimer(dev, q, qpn, end + dev.cfg.transportTimeoutPs);
      q.rtxK++;
      if (q.rtxK >= q.outCount) q.rtxActive = 0;
      else q.rtxPsn = outFirstPsn(outAt(dev, q, qpn, q.rtxK));
    }
    return q.rtxActive != 0 || (q.busy != 0 && q.phase == NicPhase.Send);
  }
  // the head's own packets: a READ request (one packet; its responses use the PSNs after it)
  r.txPsn = psnAdd(q.msgLastPsn, 1);
  if (r.timerAt == NEVER || r.timerAt == 0) armTimer(dev, q, qpn, end + dev.cfg.transportTimeoutPs);
  q.phase = NicPhase.AwaitAck; // it stays at the head until its responses are in
  return false;
}

// ---- DCQCN, the sender's side (Zhu et al., "Congestion Control for Large-Scale RDMA
// Deployments", SIGCOMM 2015, section 3): a CNP cuts the rate by alpha / 2 and raises alpha;
// every dcqcnTimerPs without one alpha decays, and the timer and a byte counter each raise the
// rate in stages: fast recovery towards the target, then additive, then hyper increase.

@inline function lineMbps(dev: Device): f64 { return <f64>dev.cfg.portGbps * 1000; }

/** A CNP reached QP `q` at `t`: cut its rate. */
export function dcqcnCut(dev: Device, q: Qp, qpn: u32, t: u64): void {
  if (dev.cfg.dcqcn == 0) return;
  const r = rcOf(q);
  const line = lineMbps(dev);
  if (r.rateMbps == 0) { r.rateMbps = line; r.targetMbps = line; r.alpha = 1; }
  const g = 1.0 / <f64>(1 << dev.cfg.dcqcnGShift);
  r.targetMbps = r.rateMbps;
  r.rateMbps = max(<f64>dev.cfg.dcqcnMinMbps, r.rateMbps * (1 - r.alpha / 2));
  r.alpha = (1 - g) * r.alpha + g;
  r.dcqcnStage = 0;
  r.byteStage = 0;
  r.bytesSinceStage = 0;
  r.dcqcnAt = t + dev.cfg.dcqcnTimerPs;
  wantTimer(dev, q, qpn, r.dcqcnAt);
  statAdd(dev, STAT_ROCE_RATE_CUTS, 1);
}

/** QP `q`'s DCQCN timer at `t`: alpha decays and the rate rises a stage; back at line rate it stops. */
export function dcqcnTimer(dev: Device, q: Qp, qpn: u32, t: u64): void {
  const r = rcOf(q);
  const g = 1.0 / <f64>(1 << dev.cfg.dcqcnGShift);
  r.alpha = (1 - g) * r.alpha;
  r.dcqcnStage++;
  dcqcnIncrease(dev, q);
  if (r.rateMbps >= lineMbps(dev)) { r.rateMbps = 0; r.dcqcnAt = NEVER; return; } // unlimited again
  r.dcqcnAt = t + dev.cfg.dcqcnTimerPs;
  wantTimer(dev, q, qpn, r.dcqcnAt);
}

function dcqcnIncrease(dev: Device, q: Qp): void {
  const r = rcOf(q);
  const f = dev.cfg.dcqcnFastRecovery;
  const hi = r.dcqcnStage > r.byteStage ? r.dcqcnStage : r.byteStage;
  const lo = r.dcqcnStage < r.byteStage ? r.dcqcnStage : r.byteStage;
  if (hi >= f) r.targetMbps += <f64>(lo >= f ? dev.cfg.dcqcnHaiMbps : dev.cfg.dcqcnAiMbps);
  const line = lineMbps(dev);
  if (r.targetMbps > line) r.targetMbps = line;
  r.rateMbps = (r.targetMbps + r.rateMbps) / 2;
}

/**
 * Disarms QP `q`'s transport timer. With no DCQCN timer running either, its pending NicTimer
 * event goes too, so an idle QP leaves nothing in the event queue (a runner sees the device idle).
 */
export function disarmTimer(dev: Device, q: Qp, qpn: u32): void {
  const r = rcOf(q);
  r.timerAt = NEVER;
  if (r.timerPending && (r.dcqcnAt == NEVER || r.dcqcnAt == 0)) {
    unschedule(dev, EventKind.NicTimer, qpn);
    r.timerPending = 0;
  }
}

/** Arms QP `q`'s transport timer for `at`. */
export function armTimer(dev: Device, q: Qp, qpn: u32, at: u64): void {
  rcOf(q).timerAt = at;
  wantTimer(dev, q, qpn, at);
}

/**
 * Makes sure QP `q`'s one NicTimer event comes no later than `at`. It is re-armed lazily: an
 * event that comes early finds its deadlines later and waits again; only a deadline earlier
 * than the pending event moves it.
 */
export function wantTimer(dev: Device, q: Qp, qpn: u32, at: u64): void {
  const r = rcOf(q);
  if (r.timerPending && r.timerEventAt <= at) return;
  if (r.timerPending) unschedule(dev, EventKind.NicTimer, qpn);
  r.timerPending = 1;
  r.timerEventAt = at;
  schedule(dev, at, EventKind.NicTimer, qpn, 0);
}

/** QP `qpn`'s congestion is noted: a CNP to its sender goes out with its next answers. */
export function queueCnp(dev: Device, q: Qp, qpn: u32, t: u64): void {
  const r = rcOf(q);
  r.cnpPending = 1;
  if (!r.respListed) {
    r.respListed = 1;
    listPush(dev, respList(portAt(dev, q.port)), qpn, true);
  }
  wakePort(dev, q.port, t);
}

/** Builds QP `q`'s answer: an ACK/NAK, or its next READ response packet; 0 when none is left. */
function buildAnswer(dev: Device, q: Qp, qpn: u32): u32 {
  const r = rcOf(q);
  if (r.cnpPending) {
    const at = headers(dev, q, qpn, OP_CNP, 0, false, CNP_SIZE, 0);
    setBthBecn(at - BTH_SIZE, 1);
    memory.fill(at, 0, CNP_SIZE);
    return finish(dev, at + CNP_SIZE, 0, 0);
  }
  if (r.respKind == RESP_ACK) {
    const at = headers(dev, q, qpn, OP_RC_ACK, r.respPsn, false, AETH_SIZE, 0);
    setAethSyndrome(at, r.respSyndrome);
    setAethMsn(at, r.msn);
    return finish(dev, at + AETH_SIZE, 0, 0);
  }
  if (r.respKind != RESP_READ) return 0;
  const mtu = dev.cfg.mtuBytes;
  const plen = r.rdLen > mtu ? mtu : r.rdLen;
  const last = r.rdLen <= mtu;
  const op = r.rdFirst && last ? OP_RC_READ_RESPONSE_ONLY : r.rdFirst ? OP_RC_READ_RESPONSE_FIRST : last ? OP_RC_READ_RESPONSE_LAST : OP_RC_READ_RESPONSE_MIDDLE;
  const aeth = op != OP_RC_READ_RESPONSE_MIDDLE;
  let at = headers(dev, q, qpn, op, r.rdPsn, false, aeth ? AETH_SIZE : 0, plen);
  if (aeth) {
    setAethSyndrome(at, 0x1f); // ACK, no credit count
    setAethMsn(at, r.msn);
    at += AETH_SIZE;
  }
  return finish(dev, at, r.rdVa, plen);
}

/** After an answer left: true while READ response packets remain. */
function answerSent(dev: Device, q: Qp): bool {
  const r = rcOf(q);
  if (r.cnpPending) { r.cnpPending = 0; statAdd(dev, STAT_ROCE_CNPS_SENT, 1); return r.respKind != RESP_NONE; }
  if (r.respKind != RESP_READ) { r.respKind = RESP_NONE; return false; }
  const mtu = dev.cfg.mtuBytes;
  const plen = r.rdLen > mtu ? mtu : r.rdLen;
  r.rdLen -= plen;
  r.rdVa += <u64>plen;
  r.rdPsn = psnAdd(r.rdPsn, 1);
  r.rdFirst = 0;
  if (r.rdLen > 0) return true;
  r.respKind = RESP_NONE;
  return false;
}
