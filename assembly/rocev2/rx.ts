// RoCEv2 frames in (nic/rx.ts checked their Ethernet, IPv4 and UDP headers and dispatched them
// by UDP port, nic/transport.ts): BTH and the rest are checked, then a request goes to its QP's
// responder half, an answer (ACK, NAK, READ response) to its requester half; and the transport
// timer.
// RC semantics (IBA vol. 1 ch. 9): the responder takes packets in PSN order only — a duplicate
// is answered with an ACK again, a packet ahead of the expected PSN with one PSN-sequence NAK per
// expected PSN — and places each packet's payload where its message says, on arrival. Bad
// frames are counted by reason and dropped; nothing traps.

import { Device, statAdd } from "../core/device";
import { NEVER } from "../core/time";
import { Qp, qpAt, qpWqe, mrCheck } from "../nic/verbs";
import { rcOf } from "./qp";
import { dmaPtr } from "../mem/dma";
import { cqeVisible } from "../nic/completions";
import { qpError } from "../nic/queues";
import { recvPosted, remoteGrants, recvAddr, recvLength, recvFits, recvComplete, recvFail } from "../nic/receive";
import { NicPhase, phaseAt, notReady } from "../nic/phases";
import { queueRequest, queueAnswer, queueCnp, wantTimer, armTimer, disarmTimer, dcqcnCut, dcqcnTimer, RESP_ACK, RESP_READ } from "./tx";
import { packetsOf, psnAdd, psnDiff } from "../nic/psn";
import { outAt, outFirstPsn, outLastPsn, outComplete, outAck, outDrain } from "../nic/outstanding";
import { icrcIpv4 } from "../checksum/icrc";
import {
  ETH_SIZE, IPV4_SIZE,
  getIpv4Ecn, IPV4_ECN_CE, UDP_SIZE, UDP_PORT_ROCEV2,
  BTH_SIZE, BTH_PSN_MASK, getBthOpcode, getBthPadCnt, getBthTVer, getBthDestQp, getBthAckReq, getBthPsn,
  RETH_SIZE, getRethVa, getRethRkey, getRethDmaLength, AETH_SIZE, getAethSyndrome, IMM_DT_SIZE, getImmDtData, ICRC_SIZE,
  AETH_SYNDROME_TYPE_MASK, AETH_SYNDROME_ACK, AETH_SYNDROME_RNR_NAK, AETH_SYNDROME_NAK, AETH_SYNDROME_VALUE_MASK,
  AETH_NAK_PSN_SEQ_ERR, AETH_NAK_INVALID_REQUEST, AETH_NAK_REMOTE_ACCESS_ERROR, AETH_NAK_REMOTE_OPERATIONAL_ERROR,
  OPF_KNOWN, OPF_PAYLOAD, OPF_RETH, OPF_AETH, OPF_IMM_DT, OPF_CNP, opcodeFlags,
  OP_RC_SEND_FIRST, OP_RC_SEND_MIDDLE, OP_RC_SEND_LAST, OP_RC_SEND_LAST_IMM, OP_RC_SEND_ONLY, OP_RC_SEND_ONLY_IMM,
  OP_RC_WRITE_FIRST, OP_RC_WRITE_MIDDLE, OP_RC_WRITE_LAST, OP_RC_WRITE_LAST_IMM, OP_RC_WRITE_ONLY, OP_RC_WRITE_ONLY_IMM,
  OP_RC_READ_REQUEST, OP_RC_READ_RESPONSE_FIRST, OP_RC_READ_RESPONSE_MIDDLE, OP_RC_READ_RESPONSE_LAST, OP_RC_READ_RESPONSE_ONLY, OP_RC_ACK,
} from "../generated/headers";
import {
  OPCODE_RDMA_WRITE_WITH_IMM, OPCODE_RDMA_READ, OPCODE_RECV,
  STATUS_SUCCESS, STATUS_LOC_LEN_ERR, STATUS_LOC_PROT_ERR, STATUS_REM_INV_REQ_ERR, STATUS_REM_ACCESS_ERR, STATUS_REM_OP_ERR,
  STATUS_RETRY_EXC_ERR, STATUS_RNR_RETRY_EXC_ERR, STATUS_BAD_RESP_ERR, STAT_NIC_RNR_RETRIES, ACCESS_LOCAL_WRITE, ACCESS_REMOTE_WRITE, ACCESS_REMOTE_READ, QP_STATE_RTR, QP_STATE_RTS,
  WQE_OPCODE, WQE_LADDR, WQE_LENGTH, WQE_LKEY, TRANSPORT_ROCEV2,
  STAT_ROCE_RX_MALFORMED, STAT_ROCE_RX_BAD_ICRC,
  STAT_ROCE_RX_UNKNOWN_QP, STAT_ROCE_RX_DUPLICATE, STAT_ROCE_RX_OUT_OF_ORDER, STAT_ROCE_RX_CNP,
  STAT_ROCE_NAKS_SENT, STAT_ROCE_RETRANSMITS, STAT_ROCE_TIMEOUTS, STAT_ROCE_STALE_ANSWERS, STAT_ROCE_RX_CE, STAT_ROCE_RX_REQUESTS, STAT_ROCE_RX_ANSWERS, STAT_ROCE_GHOST_ANSWERS,
  STAT_ROCE_RETRANSMITS_NAK, STAT_ROCE_RETRANSMITS_READ_GAP, STAT_ROCE_RETRANSMITS_TIMEOUT, STAT_ROCE_RETRANSMITS_RNR,
} from "../generated/layouts";

// RcQp.rxOp: the kind of message being received
const RX_NONE: u32 = 0;
const RX_WRITE: u32 = 1;
const RX_SEND: u32 = 2;

// ---- one frame

@inline function bad(dev: Device, stat: u32): void { statAdd(dev, stat, 1); }

/**
 * A frame to UDP port UDP_PORT_ROCEV2, its Ethernet, IPv4 and UDP headers already checked
 * (nic/rx.ts): `f` its headers (and in full mode its body after them), `hdrLen` their length.
 */
@inline export function rocev2Receive(dev: Device, f: usize, wire: u32, hdrLen: u32, port: u32, full: bool, t: u64): void {
  const ip = f + ETH_SIZE, bth = ip + IPV4_SIZE + UDP_SIZE;
  const minHdr = ETH_SIZE + IPV4_SIZE + UDP_SIZE + BTH_SIZE;
  const op = getBthOpcode(bth);
  const flags = opcodeFlags(op);
  if ((flags & OPF_KNOWN) == 0 || getBthTVer(bth) != 0) { bad(dev, STAT_ROCE_RX_MALFORMED); return; }
  const ext = ((flags & OPF_RETH) ? RETH_SIZE : 0) + ((flags & OPF_AETH) ? AETH_SIZE : 0) + ((flags & OPF_IMM_DT) ? IMM_DT_SIZE : 0) + ((flags & OPF_CNP) ? 16 : 0);
  const pad = getBthPadCnt(bth);
  if (hdrLen != minHdr + ext || wire < hdrLen + pad + ICRC_SIZE) { bad(dev, STAT_ROCE_RX_MALFORMED); return; }
  const payload = wire - hdrLen - pad - ICRC_SIZE;
  // what the opcode allows (InfiniBand's packet rules): no payload or pad where it carries none,
  // at most one path MTU, exactly one in the FIRST and MIDDLE packets of a message
  if ((payload > 0 || pad > 0) && (flags & OPF_PAYLOAD) == 0
    || payload > dev.cfg.mtuBytes || isFirstOrMiddle(op) && payload != dev.cfg.mtuBytes) { bad(dev, STAT_ROCE_RX_MALFORMED); return; }
  if (full && load<u32>(f + wire - ICRC_SIZE) != icrcIpv4(ip, wire - ETH_SIZE)) { bad(dev, STAT_ROCE_RX_BAD_ICRC); return; }
  const qpn = getBthDestQp(bth);
  if (qpn >= dev.cfg.maxQps) { bad(dev, STAT_ROCE_RX_UNKNOWN_QP); return; }
  const q = qpAt(dev, qpn);
  // a device running the MetaRoCE-like transport has no RoCEv2 QP: its QPs are streams of that transport
  if (!q.valid || !q.remote || q.port != port || dev.cfg.transport != TRANSPORT_ROCEV2) { bad(dev, STAT_ROCE_RX_UNKNOWN_QP); return; }
  if ((flags & OPF_CNP) != 0) { statAdd(dev, STAT_ROCE_RX_CNP, 1); dcqcnCut(dev, q, qpn, t); return; }
  const x = bth + BTH_SIZE; // extension headers, then the payload
  if (op <= OP_RC_READ_REQUEST) {
    if (getIpv4Ecn(ip) == IPV4_ECN_CE) congested(dev, q, qpn, t);
    responder(dev, q, qpn, op, flags, bth, x, f + hdrLen, payload, t);
  }
  else requester(dev, q, qpn, op, bth, x, f + hdrLen, payload, t);
}

// ---- responder half

/** A request packet for QP `q` arrived marked CE: its sender hears of it, at most once per dcqcnCnpIntervalPs (DCQCN's NP). */
function congested(dev: Device, q: Qp, qpn: u32, t: u64): void {
  const r = rcOf(q);
  statAdd(dev, STAT_ROCE_RX_CE, 1);
  if (dev.cfg.dcqcn == 0) return;
  if (r.lastCnpAt != 0 && t - r.lastCnpAt < dev.cfg.dcqcnCnpIntervalPs) return;
  r.lastCnpAt = t;
  queueCnp(dev, q, qpn, t);
}

/** Sends an ACK for `psn`, or a NAK with `syndrome`. */
function answer(dev: Device, q: Qp, qpn: u32, psn: u32, syndrome: u32, t: u64): void {
  const r = rcOf(q);
  if ((syndrome & AETH_SYNDROME_TYPE_MASK) != AETH_SYNDROME_ACK) statAdd(dev, STAT_ROCE_NAKS_SENT, 1);
  r.respPsn = psn;
  r.respSyndrome = syndrome;
  queueAnswer(dev, q, qpn, RESP_ACK, t);
}

@inline function isFirst(op: u32): bool {
  return op == OP_RC_SEND_FIRST || op == OP_RC_SEND_ONLY || op == OP_RC_SEND_ONLY_IMM
    || op == OP_RC_WRITE_FIRST || op == OP_RC_WRITE_ONLY || op == OP_RC_WRITE_ONLY_IMM;
}

@inline function isLast(op: u32): bool {
  return op == OP_RC_SEND_LAST || op == OP_RC_SEND_LAST_IMM || op == OP_RC_SEND_ONLY || op == OP_RC_SEND_ONLY_IMM
    || op == OP_RC_WRITE_LAST || op == OP_RC_WRITE_LAST_IMM || op == OP_RC_WRITE_ONLY || op == OP_RC_WRITE_ONLY_IMM;
}

/** A packet of a multi-packet message that is not its last: it carries exactly one path MTU. */
@inline function isFirstOrMiddle(op: u32): bool {
  return op == OP_RC_SEND_FIRST || op == OP_RC_SEND_MIDDLE || op == OP_RC_WRITE_FIRST || op == OP_RC_WRITE_MIDDLE
    || op == OP_RC_READ_RESPONSE_FIRST || op == OP_RC_READ_RESPONSE_MIDDLE;
}

@inline function isSend(op: u32): bool { return op <= OP_RC_SEND_ONLY_IMM; }

/** Does the RETH at `x` name memory of QP `q`'s PD that grants `need`? */
function rethGrants(dev: Device, q: Qp, x: usize, need: u32): bool {
  return remoteGrants(dev, q, getRethRkey(x), getRethVa(x), <u64>getRethDmaLength(x), need);
}

/** A request packet for QP `q` (its headers after the BTH at `x`, its payload at `pl`). */
function responder(dev: Device, q: Qp, qpn: u32, op: u32, flags: u32, bth: usize, x: usize, pl: usize, payload: u32, t: u64): void {
  const r = rcOf(q);
  if (q.state != QP_STATE_RTR && q.state != QP_STATE_RTS) { bad(dev, STAT_ROCE_RX_UNKNOWN_QP); return; }
  const psn = getBthPsn(bth);
  const d = psnDiff(psn, r.ePsn);
  if (d < 0) {
    statAdd(dev, STAT_ROCE_RX_DUPLICATE, 1);
    if (op == OP_RC_READ_REQUEST) {
      // a READ asked again (a response was lost): it runs again from its own PSN (IBA vol. 1
      // 9.7.5.1.3); the expected PSN and MSN stay where they are
      if (!rethGrants(dev, q, x, ACCESS_REMOTE_READ)) { answer(dev, q, qpn, psn, AETH_SYNDROME_NAK | AETH_NAK_REMOTE_ACCESS_ERROR, t); return; }
      r.rdVa = getRethVa(x);
      r.rdLen = getRethDmaLength(x);
      r.rdPsn = psn;
      r.rdFirst = 1;
      queueAnswer(dev, q, qpn, RESP_READ, t);
      return;
    }
    // a duplicate (our ACK was lost, or the requester went back): acknowledge what we have
    answer(dev, q, qpn, psnAdd(r.ePsn, BTH_PSN_MASK), AETH_SYNDROME_ACK | AETH_SYNDROME_VALUE_MASK, t);
    return;
  }
  if (d > 0) {
    // a packet was lost before this one: ask for the expected PSN, once
    statAdd(dev, STAT_ROCE_RX_OUT_OF_ORDER, 1);
    if (!r.nakSent || r.nakPsn != r.ePsn) {
      r.nakSent = 1;
      r.nakPsn = r.ePsn;
      answer(dev, q, qpn, r.ePsn, AETH_SYNDROME_NAK | AETH_NAK_PSN_SEQ_ERR, t);
    }
    return;
  }
  r.nakSent = 0;
  statAdd(dev, STAT_ROCE_RX_REQUESTS, 1);
  if (op == OP_RC_READ_REQUEST) {
    if (!rethGrants(dev, q, x, ACCESS_REMOTE_READ)) { answer(dev, q, qpn, psn, AETH_SYNDROME_NAK | AETH_NAK_REMOTE_ACCESS_ERROR, t); return; }
    const len = getRethDmaLength(x);
    r.rdVa = getRethVa(x);
    r.rdLen = len;
    r.rdPsn = psn;
    r.rdFirst = 1;
    r.ePsn = psnAdd(r.ePsn, packetsOf(len, dev.cfg.mtuBytes));
    r.msn++;
    queueAnswer(dev, q, qpn, RESP_READ, t);
    return;
  }
  const withImm = (flags & OPF_IMM_DT) != 0;
  if (isLast(op) && withImm && !isSend(op) && !recvPosted(q, q.rqCi)) {
    // a WRITE with immediate needs a receive for its immediate: not ready; nothing is taken
    // or placed, so the same packet is welcome again when the requester retries
    answer(dev, q, qpn, psn, AETH_SYNDROME_RNR_NAK, t);
    return;
  }
  if (isFirst(op)) {
    if (r.rxOp != RX_NONE) { answer(dev, q, qpn, psn, AETH_SYNDROME_NAK | AETH_NAK_INVALID_REQUEST, t); return; }
    if (isSend(op)) {
      if (!recvPosted(q, q.rqCi)) { answer(dev, q, qpn, psn, AETH_SYNDROME_RNR_NAK, t); return; } // receiver not ready
      r.rxDst = recvAddr(dev, q, q.rqCi, 0);
      r.rxLen = recvLength(dev, q, q.rqCi);
      r.rxRecv = q.rqCi;
      r.rxOp = RX_SEND;
    } else {
      if (!rethGrants(dev, q, x, ACCESS_REMOTE_WRITE)) { answer(dev, q, qpn, psn, AETH_SYNDROME_NAK | AETH_NAK_REMOTE_ACCESS_ERROR, t); return; }
      r.rxDst = getRethVa(x);
      r.rxLen = getRethDmaLength(x);
      r.rxOp = RX_WRITE;
    }
    r.rxOff = 0;
  } else if (r.rxOp == RX_NONE || isSend(op) != (r.rxOp == RX_SEND)) {
    answer(dev, q, qpn, psn, AETH_SYNDROME_NAK | AETH_NAK_INVALID_REQUEST, t);
    return;
  }
  // place the payload where the message says
  if (isSend(op)) {
    // the receive the SEND fills (the oldest: one message at a time) takes these bytes, or fails
    const fits = recvFits(dev, q, r.rxRecv, r.rxOff, payload);
    if (fits != STATUS_SUCCESS) { failRecv(dev, q, qpn, psn, fits, fits == STATUS_LOC_LEN_ERR ? AETH_NAK_INVALID_REQUEST : AETH_NAK_REMOTE_OPERATIONAL_ERROR, t); return; }
  } else if (<u64>r.rxOff + <u64>payload > <u64>r.rxLen) {
    answer(dev, q, qpn, psn, AETH_SYNDROME_NAK | AETH_NAK_INVALID_REQUEST, t);
    return;
  }
  const dst = r.rxDst + <u64>r.rxOff;
  if (dev.cfg.timingMode == 0 && payload > 0) memory.copy(dmaPtr(dev, dst, <u64>payload), pl, payload);
  r.rxOff += payload;
  q.rxBytes += payload;
  r.ePsn = psnAdd(r.ePsn, 1);
  if (isLast(op)) {
    if (isSend(op) || withImm) {
      // a SEND fills its receive; a WRITE with immediate consumes one for the immediate
      const imm = withImm ? getImmDtData(x + ((flags & OPF_RETH) ? RETH_SIZE : 0)) : 0;
      const rxOpcode = isSend(op) ? OPCODE_RECV : OPCODE_RDMA_WRITE_WITH_IMM;
      const byteLen = isSend(op) ? r.rxOff : r.rxLen;
      recvComplete(dev, q, qpn, byteLen, imm, withImm, rxOpcode, t); // the oldest receive (the one a SEND began filling)
    }
    r.msn++;
    r.rxOp = RX_NONE;
  }
  if (getBthAckReq(bth)) answer(dev, q, qpn, psn, AETH_SYNDROME_ACK | AETH_SYNDROME_VALUE_MASK, t);
}

/** The receive being filled (the oldest) fails with `rxStatus`, the requester gets a NAK, and the QP goes to error. */
function failRecv(dev: Device, q: Qp, qpn: u32, psn: u32, rxStatus: u32, nak: u32, t: u64): void {
  const r = rcOf(q);
  r.rxOp = RX_NONE;
  recvFail(dev, q, qpn, rxStatus, t);
  answer(dev, q, qpn, psn, AETH_SYNDROME_NAK | nak, t);
  qpError(dev, qpn, t);
}

// ---- requester half

/** The request in flight is over with `status`: its completion after the CQE's own latency. */
function complete(dev: Device, q: Qp, qpn: u32, status: u32, t: u64): void {
  const r = rcOf(q);
  if (q.outCount == 0) disarmTimer(dev, q, qpn);
  q.status = status;
  r.txPsn = psnAdd(q.msgLastPsn, 1);
  q.gen++; // its pending phase, if any, is stale now
  phaseAt(dev, q, qpn, NicPhase.Done, cqeVisible(dev, q.sendCq, t));
}

/**
 * Goes back to PSN `psn` of the current message and sends again from there; a READ asks for
 * its responses from `psn` on (those before it are in: it never takes a NAK's word that they
 * are, so it still expects the first missing one).
 */
function goBack(dev: Device, q: Qp, qpn: u32, psn: u32, cause: u32, t: u64): void {
  const r = rcOf(q);
  retransmit(dev, cause);
  if (q.outCount == 0) disarmTimer(dev, q, qpn);
  r.txPsn = psn;
  if (psnDiff(psn, r.rspPsn) < 0) r.rspPsn = psn;
  r.rspAsked = psn;
  q.phase = NicPhase.Send;
  queueRequest(dev, q, qpn, t);
}

// ---- the outstanding messages (outstanding.ts): sent, not yet acknowledged

/** Every outstanding message up to PSN `upto` is acknowledged: they complete in order, as their completions become visible. */
function ackOutstanding(dev: Device, q: Qp, qpn: u32, upto: u32, t: u64): void {
  if (outAck(dev, q, qpn, upto, t) == 0) return;
  // the send cursor never goes over acknowledged messages again
  if (q.rtxActive && q.rtxK < q.outAcked) {
    q.rtxK = q.outAcked;
    if (q.rtxK >= q.outCount) q.rtxActive = 0;
    else q.rtxPsn = outFirstPsn(outAt(dev, q, qpn, q.rtxK));
  }
  q.retriesLeft = dev.cfg.transportRetries;
  q.rnrLeft = dev.cfg.rnrRetries;
  const headWaits = q.busy && (q.phase == NicPhase.Send || q.phase == NicPhase.AwaitAck);
  if (q.outAcked < q.outCount || headWaits) armTimer(dev, q, qpn, t + dev.cfg.transportTimeoutPs);
  else disarmTimer(dev, q, qpn);
}

/** A requester sends again from a PSN, for `cause` (a STAT_ROCE_RETRANSMITS_* counter). */
@inline function retransmit(dev: Device, cause: u32): void {
  statAdd(dev, STAT_ROCE_RETRANSMITS, 1);
  statAdd(dev, cause, 1);
}

/** Sends the outstanding messages again from PSN `psn` (of the oldest), then the head's from its start, for `cause` (a STAT_ROCE_RETRANSMITS_* counter). */
function resendOutstanding(dev: Device, q: Qp, qpn: u32, psn: u32, cause: u32, t: u64): void {
  const r = rcOf(q);
  retransmit(dev, cause);
  q.rtxActive = 1;
  q.rtxK = q.outAcked; // the first not acknowledged
  q.rtxPsn = psn;
  if (q.busy && q.phase == NicPhase.Send) r.txPsn = q.msgPsn;
  queueRequest(dev, q, qpn, t);
}

/** The oldest outstanding message failed with `status`: it completes so, and the QP goes to error, which flushes the rest, the head and the queue in order. */
function failOutstanding(dev: Device, q: Qp, qpn: u32, status: u32, t: u64): void {
  outDrain(dev, q, qpn, t, true); // the acknowledged ones before it complete first
  outComplete(dev, q, qpn, status, t);
  qpError(dev, qpn, t);
}

/** An ACK or NAK whose PSN falls in the outstanding messages. */
function outstandingAnswer(dev: Device, q: Qp, qpn: u32, x: usize, psn: u32, t: u64): void {
  const syn = getAethSyndrome(x);
  const type = syn & AETH_SYNDROME_TYPE_MASK;
  if (type == AETH_SYNDROME_ACK) { ackOutstanding(dev, q, qpn, psn, t); return; }
  // a NAK acknowledges everything before its PSN
  ackOutstanding(dev, q, qpn, psnAdd(psn, BTH_PSN_MASK), t);
  if (q.outAcked == q.outCount) return;
  if (type == AETH_SYNDROME_RNR_NAK) {
    if (q.rnrLeft == 0) { failOutstanding(dev, q, qpn, STATUS_RNR_RETRY_EXC_ERR, t); return; }
    q.rnrLeft--;
    statAdd(dev, STAT_NIC_RNR_RETRIES, 1);
    // the message starts again, after the RNR timer
    q.holdUntil = t + dev.cfg.rnrTimerPs;
    armTimer(dev, q, qpn, q.holdUntil + dev.cfg.transportTimeoutPs);
    resendOutstanding(dev, q, qpn, outFirstPsn(outAt(dev, q, qpn, q.outAcked)), STAT_ROCE_RETRANSMITS_RNR, t);
    return;
  }
  const code = syn & AETH_SYNDROME_VALUE_MASK;
  if (code == AETH_NAK_PSN_SEQ_ERR) { resendOutstanding(dev, q, qpn, psn, STAT_ROCE_RETRANSMITS_NAK, t); return; }
  failOutstanding(dev, q, qpn, code == AETH_NAK_REMOTE_ACCESS_ERROR ? STATUS_REM_ACCESS_ERR : code == AETH_NAK_REMOTE_OPERATIONAL_ERROR ? STATUS_REM_OP_ERR : STATUS_REM_INV_REQ_ERR, t);
}

/** An answer (ACK, NAK or READ response) for QP `q`'s outstanding messages or its request in flight. */
function requester(dev: Device, q: Qp, qpn: u32, op: u32, bth: usize, x: usize, pl: usize, payload: u32, t: u64): void {
  const r = rcOf(q);
  const psn = getBthPsn(bth);
  const inFlight = q.busy && (q.phase == NicPhase.Send || q.phase == NicPhase.AwaitAck);
  // IBA vol. 1 9.7.5.1.1: an answer past the newest request sent is a ghost (a forged or
  // misrouted frame); it must acknowledge nothing, so it is judged before anything is taken
  if (inFlight || q.outAcked < q.outCount) {
    const newest = inFlight ? q.msgLastPsn : outLastPsn(outAt(dev, q, qpn, q.outCount - 1));
    if (psnDiff(psn, newest) > 0) { statAdd(dev, STAT_ROCE_GHOST_ANSWERS, 1); return; }
  }
  if (q.outAcked < q.outCount) {
    const first = outFirstPsn(outAt(dev, q, qpn, q.outAcked)), last = outLastPsn(outAt(dev, q, qpn, q.outCount - 1));
    if (op == OP_RC_ACK && psnDiff(psn, first) >= 0 && psnDiff(psn, last) <= 0) {
      statAdd(dev, STAT_ROCE_RX_ANSWERS, 1);
      outstandingAnswer(dev, q, qpn, x, psn, t);
      return;
    }
    // an answer for the head acknowledges every outstanding message before it (PSN order)
    if (psnDiff(psn, last) > 0) ackOutstanding(dev, q, qpn, last, t);
  }
  if (!inFlight || psnDiff(psn, q.msgPsn) < 0 || psnDiff(psn, q.msgLastPsn) > 0) { statAdd(dev, STAT_ROCE_STALE_ANSWERS, 1); return; }
  const w = qpWqe(dev, qpn);
  const isRead = <u32>load<u8>(w + WQE_OPCODE) == OPCODE_RDMA_READ;
  if (op == OP_RC_ACK) {
    statAdd(dev, STAT_ROCE_RX_ANSWERS, 1);
    const syn = getAethSyndrome(x);
    const type = syn & AETH_SYNDROME_TYPE_MASK;
    if (type == AETH_SYNDROME_ACK) {
      if (!isRead && psn == q.msgLastPsn) complete(dev, q, qpn, STATUS_SUCCESS, t);
      return;
    }
    if (type == AETH_SYNDROME_RNR_NAK) {
      disarmTimer(dev, q, qpn);
      r.txPsn = psnAdd(q.msgLastPsn, 1);
      q.gen++;
      retransmit(dev, STAT_ROCE_RETRANSMITS_RNR); // the message goes again after the RNR timer
      notReady(dev, q, qpn, t);
      return;
    }
    const code = syn & AETH_SYNDROME_VALUE_MASK;
    if (code == AETH_NAK_PSN_SEQ_ERR) { goBack(dev, q, qpn, psn, STAT_ROCE_RETRANSMITS_NAK, t); return; }
    complete(dev, q, qpn, code == AETH_NAK_REMOTE_ACCESS_ERROR ? STATUS_REM_ACCESS_ERR : code == AETH_NAK_REMOTE_OPERATIONAL_ERROR ? STATUS_REM_OP_ERR : STATUS_REM_INV_REQ_ERR, t);
    return;
  }
  // a READ response: in PSN order, placed where the request's local address says
  if (!isRead) { statAdd(dev, STAT_ROCE_STALE_ANSWERS, 1); return; }
  if (psn != r.rspPsn) {
    // one was lost: the READ request is re-sent for the rest, from the first missing one,
    // once for this gap; the later responses of the gap are dropped (as Linux rxe does): the
    // responder sends them again. A gap that stays (what was asked for lost too) is the timer's.
    statAdd(dev, STAT_ROCE_RX_OUT_OF_ORDER, 1);
    if (psnDiff(psn, r.rspPsn) > 0 && r.rspAsked != r.rspPsn) goBack(dev, q, qpn, r.rspPsn, STAT_ROCE_RETRANSMITS_READ_GAP, t);
    return;
  }
  statAdd(dev, STAT_ROCE_RX_ANSWERS, 1);
  const k = (psn - q.msgPsn) & BTH_PSN_MASK;
  const off = <u64>k * <u64>dev.cfg.mtuBytes;
  const laddr = load<u64>(w + WQE_LADDR) + off;
  const len = <u64>load<u32>(w + WQE_LENGTH);
  // the response must be one its PSN can carry, with the bytes it names; any other is a bad
  // response (IBA vol. 1 9.7.5.1.6, as rxe's check_op_seq): taking a FIRST as the only response
  // moved past the READ's last PSN without completing it, and the READ waited forever (found by
  // the fuzz tier, FUZZ_SEED=67822); a short LAST left a hole in a READ that completed
  const n = packetsOf(<u32>len, dev.cfg.mtuBytes);
  const want = k == n - 1 ? len - off : <u64>dev.cfg.mtuBytes;
  if (!readResponseFits(op, k, n, psn == r.rspAsked) || <u64>payload != want) { complete(dev, q, qpn, STATUS_BAD_RESP_ERR, t); return; }
  if (!mrCheck(dev, load<u32>(w + WQE_LKEY), false, q.pd, laddr, <u64>payload, ACCESS_LOCAL_WRITE)) { complete(dev, q, qpn, STATUS_LOC_PROT_ERR, t); return; }
  if (dev.cfg.timingMode == 0 && payload > 0) memory.copy(dmaPtr(dev, laddr, <u64>payload), pl, payload);
  r.rspPsn = psnAdd(r.rspPsn, 1);
  if (op == OP_RC_READ_RESPONSE_LAST || op == OP_RC_READ_RESPONSE_ONLY) complete(dev, q, qpn, STATUS_SUCCESS, t);
}

/**
 * May response `k` of a READ of `n` response packets carry opcode `op`? The last ends a
 * response stream (LAST or ONLY), the others do not. A stream starts (FIRST or ONLY) at the
 * READ's first PSN, or where the requester asked for the rest from (`askedHere`: a request for
 * the rest is answered as a READ of its own); a response of an earlier stream may still pass
 * there as a MIDDLE or LAST.
 */
@inline function readResponseFits(op: u32, k: u32, n: u32, askedHere: bool): bool {
  const starts = op == OP_RC_READ_RESPONSE_FIRST || op == OP_RC_READ_RESPONSE_ONLY;
  const ends = op == OP_RC_READ_RESPONSE_LAST || op == OP_RC_READ_RESPONSE_ONLY;
  return ends == (k == n - 1) && (k == 0 ? starts : !starts || askedHere);
}

/** The NicTimer event of QP `qpn`: its transport timer and its DCQCN timer, re-armed lazily. */
export function nicTimer(dev: Device, qpn: u32, t: u64): void {
  const q = qpAt(dev, qpn);
  const r = rcOf(q);
  r.timerPending = 0;
  if (!q.valid) return;
  if (r.dcqcnAt != NEVER && r.dcqcnAt != 0 && r.dcqcnAt <= t) dcqcnTimer(dev, q, qpn, t);
  const armed = r.timerAt != NEVER && r.timerAt != 0;
  if (armed && r.timerAt <= t && q.outAcked < q.outCount) {
    // the oldest outstanding message went unanswered: send them all again
    r.timerAt = NEVER;
    statAdd(dev, STAT_ROCE_TIMEOUTS, 1);
    if (q.retriesLeft == 0) failOutstanding(dev, q, qpn, STATUS_RETRY_EXC_ERR, t);
    else {
      q.retriesLeft--;
      armTimer(dev, q, qpn, t + dev.cfg.transportTimeoutPs);
      resendOutstanding(dev, q, qpn, outFirstPsn(outAt(dev, q, qpn, q.outAcked)), STAT_ROCE_RETRANSMITS_TIMEOUT, t);
    }
  } else if (armed && r.timerAt <= t && q.busy) {
    r.timerAt = NEVER;
    statAdd(dev, STAT_ROCE_TIMEOUTS, 1);
    if (q.retriesLeft == 0) complete(dev, q, qpn, STATUS_RETRY_EXC_ERR, t);
    else {
      // the head sent again from its start; a READ asks for the responses not in yet
      q.retriesLeft--;
      const isRead = <u32>load<u8>(qpWqe(dev, qpn) + WQE_OPCODE) == OPCODE_RDMA_READ;
      goBack(dev, q, qpn, isRead ? r.rspPsn : q.msgPsn, STAT_ROCE_RETRANSMITS_TIMEOUT, t);
    }
  }
  // nothing left to time (what it timed completed meanwhile): disarmed, so that the next request
  // sent arms it again. requestSent arms only a disarmed timer, and a deadline kept here with no
  // event left for it (none is re-armed below) left a READ sent later with no timer at all: its
  // lost response was never asked again (found by the forged-answer fuzz tier, issue 26)
  if (!q.busy && q.outAcked >= q.outCount) r.timerAt = NEVER;
  // what is still armed: one event for the earlier of the two
  let next = NEVER;
  if ((q.busy || q.outAcked < q.outCount) && r.timerAt != NEVER && r.timerAt != 0) next = r.timerAt;
  if (r.dcqcnAt != NEVER && r.dcqcnAt != 0 && r.dcqcnAt < next) next = r.dcqcnAt;
  if (next != NEVER) wantTimer(dev, q, qpn, next);
}
