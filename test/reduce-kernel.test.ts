import { describe, it, expect, beforeAll } from "vitest";
import { instantiateCore, type MenicExports } from "../host/wasm.js";
import { coreModule } from "../host/platform/node.js";
import {
  ReduceOp, ReduceType, ELEMENT_BYTES, reduceReference,
  f16ToF32, f32ToF16, bf16ToF32, f32ToBf16, bitsToF32, f32Bits,
} from "../host/reduce/reference.js";

// The SIMD reduction kernel (assembly/mem/reduce.ts) against the scalar reference
// (host/reduce/reference.ts), bit for bit; the reference itself against hand-computed bit
// patterns, and the kernel against hand-computed results on the edge cases of docs/reduce.md.

const OPS = [ReduceOp.Sum, ReduceOp.Max, ReduceOp.Min, ReduceOp.Prod] as const;
const TYPES = [ReduceType.F32, ReduceType.F16, ReduceType.Bf16, ReduceType.I32] as const;
const OP_NAME = ["sum", "max", "min", "prod"];
const TYPE_NAME = ["f32", "f16", "bf16", "i32"];
// 0 writes nothing; 2..14 only the scalar tail; 16 one SIMD step; 30 a step and a 14-byte
// tail; 48 and 60 the two-step k = 2 loop, then a single step, then a tail; 1036 long
const LENGTHS = [0, 2, 4, 6, 12, 16, 30, 48, 60, 1024 + 12];

// Mulberry32 (T. Ettinger, public domain): a small deterministic u32 stream for test inputs.
function mulberry32(seed: number): () => number {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** Random element bits: a quarter arbitrary bit patterns (NaN, inf, subnormals included), the
 * rest values near 1 in magnitude so that sums and products round rather than saturate. */
function randomElement(rnd: () => number, dtype: ReduceType): number {
  const r = rnd();
  const wild = (r & 3) === 0;
  const sign = (r >>> 2) & 1;
  const e = (r >>> 3) & 7; // exponent offset -4..3
  switch (dtype) {
    case ReduceType.F32:
      return wild ? rnd() : ((sign << 31) | ((127 - 4 + e) << 23) | (rnd() & 0x7fffff)) >>> 0;
    case ReduceType.F16:
      return wild ? rnd() & 0xffff : (sign << 15) | ((15 - 4 + e) << 10) | (rnd() & 0x3ff);
    case ReduceType.Bf16:
      return wild ? rnd() & 0xffff : (sign << 15) | ((127 - 4 + e) << 7) | (rnd() & 0x7f);
    default:
      return wild ? rnd() : ((rnd() % 2001) - 1000) >>> 0;
  }
}

function pack(dtype: ReduceType, elements: number[]): Uint8Array {
  const size = ELEMENT_BYTES[dtype];
  const out = new Uint8Array(elements.length * size);
  const v = new DataView(out.buffer);
  elements.forEach((x, i) => (size === 4 ? v.setUint32(i * 4, x >>> 0, true) : v.setUint16(i * 2, x, true)));
  return out;
}

function unpack(dtype: ReduceType, bytes: Uint8Array): number[] {
  const size = ELEMENT_BYTES[dtype];
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: number[] = [];
  for (let at = 0; at < bytes.length; at += size) out.push(size === 4 ? v.getUint32(at, true) : v.getUint16(at, true));
  return out;
}

const hex = (x: number, size: number) => "0x" + (x >>> 0).toString(16).padStart(size * 2, "0");

/** Buffer.compare, reporting the first element that differs (with its inputs) when not equal. */
function expectSameBytes(got: Uint8Array, want: Uint8Array, dtype: ReduceType, srcs: Uint8Array[], label: string): void {
  if (Buffer.compare(got, want) === 0) return;
  const size = ELEMENT_BYTES[dtype];
  const g = unpack(dtype, got), w = unpack(dtype, want);
  const i = g.findIndex((x, j) => x !== w[j]);
  const ins = srcs.map((s) => hex(unpack(dtype, s)[i], size)).join(", ");
  expect(hex(g[i], size), `${label}: element ${i} of (${ins})`).toBe(hex(w[i], size));
  expect(Buffer.compare(got, want), label).toBe(0);
}

// One core per file; its buffers are allocated once: 9 slots (8 sources and a destination),
// each with guard bytes on both sides, and the table of source addresses.
const SLOT = 4096;
const GUARD = 64;
const SENTINEL = 0xa5;
let core: MenicExports;
let table = 0;
let slots: number[] = [];

beforeAll(async () => {
  core = await instantiateCore(coreModule());
  table = core.scratchAlloc(8 * 4);
  const base = core.scratchAlloc(9 * SLOT);
  slots = Array.from({ length: 9 }, (_, j) => base + j * SLOT + GUARD);
});

/**
 * Runs the kernel on `srcs`, placed `offset` bytes past the slots' (16-aligned) starts; the
 * destination is slot 8, or slot 0 (the first source) when `inPlace`. Checks that nothing
 * outside the destination's `bytes` was written. Returns a copy of the destination.
 */
function runKernel(srcs: Uint8Array[], op: ReduceOp, dtype: ReduceType, opts: { inPlace?: boolean; offset?: number } = {}): Uint8Array {
  const off = opts.offset ?? 0;
  const bytes = srcs[0].length;
  let mem = new Uint8Array(core.memory.buffer);
  const tv = new DataView(core.memory.buffer);
  const dstSlot = opts.inPlace ? 0 : 8;
  mem.fill(SENTINEL, slots[dstSlot] - GUARD, slots[dstSlot] + SLOT - GUARD);
  srcs.forEach((s, j) => {
    mem.set(s, slots[j] + off);
    tv.setUint32(table + 4 * j, slots[j] + off, true);
  });
  const dst = slots[dstSlot] + off;
  core.reduceKernel(dst, table, srcs.length, bytes, op, dtype);
  mem = new Uint8Array(core.memory.buffer);
  const before = mem.subarray(slots[dstSlot] - GUARD, dst);
  const after = mem.subarray(dst + bytes, slots[dstSlot] + SLOT - GUARD);
  if (!opts.inPlace) {
    expect(before.every((b) => b === SENTINEL) && after.every((b) => b === SENTINEL), "kernel wrote outside the destination").toBe(true);
  }
  return mem.slice(dst, dst + bytes);
}

/** Kernel vs reference on `srcs`, into a separate destination and in place over src0. */
function check(srcs: Uint8Array[], op: ReduceOp, dtype: ReduceType, label: string, offset = 0): void {
  const want = reduceReference(srcs, op, dtype);
  expectSameBytes(runKernel(srcs, op, dtype, { offset }), want, dtype, srcs, label);
  expectSameBytes(runKernel(srcs, op, dtype, { offset, inPlace: true }), want, dtype, srcs, `${label} in place`);
}

describe("reduction reference conversions", () => {
  it("narrows f32 to f16 with round-to-nearest-even, overflow to inf and subnormals", () => {
    const cases: [number, number][] = [
      [65504, 0x7bff], // largest finite
      [65519, 0x7bff], // below the half-way point
      [65520, 0x7c00], // half-way to 2^16: ties to even, and the even neighbour is inf
      [65536, 0x7c00],
      [1e10, 0x7c00],
      [-65520, 0xfc00],
      [Infinity, 0x7c00],
      [-Infinity, 0xfc00],
      [NaN, 0x7e00],
      [1, 0x3c00],
      [-2, 0xc000],
      [1 + 2 ** -11, 0x3c00], // tie between 0x3c00 (even) and 0x3c01
      [1 + 3 * 2 ** -11, 0x3c02], // tie between 0x3c01 and 0x3c02 (even)
      [1 + 2 ** -11 + 2 ** -20, 0x3c01], // just above the tie
      [2 ** -14, 0x0400], // smallest normal
      [2 ** -14 - 2 ** -24, 0x03ff], // largest subnormal
      [2 ** -24, 0x0001], // smallest subnormal
      [2 ** -25, 0x0000], // tie between 0 (even) and 0x0001
      [3 * 2 ** -25, 0x0002], // tie between 0x0001 and 0x0002 (even)
      [2 ** -25 + 2 ** -40, 0x0001],
      [-(2 ** -24), 0x8001],
      [-0, 0x8000],
      [0, 0x0000],
      [2 ** -14 - 2 ** -25, 0x0400], // tie between 0x03ff and 0x0400 (even): rounds into the normals
    ];
    for (const [x, h] of cases) expect(hex(f32ToF16(x), 2), `f32ToF16(${x})`).toBe(hex(h, 2));
  });

  it("widens f16 to f32 exactly", () => {
    const cases: [number, number][] = [
      [0x0001, 2 ** -24], [0x03ff, 1023 * 2 ** -24], [0x0400, 2 ** -14], [0x7bff, 65504],
      [0x3c00, 1], [0xc000, -2], [0x3555, 0.333251953125], [0x7c00, Infinity], [0xfc00, -Infinity],
    ];
    for (const [h, x] of cases) expect(f16ToF32(h), `f16ToF32(${hex(h, 2)})`).toBe(x);
    expect(Object.is(f16ToF32(0x8000), -0)).toBe(true);
    expect(f16ToF32(0x7e00)).toBeNaN();
    expect(f16ToF32(0xfc01)).toBeNaN();
  });

  it("narrows f32 to bf16 with round-to-nearest-even, overflow to inf and subnormals", () => {
    const cases: [number, number][] = [
      [0x3f800000, 0x3f80], // 1
      [0x3f808000, 0x3f80], // 1 + 2^-8: tie, 0x3f80 is even
      [0x3f818000, 0x3f82], // 1 + 3 * 2^-8: tie, 0x3f82 is even
      [0x3f808001, 0x3f81], // just above the tie
      [0x3f80ffff, 0x3f81],
      [0xbf808000, 0xbf80],
      [0x7f7f7fff, 0x7f7f], // below the tie at the top: largest finite bf16
      [0x7f7f8000, 0x7f80], // tie at the top: rounds to even, which is inf
      [0x7f7fffff, 0x7f80], // largest f32 overflows
      [0xff7fffff, 0xff80],
      [0x00000001, 0x0000], // smallest f32 subnormal
      [0x00008000, 0x0000], // tie, even is 0
      [0x00018000, 0x0002], // tie, even is 2
      [0x00008001, 0x0001],
      [0x007fffff, 0x0080], // largest f32 subnormal rounds up to the smallest normal
      [0x80000000, 0x8000],
      [0x7f800000, 0x7f80],
    ];
    for (const [bits, b] of cases) expect(hex(f32ToBf16(bitsToF32(bits)), 2), `f32ToBf16(${hex(bits, 4)})`).toBe(hex(b, 2));
    expect(f32ToBf16(NaN)).toBe(0x7fc0);
    expect(f32ToBf16(bitsToF32(0xff800001))).toBe(0x7fc0);
  });

  it("widens bf16 to f32 exactly", () => {
    expect(bf16ToF32(0x3f80)).toBe(1);
    expect(bf16ToF32(0x0001)).toBe(2 ** -133);
    expect(bf16ToF32(0x7f7f)).toBe((2 - 2 ** -7) * 2 ** 127);
    expect(bf16ToF32(0xff80)).toBe(-Infinity);
    expect(Object.is(bf16ToF32(0x8000), -0)).toBe(true);
    expect(bf16ToF32(0x7f81)).toBeNaN();
  });

  it("reduces hand-computed cases", () => {
    const r = (dtype: ReduceType, op: ReduceOp, xs: number[]) => unpack(dtype, reduceReference(xs.map((x) => pack(dtype, [x])), op, dtype))[0];
    expect(r(ReduceType.F32, ReduceOp.Sum, [0x4b800000, 0x3f800000, 0x3f800000])).toBe(0x4b800000); // (2^24 + 1) + 1, each rounded
    expect(r(ReduceType.F32, ReduceOp.Sum, [0x3f800000, 0x3f800000, 0x4b800000])).toBe(0x4b800001); // (1 + 1) + 2^24
    expect(r(ReduceType.F32, ReduceOp.Max, [0x80000000, 0x00000000])).toBe(0x00000000);
    expect(r(ReduceType.F32, ReduceOp.Min, [0x00000000, 0x80000000])).toBe(0x80000000);
    expect(r(ReduceType.F32, ReduceOp.Max, [0x3f800000, 0xff800001])).toBe(0x7fc00000);
    expect(r(ReduceType.I32, ReduceOp.Sum, [0x7fffffff, 1])).toBe(0x80000000);
    expect(r(ReduceType.I32, ReduceOp.Prod, [0x10001, 0x10001])).toBe(0x00020001);
  });
});

// Edge values of each type. Pairs of them cover: NaN in every position (quiet and signalling,
// either sign, with payloads), inf - inf, 0 * inf, +-0 in max/min and sums, subnormal sums
// and products, the largest values overflowing, and RNE ties on narrowing (see the
// hand-computed kernel cases below for which pairs make which tie).
const EDGES: Record<ReduceType, number[]> = {
  [ReduceType.F32]: [
    0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0xff7fffff,
    0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7f800001, 0xffa00123, 0x3f800000, 0xbf800000,
    0x3f800001, 0x33800000, 0x34000000, 0x4b800000, 0x3effffff, 0x00000003, 0x3f000000,
  ],
  [ReduceType.F16]: [
    0x0000, 0x8000, 0x0001, 0x8001, 0x0003, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00,
    0xfe01, 0x7c01, 0x7d55, 0x3c00, 0xbc00, 0x3c01, 0x1000, 0x3800, 0x4c00, 0x4bc0, 0x7800,
  ],
  [ReduceType.Bf16]: [
    0x0000, 0x8000, 0x0001, 0x8001, 0x0003, 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0,
    0xffc1, 0x7f81, 0xff81, 0x3f80, 0xbf80, 0x3f81, 0x3b80, 0x3f00, 0x7f00,
  ],
  [ReduceType.I32]: [
    0, 1, 0xffffffff, 0x7fffffff, 0x80000000, 0x10000, 0x10001, 2, 0x40000000, 0xdeadbeef, 0xfffffffe, 0x80000001,
  ],
};

describe("reduction kernel vs reference", () => {
  it("agrees bit for bit on seeded random inputs: every op x dtype x k in {2, 3, 8} x length", () => {
    let cases = 0;
    for (const dtype of TYPES) {
      const size = ELEMENT_BYTES[dtype];
      for (const op of OPS) {
        for (const k of [2, 3, 8]) {
          for (const bytes of LENGTHS) {
            if (bytes % size !== 0) continue;
            const rnd = mulberry32(dtype * 1000 + op * 100 + k * 10 + bytes);
            const srcs = Array.from({ length: k }, () => pack(dtype, Array.from({ length: bytes / size }, () => randomElement(rnd, dtype))));
            check(srcs, op, dtype, `${TYPE_NAME[dtype]}.${OP_NAME[op]} k=${k} bytes=${bytes}`);
            cases++;
          }
        }
      }
    }
    expect(cases).toBe(4 * 3 * (2 * 7 + 2 * 10)); // 7 lengths fit 4-byte elements, all 10 fit 2-byte
  });

  it("agrees on every pair of edge values (k = 2) and on random draws of them (k = 3, 8)", () => {
    for (const dtype of TYPES) {
      const edges = EDGES[dtype];
      const a: number[] = [], b: number[] = [];
      for (const x of edges) for (const y of edges) a.push(x), b.push(y);
      for (const op of OPS) {
        check([pack(dtype, a), pack(dtype, b)], op, dtype, `${TYPE_NAME[dtype]}.${OP_NAME[op]} edge pairs`);
        for (const k of [3, 8]) {
          const rnd = mulberry32(7 + dtype * 10 + op + k * 100);
          const n = 333; // odd: the tail sees edge values too
          const srcs = Array.from({ length: k }, () => pack(dtype, Array.from({ length: n }, () => (rnd() & 1 ? edges[rnd() % edges.length] : randomElement(rnd, dtype)))));
          check(srcs, op, dtype, `${TYPE_NAME[dtype]}.${OP_NAME[op]} k=${k} edge draws`);
        }
      }
    }
  });

  it("agrees on unaligned buffers", () => {
    for (const dtype of TYPES) {
      const size = ELEMENT_BYTES[dtype];
      for (const op of OPS) {
        const rnd = mulberry32(99 + dtype * 4 + op);
        const srcs = Array.from({ length: 3 }, () => pack(dtype, Array.from({ length: 200 / size + 3 }, () => randomElement(rnd, dtype))));
        for (const offset of [2, 6]) check(srcs, op, dtype, `${TYPE_NAME[dtype]}.${OP_NAME[op]} offset ${offset}`, offset);
      }
    }
  });
});

// [dtype, op, inputs, expected output bits], computed by hand from docs/reduce.md.
const HAND: [ReduceType, ReduceOp, number[], number][] = [
  // f32: overflow, invalid operations, NaN propagation and canonicalisation, signed zeros, order
  [ReduceType.F32, ReduceOp.Sum, [0x7f7fffff, 0x7f7fffff], 0x7f800000],
  [ReduceType.F32, ReduceOp.Sum, [0xff7fffff, 0xff7fffff], 0xff800000],
  [ReduceType.F32, ReduceOp.Sum, [0x7f800000, 0xff800000], 0x7fc00000], // inf - inf
  [ReduceType.F32, ReduceOp.Prod, [0x00000000, 0x7f800000], 0x7fc00000], // 0 * inf
  [ReduceType.F32, ReduceOp.Sum, [0xffc00001, 0x3f800000], 0x7fc00000],
  [ReduceType.F32, ReduceOp.Prod, [0x3f800000, 0x7f800001], 0x7fc00000], // signalling
  [ReduceType.F32, ReduceOp.Max, [0x7f800001, 0x3f800000], 0x7fc00000],
  [ReduceType.F32, ReduceOp.Max, [0x7f800000, 0xffc00000], 0x7fc00000],
  [ReduceType.F32, ReduceOp.Min, [0x3f800000, 0xffa00123], 0x7fc00000],
  [ReduceType.F32, ReduceOp.Min, [0xff800000, 0x7fc00000, 0xff800000], 0x7fc00000],
  [ReduceType.F32, ReduceOp.Max, [0x80000000, 0x00000000], 0x00000000],
  [ReduceType.F32, ReduceOp.Max, [0x00000000, 0x80000000], 0x00000000],
  [ReduceType.F32, ReduceOp.Min, [0x00000000, 0x80000000], 0x80000000],
  [ReduceType.F32, ReduceOp.Min, [0x80000000, 0x00000000], 0x80000000],
  [ReduceType.F32, ReduceOp.Sum, [0x80000000, 0x80000000], 0x80000000], // -0 + -0
  [ReduceType.F32, ReduceOp.Sum, [0x80000001, 0x00000001], 0x00000000], // x + -x = +0
  [ReduceType.F32, ReduceOp.Sum, [0x00000001, 0x00000001], 0x00000002], // subnormals, no flush
  [ReduceType.F32, ReduceOp.Prod, [0x00800000, 0x3f000000], 0x00400000], // normal * 0.5 -> subnormal
  [ReduceType.F32, ReduceOp.Sum, [0x4b800000, 0x3f800000, 0x3f800000], 0x4b800000], // left to right
  [ReduceType.F32, ReduceOp.Sum, [0x3f800000, 0x3f800000, 0x4b800000], 0x4b800001],
  [ReduceType.F32, ReduceOp.Max, [0xff800000, 0xff7fffff, 0xbf800000, 0x80000001, 0x80000000, 0x00000000, 0x00000001, 0x3f800000], 0x3f800000],
  // f16: overflow and its half-way point, ties in the normals and the subnormals, f32 accumulation
  [ReduceType.F16, ReduceOp.Sum, [0x7bff, 0x7bff], 0x7c00],
  [ReduceType.F16, ReduceOp.Sum, [0x7bff, 0x4c00], 0x7c00], // 65504 + 16 = 65520: tie, to inf
  [ReduceType.F16, ReduceOp.Sum, [0x7bff, 0x4bc0], 0x7bff], // 65519.5
  [ReduceType.F16, ReduceOp.Sum, [0xfbff, 0xcc00], 0xfc00],
  [ReduceType.F16, ReduceOp.Sum, [0x7bff, 0x7bff, 0xfbff, 0xfbff], 0x0000], // no overflow in f32
  [ReduceType.F16, ReduceOp.Sum, Array(8).fill(0x7800), 0x7c00], // 8 * 32768
  [ReduceType.F16, ReduceOp.Sum, [0x3c00, 0x1000], 0x3c00], // 1 + 2^-11: tie, even below
  [ReduceType.F16, ReduceOp.Sum, [0x3c01, 0x1000], 0x3c02], // tie, even above
  [ReduceType.F16, ReduceOp.Prod, [0x0001, 0x3800], 0x0000], // 2^-25: tie, even is 0
  [ReduceType.F16, ReduceOp.Prod, [0x0003, 0x3800], 0x0002], // 1.5 * 2^-24: tie, even is 2
  [ReduceType.F16, ReduceOp.Prod, [0x8001, 0x3800], 0x8000], // -0
  [ReduceType.F16, ReduceOp.Sum, [0x03ff, 0x0001], 0x0400], // subnormal + subnormal = smallest normal
  [ReduceType.F16, ReduceOp.Sum, [0x0001, 0x8001], 0x0000],
  [ReduceType.F16, ReduceOp.Sum, [0x7c01, 0x3c00], 0x7e00], // signalling NaN
  [ReduceType.F16, ReduceOp.Max, [0xfe01, 0xfc00], 0x7e00],
  [ReduceType.F16, ReduceOp.Min, [0x3c00, 0x7d55], 0x7e00],
  [ReduceType.F16, ReduceOp.Sum, [0x7c00, 0xfc00], 0x7e00],
  [ReduceType.F16, ReduceOp.Prod, [0x7c00, 0x0000], 0x7e00],
  [ReduceType.F16, ReduceOp.Max, [0x8000, 0x0000], 0x0000],
  [ReduceType.F16, ReduceOp.Min, [0x0000, 0x8000], 0x8000],
  [ReduceType.F16, ReduceOp.Max, [0xfc00, 0x8001, 0xbc00], 0x8001],
  // bf16
  [ReduceType.Bf16, ReduceOp.Sum, [0x3f80, 0x3b80], 0x3f80], // 1 + 2^-8: tie, even below
  [ReduceType.Bf16, ReduceOp.Sum, [0x3f81, 0x3b80], 0x3f82], // tie, even above
  [ReduceType.Bf16, ReduceOp.Sum, [0x7f7f, 0x7f7f], 0x7f80],
  [ReduceType.Bf16, ReduceOp.Sum, [0x7f7f, 0x7b00], 0x7f80], // f32 0x7f7f8000: tie, even is inf
  [ReduceType.Bf16, ReduceOp.Sum, [0x7f7e, 0x7b00], 0x7f7e], // f32 0x7f7e8000: tie, even is finite
  [ReduceType.Bf16, ReduceOp.Prod, [0x0001, 0x3f00], 0x0000], // f32 0x00008000: tie, even is 0
  [ReduceType.Bf16, ReduceOp.Prod, [0x0003, 0x3f00], 0x0002], // f32 0x00018000: tie, even is 2
  [ReduceType.Bf16, ReduceOp.Sum, [0x0001, 0x0001], 0x0002],
  [ReduceType.Bf16, ReduceOp.Sum, [0x007f, 0x0001], 0x0080],
  [ReduceType.Bf16, ReduceOp.Sum, [0x7f81, 0x3f80], 0x7fc0],
  [ReduceType.Bf16, ReduceOp.Sum, [0xff80, 0x7f80], 0x7fc0],
  [ReduceType.Bf16, ReduceOp.Max, [0x3f80, 0xffc1], 0x7fc0],
  [ReduceType.Bf16, ReduceOp.Min, [0x0000, 0x8000], 0x8000],
  [ReduceType.Bf16, ReduceOp.Max, [0x8000, 0x0000], 0x0000],
  // i32: wrapping sum and product, signed max and min
  [ReduceType.I32, ReduceOp.Sum, [0x7fffffff, 1], 0x80000000],
  [ReduceType.I32, ReduceOp.Sum, [0xffffffff, 1], 0x00000000],
  [ReduceType.I32, ReduceOp.Sum, [0x80000000, 0xffffffff], 0x7fffffff],
  [ReduceType.I32, ReduceOp.Prod, [0x10000, 0x10000], 0x00000000],
  [ReduceType.I32, ReduceOp.Prod, [0x7fffffff, 2], 0xfffffffe],
  [ReduceType.I32, ReduceOp.Prod, [0xffffffff, 0xffffffff, 0x80000000], 0x80000000],
  [ReduceType.I32, ReduceOp.Max, [0x80000000, 0x7fffffff], 0x7fffffff],
  [ReduceType.I32, ReduceOp.Max, [0xffffffff, 0xfffffffe], 0xffffffff],
  [ReduceType.I32, ReduceOp.Min, [0xffffffff, 1], 0xffffffff],
  [ReduceType.I32, ReduceOp.Min, [0, 0x80000000, 0x7fffffff], 0x80000000],
];

describe("reduction kernel on hand-computed cases", () => {
  it("gives the expected bits in the SIMD body and in the tail, and so does the reference", () => {
    for (const [dtype, op, xs, want] of HAND) {
      const size = ELEMENT_BYTES[dtype];
      // the case at every position of two SIMD steps and a tail element
      const n = 32 / size + 1;
      const srcs = xs.map((x) => pack(dtype, Array(n).fill(x)));
      const label = `${TYPE_NAME[dtype]}.${OP_NAME[op]}(${xs.map((x) => hex(x, size)).join(", ")})`;
      const got = unpack(dtype, runKernel(srcs, op, dtype));
      expect(got.map((x) => hex(x, size)), label).toEqual(Array(n).fill(hex(want, size)));
      expect(hex(unpack(dtype, reduceReference(srcs, op, dtype))[0], size), `reference ${label}`).toBe(hex(want, size));
    }
  });

  it("writes nothing for zero bytes, an out-of-range k, op or dtype, or a trailing partial element", () => {
    const srcs = [pack(ReduceType.F32, [1, 2, 3, 4].map(f32Bits)), pack(ReduceType.F32, [5, 6, 7, 8].map(f32Bits))];
    let mem = new Uint8Array(core.memory.buffer);
    const tv = new DataView(core.memory.buffer);
    srcs.forEach((s, j) => (mem.set(s, slots[j]), tv.setUint32(table + 4 * j, slots[j], true)));
    mem.fill(SENTINEL, slots[8], slots[8] + 64);
    core.reduceKernel(slots[8], table, 2, 0, ReduceOp.Sum, ReduceType.F32);
    core.reduceKernel(slots[8], table, 1, 16, ReduceOp.Sum, ReduceType.F32);
    core.reduceKernel(slots[8], table, 9, 16, ReduceOp.Sum, ReduceType.F32);
    core.reduceKernel(slots[8], table, 2, 16, 4, ReduceType.F32);
    core.reduceKernel(slots[8], table, 2, 16, ReduceOp.Sum, 4);
    mem = new Uint8Array(core.memory.buffer);
    expect(mem.subarray(slots[8], slots[8] + 64).every((b) => b === SENTINEL)).toBe(true);
    // 7 bytes of f32: one element written (1 + 5 = 6 = 0x40c00000), the last 3 bytes left alone
    core.reduceKernel(slots[8], table, 2, 7, ReduceOp.Sum, ReduceType.F32);
    core.reduceKernel(slots[8] + 16, table, 2, 3, ReduceOp.Sum, ReduceType.Bf16);
    mem = new Uint8Array(core.memory.buffer);
    expect(new DataView(mem.buffer).getUint32(slots[8], true)).toBe(0x40c00000);
    expect(mem.subarray(slots[8] + 4, slots[8] + 16).every((b) => b === SENTINEL)).toBe(true);
    expect(new DataView(mem.buffer).getUint16(slots[8] + 16, true)).toBe(0x0000); // low halves of 1.0 and 5.0: bf16 +0
    expect(mem.subarray(slots[8] + 18, slots[8] + 64).every((b) => b === SENTINEL)).toBe(true);
  });
});
