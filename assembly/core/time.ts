// Time and unit conversions: the only module that turns cycles into picoseconds and back.
// Time is u64 picoseconds everywhere (`Ps`); engine time is counted in engine clock cycles.
// The engine clock is given in kHz so that every conversion is exact integer arithmetic:
// cycle c happens at c * 1e9 / kHz ps.

export type Ps = u64;
export type Cycles = u64;

export const PS_PER_MS: u64 = 1_000_000_000;
export const NEVER: u64 = u64.MAX_VALUE;

// ceil(a * b / d) without overflowing u64, for b * d < 2^64 / 2 (true for every use here:
// b and d are at most 1e9 and 1e7). Splitting a = q * d + r keeps r * b below 2^64.
@inline export function mulDivCeil(a: u64, b: u64, d: u64): u64 {
  const q = a / d;
  const r = a % d;
  return q * b + (r * b + d - 1) / d;
}

/** First cycle edge at or after time `t` on a clock of `khz`. */
@inline export function cyclesCeil(t: Ps, khz: u64): Cycles {
  return t == NEVER ? NEVER : mulDivCeil(t, khz, PS_PER_MS);
}

/** Time of cycle edge `c` on a clock of `khz`, rounded up to the next picosecond. */
@inline export function psOfCycle(c: Cycles, khz: u64): Ps {
  return c == NEVER ? NEVER : mulDivCeil(c, PS_PER_MS, khz);
}

@inline export function minU64(a: u64, b: u64): u64 {
  return a < b ? a : b;
}

@inline export function maxU64(a: u64, b: u64): u64 {
  return a > b ? a : b;
}
