// Frames out: those reaching a device before a window's end, merged across its ports in
// (arrival, key) order and held; written as PKT records in receive form (a device's receive
// stage, or the outbox), and as batch columns; freed by the next take or fabricRelease.

import {
  FAB_DELIVERED, FAB_PORTS, FAB_PAYLOAD_SLOT_BYTES, FAB_LAST_HEAD_PS, FAB_LAST_HEAD_KEY, FAB_EP_DOWN_CH, FAB_PEND_MIN,
  FAB_PAY, FAB_PAY_LEN, FAB_HELD, FAB_HELD_CAP, FAB_HELD_N, FAB_DUE, FAB_OUTBOX, FAB_OUTBOX_BODY, FAB_B_ARRIVAL,
  FAB_B_PORT, FAB_B_SRC_DEVICE, FAB_B_SRC_PORT, FAB_B_SEQ, FAB_B_WIRE_LEN, FAB_B_HDR_OFF, FAB_B_HDR_LEN,
  FAB_B_PAYLOAD_OFF, FAB_B_PAYLOAD_LEN, FCH_RWIRE, FRING_ENTRY_T, FRING_ENTRY_KEY, FRING_ENTRY_PKT,
  FRING_ENTRY_LEN_META, FPKT_ARRIVE_PS, FPKT_SEQ, FPKT_SRC_EP, FPKT_DST_EP, FPKT_WIRE_LEN, FPKT_META, PKT_SIZE,
  PKT_TIME_PS, PKT_WIRE_LEN, PKT_PORT, PKT_HDR_LEN, PKT_BODY_LEN, PKT_BODY_OFF, PKT_SEQ, PKT_SRC_DEVICE, PKT_HDR,
} from "../generated/layouts";
import { LM_CE, tab, i32Of, f64Of, setI32, setF64, chan, ent } from "./tables";
import { fabricFull, fabricOutbox } from "./build";
import { ringPop } from "./ring";
import { NONE, META_HDR_LEN, META_ECT, META_CE, pkt, pktHdr, pktPayload, pktRelease, copyHdrSlot } from "./packets";
import { markCe } from "./frame";
import { grow } from "./memory";

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
    const p = load<i32>(e + FRING_ENTRY_PKT), lm = load<u32>(e + FRING_ENTRY_LEN_META);
    // what the host reads of it: its arrival, and the mark it may have picked up on the way
    const r = pkt(fab, p);
    store<f64>(r + FPKT_ARRIVE_PS, bestPs);
    if ((lm & LM_CE) != 0) store<u32>(r + FPKT_META, (load<u32>(r + FPKT_META) & ~META_ECT) | META_CE);
    ringPop(o);
    let next = Infinity;
    if (load<u32>(o + FCH_RWIRE) != 0) {
      const h = ent(o, 0);
      next = load<f64>(h + FRING_ENTRY_T);
      store<f64>(keys + (<usize>best << 3), load<f64>(h + FRING_ENTRY_KEY));
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
