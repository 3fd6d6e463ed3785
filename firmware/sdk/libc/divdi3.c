/*
 * 64-bit division helpers that clang calls for 64-bit `/` and `%` on RV32 (the names and
 * signatures are libgcc's, "Integer library routines"). RV32IM's DIV/REM work on 32 bits
 * only, and Debian ships no riscv32 compiler-rt, so the SDK provides these.
 *
 * Results follow the RISC-V DIV/REM rules (unprivileged spec, M extension, table 7.1) so that
 * 64-bit and 32-bit division behave alike: x / 0 = all ones, x % 0 = x, and
 * INT64_MIN / -1 = INT64_MIN with remainder 0.
 *
 * This file must itself compile to no 64-bit division (it would call itself): it uses
 * shifts, subtractions, comparisons and the 32-bit divu/remu instructions only.
 */
#include <menic/libc.h>

/* Leading zero bits of a nonzero 64-bit value, by binary search (RV32IMA has no clz). */
static unsigned clz64(uint64_t x) {
  unsigned n = 0;
  if ((x >> 32) == 0) { n += 32; x <<= 32; }
  if ((x >> 48) == 0) { n += 16; x <<= 16; }
  if ((x >> 56) == 0) { n += 8; x <<= 8; }
  if ((x >> 60) == 0) { n += 4; x <<= 4; }
  if ((x >> 62) == 0) { n += 2; x <<= 2; }
  if ((x >> 63) == 0) { n += 1; }
  return n;
}

/* Unsigned 64-bit division; stores the remainder in *rem. */
static uint64_t udivmod64(uint64_t n, uint64_t d, uint64_t *rem) {
  if (d == 0) {
    *rem = n;
    return ~(uint64_t)0;
  }
  /* Both fit in 32 bits: one hardware divu (the common case: counters, small values). */
  if ((n >> 32) == 0 && (d >> 32) == 0) {
    uint32_t n32 = (uint32_t)n, d32 = (uint32_t)d;
    *rem = n32 % d32;
    return n32 / d32;
  }
  if (d > n) {
    *rem = n;
    return 0;
  }
  /* Restoring shift-subtract: align d's top bit with n's, then one quotient bit per step.
   * d <= n here, so shift >= 0, and d << shift cannot overflow. */
  unsigned shift = clz64(d) - clz64(n);
  d <<= shift;
  uint64_t q = 0;
  for (unsigned i = 0; i <= shift; i++) {
    q <<= 1;
    if (n >= d) {
      n -= d;
      q |= 1;
    }
    d >>= 1;
  }
  *rem = n;
  return q;
}

uint64_t __udivdi3(uint64_t a, uint64_t b) {
  uint64_t r;
  return udivmod64(a, b, &r);
}

uint64_t __umoddi3(uint64_t a, uint64_t b) {
  uint64_t r;
  udivmod64(a, b, &r);
  return r;
}

/* Signed variants divide the magnitudes; the quotient is negative when the signs differ and
 * the remainder takes the sign of the dividend (C99 6.5.5: truncation toward zero). The
 * magnitude of INT64_MIN, 2^63, is representable as uint64_t, and negating 2^63 back gives
 * INT64_MIN, which yields RISC-V's overflow result without a special case. */
int64_t __divdi3(int64_t a, int64_t b) {
  if (b == 0) return -1; /* RISC-V: quotient of division by zero is all ones */
  uint64_t ua = a < 0 ? -(uint64_t)a : (uint64_t)a;
  uint64_t ub = b < 0 ? -(uint64_t)b : (uint64_t)b;
  uint64_t r;
  uint64_t q = udivmod64(ua, ub, &r);
  return (int64_t)(((a < 0) != (b < 0)) ? -q : q);
}

int64_t __moddi3(int64_t a, int64_t b) {
  if (b == 0) return a; /* RISC-V: remainder of division by zero is the dividend */
  uint64_t ua = a < 0 ? -(uint64_t)a : (uint64_t)a;
  uint64_t ub = b < 0 ? -(uint64_t)b : (uint64_t)b;
  uint64_t r;
  udivmod64(ua, ub, &r);
  return (int64_t)(a < 0 ? -r : r);
}
