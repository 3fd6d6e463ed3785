#!/usr/bin/env node
// npm run bench -- <suite> [...]: bundles bench/<suite>.ts with esbuild and runs it on the
// release core. Each suite prints one JSON object per line per figure: {bench, value, unit}.
import { build } from "esbuild";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const suites = process.argv.slice(2);
const known = readdirSync(join(root, "bench")).filter((f) => f.endsWith(".ts")).map((f) => f.slice(0, -3));
if (suites.length === 0) {
  console.error(`usage: npm run bench -- <suite> ...   (suites: ${known.join(", ")})`);
  process.exit(2);
}
if (!existsSync(join(root, "build", "menic.wasm"))) {
  console.error("bench: build/menic.wasm is missing: run npm run build");
  process.exit(2);
}
for (const s of suites) {
  if (!known.includes(s)) {
    console.error(`bench: unknown suite ${s} (suites: ${known.join(", ")})`);
    process.exit(2);
  }
  const out = join(root, "build", `bench-${s}.mjs`);
  await build({ entryPoints: [join(root, "bench", `${s}.ts`)], bundle: true, platform: "node", format: "esm", target: "es2022", outfile: out, packages: "external", logLevel: "warning" });
  const mod = await import(pathToFileURL(out).href);
  await mod.run();
}
