// The event loop: the fabric's events in (time, key) order up to a window's end. A frame that
// enters at its device port (PFC), a frame that arrives at a switch (routed, admitted to the
// shared buffer or dropped, marked, queued at its output channel), a transmitter that finishes,
// a pause or a resume that reaches a sender, a fault (faults.ts).

import {
  FAB_NOW_PS, FAB_KMIN, FAB_KMAX, FAB_PMAX, FAB_INJECTED, FAB_EV_LAST_TIME, FAB_N_CH, FAB_SPINES, FAB_PODS, FAB_LEAVES_PER_POD,
  FAB_SUPERS, FAB_FIRST_SUPER, FAB_SUPER_WORDS, FAB_SW_POD, FAB_SUPER_MASK, FAB_CROSS_MASK, FAB_SUPER_DOWN_CH, FAB_SUPER_LINK_OF,
  FAB_FIRST_SPINE, FAB_PFC_ON, FAB_ECN_ON, FAB_CH_MARKS, FAB_CH_PAUSES, FAB_LINK_UP, FAB_SW_ROLE, FAB_SW_SEED,
  FAB_SW_LOCAL, FAB_SW_PLANE, FAB_BUF_USED, FAB_BUF_CAP, FAB_BUF_PEAK, FAB_PORT_CAP, FAB_SW_DROPS, FAB_SW_MARKS,
  FAB_DOWN_CH, FAB_SPINE_MASK, FAB_MASK_WORDS, FAB_FABRIC_LINK_OF, FAB_EP_UP_CH, FAB_EP_LEAF, FAB_EP_DOWN_CH, FAB_INJ_HEAD, FAB_INJ_TAIL, FCH_BUSY,
  FCH_QBYTES, FCH_QPEAK, FCH_RWIRE, FCH_SRC_SW, FCH_DST_SW, FCH_PAUSED, FCH_DONE, FRING_ENTRY_T, FRING_ENTRY_KEY,
  FRING_ENTRY_PKT, FRING_ENTRY_DST_EP, FRING_ENTRY_HASH, FRING_ENTRY_LEN_META, FPKT_SEQ, FPKT_DST_EP, FPKT_WIRE_LEN,
  FPKT_META, FPKT_SIDE_NEXT_TIME, FPKT_SIDE_NEXT_KEY, FPKT_SIDE_NEXT, FPKT_SIDE_IN_CH, FPKT_SIDE_HASH,
} from "../generated/layouts";
import {
  R_BUFFER, R_PORT_CAP, R_NO_ROUTE, R_LINK_DOWN, NR, EV_INJECT, EV_ARRIVE, EV_TX_DONE, EV_PAUSE, EV_RESUME, EV_FAULT,
  EV_BITS, EV_MASK, LM_LEN, LM_ECT, LM_CE, i32Of, u32Of, f64Of, u8Of, setI32, setF64, addF64, bump, bumpDrop, chan,
  ent, waiting, draw, entryKey, tab,
} from "./tables";
import { ringPush, ringPop } from "./ring";
import { dropAt, holdAtIngress } from "./buffer";
import { fault } from "./faults";
import { transmit } from "./transmit";
import { eventsNextTime, eventsPush, eventsPushKeyed, eventsPopBefore } from "./events";
import { NONE, META_ECT, pkt, pktSide, pktRelease } from "./packets";
import { ecmpPick } from "./rng";

const ROLE_LEAF: u8 = 0, ROLE_SPINE: u8 = 1;

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
  const next = load<i32>(x + FPKT_SIDE_NEXT);
  setI32(fab, FAB_INJ_HEAD, ep, next);
  if (next == NONE) setI32(fab, FAB_INJ_TAIL, ep, NONE);
  else eventsPushKeyed(fab, load<f64>(x + FPKT_SIDE_NEXT_TIME), load<f64>(x + FPKT_SIDE_NEXT_KEY), (ep << EV_BITS) | EV_INJECT);
  bump(fab, FAB_INJECTED);
  const c = i32Of(fab, FAB_EP_UP_CH, ep);
  if (c == NONE) {
    bumpDrop(fab, R_NO_ROUTE);
    pktRelease(fab, p);
    return;
  }
  const meta = load<u32>(r + FPKT_META);
  const lm = load<u32>(r + FPKT_WIRE_LEN) | ((meta & META_ECT) != 0 ? LM_ECT : 0);
  enqueue(fab, c, NONE, entryKey(ep, load<f64>(r + FPKT_SEQ)), p, load<i32>(r + FPKT_DST_EP), load<u32>(x + FPKT_SIDE_HASH), lm, now);
}

/** The oldest frame on channel `cin` is in the switch at its end: route, admit, mark, queue. */
function arrive(fab: usize, cin: i32, now: f64): void {
  const o = chan(fab, cin);
  const e = ent(o, 0);
  const key = load<f64>(e + FRING_ENTRY_KEY), p = load<i32>(e + FRING_ENTRY_PKT), dst = load<i32>(e + FRING_ENTRY_DST_EP);
  const hash = load<u32>(e + FRING_ENTRY_HASH), lm = load<u32>(e + FRING_ENTRY_LEN_META);
  ringPop(o);
  if (load<u32>(o + FCH_RWIRE) != 0) {
    const h = ent(o, 0);
    eventsPushKeyed(fab, load<f64>(h + FRING_ENTRY_T), load<f64>(h + FRING_ENTRY_KEY), (cin << EV_BITS) | EV_ARRIVE);
  }
  const s = load<i32>(o + FCH_DST_SW);
  if (load<u32>(fab + FAB_PFC_ON) != 0) store<i32>(pktSide(fab, p) + FPKT_SIDE_IN_CH, cin);
  const out = route(fab, s, dst, hash);
  if (out == NONE) {
    dropAt(fab, cin, p, R_NO_ROUTE);
    addF64(fab, FAB_SW_DROPS, s * NR + R_NO_ROUTE, 1);
    return;
  }
  enqueue(fab, out, cin, key, p, dst, hash, lm, now);
}

/**
 * The output channel of switch `s` for a frame to device port `dst` whose tuple hashes to `hash`,
 * or NONE. Up, then down (a Clos): a leaf sends a frame for another leaf up to a spine of its
 * pod; a spine sends it down when the leaf is in its pod, else up to a super-spine of its
 * group; a super-spine sends it down to the destination pod's spine of its group. Where there
 * is a choice (ECMP), the hash picks among the next hops that still reach the destination
 * (faults.ts fabricRebuildGroups keeps the masks that say which).
 */
function route(fab: usize, s: i32, dst: i32, hash: u32): i32 {
  if (dst == NONE) return NONE;
  const dl = i32Of(fab, FAB_EP_LEAF, dst);
  if (dl == s) return i32Of(fab, FAB_EP_DOWN_CH, dst);
  if (dl == NONE || i32Of(fab, FAB_SW_PLANE, dl) != i32Of(fab, FAB_SW_PLANE, s)) return NONE;
  const role = u8Of(fab, FAB_SW_ROLE, s), pod = i32Of(fab, FAB_SW_POD, dl);
  if (role == ROLE_LEAF) {
    // the spines both leaves have a link known up to (and, towards another pod, that reach it)
    const words = <i32>load<u32>(fab + FAB_MASK_WORDS), masks = tab(fab, FAB_SPINE_MASK);
    const ms = masks + (<usize>(s * words) << 3), md = masks + (<usize>(dl * words) << 3);
    const from = i32Of(fab, FAB_SW_POD, s);
    const pods = <i32>load<u32>(fab + FAB_PODS);
    const mc: usize = from == pod ? 0 : tab(fab, FAB_CROSS_MASK) + (<usize>(((i32Of(fab, FAB_SW_PLANE, s) * pods + from) * pods + pod) * words) << 3);
    const j = pickBit(ms, md, mc, words, hash, u32Of(fab, FAB_SW_SEED, s));
    return j < 0 ? NONE : 2 * i32Of(fab, FAB_FABRIC_LINK_OF, s * <i32>load<u32>(fab + FAB_SPINES) + j);
  }
  if (role == ROLE_SPINE) {
    const sp = s - <i32>load<u32>(fab + FAB_FIRST_SPINE);
    if (i32Of(fab, FAB_SW_POD, s) == pod) return i32Of(fab, FAB_DOWN_CH, sp * <i32>load<u32>(fab + FAB_LEAVES_PER_POD) + i32Of(fab, FAB_SW_LOCAL, dl));
    // the super-spines this spine and the destination pod's spine of its group both have a link known up to
    const spines = <i32>load<u32>(fab + FAB_SPINES), pods = <i32>load<u32>(fab + FAB_PODS);
    const peer = (i32Of(fab, FAB_SW_PLANE, s) * pods + pod) * spines + i32Of(fab, FAB_SW_LOCAL, s);
    const words = <i32>load<u32>(fab + FAB_SUPER_WORDS), masks = tab(fab, FAB_SUPER_MASK);
    const z = pickBit(masks + (<usize>(sp * words) << 3), masks + (<usize>(peer * words) << 3), 0, words, hash, u32Of(fab, FAB_SW_SEED, s));
    return z < 0 ? NONE : 2 * i32Of(fab, FAB_SUPER_LINK_OF, sp * <i32>load<u32>(fab + FAB_SUPERS) + z);
  }
  return i32Of(fab, FAB_SUPER_DOWN_CH, (s - <i32>load<u32>(fab + FAB_FIRST_SUPER)) * <i32>load<u32>(fab + FAB_PODS) + pod);
}

/** Word `w` of the AND of the masks at `a`, `b` and `c` (c 0: none). */
@inline function masked(a: usize, b: usize, c: usize, w: i32): u64 {
  const m = load<u64>(a + (<usize>w << 3)) & load<u64>(b + (<usize>w << 3));
  return c == 0 ? m : m & load<u64>(c + (<usize>w << 3));
}

/**
 * One set bit of the AND of the `words`-word masks at `a`, `b` and `c` (c 0: none): the k-th in
 * bit order, k picked by `hash` and `seed` among them (ECMP); -1 when none is set.
 */
function pickBit(a: usize, b: usize, c: usize, words: i32, hash: u32, seed: u32): i32 {
  let n: u32 = 0;
  for (let w = 0; w < words; w++) n += <u32>popcnt(masked(a, b, c, w));
  if (n == 0) return -1;
  let k = ecmpPick(hash, seed, n);
  for (let w = 0; ; w++) {
    let m = masked(a, b, c, w);
    const cnt = <u32>popcnt(m);
    if (k >= cnt) { k -= cnt; continue; }
    for (; k > 0; k--) m &= m - 1; // (drop the k lowest)
    return (w << 6) + <i32>ctz(m);
  }
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
  ringPush(fab, o, key, p, dst, hash, lm);
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
  const len = load<u32>(ent(o, load<u32>(o + FCH_RWIRE)) + FRING_ENTRY_LEN_META) & LM_LEN;
  store<f64>(o + FCH_QBYTES, load<f64>(o + FCH_QBYTES) - <f64>len);
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
