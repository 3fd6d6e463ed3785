#!/usr/bin/env node
// node scripts/ab-fabric.mjs <git-ref> [--transport rocev2|metaroce] [--mode timing|full] [--rounds K] [--runs N]
//
// The fabric bench's 64-device scenario (bench/fabric.ts) run alternately by the build at
// <git-ref> (A) and by this checkout (B), so that both see the same machine: on a shared or
// virtual machine one run moves by a third from the next, and only a ratio measured this way
// says whether a change made the cluster faster. <git-ref> is checked out into a temporary
// worktree and built there. Each round runs a process per side doing N runs of the scenario
// (the first cold); every run's packet-hops per second is kept. Runs are timed as
// bench/fabric.ts times them, from the first window (RunOptions.onStart) to the result, each
// after a full collection; when a side's build does not call onStart for a traffic scenario
// (builds before it did), both sides are timed from onBuilt instead, set-up included, so that
// they are timed alike. Prints one JSON object: how runs were timed (`timedFrom`), each side's
// mean and best hops/s and their ratios (B over A).
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const usage = "usage: node scripts/ab-fabric.mjs <git-ref> [--transport rocev2|metaroce] [--mode timing|full] [--rounds K] [--runs N]";
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? dflt : args[i + 1];
};
const ref = args[0];
if (!ref || ref.startsWith("-")) { console.error(usage); process.exit(2); }
const transport = opt("transport", "rocev2"), mode = opt("mode", "timing");
const rounds = Number(opt("rounds", 6)), runs = Number(opt("runs", 3));
if (!["rocev2", "metaroce"].includes(transport) || !["timing", "full"].includes(mode) || !(rounds >= 1) || !(runs >= 1)) {
  console.error(usage);
  process.exit(2);
}

// one run of the scenario: the same one bench/fabric.ts measures; its times from onBuilt and,
// when the build calls it, from onStart
const runner = (dir) => `
import { runScenario } from ${JSON.stringify(join(dir, "host/scenario/run.ts"))};
import { coreModule } from ${JSON.stringify(join(dir, "host/platform/node.ts"))};
const sc = { name: "ab", seed: 1, transport: ${JSON.stringify(transport)},
  devices: { count: 64, config: { engines: 1, sramBytes: 4096, ports: 8, scaleUpPorts: 8 } },
  fabric: { mode: ${JSON.stringify(mode)}, topology: { kind: "leaf-spine", planes: 8, spines: 16, devicesPerLeaf: 16 } },
  traffic: { pattern: "permutation", messageBytes: 1 << 20, messages: 1, flowsPerPair: 8 } };
for (let k = 0; k < ${runs}; k++) {
  let fabric, built = 0, started = -1;
  globalThis.gc();
  const r = await runScenario(coreModule(), sc, { onBuilt: (c) => { fabric = c.fabric; built = performance.now(); }, onStart: () => { started = performance.now(); } });
  const end = performance.now();
  if (!r.finished) throw new Error("ab-fabric: the scenario did not finish");
  console.log(JSON.stringify({ hops: fabric.stats().hops, fromBuilt: (end - built) / 1000, fromStart: started < 0 ? null : (end - started) / 1000 }));
}
`;

async function bundle(dir) {
  const src = join(dir, "build", "ab-run.ts"), out = join(dir, "build", "ab-run.mjs");
  writeFileSync(src, runner(dir));
  await build({ entryPoints: [src], bundle: true, platform: "node", format: "esm", target: "es2022", outfile: out, logLevel: "warning" });
  return out;
}

const base = mkdtempSync(join(tmpdir(), "menic-ab-"));
const dirA = join(base, "a");
try {
  execFileSync("git", ["-C", root, "worktree", "add", "--detach", dirA, ref], { stdio: "ignore" });
  symlinkSync(join(root, "node_modules"), join(dirA, "node_modules"));
  execFileSync("node", ["scripts/build.mjs"], { cwd: dirA, stdio: "ignore" });
  if (!existsSync(join(root, "build", "menic.wasm"))) execFileSync("node", ["scripts/build.mjs"], { cwd: root, stdio: "ignore" });
  const bundles = { A: await bundle(dirA), B: await bundle(root) };
  const timed = { A: [], B: [] };
  for (let k = 0; k < rounds; k++) {
    for (const side of ["A", "B"]) {
      const p = spawnSync("node", ["--expose-gc", bundles[side]], { encoding: "utf8" });
      if (p.status !== 0) throw new Error(`ab-fabric: side ${side} failed: ${p.stderr}`);
      for (const line of p.stdout.trim().split("\n")) timed[side].push(JSON.parse(line));
    }
  }
  const timedFrom = [...timed.A, ...timed.B].every((x) => x.fromStart !== null) ? "onStart" : "onBuilt";
  const hopsPerS = {};
  for (const side of ["A", "B"]) hopsPerS[side] = timed[side].map((x) => x.hops / (timedFrom === "onStart" ? x.fromStart : x.fromBuilt));
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const best = (xs) => Math.max(...xs);
  const side = (xs) => ({ meanHopsPerS: Math.round(mean(xs)), bestHopsPerS: Math.round(best(xs)), runs: xs.length });
  console.log(JSON.stringify({
    ref, transport, mode, timedFrom, A: side(hopsPerS.A), B: side(hopsPerS.B),
    meanRatio: +(mean(hopsPerS.B) / mean(hopsPerS.A)).toFixed(3), bestRatio: +(best(hopsPerS.B) / best(hopsPerS.A)).toFixed(3),
  }));
} finally {
  spawnSync("git", ["-C", root, "worktree", "remove", "--force", dirA]);
  rmSync(base, { recursive: true, force: true });
  rmSync(join(root, "build", "ab-run.ts"), { force: true });
}
