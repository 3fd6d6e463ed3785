// Packets in flight through the fabric: a 64-byte FPKT record per packet id and a header slot
// per id (HDR_SLOT bytes), with a free list; in full mode a payload slot per packet that has
// bytes beyond its headers. host/fabric/packets.ts describes the fields and why they are one
// record per packet rather than a column per field.

import {
  FAB_PKT_REC, FAB_PKT_HDR, FAB_PKT_CAP, FAB_PKT_FREE, FAB_PKT_LIVE, FAB_PKT_PEAK,
  FAB_PAY, FAB_PAY_LEN, FAB_PAY_NEXT, FAB_PAY_SLOTS, FAB_PAY_FREE, FAB_PAYLOAD_SLOT_BYTES,
  FPKT_NEXT, FPKT_PAYLOAD, PKT_SIZE, PKT_HDR,
} from "../generated/layouts";
import { grow } from "./memory";

export const NONE: i32 = -1;
/** Bytes of a header slot: a PKT record's header room (layouts/device.json), all of a frame's headers the fabric takes. */
export const HDR_SLOT: u32 = PKT_SIZE - PKT_HDR;
export const META_HDR_LEN: u32 = 0xff, META_ECT: u32 = 0x100, META_CE: u32 = 0x200;

/** Packet `p`'s record. */
@inline export function pkt(fab: usize, p: i32): usize {
  return load<usize>(fab + FAB_PKT_REC) + (<usize>p << 6);
}

/** Packet `p`'s header slot. */
@inline export function pktHdr(fab: usize, p: i32): usize {
  return load<usize>(fab + FAB_PKT_HDR) + <usize>p * HDR_SLOT;
}

/** Grows the pool to `n` packets (the new ids join the free list, lowest first). */
export function pktGrow(fab: usize, n: u32): void {
  const old = load<u32>(fab + FAB_PKT_CAP);
  store<usize>(fab + FAB_PKT_REC, grow(load<usize>(fab + FAB_PKT_REC), <usize>old << 6, <usize>n << 6));
  store<usize>(fab + FAB_PKT_HDR, grow(load<usize>(fab + FAB_PKT_HDR), <usize>old * HDR_SLOT, <usize>n * HDR_SLOT));
  let free = load<i32>(fab + FAB_PKT_FREE);
  for (let id = <i32>n - 1; id >= <i32>old; id--) {
    store<i32>(pkt(fab, id) + FPKT_NEXT, free);
    free = id;
  }
  store<i32>(fab + FAB_PKT_FREE, free);
  store<u32>(fab + FAB_PKT_CAP, n);
}

/** A free packet id (growing the pool when none is free), with no payload slot. */
export function pktAlloc(fab: usize): i32 {
  if (load<i32>(fab + FAB_PKT_FREE) == NONE) pktGrow(fab, load<u32>(fab + FAB_PKT_CAP) << 1);
  const id = load<i32>(fab + FAB_PKT_FREE);
  const r = pkt(fab, id);
  store<i32>(fab + FAB_PKT_FREE, load<i32>(r + FPKT_NEXT));
  store<i32>(r + FPKT_NEXT, NONE);
  store<i32>(r + FPKT_PAYLOAD, NONE);
  const live = load<u32>(fab + FAB_PKT_LIVE) + 1;
  store<u32>(fab + FAB_PKT_LIVE, live);
  if (live > load<u32>(fab + FAB_PKT_PEAK)) store<u32>(fab + FAB_PKT_PEAK, live);
  return id;
}

export function pktRelease(fab: usize, id: i32): void {
  const r = pkt(fab, id);
  const slot = load<i32>(r + FPKT_PAYLOAD);
  if (slot != NONE) {
    store<i32>(load<usize>(fab + FAB_PAY_NEXT) + (<usize>slot << 2), load<i32>(fab + FAB_PAY_FREE));
    store<i32>(fab + FAB_PAY_FREE, slot);
  }
  store<i32>(r + FPKT_NEXT, load<i32>(fab + FAB_PKT_FREE));
  store<i32>(fab + FAB_PKT_FREE, id);
  store<u32>(fab + FAB_PKT_LIVE, load<u32>(fab + FAB_PKT_LIVE) - 1);
}

/** Gives packet `id` a payload slot for `len` bytes; returns the slot's address. */
export function pktAllocPayload(fab: usize, id: i32, len: u32): usize {
  if (load<i32>(fab + FAB_PAY_FREE) == NONE) {
    const old = load<u32>(fab + FAB_PAY_SLOTS), n = old * 2 > 64 ? old * 2 : 64;
    const bytes = <usize>load<u32>(fab + FAB_PAYLOAD_SLOT_BYTES);
    store<usize>(fab + FAB_PAY, grow(load<usize>(fab + FAB_PAY), <usize>old * bytes, <usize>n * bytes));
    store<usize>(fab + FAB_PAY_LEN, grow(load<usize>(fab + FAB_PAY_LEN), <usize>old << 2, <usize>n << 2));
    store<usize>(fab + FAB_PAY_NEXT, grow(load<usize>(fab + FAB_PAY_NEXT), <usize>old << 2, <usize>n << 2));
    let free = load<i32>(fab + FAB_PAY_FREE);
    const next = load<usize>(fab + FAB_PAY_NEXT);
    for (let i = <i32>n - 1; i >= <i32>old; i--) {
      store<i32>(next + (<usize>i << 2), free);
      free = i;
    }
    store<i32>(fab + FAB_PAY_FREE, free);
    store<u32>(fab + FAB_PAY_SLOTS, n);
  }
  const slot = load<i32>(fab + FAB_PAY_FREE);
  store<i32>(fab + FAB_PAY_FREE, load<i32>(load<usize>(fab + FAB_PAY_NEXT) + (<usize>slot << 2)));
  store<i32>(pkt(fab, id) + FPKT_PAYLOAD, slot);
  store<u32>(load<usize>(fab + FAB_PAY_LEN) + (<usize>slot << 2), len);
  return load<usize>(fab + FAB_PAY) + <usize>slot * <usize>load<u32>(fab + FAB_PAYLOAD_SLOT_BYTES);
}
