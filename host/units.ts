// Parsing and printing of the units people type: simulated time.

const TIME_UNITS: Record<string, bigint> = { ps: 1n, ns: 1000n, us: 1_000_000n, ms: 1_000_000_000n, s: 1_000_000_000_000n };

/** "10ms", "2.5us", "750ns", "1s", "123ps" or a bare integer of ps → ps. */
export function parseTime(text: string): bigint {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ps|ns|us|ms|s)?\s*$/.exec(text);
  if (!m) throw new Error(`not a time: ${JSON.stringify(text)} (use e.g. 10ms, 2.5us, 750ns, 1s)`);
  const unit = TIME_UNITS[m[2] ?? "ps"];
  const [int, frac = ""] = m[1].split(".");
  const scale = 10n ** BigInt(frac.length);
  const ps = (BigInt(int) * scale + BigInt(frac || "0")) * unit;
  if (ps % scale !== 0n) throw new Error(`time ${text} is finer than 1 ps`);
  return ps / scale;
}

/** ps → the largest unit that keeps 3 significant decimals, e.g. "1.250 us". */
export function formatTime(ps: bigint | number): string {
  const v = Number(ps);
  if (v >= 1e12) return `${(v / 1e12).toFixed(3)} s`;
  if (v >= 1e9) return `${(v / 1e9).toFixed(3)} ms`;
  if (v >= 1e6) return `${(v / 1e6).toFixed(3)} us`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(3)} ns`;
  return `${v} ps`;
}
