// The arithmetic of a message engine's near-memory reduction block: K source buffers (2..8)
// combined elementwise into a destination. The numerics are specified in docs/reduce.md and
// mirrored, written independently and scalar, by host/reduce/reference.ts; the test
// test/reduce-kernel.test.ts compares the two bit for bit.
//
// In short: floats are widened exactly to f32, folded left to right in f32
// (acc = src0; acc = op(acc, src1); ...), then rounded once, to nearest even, into the output
// type. Any NaN gives the positive quiet NaN of the output type (wasm leaves NaN payloads and
// signs nondeterministic; we promise bit-exact output). max/min propagate NaN and order -0
// below +0, which is what wasm f32x4.max/min (and f32.max/min) do. i32 sum and prod wrap,
// max and min are signed.
//
// Pure arithmetic on wasm memory: no allocation, no state, no throw. Timing (128 B/cycle) is
// the caller's business. One loop per (dtype, op) pair, since `op` and the dtype are literals
// where the inline functions below are expanded. The body runs 16 bytes at a time with wasm
// SIMD, all k sources folded in registers; the tail (bytes % 16) runs one element at a time
// in lane 0 of the same vector functions (a splat load, lane 0 stored), so body and tail
// share their arithmetic.

import { REDUCE_OP_SUM, REDUCE_OP_MAX, REDUCE_OP_MIN, REDUCE_OP_PROD, DTYPE_F32, DTYPE_F16, DTYPE_BF16, DTYPE_I32 } from "../generated/layouts";

// The op and dtype codes: REDUCE_OP and DTYPE of layouts/verbs.json (the WQE's redop and dtype).
export const enum ReduceOp {
  Sum = REDUCE_OP_SUM,
  Max = REDUCE_OP_MAX,
  Min = REDUCE_OP_MIN,
  Prod = REDUCE_OP_PROD,
}

export const enum ReduceType {
  F32 = DTYPE_F32,
  F16 = DTYPE_F16,
  Bf16 = DTYPE_BF16,
  I32 = DTYPE_I32,
}

const F32_CANON_NAN: i32 = 0x7fc00000;
const F16_CANON_NAN: i32 = 0x7e00;
const BF16_CANON_NAN: i32 = 0x7fc0;

// ---- one combining step, on four lanes --------------------------------------------------
// `op` is always a literal at the call sites below, so after inlining only one arm remains.

@inline function combineF32(op: u32, a: v128, b: v128): v128 {
  if (op == ReduceOp.Sum) return f32x4.add(a, b);
  if (op == ReduceOp.Max) return f32x4.max(a, b); // NaN if either is NaN; max(-0, +0) = +0
  if (op == ReduceOp.Min) return f32x4.min(a, b); // NaN if either is NaN; min(-0, +0) = -0
  return f32x4.mul(a, b);
}

@inline function combineI32(op: u32, a: v128, b: v128): v128 {
  if (op == ReduceOp.Sum) return i32x4.add(a, b); // wraps modulo 2^32
  if (op == ReduceOp.Max) return i32x4.max_s(a, b);
  if (op == ReduceOp.Min) return i32x4.min_s(a, b);
  return i32x4.mul(a, b); // low 32 bits of the product: wraps
}

/** Replaces every NaN lane by the positive quiet NaN 0x7fc00000. */
@inline function canonF32(x: v128): v128 {
  return v128.bitselect(i32x4.splat(F32_CANON_NAN), x, f32x4.ne(x, x));
}

// ---- f16 and bf16 <-> f32 on four u32 lanes ----------------------------------------------
// The narrowing functions leave garbage (some value <= 0xffff) in NaN lanes: their callers
// replace those lanes by the canonical NaN (narrowPair, narrowOne).

/** f16 bits, sign-extended into each 32-bit lane -> f32x4, exactly (subnormals, inf, NaN). */
@inline function widenF16(h: v128): v128 {
  const em = v128.and(h, i32x4.splat(0x7fff));
  // exponent and mantissa moved to the f32 positions read as an f32 are the value times
  // 2^-112 (an f16 subnormal lands on an f32 subnormal with the same bits); scaling by 2^112
  // is exact, normals and subnormals alike (wasm never flushes subnormals; a subnormal operand
  // may be slower on some x86 cores, and only f16 subnormal inputs make one)
  let o = f32x4.mul(i32x4.shl(em, 13), f32x4.splat(reinterpret<f32>(0x77800000))); // 2^112
  // inf and NaN (exponent 31): all f32 exponent bits set, the mantissa (payload) kept
  o = v128.or(o, v128.and(i32x4.gt_s(em, i32x4.splat(0x7bff)), i32x4.splat(0x7f800000)));
  return v128.or(o, v128.and(h, i32x4.splat(<i32>0x80000000)));
}

/** f32x4 -> f16 bits in the low 16 bits of each u32 lane, round to nearest even; NaN lanes
 * garbage. After F. Giesen, "float_to_half_fast3_rtne" (public domain, 2012), with both
 * cases computed and selected. */
@inline function narrowF16(f: v128): v128 {
  const a = v128.and(f, i32x4.splat(0x7fffffff));
  // normal results: rebias the exponent (127 -> 15), add 0xfff plus the lowest kept bit
  // (ties go to even), drop 13 bits; the carry may step the exponent, up to 31 = inf.
  // Anything at or above 65520 lands at or above 0x7c00 and is clamped to inf.
  const odd = v128.and(i32x4.shr_u(a, 13), i32x4.splat(1));
  let norm = i32x4.add(i32x4.add(a, i32x4.splat(<i32>0xc8000fff)), odd); // (15 - 127) << 23 + 0xfff
  norm = i32x4.min_u(i32x4.shr_u(norm, 13), i32x4.splat(0x7c00));
  // subnormal results (|f| < 2^-14): 0.5 + |f| puts the f16 ulp 2^-24 at the last f32 mantissa
  // bit, so the f32 addition does the round-to-nearest-even; subtracting 0.5's bits leaves the
  // f16 bits (0x400, the smallest normal, when it rounds up)
  const sub = i32x4.sub(f32x4.add(a, f32x4.splat(0.5)), i32x4.splat(0x3f000000));
  const r = v128.bitselect(sub, norm, i32x4.lt_s(a, i32x4.splat(0x38800000)));
  return v128.or(r, i32x4.shr_u(v128.and(f, i32x4.splat(<i32>0x80000000)), 16));
}

/** f32x4 -> bf16 bits in the low 16 bits of each u32 lane, round to nearest even: add 0x7fff
 * plus the lowest kept bit, drop 16 bits. Values that round past the largest bf16 carry into
 * the exponent and become inf; subnormals round like any other value. NaN lanes garbage. */
@inline function narrowBf16(f: v128): v128 {
  const odd = v128.and(i32x4.shr_u(f, 16), i32x4.splat(1));
  return i32x4.shr_u(i32x4.add(f, i32x4.add(i32x4.splat(0x7fff), odd)), 16);
}

// Widening bf16 is a 16-bit shift: interleaving zero halves below the elements does it for
// four elements at once (x86 punpcklwd / punpckhwd).
@inline function widenBf16Lo(x: v128): v128 {
  return i8x16.shuffle(i32x4.splat(0), x, 0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
}

@inline function widenBf16Hi(x: v128): v128 {
  return i8x16.shuffle(i32x4.splat(0), x, 8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31);
}

/** Elements 0..3 of eight 16-bit floats in `x`, as f32x4. */
@inline function widenLo(isBf16: bool, x: v128): v128 {
  return isBf16 ? widenBf16Lo(x) : widenF16(i32x4.extend_low_i16x8_s(x));
}

/** Elements 4..7 of eight 16-bit floats in `x`, as f32x4. */
@inline function widenHi(isBf16: bool, x: v128): v128 {
  return isBf16 ? widenBf16Hi(x) : widenF16(i32x4.extend_high_i16x8_s(x));
}

@inline function canonNaN16(isBf16: bool): i32 {
  return isBf16 ? BF16_CANON_NAN : F16_CANON_NAN;
}

/** Two f32x4 -> eight 16-bit floats, NaN canonical. NaN is rare, so one test of all eight
 * lanes decides whether to patch them (the lanes hold values <= 0xffff, so the saturating
 * narrow packs them exactly). */
@inline function narrowPair(isBf16: bool, lo: v128, hi: v128): v128 {
  const r = isBf16
    ? i16x8.narrow_i32x4_u(narrowBf16(lo), narrowBf16(hi))
    : i16x8.narrow_i32x4_u(narrowF16(lo), narrowF16(hi));
  const nanLo = f32x4.ne(lo, lo);
  const nanHi = f32x4.ne(hi, hi);
  if (!v128.any_true(v128.or(nanLo, nanHi))) return r;
  return v128.bitselect(i16x8.splat(<i16>canonNaN16(isBf16)), r, i16x8.narrow_i32x4_s(nanLo, nanHi));
}

/** One f32 (lane 0) -> its 16-bit float bits, NaN canonical. */
@inline function narrowOne(isBf16: bool, f: v128): u16 {
  const r = isBf16 ? narrowBf16(f) : narrowF16(f);
  return <u16>i32x4.extract_lane(v128.bitselect(i32x4.splat(canonNaN16(isBf16)), r, f32x4.ne(f, f)), 0);
}

// ---- the loops, one per (dtype, op) after inlining ---------------------------------------

@inline function src(srcs: usize, j: u32): usize {
  return <usize>load<u32>(srcs + (<usize>j << 2));
}

// f32 and i32: four elements per 16 bytes.
@inline function combine32(isFloat: bool, op: u32, a: v128, b: v128): v128 {
  return isFloat ? combineF32(op, a, b) : combineI32(op, a, b);
}

@inline function finish32(isFloat: bool, a: v128): v128 {
  return isFloat ? canonF32(a) : a;
}

// A loop of its own for k = 2, the hot case (unrolled to 32 bytes), then a loop for 3..8
// sources that folds src2.. in order behind branches the predictor learns at once (it also
// takes the last 16 bytes of k = 2).
@inline function reduce32(isFloat: bool, op: u32, dst: usize, srcs: usize, k: u32, bytes: usize): void {
  const s0 = src(srcs, 0);
  const s1 = src(srcs, 1);
  let i: usize = 0;
  if (k == 2) {
    const body2 = bytes & ~<usize>31;
    for (; i < body2; i += 32) {
      const a = combine32(isFloat, op, v128.load(s0 + i), v128.load(s1 + i));
      const c = combine32(isFloat, op, v128.load(s0 + i, 16), v128.load(s1 + i, 16));
      v128.store(dst + i, finish32(isFloat, a));
      v128.store(dst + i, finish32(isFloat, c), 16);
    }
  }
  const body = bytes & ~<usize>15;
  const s2 = k > 2 ? src(srcs, 2) : 0;
  const s3 = k > 3 ? src(srcs, 3) : 0;
  const s4 = k > 4 ? src(srcs, 4) : 0;
  const s5 = k > 5 ? src(srcs, 5) : 0;
  const s6 = k > 6 ? src(srcs, 6) : 0;
  const s7 = k > 7 ? src(srcs, 7) : 0;
  for (; i < body; i += 16) {
    let a = combine32(isFloat, op, v128.load(s0 + i), v128.load(s1 + i));
    if (k > 2) {
      a = combine32(isFloat, op, a, v128.load(s2 + i));
      if (k > 3) {
        a = combine32(isFloat, op, a, v128.load(s3 + i));
        if (k > 4) {
          a = combine32(isFloat, op, a, v128.load(s4 + i));
          if (k > 5) {
            a = combine32(isFloat, op, a, v128.load(s5 + i));
            if (k > 6) {
              a = combine32(isFloat, op, a, v128.load(s6 + i));
              if (k > 7) a = combine32(isFloat, op, a, v128.load(s7 + i));
            }
          }
        }
      }
    }
    v128.store(dst + i, finish32(isFloat, a));
  }
  // tail: one element at a time in lane 0
  for (; i + 4 <= bytes; i += 4) {
    let a = v128.load32_splat(s0 + i);
    for (let j: u32 = 1; j < k; j++) a = combine32(isFloat, op, a, v128.load32_splat(src(srcs, j) + i));
    store<i32>(dst + i, i32x4.extract_lane(finish32(isFloat, a), 0));
  }
}

// f16 and bf16: eight elements per 16 bytes, widened into two f32x4 halves, folded, narrowed
// and packed back. As for 32-bit elements, k = 2 has its own loop (unrolled to 32 bytes).
@inline function reduce16(isBf16: bool, op: u32, dst: usize, srcs: usize, k: u32, bytes: usize): void {
  const s0 = src(srcs, 0);
  const s1 = src(srcs, 1);
  let i: usize = 0;
  if (k == 2) {
    const body2 = bytes & ~<usize>31;
    for (; i < body2; i += 32) {
      let x = v128.load(s0 + i);
      let y = v128.load(s1 + i);
      let lo = combineF32(op, widenLo(isBf16, x), widenLo(isBf16, y));
      let hi = combineF32(op, widenHi(isBf16, x), widenHi(isBf16, y));
      v128.store(dst + i, narrowPair(isBf16, lo, hi));
      x = v128.load(s0 + i, 16);
      y = v128.load(s1 + i, 16);
      lo = combineF32(op, widenLo(isBf16, x), widenLo(isBf16, y));
      hi = combineF32(op, widenHi(isBf16, x), widenHi(isBf16, y));
      v128.store(dst + i, narrowPair(isBf16, lo, hi), 16);
    }
  }
  const body = bytes & ~<usize>15;
  const s2 = k > 2 ? src(srcs, 2) : 0;
  const s3 = k > 3 ? src(srcs, 3) : 0;
  const s4 = k > 4 ? src(srcs, 4) : 0;
  const s5 = k > 5 ? src(srcs, 5) : 0;
  const s6 = k > 6 ? src(srcs, 6) : 0;
  const s7 = k > 7 ? src(srcs, 7) : 0;
  for (; i < body; i += 16) {
    let x = v128.load(s0 + i);
    let lo = widenLo(isBf16, x);
    let hi = widenHi(isBf16, x);
    x = v128.load(s1 + i);
    lo = combineF32(op, lo, widenLo(isBf16, x));
    hi = combineF32(op, hi, widenHi(isBf16, x));
    if (k > 2) {
      x = v128.load(s2 + i);
      lo = combineF32(op, lo, widenLo(isBf16, x));
      hi = combineF32(op, hi, widenHi(isBf16, x));
      if (k > 3) {
        x = v128.load(s3 + i);
        lo = combineF32(op, lo, widenLo(isBf16, x));
        hi = combineF32(op, hi, widenHi(isBf16, x));
        if (k > 4) {
          x = v128.load(s4 + i);
          lo = combineF32(op, lo, widenLo(isBf16, x));
          hi = combineF32(op, hi, widenHi(isBf16, x));
          if (k > 5) {
            x = v128.load(s5 + i);
            lo = combineF32(op, lo, widenLo(isBf16, x));
            hi = combineF32(op, hi, widenHi(isBf16, x));
            if (k > 6) {
              x = v128.load(s6 + i);
              lo = combineF32(op, lo, widenLo(isBf16, x));
              hi = combineF32(op, hi, widenHi(isBf16, x));
              if (k > 7) {
                x = v128.load(s7 + i);
                lo = combineF32(op, lo, widenLo(isBf16, x));
                hi = combineF32(op, hi, widenHi(isBf16, x));
              }
            }
          }
        }
      }
    }
    v128.store(dst + i, narrowPair(isBf16, lo, hi));
  }
  // tail: one element at a time in lane 0 (the splat fills every 16-bit lane; widenLo reads
  // the low four)
  for (; i + 2 <= bytes; i += 2) {
    let a = widenLo(isBf16, v128.load16_splat(s0 + i));
    for (let j: u32 = 1; j < k; j++) a = combineF32(op, a, widenLo(isBf16, v128.load16_splat(src(srcs, j) + i)));
    store<u16>(dst + i, narrowOne(isBf16, a));
  }
}

/** Bytes per element of `dtype` (ReduceType), 0 for a dtype the block does not have. */
export function reduceElementBytes(dtype: u32): u32 {
  if (dtype == ReduceType.F32 || dtype == ReduceType.I32) return 4;
  if (dtype == ReduceType.F16 || dtype == ReduceType.Bf16) return 2;
  return 0;
}

/** Is `op` a ReduceOp the block has? */
export function reduceOpKnown(op: u32): bool {
  return op == ReduceOp.Sum || op == ReduceOp.Max || op == ReduceOp.Min || op == ReduceOp.Prod;
}

/**
 * Reduces `k` (2..8) source buffers of `bytes` bytes each into `dst` with `op` (ReduceOp) on
 * elements of `dtype` (ReduceType). `srcs` holds k little-endian u32 addresses of the
 * sources. `bytes` is a multiple of the element size (a trailing partial element is left
 * unwritten). `dst` may be one of the sources (it is read at each position before it is
 * written there) but must not partly overlap one. Out-of-range op, dtype or k are the
 * caller's to reject; here they write nothing. Nothing outside dst[0, bytes) is written.
 */
export function reduceKernel(dst: usize, srcs: usize, k: u32, bytes: u32, op: u32, dtype: u32): void {
  if (k < 2 || k > 8) return;
  const n = <usize>bytes;
  if (dtype == ReduceType.F32) {
    if (op == ReduceOp.Sum) reduce32(true, ReduceOp.Sum, dst, srcs, k, n);
    else if (op == ReduceOp.Max) reduce32(true, ReduceOp.Max, dst, srcs, k, n);
    else if (op == ReduceOp.Min) reduce32(true, ReduceOp.Min, dst, srcs, k, n);
    else if (op == ReduceOp.Prod) reduce32(true, ReduceOp.Prod, dst, srcs, k, n);
  } else if (dtype == ReduceType.F16) {
    if (op == ReduceOp.Sum) reduce16(false, ReduceOp.Sum, dst, srcs, k, n);
    else if (op == ReduceOp.Max) reduce16(false, ReduceOp.Max, dst, srcs, k, n);
    else if (op == ReduceOp.Min) reduce16(false, ReduceOp.Min, dst, srcs, k, n);
    else if (op == ReduceOp.Prod) reduce16(false, ReduceOp.Prod, dst, srcs, k, n);
  } else if (dtype == ReduceType.Bf16) {
    if (op == ReduceOp.Sum) reduce16(true, ReduceOp.Sum, dst, srcs, k, n);
    else if (op == ReduceOp.Max) reduce16(true, ReduceOp.Max, dst, srcs, k, n);
    else if (op == ReduceOp.Min) reduce16(true, ReduceOp.Min, dst, srcs, k, n);
    else if (op == ReduceOp.Prod) reduce16(true, ReduceOp.Prod, dst, srcs, k, n);
  } else if (dtype == ReduceType.I32) {
    if (op == ReduceOp.Sum) reduce32(false, ReduceOp.Sum, dst, srcs, k, n);
    else if (op == ReduceOp.Max) reduce32(false, ReduceOp.Max, dst, srcs, k, n);
    else if (op == ReduceOp.Min) reduce32(false, ReduceOp.Min, dst, srcs, k, n);
    else if (op == ReduceOp.Prod) reduce32(false, ReduceOp.Prod, dst, srcs, k, n);
  }
}
