// Doorbells on their way to the NIC. Every ringer (each engine, and the host) has a FIFO of
// the doorbells it has written that have not reached the NIC's logic yet: a classic send or
// receive doorbell (a QP number and a 16-bit producer index) or an express doorbell (a whole
// WQE). A ringer's doorbells arrive in the order written — the host's cross PCIe, whose
// posted writes never pass each other (PCIe Base spec, ordering rules for posted requests),
// an engine's cross a fixed on-die latency — so each FIFO needs one event, for its head.
// Capacity is fixed (hostDoorbellQueue, engineDoorbellQueue): the host API refuses a post it
// has no room for, an engine's store stalls until the oldest doorbell arrives. Nothing is
// dropped on the way.
// Control commands are ordered behind the doorbells written before them (they travel the same
// way), so modifying or destroying a QP first delivers the doorbells still in flight for it.
//
// Record (DB_RECORD_BYTES = 16):
//   0        8        12       14       16
//   | arrival ps | qpn   | kind  | pi16  |
// kind DbKind; pi16 the producer index of a classic doorbell; an express record's WQE sits in
// a parallel array, WQE_SIZE per record.

import { nicOf } from "./state";
import { Device, statAdd, tracePoint } from "../core/device";
import { copyBytes } from "../core/copy";
import { schedule, EventKind } from "../core/sched";
import { Qp, qpAt, sqSlot } from "./verbs";
import { dmaIsHost, dmaIsSram, sramDmaPs } from "../mem/dma";
import { pcieRead } from "../mem/pcie";
import { startNextRequest } from "./requester";
import { rangePush, flush, qpError } from "./queues";
import { WQE_SIZE, WQE_QPN, QP_STATE_ERR, STAT_NIC_DOORBELL_STALLS, STAT_NIC_BAD_DOORBELL, TP_NIC_DOORBELL } from "../generated/layouts";

export const enum DbKind {
  Delivered = 0, // taken out of order by a control command: skipped on arrival
  Sq = 1,
  Rq = 2,
  Express = 3,
}

export const DB_RECORD_BYTES: usize = 16;

@unmanaged export class DbQueue {
  records: usize; // cap records of DB_RECORD_BYTES
  wqes: usize; // cap WQEs, for express records
  head: u32;
  count: u32;
  cap: u32;
  ringer: u32; // engine number, or OWNER_HOST
}

export const DBQ_STRIDE: usize = (offsetof<DbQueue>() + 15) & ~(<usize>15);

/** Arena bytes of one ringer's queue of `cap` doorbells (records and express WQEs). */
export function dbqBytes(cap: usize): usize {
  return cap * (DB_RECORD_BYTES + <usize>WQE_SIZE);
}

/** The queue of ringer index `r`: engines 0..engines-1, then the host. */
@inline export function dbqAt(dev: Device, r: u32): DbQueue {
  return changetype<DbQueue>(nicOf(dev).dbqs + <usize>r * DBQ_STRIDE);
}

@inline export function hostDbq(dev: Device): DbQueue {
  return dbqAt(dev, dev.cfg.engines);
}

export function dbqInit(q: DbQueue, mem: usize, cap: u32, ringer: u32): void {
  q.records = mem;
  q.wqes = mem + <usize>cap * DB_RECORD_BYTES;
  q.head = 0;
  q.count = 0;
  q.cap = cap;
  q.ringer = ringer;
}

@inline function slotOf(q: DbQueue, k: u32): u32 {
  const s = q.head + k;
  return s >= q.cap ? s - q.cap : s;
}

@inline function rec(q: DbQueue, slot: u32): usize {
  return q.records + <usize>slot * DB_RECORD_BYTES;
}

@inline export function dbqRoom(q: DbQueue): u32 {
  return q.cap - q.count;
}

/** Arrival time of the oldest doorbell (the queue is not empty). */
@inline export function dbqHeadArrival(q: DbQueue): u64 {
  return load<u64>(rec(q, q.head));
}

/**
 * Appends a doorbell for QP `qpn` arriving at `arrival` (not before the previous one); `wqe`
 * is the wasm address of an express entry (whose qpn field is `qpn`), or 0. False when the
 * queue is full: the caller has checked.
 */
export function dbqPush(dev: Device, r: u32, arrival: u64, kind: DbKind, qpn: u32, pi16: u32, wqe: usize): bool {
  const q = dbqAt(dev, r);
  if (q.count >= q.cap) return false;
  const slot = slotOf(q, q.count);
  const p = rec(q, slot);
  store<u64>(p, arrival);
  store<u32>(p, qpn, 8);
  store<u16>(p, <u16>kind, 12);
  store<u16>(p, <u16>pi16, 14);
  if (wqe != 0) copyBytes(q.wqes + <usize>slot * WQE_SIZE, wqe, WQE_SIZE);
  q.count++;
  if (q.count == 1) schedule(dev, arrival, EventKind.Doorbell, r, 0);
  return true;
}

/** Hands one doorbell to the NIC at `t`. */
function deliver(dev: Device, q: DbQueue, slot: u32, t: u64): void {
  const p = rec(q, slot);
  const kind = <u32>load<u16>(p, 12);
  const qpn = load<u32>(p, 8), pi16 = <u32>load<u16>(p, 14);
  store<u16>(p, <u16>DbKind.Delivered, 12);
  if (kind == DbKind.Sq) sqDoorbell(dev, qpn, q.ringer, pi16, t);
  else if (kind == DbKind.Rq) rqDoorbell(dev, qpn, q.ringer, pi16, t);
  else if (kind == DbKind.Express) expressDoorbell(dev, q.wqes + <usize>slot * WQE_SIZE, q.ringer, t);
}

/** The Doorbell event: ringer `r`'s oldest doorbells have arrived by `t`. */
export function dbqArrive(dev: Device, r: u32, t: u64): void {
  const q = dbqAt(dev, r);
  while (q.count > 0 && dbqHeadArrival(q) <= t) {
    const slot = q.head;
    q.head = slotOf(q, 1);
    q.count--;
    deliver(dev, q, slot, t);
  }
  if (q.count > 0) schedule(dev, dbqHeadArrival(q), EventKind.Doorbell, r, 0);
}

/**
 * Delivers at `t`, in the order written, every doorbell still in flight for QP `qpn`: a
 * control command on the QP comes after them. Their records stay queued, marked delivered.
 */
export function dbqDeliverFor(dev: Device, qpn: u32, t: u64): void {
  for (let r: u32 = 0; r <= dev.cfg.engines; r++) {
    const q = dbqAt(dev, r);
    for (let k: u32 = 0; k < q.count; k++) {
      const slot = slotOf(q, k);
      const p = rec(q, slot);
      if (load<u16>(p, 12) == <u16>DbKind.Delivered) continue;
      if (load<u32>(p, 8) == qpn) deliver(dev, q, slot, t);
    }
  }
}

/** Is a send-queue doorbell (classic or express) for QP `qpn` still on its way to the NIC? */
export function dbqSendPendingFor(dev: Device, qpn: u32): bool {
  for (let r: u32 = 0; r <= dev.cfg.engines; r++) {
    const q = dbqAt(dev, r);
    for (let k: u32 = 0; k < q.count; k++) {
      const p = rec(q, slotOf(q, k));
      const kind = <u32>load<u16>(p, 12);
      if ((kind == DbKind.Sq || kind == DbKind.Express) && load<u32>(p, 8) == qpn) return true;
    }
  }
  return false;
}

/** Counts an engine store that found its doorbell queue full. */
export function dbqStall(dev: Device): void {
  statAdd(dev, STAT_NIC_DOORBELL_STALLS, 1);
}

// ---- arrival at the NIC

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
  if (qpn >= dev.cfg.maxQps || !mayRing(qpAt(dev, qpn), ringer)) { statAdd(dev, STAT_NIC_BAD_DOORBELL, 1); return; }
  const q = qpAt(dev, qpn);
  const n = (pi16 - q.announced) & 0xffff;
  if (n == 0) return;
  if (n > q.sqDepth - (q.announced - q.sqCi)) { overrunDoorbell(dev, qpn, t); return; }
  const bytes = <u64>n * WQE_SIZE;
  const fetched = dmaIsHost(dev, q.sqBase, 1) ? pcieRead(dev, t, bytes)
    : t + (dmaIsSram(dev, q.sqBase, 1) ? dev.cfg.nicSramLatencyPs + sramDmaPs(dev, bytes) : dev.cfg.hbmLatencyPs);
  q.announced += n;
  rangePush(dev, q, qpn, q.announced, fetched);
  startNextRequest(dev, qpn, t);
}

export function rqDoorbell(dev: Device, qpn: u32, ringer: u32, pi16: u32, t: u64): void {
  if (qpn >= dev.cfg.maxQps || !mayRing(qpAt(dev, qpn), ringer)) { statAdd(dev, STAT_NIC_BAD_DOORBELL, 1); return; }
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
  if (qpn >= dev.cfg.maxQps || !mayRing(qpAt(dev, qpn), ringer)) { statAdd(dev, STAT_NIC_BAD_DOORBELL, 1); return; }
  const q = qpAt(dev, qpn);
  if (q.announced - q.sqCi >= q.sqDepth) { overrunDoorbell(dev, qpn, t); return; }
  // the NIC keeps the entry in the ring slot it occupies, so every entry runs from one place
  copyBytes(sqSlot(dev, q, q.announced), e, WQE_SIZE);
  q.announced++;
  rangePush(dev, q, qpn, q.announced, t);
  startNextRequest(dev, qpn, t);
}
