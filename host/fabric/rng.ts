// Seeded random streams. No Math.random: every stream is derived from (scenario seed, stream
// id) with SplitMix64 (Steele, Lea, Flood 2014), the same derivation as the core's
// assembly/core/rng.ts, and then runs xoshiro128** (Blackman, Vigna 2018), the 32-bit member
// of the family. The fabric's streams are seeded and drawn in the core (assembly/fabric/rng.ts,
// which also has the ECMP hash), to the words this file's seeding gives (test/fabric-parts.test.ts);
// the host draws from its own (a scenario's permutation). Many streams live in one Uint32Array
// (4 words each).

/**
 * 64-bit words as two u32 halves, (hi, lo), not bigints (seeding 786,432 streams with bigints
 * made 15 M of them). The functions below leave their result in H and L.
 */
let H = 0, L = 0;

/** (H, L) = (ah, al) * (bh, bl) mod 2^64, from 16-bit pieces of the low words (each partial product exact in a double). */
function mul64(ah: number, al: number, bh: number, bl: number): void {
  const a0 = al & 0xffff, a1 = al >>> 16, b0 = bl & 0xffff, b1 = bl >>> 16;
  const mid = a1 * b0 + a0 * b1;
  const low = a0 * b0 + (mid % 0x10000) * 0x10000;
  // ToUint32 (>>> 0) reduces any integer double mod 2^32
  H = (a1 * b1 + Math.floor(mid / 0x10000) + Math.floor(low / 0x1_0000_0000) + Math.imul(ah, bl) + Math.imul(al, bh)) >>> 0;
  L = low >>> 0;
}

/** (H, L) = (h, l) + (bh, bl) mod 2^64. */
function add64(h: number, l: number, bh: number, bl: number): void {
  const low = l + bl;
  H = (h + bh + (low > 0xffff_ffff ? 1 : 0)) >>> 0;
  L = low >>> 0;
}

/** (H, L) = (h, l) ^ ((h, l) >>> k), 0 < k < 32. */
function xorShift(h: number, l: number, k: number): void {
  H = (h ^ (h >>> k)) >>> 0;
  L = (l ^ ((l >>> k) | (h << (32 - k)))) >>> 0;
}

/** (H, L) = the SplitMix64 output (Steele, Lea, Flood 2014) for state (h, l); its next state is that plus the golden gamma. */
function splitmix64(h: number, l: number): void {
  add64(h, l, 0x9e3779b9, 0x7f4a7c15);
  xorShift(H, L, 30);
  mul64(H, L, 0xbf58476d, 0x1ce4e5b9);
  xorShift(H, L, 27);
  mul64(H, L, 0x94d049bb, 0x133111eb);
  xorShift(H, L, 31);
}

/** SplitMix64's output for the 64-bit state `x` (a bigint below 2^64), for tests against its reference values. */
export function splitmix64Of(x: bigint): bigint {
  splitmix64(Number(x >> 32n), Number(x & 0xffff_ffffn));
  return (BigInt(H) << 32n) | BigInt(L);
}

/** Stream kinds (layouts/fabric.json STREAM): a stream id is (kind << 28) | index, so kinds never share a stream. */
export { STREAM } from "../generated/layouts.js";

export const streamId = (kind: number, index: number): number => kind * 2 ** 28 + index;

/** (H, L) = 64 well-mixed bits for (seed, stream) (each below 2^53): what rngSeed in the core mixes. */
function mix(seed: number, stream: number): void {
  splitmix64(Math.floor(seed / 0x1_0000_0000), seed >>> 0);
  const ah = H, al = L;
  // stream x 0xd1b54a32d192ed03 + 1 mod 2^64
  mul64(Math.floor(stream / 0x1_0000_0000) >>> 0, stream >>> 0, 0xd1b54a32, 0xd192ed03);
  add64(H, L, 0, 1);
  splitmix64(H, L);
  H = (H ^ ah) >>> 0;
  L = (L ^ al) >>> 0;
}

/** A 32-bit value derived from (seed, stream): a per-switch hash seed. */
export function derive32(seed: number, stream: number): number {
  mix(seed, stream);
  splitmix64(H, L);
  return L;
}

/** `count` independent xoshiro128** streams in one typed array. */
export class RandomStreams {
  private readonly s: Uint32Array;

  constructor(readonly count: number) {
    this.s = new Uint32Array(4 * Math.max(1, count));
  }

  /** Seeds stream `i` as stream `stream` of scenario seed `seed` (never all-zero state). */
  seed(i: number, seed: number, stream: number): void {
    mix(seed, stream);
    for (let w = 0; w < 4; w += 2) {
      splitmix64(H, L);
      this.s[4 * i + w] = L;
      this.s[4 * i + w + 1] = H;
    }
    if ((this.s[4 * i] | this.s[4 * i + 1] | this.s[4 * i + 2] | this.s[4 * i + 3]) === 0) this.s[4 * i] = 1;
  }

  /** The next u32 of stream `i` (xoshiro128**: Blackman and Vigna, "Scrambled linear pseudorandom number generators", 2018). */
  next(i: number): number {
    const s = this.s, o = 4 * i;
    const s0 = s[o], s1 = s[o + 1], s2 = s[o + 2] ^ s0, s3 = s[o + 3] ^ s1;
    const r = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    s[o + 1] = s1 ^ s2;
    s[o] = s0 ^ s3;
    s[o + 2] = s2 ^ (s1 << 9);
    s[o + 3] = rotl(s3, 11);
    return r;
  }

  /** True with probability `threshold` / 2^32 (see probabilityThreshold). */
  chance(i: number, threshold: number): boolean {
    return this.next(i) < threshold;
  }

  /** Stream `i`'s four state words, for tests and snapshots. */
  state(i: number): number[] {
    return Array.from(this.s.subarray(4 * i, 4 * i + 4));
  }

  /** Sets stream `i`'s state (not all zero), for tests and snapshots. */
  setState(i: number, words: readonly number[]): void {
    this.s.set(words, 4 * i);
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/**
 * A probability in [0, 1] as a u32 threshold: a draw u < threshold happens with probability
 * threshold / 2^32, within 2^-32 of p (1 → always, since the threshold is then 2^32).
 */
export function probabilityThreshold(p: number): number {
  return Math.round(Math.min(1, Math.max(0, p)) * 2 ** 32);
}
