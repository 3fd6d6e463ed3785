// A fabric that runs some of a run's planes, beside some of its devices: one partition of a run
// split over threads (host/fabric/partition.ts says how the partitions meet each window). Every
// partition builds the whole fabric, so ids, random streams and counters are the same
// everywhere; each gets frames on its own planes only. Planes share no switch, link, random
// stream or buffer, and a frame stays on its plane from its sender's port to its receiver's, so
// a fabric given only its planes' frames runs their events as the whole fabric would.
//
// What crosses between partitions:
// - a frame one of this fabric's devices sends on a port of another partition's plane: it is
//   not ingested here but diverted as it is handed over (ingest.ts calls divert), a PKT record
//   whose time is its departure; the partition of its plane ingests it (fabricIngestDiverted);
// - a frame on the wire of a last hop to another partition's device: its arrival is known
//   from the moment its last transmission starts, so once this fabric has run to a window's
//   end it moves out (fabricMoveOut) and waits on that device's port in the other partition's
//   fabric (fabricAdopt), where the device takes it as it would have taken it here.

import {
  FAB_DEVICES, FAB_PORTS, FAB_FULL, FAB_PEND_MIN, FAB_LAST_HEAD_PS, FAB_LAST_HEAD_KEY, FAB_EP_DOWN_CH, FAB_PAY,
  FAB_PAY_LEN, FAB_PAYLOAD_SLOT_BYTES, FAB_PART_DIVERT, FAB_PART_OUT, FAB_PART_IN, FAB_PORT_OWNED, FAB_DEV_OWNED,
  FBUF_SIZE, FBUF_RECS, FBUF_CAP, FBUF_N, FBUF_BODY, FBUF_BODY_CAP, FBUF_BODY_N,
  XFER_SIZE, XFER_T, XFER_KEY, XFER_SEQ, XFER_SRC_EP, XFER_DST_EP, XFER_WIRE_LEN, XFER_META, XFER_HASH,
  XFER_LEN_META, XFER_BODY_LEN, XFER_BODY_OFF, XFER_HDR, FCH_RWIRE, FRING_ENTRY_T, FRING_ENTRY_KEY,
  FRING_ENTRY_PKT, FRING_ENTRY_DST_EP, FRING_ENTRY_HASH, FRING_ENTRY_LEN_META, FPKT_SEQ, FPKT_SRC_EP, FPKT_DST_EP,
  FPKT_WIRE_LEN, FPKT_META, PKT_SIZE, PKT_TIME_PS, PKT_BODY_LEN, PKT_BODY_OFF, PKT_SRC_DEVICE,
} from "../generated/layouts";
import { tab, i32Of, f64Of, setF64, chan, ent } from "./tables";
import { ringPush, ringPop } from "./ring";
import { NONE, pkt, pktHdr, pktPayload, pktAlloc, pktRelease, pktAllocPayload, copyHdrSlot } from "./packets";
import { zeroed, grow } from "./memory";
import { copyBytes } from "../core/copy";

/**
 * Makes this fabric one partition's: its tables of owned ports (u8 per port: the port's plane
 * runs here) and owned devices (u8 per device), every entry 1 until the host writes them, and
 * its three buffers (FAB.part_divert, part_out, part_in).
 */
export function fabricPartition(fab: usize): void {
  const ports = load<u32>(fab + FAB_PORTS), devices = load<u32>(fab + FAB_DEVICES);
  const p = zeroed(ports), d = zeroed(devices);
  memory.fill(p, 1, ports);
  memory.fill(d, 1, devices);
  store<usize>(fab + FAB_PORT_OWNED, p);
  store<usize>(fab + FAB_DEV_OWNED, d);
  store<usize>(fab + FAB_PART_DIVERT, buffer(PKT_SIZE));
  store<usize>(fab + FAB_PART_OUT, buffer(XFER_SIZE));
  store<usize>(fab + FAB_PART_IN, buffer(XFER_SIZE));
}

/** An empty FBUF with room for 64 records of `size` and 4 KiB of bodies. */
function buffer(size: u32): usize {
  const b = zeroed(FBUF_SIZE);
  store<usize>(b + FBUF_RECS, zeroed(<usize>size << 6));
  store<u32>(b + FBUF_CAP, 64);
  store<usize>(b + FBUF_BODY, zeroed(4096));
  store<u32>(b + FBUF_BODY_CAP, 4096);
  return b;
}

/** Room in FBUF `b` for `n` more records of `size` and `bodyBytes` more of bodies. */
function reserve(b: usize, size: u32, n: u32, bodyBytes: u32): void {
  const used = load<u32>(b + FBUF_N), cap = load<u32>(b + FBUF_CAP);
  if (used + n > cap) {
    const m = used + n > 2 * cap ? used + n : 2 * cap;
    store<usize>(b + FBUF_RECS, grow(load<usize>(b + FBUF_RECS), <usize>used * size, <usize>m * size));
    store<u32>(b + FBUF_CAP, m);
  }
  const bused = load<u32>(b + FBUF_BODY_N), bcap = load<u32>(b + FBUF_BODY_CAP);
  if (bused + bodyBytes > bcap) {
    const m = bused + bodyBytes > 2 * bcap ? bused + bodyBytes : 2 * bcap;
    store<usize>(b + FBUF_BODY, grow(load<usize>(b + FBUF_BODY), bused, m));
    store<u32>(b + FBUF_BODY_CAP, m);
  }
}

/** Whether port `port` is on a plane this fabric runs (always, unpartitioned). */
@inline export function portOwned(fab: usize, port: u32): bool {
  const t = load<usize>(fab + FAB_PORT_OWNED);
  return t == 0 || load<u8>(t + port) != 0;
}

/** Whether device `d` runs beside this fabric (always, unpartitioned). */
@inline function deviceOwned(fab: usize, d: u32): bool {
  const t = load<usize>(fab + FAB_DEV_OWNED);
  return t == 0 || load<u8>(t + d) != 0;
}

/**
 * Frame record `r` (a PKT record of a transmit ring or the inbox), sent by `device` and leaving
 * at `departPs` on a port another partition runs: kept in FAB.part_divert as a PKT record
 * whose time is its departure and src_device its sender, its body (full mode) after the others.
 */
export function divert(fab: usize, device: u32, r: usize, departPs: f64, bodies: usize): void {
  const b = load<usize>(fab + FAB_PART_DIVERT);
  const bodyLen = load<u32>(fab + FAB_FULL) != 0 ? load<u32>(r + PKT_BODY_LEN) : 0;
  reserve(b, PKT_SIZE, 1, bodyLen);
  const n = load<u32>(b + FBUF_N), bn = load<u32>(b + FBUF_BODY_N);
  const o = load<usize>(b + FBUF_RECS) + <usize>n * PKT_SIZE;
  copyBytes(o, r, PKT_SIZE);
  store<u64>(o + PKT_TIME_PS, <u64>departPs);
  store<u32>(o + PKT_SRC_DEVICE, device);
  store<u32>(o + PKT_BODY_LEN, bodyLen);
  store<u32>(o + PKT_BODY_OFF, bn);
  if (bodyLen > 0) memory.copy(load<usize>(b + FBUF_BODY) + bn, bodies + load<u32>(r + PKT_BODY_OFF), bodyLen);
  store<u32>(b + FBUF_N, n + 1);
  store<u32>(b + FBUF_BODY_N, bn + bodyLen);
}

/**
 * Moves every frame on the wire of a last hop to a device of another partition into
 * FAB.part_out (emptied first) as XFER records, in each port's order; returns the earliest
 * arrival among them (Infinity: none). The ports are then as if their devices had taken them.
 */
export function fabricMoveOut(fab: usize): f64 {
  const b = load<usize>(fab + FAB_PART_OUT);
  store<u32>(b + FBUF_N, 0);
  store<u32>(b + FBUF_BODY_N, 0);
  const devices = load<u32>(fab + FAB_DEVICES), ports = load<u32>(fab + FAB_PORTS);
  const full = load<u32>(fab + FAB_FULL) != 0, slotBytes = <usize>load<u32>(fab + FAB_PAYLOAD_SLOT_BYTES);
  let min = Infinity;
  for (let d: u32 = 0; d < devices; d++) {
    if (deviceOwned(fab, d) || f64Of(fab, FAB_PEND_MIN, <i32>d) == Infinity) continue;
    for (let j: u32 = 0; j < ports; j++) {
      const ep = <i32>(d * ports + j), c = i32Of(fab, FAB_EP_DOWN_CH, ep);
      if (c == NONE) continue;
      const o = chan(fab, c);
      while (load<u32>(o + FCH_RWIRE) != 0) {
        const e = ent(o, 0), p = load<i32>(e + FRING_ENTRY_PKT), r = pkt(fab, p);
        const slot = full ? pktPayload(fab, p) : NONE;
        const bodyLen = slot == NONE ? 0 : load<u32>(tab(fab, FAB_PAY_LEN) + (<usize>slot << 2));
        reserve(b, XFER_SIZE, 1, bodyLen);
        const n = load<u32>(b + FBUF_N), bn = load<u32>(b + FBUF_BODY_N);
        const x = load<usize>(b + FBUF_RECS) + <usize>n * XFER_SIZE;
        const t = load<f64>(e + FRING_ENTRY_T);
        store<f64>(x + XFER_T, t);
        store<f64>(x + XFER_KEY, load<f64>(e + FRING_ENTRY_KEY));
        store<f64>(x + XFER_SEQ, load<f64>(r + FPKT_SEQ));
        store<i32>(x + XFER_SRC_EP, load<i32>(r + FPKT_SRC_EP));
        store<i32>(x + XFER_DST_EP, load<i32>(e + FRING_ENTRY_DST_EP));
        store<u32>(x + XFER_WIRE_LEN, load<u32>(r + FPKT_WIRE_LEN));
        store<u32>(x + XFER_META, load<u32>(r + FPKT_META));
        store<u32>(x + XFER_HASH, load<u32>(e + FRING_ENTRY_HASH));
        store<u32>(x + XFER_LEN_META, load<u32>(e + FRING_ENTRY_LEN_META));
        store<u32>(x + XFER_BODY_LEN, bodyLen);
        store<u32>(x + XFER_BODY_OFF, bn);
        copyHdrSlot(x + XFER_HDR, pktHdr(fab, p));
        if (bodyLen > 0) memory.copy(load<usize>(b + FBUF_BODY) + bn, tab(fab, FAB_PAY) + <usize>slot * slotBytes, bodyLen);
        store<u32>(b + FBUF_N, n + 1);
        store<u32>(b + FBUF_BODY_N, bn + bodyLen);
        if (t < min) min = t;
        pktRelease(fab, p);
        ringPop(o);
      }
      setF64(fab, FAB_LAST_HEAD_PS, ep, Infinity);
    }
    setF64(fab, FAB_PEND_MIN, <i32>d, Infinity);
  }
  return min;
}

/** Room in FAB.part_in (emptied) for `n` XFER records and `bodyBytes` of bodies; returns its FBUF. */
export function fabricPartIn(fab: usize, n: u32, bodyBytes: u32): usize {
  const b = load<usize>(fab + FAB_PART_IN);
  store<u32>(b + FBUF_N, 0);
  store<u32>(b + FBUF_BODY_N, 0);
  reserve(b, XFER_SIZE, n, bodyBytes);
  return b;
}

/**
 * The first `n` XFER records of FAB.part_in (another partition's fabricMoveOut) whose device
 * runs here: each frame waits on the wire of its last hop, behind those already there, as if
 * this fabric had sent it. The others are skipped (a third partition's).
 */
export function fabricAdopt(fab: usize, n: u32): void {
  const b = load<usize>(fab + FAB_PART_IN), recs = load<usize>(b + FBUF_RECS), bodies = load<usize>(b + FBUF_BODY);
  const ports = load<u32>(fab + FAB_PORTS), full = load<u32>(fab + FAB_FULL) != 0;
  for (let k: u32 = 0; k < n; k++) {
    const x = recs + <usize>k * XFER_SIZE;
    const dst = load<i32>(x + XFER_DST_EP), d = <u32>dst / ports;
    if (!deviceOwned(fab, d)) continue;
    const o = chan(fab, i32Of(fab, FAB_EP_DOWN_CH, dst));
    const p = pktAlloc(fab), r = pkt(fab, p);
    store<f64>(r + FPKT_SEQ, load<f64>(x + XFER_SEQ));
    store<i32>(r + FPKT_SRC_EP, load<i32>(x + XFER_SRC_EP));
    store<i32>(r + FPKT_DST_EP, dst);
    store<u32>(r + FPKT_WIRE_LEN, load<u32>(x + XFER_WIRE_LEN));
    store<u32>(r + FPKT_META, load<u32>(x + XFER_META));
    copyHdrSlot(pktHdr(fab, p), x + XFER_HDR);
    const bodyLen = load<u32>(x + XFER_BODY_LEN);
    if (full && bodyLen > 0) memory.copy(pktAllocPayload(fab, p, bodyLen), bodies + load<u32>(x + XFER_BODY_OFF), bodyLen);
    // this fabric sends nothing on another partition's plane: the ring holds frames on the wire only
    const wire = load<u32>(o + FCH_RWIRE);
    const t = load<f64>(x + XFER_T), key = load<f64>(x + XFER_KEY);
    ringPush(fab, o, key, p, dst, load<u32>(x + XFER_HASH), load<u32>(x + XFER_LEN_META));
    store<f64>(ent(o, wire) + FRING_ENTRY_T, t);
    store<u32>(o + FCH_RWIRE, wire + 1);
    if (wire != 0) continue;
    setF64(fab, FAB_LAST_HEAD_PS, dst, t);
    setF64(fab, FAB_LAST_HEAD_KEY, dst, key);
    if (t < f64Of(fab, FAB_PEND_MIN, <i32>d)) setF64(fab, FAB_PEND_MIN, <i32>d, t);
  }
}
