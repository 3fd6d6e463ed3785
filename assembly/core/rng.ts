// Seeded random streams. Every stream is derived from the scenario seed and a stream id with
// SplitMix64 (Steele, Lea, Flood 2014), and then runs xoshiro256** (Blackman, Vigna 2018).
// The state is plain data in the device arena, so it is saved and restored with the device.

import { Device } from "./device";
import { RNG_BLOCK_ENGINES } from "../generated/layouts";

/** Random streams per device: one per RNG_BLOCK (layouts/device.json). */
export const RNG_BLOCKS: u32 = RNG_BLOCK_ENGINES + 1;

@unmanaged export class Rng {
  s0: u64;
  s1: u64;
  s2: u64;
  s3: u64;
}

/** SplitMix64's output for state `x` (the next state is x + the golden gamma). */
@inline export function splitmix(x: u64): u64 {
  let z = x + 0x9e3779b97f4a7c15;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

export const RNG_STRIDE: usize = (offsetof<Rng>() + 15) & ~(<usize>15);

/** The stream of `block` of device `deviceId`: distinct for every (device, block). */
@inline export function rngStreamOf(deviceId: u32, block: u32): u64 {
  return (<u64>deviceId << 8) | <u64>block;
}

/** Device `dev`'s random stream for `block` (RNG_BLOCK_*), seeded by create.ts. */
@inline export function rngOf(dev: Device, block: u32): Rng {
  return changetype<Rng>(dev.rng + <usize>block * RNG_STRIDE);
}

/** 64 well-mixed bits for stream `stream` of scenario seed `seed`, from which its state is drawn. */
@inline export function rngMix(seed: u64, stream: u64): u64 {
  return splitmix(seed) ^ splitmix(stream * 0xd1b54a32d192ed03 + 1);
}

/** Seeds `r` as stream `stream` of scenario seed `seed`; streams never share state. */
export function rngSeed(r: Rng, seed: u64, stream: u64): void {
  let x = rngMix(seed, stream);
  r.s0 = x = splitmix(x);
  r.s1 = x = splitmix(x);
  r.s2 = x = splitmix(x);
  r.s3 = splitmix(x);
}

@inline function rotl(x: u64, k: u64): u64 {
  return (x << k) | (x >> (64 - k));
}

/** A uniform draw in [0, 1) from stream `r`: the top 53 bits of its next value. */
export function rngUniform(r: Rng): f64 {
  return <f64>(rngNext(r) >> 11) / 9007199254740992.0; // 2^53
}

export function rngNext(r: Rng): u64 {
  const result = rotl(r.s1 * 5, 7) * 9;
  const t = r.s1 << 17;
  r.s2 ^= r.s0;
  r.s3 ^= r.s1;
  r.s1 ^= r.s2;
  r.s0 ^= r.s3;
  r.s2 ^= t;
  r.s3 = rotl(r.s3, 45);
  return result;
}
