#!/usr/bin/env node
// node scripts/instructions.mjs [--transport rocev2|metaroce] [--messages M] [--top N]
//
// The fabric bench's 64-device scenario (bench/fabric.ts's scenario(), M messages a flow; default 3) run once
// under Valgrind's callgrind, which counts every instruction the machine executes: the core's
// instructions per packet-hop, in all and by function. Unlike a time, the count is the same on
// every run (the core's code and inputs are), so it shows a change of a few percent on a machine
// whose timings move by a third; it does not show cache misses or mispredicted branches (time
// the change with scripts/ab-fabric.mjs too). Needs valgrind (Debian: apt-get install valgrind).
//
// How: this checkout's core is compiled with its function names (asc --debug), V8 is told to
// compile all of it optimised at once (--no-liftoff, so that no baseline code is counted) and to
// write where each function's code lies (--perf-basic-prof); callgrind's count for each
// instruction address is then summed by the function whose code holds it. A run takes a few
// minutes.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const usage = "usage: node scripts/instructions.mjs [--transport rocev2|metaroce] [--messages M] [--top N]";
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? dflt : args[i + 1];
};
const transport = opt("transport", "rocev2"), messages = Number(opt("messages", 3)), top = Number(opt("top", 25));
if (!["rocev2", "metaroce"].includes(transport) || !(messages >= 1) || !(top >= 0)) {
  console.error(usage);
  process.exit(2);
}
if (spawnSync("valgrind", ["--version"]).status !== 0) {
  console.error("instructions: valgrind is missing (Debian: apt-get install valgrind)");
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), "menic-instr-"));
try {
  const wasm = join(dir, "named.wasm");
  execFileSync("npx", ["asc", "assembly/index.ts", "--target", "release", "--debug", "-o", wasm], { cwd: root, stdio: "ignore" });
  const src = join(dir, "run.ts"), out = join(dir, "run.mjs");
  writeFileSync(src, `
import { readFileSync } from "node:fs";
import { runScenario } from ${JSON.stringify(join(root, "host/scenario/run.ts"))};
import { scenario } from ${JSON.stringify(join(root, "bench/fabric.ts"))};
const sc = scenario(64, "timing", ${messages}, ${JSON.stringify(transport)});
let fabric;
const r = await runScenario(new WebAssembly.Module(readFileSync(${JSON.stringify(wasm)})), sc, { onBuilt: (c) => { fabric = c.fabric; } });
if (!r.finished) throw new Error("instructions: the scenario did not finish");
console.log(JSON.stringify({ hops: fabric.stats().hops }));
`);
  await build({ entryPoints: [src], bundle: true, platform: "node", format: "esm", target: "es2022", outfile: out, logLevel: "warning" });
  const cg = join(dir, "callgrind.out");
  const p = spawnSync("valgrind", ["--tool=callgrind", "--dump-instr=yes", "--smc-check=all-non-file", `--callgrind-out-file=${cg}`,
    "node", "--no-liftoff", "--perf-basic-prof", out], { encoding: "utf8", cwd: dir, maxBuffer: 1 << 26 });
  if (p.status !== 0) throw new Error(`instructions: the run failed: ${p.stderr.slice(-2000)}`);
  const { hops } = JSON.parse(p.stdout.trim().split("\n").pop());
  const pid = /==(\d+)==/.exec(p.stderr)?.[1];
  const mapFile = `/tmp/perf-${pid}.map`;
  if (!pid || !existsSync(mapFile)) throw new Error("instructions: V8 wrote no code map (--perf-basic-prof)");
  const byFunction = count(readFileSync(cg, "utf8"), codeMap(readFileSync(mapFile, "utf8")));
  rmSync(mapFile, { force: true });
  const core = [...byFunction].filter(([name]) => name.startsWith("JS:assembly/"));
  const total = core.reduce((a, [, n]) => a + n, 0);
  const line = (o) => console.log(JSON.stringify(o));
  line({ instructions: "core.per_hop", value: +(total / hops).toFixed(1), transport, messages, hops });
  for (const [name, n] of core.sort((a, b) => b[1] - a[1]).slice(0, top))
    line({ instructions: name.slice("JS:assembly/".length).replace(/-\d+-turbofan$/, ""), per_hop: +(n / hops).toFixed(1) });
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/** V8's code map (start, size, name per line), sorted by start. */
function codeMap(text) {
  const m = [];
  for (const l of text.split("\n")) {
    const [a, s, ...name] = l.split(" ");
    if (name.length) m.push({ start: parseInt(a, 16), end: parseInt(a, 16) + parseInt(s, 16), name: name.join(" ") });
  }
  return m.sort((x, y) => x.start - y.start);
}

/** Callgrind's instruction counts (--dump-instr) summed by the code-map entry holding each address ("?" when none). */
function count(text, map) {
  const perAddress = new Map();
  let npos = 1, last = [], afterCall = false;
  const pos = (tok, i) => (tok === "*" ? last[i] : tok[0] === "+" || tok[0] === "-" ? last[i] + Number(tok) : tok.startsWith("0x") ? parseInt(tok, 16) : Number(tok));
  for (const l of text.split("\n")) {
    if (l.startsWith("positions:")) { npos = l.split(/\s+/).length - 1; last = new Array(npos).fill(0); continue; }
    if (l.startsWith("calls=")) { afterCall = true; continue; }
    if (!/^[0-9+*-]/.test(l)) continue;
    const t = l.split(/\s+/);
    if (t.length < npos + 1) continue;
    last = t.slice(0, npos).map(pos);
    // the line after calls= is the call's inclusive cost, counted where it was spent
    if (afterCall) { afterCall = false; continue; }
    perAddress.set(last[0], (perAddress.get(last[0]) ?? 0) + Number(t[npos]));
  }
  const starts = map.map((e) => e.start), out = new Map();
  for (const [a, n] of perAddress) {
    let lo = 0, hi = starts.length - 1, k = -1;
    while (lo <= hi) { const mid = (lo + hi) >> 1; if (starts[mid] <= a) { k = mid; lo = mid + 1; } else hi = mid - 1; }
    const name = k >= 0 && a < map[k].end ? map[k].name : "?";
    out.set(name, (out.get(name) ?? 0) + n);
  }
  return out;
}
