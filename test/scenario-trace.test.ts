import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runScenario, type ScenarioResult } from "../host/scenario/run.js";
import { ScenarioTracer, type ScenarioTraceEvent } from "../host/scenario/trace.js";
import type { Fabric } from "../host/fabric/fabric.js";
import { coreModule } from "../host/platform/node.js";
import { formatTime } from "../host/units.js";
import { traceSink } from "./helpers/trace-read.js";
import { goldenRun } from "./helpers/golden.js";

// `menic run --trace`: a scenario as Perfetto counters and message slices.

const load = (name: string) => JSON.parse(readFileSync(`examples/scenarios/${name}.json`, "utf8"));
const tmp = mkdtempSync(join(tmpdir(), "menic-trace-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("the trace of examples/scenarios/dcqcn-converge.json", () => {
  let events: ScenarioTraceEvent[], traced: ScenarioResult, queuePeak = 0;
  const counter = (name: string) => events.filter((e) => e.ph === "C" && e.name === name).map((e) => ({ ts: e.ts!, v: (e.args as { value: number }).value }));
  beforeAll(async () => {
    const out = traceSink();
    const tracer = new ScenarioTracer(out.sink, { intervalPs: 1_000_000 });
    let fabric!: Fabric;
    traced = await runScenario(coreModule(), load("dcqcn-converge"), { observer: tracer, onBuilt: (c) => { fabric = c.fabric; } });
    tracer.close();
    events = out.read().traceEvents;
    queuePeak = fabric.stats().links.find((l) => l.name === "dev0.port0-sw0")!.ba.queuePeakBytes;
  });

  it("does not change the run: the result is what `menic run --json` printed untraced (test/golden, held to the code by test/golden.test.ts)", () => {
    expect(traced).toEqual(goldenRun("dcqcn-converge"));
  });

  it("has one slice per message, from its post to its completion", () => {
    const begins = events.filter((e) => e.ph === "b"), ends = events.filter((e) => e.ph === "e");
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
    expect(new Set(events.filter((e) => e.ph === "C" && e.name.startsWith("queue")).map((e) => e.name))).toEqual(new Set(["queue sw0 → dev0.port0 KB"]));
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
    expect(a.stderr).toMatch(/^menic: --trace-interval needs --trace or --csv\n/);
    const b = spawnSync("node", ["bin/menic.js", "run", "examples/scenarios/dcqcn-converge.json", "--trace", join(tmp, "u.json"), "--trace-interval", "0.5ps"], { encoding: "utf8" });
    expect(b.status).toBe(2);
    expect(b.stderr).toMatch(/^menic: --trace-interval 0\.5ps: time 0\.5ps is finer than 1 ps\n/);
    const c = spawnSync("node", ["bin/menic.js", "run", "examples/scenarios/dcqcn-converge.json", "--trace", join(tmp, "u.json"), "--trace-interval", "500ps"], { encoding: "utf8" });
    expect(c.status).toBe(2);
    expect(c.stderr).toMatch(/^menic: --trace-interval must be at least 1ns, got 500 ps\n/);
    expect(existsSync(join(tmp, "u.json"))).toBe(false); // the path was checked, not created
    const d = spawnSync("node", ["bin/menic.js", "run", "examples/scenarios/dcqcn-converge.json", "--trace", join(tmp, "u.json"), "--trace-max-bytes", "100"], { encoding: "utf8" });
    expect([d.status, d.stderr]).toEqual([2, "menic: --trace-max-bytes must be at least 1024 (or 0: no bound), got 100\n(menic run --help says how to use it)\n"]);
    const e = spawnSync("node", ["bin/menic.js", "run", "examples/scenarios/dcqcn-converge.json", "--trace", join(tmp, "u.json"), "--trace-max-bytes", "12 parsecs"], { encoding: "utf8" });
    expect(e.status).toBe(2);
    expect(e.stderr).toMatch(/^menic: --trace-max-bytes 12 parsecs: not a size: bytes, or with a unit/);
    const f = spawnSync("node", ["bin/menic.js", "run", "examples/scenarios/dcqcn-converge.json", "--trace-max-bytes", "1MB"], { encoding: "utf8" });
    expect([f.status, f.stderr]).toEqual([2, "menic: --trace-max-bytes needs --trace\n(menic run --help says how to use it)\n"]);
    const missing = join(tmp, "no", "such", "t.json");
    const g = spawnSync("node", ["bin/menic.js", "run", "examples/scenarios/dcqcn-converge.json", "--trace", missing], { encoding: "utf8" });
    expect([g.status, g.stdout, g.stderr]).toEqual([2, "", `menic: --trace ${missing}: directory ${join(tmp, "no", "such")} does not exist\n(menic run --help says how to use it)\n`]);
    expect(existsSync(join(tmp, "u.json"))).toBe(false);
  });

  it("--trace-max-bytes: the trace stops at the bound, says at what simulated time, and the run goes on to its results", () => {
    const out = join(tmp, "bounded.json");
    const r = spawnSync("node", ["bin/menic.js", "run", "examples/scenarios/dcqcn-converge.json", "--trace", out, "--trace-interval", "100ns", "--trace-max-bytes", "64KB"], { encoding: "utf8" });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^dcqcn-converge \(seed \d+\): finished at /);
    const file = readFileSync(out);
    expect(file.length).toBeLessThanOrEqual(64_000);
    const t = JSON.parse(file.toString("utf8")) as { traceEvents: ScenarioTraceEvent[] };
    const note = t.traceEvents.at(-1)!;
    expect(note.name).toBe("trace truncated: its size bound (64000 bytes) reached");
    expect(r.stderr).toContain(`menic: wrote ${out} (${t.traceEvents.length - 1} trace events)\n`);
    expect(r.stderr).toContain(`menic: --trace ${out}: truncated at ${formatTime(Math.round(note.ts! * 1e6))} of simulated time, its size bound of 64000 bytes reached`);
  });
});

describe("the trace of a MetaRoCE-like run (examples/scenarios/metaroce-plane-failure.json)", () => {
  it("shows each path's window, hint and state: the plane-1 paths go suspect, failed, and back; the others stay active", async () => {
    // run again, traced: each path's state, hint and window over time are in no result (a tenth of a second)
    const out = traceSink();
    const tracer = new ScenarioTracer(out.sink, { intervalPs: 5_000_000 });
    await runScenario(coreModule(), load("metaroce-plane-failure"), { observer: tracer });
    tracer.close();
    const events = out.read().traceEvents;
    const series = (pid: number, name: string) => events.filter((e) => e.ph === "C" && e.pid === pid && e.name === name).map((e) => (e.args as { value: number }).value);
    // device 0 sends to device 1 over 8 paths, path k on port k mod 4: paths 1 and 5 cross plane 1
    for (let k = 0; k < 8; k++) {
      const state = series(1, `to 1 path ${k} state`);
      expect(state, `path ${k}`).toEqual(k % 4 === 1 ? [0, 1, 2, 0] : [0]);
      const hint = series(1, `to 1 path ${k} hint Gb/s`);
      // the receiving port's whole line (mrtHintPermille 1000 x 800 Gb/s) split between the connection's 2 paths on it
      expect(hint.at(-1)).toBeCloseTo(800 / 2, 0);
      // no ECN here: a window only grows, but an RTO sets it back to the initial one: 512 KiB a port, 2 paths on it
      const cwnd = series(1, `to 1 path ${k} cwnd KB`);
      const drops = cwnd.filter((v, i) => i > 0 && v < cwnd[i - 1]!);
      expect(drops, `path ${k}`).toEqual(k % 4 === 1 ? [262.144] : []);
    }
    // no DCQCN counters on this transport
    expect(events.some((e) => e.name.includes("DCQCN"))).toBe(false);
  });
});

describe("the trace is written as the run goes, within a size bound (issue 26)", () => {
  // dcqcn-converge sampled every 100 ns: about 390 kB of trace
  const traced = async (o: { maxBytes?: number; chunkBytes?: number }) => {
    const out = traceSink();
    const tracer = new ScenarioTracer(out.sink, { intervalPs: 100_000, ...o });
    const seen: { nowPs: number; chunks: number; bytes: number }[] = [];
    const r = await runScenario(coreModule(), load("dcqcn-converge"), {
      observer: tracer,
      onProgress: (nowPs) => { seen.push({ nowPs, chunks: out.chunks.length, bytes: out.chunks.reduce((s, c) => s + c.length, 0) }); },
    });
    tracer.close();
    return { out, tracer, seen, r };
  };

  it("hands the sink its bytes in chunks no bigger than its buffer as the run goes, not at the end", async () => {
    const chunkBytes = 4096;
    const { out, tracer, seen, r } = await traced({ chunkBytes, maxBytes: Infinity });
    const file = out.bytes();
    expect(file.length).toBe(tracer.writer.bytes);
    expect(file.length).toBeGreaterThan(50 * chunkBytes); // a trace many times the buffer...
    expect(Math.max(...out.chunks.map((c) => c.length))).toBeLessThanOrEqual(chunkBytes); // ...never more than a buffer at once
    // at each progress report, the sink already had all but the last buffer's worth of what was seen up to then
    const half = seen.find((s) => s.nowPs >= r.endPs / 2)!;
    expect(half.chunks).toBeGreaterThan(10);
    expect(seen.at(-1)!.bytes).toBeGreaterThan(file.length - 2 * chunkBytes);
    // the same file as one written with the default 1 MiB buffer, and it decodes
    const whole = await traced({ maxBytes: Infinity });
    expect(Buffer.compare(whole.out.bytes(), file)).toBe(0);
    expect(out.read().traceEvents.length).toBe(tracer.writer.events);
  });

  it("stops at its size bound: the file stays whole JSON, holds the trace's first events, and says when it stopped", async () => {
    const full = (await traced({ maxBytes: Infinity })).out.read().traceEvents;
    const maxBytes = 40_000;
    const { out, tracer } = await traced({ maxBytes });
    const file = out.bytes();
    expect(file.length).toBeLessThanOrEqual(maxBytes);
    expect(file.length).toBeGreaterThan(maxBytes - 1024); // it uses the room it has
    const events = out.read().traceEvents;
    const kept = events.slice(0, -1), note = events.at(-1)!;
    expect(kept.length).toBe(tracer.writer.events);
    expect(kept).toEqual(full.slice(0, kept.length)); // a prefix of the whole trace
    // the note: a global instant at the time of the first event left out
    const atPs = tracer.writer.truncatedAtPs!;
    expect(full[kept.length]!.ts).toBe(atPs / 1e6);
    expect(note).toEqual({ name: `trace truncated: its size bound (${maxBytes} bytes) reached`, ph: "i", s: "g", ts: atPs / 1e6, pid: 0, tid: 0 });
    expect(atPs).toBeGreaterThan(0);
  });
});
