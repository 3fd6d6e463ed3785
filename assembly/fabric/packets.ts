// Packets in flight through the fabric: a 128-byte block per packet id, 128-aligned, holding its
// FPKT record (32 bytes) and then its header slot (HDR_SLOT bytes), as a PKT record holds its
// fields and headers; with a free list, and in full mode a payload slot per packet that has bytes
// beyond its headers. What every hop reads travels in the channels' rings (FRING_ENTRY), so a
// block is written when its frame enters and read when the host takes it: one pair of lines,
// which the core's L2 fetches together (a 64-byte record and a 96-byte slot apart were three
// lines in two places, and their reading at delivery was the fabric's largest cache miss). What
// only PFC and full mode need (a device port's list of frames waiting to enter, the channel a
// frame came in by, its payload slot) sits apart in an FPKT_SIDE record, which timing mode
// without PFC never allocates nor touches.
//
// Blocks come in segments of SEG packets, found through a table of segment addresses: the pool
// grows by a segment, never copying what is in flight (growing by copying into a block twice the
// size touched three times the memory, all of it fresh pages).

import {
  FAB_PKT_REC, FAB_PKT_SIDE, FAB_PKT_CAP, FAB_PKT_SEG_CAP, FAB_PKT_FREE, FAB_PKT_LIVE, FAB_PKT_PEAK, FAB_PFC_ON,
  FAB_FULL, FAB_PAY, FAB_PAY_LEN, FAB_PAY_NEXT, FAB_PAY_SLOTS, FAB_PAY_FREE, FAB_PAYLOAD_SLOT_BYTES, FPKT_SIZE,
  FPKT_SIDE_SIZE, FPKT_SIDE_NEXT, FPKT_SIDE_IN_CH, FPKT_SIDE_PAYLOAD, PKT_SIZE, PKT_HDR,
} from "../generated/layouts";
import { grow, zeroed } from "./memory";

export const NONE: i32 = -1;
/** Bytes of a header slot: a PKT record's header room (layouts/device.json), all of a frame's headers the fabric takes. */
export const HDR_SLOT: u32 = PKT_SIZE - PKT_HDR;
export const META_HDR_LEN: u32 = 0xff, META_ECT: u32 = 0x100, META_CE: u32 = 0x200;

/** log2 of a packet block's bytes: its FPKT record and its header slot, one 128-byte pair of cache lines. */
const BLOCK: u32 = 7;

/**
 * Copies a header slot (HDR_SLOT bytes) from `src` to `dst`: six 16-byte moves, unrolled (the
 * fabric copies one into every frame that enters and out of every frame delivered; a loop
 * costs several times as many instructions).
 */
@inline export function copyHdrSlot(dst: usize, src: usize): void {
  if (HDR_SLOT != 96) ERROR("copyHdrSlot copies 96 bytes: the PKT record's header room changed");
  v128.store(dst, v128.load(src));
  v128.store(dst, v128.load(src, 16), 16);
  v128.store(dst, v128.load(src, 32), 32);
  v128.store(dst, v128.load(src, 48), 48);
  v128.store(dst, v128.load(src, 64), 64);
  v128.store(dst, v128.load(src, 80), 80);
}

/** log2 of the packets in a segment of the pool. */
const SEG_BITS: u32 = 12;
const SEG: u32 = 1 << SEG_BITS;

/** Packet `p`'s FPKT record, the start of its block. */
@inline export function pkt(fab: usize, p: i32): usize {
  if (FPKT_SIZE + HDR_SLOT != 1 << BLOCK) ERROR("a packet block is its FPKT record and its header slot, 128 bytes");
  return <usize>load<u32>(load<usize>(fab + FAB_PKT_REC) + (<usize>(<u32>p >> SEG_BITS) << 2)) + (<usize>(<u32>p & (SEG - 1)) << BLOCK);
}

/** Packet `p`'s header slot, after its record. */
@inline export function pktHdr(fab: usize, p: i32): usize {
  return pkt(fab, p) + FPKT_SIZE;
}

/** Packet `p`'s FPKT_SIDE record (PFC, full mode: the pool has them only then, pktSides). */
@inline export function pktSide(fab: usize, p: i32): usize {
  return <usize>load<u32>(load<usize>(fab + FAB_PKT_SIDE) + (<usize>(<u32>p >> SEG_BITS) << 2)) + <usize>(<u32>p & (SEG - 1)) * FPKT_SIDE_SIZE;
}

/** Do packets have FPKT_SIDE records (PFC or full mode)? */
@inline function pktSides(fab: usize): bool {
  return (load<u32>(fab + FAB_PFC_ON) | load<u32>(fab + FAB_FULL)) != 0;
}

/** Grows the pool to at least `n` packets, a segment at a time (the new ids join the free list, lowest first). */
export function pktGrow(fab: usize, n: u32): void {
  const old = load<u32>(fab + FAB_PKT_CAP), want = (n + SEG - 1) >> SEG_BITS;
  let segs = old >> SEG_BITS;
  if (want <= segs) return;
  // the segment tables: room for the new segments
  const room = load<u32>(fab + FAB_PKT_SEG_CAP);
  if (want > room) {
    let bigger = room > 0 ? room : 16;
    while (bigger < want) bigger *= 2;
    store<usize>(fab + FAB_PKT_REC, grow(load<usize>(fab + FAB_PKT_REC), <usize>segs << 2, <usize>bigger << 2));
    store<usize>(fab + FAB_PKT_SIDE, grow(load<usize>(fab + FAB_PKT_SIDE), <usize>segs << 2, <usize>bigger << 2));
    store<u32>(fab + FAB_PKT_SEG_CAP, bigger);
  }
  const sides = pktSides(fab), align: usize = (1 << BLOCK) - 1;
  for (; segs < want; segs++) {
    const blocks = (zeroed((<usize>SEG << BLOCK) + align) + align) & ~align;
    store<u32>(load<usize>(fab + FAB_PKT_REC) + (<usize>segs << 2), <u32>blocks);
    if (sides) store<u32>(load<usize>(fab + FAB_PKT_SIDE) + (<usize>segs << 2), <u32>zeroed(<usize>SEG * FPKT_SIDE_SIZE));
  }
  const cap = segs << SEG_BITS;
  let free = load<i32>(fab + FAB_PKT_FREE);
  for (let id = <i32>cap - 1; id >= <i32>old; id--) {
    store<i32>(pktHdr(fab, id), free);
    free = id;
  }
  store<i32>(fab + FAB_PKT_FREE, free);
  store<u32>(fab + FAB_PKT_CAP, cap);
}

/** A free packet id (growing the pool by a segment when none is free), with no payload slot, in no list. */
export function pktAlloc(fab: usize): i32 {
  if (load<i32>(fab + FAB_PKT_FREE) == NONE) pktGrow(fab, load<u32>(fab + FAB_PKT_CAP) + SEG);
  const id = load<i32>(fab + FAB_PKT_FREE);
  store<i32>(fab + FAB_PKT_FREE, load<i32>(pktHdr(fab, id)));
  if (pktSides(fab)) {
    const x = pktSide(fab, id);
    store<i32>(x + FPKT_SIDE_NEXT, NONE);
    store<i32>(x + FPKT_SIDE_IN_CH, NONE);
    store<i32>(x + FPKT_SIDE_PAYLOAD, NONE);
  }
  const live = load<u32>(fab + FAB_PKT_LIVE) + 1;
  store<u32>(fab + FAB_PKT_LIVE, live);
  if (live > load<u32>(fab + FAB_PKT_PEAK)) store<u32>(fab + FAB_PKT_PEAK, live);
  return id;
}

/** Packet `id`'s payload slot, NONE when it has none (always in timing mode). */
@inline export function pktPayload(fab: usize, id: i32): i32 {
  return load<u32>(fab + FAB_FULL) != 0 ? load<i32>(pktSide(fab, id) + FPKT_SIDE_PAYLOAD) : NONE;
}

export function pktRelease(fab: usize, id: i32): void {
  const slot = pktPayload(fab, id);
  if (slot != NONE) {
    store<i32>(load<usize>(fab + FAB_PAY_NEXT) + (<usize>slot << 2), load<i32>(fab + FAB_PAY_FREE));
    store<i32>(fab + FAB_PAY_FREE, slot);
  }
  store<i32>(pktHdr(fab, id), load<i32>(fab + FAB_PKT_FREE));
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
  store<i32>(pktSide(fab, id) + FPKT_SIDE_PAYLOAD, slot);
  store<u32>(load<usize>(fab + FAB_PAY_LEN) + (<usize>slot << 2), len);
  return load<usize>(fab + FAB_PAY) + <usize>slot * <usize>load<u32>(fab + FAB_PAYLOAD_SLOT_BYTES);
}
