#!/usr/bin/env node
// Rebuilds the committed example firmware (firmware/examples/*.elf) from its sources:
// `npm run fw:examples`. Needs Debian's clang and lld.
//
// host/fw/examples.ts is TypeScript and Node 20 cannot run it directly, so this bundles it
// with esbuild first. The bundle goes under node_modules/.cache inside the repository (not
// the system temp dir) because host/fw/build.ts finds the SDK by searching upward from its
// own file for the package root.
import { build } from "esbuild";
import { mkdirSync, rmSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cacheDir = join(root, "node_modules", ".cache", "menic");
const bundle = join(cacheDir, `build-examples-${process.pid}.mjs`);

mkdirSync(cacheDir, { recursive: true });
try {
  await build({
    entryPoints: [join(root, "host", "fw", "examples.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    outfile: bundle,
    logLevel: "warning",
  });
  const { buildExamples } = await import(pathToFileURL(bundle).href);
  for (const out of buildExamples(root)) console.log(`wrote ${relative(root, out)}`);
} finally {
  rmSync(bundle, { force: true });
}
