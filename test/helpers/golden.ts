// The cases whose outputs test/golden/*.json hold: every firmware example and every shipped
// scenario (examples/scenarios/) run the way the CLI runs them, the doorbell scenario, and
// examples/save-restore.ts. test/golden.test.ts recomputes each and compares; `npm run golden`
// (scripts/golden.mjs) writes them. A golden output holds nothing that depends on the host (no
// wall time, no absolute path), so any difference is a change in what the emulator does: one to
// review, and to commit with the code that made it.

import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { coreModule, packageRoot } from "../../host/platform/node.js";
import { hostDoorbell, engineDoorbell } from "../../host/scenarios/doorbell.js";
import type { ScenarioResult } from "../../host/scenario/run.js";
import type { SweepRun } from "../../host/scenario/sweep.js";

export interface GoldenCase {
  /** The golden file is test/golden/<name>.json. */
  name: string;
  /** How the output is produced, in words a reader can repeat. */
  how: string;
  compute(): Promise<unknown>;
}

const root = packageRoot();
export const GOLDEN_DIR = join(root, "test", "golden");
export const goldenFile = (name: string) => join(GOLDEN_DIR, `${name}.json`);

/**
 * What `menic run examples/scenarios/<scenario>.json --json` printed when test/golden was last
 * written (its flows cut to GOLDEN_FLOWS_MAX; with `--timeline` for a scenario in TIMELINES):
 * test/golden.test.ts holds it to what the code prints now, so a scenario test can assert on it
 * instead of running the scenario again.
 */
export function goldenRun(scenario: string): ScenarioResult {
  const g = JSON.parse(readFileSync(goldenFile(`run-${scenario}`), "utf8")) as { result: { exitStatus: number; output: ScenarioResult | { runs: SweepRun[] } } };
  const out = g.result.output;
  // menic run exits 1 when a run (of a sweep: one of its runs) did not finish, else 0
  const ends = "runs" in out ? out.runs.map((r) => r.result.ended) : [out.ended];
  const want = ends.every((e) => e === "finished") ? 0 : 1;
  if (g.result.exitStatus !== want) throw new Error(`test/golden/run-${scenario}.json: menic run exited ${g.result.exitStatus}, and its runs ended ${ends.join(", ")}`);
  return out as ScenarioResult;
}

/** As goldenRun, for a scenario with a sweep: its runs, each its `--set` values and its result. */
export function goldenSweep(scenario: string): SweepRun[] {
  return (goldenRun(scenario) as unknown as { runs: SweepRun[] }).runs;
}

/** Runs a command from the repository root; its exit status and output are part of the golden. */
function run(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, args, { cwd: root, encoding: "utf8", maxBuffer: 1 << 28 });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Flows a golden keeps per result: the first this many, and how many more there were (a golden is read by people). */
export const GOLDEN_FLOWS_MAX = 32;

/** `o` with every `flows` list cut to its first GOLDEN_FLOWS_MAX entries and a `flowsOmitted` count beside it. */
function trimFlows(o: unknown): unknown {
  if (Array.isArray(o)) return o.map(trimFlows);
  if (typeof o !== "object" || o === null) return o;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) {
    if (k === "flows" && Array.isArray(v) && v.length > GOLDEN_FLOWS_MAX) {
      out.flows = v.slice(0, GOLDEN_FLOWS_MAX);
      out.flowsOmitted = v.length - GOLDEN_FLOWS_MAX;
    } else out[k] = trimFlows(v);
  }
  return out;
}

/** `node bin/menic.js <args>`, which prints one JSON object: the object, stderr and the exit status. */
function cliCase(name: string, args: string[]): GoldenCase {
  const argv = ["bin/menic.js", ...args];
  return {
    name,
    how: `node ${argv.join(" ")}`,
    async compute() {
      const r = run(argv);
      let output: unknown;
      try {
        output = JSON.parse(r.stdout);
      } catch {
        throw new Error(`menic ${args.join(" ")} printed no JSON (status ${r.status}): ${r.stderr}`);
      }
      return { exitStatus: r.status, stderr: r.stderr, output: trimFlows(output) };
    },
  };
}

const baseName = (path: string) => path.replace(/^.*\//, "").replace(/\.[a-z]+$/, "");
/** `menic fw run <elf> --json`: the whole JSON object (console, states, exit codes, stats, time) and the exit status. */
const firmwareCase = (elf: string) => cliCase(`fw-${baseName(elf)}`, ["fw", "run", elf, "--json"]);
/**
 * The shipped scenarios whose golden carries a timeline (`menic run --timeline`: the bytes placed
 * over all flows, per run), at the interval the tests that read it need: metaroce-planes' steady
 * part (20% to 70% of each run, 160 to 300 us long) in 10 us steps, metaroce-plane-failure's
 * windows before, during and after its plane's outage (100 to 300 us) in 1 us steps.
 */
export const TIMELINES: Readonly<Record<string, string>> = { "metaroce-planes": "10us", "metaroce-plane-failure": "1us" };

/** `menic run <scenario> --json`: the whole result (flows — the first GOLDEN_FLOWS_MAX —, goodput, completion times, drops, counters, a timeline when TIMELINES asks for one) and the exit status. */
const scenarioCase = (file: string) => {
  const timeline = TIMELINES[baseName(file)];
  return cliCase(`run-${baseName(file)}`, ["run", file, "--json", ...(timeline ? ["--timeline", timeline] : [])]);
};

const SCENARIOS = readdirSync(join(root, "examples", "scenarios")).filter((f) => f.endsWith(".json")).sort().map((f) => `examples/scenarios/${f}`);

const FIRMWARE_EXAMPLES = readdirSync(join(root, "firmware", "examples")).filter((f) => f.endsWith(".elf")).sort().map((f) => `firmware/examples/${f}`);

export const CASES: readonly GoldenCase[] = [
  ...FIRMWARE_EXAMPLES.map(firmwareCase),
  ...SCENARIOS.map(scenarioCase),
  {
    name: "scenario-doorbell",
    how: "host/scenarios/doorbell.ts: hostDoorbell and engineDoorbell (firmware/bench/doorbell.elf) with the default config",
    async compute() {
      return {
        host: await hostDoorbell(coreModule()),
        engine: await engineDoorbell(coreModule(), readFileSync(join(root, "firmware", "bench", "doorbell.elf"))),
      };
    },
  },
  {
    name: "example-save-restore",
    how: "examples/save-restore.ts bundled with esbuild and run with node, as its opening comment says",
    async compute() {
      // inside build/ so that the bundle finds the package root; one file per process
      const out = join(root, "build", `golden-save-restore-${process.pid}.mjs`);
      await build({ entryPoints: [join(root, "examples", "save-restore.ts")], bundle: true, platform: "node", format: "esm", packages: "external", outfile: out, logLevel: "warning" });
      try {
        const r = run([out]);
        return { exitStatus: r.status, stderr: r.stderr, stdout: r.stdout.replace(/\n$/, "").split("\n") };
      } finally {
        rmSync(out, { force: true });
      }
    },
  },
];

/** Object keys sorted at every depth, so that a golden file does not change with the order code builds objects in. */
function sortKeys(v: unknown): unknown {
  if (typeof v === "bigint") return v.toString();
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]));
  }
  return v;
}

/** The text of a golden file: the case, how it was made, and its output; sorted keys, two-space indent. */
export async function goldenText(c: GoldenCase): Promise<string> {
  const result = await c.compute();
  return JSON.stringify(sortKeys({ case: c.name, how: c.how, regenerate: "npm run golden", result }), null, 2) + "\n";
}
