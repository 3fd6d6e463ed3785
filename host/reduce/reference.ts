// Scalar reference for the reduction block's arithmetic (docs/reduce.md), written apart from
// the SIMD kernel (assembly/reduce.ts) so that tests can compare the two bit for bit. It
// favours plainness over speed: one element at a time, f32 arithmetic as Math.fround of the
// double result (exact for + and x: a double holds every f32 product exactly and rounds sums
// innocuously, 53 >= 2*24 + 2), and conversions by explicit arithmetic on exponent and
// mantissa rather than the kernel's bit tricks. Platform-neutral: no Node APIs.

import { REDUCE_OP, DTYPE } from "../generated/layouts.js";

// The op and dtype codes: REDUCE_OP and DTYPE of layouts/verbs.json (generated views).
export const ReduceOp = { Sum: REDUCE_OP.SUM, Max: REDUCE_OP.MAX, Min: REDUCE_OP.MIN, Prod: REDUCE_OP.PROD } as const;
export type ReduceOp = (typeof ReduceOp)[keyof typeof ReduceOp];
export const ReduceType = { F32: DTYPE.F32, F16: DTYPE.F16, Bf16: DTYPE.BF16, I32: DTYPE.I32 } as const;
export type ReduceType = (typeof ReduceType)[keyof typeof ReduceType];

/** Bytes per element of each ReduceType. */
export const ELEMENT_BYTES: Record<ReduceType, number> = { 0: 4, 1: 2, 2: 2, 3: 4 };

export const F32_CANON_NAN = 0x7fc00000;
export const F16_CANON_NAN = 0x7e00;
export const BF16_CANON_NAN = 0x7fc0;

// One 4-byte scratch seen as an f32 and as a u32 (both in the platform's byte order, so the
// bits mean the same). These two went through a DataView (setFloat32, getUint32) until a bf16
// all-reduce's reference came out wrong in some processes and right in others (Node 20: the
// same run and inputs; one element's high byte 0x00 where the device had 0x40), never with V8's
// optimizing compiler off (--no-opt). With the typed arrays, 8 processes of 8 agree with the
// device (test/compute-interference.test.ts had failed on this, seemingly at random).
const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/** The IEEE binary32 bits of `x` rounded to f32 (a NaN gives whatever bits the engine picks). */
export function f32Bits(x: number): number {
  scratchF32[0] = x;
  return scratchU32[0]!;
}

/** The f32 value of 32 bits `b`. */
export function bitsToF32(b: number): number {
  scratchU32[0] = b >>> 0;
  return scratchF32[0]!;
}

/** Rounds a non-negative number to the nearest integer, ties to even. */
function roundHalfEven(q: number): number {
  const f = Math.floor(q);
  const d = q - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/** The value of IEEE binary16 bits `h`, exactly (subnormals included). */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0x1f) return mant !== 0 ? NaN : sign * Infinity;
  if (exp === 0) return sign * mant * 2 ** -24; // subnormal or zero (sign * 0 keeps -0)
  return sign * (1024 + mant) * 2 ** (exp - 25);
}

/**
 * The binary16 bits nearest to `x` (first rounded to f32, since the block always narrows
 * from f32): round to nearest, ties to even; at or beyond 65520 (half-way from the largest
 * finite value 65504 to 2^16) gives inf; below 2^-14 gives a subnormal; NaN gives 0x7e00.
 */
export function f32ToF16(x: number): number {
  x = Math.fround(x);
  if (Number.isNaN(x)) return F16_CANON_NAN;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a >= 65520) return sign | 0x7c00;
  if (a < 2 ** -14) return sign | roundHalfEven(a / 2 ** -24); // may round up to 0x400, the smallest normal
  let e = -14; // 2^e <= a < 2^(e+1)
  while (a >= 2 ** (e + 1)) e++;
  let q = roundHalfEven(a / 2 ** (e - 10)); // 1024 <= q <= 2048
  if (q === 2048) {
    q = 1024;
    e++;
  }
  return sign | ((e + 15) << 10) | (q - 1024);
}

/** The value of bfloat16 bits `b` (the top half of an f32), exactly. */
export function bf16ToF32(b: number): number {
  return bitsToF32((b & 0xffff) << 16);
}

/**
 * The bfloat16 bits nearest to `x` (first rounded to f32): the top 16 bits of the f32, rounded
 * to nearest by the 16 dropped bits, ties to even; rounding up past the largest finite value
 * gives inf; NaN gives 0x7fc0.
 */
export function f32ToBf16(x: number): number {
  x = Math.fround(x);
  if (Number.isNaN(x)) return BF16_CANON_NAN;
  const bits = f32Bits(x);
  let hi = bits >>> 16;
  const dropped = bits & 0xffff;
  if (dropped > 0x8000 || (dropped === 0x8000 && (hi & 1) === 1)) hi++; // a carry into the exponent is right
  return hi & 0xffff;
}

/** One f32 combining step, as IEEE binary32 arithmetic and wasm f32.max/min do it. */
function combineFloat(op: ReduceOp, a: number, b: number): number {
  if (Number.isNaN(a) || Number.isNaN(b)) return NaN;
  switch (op) {
    case ReduceOp.Sum:
      return Math.fround(a + b);
    case ReduceOp.Prod:
      return Math.fround(a * b);
    case ReduceOp.Max:
      if (a === b) return Object.is(a, -0) ? b : a; // max(-0, +0) = +0
      return a > b ? a : b;
    case ReduceOp.Min:
      if (a === b) return Object.is(a, -0) ? a : b; // min(-0, +0) = -0
      return a < b ? a : b;
  }
}

function combineInt(op: ReduceOp, a: number, b: number): number {
  switch (op) {
    case ReduceOp.Sum:
      return (a + b) | 0;
    case ReduceOp.Prod:
      return Math.imul(a, b);
    case ReduceOp.Max:
      return a > b ? a : b;
    case ReduceOp.Min:
      return a < b ? a : b;
  }
}

/**
 * Reduces equal-length little-endian buffers elementwise: floats widened to f32 and folded
 * left to right (acc = src0; acc = op(acc, src1); ...), rounded once into the output type,
 * NaN canonical; i32 wrapping (sum, prod) or signed (max, min).
 */
export function reduceReference(srcs: Uint8Array[], op: ReduceOp, dtype: ReduceType): Uint8Array {
  const size = ELEMENT_BYTES[dtype];
  const bytes = srcs[0].length;
  if (srcs.length < 2 || srcs.some((s) => s.length !== bytes) || bytes % size !== 0) {
    throw new Error("reduceReference: want 2 or more buffers of one length, a multiple of the element size");
  }
  const views = srcs.map((s) => new DataView(s.buffer, s.byteOffset, s.byteLength));
  const out = new Uint8Array(bytes);
  const o = new DataView(out.buffer);
  for (let at = 0; at < bytes; at += size) {
    if (dtype === ReduceType.I32) {
      let acc = views[0].getInt32(at, true);
      for (let j = 1; j < views.length; j++) acc = combineInt(op, acc, views[j].getInt32(at, true));
      o.setInt32(at, acc, true);
      continue;
    }
    const widen = (v: DataView): number =>
      dtype === ReduceType.F32 ? bitsToF32(v.getUint32(at, true)) : dtype === ReduceType.F16 ? f16ToF32(v.getUint16(at, true)) : bf16ToF32(v.getUint16(at, true));
    let acc = widen(views[0]);
    for (let j = 1; j < views.length; j++) acc = combineFloat(op, acc, widen(views[j]));
    if (dtype === ReduceType.F32) o.setUint32(at, Number.isNaN(acc) ? F32_CANON_NAN : f32Bits(acc), true);
    else if (dtype === ReduceType.F16) o.setUint16(at, f32ToF16(acc), true);
    else o.setUint16(at, f32ToBf16(acc), true);
  }
  return out;
}
