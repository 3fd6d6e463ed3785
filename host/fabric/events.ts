// The fabric's one event queue, ordered by (time, key). The key of an ordinary event is its
// insertion sequence, so events due at the same picosecond run in the order they were
// scheduled; a caller may give an explicit key instead (the fabric keys a frame's entry by its
// source and sequence, so that entries do not depend on the order in which devices were
// stepped). Keys below 0 run before every ordinary event of that time. An event is one int32
// the caller packs (kind and index).
//
// A binary heap costs ~13 levels of unpredictable compares per event at the fabric's few
// thousand pending events; a calendar queue (R. Brown, "Calendar queues", CACM 31(10), 1988)
// costs a few. Time is cut into buckets of 2^shift ps; a bucket is a list kept sorted by
// (time, key); buckets [cur, cur + nb) live in a ring of nb lists, with a two-level bitmap of
// the non-empty ones for skipping; events beyond the ring wait in a binary heap (OverflowHeap)
// and move in as the ring advances. The bucket width adapts to the event density (it changes
// only speed, never the order). Records live in typed arrays with a free list.

const NONE = -1;

/** A binary heap of (time, key, event): the calendar's overflow for far-future events. */
export class OverflowHeap {
  private t = new Float64Array(64);
  private k = new Float64Array(64);
  private e = new Int32Array(64);
  size = 0;

  topTime(): number {
    return this.size > 0 ? this.t[0] : Infinity;
  }

  topKey(): number {
    return this.k[0];
  }

  top(): number {
    return this.e[0];
  }

  push(time: number, key: number, ev: number): void {
    if (this.size === this.t.length) {
      const n = 2 * this.size;
      const t = new Float64Array(n), k = new Float64Array(n), e = new Int32Array(n);
      t.set(this.t); k.set(this.k); e.set(this.e);
      this.t = t; this.k = k; this.e = e;
    }
    const t = this.t, k = this.k, e = this.e;
    let i = this.size++;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (t[p] < time || (t[p] === time && k[p] < key)) break;
      t[i] = t[p]; k[i] = k[p]; e[i] = e[p];
      i = p;
    }
    t[i] = time; k[i] = key; e[i] = ev;
  }

  pop(): number {
    const t = this.t, k = this.k, e = this.e;
    const top = e[0];
    const n = --this.size;
    if (n === 0) return top;
    const lt = t[n], lk = k[n], le = e[n];
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && (t[c + 1] < t[c] || (t[c + 1] === t[c] && k[c + 1] < k[c]))) c++;
      if (lt < t[c] || (lt === t[c] && lk < k[c])) break;
      t[i] = t[c]; k[i] = k[c]; e[i] = e[c];
      i = c;
    }
    t[i] = lt; k[i] = lk; e[i] = le;
    return top;
  }
}

/** Pops between bucket-width reviews. */
const REVIEW_POPS = 8192;

export class EventQueue {
  /** events pending */
  size = 0;
  /** the most events ever pending at once */
  peak = 0;
  /** events ever scheduled */
  pushed = 0;
  private seq = 0;

  // event records
  private rt = new Float64Array(0);
  private rk = new Float64Array(0);
  private re = new Int32Array(0);
  private rn = new Int32Array(0);
  private free = NONE;

  // the ring: bucket b (absolute: floor(time / 2^shift)) is list head[b & mask]
  private shift = 0;
  private invW = 1;
  private nb = 0;
  private mask = 0;
  private head = new Int32Array(0);
  /** the last record of each bucket's list (valid while the bucket is not empty) */
  private tail = new Int32Array(0);
  /**
   * Per bucket: the record the last walk inserted, while it is still in the list (a pop from
   * the head forgets it). Events due at one picosecond are many (synchronised senders) and
   * tend to come in key order, so a walk that starts there, when the new event sorts after
   * it, is a few steps instead of the whole bucket.
   */
  private finger = new Int32Array(0);
  private bits = new Uint32Array(0);
  private summary = new Uint32Array(0);
  private cur = 0;
  private readonly overflow = new OverflowHeap();

  // bucket-width review
  private pops = 0;
  private distinct = 0;
  private bucketsPopped = 0;
  private skipped = 0;
  private lastBucket = -1;

  /** `horizonPs`: how far ahead most events are scheduled (the ring covers about twice that). */
  constructor(private readonly horizonPs: number, shift = 10) {
    this.grow(1024);
    this.layout(shift);
  }

  /** Time of the earliest event, Infinity when there is none (does not move the queue). */
  nextTime(): number {
    const b = this.scan(this.cur);
    return b === Infinity ? this.overflow.topTime() : this.rt[this.head[b & this.mask]];
  }

  push(timePs: number, ev: number): void {
    this.pushKeyed(timePs, this.seq++, ev);
  }

  pushKeyed(timePs: number, key: number, ev: number): void {
    this.pushed++;
    if (++this.size > this.peak) this.peak = this.size;
    const b = Math.floor(timePs * this.invW);
    if (b >= this.cur + this.nb) this.overflow.push(timePs, key, ev);
    else this.insert(timePs, key, ev, b);
  }

  /**
   * Removes the earliest event due before `limitPs` and returns it, with its time in
   * `lastTime`; NONE (-1) when there is none (the queue then stands at limitPs, so that no
   * later event may be scheduled before it).
   */
  popBefore(limitPs: number): number {
    const limitBucket = Math.floor(limitPs * this.invW);
    for (;;) {
      this.migrate();
      const b = this.findBucket(limitBucket);
      if (b === NONE) return NONE;
      const slot = b & this.mask;
      const r = this.head[slot];
      const t = this.rt[r];
      if (t >= limitPs) return NONE;
      this.head[slot] = this.rn[r];
      if (this.finger[slot] === r) this.finger[slot] = NONE;
      if (this.rn[r] === NONE) this.clearBit(slot);
      const ev = this.re[r];
      this.rn[r] = this.free;
      this.free = r;
      this.size--;
      // the width review counts distinct times (events at one time cannot be split)
      if (t !== this.lastTime) {
        this.distinct++;
        if (b !== this.lastBucket) {
          this.bucketsPopped++;
          this.lastBucket = b;
        }
      }
      this.lastTime = t;
      if (++this.pops === REVIEW_POPS) this.review();
      return ev;
    }
  }

  /** The time of the event popBefore returned last. */
  lastTime = 0;

  // ---- internals -------------------------------------------------------------------------

  private grow(n: number): void {
    const old = this.rt.length;
    const t = new Float64Array(n), k = new Float64Array(n), e = new Int32Array(n), nx = new Int32Array(n);
    t.set(this.rt); k.set(this.rk); e.set(this.re); nx.set(this.rn);
    this.rt = t; this.rk = k; this.re = e; this.rn = nx;
    for (let i = n - 1; i >= old; i--) {
      this.rn[i] = this.free;
      this.free = i;
    }
  }

  /** Buckets of 2^shift ps, enough of them to cover twice the horizon (64 to 2^20). */
  private layout(shift: number): void {
    this.shift = shift;
    this.invW = 2 ** -shift;
    let nb = 64;
    while (nb < 1 << 20 && nb * 2 ** shift < 2 * this.horizonPs) nb *= 2;
    this.nb = nb;
    this.mask = nb - 1;
    this.head = new Int32Array(nb).fill(NONE);
    this.tail = new Int32Array(nb);
    this.finger = new Int32Array(nb).fill(NONE);
    this.bits = new Uint32Array(nb >> 5);
    this.summary = new Uint32Array(Math.max(1, nb >> 10));
  }

  /** A new record for the event, in ring bucket b (absolute; an earlier one means the current). */
  private insert(timePs: number, key: number, ev: number, b: number): void {
    if (this.free === NONE) this.grow(2 * this.rt.length);
    const r = this.free;
    this.free = this.rn[r];
    this.rt[r] = timePs;
    this.rk[r] = key;
    this.re[r] = ev;
    this.link(r, b < this.cur ? this.cur : b);
  }

  /** Inserts record r into absolute bucket b, keeping the list sorted by (time, key). */
  private link(r: number, b: number): void {
    const slot = b & this.mask;
    const t = this.rt[r], k = this.rk[r];
    let p = this.head[slot];
    if (p === NONE) {
      this.rn[r] = NONE;
      this.head[slot] = this.tail[slot] = r;
      this.bits[slot >> 5] |= 1 << (slot & 31);
      this.summary[slot >> 10] |= 1 << ((slot >> 5) & 31);
      return;
    }
    // most events are later than all others in their bucket (ordinary keys grow): append
    const z = this.tail[slot];
    if (t > this.rt[z] || (t === this.rt[z] && k > this.rk[z])) {
      this.rn[r] = NONE;
      this.rn[z] = this.tail[slot] = r;
      return;
    }
    if (t < this.rt[p] || (t === this.rt[p] && k < this.rk[p])) {
      this.rn[r] = p;
      this.head[slot] = r;
      return;
    }
    const f = this.finger[slot];
    if (f !== NONE && (t > this.rt[f] || (t === this.rt[f] && k > this.rk[f]))) p = f;
    this.finger[slot] = r;
    for (;;) {
      const q = this.rn[p];
      if (q === NONE || t < this.rt[q] || (t === this.rt[q] && k < this.rk[q])) {
        this.rn[r] = q;
        this.rn[p] = r;
        return;
      }
      p = q;
    }
  }

  private clearBit(slot: number): void {
    const w = slot >> 5;
    if ((this.bits[w] &= ~(1 << (slot & 31))) === 0) this.summary[w >> 5] &= ~(1 << (w & 31));
  }

  /** Moves overflow events that now fall inside the ring into it. */
  private migrate(): void {
    const ov = this.overflow;
    const end = (this.cur + this.nb) * 2 ** this.shift;
    while (ov.size > 0 && ov.topTime() < end) {
      const t = ov.topTime(), k = ov.topKey(), ev = ov.pop();
      this.insert(t, k, ev, Math.floor(t * this.invW));
    }
  }

  /**
   * The first non-empty bucket at most `limitBucket` (absolute), the ring moved to it (pulling
   * in overflow events the move brings inside the ring); NONE when there is none, the ring
   * then moved to limitBucket.
   */
  private findBucket(limitBucket: number): number {
    for (;;) {
      const b = this.scan(this.cur);
      const ovB = this.overflow.size > 0 ? Math.floor(this.overflow.topTime() * this.invW) : Infinity;
      // overflow events lie beyond the ring, so a ring event always comes first
      const next = b !== Infinity ? b : ovB;
      if (next > limitBucket) {
        if (limitBucket > this.cur) this.moveTo(limitBucket);
        return NONE;
      }
      if (next !== this.cur) this.moveTo(next);
      if (next === b) return b;
    }
  }

  private moveTo(b: number): void {
    if (b > this.cur + 1) this.skipped += b - this.cur - 1;
    this.cur = b;
    this.migrate();
  }

  /** The first non-empty ring bucket at or after absolute bucket `from` (within the ring), or Infinity. */
  private scan(from: number): number {
    const nb = this.nb, mask = this.mask, bits = this.bits, summary = this.summary;
    if (from >= this.cur + nb) return Infinity;
    let slot = from & mask;
    let dist = 0;
    const maxDist = this.cur + nb - from;
    // the rest of the first word
    let w = slot >> 5;
    let m = bits[w] & (-1 << (slot & 31));
    if (m !== 0) {
      const d = (w << 5) + 31 - Math.clz32(m & -m) - slot;
      return d < maxDist ? from + d : Infinity;
    }
    dist = 32 - (slot & 31);
    // whole words, skipping empty ones through the summary
    while (dist < maxDist) {
      slot = (from + dist) & mask; // word aligned
      w = slot >> 5;
      if (bits[w] !== 0) {
        const d = dist + 31 - Math.clz32(bits[w] & -bits[w]);
        return d < maxDist ? from + d : Infinity;
      }
      const sw = w >> 5;
      const sm = summary[sw] & (-1 << (w & 31)) & ~(1 << (w & 31));
      if (sm !== 0) {
        const w2 = (sw << 5) + 31 - Math.clz32(sm & -sm);
        dist += (w2 - w) << 5;
      } else dist += (32 - (w & 31)) << 5;
    }
    return Infinity;
  }

  /** Adapts the bucket width: one to four distinct times per bucket, few empty buckets between. */
  private review(): void {
    const perBucket = this.distinct / Math.max(1, this.bucketsPopped);
    const skippedPerPop = this.skipped / Math.max(1, this.distinct);
    this.pops = this.distinct = this.bucketsPopped = this.skipped = 0;
    let shift = this.shift;
    if (perBucket > 4 && shift > 0) shift--;
    else if (perBucket < 1.5 && skippedPerPop > 16 && shift < 40) shift++;
    if (shift !== this.shift) this.rebuild(shift);
  }

  private rebuild(shift: number): void {
    const keep: number[] = [];
    for (let s = 0; s < this.nb; s++) for (let r = this.head[s]; r !== NONE; r = this.rn[r]) keep.push(r);
    const curTime = this.cur * 2 ** this.shift;
    this.layout(shift);
    this.cur = Math.floor(curTime * this.invW);
    this.lastBucket = -1;
    for (const r of keep) {
      const b = Math.floor(this.rt[r] * this.invW);
      if (b >= this.cur + this.nb) {
        this.overflow.push(this.rt[r], this.rk[r], this.re[r]);
        this.rn[r] = this.free;
        this.free = r;
      } else this.link(r, b);
    }
  }
}
