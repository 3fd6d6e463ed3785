// Links going down and up. The host writes each link's outages (down, up pairs) and schedules
// its faults (fabricSchedule); a fault's event sets the link's state, drops what its channels
// hold when it goes down, and when ECMP learns of it (at once, or the failure detection time
// later) rebuilds its plane's groups. Whether the outage schedule loses a frame is read here
// too: one waiting at a device port, or one on a wire that fails before its last bit arrives.

import {
  FAB_FAILURE_DETECT_PS, FAB_LEAVES, FAB_SPINES, FAB_LINK_UP, FAB_LINK_KNOWN_UP, FAB_LINK_FABRIC, FAB_LINK_PLANE,
  FAB_OUTAGE_PTR, FAB_OUTAGE_N, FAB_SPINE_MASK, FAB_MASK_WORDS, FAB_FABRIC_LINK_OF, FAB_PODS, FAB_SUPERS, FAB_SUPER_WORDS,
  FAB_SUPER_MASK, FAB_CROSS_MASK, FAB_SUPER_LINK_OF, FAB_FAULT_LINK, FAB_FAULT_KIND, FAB_FAULT_N,
  FAB_FAULT_CAP, FCH_QBYTES, FCH_RCOUNT, FCH_RWIRE, FRING_ENTRY_PKT, FRING_ENTRY_LEN_META, FAULT_DOWN, FAULT_UP,
  FAULT_KNOWN_DOWN, FAULT_KNOWN_UP,
} from "../generated/layouts";
import { R_LINK_DOWN, EV_FAULT, EV_BITS, LM_LEN, tab, i32Of, u32Of, u8Of, setI32, setU8, chan, ent } from "./tables";
import { dropAt, release } from "./buffer";
import { eventsPush } from "./events";
import { zeroed, grow } from "./memory";

/** Kinds of a scheduled fault (fabricSchedule; layouts/fabric.json FAULT). */
export const F_DOWN = FAULT_DOWN, F_UP = FAULT_UP, F_KNOWN_DOWN = FAULT_KNOWN_DOWN, F_KNOWN_UP = FAULT_KNOWN_UP;
/** lostWaiting's answers besides a time. */
export const NOT_LOST: f64 = -1, LOST_ON_ENTRY: f64 = -2;

/** Room for `n` outages (down, up pairs) of link `link`, which the host writes; returns where. */
export function fabricOutages(fab: usize, link: i32, n: u32): usize {
  const p = zeroed(<usize>n << 4);
  store<usize>(tab(fab, FAB_OUTAGE_PTR) + (<usize>link << 2), p);
  store<u32>(tab(fab, FAB_OUTAGE_N) + (<usize>link << 2), n);
  return p;
}

/** Link `link` goes down, comes up, or ECMP learns either (F_*), at `atPs`. */
export function fabricSchedule(fab: usize, link: i32, kind: u32, atPs: f64): void {
  const f = load<u32>(fab + FAB_FAULT_N), cap = load<u32>(fab + FAB_FAULT_CAP);
  if (f == cap) {
    store<usize>(fab + FAB_FAULT_LINK, grow(tab(fab, FAB_FAULT_LINK), <usize>cap << 2, <usize>cap << 3));
    store<usize>(fab + FAB_FAULT_KIND, grow(tab(fab, FAB_FAULT_KIND), <usize>cap << 2, <usize>cap << 3));
    store<u32>(fab + FAB_FAULT_CAP, cap << 1);
  }
  setI32(fab, FAB_FAULT_LINK, <i32>f, link);
  setI32(fab, FAB_FAULT_KIND, <i32>f, <i32>kind);
  store<u32>(fab + FAB_FAULT_N, f + 1);
  eventsPush(fab, atPs, (<i32>f << EV_BITS) | EV_FAULT);
}

export function fault(fab: usize, f: i32, now: f64): void {
  const link = i32Of(fab, FAB_FAULT_LINK, f), kind = u32Of(fab, FAB_FAULT_KIND, f);
  const detect = load<f64>(fab + FAB_FAILURE_DETECT_PS);
  if (kind == F_DOWN || kind == F_UP) {
    setU8(fab, FAB_LINK_UP, link, kind == F_UP ? 1 : 0);
    if (kind == F_DOWN) {
      flush(fab, 2 * link, now);
      flush(fab, 2 * link + 1, now);
    }
    if (detect == 0) known(fab, link, kind == F_UP);
    else fabricSchedule(fab, link, kind == F_UP ? F_KNOWN_UP : F_KNOWN_DOWN, now + detect);
  } else known(fab, link, kind == F_KNOWN_UP);
}

/** Drops every frame queued on channel `c`, oldest first (its link went down). */
function flush(fab: usize, c: i32, now: f64): void {
  const o = chan(fab, c);
  const wire = load<u32>(o + FCH_RWIRE), n = load<u32>(o + FCH_RCOUNT);
  for (let i = wire; i < n; i++) {
    const e = ent(o, i);
    const p = load<i32>(e + FRING_ENTRY_PKT), len = <f64>(load<u32>(e + FRING_ENTRY_LEN_META) & LM_LEN);
    store<f64>(o + FCH_QBYTES, load<f64>(o + FCH_QBYTES) - len);
    release(fab, o, p, len, now);
    dropAt(fab, c, p, R_LINK_DOWN);
  }
  store<u32>(o + FCH_RCOUNT, wire);
}

function known(fab: usize, link: i32, up: bool): void {
  setU8(fab, FAB_LINK_KNOWN_UP, link, up ? 1 : 0);
  if (u8Of(fab, FAB_LINK_FABRIC, link) != 0) fabricRebuildGroups(fab, i32Of(fab, FAB_LINK_PLANE, link));
}

/**
 * The ECMP groups of plane `pl`, as masks of the next hops a switch has a link known up to: a
 * leaf's of the spines of its pod, a spine's of the super-spines of its group. A leaf's group
 * towards leaf i is every spine set in both their masks, and towards another pod only those
 * spines that reach it: a cross mask per pair of pods, bit j set when spine j of the one pod
 * and spine j of the other share a super-spine (loop.ts route). A table per pair of leaves
 * held leaves² x spines entries: 512 MiB for 16,384 devices under leaves of 16 with 16 spines.
 */
export function fabricRebuildGroups(fab: usize, pl: i32): void {
  const leaves = <i32>load<u32>(fab + FAB_LEAVES), spines = <i32>load<u32>(fab + FAB_SPINES), words = <i32>load<u32>(fab + FAB_MASK_WORDS);
  for (let a = 0; a < leaves; a++) {
    const la = pl * leaves + a;
    upMask(fab, tab(fab, FAB_SPINE_MASK) + (<usize>(la * words) << 3), words, FAB_FABRIC_LINK_OF, la * spines, spines);
  }
  const supers = <i32>load<u32>(fab + FAB_SUPERS);
  if (supers == 0) return;
  const pods = <i32>load<u32>(fab + FAB_PODS), sw = <i32>load<u32>(fab + FAB_SUPER_WORDS), sm = tab(fab, FAB_SUPER_MASK);
  const first = pl * pods * spines; // the plane's first spine, counted from first_spine
  for (let k = first; k < first + pods * spines; k++) upMask(fab, sm + (<usize>(k * sw) << 3), sw, FAB_SUPER_LINK_OF, k * supers, supers);
  for (let a = 0; a < pods; a++)
    for (let b = 0; b < pods; b++) {
      const m = tab(fab, FAB_CROSS_MASK) + (<usize>(((pl * pods + a) * pods + b) * words) << 3);
      for (let w = 0; w < words; w++) store<u64>(m + (<usize>w << 3), 0);
      for (let j = 0; j < spines; j++) {
        const ma = sm + (<usize>((first + a * spines + j) * sw) << 3), mb = sm + (<usize>((first + b * spines + j) * sw) << 3);
        let shared = false;
        for (let w = 0; w < sw && !shared; w++) shared = (load<u64>(ma + (<usize>w << 3)) & load<u64>(mb + (<usize>w << 3))) != 0;
        if (shared) setBit(m, j);
      }
    }
}

/** The mask at `m` (`words` words): bit j set while link `links[at + j]` (table `links`) exists and is known up, j < n. */
function upMask(fab: usize, m: usize, words: i32, links: u32, at: i32, n: i32): void {
  for (let w = 0; w < words; w++) store<u64>(m + (<usize>w << 3), 0);
  for (let j = 0; j < n; j++) {
    const link = i32Of(fab, links, at + j);
    if (link >= 0 && u8Of(fab, FAB_LINK_KNOWN_UP, link) == 1) setBit(m, j);
  }
}

@inline function setBit(m: usize, j: i32): void {
  const at = m + (<usize>(j >> 6) << 3);
  store<u64>(at, load<u64>(at) | (<u64>1 << <u64>(j & 63)));
}

@inline function outage(fab: usize, link: i32, i: u32): f64 {
  return load<f64>(load<usize>(tab(fab, FAB_OUTAGE_PTR) + (<usize>link << 2)) + (<usize>i << 3));
}

@inline function outages(fab: usize, link: i32): u32 {
  return load<u32>(tab(fab, FAB_OUTAGE_N) + (<usize>link << 2));
}

/**
 * By the outage schedule, is a frame that joins the queue of link `link` at `joined` and would
 * start at `start` lost before it starts? LOST_ON_ENTRY if the link went down before it joined
 * and is not up again; the time of the failure if the link fails while it waits; NOT_LOST
 * otherwise (host/fabric/fabric.ts has the reasoning).
 */
export function lostWaiting(fab: usize, link: i32, joined: f64, start: f64): f64 {
  const n = outages(fab, link);
  for (let i: u32 = 0; i < 2 * n; i += 2) {
    const down = outage(fab, link, i), up = outage(fab, link, i + 1);
    if (down < joined && joined <= up) return LOST_ON_ENTRY;
    if (down >= joined && (down < start || (down == start && start > joined))) return down;
  }
  return NOT_LOST;
}

/** True when an outage of link `link` begins during [from, to]. */
export function failsDuring(fab: usize, link: i32, from: f64, to: f64): bool {
  const n = outages(fab, link);
  for (let i: u32 = 0; i < 2 * n; i += 2) {
    const down = outage(fab, link, i);
    if (down >= from && down <= to) return true;
  }
  return false;
}
