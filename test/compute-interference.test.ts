// The matmul grid (assembly/compute/grid.ts) and compute interference (host/scenario/
// interference.ts, docs/compute.md): the tile loop's time alone follows its pipeline exactly,
// units taken away cost their share of the time they are held, and alongside a collective the
// engines cost a compute-bound load nothing, a memory-bound one at most the collective's HBM
// bytes over HBM bandwidth, while gpu-style communication costs commUnits / computeUnits of
// the collective's time.

import { describe, it, expect } from "vitest";
import { Context } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";
import { runScenario } from "../host/scenario/run.js";
import { resolveScenario } from "../host/scenario/scenario.js";
import { ConfigError } from "../host/config.js";
import type { InterferenceRow } from "../host/scenario/interference.js";

const MIB = 1 << 20;
const HBM_BYTES_PER_PS = 48_800 / 8000; // hbmGbps default: 6.1 TB/s
const TFLOPS = 1500; // computeTflops default: flop/ps
const UNITS = 128; // computeUnits default

async function grid(config: Record<string, number> = {}) {
  return Context.open(coreModule(), { engines: 1, hbmBytes: MIB, ...config });
}

function runToEnd(ctx: Context, stepPs = 100_000n) {
  while (ctx.device.matmul().endPs === null) ctx.run(ctx.nowPs + stepPs);
  const m = ctx.device.matmul();
  return m.endPs! - m.startPs;
}

describe("the matmul grid alone", () => {
  it("compute-bound: the first load, then one tile's compute per tile (the next load hidden behind it)", async () => {
    const ctx = await grid();
    const tileBytes = 4 * MIB, intensity = 512, tiles = 20;
    ctx.device.startMatmul({ tiles, tileBytes, intensity });
    const load = tileBytes / HBM_BYTES_PER_PS, compute = (tileBytes * intensity) / TFLOPS;
    expect(compute).toBeGreaterThan(load);
    // a loop that did not overlap loads with compute would take tiles x (load + compute)
    expect(Math.abs(runToEnd(ctx) - (load + tiles * compute))).toBeLessThan(2 * tiles + 2); // ceil to a ps per event
    const m = ctx.device.matmul();
    expect(m.tilesDone).toBe(tiles);
    expect(Math.abs(m.computePs - tiles * compute)).toBeLessThan(2 * tiles);
    expect(Math.abs(m.stallPs - load)).toBeLessThan(2);
  });

  it("memory-bound: loads back to back, then the last tile's compute", async () => {
    const ctx = await grid();
    const tileBytes = MIB, intensity = 100, tiles = 30;
    ctx.device.startMatmul({ tiles, tileBytes, intensity });
    const load = tileBytes / HBM_BYTES_PER_PS, compute = (tileBytes * intensity) / TFLOPS;
    expect(load).toBeGreaterThan(compute);
    expect(Math.abs(runToEnd(ctx) - (tiles * load + compute))).toBeLessThan(2 * tiles + 2);
    // every tile's bytes, and at most a ps of HBM per tile more (a load ends on a whole ps)
    expect(Math.abs(ctx.device.hbmServed().compute - tiles * tileBytes)).toBeLessThan(tiles * HBM_BYTES_PER_PS);
  });

  it("shares HBM as one requester per unit: beside a stream wanting all of HBM, a memory-bound load gets U/(U+1) of it", async () => {
    const ctx = await grid();
    ctx.device.setComputeLoad(48_800); // one flow asking for the whole 6.1 TB/s
    const tileBytes = MIB, intensity = 100, tiles = 30;
    ctx.device.startMatmul({ tiles, tileBytes, intensity });
    // with one weight per flow it would get half, 1/2 instead of 128/129
    const load = tileBytes / ((HBM_BYTES_PER_PS * UNITS) / (UNITS + 1)), compute = (tileBytes * intensity) / TFLOPS;
    expect(Math.abs(runToEnd(ctx) - (tiles * load + compute))).toBeLessThan(2 * tiles + 2);
  });

  it("units taken for a while cost their share of that while: k/U x D", async () => {
    const tiles = 40, tileBytes = 4 * MIB, intensity = 1024;
    const alone = await grid();
    alone.device.startMatmul({ tiles, tileBytes, intensity });
    const t1 = runToEnd(alone);
    const ctx = await grid();
    ctx.device.startMatmul({ tiles, tileBytes, intensity });
    ctx.run(ctx.nowPs + 5_000_000n);
    ctx.device.reserveComputeUnits(32);
    const heldPs = 20_000_000;
    ctx.run(ctx.nowPs + BigInt(heldPs));
    ctx.device.reserveComputeUnits(0);
    const t2 = runToEnd(ctx);
    expect(Math.abs(t2 - t1 - (heldPs * 32) / UNITS)).toBeLessThan(100);
  });

  it("refuses what it cannot do, with a clear error", async () => {
    const ctx = await grid();
    expect(() => ctx.device.startMatmul({ tiles: 0, tileBytes: MIB, intensity: 1 })).toThrow(/tiles must be an integer/);
    expect(() => ctx.device.startMatmul({ tiles: 1, tileBytes: MIB, intensity: 0 })).toThrow(/intensity must be a positive number/);
    expect(() => ctx.device.reserveComputeUnits(UNITS)).toThrow(/units must be an integer in \[0, 127\]/);
    ctx.device.startMatmul({ tiles: 2, tileBytes: MIB, intensity: 1 });
    expect(() => ctx.device.startMatmul({ tiles: 2, tileBytes: MIB, intensity: 1 })).toThrow(/running a load already/);
  });
});

/** A 4-device ring all-reduce with a matmul load alongside; its interference row per size. */
async function alongside(interference: Record<string, unknown>, sizes = [512 * 1024]): Promise<{ rows: InterferenceRow[]; timesPs: number[] }> {
  const r = await runScenario(coreModule(), {
    name: "interference", seed: 3, until: "5ms", transport: "metaroce", devices: { count: 4 },
    fabric: { topology: { kind: "single-switch" } },
    collective: { op: "all-reduce", sizes, dtype: "bf16", interference: { tiles: 40, ...interference } },
  });
  const rows = r.collective!.rows;
  expect(rows.map((x) => [x.status, x.check])).toEqual(sizes.map(() => ["done", "ok"]));
  return { rows: rows.map((x) => x.interference!), timesPs: rows.map((x) => x.timePs) };
}

describe("compute interference alongside a collective", () => {
  it("engines, compute-bound load: its loads hide the collective's HBM traffic, slowdown exactly 0", async () => {
    const { rows: [m] } = await alongside({ mode: "engines", intensity: 512 });
    expect(m!.collectiveHbmBytes).toBeGreaterThan(MIB); // the collective did move bytes through HBM meanwhile
    expect(m!.alongsidePs).toBe(m!.alonePs);
    expect(m!.slowdown).toBe(0);
  });

  it("engines, memory-bound load: delayed by at most (and here nearly) the collective's HBM bytes / HBM bandwidth", async () => {
    const { rows: [m] } = await alongside({ mode: "engines", intensity: 150 });
    const bound = m!.collectiveHbmBytes / HBM_BYTES_PER_PS;
    const extra = m!.alongsidePs - m!.alonePs;
    expect(extra).toBeGreaterThan(0.9 * bound);
    expect(extra).toBeLessThanOrEqual(bound + 100);
  });

  it("gpu-style: the load loses commUnits / computeUnits of the collective's time, and more with twice the bytes", async () => {
    const { rows, timesPs } = await alongside({ mode: "gpu-style", intensity: 512, commUnits: 32 }, [256 * 1024, 512 * 1024]);
    for (const m of rows) {
      // held to the end of the runner's window after the final signal: a little over 32/128
      expect(m.lostPerCollectiveTime).toBeGreaterThan(0.25);
      expect(m.lostPerCollectiveTime).toBeLessThan(0.27);
      expect(m.commUnits).toBe(32);
    }
    // the larger collective runs longer and costs the load more, in proportion to its time
    expect(timesPs[1]).toBeGreaterThan(timesPs[0]!);
    expect(rows[1]!.slowdown).toBeGreaterThan(rows[0]!.slowdown);
    const extra = rows.map((m) => m.alongsidePs - m.alonePs);
    expect(extra[1]! / extra[0]!).toBeCloseTo(timesPs[1]! / timesPs[0]!, 1);
  });

  it("a scenario whose communication would hold every compute unit is refused, naming the field", () => {
    const sc = { name: "x", devices: { count: 2, config: { computeUnits: 16 } }, collective: { op: "all-reduce", interference: { mode: "gpu-style", commUnits: 16 } } };
    expect(() => resolveScenario(sc)).toThrow(ConfigError);
    expect(() => resolveScenario(sc)).toThrow(/scenario\.collective\.interference\.commUnits: 16 leaves the load none of the devices' 16 compute units/);
    expect(() => resolveScenario({ ...sc, collective: { op: "all-reduce", interference: { tiles: 0 } } })).toThrow(/collective\.interference\.tiles/);
  });
});
