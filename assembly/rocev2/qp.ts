// RoCEv2's record of a QP: the requester's send cursor and timers, the responder's, and DCQCN.
// It lies in RoCEv2's area of the QP's slot (Qp, nic/verbs.ts: bytes 264 .. 459, the slot's
// tail); a QP of a device running the MetaRoCE-like transport leaves the area zero. What both
// transports use of a QP (its queues, the request's PSNs, outstanding messages, the path) is Qp.

import { Qp, QP_RC_OFFSET, QP_RC_BYTES } from "../nic/verbs";

@unmanaged export class RcQp {
  // requester side (tx.ts, rx.ts): one message in flight at a time, its PSNs Qp.msgPsn .. msgLastPsn
  txPsn: u32; // the next PSN of it to send
  rspPsn: u32; // READ: the PSN of the next response it expects
  txNext: u32; // next QP (qpn + 1) in its port's list of QPs with requests to send; 0 ends it
  txListed: u32; // 1 while in that list
  timerAt: u64; // when its transport timer expires (NEVER: not armed)
  timerPending: u32; // 1 while a NicTimer event is pending for it (it re-arms lazily)
  rspAsked: u32; // READ: the missing response it last asked for again (the rest re-requested from it); NOT_ARMED: none
  timerEventAt: u64; // that event's time
  // responder side
  ePsn: u32; // the PSN it expects next
  msn: u32; // messages it has completed (sent back in AETH.MSN)
  nakPsn: u32; // a PSN sequence NAK was sent for this ePsn: not again (IB: once per expected PSN)
  nakSent: u32;
  rxDst: u64; // where the current incoming message lands (DMA address)
  rxOff: u32; // bytes of it placed
  rxLen: u32; // its length when known (WRITE: RETH length; SEND: the receive's length)
  rxOp: u32; // RX_* (rx.ts) of the message being received
  rxRecv: u32; // the receive it fills (free-running index)
  respNext: u32; // next QP (qpn + 1) in its port's list of QPs with an answer to send
  respListed: u32;
  respKind: u32; // RESP_* (tx.ts): the answer to send
  respPsn: u32; // the PSN it answers
  respSyndrome: u32; // AETH syndrome of an ACK or NAK
  rdVa: u64; // READ response being sent: where its next bytes come from
  rdLen: u32; // bytes of it still to send
  rdPsn: u32; // PSN of its next packet
  rdFirst: u32; // 1 before its first packet
  // DCQCN (tx.ts: the sender's rate; rx.ts: CNPs)
  lastCnpAt: u64; // receiver: when it last sent a CNP (NEVER: not yet)
  rateMbps: f64; // sender: current rate Rc (0: not limited yet, line rate)
  targetMbps: f64; // target rate Rt
  alpha: f64;
  nextTxAt: u64; // the sender's next packet may not leave before this
  dcqcnAt: u64; // its next alpha/rate-increase timer (NEVER: not running)
  dcqcnStage: u32; // rate-increase stages by the timer since the last cut
  byteStage: u32; // and by the byte counter
  bytesSinceStage: u64;
  cnpPending: u32; // 1 while a CNP waits for its port
}

/** QP `q`'s RoCEv2 record (in its slot: no load). */
@inline export function rcOf(q: Qp): RcQp {
  if (offsetof<RcQp>() > QP_RC_BYTES || (QP_RC_OFFSET & 7) != 0) ERROR("RcQp overflows RoCEv2's area of Qp, or loses its 8-byte alignment");
  return changetype<RcQp>(changetype<usize>(q) + QP_RC_OFFSET);
}

/** QP `q` goes to RESET: both sides start again from PSN 0 (the requester's, Qp.sqPsn, is reset with the queues), and DCQCN at line rate. */
export function rocev2Reset(q: Qp): void {
  const r = rcOf(q);
  r.ePsn = 0;
  r.msn = 0;
  r.rxOp = 0;
  r.nakSent = 0;
  r.rateMbps = 0;
  r.lastCnpAt = 0;
}
