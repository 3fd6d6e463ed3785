// An open-loop workload's draws (issue 29, §2): the size files as their papers give them, sizes
// drawn with the file's distribution, arrivals a Poisson process at the load asked for, random
// pairs, each held to a statistical bound derived here; a malformed size file refused at its line.
// No simulation: host/scenario/workload.ts and size-cdf.ts alone.
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { parseSizeCdf, cdfAt, CdfError, type SizeCdf } from "../host/scenario/size-cdf.js";
import { workloadFlows, lnExact, resolveWorkload, inlineWorkloadFiles, WORKLOAD_MAX_FLOWS, type WorkloadSpec } from "../host/scenario/workload.js";
import { resolveScenario } from "../host/scenario/scenario.js";
import { ConfigError } from "../host/config.js";

const shipped = (name: string) => parseSizeCdf(readFileSync(`examples/workloads/${name}.cdf`, "utf8"), `${name}.cdf`);
const spec = (sizes: SizeCdf, o: Partial<WorkloadSpec>): WorkloadSpec => ({ sizes, load: 0.5, bucketsBytes: [10_000], ...o });

/** The published points (bytes, fraction), written out again here: DCTCP's web search (pFabric's reading) and Facebook's Hadoop (HPCC's). */
const WEBSEARCH: [number, number][] = [[10e3, 0.15], [20e3, 0.2], [30e3, 0.3], [50e3, 0.4], [80e3, 0.53], [200e3, 0.6], [1e6, 0.7], [2e6, 0.8], [5e6, 0.9], [10e6, 0.97], [30e6, 1]];
const HADOOP: [number, number][] = [[100, 0.01], [200, 0.02], [300, 0.05], [350, 0.15], [400, 0.2], [500, 0.3], [600, 0.4], [700, 0.5], [1000, 0.6], [2000, 0.67], [7000, 0.7],
  [30e3, 0.72], [50e3, 0.82], [80e3, 0.87], [120e3, 0.9], [300e3, 0.95], [1e6, 0.975], [2e6, 0.99], [10e6, 1]];

describe("the shipped size files", () => {
  it.each([["websearch", WEBSEARCH], ["hadoop", HADOOP]] as const)("%s.cdf holds the published points", (name, points) => {
    const c = shipped(name);
    expect(c.points.map((p) => [p.bytes, p.fraction])).toEqual(points);
    // the mean of a CDF linear between points, the first point's share at its size: computed here from the list
    let mean = points[0]![1] * points[0]![0];
    for (let i = 1; i < points.length; i++) mean += (points[i]![1] - points[i - 1]![1]) * (points[i]![0] + points[i - 1]![0]) / 2;
    expect(c.meanBytes).toBeCloseTo(mean, 6);
  });

  it("gives web search a mean of 1.712 MB and Hadoop 0.120 MB (the figures the papers' generators work from)", () => {
    expect(shipped("websearch").meanBytes).toBe(1_712_000);
    expect(shipped("hadoop").meanBytes).toBeCloseTo(120_421.25, 6);
  });
});

describe("a malformed size file is refused at its line, saying what is wrong", () => {
  it.each([
    ["100 0.5\n200 0.4\n300 1\n", "t.cdf:2: fractions must not decrease (it is a cumulative distribution): 0.4 after 0.5"],
    ["# sizes\n100 0.5\n\n100 1\n", "t.cdf:4: sizes must increase from line to line: 100 after 100"],
    ["100 0.5 x\n", 't.cdf:1: expected two numbers, a size in bytes and the fraction of flows of at most that size, got 3 fields: "100 0.5 x"'],
    ["100 15\n200 100\n", "t.cdf:1: the fraction must be from 0 to 1, got 15 (a percentage? write it as a fraction: 0.15)"],
    ["100 0.5\n200 0.97\n", "t.cdf:2: the last fraction must be 1 (every flow is at most the largest size), got 0.97"],
    ["1.5e3 1\n", 't.cdf:1: the size must be a whole number of bytes from 1 to 1073741824, got "1.5e3"'],
    ["0 0\n10 1\n", 't.cdf:1: the size must be a whole number of bytes from 1 to 1073741824, got "0"'],
    ["100 half\n", 't.cdf:1: the fraction must be a number from 0 to 1, got "half"'],
    ["# nothing\n\n", "t.cdf: has no points (lines of a size in bytes and the fraction of flows of at most that size)"],
  ])("%j", (text, message) => {
    expect(() => parseSizeCdf(text, "t.cdf")).toThrow(CdfError);
    expect(() => parseSizeCdf(text, "t.cdf")).toThrow(message);
  });

  it("takes commas, tabs and comments", () => {
    expect(parseSizeCdf("# a\n100,0.5 # half\n200\t1\n", "t").points).toEqual([{ bytes: 100, fraction: 0.5 }, { bytes: 200, fraction: 1 }]);
  });

  it("names the scenario field and the file's line, through resolveScenario", () => {
    const sc = { devices: { count: 2 }, traffic: { pattern: "workload", workload: { sizes: { file: "bad.cdf" }, flows: 4 } } };
    const inlined = inlineWorkloadFiles(sc, () => "10 0.5\n5 1\n");
    expect(() => resolveScenario(inlined)).toThrow(new ConfigError("scenario.traffic.workload.sizes.file", "bad.cdf:2: sizes must increase from line to line: 5 after 10"));
    expect(() => resolveScenario(sc)).toThrow('scenario.traffic.workload.sizes.file: "bad.cdf" is not read here');
    expect(() => inlineWorkloadFiles(sc, () => { throw new Error("no such file"); })).toThrow("scenario.traffic.workload.sizes.file: bad.cdf: no such file");
  });

  it.each([
    [{ pattern: "workload", workload: { sizes: { text: "10 1" } } }, "scenario.traffic.workload: needs flows (how many in all) or duration (how long they keep arriving)"],
    [{ pattern: "workload", workload: { sizes: { text: "10 1" }, flows: 3, duration: "1us" } }, "scenario.traffic.workload: has both flows and duration: give one"],
    [{ pattern: "workload" }, "scenario.traffic.workload: pattern workload needs a workload (its sizes, load, and flows or duration)"],
    [{ pattern: "pairs", workload: { sizes: { text: "10 1" }, flows: 3 } }, 'scenario.traffic.pattern: a workload needs pattern "workload", got "pairs"'],
    [{ pattern: "workload", workload: { sizes: {}, flows: 3 } }, 'scenario.traffic.workload.sizes: needs file or text (the flow sizes\' CDF: docs/workloads.md, "Size files")'],
    [{ pattern: "workload", workload: { sizes: { text: "10 1" }, flows: 3, buckets: [100, 100] } }, "scenario.traffic.workload.buckets[1]: bucket bounds must increase: 100 after 100"],
    [{ pattern: "workload", workload: { sizes: { text: "10 1" }, flows: 3, load: 1.5 } }, "scenario.traffic.workload.load: must be in (0, 1], got 1.5"],
    [{ pattern: "workload", workload: { sizes: { text: "10 1" }, flows: 99999 } }, "scenario.traffic.workload.flows: must be an integer in [1, 16384], got 99999"],
    [{ pattern: "pairs", verb: "READ", verbs: { WRITE: 1 } }, "scenario.traffic: has both verb and verbs: give one verb, or a mix by weight"],
    [{ pattern: "pairs", verbs: { WRITE: 0 } }, "scenario.traffic.verbs: needs a verb with a weight above 0"],
    [{ pattern: "pairs", verbs: { ATOMIC: 1 } }, "scenario.traffic.verbs.ATOMIC: unknown field (known: WRITE, WRITE_WITH_IMM, SEND, READ)"],
    [{ pattern: "pairs", verb: "WRITE_IMM" }, 'scenario.traffic.verb: must be one of WRITE, WRITE_WITH_IMM, SEND, READ, got "WRITE_IMM"'],
  ])("%j", (traffic, message) => {
    expect(() => resolveScenario({ devices: { count: 2 }, traffic })).toThrow(new ConfigError(message.slice(0, message.indexOf(": ")), message.slice(message.indexOf(": ") + 2)));
  });
});

/** The Kolmogorov–Smirnov distance between `sizes` and `cdf`: the largest gap between their CDFs, on either side of each sample. */
function ksDistance(sizes: number[], cdf: SizeCdf): number {
  const s = [...sizes].sort((a, b) => a - b), n = s.length;
  let d = 0;
  for (let i = 0; i < n; i++) {
    // ties (the first point's share is one size) count once, at the last of them
    if (i + 1 < n && s[i + 1] === s[i]) continue;
    const f = cdfAt(cdf, s[i]!), below = cdfAt(cdf, s[i]! - 1);
    const firstOfRun = s.indexOf(s[i]!);
    d = Math.max(d, Math.abs((i + 1) / n - f), Math.abs(firstOfRun / n - below));
  }
  return d;
}

describe("the flows an open-loop workload draws", () => {
  it.each(["websearch", "hadoop"])("have sizes distributed as %s.cdf: the KS distance within its 99.9 % bound", (name) => {
    const cdf = shipped(name);
    const n = 20_000;
    const flows = workloadFlows(spec(cdf, { flows: n }), 16, 7, 0, 800, { WRITE: 1 });
    // P(D > 1.95 / sqrt(n)) < 0.001 for n this large (Kolmogorov's limit); a size off by a
    // segment (no interpolation, the first point's share spread below it) is several times that
    const d = ksDistance(flows.map((f) => f.bytes), cdf);
    expect(d).toBeLessThan(1.95 / Math.sqrt(n));
    // and the share at the first point is its own: 15 % of web search flows are 10 KB exactly
    const first = cdf.points[0]!;
    const share = flows.filter((f) => f.bytes === first.bytes).length / n;
    expect(Math.abs(share - first.fraction)).toBeLessThan(4 * Math.sqrt((first.fraction * (1 - first.fraction)) / n));
  });

  it("arrive at each device as a Poisson process at load x link rate / mean size: counts within 4 sigma, exponential gaps", () => {
    const cdf = shipped("websearch");
    const load = 0.4, gbps = 800, n = 4;
    // flows per ps at one device: 0.4 x 0.8 bits per ps over 8 x 1.712 MB
    const lambda = (load * gbps * 1e-3) / (8 * 1_712_000);
    const expected = 4000; // per device
    const durationPs = Math.round(expected / lambda);
    const flows = workloadFlows(spec(cdf, { load, durationPs }), n, 11, 5_000, gbps, { WRITE: 1 });
    for (let h = 0; h < n; h++) {
      const mine = flows.filter((f) => f.src === h).map((f) => f.atPs);
      // a Poisson count has variance equal to its mean: 4 sigma is 253 of 4000 (6 %); a rate in
      // bytes for bits (8x), or over all devices instead of each (4x), is far outside
      expect(Math.abs(mine.length - expected)).toBeLessThan(4 * Math.sqrt(expected));
      expect(Math.min(...mine)).toBeGreaterThanOrEqual(5_000);
      expect(Math.max(...mine)).toBeLessThan(5_000 + durationPs);
      // exponential gaps: mean 1/lambda and squared coefficient of variation 1 (the sample CV^2 has
      // a standard deviation of about sqrt(8 / n) = 0.045 here); evenly spaced arrivals give 0
      const gaps = mine.slice(1).map((t, i) => t - mine[i]!);
      const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
      const cv2 = gaps.reduce((a, g) => a + (g - mean) ** 2, 0) / gaps.length / mean ** 2;
      expect(Math.abs(mean * lambda - 1)).toBeLessThan(4 / Math.sqrt(gaps.length));
      expect(Math.abs(cv2 - 1)).toBeLessThan(0.2);
    }
    // destinations: never the sender, every other device alike (each 1/3 of a device's flows)
    expect(flows.every((f) => f.dst !== f.src && f.dst >= 0 && f.dst < n)).toBe(true);
    const to = (s: number, d: number) => flows.filter((f) => f.src === s && f.dst === d).length;
    const mine0 = flows.filter((f) => f.src === 0).length;
    for (const d of [1, 2, 3]) expect(Math.abs(to(0, d) / mine0 - 1 / 3)).toBeLessThan(4 * Math.sqrt((1 / 3) * (2 / 3) / mine0));
    // in arrival order
    expect(flows.every((f, i) => i === 0 || f.atPs >= flows[i - 1]!.atPs)).toBe(true);
  });

  it("are the first `flows` arrivals over all devices, the same for the same seed, others for another", () => {
    const cdf = shipped("hadoop");
    const a = workloadFlows(spec(cdf, { flows: 500 }), 8, 1, 0, 400, { WRITE: 1, READ: 1 });
    const longer = workloadFlows(spec(cdf, { flows: 800 }), 8, 1, 0, 400, { WRITE: 1, READ: 1 });
    expect(a).toHaveLength(500);
    expect(longer.slice(0, 500)).toEqual(a);
    expect(workloadFlows(spec(cdf, { flows: 500 }), 8, 2, 0, 400, { WRITE: 1, READ: 1 })).not.toEqual(a);
    // a mix of two at equal weight: each about half (4 sigma: 0.09)
    const reads = a.filter((f) => f.verb === "READ").length / 500;
    expect(Math.abs(reads - 0.5)).toBeLessThan(4 * Math.sqrt(0.25 / 500));
  });

  it("refuses a duration that would bring more flows than a run may have", () => {
    expect(() => workloadFlows(spec(shipped("hadoop"), { load: 1, durationPs: 1e12 }), 64, 1, 0, 800, { WRITE: 1 })).toThrow(
      new RegExp(`^scenario\\.traffic\\.workload\\.duration: 64 devices at .* flows/s each for 1000000000000 ps make about \\d+ flows, more than the ${WORKLOAD_MAX_FLOWS} a run may have`));
  });

  it("draws from a logarithm every JavaScript engine computes alike, within 2 ulps of Math.log", () => {
    for (const x of [1, 0.5, 2 ** -53, 0.999999, 0.1, 1e-10, 0.7071, 0.75, 0.3]) {
      expect(Math.abs(lnExact(x) - Math.log(x))).toBeLessThanOrEqual(2 * Number.EPSILON * Math.max(1, Math.abs(Math.log(x))));
    }
  });

  it("resolves a duration as a time", () => {
    expect(resolveWorkload({ sizes: { text: "10 1" }, load: 0.5, duration: "2us" }, "w").durationPs).toBe(2_000_000);
  });
});
