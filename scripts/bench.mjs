#!/usr/bin/env node
// npm run bench -- <suite> ... [--pretty | --json]: bundles bench/<suite>.ts with esbuild and
// runs it on the release core. Each suite reports its figures through bench/lib/report.ts: one
// JSON object per line per figure ({bench, value, unit, ...}), or with --pretty (the default
// when stdout is a terminal) a table that says what each figure means. bench/lib/ holds what
// the suites share; it is not a suite.
import { build } from "esbuild";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const flags = args.filter((a) => a.startsWith("-"));
const suites = args.filter((a) => !a.startsWith("-"));
const known = readdirSync(join(root, "bench")).filter((f) => f.endsWith(".ts")).map((f) => f.slice(0, -3));
const usage = `usage: npm run bench -- <suite> ... [--pretty | --json]   (suites: ${known.join(", ")})
  --pretty  a table: each figure, its value and unit, and what it means (the default on a terminal)
  --json    one JSON object per figure and line: {bench, value, unit, ...} (the default otherwise)`;
for (const f of flags) {
  if (f === "--help" || f === "-h") { console.log(usage); process.exit(0); }
  if (f !== "--pretty" && f !== "--json") { console.error(`bench: unknown option ${f}\n${usage}`); process.exit(2); }
}
if (flags.includes("--pretty") && flags.includes("--json")) { console.error(`bench: --pretty or --json, not both\n${usage}`); process.exit(2); }
if (suites.length === 0) { console.error(usage); process.exit(2); }
for (const s of suites) {
  if (!known.includes(s)) { console.error(`bench: unknown suite ${s} (suites: ${known.join(", ")})`); process.exit(2); }
}
if (!existsSync(join(root, "build", "menic.wasm"))) {
  console.error("bench: build/menic.wasm is missing: run npm run build");
  process.exit(2);
}
const pretty = flags.includes("--pretty") || (process.stdout.isTTY && !flags.includes("--json"));
process.env.MENIC_BENCH_FORMAT = pretty ? "pretty" : "json";
for (const s of suites) {
  const out = join(root, "build", `bench-${s}.mjs`);
  await build({ entryPoints: [join(root, "bench", `${s}.ts`)], bundle: true, platform: "node", format: "esm", target: "es2022", outfile: out, packages: "external", logLevel: "warning" });
  if (pretty) console.log(`${suites.length > 1 ? "\n" : ""}${s}:`);
  const mod = await import(pathToFileURL(out).href);
  await mod.run();
}
