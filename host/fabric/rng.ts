// Seeded random streams. No Math.random: every stream is derived from (scenario seed, stream
// id) with SplitMix64 (Steele, Lea, Flood 2014), the same derivation as the core's
// assembly/core/rng.ts, and then runs xoshiro128** (Blackman, Vigna 2018), the 32-bit member
// of the family. The fabric's streams are seeded here and drawn in the core
// (assembly/fabric/rng.ts, which also has the ECMP hash); the host draws from its own (a
// scenario's permutation). Many streams live in one Uint32Array (4 words each).

const MASK64 = (1n << 64n) - 1n;

/** SplitMix64 step: the next state and its output, as bigints (seeding only, never per packet). */
function splitmix64(x: bigint): bigint {
  let z = (x + 0x9e3779b97f4a7c15n) & MASK64;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return z ^ (z >> 31n);
}

/** Stream kinds: a stream id is (kind << 28) | index, so kinds never share a stream. */
export const STREAM = {
  /** per directed link: random and Gilbert–Elliott loss draws */
  LINK_LOSS: 1,
  /** per switch: ECN marking draws */
  SWITCH_ECN: 2,
  /** per switch: the ECMP hash seed */
  SWITCH_ECMP: 3,
} as const;

export const streamId = (kind: number, index: number): number => kind * 2 ** 28 + index;

/** 64 well-mixed bits for (seed, stream): what rngSeed in the core mixes, as two u32 words. */
function mix(seed: number, stream: number): bigint {
  return splitmix64(BigInt(seed)) ^ splitmix64((BigInt(stream) * 0xd1b54a32d192ed03n + 1n) & MASK64);
}

/** A 32-bit value derived from (seed, stream): a per-switch hash seed. */
export function derive32(seed: number, stream: number): number {
  return Number(splitmix64(mix(seed, stream)) & 0xffff_ffffn) >>> 0;
}

/** `count` independent xoshiro128** streams in one typed array. */
export class RandomStreams {
  private readonly s: Uint32Array;

  constructor(readonly count: number) {
    this.s = new Uint32Array(4 * Math.max(1, count));
  }

  /** Seeds stream `i` as stream `stream` of scenario seed `seed` (never all-zero state). */
  seed(i: number, seed: number, stream: number): void {
    let x = mix(seed, stream);
    for (let w = 0; w < 4; w += 2) {
      x = splitmix64(x);
      this.s[4 * i + w] = Number(x & 0xffff_ffffn);
      this.s[4 * i + w + 1] = Number(x >> 32n);
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
