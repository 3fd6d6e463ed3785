// The fabric's random draws and ECMP hash, the host's host/fabric/rng.ts in the core: each
// xoshiro128** stream is seeded (SplitMix64 from (scenario seed, stream id), as the host's
// RandomStreams.seed) into the table at FAB.rng, and drawn from there; each switch's ECMP seed
// is derived alike (the host's derive32). The hash is MurmurHash3 of the 5-tuple, and a switch
// picks an ECMP member by fmix32(hash ^ its seed) (docs/fabric.md).

import { splitmix, rngMix } from "../core/rng";

/** Stream `index` of kind `kind` (layouts/fabric.json STREAM): kind x 2^28 + index, as the host's streamId (host/fabric/rng.ts). */
@inline export function streamId(kind: u32, index: u32): u64 { return (<u64>kind << 28) + <u64>index; }

/** Seeds the xoshiro128** stream whose four state words are at `s` as stream `stream` of scenario seed `seed` (never all zero). */
export function rngSeed32(s: usize, seed: u64, stream: u64): void {
  const a = splitmix(rngMix(seed, stream)), b = splitmix(a);
  store<u64>(s, a);
  store<u64>(s, b, 8);
  if ((a | b) == 0) store<u32>(s, 1);
}

/** A 32-bit value derived from (seed, stream): a switch's ECMP seed. */
export function derive32(seed: u64, stream: u64): u32 {
  return <u32>splitmix(rngMix(seed, stream));
}

/** The next u32 of the xoshiro128** stream whose four state words are at `s`. */
export function rngNext32(s: usize): u32 {
  const s0 = load<u32>(s), s1 = load<u32>(s, 4);
  const s2 = load<u32>(s, 8) ^ s0, s3 = load<u32>(s, 12) ^ s1;
  const r = rotl<u32>(s1 * 5, 7) * 9;
  store<u32>(s, s1 ^ s2, 4);
  store<u32>(s, s0 ^ s3);
  store<u32>(s, s2 ^ (s1 << 9), 8);
  store<u32>(s, rotl<u32>(s3, 11), 12);
  return r;
}

/** The murmur3 finaliser (fmix32). */
@inline export function fmix32(h: u32): u32 {
  h ^= h >>> 16;
  h *= 0x85ebca6b;
  h ^= h >>> 13;
  h *= 0xc2b2ae35;
  h ^= h >>> 16;
  return h;
}

@inline function murmurRound(h: u32, k: u32): u32 {
  k *= 0xcc9e2d51;
  k = rotl<u32>(k, 15);
  k *= 0x1b873593;
  h ^= k;
  h = rotl<u32>(h, 13);
  return h * 5 + 0xe6546b64;
}

/** MurmurHash3_x86_32 of (src, dst, sport << 16 | dport, proto), seed 0: hashTuple in host/fabric/rng.ts. */
export function hashTuple(src: u32, dst: u32, sport: u32, dport: u32, proto: u32): u32 {
  let h: u32 = 0;
  h = murmurRound(h, src);
  h = murmurRound(h, dst);
  h = murmurRound(h, ((sport & 0xffff) << 16) | (dport & 0xffff));
  h = murmurRound(h, proto & 0xff);
  return fmix32(h ^ 16);
}

/** Member of an ECMP group of `count` at a switch with seed `seed` (Lemire's multiply-shift). */
@inline export function ecmpPick(tupleHash: u32, seed: u32, count: u32): u32 {
  return <u32>((<u64>fmix32(tupleHash ^ seed) * <u64>count) >> 32);
}
