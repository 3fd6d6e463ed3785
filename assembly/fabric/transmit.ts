// A channel's transmitter. The first frame waiting in its ring starts: its bytes leave the
// switch's buffer, it is serialised at the link's rate, it may be lost as it starts (random or
// Gilbert–Elliott loss, or a link the outage schedule takes down before its last bit arrives),
// and it goes on the wire: into a switch, the oldest frame on the wire has an arrival event; to
// a device, the oldest is its port's head, which deliver.ts takes.

import {
  FAB_OVERHEAD, FAB_HOPS, FAB_PORTS, FAB_GE_ON, FAB_GE_BAD, FAB_GE_THR, FAB_LAST_HEAD_PS, FAB_LAST_HEAD_KEY,
  FAB_OUTAGE_N, FAB_PEND_MIN, FAB_SER_LEN, FAB_SER_GBPS, FAB_SER_PS, FCH_BUSY, FCH_DELAY, FCH_LAT, FCH_GBPS, FCH_LOSS,
  FCH_PKTS, FCH_BYTES, FCH_RMASK, FCH_RHEAD, FCH_RCOUNT, FCH_RWIRE, FCH_DST_EP, FCH_DONE, FCH_LOSSY, FRING_ENTRY_T,
  FRING_ENTRY_KEY, FRING_ENTRY_PKT, FRING_ENTRY_LEN_META,
} from "../generated/layouts";
import {
  R_LINK_DOWN, R_RANDOM, R_GE, EV_ARRIVE, EV_TX_DONE, EV_BITS, LM_LEN, LM_DEAD, tab, f64Of, u8Of, setF64, setU8, bump,
  ent, waiting, draw,
} from "./tables";
import { dropAt, release } from "./buffer";
import { failsDuring } from "./faults";
import { eventsPush, eventsPushKeyed } from "./events";
import { NONE } from "./packets";

/** Channel `c` (record `o`) begins to send the first frame waiting in its ring at `now` (the transmitter is idle). */
export function transmit(fab: usize, c: i32, o: usize, now: f64): void {
  const link = c >> 1;
  const wire = load<u32>(o + FCH_RWIRE), e = ent(o, wire);
  const p = load<i32>(e + FRING_ENTRY_PKT), len = load<u32>(e + FRING_ENTRY_LEN_META) & LM_LEN;
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
  store<f64>(e + FRING_ENTRY_T, at);
  store<u32>(o + FCH_RWIRE, wire + 1);
  if (wire != 0) return;
  const key = load<f64>(e + FRING_ENTRY_KEY);
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
    const e = ent(o, wire) + FRING_ENTRY_LEN_META;
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
