#!/usr/bin/env node
// npm run golden: recomputes the golden outputs in test/golden/ (the firmware examples, the
// shipped scenarios, the doorbell scenario, examples/save-restore.ts; the cases are in
// test/helpers/golden.ts) and rewrites the files that changed. `npm run golden -- NAME ...`
// recomputes only the cases named (a file name without .json). Review the diff (git diff
// test/golden) before committing: test/golden.test.ts fails until the files match what the code
// does.
import { build } from "esbuild";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
if (!existsSync(join(root, "dist", "cli.js")) || !existsSync(join(root, "build", "menic.wasm"))) {
  console.error("golden: build/menic.wasm or dist/cli.js is missing: run npm run build");
  process.exit(2);
}
const out = join(root, "build", "golden-cases.mjs");
await build({ entryPoints: [join(root, "test", "helpers", "golden.ts")], bundle: true, platform: "node", format: "esm", target: "es2022", outfile: out, packages: "external", logLevel: "warning" });
const { CASES, GOLDEN_DIR, goldenFile, goldenText } = await import(pathToFileURL(out).href);

const only = process.argv.slice(2);
const unknown = only.filter((n) => !CASES.some((c) => c.name === n));
if (unknown.length > 0) {
  console.error(`golden: no case ${unknown.join(", ")} (cases: ${CASES.map((c) => c.name).join(", ")})`);
  process.exit(2);
}
mkdirSync(GOLDEN_DIR, { recursive: true });
let changed = 0;
for (const c of CASES.filter((c) => only.length === 0 || only.includes(c.name))) {
  const file = goldenFile(c.name);
  const text = await goldenText(c);
  const before = existsSync(file) ? readFileSync(file, "utf8") : null;
  if (before === text) {
    console.error(`unchanged  ${relative(root, file)}`);
    continue;
  }
  writeFileSync(file, text);
  changed++;
  console.error(`${before === null ? "new      " : "changed  "}  ${relative(root, file)}`);
}
// a golden file no case writes any more is stale
const names = new Set(CASES.map((c) => `${c.name}.json`));
for (const f of only.length > 0 ? [] : readdirSync(GOLDEN_DIR).filter((f) => f.endsWith(".json") && !names.has(f))) {
  rmSync(join(GOLDEN_DIR, f));
  changed++;
  console.error(`removed    ${relative(root, join(GOLDEN_DIR, f))}`);
}
console.error(changed ? `${changed} golden file(s) written: review them with git diff test/golden` : "every golden file is up to date");
