// The fabric's event loop in the core: links, switches and the one event queue that moves
// frames between device ports (docs/fabric.md describes the model). The host builds the
// fabric (host/fabric/fabric.ts: topology, tables, seeds, faults as scheduled, statistics)
// in a core instance of its own and hands frames over in blocks of PKT records; everything a
// frame meets on its way runs here, without a call across the boundary per frame.
//
// A frame's life. It enters at its device port's transmitter (the NIC's egress: no buffer
// limit, no marking) at the time the device began to send it. On every channel (one direction
// of a link) it waits in the transmitter's FIFO, then is serialised (wireLen + overhead at the
// link's rate) and propagates (the link's latency). A switch has it whole when its last bit
// arrives (store and forward) and after the switch latency routes it, admits it to the shared
// buffer (or drops it), marks it, and queues it at the output port. On the last hop the arrival
// time at the device is known when the last transmission starts; the frame then waits in its
// channel's ring until the host takes it (fabricTake).
//
// A channel keeps its frames in one ring of 32-byte entries (FENT), oldest first: those on the
// wire, then those waiting in its queue (a channel sends and delivers in one order). An entry
// holds what every hop reads (arrival time, event key, destination, tuple hash, length, ECN
// bits), so that a hop touches the channel's ring, not the packet's own record: a frame's record
// is written when it enters and read when the host takes it.
//
// Decisions made when a transmission starts: buffer bytes are released (a queue holds frames
// waiting, not the one on the wire); random and Gilbert–Elliott loss are drawn; a frame on a
// link that goes down (as scheduled) before its last bit arrives is lost.

import {
  FAB_NOW_PS, FAB_OVERHEAD, FAB_KMIN, FAB_KMAX, FAB_PMAX, FAB_XOFF, FAB_XON, FAB_FAILURE_DETECT_PS,
  FAB_INJECTED, FAB_DELIVERED, FAB_HOPS, FAB_LATE_TX, FAB_UNORDERED_TX, FAB_PFC_RESUMES, FAB_DROPS, FAB_EV_LAST_TIME,
  FAB_DEVICES, FAB_PORTS, FAB_N_CH, FAB_N_SW, FAB_N_LINKS, FAB_PLANES, FAB_LEAVES, FAB_SPINES, FAB_FIRST_SPINE,
  FAB_FULL, FAB_PFC_ON, FAB_ECN_ON, FAB_PAYLOAD_SLOT_BYTES,
  FAB_CH, FAB_WAIT_PTR, FAB_WAIT_CAP, FAB_GE_ON, FAB_GE_BAD, FAB_PAUSE_SENT, FAB_GE_THR, FAB_CH_DROPS, FAB_CH_MARKS, FAB_CH_PAUSES,
  FAB_LAST_HEAD_PS, FAB_LAST_HEAD_KEY, FAB_LINK_UP, FAB_LINK_KNOWN_UP, FAB_LINK_FABRIC, FAB_LINK_PLANE, FAB_OUTAGE_PTR, FAB_OUTAGE_N,
  FAB_SW_ROLE, FAB_SW_SEED, FAB_SW_LOCAL, FAB_SW_PLANE, FAB_BUF_USED, FAB_BUF_CAP, FAB_BUF_PEAK, FAB_PORT_CAP,
  FAB_SW_DROPS, FAB_SW_MARKS, FAB_SW_PAUSES, FAB_DOWN_CH, FAB_GRP, FAB_GRP_N, FAB_FABRIC_LINK_OF,
  FAB_EP_UP_CH, FAB_EP_LEAF, FAB_EP_DOWN_CH, FAB_EP_SEQ, FAB_LAST_DEPART, FAB_INJ_HEAD, FAB_INJ_TAIL, FAB_PEND_MIN, FAB_RNG,
  FAB_PKT_CAP, FAB_PKT_FREE, FAB_PAY_FREE, FAB_PAY, FAB_PAY_LEN, FAB_FAULT_LINK, FAB_FAULT_KIND, FAB_FAULT_N, FAB_FAULT_CAP, FAB_HELD, FAB_HELD_CAP, FAB_HELD_N, FAB_DUE,
  FAB_INBOX, FAB_INBOX_CAP, FAB_INBOX_BODY, FAB_INBOX_BODY_CAP, FAB_OUTBOX, FAB_OUTBOX_BODY, FAB_OUTBOX_CAP, FAB_OUTBOX_BODY_CAP,
  FAB_B_ARRIVAL, FAB_B_PORT, FAB_B_SRC_DEVICE, FAB_B_SRC_PORT, FAB_B_SEQ, FAB_B_WIRE_LEN, FAB_B_HDR_OFF, FAB_B_HDR_LEN,
  FAB_B_PAYLOAD_OFF, FAB_B_PAYLOAD_LEN, FAB_FRAME, FAB_SIZE, FAB_SER_LEN, FAB_SER_GBPS, FAB_SER_PS,
  FCH_SIZE, FCH_BUSY, FCH_QBYTES, FCH_DELAY, FCH_LAT, FCH_GBPS, FCH_LOSS, FCH_PKTS, FCH_BYTES, FCH_QPEAK, FCH_IN_BYTES,
  FCH_RING, FCH_RMASK, FCH_RHEAD, FCH_RCOUNT, FCH_RWIRE, FCH_SRC_SW, FCH_DST_SW, FCH_DST_EP, FCH_PAUSED, FCH_DONE, FCH_LOSSY,
  FCH_WAIT_HEAD, FCH_WAIT_COUNT, FENT_SIZE, FENT_T, FENT_KEY, FENT_PKT, FENT_DST_EP, FENT_HASH, FENT_LEN_META,
  FPKT_ARRIVE_PS, FPKT_SEQ, FPKT_SRC_EP, FPKT_DST_EP, FPKT_WIRE_LEN, FPKT_META,
  FPKX_NEXT_TIME, FPKX_NEXT_KEY, FPKX_NEXT, FPKX_IN_CH, FPKX_HASH,
  PKT_SIZE, PKT_TIME_PS, PKT_WIRE_LEN, PKT_PORT, PKT_HDR_LEN, PKT_BODY_LEN, PKT_BODY_OFF, PKT_SEQ, PKT_SRC_DEVICE, PKT_HDR,
  DROP_REASON_BUFFER_FULL, DROP_REASON_PORT_CAP, DROP_REASON_NO_ROUTE, DROP_REASON_LINK_DOWN, DROP_REASON_RANDOM_LOSS,
  DROP_REASON_GE_LOSS, DROP_REASON_BAD_FRAME, FAULT_DOWN, FAULT_UP, FAULT_KNOWN_DOWN, FAULT_KNOWN_UP,
} from "../generated/layouts";
import { IPV4_ECN_ECT0, IPV4_ECN_ECT1 } from "../generated/headers";
import { eventsInit, eventsNextTime, eventsPush, eventsPushKeyed, eventsPopBefore } from "./events";
import { NONE, HDR_SLOT, META_HDR_LEN, META_ECT, META_CE, pkt, pktHdr, pktSide, pktPayload, pktGrow, pktAlloc, pktRelease, pktAllocPayload, copyHdrSlot } from "./packets";
import { FrameFields, readFrame, markCe, FRAME_OK } from "./frame";
import { rngNext32, hashTuple, ecmpPick } from "./rng";
import { zeroed, grow, nones } from "./memory";
import { copyBytes } from "../core/copy";

// Why a frame was dropped (layouts/fabric.json DROP_REASON; the host names them in lower case).
const R_BUFFER = <i32>DROP_REASON_BUFFER_FULL, R_PORT_CAP = <i32>DROP_REASON_PORT_CAP, R_NO_ROUTE = <i32>DROP_REASON_NO_ROUTE;
const R_LINK_DOWN = <i32>DROP_REASON_LINK_DOWN, R_RANDOM = <i32>DROP_REASON_RANDOM_LOSS, R_GE = <i32>DROP_REASON_GE_LOSS, R_BAD = <i32>DROP_REASON_BAD_FRAME;
const NR: u32 = DROP_REASON_BAD_FRAME + 1;

// Events: kind in the low 3 bits, an index (device port, channel or fault) above. A frame has
// no event of its own: a device port's frames waiting to enter and a channel's frames on the
// wire are FIFOs, and only each FIFO's head has an event.
const EV_INJECT = 0, EV_ARRIVE = 1, EV_TX_DONE = 2, EV_PAUSE = 3, EV_RESUME = 4, EV_FAULT = 5;
const EV_BITS = 3, EV_MASK = 7;

/** Kinds of a scheduled fault (fabricSchedule; layouts/fabric.json FAULT). */
export const F_DOWN = FAULT_DOWN, F_UP = FAULT_UP, F_KNOWN_DOWN = FAULT_KNOWN_DOWN, F_KNOWN_UP = FAULT_KNOWN_UP;

const ROLE_SPINE: u8 = 1;
// FENT.len_meta: wire bytes, then the ECN bits, then a frame lost when it started (a dead entry)
const LM_LEN: u32 = 0xffffff, LM_ECT: u32 = 1 << 24, LM_CE: u32 = 1 << 25, LM_DEAD: u32 = 1 << 26;
/** Entries a channel's ring starts with (it doubles when full). */
const RING0: u32 = 16;
/** log2 of an entry's bytes (FENT_SIZE). */
const ENT: u32 = 5;
const NOT_LOST: f64 = -1, LOST_ON_ENTRY: f64 = -2;

// ---- table access ------------------------------------------------------------------------

@inline function tab(fab: usize, field: u32): usize { return load<usize>(fab + field); }
@inline function i32Of(fab: usize, field: u32, i: i32): i32 { return load<i32>(tab(fab, field) + (<usize>i << 2)); }
@inline function u32Of(fab: usize, field: u32, i: i32): u32 { return load<u32>(tab(fab, field) + (<usize>i << 2)); }
@inline function f64Of(fab: usize, field: u32, i: i32): f64 { return load<f64>(tab(fab, field) + (<usize>i << 3)); }
@inline function u8Of(fab: usize, field: u32, i: i32): u8 { return load<u8>(tab(fab, field) + <usize>i); }
@inline function setI32(fab: usize, field: u32, i: i32, v: i32): void { store<i32>(tab(fab, field) + (<usize>i << 2), v); }
@inline function setF64(fab: usize, field: u32, i: i32, v: f64): void { store<f64>(tab(fab, field) + (<usize>i << 3), v); }
@inline function setU8(fab: usize, field: u32, i: i32, v: u8): void { store<u8>(tab(fab, field) + <usize>i, v); }
@inline function addF64(fab: usize, field: u32, i: i32, v: f64): void { setF64(fab, field, i, f64Of(fab, field, i) + v); }
@inline function bump(fab: usize, field: u32): void { store<f64>(fab + field, load<f64>(fab + field) + 1); }
/** Channel `c`'s record. */
@inline function chan(fab: usize, c: i32): usize { return tab(fab, FAB_CH) + <usize>c * FCH_SIZE; }
/** Entry `i` (0: the oldest) of the ring of channel record `o`. */
@inline function ent(o: usize, i: u32): usize {
  return <usize>load<u32>(o + FCH_RING) + (<usize>((load<u32>(o + FCH_RHEAD) + i) & load<u32>(o + FCH_RMASK)) << ENT);
}
/** Frames waiting in the queue of channel record `o` (its ring's entries behind those on the wire). */
@inline function waiting(o: usize): u32 { return load<u32>(o + FCH_RCOUNT) - load<u32>(o + FCH_RWIRE); }
/** Xoshiro stream `i` (channels, then switches). */
@inline function draw(fab: usize, i: i32): f64 { return <f64>rngNext32(tab(fab, FAB_RNG) + (<usize>i << 4)); }

/**
 * The event key of frame `seq` of device port `ep`: below every ordinary key, ordered by
 * (device, port, frame number), so frames meeting at one picosecond are taken in an order
 * fixed by the frames, and before transmitters finishing then.
 */
@inline function entryKey(ep: i32, seq: f64): f64 {
  return -4503599627370496.0 + <f64>ep * 16777216.0 + <f64>(<i64>seq & 0xffffff);
}

// ---- building ----------------------------------------------------------------------------

/** A zeroed table of `bytes` at header field `field`. */
function table(fab: usize, field: u32, bytes: usize): void {
  store<usize>(fab + field, zeroed(bytes));
}

/** A zeroed fabric header: the host writes the counts and parameters, then calls fabricInit. */
export function fabricNew(): usize {
  return zeroed(FAB_SIZE);
}

/**
 * Allocates every table for the counts in the header, empty (the host fills them), with room
 * for `packets` frames and `events` events, most of which are due within `horizonPs`.
 */
export function fabricInit(fab: usize, packets: u32, events: u32, horizonPs: f64): void {
  const nCh = load<u32>(fab + FAB_N_CH), nSw = load<u32>(fab + FAB_N_SW), nLinks = load<u32>(fab + FAB_N_LINKS);
  const devices = load<u32>(fab + FAB_DEVICES), nEp = devices * load<u32>(fab + FAB_PORTS);
  const leaves = load<u32>(fab + FAB_LEAVES), spines = load<u32>(fab + FAB_SPINES), planes = load<u32>(fab + FAB_PLANES);
  const firstSpine = load<u32>(fab + FAB_FIRST_SPINE);
  table(fab, FAB_CH, <usize>nCh * FCH_SIZE);
  const rings = zeroed(<usize>nCh * RING0 << ENT);
  for (let c: i32 = 0; c < <i32>nCh; c++) {
    const r = chan(fab, c);
    store<u32>(r + FCH_RING, <u32>(rings + (<usize>c * RING0 << ENT)));
    store<u32>(r + FCH_RMASK, RING0 - 1);
    store<i32>(r + FCH_DST_EP, NONE);
  }
  table(fab, FAB_WAIT_PTR, <usize>nCh << 2);
  table(fab, FAB_WAIT_CAP, <usize>nCh << 2);
  table(fab, FAB_GE_ON, nCh);
  table(fab, FAB_GE_BAD, nCh);
  table(fab, FAB_PAUSE_SENT, nCh);
  table(fab, FAB_GE_THR, <usize>nCh << 5);
  table(fab, FAB_CH_DROPS, <usize>nCh * NR << 3);
  table(fab, FAB_CH_MARKS, <usize>nCh << 3);
  table(fab, FAB_CH_PAUSES, <usize>nCh << 3);
  table(fab, FAB_LAST_HEAD_PS, <usize>nEp << 3);
  for (let ep: i32 = 0; ep < <i32>nEp; ep++) setF64(fab, FAB_LAST_HEAD_PS, ep, Infinity);
  table(fab, FAB_LAST_HEAD_KEY, <usize>nEp << 3);
  table(fab, FAB_LINK_UP, nLinks);
  table(fab, FAB_LINK_KNOWN_UP, nLinks);
  table(fab, FAB_LINK_FABRIC, nLinks);
  table(fab, FAB_LINK_PLANE, <usize>nLinks << 2);
  table(fab, FAB_OUTAGE_PTR, <usize>nLinks << 2);
  table(fab, FAB_OUTAGE_N, <usize>nLinks << 2);
  table(fab, FAB_SW_ROLE, nSw);
  table(fab, FAB_SW_SEED, <usize>nSw << 2);
  table(fab, FAB_SW_LOCAL, <usize>nSw << 2);
  table(fab, FAB_SW_PLANE, <usize>nSw << 2);
  table(fab, FAB_BUF_USED, <usize>nSw << 3);
  table(fab, FAB_BUF_CAP, <usize>nSw << 3);
  table(fab, FAB_BUF_PEAK, <usize>nSw << 3);
  table(fab, FAB_PORT_CAP, <usize>nSw << 3);
  table(fab, FAB_SW_DROPS, <usize>nSw * NR << 3);
  table(fab, FAB_SW_MARKS, <usize>nSw << 3);
  table(fab, FAB_SW_PAUSES, <usize>nSw << 3);
  store<usize>(fab + FAB_DOWN_CH, nones(planes * spines * leaves));
  table(fab, FAB_GRP, <usize>(firstSpine * leaves * (spines > 0 ? spines : 1)) << 2);
  table(fab, FAB_GRP_N, <usize>(firstSpine * leaves) << 2);
  store<usize>(fab + FAB_FABRIC_LINK_OF, nones(firstSpine * spines));
  store<usize>(fab + FAB_EP_UP_CH, nones(nEp));
  store<usize>(fab + FAB_EP_LEAF, nones(nEp));
  store<usize>(fab + FAB_EP_DOWN_CH, nones(nEp));
  table(fab, FAB_EP_SEQ, <usize>nEp << 3);
  table(fab, FAB_LAST_DEPART, <usize>nEp << 3);
  store<usize>(fab + FAB_INJ_HEAD, nones(nEp));
  store<usize>(fab + FAB_INJ_TAIL, nones(nEp));
  table(fab, FAB_PEND_MIN, <usize>devices << 3);
  for (let d: i32 = 0; d < <i32>devices; d++) setF64(fab, FAB_PEND_MIN, d, Infinity);
  table(fab, FAB_RNG, <usize>(nCh + nSw) << 4);
  store<i32>(fab + FAB_PKT_FREE, NONE);
  store<i32>(fab + FAB_PAY_FREE, NONE);
  pktGrow(fab, packets);
  eventsInit(fab, events, horizonPs);
  store<u32>(fab + FAB_FAULT_CAP, 16);
  table(fab, FAB_FAULT_LINK, 64);
  table(fab, FAB_FAULT_KIND, 64);
  store<u32>(fab + FAB_HELD_CAP, 256);
  table(fab, FAB_HELD, 1024);
  table(fab, FAB_DUE, <usize>load<u32>(fab + FAB_PORTS) << 2);
  table(fab, FAB_FRAME, offsetof<FrameFields>());
  fabricInbox(fab, 256, 0);
  fabricOutbox(fab, 256, 0);
}

/** Room in the inbox for `records` PKT records and `bodyBytes` of bodies; returns the inbox's address. */
export function fabricInbox(fab: usize, records: u32, bodyBytes: u32): usize {
  if (records > load<u32>(fab + FAB_INBOX_CAP)) {
    store<usize>(fab + FAB_INBOX, zeroed(<usize>records * PKT_SIZE));
    store<u32>(fab + FAB_INBOX_CAP, records);
  }
  if (bodyBytes > load<u32>(fab + FAB_INBOX_BODY_CAP)) {
    store<usize>(fab + FAB_INBOX_BODY, zeroed(bodyBytes));
    store<u32>(fab + FAB_INBOX_BODY_CAP, bodyBytes);
  }
  return load<usize>(fab + FAB_INBOX);
}

/** True in full mode: frames carry their bodies. */
export function fabricFull(fab: usize): bool {
  return load<u32>(fab + FAB_FULL) != 0;
}

/** Room for a delivery of `n` frames and `bodyBytes` of bodies: the outbox and the batch columns. */
export function fabricOutbox(fab: usize, n: u32, bodyBytes: u32): void {
  const cap = load<u32>(fab + FAB_OUTBOX_CAP);
  if (n > cap) {
    const m = n > 2 * cap ? n : 2 * cap;
    store<usize>(fab + FAB_OUTBOX, zeroed(<usize>m * PKT_SIZE));
    store<usize>(fab + FAB_B_ARRIVAL, zeroed(<usize>m << 3));
    store<usize>(fab + FAB_B_SEQ, zeroed(<usize>m << 3));
    store<usize>(fab + FAB_B_PORT, zeroed(<usize>m << 2));
    store<usize>(fab + FAB_B_SRC_DEVICE, zeroed(<usize>m << 2));
    store<usize>(fab + FAB_B_SRC_PORT, zeroed(<usize>m << 2));
    store<usize>(fab + FAB_B_WIRE_LEN, zeroed(<usize>m << 2));
    store<usize>(fab + FAB_B_HDR_OFF, zeroed(<usize>m << 2));
    store<usize>(fab + FAB_B_HDR_LEN, zeroed(<usize>m << 2));
    store<usize>(fab + FAB_B_PAYLOAD_OFF, zeroed(<usize>m << 2));
    store<usize>(fab + FAB_B_PAYLOAD_LEN, zeroed(<usize>m << 2));
    store<u32>(fab + FAB_OUTBOX_CAP, m);
  }
  const bcap = load<u32>(fab + FAB_OUTBOX_BODY_CAP);
  if (bodyBytes > bcap) {
    const m = bodyBytes > 2 * bcap ? bodyBytes : 2 * bcap;
    store<usize>(fab + FAB_OUTBOX_BODY, zeroed(m));
    store<u32>(fab + FAB_OUTBOX_BODY_CAP, m);
  }
}

// ---- a channel's ring --------------------------------------------------------------------

/** A frame joins the back of channel record `o`'s ring (waiting), the ring doubling when full. */
@inline function ringPush(o: usize, key: f64, p: i32, dst: i32, hash: u32, lm: u32): void {
  const n = load<u32>(o + FCH_RCOUNT);
  if (n > load<u32>(o + FCH_RMASK)) ringGrow(o, n);
  const e = ent(o, n);
  store<f64>(e + FENT_KEY, key);
  store<i32>(e + FENT_PKT, p);
  store<i32>(e + FENT_DST_EP, dst);
  store<u32>(e + FENT_HASH, hash);
  store<u32>(e + FENT_LEN_META, lm);
  store<u32>(o + FCH_RCOUNT, n + 1);
}

/** Moves the `n` entries of channel record `o`'s full ring into one twice its size. */
function ringGrow(o: usize, n: u32): void {
  const cap = load<u32>(o + FCH_RMASK) + 1;
  const ring = zeroed(<usize>cap << (ENT + 1));
  for (let i: u32 = 0; i < n; i++) copyBytes(ring + (<usize>i << ENT), ent(o, i), FENT_SIZE);
  store<u32>(o + FCH_RING, <u32>ring);
  store<u32>(o + FCH_RMASK, 2 * cap - 1);
  store<u32>(o + FCH_RHEAD, 0);
}

/** The oldest frame on the wire of channel record `o` has reached the next holder: it leaves the ring, and so do the dead entries behind it. */
@inline function ringPop(o: usize): void {
  const m = load<u32>(o + FCH_RMASK), ring = <usize>load<u32>(o + FCH_RING);
  let head = load<u32>(o + FCH_RHEAD), n = load<u32>(o + FCH_RCOUNT), wire = load<u32>(o + FCH_RWIRE);
  do {
    head = (head + 1) & m;
    n--;
    wire--;
  } while (wire > 0 && (load<u32>(ring + (<usize>head << ENT) + FENT_LEN_META) & LM_DEAD) != 0);
  // an emptied ring starts again at its first entry (the same lines, still in cache)
  store<u32>(o + FCH_RHEAD, n != 0 ? head : 0);
  store<u32>(o + FCH_RCOUNT, n);
  store<u32>(o + FCH_RWIRE, wire);
}

// ---- frames in ---------------------------------------------------------------------------

/**
 * The first `n` inbox records, frames sent by device `device`: each enters the fabric as
 * host/fabric/runner.ts's TxSink.send says. A record's time is its departure (first bit on
 * the wire) when `psPerByte` is 0; otherwise it is when its last bit left (a device's transmit
 * ring), and the departure is that minus (wire_len + txOverhead) bytes at psPerByte. Bodies
 * (full mode) are at body_off in the inbox's body area. Returns the frames that entered (the
 * rest were malformed: counted as bad_frame).
 */
export function fabricIngest(fab: usize, device: u32, n: u32, psPerByte: f64, txOverhead: u32): u32 {
  return ingestRing(fab, device, load<usize>(fab + FAB_INBOX), 0, n, n, load<usize>(fab + FAB_INBOX_BODY), psPerByte, txOverhead);
}

/**
 * Frames device `device` sent, as PKT records in a ring of `entries` at `recs`, `n` of them from
 * entry `head` (a transmit ring read in place, or the inbox), bodies at `bodies` + body_off:
 * into the fabric as fabricIngest does. Returns how many entered.
 */
export function ingestRing(fab: usize, device: u32, recs: usize, head: u32, n: u32, entries: u32, bodies: usize, psPerByte: f64, txOverhead: u32): u32 {
  const f = changetype<FrameFields>(load<usize>(fab + FAB_FRAME));
  let entered: u32 = 0, at = head;
  for (let k: u32 = 0; k < n; k++) {
    const r = recs + <usize>at * PKT_SIZE;
    if (++at == entries) at = 0;
    const wireLen = load<u32>(r + PKT_WIRE_LEN);
    let depart = <f64>load<u64>(r + PKT_TIME_PS);
    if (psPerByte > 0) depart -= Math.ceil(<f64>(wireLen + txOverhead) * psPerByte);
    const bodyLen = load<u32>(r + PKT_BODY_LEN);
    if (send(fab, f, device, <u32>load<u16>(r + PKT_PORT), depart, wireLen, r + PKT_HDR, <u32>load<u16>(r + PKT_HDR_LEN), bodies + load<u32>(r + PKT_BODY_OFF), bodyLen)) entered++;
  }
  return entered;
}

function send(fab: usize, f: FrameFields, device: u32, port: u32, departPs: f64, wireLen: u32, hdr: usize, hdrLen: u32, body: usize, bodyLen: u32): bool {
  const full = load<u32>(fab + FAB_FULL) != 0;
  const ports = load<u32>(fab + FAB_PORTS);
  if (port >= ports || device >= load<u32>(fab + FAB_DEVICES) || hdrLen > HDR_SLOT || hdrLen > wireLen || wireLen > LM_LEN
    || (full && bodyLen > load<u32>(fab + FAB_PAYLOAD_SLOT_BYTES)) || readFrame(hdr, hdrLen, f) != FRAME_OK) {
    bumpDrop(fab, R_BAD);
    return false;
  }
  const ep = <i32>(device * ports + port);
  const id = pktAlloc(fab);
  copyHdrSlot(pktHdr(fab, id), hdr);
  const r = pkt(fab, id);
  const ect = f.ecn == IPV4_ECN_ECT0 || f.ecn == IPV4_ECN_ECT1 ? META_ECT : 0;
  store<u32>(r + FPKT_META, hdrLen | ect);
  store<u32>(r + FPKT_WIRE_LEN, wireLen);
  if (full && bodyLen > 0) memory.copy(pktAllocPayload(fab, id, bodyLen), body, bodyLen);
  const dst = addressEp(fab, f.dst), hash = hashTuple(f.src, f.dst, f.sport, f.dport, f.proto);
  store<i32>(r + FPKT_SRC_EP, ep);
  store<i32>(r + FPKT_DST_EP, dst);
  const now = load<f64>(fab + FAB_NOW_PS);
  if (departPs < now) {
    bump(fab, FAB_LATE_TX);
    departPs = now;
  }
  if (departPs < f64Of(fab, FAB_LAST_DEPART, ep)) {
    bump(fab, FAB_UNORDERED_TX);
    departPs = f64Of(fab, FAB_LAST_DEPART, ep);
  }
  setF64(fab, FAB_LAST_DEPART, ep, departPs);
  const seq = f64Of(fab, FAB_EP_SEQ, ep);
  setF64(fab, FAB_EP_SEQ, ep, seq + 1);
  store<f64>(r + FPKT_SEQ, seq);
  if (load<u32>(fab + FAB_PFC_ON) == 0) {
    // Without PFC nothing but the port's own frames and the fault schedule decides when its
    // transmitter starts a frame, so the frame goes on the wire now (its arrival event keyed
    // by the frame, as an entry would be), not through an entry event.
    bump(fab, FAB_INJECTED);
    const c = i32Of(fab, FAB_EP_UP_CH, ep);
    if (c == NONE) {
      bumpDrop(fab, R_NO_ROUTE);
      pktRelease(fab, id);
      return true;
    }
    portCatchUp(fab, c, departPs);
    const busy = load<f64>(chan(fab, c) + FCH_BUSY);
    const start = departPs > busy ? departPs : busy;
    const flushed = load<u32>(tab(fab, FAB_OUTAGE_N) + (<usize>(c >> 1) << 2)) != 0 ? lostWaiting(fab, c >> 1, departPs, start) : NOT_LOST;
    if (flushed == LOST_ON_ENTRY) {
      dropAt(fab, c, id, R_LINK_DOWN);
      return true;
    }
    if ((flushed >= 0 ? flushed : start) > departPs) portWaits(fab, c, flushed >= 0 ? flushed : start, wireLen);
    if (flushed >= 0) dropAt(fab, c, id, R_LINK_DOWN);
    else {
      ringPush(chan(fab, c), entryKey(ep, seq), id, dst, hash, wireLen | (ect != 0 ? LM_ECT : 0));
      transmit(fab, c, chan(fab, c), start);
    }
    return true;
  }
  // With PFC a pause may hold the transmitter: the frame enters at its departure time.
  store<u32>(pktSide(fab, id) + FPKX_HASH, hash);
  const tail = i32Of(fab, FAB_INJ_TAIL, ep);
  if (tail == NONE) {
    setI32(fab, FAB_INJ_HEAD, ep, id);
    eventsPushKeyed(fab, departPs, entryKey(ep, seq), (ep << EV_BITS) | EV_INJECT);
  } else {
    const tr = pktSide(fab, tail);
    store<i32>(tr + FPKX_NEXT, id);
    store<f64>(tr + FPKX_NEXT_TIME, departPs);
    store<f64>(tr + FPKX_NEXT_KEY, entryKey(ep, seq));
  }
  setI32(fab, FAB_INJ_TAIL, ep, id);
  return true;
}

/** The device port (device * ports + port) an IPv4 address 10.port.device names, or -1. */
function addressEp(fab: usize, addr: u32): i32 {
  if (addr >>> 24 != 10) return NONE;
  const port = (addr >>> 16) & 0xff, device = addr & 0xffff, ports = load<u32>(fab + FAB_PORTS);
  return device < load<u32>(fab + FAB_DEVICES) && port < ports ? <i32>(device * ports + port) : NONE;
}

@inline function bumpDrop(fab: usize, reason: i32): void {
  bump(fab, FAB_DROPS + <u32>reason * 8);
}

// ---- the event loop ----------------------------------------------------------------------

/**
 * 1 while device port `ep`'s link into the fabric is paused (PFC: its switch's ingress holds
 * too much): what the cluster runner tells the device at a window's start (its port then starts
 * no frame). The fabric still holds what the device sent before it heard, at most a window's.
 */
export function fabricEpPaused(fab: usize, ep: i32): u32 {
  if (load<u32>(fab + FAB_PFC_ON) == 0) return 0;
  const c = i32Of(fab, FAB_EP_UP_CH, ep);
  return c != NONE && load<u8>(chan(fab, c) + FCH_PAUSED) != 0 ? 1 : 0;
}

/** Time of the next event, Infinity when there is none. */
export function fabricNextEvent(fab: usize): f64 {
  return eventsNextTime(fab);
}

/** Runs every event before `endPs`; the fabric's time is then endPs. */
export function fabricRunTo(fab: usize, endPs: f64): void {
  for (;;) {
    const ev = eventsPopBefore(fab, endPs);
    if (ev < 0) break;
    const now = load<f64>(fab + FAB_EV_LAST_TIME);
    const x = ev >>> EV_BITS;
    switch (ev & EV_MASK) {
      case EV_ARRIVE: arrive(fab, x, now); break;
      case EV_TX_DONE: txDone(fab, x, now); break;
      case EV_INJECT: inject(fab, x, now); break;
      case EV_PAUSE: pause(fab, x); break;
      case EV_RESUME: resume(fab, x, now); break;
      case EV_FAULT: fault(fab, x, now); break;
    }
  }
  if (endPs > load<f64>(fab + FAB_NOW_PS)) store<f64>(fab + FAB_NOW_PS, endPs);
}

/** The head frame of device port `ep` enters the fabric at its departure time (PFC). */
function inject(fab: usize, ep: i32, now: f64): void {
  const p = i32Of(fab, FAB_INJ_HEAD, ep), r = pkt(fab, p), x = pktSide(fab, p);
  const next = load<i32>(x + FPKX_NEXT);
  setI32(fab, FAB_INJ_HEAD, ep, next);
  if (next == NONE) setI32(fab, FAB_INJ_TAIL, ep, NONE);
  else eventsPushKeyed(fab, load<f64>(x + FPKX_NEXT_TIME), load<f64>(x + FPKX_NEXT_KEY), (ep << EV_BITS) | EV_INJECT);
  bump(fab, FAB_INJECTED);
  const c = i32Of(fab, FAB_EP_UP_CH, ep);
  if (c == NONE) {
    bumpDrop(fab, R_NO_ROUTE);
    pktRelease(fab, p);
    return;
  }
  const meta = load<u32>(r + FPKT_META);
  const lm = load<u32>(r + FPKT_WIRE_LEN) | ((meta & META_ECT) != 0 ? LM_ECT : 0);
  enqueue(fab, c, NONE, entryKey(ep, load<f64>(r + FPKT_SEQ)), p, load<i32>(r + FPKT_DST_EP), load<u32>(x + FPKX_HASH), lm, now);
}

/** The oldest frame on channel `cin` is in the switch at its end: route, admit, mark, queue. */
function arrive(fab: usize, cin: i32, now: f64): void {
  const o = chan(fab, cin);
  const e = ent(o, 0);
  const key = load<f64>(e + FENT_KEY), p = load<i32>(e + FENT_PKT), dst = load<i32>(e + FENT_DST_EP);
  const hash = load<u32>(e + FENT_HASH), lm = load<u32>(e + FENT_LEN_META);
  ringPop(o);
  if (load<u32>(o + FCH_RWIRE) != 0) {
    const h = ent(o, 0);
    eventsPushKeyed(fab, load<f64>(h + FENT_T), load<f64>(h + FENT_KEY), (cin << EV_BITS) | EV_ARRIVE);
  }
  const s = load<i32>(o + FCH_DST_SW);
  if (load<u32>(fab + FAB_PFC_ON) != 0) store<i32>(pktSide(fab, p) + FPKX_IN_CH, cin);
  const out = route(fab, s, dst, hash);
  if (out == NONE) {
    dropAt(fab, cin, p, R_NO_ROUTE);
    addF64(fab, FAB_SW_DROPS, s * NR + R_NO_ROUTE, 1);
    return;
  }
  enqueue(fab, out, cin, key, p, dst, hash, lm, now);
}

/** The output channel of switch `s` for a frame to device port `dst` whose tuple hashes to `hash`, or NONE. */
function route(fab: usize, s: i32, dst: i32, hash: u32): i32 {
  if (dst == NONE) return NONE;
  const dl = i32Of(fab, FAB_EP_LEAF, dst);
  if (dl == s) return i32Of(fab, FAB_EP_DOWN_CH, dst);
  if (dl == NONE || i32Of(fab, FAB_SW_PLANE, dl) != i32Of(fab, FAB_SW_PLANE, s)) return NONE;
  const leaves = <i32>load<u32>(fab + FAB_LEAVES);
  if (u8Of(fab, FAB_SW_ROLE, s) == ROLE_SPINE) return i32Of(fab, FAB_DOWN_CH, (s - <i32>load<u32>(fab + FAB_FIRST_SPINE)) * leaves + i32Of(fab, FAB_SW_LOCAL, dl));
  const g = s * leaves + i32Of(fab, FAB_SW_LOCAL, dl);
  const n = i32Of(fab, FAB_GRP_N, g);
  if (n == 0) return NONE;
  return i32Of(fab, FAB_GRP, g * <i32>load<u32>(fab + FAB_SPINES) + <i32>ecmpPick(hash, u32Of(fab, FAB_SW_SEED, s), <u32>n));
}

/**
 * Frame `p` (its entry's fields: key, destination, hash, length and ECN bits), which came in by
 * channel `inCh` (NONE at a device port), joins the queue of channel `c`, or starts at once on
 * an idle transmitter.
 */
function enqueue(fab: usize, c: i32, inCh: i32, key: f64, p: i32, dst: i32, hash: u32, lm: u32, now: f64): void {
  const o = chan(fab, c);
  const len = <f64>(lm & LM_LEN);
  const s = load<i32>(o + FCH_SRC_SW);
  if (u8Of(fab, FAB_LINK_UP, c >> 1) == 0) {
    dropAt(fab, c, p, R_LINK_DOWN);
    return;
  }
  if (s != NONE) {
    const used = f64Of(fab, FAB_BUF_USED, s) + len;
    if (used > f64Of(fab, FAB_BUF_CAP, s)) {
      dropAt(fab, c, p, R_BUFFER);
      addF64(fab, FAB_SW_DROPS, s * NR + R_BUFFER, 1);
      return;
    }
    const q = load<f64>(o + FCH_QBYTES);
    if (q + len > f64Of(fab, FAB_PORT_CAP, s)) {
      dropAt(fab, c, p, R_PORT_CAP);
      addF64(fab, FAB_SW_DROPS, s * NR + R_PORT_CAP, 1);
      return;
    }
    if (load<u32>(fab + FAB_ECN_ON) != 0 && q > load<f64>(fab + FAB_KMIN)) lm = maybeMark(fab, s, c, lm, q);
    setF64(fab, FAB_BUF_USED, s, used);
    if (used > f64Of(fab, FAB_BUF_PEAK, s)) setF64(fab, FAB_BUF_PEAK, s, used);
    if (load<u32>(fab + FAB_PFC_ON) != 0) holdAtIngress(fab, s, inCh, len, now);
  }
  const busy = load<f64>(o + FCH_BUSY);
  const idle = waiting(o) == 0 && load<u8>(o + FCH_PAUSED) == 0 && now >= busy;
  ringPush(o, key, p, dst, hash, lm);
  if (idle) {
    transmit(fab, c, o, now);
    return;
  }
  const q = load<f64>(o + FCH_QBYTES) + len;
  store<f64>(o + FCH_QBYTES, q);
  if (q > load<f64>(o + FCH_QPEAK)) store<f64>(o + FCH_QPEAK, q);
  if (load<u8>(o + FCH_PAUSED) == 0 && load<u8>(o + FCH_DONE) == 0) {
    store<u8>(o + FCH_DONE, 1);
    eventsPush(fab, now > busy ? now : busy, (c << EV_BITS) | EV_TX_DONE);
  }
}

/** PFC: switch `s` now holds `len` more bytes that came in by channel `cin`; at XOFF it pauses that channel's sender. */
function holdAtIngress(fab: usize, s: i32, cin: i32, len: f64, now: f64): void {
  const o = chan(fab, cin);
  const held = load<f64>(o + FCH_IN_BYTES) + len;
  store<f64>(o + FCH_IN_BYTES, held);
  if (held >= load<f64>(fab + FAB_XOFF) && u8Of(fab, FAB_PAUSE_SENT, cin) == 0) {
    setU8(fab, FAB_PAUSE_SENT, cin, 1);
    addF64(fab, FAB_SW_PAUSES, s, 1);
    eventsPush(fab, now + load<f64>(o + FCH_LAT), (cin << EV_BITS) | EV_PAUSE);
  }
}

/**
 * RED-style marking on the instantaneous queue `q` (bytes waiting, before this frame) of a
 * frame whose entry's len_meta is `lm`; returns it, marked or not. The mark travels in the
 * entry and is written into the header when the frame is delivered.
 */
function maybeMark(fab: usize, s: i32, c: i32, lm: u32, q: f64): u32 {
  if ((lm & LM_ECT) == 0) return lm;
  const kmin = load<f64>(fab + FAB_KMIN), kmax = load<f64>(fab + FAB_KMAX);
  if (q < kmax) {
    const prob = (load<f64>(fab + FAB_PMAX) * (q - kmin)) / (kmax - kmin);
    if (draw(fab, <i32>load<u32>(fab + FAB_N_CH) + s) >= prob * 4294967296.0) return lm;
  }
  addF64(fab, FAB_CH_MARKS, c, 1);
  addF64(fab, FAB_SW_MARKS, s, 1);
  return (lm & ~LM_ECT) | LM_CE;
}

function txDone(fab: usize, c: i32, now: f64): void {
  const o = chan(fab, c), busy = load<f64>(o + FCH_BUSY);
  store<u8>(o + FCH_DONE, 0);
  if (load<u8>(o + FCH_PAUSED) != 0 || waiting(o) == 0) return;
  if (now < busy) {
    store<u8>(o + FCH_DONE, 1);
    eventsPush(fab, busy, (c << EV_BITS) | EV_TX_DONE);
    return;
  }
  leaveQueue(o);
  transmit(fab, c, o, now);
}

/** The first frame waiting in the queue of channel record `o` is about to start: its bytes no longer count as queued. */
@inline function leaveQueue(o: usize): void {
  const len = load<u32>(ent(o, load<u32>(o + FCH_RWIRE)) + FENT_LEN_META) & LM_LEN;
  store<f64>(o + FCH_QBYTES, load<f64>(o + FCH_QBYTES) - <f64>len);
}

/** Frame `p`, `len` bytes, leaves the switch's buffer (a NIC's has no limit) for the wire of channel record `o` (inlined: it runs at every hop). */
@inline function release(fab: usize, o: usize, p: i32, len: f64, now: f64): void {
  const s = load<i32>(o + FCH_SRC_SW);
  if (s == NONE) return;
  addF64(fab, FAB_BUF_USED, s, -len);
  if (load<u32>(fab + FAB_PFC_ON) != 0) pfcRelease(fab, p, len, now);
}

/** PFC: frame `p`'s `len` bytes no longer count against its ingress; at XON the sender there resumes. */
function pfcRelease(fab: usize, p: i32, len: f64, now: f64): void {
  const cin = load<i32>(pktSide(fab, p) + FPKX_IN_CH), oi = chan(fab, cin);
  const held = load<f64>(oi + FCH_IN_BYTES) - len;
  store<f64>(oi + FCH_IN_BYTES, held);
  if (held <= load<f64>(fab + FAB_XON) && u8Of(fab, FAB_PAUSE_SENT, cin) != 0) {
    setU8(fab, FAB_PAUSE_SENT, cin, 0);
    bump(fab, FAB_PFC_RESUMES);
    eventsPush(fab, now + load<f64>(oi + FCH_LAT), (cin << EV_BITS) | EV_RESUME);
  }
}

/** Channel `c` (record `o`) begins to send the first frame waiting in its ring at `now` (the transmitter is idle). */
function transmit(fab: usize, c: i32, o: usize, now: f64): void {
  const link = c >> 1;
  const wire = load<u32>(o + FCH_RWIRE), e = ent(o, wire);
  const p = load<i32>(e + FENT_PKT), len = load<u32>(e + FENT_LEN_META) & LM_LEN;
  release(fab, o, p, <f64>len, now);
  const end = now + serialisePs(fab, <f64>len + load<f64>(fab + FAB_OVERHEAD), load<f64>(o + FCH_GBPS));
  store<f64>(o + FCH_BUSY, end);
  store<f64>(o + FCH_PKTS, load<f64>(o + FCH_PKTS) + 1);
  store<f64>(o + FCH_BYTES, load<f64>(o + FCH_BYTES) + <f64>len);
  bump(fab, FAB_HOPS);
  if (waiting(o) > 1 && load<u8>(o + FCH_DONE) == 0) {
    store<u8>(o + FCH_DONE, 1);
    eventsPush(fab, end, (c << EV_BITS) | EV_TX_DONE);
  }
  if (load<u8>(o + FCH_LOSSY) != 0) {
    const loss = load<f64>(o + FCH_LOSS);
    if (loss != 0 && draw(fab, c) < loss) {
      lostAtStart(fab, o, c, wire, p, R_RANDOM);
      return;
    }
    if (u8Of(fab, FAB_GE_ON, c) != 0 && geLost(fab, c)) {
      lostAtStart(fab, o, c, wire, p, R_GE);
      return;
    }
  }
  const tail = end + load<f64>(o + FCH_LAT);
  if (load<u32>(tab(fab, FAB_OUTAGE_N) + (<usize>link << 2)) != 0 && failsDuring(fab, link, now, tail)) {
    lostAtStart(fab, o, c, wire, p, R_LINK_DOWN);
    return;
  }
  // onto the wire: into a switch, the oldest frame on the wire has an event; to a device, the
  // frames wait there for the host
  const ep = load<i32>(o + FCH_DST_EP);
  const at = ep == NONE ? end + load<f64>(o + FCH_DELAY) : tail;
  store<f64>(e + FENT_T, at);
  store<u32>(o + FCH_RWIRE, wire + 1);
  if (wire != 0) return;
  const key = load<f64>(e + FENT_KEY);
  if (ep == NONE) eventsPushKeyed(fab, at, key, (c << EV_BITS) | EV_ARRIVE);
  else {
    setF64(fab, FAB_LAST_HEAD_PS, ep, at);
    setF64(fab, FAB_LAST_HEAD_KEY, ep, key);
    const d = ep / <i32>load<u32>(fab + FAB_PORTS);
    if (at < f64Of(fab, FAB_PEND_MIN, d)) setF64(fab, FAB_PEND_MIN, d, at);
  }
}

/** Picoseconds to send `bytes` at `gbps`, rounded up (the last answer kept: the next frame is most often alike). */
@inline function serialisePs(fab: usize, bytes: f64, gbps: f64): f64 {
  if (bytes == load<f64>(fab + FAB_SER_LEN) && gbps == load<f64>(fab + FAB_SER_GBPS)) return load<f64>(fab + FAB_SER_PS);
  const ps = Math.ceil((bytes * 8000) / gbps);
  store<f64>(fab + FAB_SER_LEN, bytes);
  store<f64>(fab + FAB_SER_GBPS, gbps);
  store<f64>(fab + FAB_SER_PS, ps);
  return ps;
}

/**
 * Frame `p`, whose entry is the first waiting one (after `wire` on the wire) of channel `c`
 * (record `o`), is lost as it starts: dropped for `reason`. Its entry leaves the ring when
 * nothing is on the wire before it, else stays there dead, so that the ring keeps its order.
 */
function lostAtStart(fab: usize, o: usize, c: i32, wire: u32, p: i32, reason: i32): void {
  dropAt(fab, c, p, reason);
  if (wire == 0) {
    store<u32>(o + FCH_RHEAD, (load<u32>(o + FCH_RHEAD) + 1) & load<u32>(o + FCH_RMASK));
    store<u32>(o + FCH_RCOUNT, load<u32>(o + FCH_RCOUNT) - 1);
  } else {
    const e = ent(o, wire) + FENT_LEN_META;
    store<u32>(e, load<u32>(e) | LM_DEAD);
    store<u32>(o + FCH_RWIRE, wire + 1);
  }
}

/** One Gilbert–Elliott step of channel `c`: loss drawn in the current state, then the state moves. */
function geLost(fab: usize, c: i32): bool {
  const bad = <i32>u8Of(fab, FAB_GE_BAD, c);
  const g = tab(fab, FAB_GE_THR) + (<usize>c << 5);
  const lossThr = load<f64>(g + (<usize>(2 + bad) << 3));
  const lost = lossThr >= 4294967296.0 || (lossThr > 0 && draw(fab, c) < lossThr);
  if (draw(fab, c) < load<f64>(g + (<usize>bad << 3))) setU8(fab, FAB_GE_BAD, c, <u8>(bad ^ 1));
  return lost;
}

@inline function outage(fab: usize, link: i32, i: u32): f64 {
  return load<f64>(load<usize>(tab(fab, FAB_OUTAGE_PTR) + (<usize>link << 2)) + (<usize>i << 3));
}

@inline function outages(fab: usize, link: i32): u32 {
  return load<u32>(tab(fab, FAB_OUTAGE_N) + (<usize>link << 2));
}

/**
 * By the outage schedule, is a frame that joins the queue of link `link` at `joined` and would
 * start at `start` lost before it starts? LOST_ON_ENTRY if the link went down before it joined
 * and is not up again; the time of the failure if the link fails while it waits; NOT_LOST
 * otherwise (host/fabric/fabric.ts has the reasoning).
 */
function lostWaiting(fab: usize, link: i32, joined: f64, start: f64): f64 {
  const n = outages(fab, link);
  for (let i: u32 = 0; i < 2 * n; i += 2) {
    const down = outage(fab, link, i), up = outage(fab, link, i + 1);
    if (down < joined && joined <= up) return LOST_ON_ENTRY;
    if (down >= joined && (down < start || (down == start && start > joined))) return down;
  }
  return NOT_LOST;
}

/** True when an outage of link `link` begins during [from, to]. */
function failsDuring(fab: usize, link: i32, from: f64, to: f64): bool {
  const n = outages(fab, link);
  for (let i: u32 = 0; i < 2 * n; i += 2) {
    const down = outage(fab, link, i);
    if (down >= from && down <= to) return true;
  }
  return false;
}

/** A frame of `len` bytes waits in device port channel `c`'s queue until `until`. */
function portWaits(fab: usize, c: i32, until: f64, len: u32): void {
  const o = chan(fab, c);
  let ring = load<usize>(tab(fab, FAB_WAIT_PTR) + (<usize>c << 2));
  let cap = load<u32>(tab(fab, FAB_WAIT_CAP) + (<usize>c << 2));
  const n = load<u32>(o + FCH_WAIT_COUNT);
  if (n == cap) {
    // grow (rarely: only a device handing over frames faster than its link sends them)
    const bigger = cap * 2 > 32 ? cap * 2 : 32;
    const nr = zeroed(<usize>bigger << 4), head = load<u32>(o + FCH_WAIT_HEAD);
    for (let k: u32 = 0; k < n; k++) memory.copy(nr + (<usize>k << 4), ring + (<usize>((head + k) & (cap - 1)) << 4), 16);
    store<u32>(o + FCH_WAIT_HEAD, 0);
    ring = nr;
    cap = bigger;
    store<usize>(tab(fab, FAB_WAIT_PTR) + (<usize>c << 2), ring);
    store<u32>(tab(fab, FAB_WAIT_CAP) + (<usize>c << 2), cap);
  }
  const at = ring + (<usize>((load<u32>(o + FCH_WAIT_HEAD) + n) & (cap - 1)) << 4);
  store<f64>(at, until);
  store<f64>(at, <f64>len, 8);
  store<u32>(o + FCH_WAIT_COUNT, n + 1);
  const q = load<f64>(o + FCH_QBYTES) + <f64>len;
  store<f64>(o + FCH_QBYTES, q);
  if (q > load<f64>(o + FCH_QPEAK)) store<f64>(o + FCH_QPEAK, q);
}

/** Removes from device port channel `c`'s queue the frames that started before `t`. */
export function portCatchUp(fab: usize, c: i32, t: f64): void {
  const o = chan(fab, c);
  let n = load<u32>(o + FCH_WAIT_COUNT);
  if (n == 0) return;
  const ring = load<usize>(tab(fab, FAB_WAIT_PTR) + (<usize>c << 2));
  const mask = load<u32>(tab(fab, FAB_WAIT_CAP) + (<usize>c << 2)) - 1;
  let head = load<u32>(o + FCH_WAIT_HEAD);
  let q = load<f64>(o + FCH_QBYTES);
  while (n > 0 && load<f64>(ring + (<usize>head << 4)) < t) {
    q -= load<f64>(ring + (<usize>head << 4), 8);
    head = (head + 1) & mask;
    n--;
  }
  store<f64>(o + FCH_QBYTES, q);
  store<u32>(o + FCH_WAIT_HEAD, head);
  store<u32>(o + FCH_WAIT_COUNT, n);
}

function dropAt(fab: usize, c: i32, p: i32, reason: i32): void {
  addF64(fab, FAB_CH_DROPS, c * NR + reason, 1);
  bumpDrop(fab, reason);
  pktRelease(fab, p);
}

function pause(fab: usize, c: i32): void {
  store<u8>(chan(fab, c) + FCH_PAUSED, 1);
  addF64(fab, FAB_CH_PAUSES, c, 1);
}

function resume(fab: usize, c: i32, now: f64): void {
  const o = chan(fab, c);
  store<u8>(o + FCH_PAUSED, 0);
  if (waiting(o) != 0 && load<u8>(o + FCH_DONE) == 0) {
    store<u8>(o + FCH_DONE, 1);
    const busy = load<f64>(o + FCH_BUSY);
    eventsPush(fab, now > busy ? now : busy, (c << EV_BITS) | EV_TX_DONE);
  }
}

// ---- faults ------------------------------------------------------------------------------

/** Room for `n` outages (down, up pairs) of link `link`, which the host writes; returns where. */
export function fabricOutages(fab: usize, link: i32, n: u32): usize {
  const p = zeroed(<usize>n << 4);
  store<usize>(tab(fab, FAB_OUTAGE_PTR) + (<usize>link << 2), p);
  store<u32>(tab(fab, FAB_OUTAGE_N) + (<usize>link << 2), n);
  return p;
}

/** Link `link` goes down, comes up, or ECMP learns either (F_*), at `atPs`. */
export function fabricSchedule(fab: usize, link: i32, kind: u32, atPs: f64): void {
  const f = load<u32>(fab + FAB_FAULT_N), cap = load<u32>(fab + FAB_FAULT_CAP);
  if (f == cap) {
    store<usize>(fab + FAB_FAULT_LINK, grow(tab(fab, FAB_FAULT_LINK), <usize>cap << 2, <usize>cap << 3));
    store<usize>(fab + FAB_FAULT_KIND, grow(tab(fab, FAB_FAULT_KIND), <usize>cap << 2, <usize>cap << 3));
    store<u32>(fab + FAB_FAULT_CAP, cap << 1);
  }
  setI32(fab, FAB_FAULT_LINK, <i32>f, link);
  setI32(fab, FAB_FAULT_KIND, <i32>f, <i32>kind);
  store<u32>(fab + FAB_FAULT_N, f + 1);
  eventsPush(fab, atPs, (<i32>f << EV_BITS) | EV_FAULT);
}

function fault(fab: usize, f: i32, now: f64): void {
  const link = i32Of(fab, FAB_FAULT_LINK, f), kind = u32Of(fab, FAB_FAULT_KIND, f);
  const detect = load<f64>(fab + FAB_FAILURE_DETECT_PS);
  if (kind == F_DOWN || kind == F_UP) {
    setU8(fab, FAB_LINK_UP, link, kind == F_UP ? 1 : 0);
    if (kind == F_DOWN) {
      flush(fab, 2 * link, now);
      flush(fab, 2 * link + 1, now);
    }
    if (detect == 0) known(fab, link, kind == F_UP);
    else fabricSchedule(fab, link, kind == F_UP ? F_KNOWN_UP : F_KNOWN_DOWN, now + detect);
  } else known(fab, link, kind == F_KNOWN_UP);
}

/** Drops every frame queued on channel `c`, oldest first (its link went down). */
function flush(fab: usize, c: i32, now: f64): void {
  const o = chan(fab, c);
  const wire = load<u32>(o + FCH_RWIRE), n = load<u32>(o + FCH_RCOUNT);
  for (let i = wire; i < n; i++) {
    const e = ent(o, i);
    const p = load<i32>(e + FENT_PKT), len = <f64>(load<u32>(e + FENT_LEN_META) & LM_LEN);
    store<f64>(o + FCH_QBYTES, load<f64>(o + FCH_QBYTES) - len);
    release(fab, o, p, len, now);
    dropAt(fab, c, p, R_LINK_DOWN);
  }
  store<u32>(o + FCH_RCOUNT, wire);
}

function known(fab: usize, link: i32, up: bool): void {
  setU8(fab, FAB_LINK_KNOWN_UP, link, up ? 1 : 0);
  if (u8Of(fab, FAB_LINK_FABRIC, link) != 0) fabricRebuildGroups(fab, i32Of(fab, FAB_LINK_PLANE, link));
}

/** ECMP groups of plane `pl`: leaf → leaf i over every spine both links to which are known up. */
export function fabricRebuildGroups(fab: usize, pl: i32): void {
  const leaves = <i32>load<u32>(fab + FAB_LEAVES), spines = <i32>load<u32>(fab + FAB_SPINES);
  for (let a = 0; a < leaves; a++) {
    const la = pl * leaves + a;
    for (let b = 0; b < leaves; b++) {
      const lb = pl * leaves + b, g = la * leaves + b;
      let n = 0;
      for (let j = 0; j < spines; j++) {
        const up = i32Of(fab, FAB_FABRIC_LINK_OF, la * spines + j), down = i32Of(fab, FAB_FABRIC_LINK_OF, lb * spines + j);
        if (up >= 0 && down >= 0 && u8Of(fab, FAB_LINK_KNOWN_UP, up) == 1 && u8Of(fab, FAB_LINK_KNOWN_UP, down) == 1) setI32(fab, FAB_GRP, g * spines + n++, 2 * up);
      }
      setI32(fab, FAB_GRP_N, g, n);
    }
  }
}

// ---- frames out --------------------------------------------------------------------------

/**
 * Takes every frame reaching device `device` before `endPs`, sorted by (arrival, source
 * device, source port, sequence on that port), and returns how many. They are written as PKT
 * records in receive-ring form in the outbox, bodies back to back in the outbox's body area
 * (full mode), ready to be copied into a device's receive stage in one block; and, with
 * `columns`, as the batch columns too (FAB.b_*, pointing into the header and payload slabs).
 * The frames stay held until fabricRelease (or the next take).
 */
export function fabricTake(fab: usize, device: i32, endPs: f64, columns: bool): u32 {
  const n = takeDue(fab, device, endPs);
  if (n == 0) return 0;
  fabricOutbox(fab, n, fabricFull(fab) ? heldBodyBytes(fab) : 0);
  writeHeld(fab, tab(fab, FAB_OUTBOX), tab(fab, FAB_OUTBOX_BODY), columns);
  return n;
}

/**
 * Holds the frames reaching device `device` before `endPs`, in (arrival, key) order (FAB.held;
 * freed by fabricRelease or the next take), after freeing the last ones; returns how many.
 */
export function takeDue(fab: usize, device: i32, endPs: f64): u32 {
  fabricRelease(fab);
  if (f64Of(fab, FAB_PEND_MIN, device) >= endPs) return 0;
  const ports = <i32>load<u32>(fab + FAB_PORTS), base = device * ports;
  // the arrivals of the frames at the heads of the device's ports' last hops, side by side
  const heads = tab(fab, FAB_LAST_HEAD_PS) + (<usize>base << 3), keys = tab(fab, FAB_LAST_HEAD_KEY) + (<usize>base << 3);
  // the ports whose head frame is due, in (arrival, key) order; taking a port's head puts the
  // port back in order by its next frame, if that one is due too (a merge of the ports' lists)
  const list = tab(fab, FAB_DUE);
  let due: i32 = 0;
  for (let j = 0; j < ports; j++) if (load<f64>(heads + (<usize>j << 3)) < endPs) due = dueInsert(list, heads, keys, due, j);
  let n: u32 = 0;
  let first: i32 = 0;
  while (first < due) {
    const best = load<i32>(list + (<usize>first << 2));
    first++;
    const bestPs = load<f64>(heads + (<usize>best << 3));
    const o = chan(fab, i32Of(fab, FAB_EP_DOWN_CH, base + best));
    const e = ent(o, 0);
    const p = load<i32>(e + FENT_PKT), lm = load<u32>(e + FENT_LEN_META);
    // what the host reads of it: its arrival, and the mark it may have picked up on the way
    const r = pkt(fab, p);
    store<f64>(r + FPKT_ARRIVE_PS, bestPs);
    if ((lm & LM_CE) != 0) store<u32>(r + FPKT_META, (load<u32>(r + FPKT_META) & ~META_ECT) | META_CE);
    ringPop(o);
    let next = Infinity;
    if (load<u32>(o + FCH_RWIRE) != 0) {
      const h = ent(o, 0);
      next = load<f64>(h + FENT_T);
      store<f64>(keys + (<usize>best << 3), load<f64>(h + FENT_KEY));
    }
    store<f64>(heads + (<usize>best << 3), next);
    if (next < endPs) {
      // back in the list after the ports taken so far: its slots from `first` on are the rest
      first--;
      store<i32>(list + (<usize>first << 2), best);
      dueSift(list, heads, keys, first, due);
    }
    const cap = load<u32>(fab + FAB_HELD_CAP);
    if (n == cap) {
      store<usize>(fab + FAB_HELD, grow(tab(fab, FAB_HELD), <usize>cap << 2, <usize>cap << 3));
      store<u32>(fab + FAB_HELD_CAP, cap << 1);
    }
    setI32(fab, FAB_HELD, <i32>n, p);
    n++;
  }
  store<u32>(fab + FAB_HELD_N, n);
  let min = Infinity;
  for (let j = 0; j < ports; j++) min = Math.min(min, load<f64>(heads + (<usize>j << 3)));
  setF64(fab, FAB_PEND_MIN, device, min);
  store<f64>(fab + FAB_DELIVERED, load<f64>(fab + FAB_DELIVERED) + <f64>n);
  return n;
}

/** Does port `a`'s head frame come before port `b`'s ((arrival, key); the lower port on a tie, as a scan in port order finds)? */
@inline function dueBefore(heads: usize, keys: usize, a: i32, b: i32): bool {
  const ha = load<f64>(heads + (<usize>a << 3)), hb = load<f64>(heads + (<usize>b << 3));
  if (ha != hb) return ha < hb;
  const ka = load<f64>(keys + (<usize>a << 3)), kb = load<f64>(keys + (<usize>b << 3));
  return ka < kb || (ka == kb && a < b);
}

/** Adds port `j` to the due list `list` (FAB.due) of `n` ports, in order; returns the new length. */
function dueInsert(list: usize, heads: usize, keys: usize, n: i32, j: i32): i32 {
  let i = n;
  while (i > 0 && dueBefore(heads, keys, j, load<i32>(list + (<usize>(i - 1) << 2)))) {
    store<i32>(list + (<usize>i << 2), load<i32>(list + (<usize>(i - 1) << 2)));
    i--;
  }
  store<i32>(list + (<usize>i << 2), j);
  return n + 1;
}

/** Moves the due list's entry at `i` (its head just got later) down to its place among entries i + 1 .. n - 1. */
function dueSift(list: usize, heads: usize, keys: usize, i: i32, n: i32): void {
  const j = load<i32>(list + (<usize>i << 2));
  while (i + 1 < n && dueBefore(heads, keys, load<i32>(list + (<usize>(i + 1) << 2)), j)) {
    store<i32>(list + (<usize>i << 2), load<i32>(list + (<usize>(i + 1) << 2)));
    i++;
  }
  store<i32>(list + (<usize>i << 2), j);
}

/** Body bytes (full mode) of the frames takeDue holds. */
export function heldBodyBytes(fab: usize): u32 {
  let bytes: u32 = 0;
  for (let k: i32 = 0; k < <i32>load<u32>(fab + FAB_HELD_N); k++) {
    const slot = pktPayload(fab, i32Of(fab, FAB_HELD, k));
    if (slot != NONE) bytes += load<u32>(tab(fab, FAB_PAY_LEN) + (<usize>slot << 2));
  }
  return bytes;
}

/**
 * The frames takeDue holds, as PKT records in receive form at `out` (room for all of them) and
 * their bodies one after another at `outBody` (body_off from 0); with `columns`, as the batch
 * columns too. The records go to slots `first`, `first` + 1, ... of `out` taken as a ring of
 * `slots` (a device's receive ring; by default one after another from `out`).
 */
export function writeHeld(fab: usize, out: usize, outBody: usize, columns: bool, first: u32 = 0, slots: u32 = 0xffffffff): void {
  const n = load<u32>(fab + FAB_HELD_N), ports = <i32>load<u32>(fab + FAB_PORTS);
  const slotBytes = load<u32>(fab + FAB_PAYLOAD_SLOT_BYTES);
  let bodyAt: u32 = 0;
  for (let k: u32 = 0; k < n; k++) {
    const p = i32Of(fab, FAB_HELD, <i32>k), r = pkt(fab, p), i = <i32>k;
    const src = load<i32>(r + FPKT_SRC_EP), dst = load<i32>(r + FPKT_DST_EP);
    const arrive = load<f64>(r + FPKT_ARRIVE_PS), seq = load<f64>(r + FPKT_SEQ);
    const meta = load<u32>(r + FPKT_META), wireLen = load<u32>(r + FPKT_WIRE_LEN);
    const hdrLen = meta & META_HDR_LEN, hdr = pktHdr(fab, p);
    if ((meta & META_CE) != 0) markCe(hdr);
    const slot = pktPayload(fab, p);
    const payLen = slot == NONE ? 0 : load<u32>(tab(fab, FAB_PAY_LEN) + (<usize>slot << 2));
    const payOff = slot == NONE ? 0 : <u32>slot * slotBytes;
    if (columns) {
      setF64(fab, FAB_B_ARRIVAL, i, arrive);
      setI32(fab, FAB_B_PORT, i, dst % ports);
      setI32(fab, FAB_B_SRC_DEVICE, i, src / ports);
      setI32(fab, FAB_B_SRC_PORT, i, src % ports);
      setF64(fab, FAB_B_SEQ, i, seq);
      setI32(fab, FAB_B_WIRE_LEN, i, <i32>wireLen);
      setI32(fab, FAB_B_HDR_OFF, i, <i32>hdr);
      setI32(fab, FAB_B_HDR_LEN, i, <i32>hdrLen);
      setI32(fab, FAB_B_PAYLOAD_OFF, i, <i32>payOff);
      setI32(fab, FAB_B_PAYLOAD_LEN, i, <i32>payLen);
    }
    let at = first + k;
    if (at >= slots) at -= slots;
    const o = out + <usize>at * PKT_SIZE;
    store<u64>(o + PKT_TIME_PS, <u64>Math.ceil(arrive));
    store<u32>(o + PKT_WIRE_LEN, wireLen);
    store<u16>(o + PKT_PORT, <u16>(dst % ports));
    store<u16>(o + PKT_HDR_LEN, <u16>hdrLen);
    store<u32>(o + PKT_BODY_LEN, payLen);
    store<u32>(o + PKT_BODY_OFF, bodyAt);
    store<u32>(o + PKT_SEQ, <u32><i64>seq);
    store<u32>(o + PKT_SRC_DEVICE, <u32>(src / ports));
    copyHdrSlot(o + PKT_HDR, hdr);
    if (payLen > 0) {
      memory.copy(outBody + bodyAt, tab(fab, FAB_PAY) + payOff, payLen);
      bodyAt += payLen;
    }
  }
}

/** Frees the frames of the last fabricTake. */
export function fabricRelease(fab: usize): void {
  const n = load<u32>(fab + FAB_HELD_N);
  for (let k: u32 = 0; k < n; k++) pktRelease(fab, i32Of(fab, FAB_HELD, <i32>k));
  store<u32>(fab + FAB_HELD_N, 0);
}

// ---- the parts, for tests (test/fabric-parts.test.ts) -------------------------------------

/** Reads the frame whose first `len` bytes are at `at` into the header's scratch FrameFields (FAB.frame); FRAME_*. */
export function fabricReadFrame(fab: usize, at: usize, len: u32): i32 {
  return readFrame(at, len, changetype<FrameFields>(load<usize>(fab + FAB_FRAME)));
}

/** Sets CE in the frame at `at` (markCe). */
export function fabricMarkCe(at: usize): void {
  markCe(at);
}

/** The next draw of random stream `i` (channels, then switches). */
export function fabricDraw(fab: usize, i: i32): u32 {
  return <u32>draw(fab, i);
}

/** The ECMP member of `count` a switch seeded `seed` picks for a tuple hash. */
export function fabricEcmpPick(hash: u32, seed: u32, count: u32): u32 {
  return ecmpPick(hash, seed, count);
}

/** MurmurHash3 of a 5-tuple (hashTuple). */
export function fabricHashTuple(src: u32, dst: u32, sport: u32, dport: u32, proto: u32): u32 {
  return hashTuple(src, dst, sport, dport, proto);
}

/** Schedules event `ev` at (`time`, `key`): the queue alone. */
export function fabricEventPush(fab: usize, time: f64, key: f64, ev: i32): void {
  eventsPushKeyed(fab, time, key, ev);
}

/** Pops the earliest event before `limit` (-1: none); its time is in FAB.ev_last_time. */
export function fabricEventPop(fab: usize, limit: f64): i32 {
  return eventsPopBefore(fab, limit);
}
