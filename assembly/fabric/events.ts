// The fabric's one event queue, ordered by (time, key). The key of an ordinary event is its
// insertion sequence, so events due at the same picosecond run in the order they were
// scheduled; a caller may give an explicit key instead (a frame's entry is keyed by its source
// and sequence, so that entries do not depend on the order in which devices were stepped).
// Keys below 0 run before every ordinary event of that time. An event is one i32 the caller
// packs (kind and index).
//
// A binary heap costs ~13 levels of unpredictable compares per event at the fabric's few
// thousand pending events; a calendar queue (R. Brown, "Calendar queues", CACM 31(10), 1988)
// costs a few. Time is cut into buckets of 2^shift ps; a bucket is a list sorted by (time,
// key): an event that joins the current bucket is put in its place, one that joins a later
// bucket out of order is appended and the bucket sorted once, when it is reached (many devices
// put thousands of events at one picosecond, in no order of their keys, and walking the list
// for each cost the fabric a quarter of its time at 4,096 devices); buckets [cur, cur + nb)
// live in a ring of nb lists, with a two-level bitmap of
// the non-empty ones for skipping; events beyond the ring wait in a binary heap (the overflow)
// and move in as the ring advances. The bucket width adapts to the event density (it changes
// only speed, never the order). Records live in the fabric's memory (FAB.cq_*) with a free list,
// 32 bytes each (a column per field cost a cache miss per field).

import {
  FAB_EV_SIZE, FAB_EV_PEAK, FAB_EV_PUSHED, FAB_EV_SEQ, FAB_EV_LAST_TIME,
  FAB_CQ_HORIZON, FAB_CQ_INV_W, FAB_CQ_CUR, FAB_CQ_LAST_BUCKET, FAB_CQ_SKIPPED, FAB_CQ_SHIFT, FAB_CQ_NB, FAB_CQ_POPS,
  FAB_CQ_DISTINCT, FAB_CQ_BUCKETS_POPPED, FAB_CQ_REC, FAB_CQ_REC_CAP, FAB_CQ_FREE,
  FAB_CQ_HEAD, FAB_CQ_TAIL, FAB_CQ_FINGER, FAB_CQ_BITS, FAB_CQ_SUMMARY, FAB_CQ_OV_T, FAB_CQ_OV_K, FAB_CQ_OV_E,
  FAB_CQ_OV_SIZE, FAB_CQ_OV_CAP, FAB_CQ_SORT, FAB_CQ_SORT_CAP,
} from "../generated/layouts";
import { zeroed, grow, nones } from "./memory";

const NONE: i32 = -1;
/** A bucket's finger while its list is not sorted: events joined it in any order (sortBucket sorts it). */
const UNSORTED: i32 = -2;
/** No bucket (findBucket, scan): past every bucket. */
const NO_BUCKET: i64 = i64.MAX_VALUE;
/** Pops between bucket-width reviews. */
const REVIEW_POPS: u32 = 8192;

@inline function ptr(fab: usize, f: u32): usize { return load<usize>(fab + f); }
/** Bytes of an event record (time f64, key f64, event i32, next i32): one record per half cache line, its fields read together. */
const REC: u32 = 5; // log2 of 32
@inline function recAt(fab: usize, r: i32): usize { return ptr(fab, FAB_CQ_REC) + (<usize>r << REC); }
@inline function rt(fab: usize, r: i32): f64 { return load<f64>(recAt(fab, r)); }
@inline function rk(fab: usize, r: i32): f64 { return load<f64>(recAt(fab, r), 8); }
@inline function re(fab: usize, r: i32): i32 { return load<i32>(recAt(fab, r), 16); }
@inline function rn(fab: usize, r: i32): i32 { return load<i32>(recAt(fab, r), 20); }
@inline function setRn(fab: usize, r: i32, v: i32): void { store<i32>(recAt(fab, r), v, 20); }
@inline function mask(fab: usize): u32 { return load<u32>(fab + FAB_CQ_NB) - 1; }
/** The bucket of time `t` (absolute: floor(t / width); times are not negative, Infinity saturates). */
@inline function bucketOf(fab: usize, t: f64): i64 { return <i64>(t * load<f64>(fab + FAB_CQ_INV_W)); }
@inline function curOf(fab: usize): i64 { return load<i64>(fab + FAB_CQ_CUR); }
/** (t1, k1) sorts before (t2, k2). */
@inline function before(t1: f64, k1: f64, t2: f64, k2: f64): bool { return t1 < t2 || (t1 == t2 && k1 < k2); }

/** An empty queue with room for `n` events, whose events are mostly due within `horizonPs`. */
export function eventsInit(fab: usize, n: u32, horizonPs: f64): void {
  store<f64>(fab + FAB_CQ_HORIZON, horizonPs);
  store<i32>(fab + FAB_CQ_FREE, NONE);
  recordsGrow(fab, n);
  store<u32>(fab + FAB_CQ_OV_CAP, 64);
  store<usize>(fab + FAB_CQ_OV_T, zeroed(64 << 3));
  store<usize>(fab + FAB_CQ_OV_K, zeroed(64 << 3));
  store<usize>(fab + FAB_CQ_OV_E, zeroed(64 << 2));
  layout(fab, 10);
}

function recordsGrow(fab: usize, n: u32): void {
  const old = load<u32>(fab + FAB_CQ_REC_CAP);
  store<usize>(fab + FAB_CQ_REC, grow(ptr(fab, FAB_CQ_REC), <usize>old << REC, <usize>n << REC));
  let free = load<i32>(fab + FAB_CQ_FREE);
  for (let i = <i32>n - 1; i >= <i32>old; i--) {
    setRn(fab, i, free);
    free = i;
  }
  store<i32>(fab + FAB_CQ_FREE, free);
  store<u32>(fab + FAB_CQ_REC_CAP, n);
}

/** Buckets of 2^shift ps, enough of them to cover twice the horizon (64 to 2^20). */
function layout(fab: usize, shift: u32): void {
  store<u32>(fab + FAB_CQ_SHIFT, shift);
  const w = Math.pow(2, <f64>shift);
  store<f64>(fab + FAB_CQ_INV_W, 1 / w);
  let nb: u32 = 64;
  while (nb < (1 << 20) && <f64>nb * w < 2 * load<f64>(fab + FAB_CQ_HORIZON)) nb *= 2;
  store<u32>(fab + FAB_CQ_NB, nb);
  store<usize>(fab + FAB_CQ_HEAD, nones(nb));
  store<usize>(fab + FAB_CQ_TAIL, zeroed(<usize>nb << 2));
  store<usize>(fab + FAB_CQ_FINGER, nones(nb));
  store<usize>(fab + FAB_CQ_BITS, zeroed(<usize>(nb >> 5) << 2));
  store<usize>(fab + FAB_CQ_SUMMARY, zeroed(<usize>(nb >> 10 > 0 ? nb >> 10 : 1) << 2));
}

/** Time of the earliest event, Infinity when there is none (does not move the queue). */
export function eventsNextTime(fab: usize): f64 {
  const b = scan(fab, curOf(fab));
  if (b == NO_BUCKET) return load<u32>(fab + FAB_CQ_OV_SIZE) > 0 ? load<f64>(ptr(fab, FAB_CQ_OV_T)) : Infinity;
  const slot = <u32>b & mask(fab);
  sorted(fab, slot);
  return rt(fab, load<i32>(ptr(fab, FAB_CQ_HEAD) + (<usize>slot << 2)));
}

/** Schedules `ev` at `time` after every event already scheduled for that time. */
export function eventsPush(fab: usize, time: f64, ev: i32): void {
  const seq = load<f64>(fab + FAB_EV_SEQ);
  store<f64>(fab + FAB_EV_SEQ, seq + 1);
  eventsPushKeyed(fab, time, seq, ev);
}

@inline export function eventsPushKeyed(fab: usize, time: f64, key: f64, ev: i32): void {
  store<f64>(fab + FAB_EV_PUSHED, load<f64>(fab + FAB_EV_PUSHED) + 1);
  const n = load<u32>(fab + FAB_EV_SIZE) + 1;
  store<u32>(fab + FAB_EV_SIZE, n);
  if (n > load<u32>(fab + FAB_EV_PEAK)) store<u32>(fab + FAB_EV_PEAK, n);
  const b = bucketOf(fab, time), cur = curOf(fab);
  if (b >= cur + <i64>load<u32>(fab + FAB_CQ_NB)) overflowPush(fab, time, key, ev);
  else insert(fab, time, key, ev, b < cur ? cur : b, b > cur);
}

/**
 * Removes the earliest event due before `limit` and returns it, its time in FAB.ev_last_time;
 * -1 when there is none (the queue then stands at limit, so that no later event may be
 * scheduled before it).
 */
@inline export function eventsPopBefore(fab: usize, limit: f64): i32 {
  if (load<u32>(fab + FAB_CQ_OV_SIZE) != 0) migrate(fab);
  const heads = ptr(fab, FAB_CQ_HEAD), m = mask(fab);
  let b = curOf(fab);
  let slot = <u32>b & m;
  let r = load<i32>(heads + (<usize>slot << 2));
  if (r == NONE) {
    // the current bucket is empty: the next one that is not, if it is not past the limit's
    b = findBucket(fab, bucketOf(fab, limit));
    if (b == NO_BUCKET) return NONE;
    slot = <u32>b & m;
    r = load<i32>(heads + (<usize>slot << 2));
  }
  const finger = ptr(fab, FAB_CQ_FINGER) + (<usize>slot << 2);
  if (load<i32>(finger) == UNSORTED) {
    sortBucket(fab, slot);
    r = load<i32>(heads + (<usize>slot << 2));
  }
  const at = recAt(fab, r);
  const t = load<f64>(at);
  if (t >= limit) return NONE;
  const next = load<i32>(at, 20);
  store<i32>(heads + (<usize>slot << 2), next);
  if (load<i32>(finger) == r) store<i32>(finger, NONE);
  if (next == NONE) clearBit(fab, slot);
  const ev = load<i32>(at, 16);
  store<i32>(at, load<i32>(fab + FAB_CQ_FREE), 20);
  store<i32>(fab + FAB_CQ_FREE, r);
  store<u32>(fab + FAB_EV_SIZE, load<u32>(fab + FAB_EV_SIZE) - 1);
  // the width review counts distinct times (events at one time cannot be split)
  if (t != load<f64>(fab + FAB_EV_LAST_TIME)) {
    store<u32>(fab + FAB_CQ_DISTINCT, load<u32>(fab + FAB_CQ_DISTINCT) + 1);
    if (b != load<i64>(fab + FAB_CQ_LAST_BUCKET)) {
      store<u32>(fab + FAB_CQ_BUCKETS_POPPED, load<u32>(fab + FAB_CQ_BUCKETS_POPPED) + 1);
      store<i64>(fab + FAB_CQ_LAST_BUCKET, b);
    }
  }
  store<f64>(fab + FAB_EV_LAST_TIME, t);
  const pops = load<u32>(fab + FAB_CQ_POPS) + 1;
  store<u32>(fab + FAB_CQ_POPS, pops);
  if (pops == REVIEW_POPS) review(fab);
  return ev;
}

/** A new record for the event, in ring bucket b (absolute, not before the current one; `later`: after it). */
@inline function insert(fab: usize, time: f64, key: f64, ev: i32, b: i64, later: bool): void {
  if (load<i32>(fab + FAB_CQ_FREE) == NONE) recordsGrow(fab, 2 * load<u32>(fab + FAB_CQ_REC_CAP));
  const r = load<i32>(fab + FAB_CQ_FREE);
  const at = recAt(fab, r);
  store<i32>(fab + FAB_CQ_FREE, load<i32>(at, 20));
  store<f64>(at, time);
  store<f64>(at, key, 8);
  store<i32>(at, ev, 16);
  link(fab, r, at, time, key, <u32>b & mask(fab), later);
}

/**
 * Inserts record r (at `at`, of time t and key k) into ring slot `slot`: in its place in the
 * sorted list; or, when `lazy` (a bucket not reached yet) and it does not go at either end, at
 * the end of a list then sorted when it is reached (UNSORTED).
 */
function link(fab: usize, r: i32, at: usize, t: f64, k: f64, slot: u32, lazy: bool): void {
  const hp = ptr(fab, FAB_CQ_HEAD) + (<usize>slot << 2), tp = ptr(fab, FAB_CQ_TAIL) + (<usize>slot << 2);
  const fp = ptr(fab, FAB_CQ_FINGER) + (<usize>slot << 2);
  let p = load<i32>(hp);
  if (p == NONE) {
    store<i32>(at, NONE, 20);
    store<i32>(hp, r);
    store<i32>(tp, r);
    store<i32>(fp, NONE);
    const bits = ptr(fab, FAB_CQ_BITS) + (<usize>(slot >> 5) << 2), summary = ptr(fab, FAB_CQ_SUMMARY) + (<usize>(slot >> 10) << 2);
    store<u32>(bits, load<u32>(bits) | (1 << (slot & 31)));
    store<u32>(summary, load<u32>(summary) | (1 << ((slot >> 5) & 31)));
    return;
  }
  // most events are later than all others in their bucket (ordinary keys grow): append
  const z = load<i32>(tp), za = recAt(fab, z);
  const f = load<i32>(fp);
  if (f == UNSORTED || before(load<f64>(za), load<f64>(za, 8), t, k)) {
    store<i32>(at, NONE, 20);
    store<i32>(za, r, 20);
    store<i32>(tp, r);
    return;
  }
  if (before(t, k, rt(fab, p), rk(fab, p))) {
    store<i32>(at, p, 20);
    store<i32>(hp, r);
    return;
  }
  if (lazy) {
    store<i32>(at, NONE, 20);
    store<i32>(za, r, 20);
    store<i32>(tp, r);
    store<i32>(fp, UNSORTED);
    return;
  }
  if (f != NONE && before(rt(fab, f), rk(fab, f), t, k)) p = f;
  store<i32>(fp, r);
  for (;;) {
    const q = rn(fab, p);
    if (q == NONE || before(t, k, rt(fab, q), rk(fab, q))) {
      store<i32>(at, q, 20);
      setRn(fab, p, r);
      // past the tail only when the tail's (time, key) is the event's own (equal ones keep the order they joined in)
      if (q == NONE) store<i32>(tp, r);
      return;
    }
    p = q;
  }
}

/** Sorts ring slot `slot`'s list if it is UNSORTED. */
@inline function sorted(fab: usize, slot: u32): void {
  if (load<i32>(ptr(fab, FAB_CQ_FINGER) + (<usize>slot << 2)) == UNSORTED) sortBucket(fab, slot);
}

/**
 * Sorts ring slot `slot`'s list by (time, key), keeping the order in which equal events joined
 * (as an insertion in place would). The list's times and keys are read once, in list order,
 * into the scratch; a natural merge sort orders their positions there (a list that was appended
 * to in a few sorted runs costs a pass per doubling of its runs); the records are linked again.
 */
function sortBucket(fab: usize, slot: u32): void {
  const hp = ptr(fab, FAB_CQ_HEAD) + (<usize>slot << 2);
  let n: u32 = 0;
  for (let r = load<i32>(hp); r != NONE; r = rn(fab, r)) {
    if (n == load<u32>(fab + FAB_CQ_SORT_CAP)) sortGrow(fab);
    const cap = <usize>load<u32>(fab + FAB_CQ_SORT_CAP), t = ptr(fab, FAB_CQ_SORT);
    store<f64>(t + (<usize>n << 3), rt(fab, r));
    store<f64>(t + (cap << 3) + (<usize>n << 3), rk(fab, r));
    store<i32>(t + (cap << 4) + (<usize>n << 2), r);
    store<u32>(t + (cap << 4) + (cap << 2) + (<usize>n << 2), n);
    n++;
  }
  const cap = <usize>load<u32>(fab + FAB_CQ_SORT_CAP), t = ptr(fab, FAB_CQ_SORT);
  const k = t + (cap << 3), recs = t + (cap << 4);
  let src = recs + (cap << 2), dst = src + (cap << 2);
  while (mergePass(t, k, src, dst, n) > 1) {
    const x = src;
    src = dst;
    dst = x;
  }
  // dst holds the sorted positions (the last pass found one run and copied it)
  let prev = load<i32>(recs + (<usize>load<u32>(dst) << 2));
  store<i32>(hp, prev);
  for (let i: u32 = 1; i < n; i++) {
    const r = load<i32>(recs + (<usize>load<u32>(dst + (<usize>i << 2)) << 2));
    setRn(fab, prev, r);
    prev = r;
  }
  setRn(fab, prev, NONE);
  store<i32>(ptr(fab, FAB_CQ_TAIL) + (<usize>slot << 2), prev);
  store<i32>(ptr(fab, FAB_CQ_FINGER) + (<usize>slot << 2), NONE);
}

/** Position i's event sorts before position j's (times at `t`, keys at `k`). */
@inline function posBefore(t: usize, k: usize, i: u32, j: u32): bool {
  return before(load<f64>(t + (<usize>i << 3)), load<f64>(k + (<usize>i << 3)), load<f64>(t + (<usize>j << 3)), load<f64>(k + (<usize>j << 3)));
}

/**
 * One pass of a natural merge sort of the `n` positions at `src` into `dst`: each two
 * consecutive ascending runs merged into one (the left first among equals). Returns the runs it
 * found in src: 1 when src was sorted (dst is then its copy).
 */
function mergePass(t: usize, k: usize, src: usize, dst: usize, n: u32): u32 {
  let runs: u32 = 0, i: u32 = 0;
  while (i < n) {
    let m = i + 1;
    while (m < n && !posBefore(t, k, load<u32>(src + (<usize>m << 2)), load<u32>(src + (<usize>(m - 1) << 2)))) m++;
    runs++;
    let e = m;
    if (m < n) {
      e = m + 1;
      while (e < n && !posBefore(t, k, load<u32>(src + (<usize>e << 2)), load<u32>(src + (<usize>(e - 1) << 2)))) e++;
      runs++;
    }
    // merge [i, m) and [m, e) into dst[i, e)
    let a = i, b = m, o = i;
    while (a < m && b < e) {
      const x = load<u32>(src + (<usize>a << 2)), y = load<u32>(src + (<usize>b << 2));
      if (posBefore(t, k, y, x)) { store<u32>(dst + (<usize>o << 2), y); b++; }
      else { store<u32>(dst + (<usize>o << 2), x); a++; }
      o++;
    }
    for (; a < m; a++, o++) store<u32>(dst + (<usize>o << 2), load<u32>(src + (<usize>a << 2)));
    for (; b < e; b++, o++) store<u32>(dst + (<usize>o << 2), load<u32>(src + (<usize>b << 2)));
    i = e;
  }
  return runs;
}

/** Doubles the sort scratch (its five columns keep their first cq_sort_cap entries). */
function sortGrow(fab: usize): void {
  const old = <usize>load<u32>(fab + FAB_CQ_SORT_CAP), cap = old > 0 ? old << 1 : 1024;
  const from = ptr(fab, FAB_CQ_SORT), to = zeroed(cap * 32);
  if (old > 0) {
    memory.copy(to, from, old << 3);
    memory.copy(to + (cap << 3), from + (old << 3), old << 3);
    memory.copy(to + (cap << 4), from + (old << 4), old << 2);
    memory.copy(to + (cap << 4) + (cap << 2), from + (old << 4) + (old << 2), old << 2);
  }
  store<usize>(fab + FAB_CQ_SORT, to);
  store<u32>(fab + FAB_CQ_SORT_CAP, <u32>cap);
}

function clearBit(fab: usize, slot: u32): void {
  const w = slot >> 5;
  const bits = ptr(fab, FAB_CQ_BITS) + (<usize>w << 2);
  const v = load<u32>(bits) & ~(1 << (slot & 31));
  store<u32>(bits, v);
  if (v == 0) {
    const s = ptr(fab, FAB_CQ_SUMMARY) + (<usize>(w >> 5) << 2);
    store<u32>(s, load<u32>(s) & ~(1 << (w & 31)));
  }
}

/** Moves overflow events that now fall inside the ring into it. */
function migrate(fab: usize): void {
  // the ring's end: inv_w is 2^-shift, so this division is exact
  const end = <f64>(curOf(fab) + <i64>load<u32>(fab + FAB_CQ_NB)) / load<f64>(fab + FAB_CQ_INV_W);
  while (load<u32>(fab + FAB_CQ_OV_SIZE) > 0 && load<f64>(ptr(fab, FAB_CQ_OV_T)) < end) {
    const t = load<f64>(ptr(fab, FAB_CQ_OV_T)), k = load<f64>(ptr(fab, FAB_CQ_OV_K));
    const ev = overflowPop(fab);
    const b = bucketOf(fab, t), cur = curOf(fab);
    insert(fab, t, k, ev, b < cur ? cur : b, b > cur);
  }
}

/**
 * The first non-empty bucket at most `limitBucket` (absolute), the ring moved to it (pulling in
 * overflow events the move brings inside the ring); NO_BUCKET when there is none, the ring then
 * moved to limitBucket.
 */
function findBucket(fab: usize, limitBucket: i64): i64 {
  while (true) {
    const cur = curOf(fab);
    const b = scan(fab, cur);
    const ovB = load<u32>(fab + FAB_CQ_OV_SIZE) > 0 ? bucketOf(fab, load<f64>(ptr(fab, FAB_CQ_OV_T))) : NO_BUCKET;
    // overflow events lie beyond the ring, so a ring event always comes first
    const next = b != NO_BUCKET ? b : ovB;
    if (next > limitBucket) {
      if (limitBucket > cur) moveTo(fab, limitBucket);
      return NO_BUCKET;
    }
    if (next != cur) moveTo(fab, next);
    if (next == b) return b;
  }
  return NO_BUCKET; // not reached
}

function moveTo(fab: usize, b: i64): void {
  const cur = curOf(fab);
  if (b > cur + 1) store<f64>(fab + FAB_CQ_SKIPPED, load<f64>(fab + FAB_CQ_SKIPPED) + <f64>(b - cur - 1));
  store<i64>(fab + FAB_CQ_CUR, b);
  migrate(fab);
}

/** The first non-empty ring bucket at or after absolute bucket `from` (within the ring), or NO_BUCKET. */
function scan(fab: usize, from: i64): i64 {
  const nb = load<u32>(fab + FAB_CQ_NB), m = nb - 1;
  const bits = ptr(fab, FAB_CQ_BITS), summary = ptr(fab, FAB_CQ_SUMMARY);
  const maxDist = curOf(fab) + <i64>nb - from;
  if (maxDist <= 0) return NO_BUCKET;
  const fromSlot = <u32>from & m;
  // the rest of the first word
  let w = fromSlot >> 5;
  let word = load<u32>(bits + (<usize>w << 2)) & (0xffffffff << (fromSlot & 31));
  if (word != 0) {
    const d = <i64>((w << 5) + ctz(word) - fromSlot);
    return d < maxDist ? from + d : NO_BUCKET;
  }
  let dist = <i64>(32 - (fromSlot & 31));
  // whole words, skipping empty ones through the summary
  while (dist < maxDist) {
    const slot = <u32>(from + dist) & m; // word aligned
    w = slot >> 5;
    word = load<u32>(bits + (<usize>w << 2));
    if (word != 0) {
      const d = dist + <i64>ctz(word);
      return d < maxDist ? from + d : NO_BUCKET;
    }
    const sw = w >> 5;
    const sm = load<u32>(summary + (<usize>sw << 2)) & (0xffffffff << (w & 31)) & ~(1 << (w & 31));
    if (sm != 0) dist += <i64>((((sw << 5) + ctz(sm)) - w) << 5);
    else {
      // on to the next summary word's first word, or to the ring's first word when the ring
      // ends first (a ring of fewer than 1,024 buckets has fewer than 32 words: a summary word's
      // end lies past the wrap, and jumping there skipped the ring's first words)
      const groupEnd = (sw + 1) << 5, words = nb >> 5;
      dist += <i64>(((groupEnd < words ? groupEnd : words) - w) << 5);
    }
  }
  return NO_BUCKET;
}

/** Adapts the bucket width: one to four distinct times per bucket, few empty buckets between. */
function review(fab: usize): void {
  const popped = load<u32>(fab + FAB_CQ_BUCKETS_POPPED), distinct = load<u32>(fab + FAB_CQ_DISTINCT);
  const perBucket = <f64>distinct / <f64>(popped > 1 ? popped : 1);
  const skippedPerPop = load<f64>(fab + FAB_CQ_SKIPPED) / <f64>(distinct > 1 ? distinct : 1);
  store<u32>(fab + FAB_CQ_POPS, 0);
  store<u32>(fab + FAB_CQ_DISTINCT, 0);
  store<u32>(fab + FAB_CQ_BUCKETS_POPPED, 0);
  store<f64>(fab + FAB_CQ_SKIPPED, 0);
  const old = load<u32>(fab + FAB_CQ_SHIFT);
  let shift = old;
  if (perBucket > 4 && shift > 0) shift--;
  else if (perBucket < 1.5 && skippedPerPop > 16 && shift < 40) shift++;
  if (shift != old) rebuild(fab, shift);
}

/** Lays the ring out again with buckets of 2^shift ps, every event kept. */
function rebuild(fab: usize, shift: u32): void {
  // the events of the ring, as one list through their records (the old ring is dropped)
  const nb = load<u32>(fab + FAB_CQ_NB);
  let keep = NONE, last = NONE;
  for (let s: u32 = 0; s < nb; s++) {
    const h = load<i32>(ptr(fab, FAB_CQ_HEAD) + (<usize>s << 2));
    if (h == NONE) continue;
    if (keep == NONE) keep = h;
    else setRn(fab, last, h);
    last = load<i32>(ptr(fab, FAB_CQ_TAIL) + (<usize>s << 2));
  }
  const curTime = <f64>curOf(fab) / load<f64>(fab + FAB_CQ_INV_W);
  layout(fab, shift);
  store<i64>(fab + FAB_CQ_CUR, bucketOf(fab, curTime));
  store<i64>(fab + FAB_CQ_LAST_BUCKET, -1);
  const cur = curOf(fab), ring = <i64>load<u32>(fab + FAB_CQ_NB);
  for (let r = keep; r != NONE;) {
    const next = r == last ? NONE : rn(fab, r);
    const t = rt(fab, r), b = bucketOf(fab, t);
    if (b >= cur + ring) {
      overflowPush(fab, t, rk(fab, r), re(fab, r));
      setRn(fab, r, load<i32>(fab + FAB_CQ_FREE));
      store<i32>(fab + FAB_CQ_FREE, r);
    } else link(fab, r, recAt(fab, r), t, rk(fab, r), <u32>(b < cur ? cur : b) & mask(fab), true);
    r = next;
  }
}

// ---- the overflow: a binary heap of (time, key, event) ------------------------------------

function overflowPush(fab: usize, time: f64, key: f64, ev: i32): void {
  const n = load<u32>(fab + FAB_CQ_OV_SIZE), cap = load<u32>(fab + FAB_CQ_OV_CAP);
  if (n == cap) {
    store<usize>(fab + FAB_CQ_OV_T, grow(ptr(fab, FAB_CQ_OV_T), <usize>cap << 3, <usize>cap << 4));
    store<usize>(fab + FAB_CQ_OV_K, grow(ptr(fab, FAB_CQ_OV_K), <usize>cap << 3, <usize>cap << 4));
    store<usize>(fab + FAB_CQ_OV_E, grow(ptr(fab, FAB_CQ_OV_E), <usize>cap << 2, <usize>cap << 3));
    store<u32>(fab + FAB_CQ_OV_CAP, cap << 1);
  }
  const t = ptr(fab, FAB_CQ_OV_T), k = ptr(fab, FAB_CQ_OV_K), e = ptr(fab, FAB_CQ_OV_E);
  let i = n;
  store<u32>(fab + FAB_CQ_OV_SIZE, n + 1);
  while (i > 0) {
    const p = (i - 1) >> 1;
    const tp = load<f64>(t + (<usize>p << 3)), kp = load<f64>(k + (<usize>p << 3));
    if (before(tp, kp, time, key)) break;
    ovSet(t, k, e, i, tp, kp, load<i32>(e + (<usize>p << 2)));
    i = p;
  }
  ovSet(t, k, e, i, time, key, ev);
}

/** Puts (time, key, event) at overflow heap index `i` of the columns t, k, e. */
@inline function ovSet(t: usize, k: usize, e: usize, i: u32, time: f64, key: f64, ev: i32): void {
  store<f64>(t + (<usize>i << 3), time);
  store<f64>(k + (<usize>i << 3), key);
  store<i32>(e + (<usize>i << 2), ev);
}

function overflowPop(fab: usize): i32 {
  const t = ptr(fab, FAB_CQ_OV_T), k = ptr(fab, FAB_CQ_OV_K), e = ptr(fab, FAB_CQ_OV_E);
  const top = load<i32>(e);
  const n = load<u32>(fab + FAB_CQ_OV_SIZE) - 1;
  store<u32>(fab + FAB_CQ_OV_SIZE, n);
  if (n == 0) return top;
  const lt = load<f64>(t + (<usize>n << 3)), lk = load<f64>(k + (<usize>n << 3)), le = load<i32>(e + (<usize>n << 2));
  let i: u32 = 0;
  for (;;) {
    let c: u32 = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && before(load<f64>(t + (<usize>(c + 1) << 3)), load<f64>(k + (<usize>(c + 1) << 3)), load<f64>(t + (<usize>c << 3)), load<f64>(k + (<usize>c << 3)))) c++;
    const tc = load<f64>(t + (<usize>c << 3)), kc = load<f64>(k + (<usize>c << 3));
    if (before(lt, lk, tc, kc)) break;
    ovSet(t, k, e, i, tc, kc, load<i32>(e + (<usize>c << 2)));
    i = c;
  }
  ovSet(t, k, e, i, lt, lk, le);
  return top;
}
