// A channel's ring of FRING_ENTRY records (fabric.ts says what an entry holds): a frame joins at
// the back, waiting, and the ring doubles when full; the oldest frame on the wire leaves from
// the front when it reaches the next holder, with the dead entries (frames lost as they
// started) behind it. The block a ring leaves when it doubles goes on a list of free blocks of
// its size (FAB_RING_FREE), for the next ring that grows to that size: the fabric's heap
// frees nothing, and 1,024 devices' 16,384 links' rings, each left behind as it doubled, held
// as much again as the rings in use.

import {
  FCH_RING, FCH_RMASK, FCH_RHEAD, FCH_RCOUNT, FCH_RWIRE, FRING_ENTRY_SIZE, FRING_ENTRY_KEY, FRING_ENTRY_PKT,
  FRING_ENTRY_DST_EP, FRING_ENTRY_HASH, FRING_ENTRY_LEN_META, FAB_RING_FREE,
} from "../generated/layouts";
import { LM_DEAD, ENT, ent, tab } from "./tables";
import { zeroed } from "./memory";
import { copyBytes } from "../core/copy";

/** A frame joins the back of channel record `o`'s ring (waiting), the ring doubling when full. */
@inline export function ringPush(fab: usize, o: usize, key: f64, p: i32, dst: i32, hash: u32, lm: u32): void {
  const n = load<u32>(o + FCH_RCOUNT);
  if (n > load<u32>(o + FCH_RMASK)) ringGrow(fab, o, n);
  const e = ent(o, n);
  store<f64>(e + FRING_ENTRY_KEY, key);
  store<i32>(e + FRING_ENTRY_PKT, p);
  store<i32>(e + FRING_ENTRY_DST_EP, dst);
  store<u32>(e + FRING_ENTRY_HASH, hash);
  store<u32>(e + FRING_ENTRY_LEN_META, lm);
  store<u32>(o + FCH_RCOUNT, n + 1);
}

/** Moves the `n` entries of channel record `o`'s full ring into one twice its size; the old block is free. */
function ringGrow(fab: usize, o: usize, n: u32): void {
  const cap = load<u32>(o + FCH_RMASK) + 1, old = <usize>load<u32>(o + FCH_RING);
  const ring = ringBlock(fab, 2 * cap);
  for (let i: u32 = 0; i < n; i++) copyBytes(ring + (<usize>i << ENT), ent(o, i), FRING_ENTRY_SIZE);
  store<u32>(o + FCH_RING, <u32>ring);
  store<u32>(o + FCH_RMASK, 2 * cap - 1);
  store<u32>(o + FCH_RHEAD, 0);
  const free = freeList(fab, cap);
  store<u32>(old, load<u32>(free));
  store<u32>(free, <u32>old);
}

/** Where the list of free ring blocks of `entries` (a power of two) starts. */
@inline function freeList(fab: usize, entries: u32): usize {
  return tab(fab, FAB_RING_FREE) + (<usize>ctz(entries) << 2);
}

/** A block for a ring of `entries`: a free one of that size, else a new one. (A ring's entries are written before they are read.) */
function ringBlock(fab: usize, entries: u32): usize {
  const free = freeList(fab, entries), p = <usize>load<u32>(free);
  if (p == 0) return zeroed(<usize>entries << ENT);
  store<u32>(free, load<u32>(p));
  return p;
}

/** The oldest frame on the wire of channel record `o` has reached the next holder: it leaves the ring, and so do the dead entries behind it. */
@inline export function ringPop(o: usize): void {
  const m = load<u32>(o + FCH_RMASK), ring = <usize>load<u32>(o + FCH_RING);
  let head = load<u32>(o + FCH_RHEAD), n = load<u32>(o + FCH_RCOUNT), wire = load<u32>(o + FCH_RWIRE);
  do {
    head = (head + 1) & m;
    n--;
    wire--;
  } while (wire > 0 && (load<u32>(ring + (<usize>head << ENT) + FRING_ENTRY_LEN_META) & LM_DEAD) != 0);
  // an emptied ring starts again at its first entry (the same lines, still in cache)
  store<u32>(o + FCH_RHEAD, n != 0 ? head : 0);
  store<u32>(o + FCH_RCOUNT, n);
  store<u32>(o + FCH_RWIRE, wire);
}
