// What a switch holds, and the frames the fabric loses: the shared buffer's bytes, given back
// when a frame starts on an output wire (loop.ts's enqueue admits a frame or drops it); with
// PFC, the bytes each ingress holds (at XOFF the sender there is paused, at XON resumed); and a
// dropped frame, counted by channel and reason, then freed.

import {
  FAB_XOFF, FAB_XON, FAB_PFC_RESUMES, FAB_PFC_ON, FAB_PAUSE_SENT, FAB_CH_DROPS, FAB_BUF_USED, FAB_SW_PAUSES, FCH_LAT,
  FCH_IN_BYTES, FCH_SRC_SW, FPKT_SIDE_IN_CH,
} from "../generated/layouts";
import { NR, EV_PAUSE, EV_RESUME, EV_BITS, u8Of, setU8, addF64, bump, bumpDrop, chan } from "./tables";
import { eventsPush } from "./events";
import { NONE, pktSide, pktRelease } from "./packets";

/** Frame `p` is dropped at channel `c` for `reason`: counted, then freed. */
export function dropAt(fab: usize, c: i32, p: i32, reason: i32): void {
  addF64(fab, FAB_CH_DROPS, c * NR + reason, 1);
  bumpDrop(fab, reason);
  pktRelease(fab, p);
}

/** PFC: switch `s` now holds `len` more bytes that came in by channel `cin`; at XOFF it pauses that channel's sender. */
export function holdAtIngress(fab: usize, s: i32, cin: i32, len: f64, now: f64): void {
  const o = chan(fab, cin);
  const held = load<f64>(o + FCH_IN_BYTES) + len;
  store<f64>(o + FCH_IN_BYTES, held);
  if (held >= load<f64>(fab + FAB_XOFF) && u8Of(fab, FAB_PAUSE_SENT, cin) == 0) {
    setU8(fab, FAB_PAUSE_SENT, cin, 1);
    addF64(fab, FAB_SW_PAUSES, s, 1);
    eventsPush(fab, now + load<f64>(o + FCH_LAT), (cin << EV_BITS) | EV_PAUSE);
  }
}

/** Frame `p`, `len` bytes, leaves the switch's buffer (a NIC's has no limit) for the wire of channel record `o` (inlined: it runs at every hop). */
@inline export function release(fab: usize, o: usize, p: i32, len: f64, now: f64): void {
  const s = load<i32>(o + FCH_SRC_SW);
  if (s == NONE) return;
  addF64(fab, FAB_BUF_USED, s, -len);
  if (load<u32>(fab + FAB_PFC_ON) != 0) pfcRelease(fab, p, len, now);
}

/** PFC: frame `p`'s `len` bytes no longer count against its ingress; at XON the sender there resumes. */
function pfcRelease(fab: usize, p: i32, len: f64, now: f64): void {
  const cin = load<i32>(pktSide(fab, p) + FPKT_SIDE_IN_CH), oi = chan(fab, cin);
  const held = load<f64>(oi + FCH_IN_BYTES) - len;
  store<f64>(oi + FCH_IN_BYTES, held);
  if (held <= load<f64>(fab + FAB_XON) && u8Of(fab, FAB_PAUSE_SENT, cin) != 0) {
    setU8(fab, FAB_PAUSE_SENT, cin, 0);
    bump(fab, FAB_PFC_RESUMES);
    eventsPush(fab, now + load<f64>(oi + FCH_LAT), (cin << EV_BITS) | EV_RESUME);
  }
}
