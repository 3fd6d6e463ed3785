import { describe, it, expect } from "vitest";
import { instantiateCore } from "../host/wasm.js";
import { coreModule } from "../host/platform/node.js";

// Reference SplitMix64 seeding + xoshiro256** in BigInt, written from the papers, to check the core's streams.
const M = (1n << 64n) - 1n;
const splitmix = (x: bigint) => {
  let z = (x + 0x9e3779b97f4a7c15n) & M;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & M;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & M;
  return z ^ (z >> 31n);
};
const rotl = (x: bigint, k: bigint) => ((x << k) | (x >> (64n - k))) & M;
function reference(seed: bigint, stream: bigint, n: number): bigint[] {
  let x = splitmix(seed) ^ splitmix((stream * 0xd1b54a32d192ed03n + 1n) & M);
  const s = [0n, 0n, 0n, 0n].map(() => (x = splitmix(x)));
  const out: bigint[] = [];
  for (let k = 0; k < n; k++) {
    out.push((rotl((s[1] * 5n) & M, 7n) * 9n) & M);
    const t = (s[1] << 17n) & M;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45n);
  }
  return out;
}

describe("seeded random streams", () => {
  it("match a reference xoshiro256** seeded by SplitMix64 from (seed, stream)", async () => {
    const core = await instantiateCore(coreModule());
    const scratch = core.scratchAlloc(64);
    const sample = (seed: bigint, stream: bigint, i: number) => BigInt.asUintN(64, core.rngSample(scratch, seed, stream, i));
    for (const [seed, stream] of [[1n, 0n], [42n, 7n], [M, 3n]] as const) {
      const ref = reference(seed, stream, 5);
      for (let i = 0; i < 5; i++) expect(sample(seed, stream, i)).toBe(ref[i]);
    }
    // streams of one seed, and one stream of two seeds, are different sequences
    expect(sample(1n, 0n, 0)).not.toBe(sample(1n, 1n, 0));
    expect(sample(1n, 0n, 0)).not.toBe(sample(2n, 0n, 0));
  });
});

describe("each device and block draws its own stream", () => {
  it("derives stream (deviceId << 8 | block) of the scenario seed, so devices never draw the same numbers", async () => {
    const { Device } = await import("../host/device.js");
    const { RNG_BLOCK } = await import("../host/generated/layouts.js");
    const draws = async (seed: number, deviceId: number) => {
      const dev = await Device.create(coreModule(), { engines: 1, seed, deviceId });
      return Object.values(RNG_BLOCK).map((b) => [0, 1, 2].map(() => BigInt.asUintN(64, dev.core.rngNextOf(dev.handle, b))));
    };
    const d7 = await draws(42, 7), d8 = await draws(42, 8), again = await draws(42, 7);
    expect(again).toEqual(d7);
    for (const [b, values] of d7.entries()) {
      expect(values).toEqual(reference(42n, (7n << 8n) | BigInt(b), 3));
      expect(values).not.toEqual(d8[b]);
    }
    expect(new Set(d7.flat()).size).toBe(9); // no two blocks share values
  });
});
