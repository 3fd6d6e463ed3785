// A scenario's `sweep`: the same scenario run once per combination of the values it lists,
// each value set at its path as `--set` would (`"transport": ["rocev2", "metaroce"]`,
// `"faults[0].random": [0, 0.01, 0.1]`), and the runs compared in one table. Combinations go
// in the order of the sweep's keys, the last key changing fastest.

import { ConfigError } from "../config.js";
import { applySet } from "./overrides.js";
import { resolveScenario } from "./scenario.js";
import { runScenario, checkScenario, type RunOptions, type ScenarioResult, type ScenarioInput } from "./run.js";
import { formatTime } from "../units.js";
import { lateWarning } from "./counters.js";
import { INTERFERENCE_HEAD, interferenceCells, rateCell, fctCells, givenBytes, sizeNote, NO_RATE } from "./report.js";

export interface SweepRun {
  /** the values this run set, by path */
  set: Record<string, unknown>;
  result: ScenarioResult;
}

/**
 * The runs a sweep may make unless the caller allows more (`maxRuns`, `menic run --max-runs`):
 * every run is a whole scenario run and its result is kept for the table.
 */
export const SWEEP_RUNS_BOUND = 10_000;

/** One run of a sweep: the values it set, by path, and the scenario it runs. */
export interface SweepCombo {
  set: Record<string, unknown>;
  scenario: Record<string, unknown>;
}

/**
 * The runs a sweep stands for, made one at a time as they are asked for (each checked by
 * resolveScenario then); `runs` says how many there are without making them.
 */
export interface Sweep extends Iterable<SweepCombo> {
  readonly runs: number;
}

/**
 * The runs a scenario's sweep stands for; a scenario without a sweep is one run that set
 * nothing. Throws ConfigError when the scenario is bad, or when the sweep would make more than
 * `maxRuns` runs (SWEEP_RUNS_BOUND by default); a bad value is refused when its run is made.
 */
export function expandSweep(input: unknown, opts: { maxRuns?: number } = {}): Sweep {
  resolveScenario(input); // the sweep's own shape, and the scenario around it
  const base = structuredClone(input) as Record<string, unknown>;
  const sweep = Object.entries((base.sweep ?? {}) as Record<string, unknown[]>);
  delete base.sweep;
  const runs = sweep.reduce((k, [, values]) => k * values.length, 1);
  const maxRuns = opts.maxRuns ?? SWEEP_RUNS_BOUND;
  if (runs > maxRuns)
    throw new ConfigError("scenario.sweep", `would make ${runs} runs (${sweep.map(([, v]) => v.length).join(" x ")} values), more than the ${maxRuns} a sweep may make: sweep fewer values, or allow more (menic run --max-runs ${runs}; maxRuns in the API)`);
  return {
    runs,
    *[Symbol.iterator]() {
      for (let k = 0; k < runs; k++) yield combo(base, sweep, k);
    },
  };
}

/** Makes every run of `sweep` once, keeping none, and hands each to `check`: a bad one is refused before the first runs. */
export function checkSweep(sweep: Sweep, check: (c: SweepCombo) => void = () => {}): void {
  for (const c of sweep) check(c);
}

/** Run `k` of a sweep: its values the digits of k, the last key changing fastest. */
function combo(base: Record<string, unknown>, sweep: [string, unknown[]][], k: number): SweepCombo {
  const digits: number[] = [];
  for (let i = sweep.length - 1; i >= 0; i--) {
    const n = sweep[i]![1].length;
    digits[i] = k % n;
    k = Math.floor(k / n);
  }
  // in the sweep's order: the table's columns and --json's keys
  const set = Object.fromEntries(sweep.map(([key, values], i) => [key, values[digits[i]!]]));
  const scenario = structuredClone(base);
  for (const [key, v] of Object.entries(set)) {
    try {
      // "a,b": paths that change together, each value a list of one value per path
      const paths = key.split(",");
      if (paths.length > 1 && !(Array.isArray(v) && v.length === paths.length)) throw new ConfigError("", `must be a list of ${paths.length} values, one per path`);
      paths.forEach((path, i) => applySet(scenario, `${path}=${JSON.stringify(paths.length > 1 ? (v as unknown[])[i] : v)}`));
      resolveScenario(scenario);
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      throw new ConfigError(`scenario.sweep["${key}"]`, `${JSON.stringify(v)}: ${e.message.replace(/^: /, "")}`);
    }
  }
  return { set, scenario };
}

/**
 * Runs every combination of the sweep, one after another (made as each run comes), each checked
 * first as runScenario checks it: a sweep with a bad run is refused before the first runs.
 */
export async function runSweep(coreModule: WebAssembly.Module, input: unknown, opts: RunOptions & {
  maxRuns?: number;
  onRun?: (k: number, n: number, set: Record<string, unknown>, scenario: Record<string, unknown>) => void;
  /** which runs to make (k: 0-based, the sweep's order), every one when absent: a shard's (shard.ts) */
  select?: (k: number) => boolean;
} = {}): Promise<SweepRun[]> {
  const sweep = expandSweep(input, opts);
  checkSweep(sweep, (c) => checkScenario(coreModule, c.scenario, opts));
  const out: SweepRun[] = [];
  let k = 0;
  for (const r of sweep) {
    if (opts.select && !opts.select(k)) { k++; continue; }
    opts.onRun?.(k++, sweep.runs, r.set, r.scenario);
    out.push({ set: r.set, result: await runScenario(coreModule, r.scenario as ScenarioInput, opts) });
    if (out.at(-1)!.result.ended === "stopped") break;
  }
  return out;
}

/**
 * The table's first line: the sweep's name and its runs; of a sweep stopped before its last run,
 * how many of the `planned` ran and that it was stopped.
 */
function sweepHead(name: string, runs: readonly SweepRun[], planned: number): string {
  const stopped = runs.at(-1)?.result.ended === "stopped";
  if (stopped) return `${name}: stopped in run ${runs.length} of ${planned}`;
  return `${name}: ${runs.length} run${runs.length === 1 ? "" : "s"}`;
}

/**
 * The comparison table: one row per run, the values it set, then what it reached (a collective:
 * one row per run and size). `planned`: the runs the sweep makes (Sweep.runs), which a stopped
 * sweep did not all make.
 */
export function formatSweep(name: string, runs: readonly SweepRun[], planned = runs.length): string {
  const keys = Object.keys(runs[0]?.set ?? {});
  if (runs[0]?.result.collective || runs[0]?.result.collectives) return formatCollectiveSweep(sweepHead(name, runs, planned), keys, runs);
  // an open-loop workload's runs: their FCT slowdown over every flow too (docs/workloads.md)
  const slow = runs.some(({ result: r }) => r.workload);
  const slowCell = (x: number | null | undefined) => (x === null || x === undefined ? NO_RATE : x.toFixed(2));
  const head = [...keys, "goodput Gb/s", "FCT p50", "FCT p99", ...(slow ? ["slowdown p50", "slowdown p99"] : []), "retransmits", "timeouts", "drops", "ended"];
  const rows = runs.map(({ set, result: r }) => [
    ...keys.map((k) => (typeof set[k] === "string" ? String(set[k]) : JSON.stringify(set[k]))),
    rateCell(r.totalGoodputGbps), ...fctCells(r, ["p50", "p99"]),
    ...(slow ? [slowCell(r.workload?.slowdown.all.p50), slowCell(r.workload?.slowdown.all.p99)] : []),
    String(r.retransmits), String(r.timeouts),
    String(Object.values(r.fabric.drops).reduce((s, n) => s + n, 0)), r.ended,
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const right = (i: number) => i >= keys.length && i < head.length - 1;
  const line = (cells: string[]) => cells.map((c, i) => (right(i) ? c.padStart(w[i]!) : c.padEnd(w[i]!))).join("  ").trimEnd();
  const note = "retransmits: RoCEv2 counts go-back-N restarts, the MetaRoCE-like transport packets sent again; timeouts: RoCEv2 timer expiries, MetaRoCE-like path RTOs";
  return [sweepHead(name, runs, planned), "", line(head), ...rows.map(line), "", note, ...lateLines(runs)].map((l) => `${l}\n`).join("");
}

/** A warning per run whose frames reached a device in its past (report.ts prints the same for one run). */
function lateLines(runs: readonly SweepRun[]): string[] {
  return runs.flatMap(({ set, result }, i) => {
    const w = lateWarning(result.lateArrivals);
    return w ? [`run ${i} (${JSON.stringify(set)}): ${w}`] : [];
  });
}

function formatCollectiveSweep(title: string, keys: string[], runs: readonly SweepRun[]): string {
  // a sequence of collectives: a column says which of them a row is
  const seq = runs[0]?.result.collectives !== undefined;
  const reports = (r: SweepRun["result"]) => (r.collective ? [r.collective] : r.collectives ?? []);
  // with a matmul load alongside (docs/compute.md), its columns follow the collective's
  const load = runs.some(({ result: r }) => reports(r).some((c) => c.rows.some((x) => x.interference)));
  const extra = load ? INTERFERENCE_HEAD : [];
  const head = [...keys, ...(seq ? ["collective"] : []), "size (B)", "time", "busbw GB/s", "engines busy", ...extra, "check", "retransmits", "ended"];
  const at = seq ? 1 : 0;
  const rows = runs.flatMap(({ set, result: r }) => reports(r).flatMap((c, i) => c.rows.map((x) => [
    ...keys.map((k) => (typeof set[k] === "string" ? String(set[k]) : JSON.stringify(set[k]))),
    ...(seq ? [`${i}: ${c.op} ${c.portGroup ?? ""}`.trimEnd()] : []),
    String(givenBytes(c, x)), formatTime(x.timePs), rateCell(x.busbwGBps), `${(100 * x.engineUtil).toFixed(1)}%`,
    ...(load ? (x.interference ? interferenceCells(x.interference) : extra.map(() => "-")) : []),
    x.check, String(r.retransmits), x.error ? `${x.status}: ${x.error}` : x.status,
  ])));
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const right = (i: number) => i >= keys.length + at && i < keys.length + at + 4 + extra.length;
  const line = (cells: string[]) => cells.map((c, i) => (right(i) ? c.padStart(w[i]!) : c.padEnd(w[i]!))).join("  ").trimEnd();
  const notes = ["retransmits: over all the run's sizes", ...sizeNote(runs.flatMap(({ result: r }) => reports(r))), ...(load ? ["matmul load (docs/compute.md): slowdown = alongside / alone - 1 (the slowest device); lost = (alongside - alone) / the collective's time"] : [])];
  return [title, "", line(head), ...rows.map(line), "", ...notes, ...lateLines(runs)].map((l) => `${l}\n`).join("");
}
