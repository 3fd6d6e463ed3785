#!/usr/bin/env node
// npm run build:web (and part of npm run build): the page (web/) as static files in build/web/:
// index.html, page.css, uPlot's stylesheet, main.js (the page, an ES module) and worker.js
// (the Web Worker, with the core, the firmware examples and the graph executor embedded). No
// server-side code: any static file server serves the folder (npm run serve). Needs
// build/menic.wasm. The page's list of scenarios is every file of examples/scenarios/, read
// when the page is built (the module `menic:scenarios`), so a shipped scenario is on the page
// without editing it.
import { build } from "esbuild";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const WEB_OUT = join(root, "build", "web");

const SCENARIOS_DIR = join(root, "examples", "scenarios");

/** The shipped scenarios, in file-name order: [file name without .json, parsed JSON, graph and size files inlined as host/scenario/scenario.ts inlineGraphFiles and workload.ts inlineWorkloadFiles do]. */
export function shippedScenarios() {
  return readdirSync(SCENARIOS_DIR).filter((f) => f.endsWith(".json")).sort().map((f) => {
    const text = readFileSync(join(SCENARIOS_DIR, f), "utf8");
    let doc;
    try {
      doc = JSON.parse(text);
    } catch (e) {
      throw new Error(`examples/scenarios/${f}: not JSON: ${e.message}`);
    }
    // a collective's graph file (relative to the scenario) goes in as its text: the page reads no files
    for (const c of [doc.collective, ...(doc.collectives ?? [])]) {
      if (typeof c?.graph?.file !== "string") continue;
      c.graph.text = readFileSync(join(SCENARIOS_DIR, c.graph.file), "utf8");
      delete c.graph.file;
    }
    // a workload's size file too, its name kept for errors (as host/scenario/workload.ts inlineWorkloadFiles does)
    const sizes = doc.traffic?.workload?.sizes;
    if (typeof sizes?.file === "string" && sizes.text === undefined) sizes.text = readFileSync(join(SCENARIOS_DIR, sizes.file), "utf8");
    return [f.slice(0, -".json".length), doc];
  });
}

/** esbuild plugin: `import SCENARIOS from "menic:scenarios"` gives shippedScenarios() (web/assets.d.ts types it). */
const scenariosModule = {
  name: "menic-scenarios",
  setup(b) {
    b.onResolve({ filter: /^menic:scenarios$/ }, () => ({ path: "scenarios", namespace: "menic" }));
    b.onLoad({ filter: /.*/, namespace: "menic" }, () => ({
      contents: `export default ${JSON.stringify(shippedScenarios())};`, loader: "js",
      watchDirs: [SCENARIOS_DIR], watchFiles: readdirSync(SCENARIOS_DIR).map((f) => join(SCENARIOS_DIR, f)),
    }));
  },
};

/** Builds the page into WEB_OUT; resolves to the files esbuild read (relative to the root,
 * sorted), which scripts/build.mjs hashes to tell when the page must be built again. */
export async function buildWeb() {
  if (!existsSync(join(root, "build", "menic.wasm"))) throw new Error("build/menic.wasm is missing: run npm run build");
  mkdirSync(WEB_OUT, { recursive: true });
  const common = { bundle: true, target: "es2022", platform: "browser", logLevel: "warning", sourcemap: true, absWorkingDir: root, plugins: [scenariosModule], metafile: true };
  const main = await build({ ...common, format: "esm", entryPoints: { main: "web/main.ts" }, outdir: WEB_OUT });
  const worker = await build({ ...common, format: "iife", entryPoints: { worker: "web/worker.ts" }, outdir: WEB_OUT, loader: { ".wasm": "binary", ".elf": "binary" } });
  copyFileSync(join(root, "web", "index.html"), join(WEB_OUT, "index.html"));
  copyFileSync(join(root, "web", "page.css"), join(WEB_OUT, "page.css"));
  const uplotCss = join(dirname(createRequire(import.meta.url).resolve("uplot")), "uPlot.min.css");
  copyFileSync(uplotCss, join(WEB_OUT, "uPlot.min.css"));
  // the plugin's module ("menic:scenarios") is no file: examples/scenarios/ stands for it
  const read = [main, worker].flatMap((r) => Object.keys(r.metafile.inputs)).filter((f) => !f.includes(":"));
  return [...new Set([...read, relative(root, uplotCss)])].sort();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await buildWeb();
  console.error("built build/web/ (the page: npm run serve)");
}
