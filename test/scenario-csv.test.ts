import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runScenario, type ScenarioResult, type CsvFile } from "../host/scenario/run.js";
import { CSV_FILES, CSV_HEADERS } from "../host/scenario/csv.js";
import { ScenarioTracer, type ScenarioTraceEvent } from "../host/scenario/trace.js";
import { compileCollective, stripePorts } from "../host/scenario/collective.js";
import { resolveScenario } from "../host/scenario/scenario.js";
import type { Fabric } from "../host/fabric/fabric.js";
import { coreModule } from "../host/platform/node.js";
import { traceSink } from "./helpers/trace-read.js";
import { goldenRun } from "./helpers/golden.js";

// `menic run --csv <dir>` (RunOptions.csv, host/scenario/csv.ts): a run's series as tidy CSV
// files, and (issue 29 §4) a collective's trace and CSV carrying the fabric on the engines'
// timeline (host/scenario/collective-observe.ts).

const load = (name: string) => JSON.parse(readFileSync(`examples/scenarios/${name}.json`, "utf8"));
const tmp = mkdtempSync(join(tmpdir(), "menic-csv-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A CSV file's header and rows (no field of ours is quoted). */
function parseCsv(text: string): { header: string[]; rows: string[][] } {
  const [head, ...lines] = text.trimEnd().split("\n");
  return { header: head!.split(","), rows: lines.map((l) => l.split(",")) };
}

/** Rows of a file as objects by column name. */
function records(text: string): Record<string, string>[] {
  const { header, rows } = parseCsv(text);
  return rows.map((r) => Object.fromEntries(header.map((h, k) => [h, r[k]!])));
}

/** The files a recording wrote, by name, through RunOptions.csv. */
function csvSinks() {
  const text = new Map<CsvFile, string>();
  return { text, open: (f: CsvFile) => { text.set(f, ""); return (s: string) => { text.set(f, text.get(f)! + s); }; } };
}

/** Each counter's value in the result by its CSV name (`fabric.drops.buffer_full`, `retransmitCauses.probes`, ...). */
function resultCounters(r: ScenarioResult): Map<string, number> {
  const out = new Map<string, number>();
  const add = (prefix: string, o: object) => { for (const [k, v] of Object.entries(o)) out.set(prefix + k, v as number); };
  add("fabric.drops.", r.fabric.drops);
  add("fabric.", { ecnMarks: r.fabric.ecnMarks, pfcPauses: r.fabric.pfcPauses, hops: r.fabric.hops, delivered: r.fabric.delivered });
  add("", { retransmits: r.retransmits, timeouts: r.timeouts, naksSent: r.naksSent, cnpsSent: r.cnpsSent, lateArrivals: r.lateArrivals });
  add("retransmitCauses.", r.retransmitCauses);
  add("deviceDrops.", r.deviceDrops);
  if (r.metaroce) add("metaroce.", r.metaroce);
  return out;
}

/** Per counter, its rows' values in time order. */
function counterSeries(text: string): Map<string, { t: number; v: number }[]> {
  const out = new Map<string, { t: number; v: number }[]>();
  for (const r of records(text)) out.set(r.counter!, [...(out.get(r.counter!) ?? []), { t: Number(r.time_ps), v: Number(r.value) }]);
  return out;
}

describe("menic run --csv on examples/scenarios/dcqcn-converge.json (two flows into one port, RoCEv2 with DCQCN)", () => {
  const dir = join(tmp, "dcqcn");
  let run: { status: number | null; stdout: string; stderr: string }, r: ScenarioResult, files: Record<CsvFile, string>, trace: ScenarioTraceEvent[];
  beforeAll(() => {
    const traceFile = join(tmp, "dcqcn.json");
    run = spawnSync("node", ["bin/menic.js", "run", "examples/scenarios/dcqcn-converge.json", "--json", "--csv", dir, "--trace", traceFile, "--trace-interval", "2us"], { encoding: "utf8" });
    r = JSON.parse(run.stdout);
    files = Object.fromEntries(CSV_FILES.map((f) => [f, readFileSync(join(dir, f), "utf8")])) as Record<CsvFile, string>;
    trace = JSON.parse(readFileSync(traceFile, "utf8")).traceEvents;
  });

  it("writes the four files (the directory made), each with its header row, and says so; the result is the untraced one", () => {
    expect(run.status).toBe(0);
    expect(r).toEqual(goldenRun("dcqcn-converge"));
    expect(files["flows.csv"].split("\n")[0]).toBe("time_ps,size_bytes,interval_ps,flow,src,dst,sending_gbps,goodput_gbps,dcqcn_rate_gbps");
    expect(files["queues.csv"].split("\n")[0]).toBe("time_ps,size_bytes,queue,depth_bytes");
    expect(files["paths.csv"]).toBe("time_ps,size_bytes,device,peer,path,port,state,cwnd_bytes,inflight_bytes,srtt_ps,hint_gbps\n"); // no paths on RoCEv2
    expect(files["counters.csv"].split("\n")[0]).toBe("time_ps,size_bytes,counter,value");
    for (const f of CSV_FILES) expect(files[f].split("\n")[0]).toBe(CSV_HEADERS[f].join(","));
    const rows = (f: CsvFile) => files[f].trimEnd().split("\n").length - 1;
    expect(run.stderr).toContain(`menic: wrote ${dir}: flows.csv (${rows("flows.csv")} rows), queues.csv (${rows("queues.csv")} rows), paths.csv (0 rows), counters.csv (${rows("counters.csv")} rows)\n`);
  });

  it("flows.csv: rows every 2 us; each flow's goodput over its intervals adds up to its bytes, its sending rate to at least that", () => {
    const flows = records(files["flows.csv"]);
    for (const [i, f] of r.flows.entries()) {
      const mine = flows.filter((x) => x.flow === String(i));
      expect(mine.every((x) => x.src === String(f.src) && x.dst === String(f.dst) && x.size_bytes === "")).toBe(true);
      const t = mine.map((x) => Number(x.time_ps));
      // on the 2 us grid, but the last: where the run ended, after its last completion
      expect(t.slice(0, -1)).toEqual(t.slice(0, -1).map((_, k) => (k + 1) * 2_000_000));
      expect(t.at(-1)!).toBeGreaterThanOrEqual(r.endPs);
      expect(t.at(-1)! - t.at(-2)!).toBeLessThanOrEqual(2_000_000);
      // the intervals tile the run from 0
      expect(mine.reduce((s, x) => s + Number(x.interval_ps), 0)).toBe(t.at(-1));
      const bytes = (col: string) => mine.reduce((s, x) => s + (Number(x[col]) * Number(x.interval_ps)) / 8000, 0);
      expect(Math.abs(bytes("goodput_gbps") - f.bytes)).toBeLessThan(1);
      expect(bytes("sending_gbps")).toBeGreaterThanOrEqual(f.bytes - 1);
    }
    // DCQCN: line rate first, cut by the CNPs once the second flow joins
    const rate0 = flows.filter((x) => x.flow === "0").map((x) => Number(x.dcqcn_rate_gbps));
    expect(rate0[0]).toBe(800);
    expect(Math.min(...rate0)).toBeLessThanOrEqual(400);
  });

  it("queues.csv: the one queue that held bytes, named and sampled as the Perfetto trace's counter", () => {
    const q = records(files["queues.csv"]);
    expect(new Set(q.map((x) => x.queue))).toEqual(new Set(["sw0 → dev0.port0"]));
    expect(Math.max(...q.map((x) => Number(x.depth_bytes)))).toBeGreaterThan(100_000);
    // the trace writes a counter when it changes: each of its values is the CSV's at that time
    const depth = new Map(q.map((x) => [Number(x.time_ps), Number(x.depth_bytes)]));
    const counters = trace.filter((e) => e.ph === "C" && e.name === "queue sw0 → dev0.port0 KB");
    expect(counters.length).toBeGreaterThan(10);
    for (const e of counters) expect((e.args as { value: number }).value * 1000).toBeCloseTo(depth.get(Math.round(e.ts! * 1e6))!, 6);
  });

  it("counters.csv: every counter of the result, never going down, its last row the result's value", () => {
    const series = counterSeries(files["counters.csv"]);
    const want = resultCounters(r);
    expect([...series.keys()]).toEqual([...want.keys()]);
    const end = Math.max(...[...series.values()].map((s) => s.at(-1)!.t));
    for (const [name, s] of series) {
      expect(s.at(-1), name).toEqual({ t: end, v: want.get(name) });
      for (let k = 1; k < s.length; k++) expect(s[k]!.v, name).toBeGreaterThanOrEqual(s[k - 1]!.v);
    }
    expect(want.get("fabric.ecnMarks")).toBeGreaterThan(100);
    // a counter's row comes when it grows: ECN marks in many rows, a counter that stays 0 in two (first and last)
    expect(series.get("fabric.ecnMarks")!.length).toBeGreaterThan(20);
    expect(series.get("timeouts")!.map((x) => x.v)).toEqual([0, 0]);
  });
});

describe("RunOptions.csv on examples/scenarios/metaroce-plane-failure.json (a plane down 100-300 us)", () => {
  let r: ScenarioResult, text: Map<CsvFile, string>;
  beforeAll(async () => {
    const s = csvSinks();
    r = await runScenario(coreModule(), load("metaroce-plane-failure"), { csv: { open: s.open, intervalPs: 5_000_000 } });
    text = s.text;
  });

  it("paths.csv: the plane-1 paths go suspect, then failed, and come back; the others stay active", () => {
    const paths = records(text.get("paths.csv")!);
    const states = (path: number) => paths.filter((p) => p.device === "0" && p.peer === "1" && p.path === String(path)).map((p) => p.state).filter((s, k, a) => k === 0 || s !== a[k - 1]);
    for (let k = 0; k < 8; k++) expect(states(k), `path ${k}`).toEqual(k % 4 === 1 ? ["active", "suspect", "failed", "active"] : ["active"]);
    const p1 = paths.filter((p) => p.device === "0" && p.path === "1");
    expect(p1.every((p) => p.port === "1")).toBe(true);
    expect(Math.max(...p1.map((p) => Number(p.srtt_ps)))).toBeGreaterThan(0);
    expect(Math.max(...paths.map((p) => Number(p.inflight_bytes)))).toBeGreaterThan(0);
    // failed while the plane is down (from 100 us), back within an RTO's probing of its return (300 us)
    const failed = p1.filter((p) => p.state === "failed").map((p) => Number(p.time_ps));
    expect(Math.min(...failed)).toBeGreaterThan(100_000_000);
    expect(Math.max(...failed)).toBeLessThan(400_000_000);
  });

  it("counters.csv: every counter of the result, its last row the result's (the MetaRoCE-like ones too)", () => {
    const series = counterSeries(text.get("counters.csv")!);
    const want = resultCounters(r);
    expect([...series.keys()]).toEqual([...want.keys()]);
    for (const [name, s] of series) expect(s.at(-1)!.v, name).toBe(want.get(name));
    expect(want.get("metaroce.rtos")).toBeGreaterThan(0);
    expect(want.get("fabric.drops.link_down")).toBeGreaterThan(0);
    // the drops come while the plane is down
    const drops = series.get("fabric.drops.link_down")!;
    expect(drops.find((x) => x.v > 0)!.t).toBeGreaterThanOrEqual(100_000_000);
    expect(drops.filter((x) => x.t < 100_000_000).every((x) => x.v === 0)).toBe(true);
  });
});

// WAS (issue 29 §4): a collective's trace held only its engines' slices (its runner never
// called the observer: no begin, no sample), and --csv had nothing of it
describe("a collective's fabric on its engines' timeline: examples/scenarios/alltoall-planes.json traced and recorded at 200 ns", () => {
  const file = "alltoall-planes";
  let r: ScenarioResult, events: ScenarioTraceEvent[], text: Map<CsvFile, string>;
  /** per size, each queue's peak in its fabric's own counters */
  const peaks: Map<string, number>[] = [];
  beforeAll(async () => {
    const out = traceSink(), s = csvSinks();
    const tracer = new ScenarioTracer(out.sink, { intervalPs: 200_000 });
    const fabrics: Fabric[] = [];
    r = await runScenario(coreModule(), load(file), { observer: tracer, csv: { open: s.open, intervalPs: 200_000 }, onBuilt: (c) => { fabrics.push(c.fabric); } });
    tracer.close();
    events = out.read().traceEvents;
    text = s.text;
    for (const f of fabrics) peaks.push(new Map(f.stats().links.flatMap((l) => [[`${l.ab.from} → ${l.ab.to}`, l.ab.queuePeakBytes], [`${l.ba.from} → ${l.ba.to}`, l.ba.queuePeakBytes]] as [string, number][])));
  });

  it("does not change the run: the result is the golden one", () => {
    expect(r).toEqual(goldenRun(file));
  });

  it("the trace: each size's queues in a fabric process of its own, within that size's run, some non-zero; rates per pair of devices beside the engines", () => {
    const sizes = load(file).collective.sizes as number[];
    for (const k of sizes.keys()) {
      const graph = events.filter((e) => e.cat === "graph" && e.ph === "X" && e.pid >= 1000 * (k + 1) && e.pid < 1000 * (k + 2));
      expect(graph.length).toBeGreaterThan(0);
      const start = Math.min(...graph.map((e) => e.ts!)), end = Math.max(...graph.map((e) => e.ts! + e.dur!));
      const fabricPid = 1000 * (k + 1) + 8;
      const name = events.find((e) => e.ph === "M" && e.pid === fabricPid && e.name === "process_name")!;
      expect((name.args as { name: string }).name).toMatch(/: fabric$/);
      const queues = events.filter((e) => e.ph === "C" && e.pid === fabricPid && e.name.startsWith("queue "));
      // few: paced at their grants, the connections keep queues brief (8 samples at the smaller size)
      expect(queues.length, `size ${k}`).toBeGreaterThan(0);
      expect(queues.some((e) => (e.args as { value: number }).value > 0)).toBe(true);
      for (const e of queues) {
        expect(e.ts!).toBeGreaterThanOrEqual(start);
        expect(e.ts!).toBeLessThanOrEqual(end + 0.2);
      }
      // device 0's rate to device 1, in device 0's process of this size, non-zero while it ran
      const g = events.filter((e) => e.ph === "C" && e.pid === 1000 * (k + 1) && e.name === "to 1 goodput Gb/s");
      expect(Math.max(...g.map((e) => (e.args as { value: number }).value))).toBeGreaterThan(1);
    }
    // 8 devices x 7 peers x 8 paths: more than PATH_TRACKS_MAX, so no path counters in the trace (the CSV has them)
    expect(events.some((e) => e.ph === "C" && e.name.includes(" path "))).toBe(false);
    expect(records(text.get("paths.csv")!).filter((p) => p.device === "0" && p.peer === "1" && p.size_bytes === "16384").length).toBeGreaterThan(8);
  });

  it("queues.csv: per size, the queues that held bytes, none sampled above its peak in that size's fabric", () => {
    const sizes = load(file).collective.sizes as number[];
    expect(peaks.length).toBe(sizes.length);
    sizes.forEach((size, k) => {
      const max = new Map<string, number>();
      for (const x of records(text.get("queues.csv")!).filter((x) => x.size_bytes === String(size))) max.set(x.queue!, Math.max(max.get(x.queue!) ?? 0, Number(x.depth_bytes)));
      expect(max.size).toBeGreaterThan(0);
      for (const [name, m] of max) {
        expect(m, name).toBeGreaterThan(0);
        expect(m, name).toBeLessThanOrEqual(peaks[k]!.get(name)!);
      }
    });
  });

  it("flows.csv: per size and pair of devices, the bytes placed are what the program's writes and sends move between them", () => {
    const sc = resolveScenario(load(file));
    const flows = records(text.get("flows.csv")!);
    for (const size of sc.collective!.sizes) {
      const p = compileCollective(sc.collective!, sc.devices.count, size, stripePorts(sc)[0]);
      const moved = new Map<string, number>();
      p.ranks.forEach((rank, d) => { for (const n of rank.nodes) if (n.op === "write" || n.op === "send") moved.set(`${d}>${n.peer}`, (moved.get(`${d}>${n.peer}`) ?? 0) + n.bytes); });
      const mine = flows.filter((x) => x.size_bytes === String(size));
      const placed = new Map<string, number>();
      for (const x of mine) placed.set(`${x.src}>${x.dst}`, (placed.get(`${x.src}>${x.dst}`) ?? 0) + (Number(x.goodput_gbps) * Number(x.interval_ps)) / 8000);
      expect(placed.size).toBe(8 * 7);
      for (const [pair, bytes] of moved) expect(placed.get(pair), `size ${size}, ${pair}`).toBeCloseTo(bytes, 3);
    }
    // each size's counters end at its own cluster's: the result sums them over the sizes
    const last = new Map<string, number>();
    for (const x of records(text.get("counters.csv")!)) last.set(`${x.size_bytes}/${x.counter}`, Number(x.value));
    const hops = sc.collective!.sizes.reduce((s, size) => s + last.get(`${size}/fabric.hops`)!, 0);
    expect(hops).toBe(r.fabric.hops);
  });
});

describe("menic run --csv: what it refuses", () => {
  const scenario = "examples/scenarios/roce-pair.json";
  const menic = (...args: string[]) => spawnSync("node", ["bin/menic.js", "run", ...args], { encoding: "utf8" });

  it("a path that is a file, a sweep, --trace-interval with neither --trace nor --csv: exit 2, nothing written", () => {
    const file = join(tmp, "a-file");
    writeFileSync(file, "x");
    expect(menic(scenario, "--csv", file).stderr).toBe(`menic: --csv ${file}: is not a directory\n(menic run --help says how to use it)\n`);
    const sweep = menic("examples/scenarios/metaroce-cc.json", "--csv", join(tmp, "sweep"));
    expect([sweep.status, sweep.stderr]).toEqual([2, "menic: --csv is for one run, not a sweep (--set sweep=null runs the scenario once)\n(menic run --help says how to use it)\n"]);
    expect(existsSync(join(tmp, "sweep"))).toBe(false);
    const missing = join(tmp, "no", "such");
    expect(menic(scenario, "--csv", missing).stderr).toBe(`menic: --csv ${missing}: directory ${join(tmp, "no")} does not exist\n(menic run --help says how to use it)\n`);
    const interval = menic(scenario, "--trace-interval", "1us");
    expect([interval.status, interval.stderr]).toEqual([2, "menic: --trace-interval needs --trace or --csv\n(menic run --help says how to use it)\n"]);
  });
});
