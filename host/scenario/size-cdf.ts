// A flow-size distribution as datacenter transport papers give one: points of its cumulative
// distribution function, read from a text file (examples/workloads/*.cdf; the format is in
// docs/workloads.md, "Size files"), its mean, and a size drawn from it by inverse transform.
// Between two points the sizes spread uniformly (the CDF is linear there), as the traffic
// generators of pFabric and HPCC draw them; the first point's fraction is the share of flows of
// exactly its size. No Node APIs.

/** One point of a size CDF: `fraction` of the flows are at most `bytes` long. */
export interface CdfPoint {
  /** A flow size, bytes. */
  bytes: number;
  /** The fraction of flows of at most that size, 0 to 1. */
  fraction: number;
}

/** A flow-size distribution: its points (sizes increasing, fractions not decreasing, the last 1) and its mean. */
export interface SizeCdf {
  /** Where it came from, as its errors name it (a file name, or "text"). */
  name: string;
  /** Its points, sizes increasing. */
  points: CdfPoint[];
  /** The mean flow size, bytes: of the distribution the points describe (linear between points). */
  meanBytes: number;
}

/** The largest flow size a CDF may name: a message's most (scenario traffic.messageBytes), 1 GiB. */
export const CDF_MAX_BYTES = 2 ** 30;

/** A size file that cannot be read as a CDF: `line` (1-based; 0 for the file as a whole) and what is wrong. */
export class CdfError extends Error {
  constructor(
    /** The file's name (or "text"). */
    readonly file: string,
    /** The line, 1-based; 0: the file as a whole. */
    readonly line: number,
    /** What is wrong. */
    readonly what: string,
  ) {
    super(`${file}${line > 0 ? `:${line}` : ""}: ${what}`);
    this.name = "CdfError";
  }
}

/**
 * Reads a size CDF from `text` (named `name` in its errors): per line a size in bytes and the
 * fraction of flows of at most that size, separated by spaces, tabs or a comma; `#` starts a
 * comment; blank lines are skipped. Throws CdfError naming the line and what is wrong.
 */
export function parseSizeCdf(text: string, name: string): SizeCdf {
  const points: CdfPoint[] = [];
  let lastLine = 0;
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = i + 1;
    const body = raw.replace(/#.*/, "").trim();
    if (body === "") return;
    const fields = body.split(/\s*,\s*|\s+/);
    if (fields.length !== 2) throw new CdfError(name, line, `expected two numbers, a size in bytes and the fraction of flows of at most that size, got ${fields.length} field${fields.length === 1 ? "" : "s"}: ${JSON.stringify(body)}`);
    const [b, f] = fields as [string, string];
    const bytes = Number(b), fraction = Number(f);
    if (!/^\d+$/.test(b) || !(bytes >= 1 && bytes <= CDF_MAX_BYTES)) throw new CdfError(name, line, `the size must be a whole number of bytes from 1 to ${CDF_MAX_BYTES}, got ${JSON.stringify(b)}`);
    if (f === "" || !Number.isFinite(fraction)) throw new CdfError(name, line, `the fraction must be a number from 0 to 1, got ${JSON.stringify(f)}`);
    if (fraction < 0 || fraction > 1) throw new CdfError(name, line, `the fraction must be from 0 to 1, got ${f}${fraction > 1 && fraction <= 100 ? " (a percentage? write it as a fraction: " + fraction / 100 + ")" : ""}`);
    const prev = points[points.length - 1];
    if (prev && bytes <= prev.bytes) throw new CdfError(name, line, `sizes must increase from line to line: ${bytes} after ${prev.bytes}`);
    if (prev && fraction < prev.fraction) throw new CdfError(name, line, `fractions must not decrease (it is a cumulative distribution): ${f} after ${prev.fraction}`);
    points.push({ bytes, fraction });
    lastLine = line;
  });
  if (points.length === 0) throw new CdfError(name, 0, "has no points (lines of a size in bytes and the fraction of flows of at most that size)");
  const last = points[points.length - 1]!;
  if (last.fraction !== 1) throw new CdfError(name, lastLine, `the last fraction must be 1 (every flow is at most the largest size), got ${last.fraction}`);
  return { name, points, meanBytes: cdfMean(points) };
}

/** The mean of the distribution `points` describe: the first point's share at its size, then each segment's share at its midpoint (uniform within it). */
export function cdfMean(points: readonly CdfPoint[]): number {
  let mean = points[0]!.fraction * points[0]!.bytes;
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1]!, b = points[i]!;
    mean += (b.fraction - a.fraction) * (a.bytes + b.bytes) / 2;
  }
  return mean;
}

/**
 * The size at quantile `u` (0 ≤ u < 1) of `cdf`: the first point's size below its fraction, else
 * linear between the two points whose fractions enclose `u`, rounded to the nearest byte.
 */
export function cdfSize(cdf: SizeCdf, u: number): number {
  const p = cdf.points;
  if (u < p[0]!.fraction) return p[0]!.bytes;
  for (let i = 1; i < p.length; i++) {
    const a = p[i - 1]!, b = p[i]!;
    if (u < b.fraction) return Math.round(a.bytes + ((u - a.fraction) / (b.fraction - a.fraction)) * (b.bytes - a.bytes));
  }
  return p[p.length - 1]!.bytes;
}

/** The fraction of `cdf`'s flows of at most `bytes` (the CDF itself, linear between points). */
export function cdfAt(cdf: SizeCdf, bytes: number): number {
  const p = cdf.points;
  if (bytes < p[0]!.bytes) return 0;
  for (let i = 1; i < p.length; i++) {
    const a = p[i - 1]!, b = p[i]!;
    if (bytes < b.bytes) return a.fraction + ((bytes - a.bytes) / (b.bytes - a.bytes)) * (b.fraction - a.fraction);
  }
  return 1;
}
