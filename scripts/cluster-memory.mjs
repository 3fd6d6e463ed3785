#!/usr/bin/env node
// node scripts/cluster-memory.mjs [devices ...]
//
// The memory a scenario's cluster takes against the figure menic refuses it by (host/scenario/
// cluster.ts clusterBytes, docs/fabric.md "Memory"): for each case and device count, one run in
// a fresh process, its resident memory after the run less before it. Cases: `pairs` (4 x 64 KiB
// WRITEs per flow, default config, 1 port, full mode), the fabric bench's scenario (bench/fabric.ts:
// 8 ports on 8 planes, timing mode), an all-reduce on 16 engines, and an all-to-all (its switch
// queues fill). Needs `npm run build`; a 1,024-device run takes minutes and about 9 GiB.

import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const counts = process.argv.slice(2).map(Number);
const cases = [
  ...(counts.length ? counts : [64, 256, 1024]).flatMap((n) => [["pairs", n], ["bench", n]]),
  ["collective", 64], ["all-to-all", 128],
];

const dir = mkdtempSync(join(tmpdir(), "menic-memory-"));
try {
  const src = join(dir, "run.ts"), out = join(dir, "run.mjs");
  writeFileSync(src, `
import { readFileSync } from "node:fs";
import { scenario as benchScenario } from ${JSON.stringify(join(root, "bench/fabric.ts"))};
import { runScenario, checkScenario } from ${JSON.stringify(join(root, "host/scenario/run.ts"))};
import { clusterBytes, deviceLayout } from ${JSON.stringify(join(root, "host/scenario/cluster.ts"))};
import { resolveConfig } from ${JSON.stringify(join(root, "host/config.ts"))};
const core = new WebAssembly.Module(readFileSync(${JSON.stringify(join(root, "build/menic.wasm"))}));
const [kind, n] = [process.argv[2], Number(process.argv[3])];
const s = kind === "bench" ? benchScenario(n, "timing", 1, "rocev2")
  : kind === "collective" ? { name: "c", until: "50ms", devices: { count: n }, collective: { op: "all-reduce", sizes: [4096 * n], engines: 16 } }
  : { name: "t", until: "50ms", devices: { count: n, config: { ports: 1, scaleUpPorts: 1 } }, traffic: { pattern: kind, messageBytes: 65536, messages: 4 } };
const before = process.memoryUsage().rss;
const sc = checkScenario(core, s, { maxMemoryBytes: 2 ** 40 });
let figure = 0;
const r = await runScenario(core, s, { maxMemoryBytes: 2 ** 40, onBuilt: ({ contexts }) => {
  const cfg = resolveConfig(Object.fromEntries([...contexts[0].device.config].map(([k, v]) => [k, Number(v)])));
  figure = clusterBytes(sc, cfg, deviceLayout(core, cfg).arenaBytes).total;
} });
console.log(JSON.stringify({ ended: r.ended, figure, resident: process.memoryUsage().rss - before }));
`);
  await build({ entryPoints: [src], bundle: true, platform: "node", format: "esm", target: "es2022", outfile: out, logLevel: "warning" });
  const gib = (b) => `${(b / 2 ** 30).toFixed(2)} GiB`;
  console.log(`${"case".padEnd(12)} ${"devices".padStart(7)} ${"figure".padStart(10)} ${"resident".padStart(10)}  ratio`);
  for (const [kind, n] of cases) {
    const p = spawnSync("node", [out, kind, String(n)], { encoding: "utf8" });
    if (p.status !== 0) throw new Error(`cluster-memory: ${kind} ${n}: ${p.stderr.slice(-2000)}`);
    const r = JSON.parse(p.stdout.trim().split("\n").pop());
    console.log(`${kind.padEnd(12)} ${String(n).padStart(7)} ${gib(r.figure).padStart(10)} ${gib(r.resident).padStart(10)}  ${(r.resident / r.figure).toFixed(2)}${r.ended === "finished" ? "" : ` (${r.ended})`}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
