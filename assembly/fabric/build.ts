// Building a fabric in the core: a zeroed header, into which the host writes the counts and
// parameters; then every table for those counts, empty (the host fills them in), and the inbox
// and outbox that frames cross in, which grow when a call needs more room.

import {
  FAB_DEVICES, FAB_PORTS, FAB_N_CH, FAB_N_SW, FAB_N_LINKS, FAB_PLANES, FAB_SPINES, FAB_FIRST_SPINE,
  FAB_FULL, FAB_CH, FAB_WAIT_PTR, FAB_WAIT_CAP, FAB_GE_ON, FAB_GE_BAD, FAB_PAUSE_SENT, FAB_GE_THR, FAB_CH_DROPS,
  FAB_CH_MARKS, FAB_CH_PAUSES, FAB_LAST_HEAD_PS, FAB_LAST_HEAD_KEY, FAB_LINK_UP, FAB_LINK_KNOWN_UP, FAB_LINK_FABRIC,
  FAB_LINK_PLANE, FAB_OUTAGE_PTR, FAB_OUTAGE_N, FAB_SW_ROLE, FAB_SW_SEED, FAB_SW_LOCAL, FAB_SW_PLANE, FAB_BUF_USED,
  FAB_BUF_CAP, FAB_BUF_PEAK, FAB_PORT_CAP, FAB_SW_DROPS, FAB_SW_MARKS, FAB_SW_PAUSES, FAB_DOWN_CH, FAB_SPINE_MASK, FAB_MASK_WORDS,
  FAB_FABRIC_LINK_OF, FAB_EP_UP_CH, FAB_EP_LEAF, FAB_EP_DOWN_CH, FAB_EP_SEQ, FAB_LAST_DEPART, FAB_INJ_HEAD,
  FAB_INJ_TAIL, FAB_PEND_MIN, FAB_RNG, FAB_PKT_FREE, FAB_PAY_FREE, FAB_FAULT_LINK, FAB_FAULT_KIND, FAB_FAULT_CAP,
  FAB_HELD, FAB_HELD_CAP, FAB_DUE, FAB_INBOX, FAB_INBOX_CAP, FAB_INBOX_BODY, FAB_INBOX_BODY_CAP, FAB_OUTBOX,
  FAB_OUTBOX_BODY, FAB_OUTBOX_CAP, FAB_OUTBOX_BODY_CAP, FAB_RING_FREE, FAB_B_ARRIVAL, FAB_B_PORT, FAB_B_SRC_DEVICE, FAB_B_SRC_PORT,
  FAB_B_SEQ, FAB_B_WIRE_LEN, FAB_B_HDR_OFF, FAB_B_HDR_LEN, FAB_B_PAYLOAD_OFF, FAB_B_PAYLOAD_LEN, FAB_FRAME, FAB_SIZE,
  FCH_SIZE, FCH_RING, FCH_RMASK, FCH_DST_EP, PKT_SIZE, FAB_PODS, FAB_SUPERS, FAB_FIRST_SUPER, FAB_SUPER_WORDS, FAB_SW_POD,
  FAB_SUPER_MASK, FAB_CROSS_MASK, FAB_SUPER_DOWN_CH, FAB_SUPER_LINK_OF, FAB_LEAVES_PER_POD, STREAM_LINK_LOSS,
  STREAM_SWITCH_ECN, STREAM_SWITCH_ECMP,
} from "../generated/layouts";
import { NR, ENT, setF64, chan } from "./tables";
import { eventsInit } from "./events";
import { NONE, pktGrow } from "./packets";
import { FrameFields } from "./frame";
import { zeroed, nones } from "./memory";
import { rngSeed32, derive32, streamId } from "./rng";

/**
 * Entries a channel's ring starts with (it doubles when full). Most channels never hold more
 * than a few frames at once: 16 took 94 MiB more at the peak of 16,384 devices on three tiers
 * (786,432 channels), 7-10 MiB more at 1,024 devices, and ran no faster.
 */
const RING0: u32 = 4;

/** A zeroed table of `bytes` at header field `field`. */
function table(fab: usize, field: u32, bytes: usize): void {
  store<usize>(fab + field, zeroed(bytes));
}

/** A zeroed fabric header: the host writes the counts and parameters, then calls fabricInit. */
export function fabricNew(): usize {
  return zeroed(FAB_SIZE);
}

/**
 * Seeds the fabric's random streams and its switches' ECMP seeds from scenario seed `seed` (an
 * integer below 2^53): each channel's loss stream, each switch's ECN stream and ECMP seed (the
 * host's RandomStreams.seed and derive32 give the same words; host/fabric/rng.ts).
 */
export function fabricSeed(fab: usize, seed: f64): void {
  const nCh = load<u32>(fab + FAB_N_CH), nSw = load<u32>(fab + FAB_N_SW), s = <u64>seed;
  const rng = load<usize>(fab + FAB_RNG), swSeed = load<usize>(fab + FAB_SW_SEED);
  for (let c: u32 = 0; c < nCh; c++) rngSeed32(rng + (<usize>c << 4), s, streamId(STREAM_LINK_LOSS, c));
  for (let w: u32 = 0; w < nSw; w++) {
    store<u32>(swSeed + (<usize>w << 2), derive32(s, streamId(STREAM_SWITCH_ECMP, w)));
    rngSeed32(rng + (<usize>(nCh + w) << 4), s, streamId(STREAM_SWITCH_ECN, w));
  }
}

/**
 * Allocates every table for the counts in the header, empty (the host fills them), with room
 * for `packets` frames and `events` events, most of which are due within `horizonPs`.
 */
export function fabricInit(fab: usize, packets: u32, events: u32, horizonPs: f64): void {
  const nCh = load<u32>(fab + FAB_N_CH), nSw = load<u32>(fab + FAB_N_SW), nLinks = load<u32>(fab + FAB_N_LINKS);
  const devices = load<u32>(fab + FAB_DEVICES), nEp = devices * load<u32>(fab + FAB_PORTS);
  const spines = load<u32>(fab + FAB_SPINES), planes = load<u32>(fab + FAB_PLANES);
  const firstSpine = load<u32>(fab + FAB_FIRST_SPINE), firstSuper = load<u32>(fab + FAB_FIRST_SUPER);
  const pods = load<u32>(fab + FAB_PODS), perPod = load<u32>(fab + FAB_LEAVES_PER_POD), supers = load<u32>(fab + FAB_SUPERS);
  const nSpines = firstSuper - firstSpine, nSupers = nSw - firstSuper;
  table(fab, FAB_CH, <usize>nCh * FCH_SIZE);
  const rings = zeroed(<usize>nCh * RING0 << ENT);
  for (let c: i32 = 0; c < <i32>nCh; c++) {
    const r = chan(fab, c);
    store<u32>(r + FCH_RING, <u32>(rings + (<usize>c * RING0 << ENT)));
    store<u32>(r + FCH_RMASK, RING0 - 1);
    store<i32>(r + FCH_DST_EP, NONE);
  }
  table(fab, FAB_WAIT_PTR, <usize>nCh << 2);
  table(fab, FAB_WAIT_CAP, <usize>nCh << 2);
  table(fab, FAB_GE_ON, nCh);
  table(fab, FAB_GE_BAD, nCh);
  table(fab, FAB_PAUSE_SENT, nCh);
  table(fab, FAB_GE_THR, <usize>nCh << 5);
  table(fab, FAB_CH_DROPS, <usize>nCh * NR << 3);
  table(fab, FAB_CH_MARKS, <usize>nCh << 3);
  table(fab, FAB_CH_PAUSES, <usize>nCh << 3);
  table(fab, FAB_LAST_HEAD_PS, <usize>nEp << 3);
  for (let ep: i32 = 0; ep < <i32>nEp; ep++) setF64(fab, FAB_LAST_HEAD_PS, ep, Infinity);
  table(fab, FAB_LAST_HEAD_KEY, <usize>nEp << 3);
  table(fab, FAB_LINK_UP, nLinks);
  table(fab, FAB_LINK_KNOWN_UP, nLinks);
  table(fab, FAB_LINK_FABRIC, nLinks);
  table(fab, FAB_LINK_PLANE, <usize>nLinks << 2);
  table(fab, FAB_OUTAGE_PTR, <usize>nLinks << 2);
  table(fab, FAB_OUTAGE_N, <usize>nLinks << 2);
  table(fab, FAB_SW_ROLE, nSw);
  table(fab, FAB_SW_SEED, <usize>nSw << 2);
  table(fab, FAB_SW_LOCAL, <usize>nSw << 2);
  table(fab, FAB_SW_PLANE, <usize>nSw << 2);
  table(fab, FAB_SW_POD, <usize>nSw << 2);
  table(fab, FAB_BUF_USED, <usize>nSw << 3);
  table(fab, FAB_BUF_CAP, <usize>nSw << 3);
  table(fab, FAB_BUF_PEAK, <usize>nSw << 3);
  table(fab, FAB_PORT_CAP, <usize>nSw << 3);
  table(fab, FAB_SW_DROPS, <usize>nSw * NR << 3);
  table(fab, FAB_SW_MARKS, <usize>nSw << 3);
  table(fab, FAB_SW_PAUSES, <usize>nSw << 3);
  store<usize>(fab + FAB_DOWN_CH, nones(nSpines * perPod));
  const words = (spines + 63) >> 6, superWords = (supers + 63) >> 6;
  store<u32>(fab + FAB_MASK_WORDS, words);
  store<u32>(fab + FAB_SUPER_WORDS, superWords);
  table(fab, FAB_SPINE_MASK, <usize>(firstSpine * (words > 0 ? words : 1)) << 3);
  store<usize>(fab + FAB_FABRIC_LINK_OF, nones(firstSpine * spines));
  table(fab, FAB_SUPER_MASK, <usize>(nSpines * (superWords > 0 ? superWords : 1)) << 3);
  table(fab, FAB_CROSS_MASK, (supers > 0 ? <usize>(planes * pods * pods * words) : 1) << 3);
  store<usize>(fab + FAB_SUPER_DOWN_CH, nones(nSupers * pods));
  store<usize>(fab + FAB_SUPER_LINK_OF, nones(nSpines * supers));
  store<usize>(fab + FAB_EP_UP_CH, nones(nEp));
  store<usize>(fab + FAB_EP_LEAF, nones(nEp));
  store<usize>(fab + FAB_EP_DOWN_CH, nones(nEp));
  table(fab, FAB_EP_SEQ, <usize>nEp << 3);
  table(fab, FAB_LAST_DEPART, <usize>nEp << 3);
  store<usize>(fab + FAB_INJ_HEAD, nones(nEp));
  store<usize>(fab + FAB_INJ_TAIL, nones(nEp));
  table(fab, FAB_PEND_MIN, <usize>devices << 3);
  for (let d: i32 = 0; d < <i32>devices; d++) setF64(fab, FAB_PEND_MIN, d, Infinity);
  table(fab, FAB_RNG, <usize>(nCh + nSw) << 4);
  table(fab, FAB_RING_FREE, 32 << 2);
  store<i32>(fab + FAB_PKT_FREE, NONE);
  store<i32>(fab + FAB_PAY_FREE, NONE);
  pktGrow(fab, packets);
  eventsInit(fab, events, horizonPs);
  store<u32>(fab + FAB_FAULT_CAP, 16);
  table(fab, FAB_FAULT_LINK, 64);
  table(fab, FAB_FAULT_KIND, 64);
  store<u32>(fab + FAB_HELD_CAP, 256);
  table(fab, FAB_HELD, 1024);
  table(fab, FAB_DUE, <usize>load<u32>(fab + FAB_PORTS) << 2);
  table(fab, FAB_FRAME, offsetof<FrameFields>());
  fabricInbox(fab, 256, 0);
  fabricOutbox(fab, 256, 0);
}

/** Room in the inbox for `records` PKT records and `bodyBytes` of bodies; returns the inbox's address. */
export function fabricInbox(fab: usize, records: u32, bodyBytes: u32): usize {
  if (records > load<u32>(fab + FAB_INBOX_CAP)) {
    store<usize>(fab + FAB_INBOX, zeroed(<usize>records * PKT_SIZE));
    store<u32>(fab + FAB_INBOX_CAP, records);
  }
  if (bodyBytes > load<u32>(fab + FAB_INBOX_BODY_CAP)) {
    store<usize>(fab + FAB_INBOX_BODY, zeroed(bodyBytes));
    store<u32>(fab + FAB_INBOX_BODY_CAP, bodyBytes);
  }
  return load<usize>(fab + FAB_INBOX);
}

/** True in full mode: frames carry their bodies. */
export function fabricFull(fab: usize): bool {
  return load<u32>(fab + FAB_FULL) != 0;
}

/** Room for a delivery of `n` frames and `bodyBytes` of bodies: the outbox and the batch columns. */
export function fabricOutbox(fab: usize, n: u32, bodyBytes: u32): void {
  const cap = load<u32>(fab + FAB_OUTBOX_CAP);
  if (n > cap) {
    const m = n > 2 * cap ? n : 2 * cap;
    store<usize>(fab + FAB_OUTBOX, zeroed(<usize>m * PKT_SIZE));
    store<usize>(fab + FAB_B_ARRIVAL, zeroed(<usize>m << 3));
    store<usize>(fab + FAB_B_SEQ, zeroed(<usize>m << 3));
    store<usize>(fab + FAB_B_PORT, zeroed(<usize>m << 2));
    store<usize>(fab + FAB_B_SRC_DEVICE, zeroed(<usize>m << 2));
    store<usize>(fab + FAB_B_SRC_PORT, zeroed(<usize>m << 2));
    store<usize>(fab + FAB_B_WIRE_LEN, zeroed(<usize>m << 2));
    store<usize>(fab + FAB_B_HDR_OFF, zeroed(<usize>m << 2));
    store<usize>(fab + FAB_B_HDR_LEN, zeroed(<usize>m << 2));
    store<usize>(fab + FAB_B_PAYLOAD_OFF, zeroed(<usize>m << 2));
    store<usize>(fab + FAB_B_PAYLOAD_LEN, zeroed(<usize>m << 2));
    store<u32>(fab + FAB_OUTBOX_CAP, m);
  }
  const bcap = load<u32>(fab + FAB_OUTBOX_BODY_CAP);
  if (bodyBytes > bcap) {
    const m = bodyBytes > 2 * bcap ? bodyBytes : 2 * bcap;
    store<usize>(fab + FAB_OUTBOX_BODY, zeroed(m));
    store<u32>(fab + FAB_OUTBOX_BODY_CAP, m);
  }
}
