#!/usr/bin/env node
// npm run fidelity [-- --quick]: bundles bench/fidelity.ts with esbuild (as scripts/bench.mjs
// does a suite) and runs it on the release core: it measures the seeds' claims and writes
// docs/fidelity.json and docs/fidelity.md (--quick: one seed, short runs, into
// build/fidelity-quick.json and .md; --render: nothing measured, docs/fidelity.md rendered again
// from docs/fidelity.json). `npm run fidelity` builds the core first.
import { build } from "esbuild";
import { existsSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const usage = `usage: npm run fidelity [-- --quick | --render]
  writes docs/fidelity.json and docs/fidelity.md: every claim of bench/lib/fidelity-claims.ts
  measured on its seeds, on worker threads, one per core (FIDELITY_JOBS=n: n threads; 1: none);
  under 3 minutes on 2 cores (the page says how long it took)
  --quick   one seed and short runs, into build/fidelity-quick.json and .md (not the page)
  --render  measure nothing: docs/fidelity.md again from docs/fidelity.json (after a change to
            the page's layout alone, bench/lib/fidelity-render.ts)`;
const args = process.argv.slice(2);
for (const a of args) {
  if (a === "--help" || a === "-h") { console.log(usage); process.exit(0); }
  if (a !== "--quick" && a !== "--render") { console.error(`fidelity: unknown argument ${a}\n${usage}`); process.exit(2); }
}
if (args.length > 1) { console.error(`fidelity: --quick or --render, not both\n${usage}`); process.exit(2); }
if (!existsSync(join(root, "build", "menic.wasm"))) {
  console.error("fidelity: build/menic.wasm is missing: run npm run build");
  process.exit(2);
}
const out = join(root, "build", "bench-fidelity.mjs");
await build({ entryPoints: [join(root, "bench", "fidelity.ts")], bundle: true, platform: "node", format: "esm", target: "es2022", outfile: out, packages: "external", logLevel: "warning" });
const mod = await import(pathToFileURL(out).href);
if (args.includes("--render")) {
  const { md } = mod.renderSheet();
  console.error(`fidelity: wrote ${relative(root, md)} from docs/fidelity.json`);
  process.exit(0);
}
const { json, md, sheet } = await mod.writeSheet({ quick: args.includes("--quick") });
const counts = {};
for (const c of sheet.claims) counts[c.verdict] = (counts[c.verdict] ?? 0) + 1;
console.error(`fidelity: wrote ${relative(root, json)} and ${relative(root, md)} in ${sheet.host.wallS} s: ${Object.entries(counts).map(([v, n]) => `${n} ${v}`).join(", ")}`);
