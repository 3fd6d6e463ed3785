// npm run fidelity [-- --quick | --render]: the seeds' claims measured (issue 27 §4). Runs every
// claim of bench/lib/fidelity-claims.ts on each of its seeds, and the loss grid (0.1, 1, 3 and
// 10 %, independent and bursty, both transports), each distinct run once; writes
// docs/fidelity.json (every figure per seed, every run's inputs and metrics, the hashes of the
// core and of the claims table) and docs/fidelity.md, rendered from that JSON by
// bench/lib/fidelity-render.ts. --quick (one seed, short runs, for working on the table) writes
// build/fidelity-quick.json and .md instead, never the committed page; --render measures nothing
// and renders the page again from docs/fidelity.json (after a change to the page's layout
// alone). As a bench suite (`npm run bench -- fidelity`) it prints each claim's median figure
// and writes nothing.
import { createHash } from "node:crypto";
import { cpus } from "node:os";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { packageRoot } from "../host/platform/node.js";
import { CLAIMS, SMALL_SEEDS, LOSS_RATES, BURST_FRAMES, claimsFile, lossRun, runSpec, type RunSpec, type Metrics, type LossModel } from "./lib/fidelity-claims.js";
import { renderFidelity, spreadOf, verdictOf, type FidelitySheet, type SheetClaim, type SheetRun, type LossCell } from "./lib/fidelity-render.js";
import { figure } from "./lib/report.js";

export const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");

/** Runs each distinct spec once, in the order first asked for. */
class Runs {
  readonly list: SheetRun[] = [];
  private index = new Map<string, number>();
  constructor(private readonly log: (line: string) => void) {}
  async get(spec: RunSpec): Promise<{ i: number; metrics: Metrics }> {
    const key = JSON.stringify(spec);
    let i = this.index.get(key);
    if (i === undefined) {
      const t0 = performance.now();
      const metrics = await runSpec(spec);
      const wallS = (performance.now() - t0) / 1000;
      i = this.list.push({ spec: spec as unknown as Record<string, unknown>, metrics, wallS: +wallS.toFixed(2) }) - 1;
      this.index.set(key, i);
      this.log(`fidelity: ${describe(spec)}: ${wallS.toFixed(1)} s`);
    }
    return { i, metrics: this.list[i]!.metrics };
  }
}

const describe = (s: RunSpec) =>
  s.kind === "scenario" ? `${s.scenario} ${s.set.join(" ")}${s.probe ? ` (${s.probe})` : ""}` : s.kind === "read-loss" ? `read-loss ${s.cablePs} ps cable, seeds ${s.seeds[0]}…` : s.kind;

/** Measures the whole sheet. */
export async function measureSheet(opts: { quick?: boolean; log?: (line: string) => void } = {}): Promise<FidelitySheet> {
  const quick = opts.quick ?? false;
  const t0 = performance.now();
  const runs = new Runs(opts.log ?? (() => {}));
  const claims: SheetClaim[] = [];
  for (const c of CLAIMS) {
    const seeds = c.seeds === null ? null : quick ? c.seeds.slice(0, 1) : c.seeds;
    const perSeed: SheetClaim["perSeed"] = [];
    for (const seed of seeds ?? [null]) {
      const got = [];
      for (const spec of c.runs(seed, quick)) got.push(await runs.get(spec));
      const f = c.figure(got.map((g) => g.metrics));
      perSeed.push({ seed, value: f.value, ...(f.parts ? { parts: f.parts } : {}), runs: got.map((g) => g.i) });
    }
    const values = perSeed.map((p) => p.value);
    const { runs: _fn, figure: _fig, seeds: _s, ...text } = c;
    claims.push({ ...text, seeds, perSeed, spread: spreadOf(values), verdict: verdictOf(values, c.bound, c.explained) });
  }
  const lossSeeds = quick ? SMALL_SEEDS.slice(0, 1) : SMALL_SEEDS;
  const rows: FidelitySheet["loss"]["rows"] = [];
  for (const transport of ["metaroce", "rocev2"] as const) {
    for (const model of ["random", "bursty"] as LossModel[]) {
      const cells: LossCell[] = [];
      for (const rate of LOSS_RATES) {
        const perSeed = [];
        for (const seed of lossSeeds) {
          const { i, metrics } = await runs.get(lossRun(transport, model, rate, seed));
          perSeed.push({ seed, value: metrics.goodputOfLine!, run: i });
        }
        cells.push({ rate, perSeed, spread: spreadOf(perSeed.map((p) => p.value)) });
      }
      rows.push({ transport, model, cells });
    }
  }
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
