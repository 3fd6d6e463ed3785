// docs/fidelity.md from docs/fidelity.json, and nothing else: a pure function of the sheet
// bench/fidelity.ts writes (every figure per seed, the inputs of every run, the hashes of the
// core and of the claims table). test/fidelity.test.ts renders the committed JSON again and
// compares it with the committed page. Also here: the spread over seeds and the verdict, the
// one rule both the writer and the test apply.

/** A bound a program checks: the figure at least `min`, at most `max`. */
export interface Bound {
  min?: number;
  max?: number;
}

/** How a figure reads: a fraction shown as a percentage, a plain ratio, ns, TB/s, round trips, a count. */
export type Format = "percent" | "ratio" | "ns" | "tbps" | "rtts" | "count";

export type Verdict = "met" | "not met" | "explained";

/** A figure over seeds: null stands for a moment that never came, worse than any number. */
export interface Spread {
  min: number | null;
  median: number | null;
  max: number | null;
}

/** What a claim says and how it is measured, in words: the claims table's entries and the sheet's alike. */
export interface ClaimText {
  /** fixed once published: other tools read the JSON by it */
  id: string;
  /** what the source says */
  claim: string;
  /** where it says it: a seed article (/work/shared/seeds/), DESIGN.md §7, issue 27 */
  source: string;
  bound: Bound;
  /** how the bound reads to a person, when its numbers alone do not say it */
  boundNote?: string;
  format: Format;
  /** how the figure is measured: the scenario, the window, the quantity */
  how: string;
  /** when the run is smaller than what the claim names, how much smaller and why */
  scale?: string;
  /** why a figure outside the bound is what the design gives (the verdict is then "explained") */
  explained?: string;
  /** the seeds it runs on; null: the run draws nothing at random, so it runs once */
  seeds: number[] | null;
}

export interface SheetClaim extends ClaimText {
  perSeed: { seed: number | null; value: number | null; parts?: Record<string, number | null>; runs: number[] }[];
  spread: Spread;
  verdict: Verdict;
}

export interface SheetRun {
  /** the run: a shipped scenario and its `--set` overrides (the seed among them), or a bench */
  spec: Record<string, unknown>;
  metrics: Record<string, number | null>;
  /** host seconds it took */
  wallS: number;
}

export interface LossCell {
  rate: number;
  perSeed: { seed: number; value: number; run: number }[];
  spread: Spread;
}

export interface FidelitySheet {
  /** a --quick sheet (one seed, short runs) is never the committed one */
  quick: boolean;
  /** sha256 of build/menic.wasm and of bench/lib/fidelity-claims.ts when the sheet was made */
  hashes: { core: string; claims: string };
  host: { node: string; cpus: number; wallS: number };
  claims: SheetClaim[];
  loss: { seeds: number[]; burstFrames: number; rates: number[]; rows: { transport: string; model: string; cells: LossCell[] }[] };
  runs: SheetRun[];
}

const rank = (v: number | null) => (v === null ? Infinity : v);

/** min, median (the mean of the middle two for an even count) and max; null (never) ranks above every number. */
export function spreadOf(values: (number | null)[]): Spread {
  const s = [...values].sort((a, b) => rank(a) - rank(b));
  const n = s.length, lo = s[(n - 1) >> 1] ?? null, hi = s[n >> 1] ?? null;
  return { min: s[0] ?? null, median: lo === null || hi === null ? null : (lo + hi) / 2, max: s[n - 1] ?? null };
}

export function within(v: number | null, b: Bound): boolean {
  return v !== null && (b.min === undefined || v >= b.min) && (b.max === undefined || v <= b.max);
}

/** met: every seed within the bound; explained: not, for the design reason the claim gives; else not met. */
export function verdictOf(values: (number | null)[], bound: Bound, explained?: string): Verdict {
  if (values.length > 0 && values.every((v) => within(v, bound))) return "met";
  return explained ? "explained" : "not met";
}

export function formatValue(v: number | null, f: Format): string {
  if (v === null) return "never";
  switch (f) {
    case "percent": {
      const p = v * 100;
      return `${Math.abs(p) < 10 && p !== 0 ? p.toFixed(2) : p.toFixed(1)} %`;
    }
    case "ratio": return v.toFixed(3);
    case "ns": return `${v.toFixed(1)} ns`;
    case "tbps": return `${v.toFixed(3)} TB/s`;
    case "rtts": return `${v.toFixed(1)} RTTs`;
    case "count": return v.toFixed(0);
  }
}

function formatBound(b: Bound, f: Format, note?: string): string {
  const text = b.min !== undefined && b.max !== undefined ? `${formatValue(b.min, f)} to ${formatValue(b.max, f)}`
    : b.min !== undefined ? `≥ ${formatValue(b.min, f)}` : `≤ ${formatValue(b.max!, f)}`;
  return note ? `${text} (${note})` : text;
}

function formatSpread(s: Spread, f: Format): string {
  const [m, lo, hi] = [s.median, s.min, s.max].map((v) => formatValue(v, f));
  return lo === hi ? m! : `${m} (${lo} – ${hi})`;
}

/** 91001–91003 for a run of consecutive seeds, else the list. */
function formatSeeds(seeds: number[] | null): string {
  if (seeds === null) return "none (nothing random: run once)";
  const consecutive = seeds.every((s, i) => i === 0 || s === seeds[i - 1]! + 1);
  return consecutive && seeds.length > 2 ? `${seeds[0]}–${seeds[seeds.length - 1]}` : seeds.join(", ");
}

function minutes(s: number): string {
  return s < 90 ? `${s.toFixed(0)} s` : `${(s / 60).toFixed(1)} minutes`;
}

const cell = (t: string) => t.replace(/\|/g, "\\|");

/** docs/fidelity.md for a sheet. */
export function renderFidelity(sheet: FidelitySheet): string {
  const out: string[] = [];
  const { host, hashes } = sheet;
  out.push(
    "# Fidelity: the seeds' claims, measured",
    "",
    "<!-- generated by `npm run fidelity` from docs/fidelity.json: do not edit -->",
    "",
    "What the seed articles (the sources of menic's design: DESIGN.md §7 lists their claims) and issue 27 say a MetaRoCE-like NIC does, each measured by menic on seeds the unit tests do not use and judged against a bound a program checks.",
    `Every number on this page comes from one run of \`npm run fidelity\` (bench/fidelity.ts; the claims, their bounds and how each is measured are the table in bench/lib/fidelity-claims.ts), which measured for ${minutes(host.wallS)} on ${host.cpus} cores (Node ${host.node}) after its build.`,
    "It writes docs/fidelity.json (every figure per seed, and every run's inputs: the scenario, its `--set` overrides and its seed) and renders this page from that JSON alone.",
    "test/fidelity.test.ts fails when this page is not what the JSON renders to, or when the core or the claims table has changed since it was made: then run `npm run fidelity` again (it builds first; after a change to the page's layout alone, bench/lib/fidelity-render.ts, `npm run fidelity -- --render` writes the page again from the JSON).",
    "",
    `Core: build/menic.wasm, sha256 \`${hashes.core}\`. Claims table: sha256 \`${hashes.claims}\`.${sheet.quick ? " **A --quick sheet: one seed, short runs; not the figures of record.**" : ""}`,
    "",
    "Verdicts: **met**, every seed's figure within the bound; **not met**, some seed's outside it; **explained**, outside it for the design reason given under [How each figure is measured](#how-each-figure-is-measured).",
    "",
    "## Claims",
    "",
    "| claim | source | bound | menic: median (min – max over seeds) | seeds | verdict |",
    "|---|---|---|---|---|---|",
  );
  for (const c of sheet.claims) {
    out.push(`| ${cell(c.claim)} ([${c.id}](#${anchor(c.id)})) | ${cell(c.source)} | ${cell(formatBound(c.bound, c.format, c.boundNote))} | ${formatSpread(c.spread, c.format)} | ${formatSeeds(c.seeds)} | **${c.verdict}** |`);
  }
  out.push("", "## How each figure is measured", "");
  for (const c of sheet.claims) {
    out.push(`### ${c.id}`, "", `Claim: ${c.claim} (${c.source}). Bound: ${formatBound(c.bound, c.format, c.boundNote)}. Verdict: **${c.verdict}**.`, "", `How: ${c.how}.`);
    if (c.scale) out.push("", `Scale: ${c.scale}.`);
    if (c.explained && c.verdict === "explained") out.push("", `Why not within the bound: ${c.explained}.`);
    const perSeed = c.seeds === null ? `Measured once (nothing random): ${formatValue(c.perSeed[0]!.value, c.format)}`
      : `Per seed: ${c.perSeed.map((p) => `${p.seed}: ${formatValue(p.value, c.format)}`).join("; ")}`;
    out.push("", `${perSeed}.`);
    const labels = c.perSeed[0]?.parts ? Object.keys(c.perSeed[0].parts) : [];
    if (labels.length > 0) {
      out.push("", "| part | median (min – max over seeds) |", "|---|---|");
      for (const l of labels) out.push(`| ${cell(l)} | ${formatSpread(spreadOf(c.perSeed.map((p) => p.parts![l] ?? null)), c.format)} |`);
    }
    out.push("");
  }
  const { loss } = sheet;
  out.push(
    "## Goodput against loss",
    "",
    `Both transports on examples/scenarios/metaroce-loss.json (one connection, two devices, one switch, 16 × 1 MiB WRITEs), every link losing the given fraction of its frames each way (a frame crosses two links): independently, or in Gilbert–Elliott bursts of ${loss.burstFrames} frames on average at the same mean rate. Payload bytes over the whole run over the line rate; median (min – max) over seeds ${formatSeeds(loss.seeds)}.`,
    "",
    `| transport | loss | ${loss.rates.map((r) => `${+(r * 100).toFixed(2)} %`).join(" | ")} |`,
    `|---|---|${loss.rates.map(() => "---|").join("")}`,
  );
  for (const row of loss.rows) out.push(`| ${row.transport} | ${row.model} | ${row.cells.map((c) => formatSpread(c.spread, "percent")).join(" | ")} |`);
  const scenarioRuns = sheet.runs.filter((r) => r.spec.kind === "scenario");
  const late = scenarioRuns.reduce((s, r) => s + (r.metrics.lateArrivals ?? 0), 0);
  out.push(
    "",
    "## The runs",
    "",
    `${sheet.runs.length} runs, ${scenarioRuns.length} of them scenarios; frames that reached a device in its past (late arrivals, docs/fabric.md "Windows") over all of them: ${late}.`,
    "Any scenario run again: `node bin/menic.js run examples/scenarios/<scenario>.json --set <each override> --json`, with the scenario and the overrides docs/fidelity.json gives for it.",
    "",
  );
  return out.join("\n");
}

/** GitHub's heading anchor for an id (dots and underscores as GitHub keeps or drops them). */
function anchor(id: string): string {
  return id.toLowerCase().replace(/[^a-z0-9_ -]/g, "").replace(/ /g, "-");
}
