// Results that never mislead (issue 29 §3): a run stopped before anything completed reports no
// rate (null in the result, "—" in the table) and says it was stopped; a collective's table
// states the size the user gave. Each test failed on the code before its fix.
import { describe, it, expect } from "vitest";
import { coreModule } from "../host/platform/node.js";
import { runScenario, type ScenarioInput } from "../host/scenario/run.js";
import { formatResult } from "../host/scenario/report.js";
import { formatSweep } from "../host/scenario/sweep.js";

const pair: ScenarioInput = {
  name: "pair", seed: 1, until: "1s", devices: { count: 2, config: { engines: 1, ports: 1, scaleUpPorts: 1 } },
  fabric: { mode: "timing", topology: { kind: "single-switch" } }, traffic: { pattern: "pairs", messageBytes: 1048576, messages: 16 },
};
const allReduce: ScenarioInput = {
  name: "ar", seed: 1, until: "20ms", devices: { count: 4 }, fabric: { topology: { kind: "single-switch" } },
  collective: { op: "all-reduce", sizes: [65536, 262144], engines: 2 },
};
/** The cells of a table's line (columns are two or more spaces apart). */
const cells = (line: string) => line.trim().split(/ {2,}/);
const lineOf = (text: string, start: RegExp) => text.split("\n").find((l) => start.test(l))!;

describe("a run stopped before anything completed (the page's Stop, Ctrl-C)", () => {
  // WAS: goodput 0.00 for the flow and the total, and completion times of 0 ps
  it("traffic: ended stopped, no goodput (null; — in the table), no completion time; once messages completed, their rates", async () => {
    const r = await runScenario(coreModule(), pair, { shouldStop: () => true });
    expect([r.ended, r.messages.completed, r.endPs]).toEqual(["stopped", 0, 0]);
    expect([r.flows[0]!.goodputGbps, r.totalGoodputGbps]).toEqual([null, null]);
    expect(JSON.parse(JSON.stringify(r)).totalGoodputGbps).toBeNull();
    const table = formatResult(r);
    expect(table.split("\n")[0]).toBe("pair (seed 1): stopped at 0 ps of simulated time (limit 1.000 s)");
    expect(cells(lineOf(table, /^0 /))).toEqual(["0", "0 → 1", "0/16", "0", "—", "incomplete"]);
    expect(cells(lineOf(table, /^total/))).toEqual(["total", "1 flow", "0/16", "0", "—"]);
    expect(table).toContain("completion time: p50 —, p99 —, max — (no message completed successfully)\n");

    // stopped after its first completions: the rates of what completed
    let done = 0;
    const later = await runScenario(coreModule(), pair, { onProgress: (_, c) => { done = c; }, shouldStop: () => done >= 2 });
    expect(later.ended).toBe("stopped");
    const f = later.flows[0]!;
    expect(f.completed).toBeGreaterThanOrEqual(2);
    expect(f.completed).toBeLessThan(16);
    expect(f.goodputGbps).toBeCloseTo((f.bytes * 8000) / f.durationPs, 9);
    expect(later.totalGoodputGbps).toBeCloseTo((later.totalBytes * 8000) / f.durationPs, 9); // one flow, posted at 0
    expect(cells(lineOf(formatResult(later), /^total/))[4]).toBe(later.totalGoodputGbps!.toFixed(2));
  });

  // WAS: the size's status was "time-limit", its time "1 ps" and its bandwidths 0.00
  it("a collective: its size says stopped, ran 0 ps, and has no bandwidth", async () => {
    const r = await runScenario(coreModule(), allReduce, { shouldStop: () => true });
    expect(r.ended).toBe("stopped");
    const rows = r.collective!.rows;
    expect(rows.map((x) => [x.status, x.timePs, x.algbwGBps, x.busbwGBps])).toEqual([["stopped", 0, null, null]]);
    expect(r.totalGoodputGbps).toBeNull();
    const table = formatResult(r);
    expect(table.split("\n")[0]).toMatch(/^ar \(seed 1\): stopped after 0 ps of simulated time/);
    expect(cells(lineOf(table, /^\s+65536 /))).toEqual(["65536", "16384", "0 ps", "—", "—", expect.stringMatching(/%$/), "skipped", "stopped"]);
  });

  it("a collective out of time: its size has no bandwidth either; the sweep table says — and which run was stopped", async () => {
    const r = await runScenario(coreModule(), { ...allReduce, until: "20us" });
    expect(r.collective!.rows.map((x) => [x.status, x.timePs > 0, x.busbwGBps])).toEqual([["time-limit", true, null]]);
    const stopped = await runScenario(coreModule(), allReduce, { shouldStop: () => true });
    const sweep = formatSweep("ar", [{ set: { until: "20us" }, result: r }, { set: { until: "20ms" }, result: stopped }], 3);
    expect(sweep.split("\n")[0]).toBe("ar: stopped in run 2 of 3");
    const rows = sweep.split("\n").filter((l) => /^\S+us|^\S+ms/.test(l)).map(cells);
    expect(rows.map((c) => [c[0], c[3], c.at(-1)])).toEqual([["20us", "—", "time-limit"], ["20ms", "—", "stopped"]]);
  });
});

describe("a collective's table states the size given per device", () => {
  // WAS: the size column was NCCL's size, n x the size given: an all-to-all of 65536 B blocks on
  // 16 devices read 1048576
  it("an all-to-all of 4096 B blocks on 4 devices: 4096 in the table and the sweep's, 16384 (NCCL's size) in the JSON's bytes", async () => {
    const s: ScenarioInput = { ...allReduce, collective: { op: "all-to-all", sizes: [4096], engines: 2, dtype: "i32" } };
    const r = await runScenario(coreModule(), s);
    const x = r.collective!.rows[0]!;
    expect([x.status, x.bytes, x.count]).toEqual(["done", 16384, 1024]);
    expect(x.algbwGBps).toBeCloseTo(16384 / (x.timePs / 1e12) / 1e9, 9);
    const table = formatResult(r);
    expect(cells(lineOf(table, /^\s+\d+\s+1024 /)).slice(0, 3)).toEqual(["4096", "1024", expect.stringMatching(/ us$/)]);
    expect(table).toContain("\nsize: bytes per device as given (collective.sizes: an all-gather's input, a reduce-scatter's result, an all-to-all's block); algbw = n x size / time for these (NCCL's size: the JSON's bytes), size / time for the others\n");
    const sweep = formatSweep("a2a", [{ set: { seed: 1 }, result: r }]);
    expect(cells(lineOf(sweep, /^1 /)).slice(0, 2)).toEqual(["1", "4096"]);
  });
});
