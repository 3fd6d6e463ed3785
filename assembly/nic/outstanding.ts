// A RoCEv2 send queue's messages whose source has been read and that are not acknowledged yet.
// A QP to another device does not wait for each message's ACK, nor for its packets to leave,
// before starting the next: once a WRITE or SEND has read its source it moves here (a copy of
// its WQE and its PSNs) and the send queue goes on, up to OUT_MAX messages ahead (RC allows as
// many as the PSN window; real NICs bound it too). The port sends them in order from a cursor
// (Qp.rtxK, rtxPsn); ACKs complete them in order; a NAK or the timer moves the cursor back to
// a PSN (rocev2/rx.ts, rocev2/tx.ts). A READ stays at the head of its queue until its responses
// are in.

import { Device, statAdd, tracePoint } from "../core/device";
import { copyBytes } from "../core/copy";
import { Qp, qpAt } from "./verbs";
import { nicOf } from "./state";
import { cqPush, cqeVisible } from "./completions";
import { finishRequest } from "./phases";
import { psnDiff } from "./psn";
import { schedule, EventKind } from "../core/sched";
import {
  WQE_SIZE, WQE_WR_ID, WQE_OPCODE, WQE_LENGTH, WQE_FLAGS, WR_FLAG_SIGNALED, STATUS_SUCCESS, STATUS_WR_FLUSH_ERR,
  STAT_NIC_ERRORS, STAT_NIC_FLUSHED, TP_NIC_WQE_DONE,
} from "../generated/layouts";

/** Messages a QP may have sent and not yet had acknowledged. */
export const OUT_MAX: u32 = 16;
/**
 * One entry: the message's WQE, then its first and last PSN, when its completion is visible (0:
 * not acknowledged), and for MetaRoCE-like streams its MSN (the receive index a SEND or
 * WRITE_IMM fills, else the stream's message count), OUT_* flags, and a READ's response's last
 * SSN once known.
 */
export const OUT_ENTRY: usize = <usize>WQE_SIZE + 32;
/** A MetaRoCE-like READ whose response has not all arrived: it is not acknowledged before. */
export const OUT_WAIT_RESPONSE: u32 = 1;
/** The last SSN of that READ's response is known (its LAST packet arrived). */
export const OUT_HAVE_LAST: u32 = 2;
/** The entry is a MetaRoCE-like READ response this QP sends for its peer: no completion of its own. */
export const OUT_RESPONSE: u32 = 4;

/** Arena bytes for `maxQps` QPs' outstanding messages. */
export function outBytes(maxQps: u32): usize {
  return <usize>maxQps * <usize>OUT_MAX * OUT_ENTRY;
}

/** Entry `k` (0: the oldest) of QP `qpn`'s outstanding messages. */
@inline export function outAt(dev: Device, q: Qp, qpn: u32, k: u32): usize {
  const slot = (q.outHead + k) % OUT_MAX;
  return nicOf(dev).qpOut + (<usize>qpn * <usize>OUT_MAX + <usize>slot) * OUT_ENTRY;
}

@inline export function outFirstPsn(e: usize): u32 { return load<u32>(e + <usize>WQE_SIZE); }
@inline export function outLastPsn(e: usize): u32 { return load<u32>(e + <usize>WQE_SIZE, 4); }
@inline export function outVisibleAt(e: usize): u64 { return load<u64>(e + <usize>WQE_SIZE, 8); }
@inline export function outMsn(e: usize): u32 { return load<u32>(e + <usize>WQE_SIZE, 16); }
@inline export function outFlags(e: usize): u32 { return load<u32>(e + <usize>WQE_SIZE, 20); }
@inline export function outSetFlags(e: usize, f: u32): void { store<u32>(e + <usize>WQE_SIZE, f, 20); }
@inline export function outRespLast(e: usize): u32 { return load<u32>(e + <usize>WQE_SIZE, 24); }
@inline export function outSetRespLast(e: usize, ssn: u32): void { store<u32>(e + <usize>WQE_SIZE, ssn, 24); }

/**
 * The head request (its WQE at `w`, PSNs first .. last), its source read, becomes the newest
 * outstanding message: the port's send cursor will reach it, and the queue goes on to its next
 * entry at once (the next source is read while this one is on the wire).
 */
export function outPush(dev: Device, q: Qp, qpn: u32, w: usize, first: u32, last: u32, msn: u32 = 0, flags: u32 = 0): void {
  outAppend(dev, q, qpn, w, first, last, msn, flags);
  // the head is done with: its ring slot is free (qpSqDone counts it)
  finishRequest(q);
}

/** Appends a message (its WQE at `w`) to the outstanding ones; the send cursor will reach it. */
export function outAppend(dev: Device, q: Qp, qpn: u32, w: usize, first: u32, last: u32, msn: u32, flags: u32): void {
  const e = outAt(dev, q, qpn, q.outCount);
  copyBytes(e, w, <usize>WQE_SIZE);
  store<u32>(e + <usize>WQE_SIZE, first);
  store<u32>(e + <usize>WQE_SIZE, last, 4);
  store<u64>(e + <usize>WQE_SIZE, 0, 8);
  store<u32>(e + <usize>WQE_SIZE, msn, 16);
  store<u32>(e + <usize>WQE_SIZE, flags, 20);
  store<u32>(e + <usize>WQE_SIZE, 0, 24);
  q.outCount++;
  if (!q.rtxActive) {
    q.rtxActive = 1;
    q.rtxK = q.outCount - 1;
    q.rtxPsn = first;
  }
}

/**
 * The oldest outstanding message is over with `status`: its completion (when signaled, or an
 * error), then it is gone. False when its CQ is overrun.
 */
export function outComplete(dev: Device, q: Qp, qpn: u32, status: u32, t: u64): bool {
  const e = outAt(dev, q, qpn, 0);
  const op = <u32>load<u8>(e + WQE_OPCODE);
  // a READ response sent for the peer is nobody's work request
  const signaled = (outFlags(e) & OUT_RESPONSE) == 0 && (q.sigAll != 0 || (load<u8>(e + WQE_FLAGS) & WR_FLAG_SIGNALED) != 0 || status != STATUS_SUCCESS);
  let ok = true;
  if (signaled) ok = cqPush(dev, q.sendCq, t, load<u64>(e + WQE_WR_ID), status == STATUS_SUCCESS ? load<u32>(e + WQE_LENGTH) : 0, 0, false, qpn, status, op);
  if ((outFlags(e) & OUT_RESPONSE) == 0) {
    tracePoint(dev, t, TP_NIC_WQE_DONE, 0xffff, (qpn << 8) | status);
    if (status == STATUS_WR_FLUSH_ERR) statAdd(dev, STAT_NIC_FLUSHED, 1);
    else if (status != STATUS_SUCCESS) statAdd(dev, STAT_NIC_ERRORS, 1);
  }
  q.outHead = (q.outHead + 1) % OUT_MAX;
  q.outCount--;
  if (q.outAcked > 0) q.outAcked--;
  if (q.outCount == 0) q.rtxActive = 0;
  else if (q.rtxActive) {
    // the send cursor keeps pointing at the same message (or, if it was this one, the next)
    if (q.rtxK > 0) q.rtxK--;
    else q.rtxPsn = outFirstPsn(outAt(dev, q, qpn, 0));
  }
  return ok;
}

/**
 * Every outstanding message up to PSN `upto` is acknowledged at `t`: each completes once its
 * completion entry can be visible (cqeVisible), in order (outDrain, from the QP's NicStartNext).
 * Returns how many were newly acknowledged.
 */
export function outAck(dev: Device, q: Qp, qpn: u32, upto: u32, t: u64): u32 {
  let n: u32 = 0;
  while (q.outAcked < q.outCount) {
    const e = outAt(dev, q, qpn, q.outAcked);
    if (psnDiff(upto, outLastPsn(e)) < 0 || (outFlags(e) & OUT_WAIT_RESPONSE) != 0) break;
    store<u64>(e + <usize>WQE_SIZE, cqeVisible(dev, q.sendCq, t), 8);
    q.outAcked++;
    n++;
  }
  if (n > 0) startNextAt(dev, q, qpn, outVisibleAt(outAt(dev, q, qpn, 0)));
  return n;
}

/** Completes the acknowledged messages whose completions are visible by `t` (all of them when `all`). */
export function outDrain(dev: Device, q: Qp, qpn: u32, t: u64, all: bool): bool {
  while (q.outAcked > 0 && (all || outVisibleAt(outAt(dev, q, qpn, 0)) <= t)) {
    if (!outComplete(dev, q, qpn, STATUS_SUCCESS, t)) return false; // its CQ overran: the caller moves the QP to error
  }
  if (q.outAcked > 0) startNextAt(dev, q, qpn, outVisibleAt(outAt(dev, q, qpn, 0)));
  return true;
}

/** Completes every outstanding message — the acknowledged ones with success, the rest with WR_FLUSH_ERR — oldest first. */
export function outFlush(dev: Device, qpn: u32, t: u64): void {
  const q = qpAt(dev, qpn);
  while (q.outAcked > 0) outComplete(dev, q, qpn, STATUS_SUCCESS, t);
  while (q.outCount > 0) outComplete(dev, q, qpn, STATUS_WR_FLUSH_ERR, t);
  q.rtxActive = 0;
}

/** The QP's send queue looks again at `t` (a NicStartNext: completions due, room for a message). */
export function startNextAt(dev: Device, q: Qp, qpn: u32, t: u64): void {
  if (q.startNextPending) return;
  q.startNextPending = 1;
  schedule(dev, t, EventKind.NicStartNext, qpn, 0);
}
