// What the fabric's parts share: reading and writing the tables whose addresses the header
// holds, a channel's record and the entries of its ring, the random streams and the counters;
// and the encodings every part reads (why a frame was dropped, an event's kind and index, an
// entry's len_meta bits, a frame's entry key). Everything here is inlined where it is used.

import {
  FAB_DROPS, FAB_CH, FAB_RNG, FCH_SIZE, FCH_RING, FCH_RMASK, FCH_RHEAD, FCH_RCOUNT, FCH_RWIRE, DROP_REASON_BUFFER_FULL,
  DROP_REASON_PORT_CAP, DROP_REASON_NO_ROUTE, DROP_REASON_LINK_DOWN, DROP_REASON_RANDOM_LOSS, DROP_REASON_GE_LOSS,
  DROP_REASON_BAD_FRAME,
} from "../generated/layouts";
import { rngNext32 } from "./rng";

// Why a frame was dropped (layouts/fabric.json DROP_REASON; the host names them in lower case).
export const R_BUFFER = <i32>DROP_REASON_BUFFER_FULL, R_PORT_CAP = <i32>DROP_REASON_PORT_CAP, R_NO_ROUTE = <i32>DROP_REASON_NO_ROUTE;
export const R_LINK_DOWN = <i32>DROP_REASON_LINK_DOWN, R_RANDOM = <i32>DROP_REASON_RANDOM_LOSS, R_GE = <i32>DROP_REASON_GE_LOSS, R_BAD = <i32>DROP_REASON_BAD_FRAME;
export const NR: u32 = DROP_REASON_BAD_FRAME + 1;

// Events: kind in the low 3 bits, an index (device port, channel or fault) above. A frame has
// no event of its own: a device port's frames waiting to enter and a channel's frames on the
// wire are FIFOs, and only each FIFO's head has an event.
export const EV_INJECT = 0, EV_ARRIVE = 1, EV_TX_DONE = 2, EV_PAUSE = 3, EV_RESUME = 4, EV_FAULT = 5;
export const EV_BITS = 3, EV_MASK = 7;

// FRING_ENTRY.len_meta: wire bytes, the ECN bits, a frame lost when it started (a dead entry)
export const LM_LEN: u32 = 0xffffff, LM_ECT: u32 = 1 << 24, LM_CE: u32 = 1 << 25, LM_DEAD: u32 = 1 << 26;
/** log2 of an entry's bytes (FRING_ENTRY_SIZE). */
export const ENT: u32 = 5;

@inline export function tab(fab: usize, field: u32): usize { return load<usize>(fab + field); }
@inline export function i32Of(fab: usize, field: u32, i: i32): i32 { return load<i32>(tab(fab, field) + (<usize>i << 2)); }
@inline export function u32Of(fab: usize, field: u32, i: i32): u32 { return load<u32>(tab(fab, field) + (<usize>i << 2)); }
@inline export function f64Of(fab: usize, field: u32, i: i32): f64 { return load<f64>(tab(fab, field) + (<usize>i << 3)); }
@inline export function u8Of(fab: usize, field: u32, i: i32): u8 { return load<u8>(tab(fab, field) + <usize>i); }
@inline export function setI32(fab: usize, field: u32, i: i32, v: i32): void { store<i32>(tab(fab, field) + (<usize>i << 2), v); }
@inline export function setF64(fab: usize, field: u32, i: i32, v: f64): void { store<f64>(tab(fab, field) + (<usize>i << 3), v); }
@inline export function setU8(fab: usize, field: u32, i: i32, v: u8): void { store<u8>(tab(fab, field) + <usize>i, v); }
@inline export function addF64(fab: usize, field: u32, i: i32, v: f64): void { setF64(fab, field, i, f64Of(fab, field, i) + v); }
@inline export function bump(fab: usize, field: u32): void { store<f64>(fab + field, load<f64>(fab + field) + 1); }
/** Counts a frame dropped for `reason` in the fabric's total (dropAt counts it by channel too). */
@inline export function bumpDrop(fab: usize, reason: i32): void {
  bump(fab, FAB_DROPS + <u32>reason * 8);
}
/** Channel `c`'s record. */
@inline export function chan(fab: usize, c: i32): usize { return tab(fab, FAB_CH) + <usize>c * FCH_SIZE; }
/** Entry `i` (0: the oldest) of the ring of channel record `o`. */
@inline export function ent(o: usize, i: u32): usize {
  return <usize>load<u32>(o + FCH_RING) + (<usize>((load<u32>(o + FCH_RHEAD) + i) & load<u32>(o + FCH_RMASK)) << ENT);
}
/** Frames waiting in the queue of channel record `o` (its ring's entries behind those on the wire). */
@inline export function waiting(o: usize): u32 { return load<u32>(o + FCH_RCOUNT) - load<u32>(o + FCH_RWIRE); }
/** Xoshiro stream `i` (channels, then switches). */
@inline export function draw(fab: usize, i: i32): f64 { return <f64>rngNext32(tab(fab, FAB_RNG) + (<usize>i << 4)); }

/**
 * The event key of frame `seq` of device port `ep`: below every ordinary key, ordered by
 * (device, port, frame number), so frames meeting at one picosecond are taken in an order
 * fixed by the frames, and before transmitters finishing then.
 */
@inline export function entryKey(ep: i32, seq: f64): f64 {
  return -4503599627370496.0 + <f64>ep * 16777216.0 + <f64>(<i64>seq & 0xffffff);
}
