import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runScenario, type ScenarioResult } from "../host/scenario/run.js";
import { ScenarioTracer, type ScenarioTraceEvent } from "../host/scenario/trace.js";
import type { Fabric } from "../host/fabric/fabric.js";
import { coreModule } from "../host/platform/node.js";

// `menic run --trace`: a scenario as Perfetto counters and message slices.

const load = (name: string) => JSON.parse(readFileSync(`examples/scenarios/${name}.json`, "utf8"));
const tmp = mkdtempSync(join(tmpdir(), "menic-trace-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("the trace of examples/scenarios/dcqcn-converge.json", () => {
  let tracer: ScenarioTracer, traced: ScenarioResult, queuePeak = 0;
  const counter = (name: string) => tracer.events.filter((e) => e.ph === "C" && e.name === name).map((e) => ({ ts: e.ts!, v: (e.args as { value: number }).value }));
  beforeAll(async () => {
    tracer = new ScenarioTracer(1_000_000);
    let fabric!: Fabric;
    traced = await runScenario(coreModule(), load("dcqcn-converge"), { observer: tracer, onBuilt: (c) => { fabric = c.fabric; } });
    queuePeak = fabric.stats().links.find((l) => l.name === "dev0.port0-sw0")!.ba.queuePeakBytes;
  });

  it("does not change the run", async () => {
    expect(JSON.stringify(traced)).toBe(JSON.stringify(await runScenario(coreModule(), load("dcqcn-converge"))));
  });

  it("has one slice per message, from its post to its completion", () => {
    const begins = tracer.events.filter((e) => e.ph === "b"), ends = tracer.events.filter((e) => e.ph === "e");
    expect(begins.length).toBe(32);
    expect(new Set(begins.map((e) => e.id)).size).toBe(32);
    const endOf = new Map(ends.map((e) => [e.id, e]));
    for (const b of begins) {
      const e = endOf.get(b.id)!;
      expect(e.args).toEqual({ status: "SUCCESS" });
      expect(e.ts! - b.ts!).toBeGreaterThan(1048576 * 8 / 800 / 1e3); // no faster than line rate, us
    }
    // the second flow's messages are posted 50 us after the first's
    expect(begins.filter((e) => e.pid === 3).every((e) => e.ts === 50)).toBe(true);
    // the last completion is the run's last
    expect(Math.max(...ends.map((e) => e.ts!))).toBe(traced.flows[1]!.durationPs / 1e6 + 50);
  });

  it("shows DCQCN's cuts: line rate, then halved by the first CNP (alpha starts at 1)", () => {
    const rate = counter("flow 0 DCQCN rate Gb/s");
    expect(rate[0]!.v).toBe(800);
    expect(rate[1]!.v).toBe(400);
    expect(rate[1]!.ts).toBeGreaterThan(50); // the first mark comes once the second flow has joined
    // a counter is written only when it changes
    for (let k = 1; k < rate.length; k++) expect(rate[k]!.v).not.toBe(rate[k - 1]!.v);
  });

  it("shows the goodput each flow gets: the first alone at line rate, then both at one rate", () => {
    const g0 = counter("flow 0 goodput Gb/s"), g1 = counter("flow 1 goodput Gb/s");
    const at = (g: { ts: number; v: number }[], t: number) => g.filter((x) => x.ts <= t).at(-1)?.v ?? 0;
    expect(at(g0, 20)).toBeGreaterThan(0.95 * 800);
    expect(at(g1, 20)).toBe(0);
    // placed bytes add up to what the flows moved
    const bytes = (g: { ts: number; v: number }[]) => g.reduce((s, x, k) => s + (x.v * ((g[k + 1]?.ts ?? traced.endPs / 1e6) - x.ts) * 1e6) / 8000, 0);
    expect(Math.round(bytes(g0))).toBe(16 * 1048576);
    expect(Math.round(bytes(g1))).toBe(16 * 1048576);
  });

  it("shows the receiver's queue in the switch, up to the fabric's own peak", () => {
    const q = counter("queue sw0 → dev0.port0 KB");
    expect(q.length).toBeGreaterThan(10);
    const max = Math.max(...q.map((x) => x.v));
    expect(max * 1000).toBeLessThanOrEqual(queuePeak);
    expect(max * 1000).toBeGreaterThan(0.5 * queuePeak);
    // no other queue ever held a byte (the senders' ports face an idle switch)
    expect(new Set(tracer.events.filter((e) => e.ph === "C" && e.name.startsWith("queue")).map((e) => e.name))).toEqual(new Set(["queue sw0 → dev0.port0 KB"]));
  });
});

describe("menic run --trace", () => {
  it("writes the trace as JSON that Perfetto opens, and says so on stderr", () => {
    const out = join(tmp, "t.json");
    const r = spawnSync("node", ["bin/menic.js", "run", "examples/scenarios/dcqcn-converge.json", "--trace", out, "--trace-interval", "5us"], { encoding: "utf8" });
    expect(r.status).toBe(0);
    const t = JSON.parse(readFileSync(out, "utf8")) as { traceEvents: ScenarioTraceEvent[]; displayTimeUnit: string };
    expect(t.displayTimeUnit).toBe("ns");
    expect(r.stderr).toContain(`wrote ${out} (${t.traceEvents.length} trace events)`);
    // samples every 5 us: every counter's times are multiples of 5
    expect(t.traceEvents.filter((e) => e.ph === "C").every((e) => Number.isInteger(e.ts! / 5))).toBe(true);
  });

  it("refuses a bad interval, or one without --trace, before running", () => {
    const a = spawnSync("node", ["bin/menic.js", "run", "examples/scenarios/dcqcn-converge.json", "--trace-interval", "5us"], { encoding: "utf8" });
    expect(a.status).toBe(2);
    expect(a.stderr).toMatch(/^menic: --trace-interval needs --trace\n/);
    const b = spawnSync("node", ["bin/menic.js", "run", "examples/scenarios/dcqcn-converge.json", "--trace", join(tmp, "u.json"), "--trace-interval", "0.5ps"], { encoding: "utf8" });
    expect(b.status).toBe(2);
    expect(b.stderr).toMatch(/^menic: --trace-interval 0\.5ps: time 0\.5ps is finer than 1 ps\n/);
    const c = spawnSync("node", ["bin/menic.js", "run", "examples/scenarios/dcqcn-converge.json", "--trace", join(tmp, "u.json"), "--trace-interval", "500ps"], { encoding: "utf8" });
    expect(c.status).toBe(2);
    expect(c.stderr).toMatch(/^menic: --trace-interval must be at least 1ns, got 500 ps\n/);
    expect(existsSync(join(tmp, "u.json"))).toBe(false); // the path was checked, not created
  });
});

describe("the trace of a MetaRoCE-like run (examples/scenarios/metaroce-plane-failure.json)", () => {
  it("shows each path's window, hint and state: the plane-1 paths go suspect, failed, and back; the others stay active", async () => {
    const tracer = new ScenarioTracer(5_000_000);
    await runScenario(coreModule(), load("metaroce-plane-failure"), { observer: tracer });
    const series = (pid: number, name: string) => tracer.events.filter((e) => e.ph === "C" && e.pid === pid && e.name === name).map((e) => (e.args as { value: number }).value);
    // device 0 sends to device 1 over 8 paths, path k on port k mod 4: paths 1 and 5 cross plane 1
    for (let k = 0; k < 8; k++) {
      const state = series(1, `to 1 path ${k} state`);
      expect(state, `path ${k}`).toEqual(k % 4 === 1 ? [0, 1, 2, 0] : [0]);
      const hint = series(1, `to 1 path ${k} hint Gb/s`);
      // the receiving port's whole share (0.98 x 800) split between the connection's 2 paths on it
      expect(hint.at(-1)).toBeCloseTo(0.98 * 800 / 2, 0);
      // no ECN here: a window only grows, but an RTO sets it back to the initial one: 512 KiB a port, 2 paths on it
      const cwnd = series(1, `to 1 path ${k} cwnd KB`);
      const drops = cwnd.filter((v, i) => i > 0 && v < cwnd[i - 1]!);
      expect(drops, `path ${k}`).toEqual(k % 4 === 1 ? [262.144] : []);
    }
    // no DCQCN counters on this transport
    expect(tracer.events.some((e) => e.name.includes("DCQCN"))).toBe(false);
  });
});
