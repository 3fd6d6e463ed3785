// npm run fidelity [-- --quick | --render]: the seeds' claims measured (issue 27 §4). Runs every
// claim of bench/lib/fidelity-claims.ts on each of its seeds, and the loss grid (0.1, 1, 3 and
// 10 %, independent and bursty, both transports), each distinct run once; writes
// docs/fidelity.json (every figure per seed, every run's inputs and metrics, the hashes of the
// core and of the claims table) and docs/fidelity.md, rendered from that JSON by
// bench/lib/fidelity-render.ts. --quick (one seed, short runs, for working on the table) writes
// build/fidelity-quick.json and .md instead, never the committed page; --render measures nothing
// and renders the page again from docs/fidelity.json (after a change to the page's layout
// alone). As a bench suite (`npm run bench -- fidelity`) it prints each claim's median figure
// and writes nothing. The runs go on worker threads, one per core (FIDELITY_JOBS=n sets how
// many; 1 runs them one after another in the process): the sheet is the same either way.
import { createHash } from "node:crypto";
import { availableParallelism, cpus } from "node:os";
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { fileURLToPath } from "node:url";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "../host/platform/node.js";
import { onWorkers } from "../host/platform/worker-pool.js";
import { CLAIMS, SMALL_SEEDS, LOSS_RATES, BURST_FRAMES, claimsFile, lossRun, runSpec, type RunSpec, type Metrics, type LossModel } from "./lib/fidelity-claims.js";
import { renderFidelity, spreadOf, verdictOf, type FidelitySheet, type SheetClaim, type SheetRun, type LossCell } from "./lib/fidelity-render.js";
import { figure } from "./lib/report.js";

export const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");

/**
 * Each distinct spec once, numbered in the order first asked for (plan), then all of them run on
 * `jobs` worker threads (run), their metrics kept under their numbers: the sheet is the same
 * whatever order they end in, and whatever the number of threads (each run depends only on
 * its spec). With jobs 1 they run one after another in this thread.
 */
class Runs {
  readonly list: SheetRun[] = [];
  private index = new Map<string, number>();
  constructor(private readonly log: (line: string) => void) {}
  /** The number of `spec`'s run, planned now if it was not. */
  plan(spec: RunSpec): number {
    const key = JSON.stringify(spec);
    let i = this.index.get(key);
    if (i === undefined) {
      i = this.list.push({ spec: spec as unknown as Record<string, unknown>, metrics: {}, wallS: 0 }) - 1;
      this.index.set(key, i);
    }
    return i;
  }
  metrics(i: number): Metrics {
    return this.list[i]!.metrics;
  }
  async run(jobs: number): Promise<void> {
    const done = (i: number, metrics: Metrics, wallS: number) => {
      Object.assign(this.list[i]!, { metrics, wallS: +wallS.toFixed(2) });
      this.log(`fidelity: ${describe(this.list[i]!.spec as unknown as RunSpec)}: ${wallS.toFixed(1)} s`);
    };
    if (jobs <= 1) {
      for (const [i, r] of this.list.entries()) {
        const t0 = performance.now();
        done(i, await runSpec(r.spec as unknown as RunSpec), (performance.now() - t0) / 1000);
      }
      return;
    }
    // the longest first (the planes and incast runs: seconds each), so that no thread is left
    // with one of them at the end: the order they are handed out changes nothing measured
    const order = this.list.map((_, i) => i).sort((a, b) => weight(this.list[b]!.spec) - weight(this.list[a]!.spec) || a - b);
    await onWorkers<{ i: number; spec: Record<string, unknown> }, { i: number; metrics?: Metrics; wallS: number; error?: string }>(
      fileURLToPath(import.meta.url), { tag: WORKER_TAG }, jobs, order.map((i) => ({ i, spec: this.list[i]!.spec })), (_, d) => {
        if (d.error !== undefined) throw new Error(`fidelity: ${describe(this.list[d.i]!.spec as unknown as RunSpec)}: ${d.error}`);
        done(d.i, d.metrics!, d.wallS);
      });
  }
}

/** How long a run takes, roughly, to hand the long ones out first: the large scenarios, then the rest. */
function weight(spec: Record<string, unknown>): number {
  const s = spec as unknown as RunSpec;
  if (s.kind !== "scenario") return 1;
  return s.scenario === "metaroce-planes" || s.scenario === "metaroce-incast" || s.scenario === "compute-interference" ? 3 : 2;
}

const WORKER_TAG = "menic-fidelity-worker";

/** In a worker thread Runs.run started: makes the runs it is handed, one at a time. */
if (!isMainThread && (workerData as { tag?: string } | null)?.tag === WORKER_TAG) {
  parentPort!.on("message", async ({ i, spec }: { i: number; spec: RunSpec }) => {
    const t0 = performance.now();
    try {
      const metrics = await runSpec(spec);
      parentPort!.postMessage({ i, metrics, wallS: (performance.now() - t0) / 1000 });
    } catch (e) {
      parentPort!.postMessage({ i, wallS: 0, error: e instanceof Error ? e.message : String(e) });
    }
  });
}

/** Worker threads for the runs: FIDELITY_JOBS, else every core. */
const jobsOf = () => Number(process.env.FIDELITY_JOBS ?? availableParallelism());

const describe = (s: RunSpec) =>
  s.kind === "scenario" ? `${s.scenario} ${s.set.join(" ")}${s.probe ? ` (${s.probe})` : ""}` : s.kind === "read-loss" ? `read-loss ${s.cablePs} ps cable, seeds ${s.seeds[0]}…` : s.kind;

/** Measures the whole sheet: every run planned, run (on worker threads), then each figure from its runs' metrics. */
export async function measureSheet(opts: { quick?: boolean; log?: (line: string) => void } = {}): Promise<FidelitySheet> {
  const quick = opts.quick ?? false;
  const t0 = performance.now();
  const runs = new Runs(opts.log ?? (() => {}));
  const seedsOf = (c: (typeof CLAIMS)[number]) => (c.seeds === null ? null : quick ? c.seeds.slice(0, 1) : c.seeds);
  const lossSeeds = quick ? SMALL_SEEDS.slice(0, 1) : SMALL_SEEDS;
  const TRANSPORTS = ["metaroce", "rocev2"] as const, MODELS: LossModel[] = ["random", "bursty"];
  // the plan: each claim's runs per seed, then the loss grid's
  const planned = CLAIMS.map((c) => (seedsOf(c) ?? [null]).map((seed) => c.runs(seed, quick).map((spec) => runs.plan(spec))));
  const grid = TRANSPORTS.map((transport) => MODELS.map((model) => LOSS_RATES.map((rate) => lossSeeds.map((seed) => runs.plan(lossRun(transport, model, rate, seed))))));
  await runs.run(jobsOf());
  const claims: SheetClaim[] = CLAIMS.map((c, k) => {
    const seeds = seedsOf(c);
    const perSeed: SheetClaim["perSeed"] = (seeds ?? [null]).map((seed, j) => {
      const got = planned[k]![j]!;
      const f = c.figure(got.map((i) => runs.metrics(i)));
      return { seed, value: f.value, ...(f.parts ? { parts: f.parts } : {}), runs: got };
    });
    const values = perSeed.map((p) => p.value);
    const { runs: _fn, figure: _fig, seeds: _s, ...text } = c;
    return { ...text, seeds, perSeed, spread: spreadOf(values), verdict: verdictOf(values, c.bound, c.explained) };
  });
  const rows: FidelitySheet["loss"]["rows"] = TRANSPORTS.flatMap((transport, a) => MODELS.map((model, b) => ({
    transport, model,
    cells: LOSS_RATES.map((rate, r) => {
      const perSeed = lossSeeds.map((seed, j) => { const i = grid[a]![b]![r]![j]!; return { seed, value: runs.metrics(i).goodputOfLine!, run: i }; });
      return { rate, perSeed, spread: spreadOf(perSeed.map((p) => p.value)) } as LossCell;
    }),
  })));
  const root = packageRoot();
  return {
    quick,
    hashes: { core: sha256(readFileSync(join(root, "build", "menic.wasm"))), claims: sha256(readFileSync(claimsFile())) },
    host: { node: process.version, cpus: cpus().length, wallS: Math.round((performance.now() - t0) / 1000) },
    claims,
    loss: { seeds: lossSeeds, burstFrames: BURST_FRAMES, rates: LOSS_RATES, rows },
    runs: runs.list,
  };
}

/** Measures the sheet and writes it: docs/fidelity.{json,md}, or build/fidelity-quick.{json,md} with `quick`. */
export async function writeSheet(opts: { quick?: boolean } = {}): Promise<{ json: string; md: string; sheet: FidelitySheet }> {
  const sheet = await measureSheet({ quick: opts.quick, log: (l) => console.error(l) });
  const root = packageRoot();
  const dir = opts.quick ? join(root, "build") : join(root, "docs");
  const base = opts.quick ? "fidelity-quick" : "fidelity";
  mkdirSync(dir, { recursive: true });
  const json = join(dir, `${base}.json`), md = join(dir, `${base}.md`);
  writeFileSync(json, `${JSON.stringify(sheet, null, 1)}\n`);
  writeFileSync(md, renderFidelity(sheet));
  return { json, md, sheet };
}

const UNIT: Record<FidelitySheet["claims"][number]["format"], string> = { percent: "fraction", ratio: "x", ns: "ns", tbps: "TB/s", rtts: "RTTs", count: "count" };

/** docs/fidelity.md again from docs/fidelity.json, nothing measured: after a change to the page's layout (bench/lib/fidelity-render.ts). */
export function renderSheet(): { md: string; sheet: FidelitySheet } {
  const docs = join(packageRoot(), "docs");
  const sheet = JSON.parse(readFileSync(join(docs, "fidelity.json"), "utf8")) as FidelitySheet;
  const md = join(docs, "fidelity.md");
  writeFileSync(md, renderFidelity(sheet));
  return { md, sheet };
}

/** The bench suite: each claim's median figure, its verdict beside it; writes nothing. */
export async function run(): Promise<void> {
  const sheet = await measureSheet();
  for (const c of sheet.claims) {
    figure(`fidelity.${c.id}`, c.spread.median ?? Infinity, UNIT[c.format], `${c.claim} (${c.source}): median over seeds`, { min: c.spread.min, max: c.spread.max, verdict: c.verdict });
  }
}
