// Frames in: a device's PKT records (from the inbox, or its transmit ring read in place), each
// checked, read (its 5-tuple and ECN) and given a packet block. Without PFC a frame goes to
// its port's transmitter at once, its start known then; until it starts it counts in the
// port's queue, kept as (start, bytes) pairs that portCatchUp drops as time passes. With PFC
// it joins its port's list of frames waiting to enter, and enters by an event at its departure.

import {
  FAB_NOW_PS, FAB_INJECTED, FAB_LATE_TX, FAB_UNORDERED_TX, FAB_DEVICES, FAB_PORTS, FAB_FULL, FAB_PFC_ON,
  FAB_PAYLOAD_SLOT_BYTES, FAB_WAIT_PTR, FAB_WAIT_CAP, FAB_OUTAGE_N, FAB_EP_UP_CH, FAB_EP_SEQ, FAB_LAST_DEPART,
  FAB_INJ_HEAD, FAB_INJ_TAIL, FAB_INBOX, FAB_INBOX_BODY, FAB_FRAME, FCH_BUSY, FCH_QBYTES, FCH_QPEAK, FCH_WAIT_HEAD,
  FCH_WAIT_COUNT, FPKT_SEQ, FPKT_SRC_EP, FPKT_DST_EP, FPKT_WIRE_LEN, FPKT_META, FPKT_SIDE_NEXT_TIME,
  FPKT_SIDE_NEXT_KEY, FPKT_SIDE_NEXT, FPKT_SIDE_HASH, PKT_SIZE, PKT_TIME_PS, PKT_WIRE_LEN, PKT_PORT, PKT_HDR_LEN,
  PKT_BODY_LEN, PKT_BODY_OFF, PKT_HDR, PKT_SRC_DEVICE,
} from "../generated/layouts";
import { IPV4_ECN_ECT0, IPV4_ECN_ECT1 } from "../generated/headers";
import {
  R_NO_ROUTE, R_LINK_DOWN, R_BAD, EV_INJECT, EV_BITS, LM_LEN, LM_ECT, tab, i32Of, f64Of, setI32, setF64, bump,
  bumpDrop, chan, entryKey,
} from "./tables";
import { ringPush } from "./ring";
import { dropAt } from "./buffer";
import { NOT_LOST, LOST_ON_ENTRY, lostWaiting } from "./faults";
import { transmit } from "./transmit";
import { eventsPushKeyed } from "./events";
import { NONE, HDR_SLOT, META_ECT, pkt, pktHdr, pktSide, pktAlloc, pktRelease, pktAllocPayload, copyHdrSlot } from "./packets";
import { FrameFields, readFrame, FRAME_OK } from "./frame";
import { hashTuple } from "./rng";
import { zeroed } from "./memory";
import { portOwned, divert } from "./partition";

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
    const port = <u32>load<u16>(r + PKT_PORT);
    // a port of another partition's plane: its frame enters there (partition.ts)
    if (port < load<u32>(fab + FAB_PORTS) && !portOwned(fab, port)) {
      divert(fab, device, r, depart, bodies);
      entered++;
      continue;
    }
    if (send(fab, f, device, port, depart, wireLen, r + PKT_HDR, <u32>load<u16>(r + PKT_HDR_LEN), bodies + load<u32>(r + PKT_BODY_OFF), load<u32>(r + PKT_BODY_LEN))) entered++;
  }
  return entered;
}

/**
 * The first `n` inbox records, frames another partition's devices sent on its planes' ports
 * (its FAB.part_divert: each record's time its departure, src_device its sender): those on a
 * port this fabric runs enter as their sender's would (send); the rest, a third partition's,
 * are skipped. Returns how many entered.
 */
export function fabricIngestDiverted(fab: usize, n: u32): u32 {
  const f = changetype<FrameFields>(load<usize>(fab + FAB_FRAME));
  const recs = load<usize>(fab + FAB_INBOX), bodies = load<usize>(fab + FAB_INBOX_BODY);
  let entered: u32 = 0;
  for (let k: u32 = 0; k < n; k++) {
    const r = recs + <usize>k * PKT_SIZE, port = <u32>load<u16>(r + PKT_PORT);
    if (!portOwned(fab, port)) continue;
    if (send(fab, f, load<u32>(r + PKT_SRC_DEVICE), port, <f64>load<u64>(r + PKT_TIME_PS), load<u32>(r + PKT_WIRE_LEN), r + PKT_HDR, <u32>load<u16>(r + PKT_HDR_LEN), bodies + load<u32>(r + PKT_BODY_OFF), load<u32>(r + PKT_BODY_LEN))) entered++;
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
      ringPush(fab, chan(fab, c), entryKey(ep, seq), id, dst, hash, wireLen | (ect != 0 ? LM_ECT : 0));
      transmit(fab, c, chan(fab, c), start);
    }
    return true;
  }
  // With PFC a pause may hold the transmitter: the frame enters at its departure time.
  store<u32>(pktSide(fab, id) + FPKT_SIDE_HASH, hash);
  const tail = i32Of(fab, FAB_INJ_TAIL, ep);
  if (tail == NONE) {
    setI32(fab, FAB_INJ_HEAD, ep, id);
    eventsPushKeyed(fab, departPs, entryKey(ep, seq), (ep << EV_BITS) | EV_INJECT);
  } else {
    const tr = pktSide(fab, tail);
    store<i32>(tr + FPKT_SIDE_NEXT, id);
    store<f64>(tr + FPKT_SIDE_NEXT_TIME, departPs);
    store<f64>(tr + FPKT_SIDE_NEXT_KEY, entryKey(ep, seq));
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
