// The phases a send queue's request goes through (requester.ts) and the moves between them that
// both transports make: each phase ends in a NicPhase event carrying the request's generation,
// so an abandoned request's events find a new generation and do nothing.

import { Device, statAdd } from "../core/device";
import { Qp } from "./verbs";
import { schedule, EventKind } from "../core/sched";
import { STATUS_RETRY_EXC_ERR, STATUS_RNR_RETRY_EXC_ERR, STAT_NIC_RNR_RETRIES, STAT_NIC_TRANSPORT_RETRIES } from "../generated/layouts";

export const enum NicPhase {
  Idle = 0,
  Head = 1,
  Flow = 2,
  Tail = 3,
  Done = 4,
  Wait = 5, // a retry timer, or the reduction block
  Send = 6, // its packets wait for, or are on, its port (rocev2/tx.ts, metaroce/tx.ts)
  AwaitAck = 7, // all sent: the answer is awaited (rocev2/rx.ts, metaroce/rx.ts)
  Completing = 8, // its Done is running: it places its bytes and completes itself (requester.ts completeRequest)
}

// what a request does, kept in Qp.reqFlags while it runs
export const REQ_DST_HOST: u32 = 1;
export const REQ_REDUCE: u32 = 2;
export const REQ_DST_SRAM: u32 = 4;
export const REQ_REMOTE: u32 = 8; // to another device, over RoCEv2

// set in the event's generation word when a request's HBM flow has ended
export const FLOW_ENDED: u32 = 0x80000000;

/** Moves request `q` to `phase`, ending at `t`. */
export function phaseAt(dev: Device, q: Qp, qpn: u32, phase: u32, t: u64): void {
  q.phase = phase;
  schedule(dev, t, EventKind.NicPhase, qpn, q.gen & ~FLOW_ENDED);
}

/** Ends the request early with an error status, after the decode latency. */
export function fail(dev: Device, q: Qp, qpn: u32, t: u64, status: u32): void {
  q.status = status;
  phaseAt(dev, q, qpn, NicPhase.Tail, t + dev.cfg.nicWqeLatencyPs);
}

/** The destination did not answer: wait for the transport timer, or fail when retries are exhausted. */
export function noAnswer(dev: Device, q: Qp, qpn: u32, t: u64): void {
  if (q.retriesLeft == 0) { fail(dev, q, qpn, t, STATUS_RETRY_EXC_ERR); return; }
  q.retriesLeft--;
  statAdd(dev, STAT_NIC_TRANSPORT_RETRIES, 1);
  phaseAt(dev, q, qpn, NicPhase.Wait, t + dev.cfg.transportTimeoutPs);
}

/** The responder had no receive posted: wait for the RNR timer, or fail when retries are exhausted. */
export function notReady(dev: Device, q: Qp, qpn: u32, t: u64): void {
  if (q.rnrLeft == 0) { fail(dev, q, qpn, t, STATUS_RNR_RETRY_EXC_ERR); return; }
  q.rnrLeft--;
  statAdd(dev, STAT_NIC_RNR_RETRIES, 1);
  phaseAt(dev, q, qpn, NicPhase.Wait, t + dev.cfg.rnrTimerPs);
}

/** The request at sqCi has completed: move past it. */
export function finishRequest(q: Qp): void {
  q.sqCi++;
  q.busy = 0;
  q.phase = NicPhase.Idle;
}
