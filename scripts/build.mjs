#!/usr/bin/env node
// npm run build: the core (release and debug wasm, through the AssemblyScript API: ~1 s each
// instead of ~3.5 s for `npx asc`), then esbuild bundles: dist/menic.js (Node ESM library),
// dist/cli.js (the `menic` command) and dist/menic.browser.js (browser, core embedded).
import asc from "assemblyscript/asc";
import { build } from "esbuild";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
process.chdir(root);

for (const target of ["release", "debug"]) {
  const { error, stderr } = await asc.main(["assembly/index.ts", "--target", target], {});
  if (error) {
    console.error(stderr.toString());
    console.error(`asc (${target}) failed: ${error.message}`);
    process.exit(1);
  }
}

const common = { bundle: true, format: "esm", target: "es2022", logLevel: "warning", sourcemap: true };
await build({ ...common, platform: "node", entryPoints: { menic: "host/index.ts", cli: "host/platform/cli.ts" }, outdir: "dist", packages: "external" });
await build({ ...common, platform: "browser", entryPoints: { "menic.browser": "host/browser.ts" }, outdir: "dist", loader: { ".wasm": "binary" } });
console.error("built build/menic.wasm, build/menic.debug.wasm, dist/");
