// A sweep cut into shards (docs/scale.md): `menic run --shard i/n` makes every n-th run of a
// sweep, starting at run i - 1, and writes them as one JSON file; `menic merge` checks that a
// set of such files is one whole sweep, each run once, of the same scenario and the same menic,
// and gives the runs back in the sweep's order: the same table and JSON one process gives.
// Shards run anywhere (a Kubernetes Indexed Job, a Slurm job array, several shells): each run
// depends only on its scenario and seed, so where it ran changes no byte of its result.

import { createHash } from "node:crypto";
import { ConfigError } from "../config.js";
import type { SweepRun } from "./sweep.js";

/** The format a shard file says it is in; merge refuses any other. */
export const SHARD_FORMAT = "menic-sweep-shard/1";
/** The most shards a sweep may be cut into (a sweep makes at most 2^24 runs: --max-runs). */
export const SHARDS_MAX = 1 << 24;

/** Shard `index` (1-based) of `count`. */
export interface Shard { index: number; count: number }

/** One run of a shard: its place in the whole sweep (0-based, the sweep's order), its values, its result. */
export interface ShardRun extends SweepRun { run: number }

/** A shard file: what `menic run --shard i/n --json` writes. */
export interface ShardFile {
  format: typeof SHARD_FORMAT;
  /** the menic version that ran it: shards of different versions are not one sweep */
  menic: string;
  /** the scenario's name, as the sweep's table and JSON give it */
  name: string;
  /** sha256 of the scenario as run (after --set, --seed, --until and the files it names) and of --timeline */
  scenario: string;
  shard: Shard;
  /** runs the whole sweep makes */
  planned: number;
  runs: ShardRun[];
}

/** Parses `--shard`'s "i/n" (1 <= i <= n): the shard, or a ConfigError saying what is wrong. */
export function parseShard(text: string): Shard {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  if (!m) throw new ConfigError("--shard", `must be i/n (this shard's number, from 1, and how many there are: 2/4), got "${text}"`);
  const index = Number(m[1]), count = Number(m[2]);
  if (count < 1 || count > SHARDS_MAX) throw new ConfigError("--shard", `n must be from 1 to ${SHARDS_MAX}, got ${m[2]}`);
  if (index < 1 || index > count) throw new ConfigError("--shard", `i must be from 1 to n (${count}), got ${m[1]}`);
  return { index, count };
}

/** Whether run `k` (0-based, the sweep's order) belongs to `shard`: every n-th run, from run i - 1. */
export const inShard = (k: number, shard: Shard): boolean => k % shard.count === shard.index - 1;

/** The runs of a sweep of `planned` runs that `shard` makes. */
export const shardSize = (planned: number, shard: Shard): number =>
  planned >= shard.index ? Math.floor((planned - shard.index) / shard.count) + 1 : 0;

/**
 * The fingerprint of a scenario as run: sha256 of its JSON text and of the options that change
 * what a run reports (`--timeline` adds a field to every result), so that shards run with
 * different ones are not merged into one table.
 */
export function scenarioDigest(scenario: unknown, output: { timelinePs?: number } = {}): string {
  return createHash("sha256").update(JSON.stringify({ scenario, output })).digest("hex");
}

/** A whole sweep put back together from its shards. */
export interface Merged { name: string; planned: number; runs: SweepRun[] }

/**
 * Checks that `files` (each a shard file's parsed JSON, `path` naming it in messages) are the
 * shards of one sweep, every shard once and each whole, and gives its runs in the sweep's order.
 * Throws ConfigError saying which file is wrong and how.
 */
export function mergeShards(files: readonly { path: string; json: unknown }[]): Merged {
  if (files.length === 0) throw new ConfigError("merge", "needs the shard files of a sweep (menic run --shard i/n --json writes one)");
  const shards = files.map(({ path, json }) => checkShardFile(path, json));
  const first = shards[0]!, firstPath = files[0]!.path;
  const seen = new Map<number, string>();
  shards.forEach((s, i) => {
    const path = files[i]!.path;
    const differs = (what: string, a: unknown, b: unknown) =>
      new ConfigError(path, `${what} ${JSON.stringify(a)}, where ${firstPath} has ${JSON.stringify(b)}: not a shard of the same sweep`);
    if (s.menic !== first.menic) throw differs("was run by menic", s.menic, first.menic);
    if (s.scenario !== first.scenario) throw differs(`is of scenario "${s.name}" with digest`, s.scenario.slice(0, 16), first.scenario.slice(0, 16));
    if (s.shard.count !== first.shard.count) throw differs("is one shard of", s.shard.count, first.shard.count);
    const twice = seen.get(s.shard.index);
    if (twice !== undefined) throw new ConfigError(path, `is shard ${s.shard.index}/${s.shard.count}, as ${twice} is: each shard once`);
    seen.set(s.shard.index, path);
  });
  const missing: number[] = [];
  for (let i = 1; i <= first.shard.count && missing.length < 10; i++) if (!seen.has(i)) missing.push(i);
  if (missing.length) throw new ConfigError("merge", `shard${missing.length > 1 ? "s" : ""} ${missing.join(", ")}${missing.length === 10 ? ", ..." : ""} of ${first.shard.count} missing: give every shard of the sweep`);
  const runs: SweepRun[] = new Array(first.planned);
  for (const s of shards) for (const r of s.runs) runs[r.run] = { set: r.set, result: r.result };
  return { name: first.name, planned: first.planned, runs };
}

/** A shard file's shape, and that it holds every run of its shard and nothing else; the file as typed. */
function checkShardFile(path: string, json: unknown): ShardFile {
  const bad = (what: string) => new ConfigError(path, what);
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw bad("must hold a JSON object (a shard file: menic run --shard i/n --json)");
  const f = json as Partial<ShardFile>;
  if (f.format !== SHARD_FORMAT) throw bad(`is not a shard file (${f.format === undefined ? "it has no format" : `format ${JSON.stringify(f.format)}`}, not "${SHARD_FORMAT}"): menic run --shard i/n --json writes one`);
  if (typeof f.menic !== "string" || typeof f.name !== "string" || typeof f.scenario !== "string") throw bad("lacks its menic version, name or scenario digest");
  const s = f.shard;
  if (!s || !Number.isInteger(s.count) || !Number.isInteger(s.index) || s.count < 1 || s.index < 1 || s.index > s.count) throw bad(`has no valid shard i/n (${JSON.stringify(s)})`);
  if (!Number.isInteger(f.planned) || f.planned! < 0) throw bad(`has no valid count of planned runs (${JSON.stringify(f.planned)})`);
  if (!Array.isArray(f.runs)) throw bad("has no runs list");
  const want = shardSize(f.planned!, s);
  f.runs.forEach((r, i) => {
    const k = s.index - 1 + i * s.count;
    if (typeof r !== "object" || r === null || r.run !== k || typeof r.result !== "object" || r.result === null) throw bad(`runs[${i}] is not run ${k} of the sweep`);
    if (r.result.ended === "stopped") throw bad(`was stopped in run ${k} (Ctrl-C): run shard ${s.index}/${s.count} again`);
  });
  if (f.runs.length !== want) throw bad(`holds ${f.runs.length} of its ${want} runs: run shard ${s.index}/${s.count} again`);
  return f as ShardFile;
}
