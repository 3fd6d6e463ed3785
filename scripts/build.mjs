#!/usr/bin/env node
// npm run build: the core (release and debug wasm, through the AssemblyScript API: ~1 s each
// instead of ~3.5 s for `npx asc`), then esbuild bundles: dist/menic.js (Node ESM library),
// dist/cli.js (the `menic` command) and dist/menic.browser.js (browser, core embedded); the page
// (web/ into build/web/: scripts/build-web.mjs); and, alongside in a child process (tsc takes
// ~5 s), the package's declaration files in dist/types/.
import asc from "assemblyscript/asc";
import { build } from "esbuild";
import { buildWeb } from "./build-web.mjs";
import { spawn } from "node:child_process";
import { copyFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
process.chdir(root);

rmSync("dist/types", { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const types = new Promise((resolve) => {
  const child = spawn(process.execPath, [tsc, "-p", "tsconfig.types.json"], { stdio: "inherit" });
  child.on("close", (code) => resolve(code));
});

for (const target of ["release", "debug"]) {
  const { error, stderr } = await asc.main(["assembly/index.ts", "--target", target], {});
  if (error) {
    console.error(stderr.toString());
    console.error(`asc (${target}) failed: ${error.message}`);
    process.exit(1);
  }
}

const common = { bundle: true, format: "esm", target: "es2022", logLevel: "warning", sourcemap: true };
// the one library the host uses (fast-xml-parser, MIT: the MSCCL importer) is bundled in, so the
// package installs with no dependencies; Node's own modules stay imports
await build({ ...common, platform: "node", entryPoints: { menic: "host/index.ts", cli: "host/platform/cli.ts" }, outdir: "dist" });
await build({ ...common, platform: "browser", entryPoints: { "menic.browser": "host/browser.ts" }, outdir: "dist", loader: { ".wasm": "binary" } });
await buildWeb();
if ((await types) !== 0) {
  console.error("tsc (declaration files, tsconfig.types.json) failed");
  process.exit(1);
}
// tsc does not copy hand-written declarations; the generated validator's is referenced.
copyFileSync("host/generated/scenario-validate.d.ts", "dist/types/generated/scenario-validate.d.ts");
console.error("built build/menic.wasm, build/menic.debug.wasm, dist/ (dist/types/: declarations), build/web/ (the page)");
