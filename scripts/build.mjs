#!/usr/bin/env node
// npm run build [-- --force]: the core (release and debug wasm, through the AssemblyScript API:
// ~1 s each instead of ~3.5 s for `npx asc`), then esbuild bundles: dist/menic.js (Node ESM
// library), dist/cli.js (the `menic` command) and dist/menic.browser.js (browser, core embedded);
// the page (web/ into build/web/: scripts/build-web.mjs); and, alongside in a child process (tsc
// takes ~5 s), the package's declaration files in dist/types/.
//
// Incremental (scripts/build-stamp.mjs): each of those steps is skipped when what it read is
// unchanged and what it wrote is still there, byte for byte, so `npm test`, `npm run example` and
// `npm pack`, which build first, take well under a second when nothing changed. A step's inputs,
// hashed by content: the folders it reads (assembly/ for the core; host/ for the bundles and the
// declarations; web/ and examples/scenarios/ for the page, with examples/msccl/ and
// examples/workloads/, whose graph and size files its scenarios carry), every file esbuild's
// metafile says a bundle read (node_modules' included), its configuration (asconfig.json,
// tsconfig*.json), these build scripts, package.json and package-lock.json, and the versions of
// node and of the tool.
// The record is build/build-stamp.json; without it (a fresh checkout) every step runs. --force
// runs every step whatever the record says.
import { spawn } from "node:child_process";
import { copyFileSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { BuildStamp } from "./build-stamp.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
process.chdir(root);
const require = createRequire(import.meta.url);

const args = process.argv.slice(2);
const unknown = args.filter((a) => a !== "--force");
if (unknown.length > 0) {
  console.error(`build: unknown argument ${unknown[0]} (--force: run every step)`);
  process.exit(2);
}

/** A package's installed version: the compiler that will run, whatever the lock file says. */
const version = (pkg) => JSON.parse(readFileSync(require.resolve(`${pkg}/package.json`), "utf8")).version;

const stamp = new BuildStamp(root, "build/build-stamp.json", {
  force: args.includes("--force"),
  common: ["scripts/build.mjs", "scripts/build-stamp.mjs", "scripts/build-web.mjs", "package.json", "package-lock.json"],
  versions: { node: process.version },
});
const built = [];
const step = async (what, name, spec) => {
  if (await stamp.step(name, spec)) built.push(what);
};

// tsc in a child process, alongside the rest: the declarations are of host/ alone
const types = step("dist/types/", "types", {
  inputs: ["host", "tsconfig.json", "tsconfig.types.json"],
  versions: { typescript: version("typescript") },
  run: () => {
    rmSync("dist/types", { recursive: true, force: true });
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", "tsconfig.types.json"], { stdio: "inherit" });
      child.on("close", (code) => {
        if (code !== 0) return reject(new Error("tsc (declaration files, tsconfig.types.json) failed"));
        // tsc does not copy hand-written declarations; the generated validator's is referenced.
        copyFileSync("host/generated/scenario-validate.d.ts", "dist/types/generated/scenario-validate.d.ts");
        resolve({ outputs: ["dist/types"] });
      });
    });
  },
});
types.catch(() => {}); // awaited below, where a failure is reported

try {
  await step("build/menic.wasm, build/menic.debug.wasm", "core", {
    inputs: ["assembly", "asconfig.json"],
    versions: { assemblyscript: version("assemblyscript") },
    run: async () => {
      const asc = (await import("assemblyscript/asc")).default;
      for (const target of ["release", "debug"]) {
        const { error, stderr } = await asc.main(["assembly/index.ts", "--target", target], {});
        if (error) throw new Error(`${stderr.toString()}\nasc (${target}) failed: ${error.message}`);
      }
      // asc's raw bindings (.js, .d.ts) and the debug build's text and source map beside each wasm
      return { outputs: ["menic", "menic.debug"].flatMap((n) => [`build/${n}.wasm`, `build/${n}.js`, `build/${n}.d.ts`]).concat("build/menic.debug.wat", "build/menic.debug.wasm.map") };
    },
  });

  // esbuild reads tsconfig.json too (target, class fields)
  const esbuild = { versions: { esbuild: version("esbuild") } };
  const common = { bundle: true, format: "esm", target: "es2022", logLevel: "warning", sourcemap: true, metafile: true };
  const read = (r) => Object.keys(r.metafile.inputs).filter((f) => !f.includes(":")); // no plugin modules
  // the one library the host uses (fast-xml-parser, MIT: the MSCCL importer) is bundled in, so
  // the package installs with no dependencies; Node's own modules stay imports
  await step("dist/menic.js, dist/cli.js", "node", {
    ...esbuild,
    inputs: ["host", "tsconfig.json"],
    run: async () => {
      const { build } = await import("esbuild");
      const r = await build({ ...common, platform: "node", entryPoints: { menic: "host/index.ts", cli: "host/platform/cli.ts" }, outdir: "dist" });
      return { outputs: ["dist/menic.js", "dist/menic.js.map", "dist/cli.js", "dist/cli.js.map"], read: read(r) };
    },
  });
  await step("dist/menic.browser.js", "browser", {
    ...esbuild,
    inputs: ["host", "tsconfig.json", "build/menic.wasm"],
    run: async () => {
      const { build } = await import("esbuild");
      const r = await build({ ...common, platform: "browser", entryPoints: { "menic.browser": "host/browser.ts" }, outdir: "dist", loader: { ".wasm": "binary" } });
      return { outputs: ["dist/menic.browser.js", "dist/menic.browser.js.map"], read: read(r) };
    },
  });
  // the page lists every file of examples/scenarios/ (a plugin's module): the folder is an input
  await step("build/web/ (the page)", "web", {
    versions: { ...esbuild.versions, uplot: version("uplot") },
    inputs: ["web", "host", "examples/scenarios", "examples/msccl", "examples/workloads", "tsconfig.json", "build/menic.wasm"],
    run: async () => {
      const { buildWeb, WEB_OUT } = await import("./build-web.mjs");
      return { outputs: [relative(root, WEB_OUT)], read: await buildWeb() };
    },
  });
  await types;
} catch (e) {
  console.error(e.message);
  process.exit(1);
}
console.error(built.length > 0 ? `built ${built.join(", ")}` : "build: up to date (npm run build -- --force runs every step)");
