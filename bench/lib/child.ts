// A suite's figure measured in a process of its own (its resident memory, its CPU time its
// own): the suite's bundle imported again in a fresh node, its exported `child` called with
// `args`, and the last line the child prints read as JSON.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Calls `child(...args)` of the module at `moduleUrl` (a suite's import.meta.url) in a new process; returns what it printed last, parsed, and the process's wall time. */
export function inChild<T>(moduleUrl: string, ...args: unknown[]): { out: T; wallS: number } {
  const self = fileURLToPath(moduleUrl);
  const call = `import(${JSON.stringify(self)}).then((m) => m.child(${args.map((a) => JSON.stringify(a)).join(", ")}))`;
  const t0 = performance.now();
  const p = spawnSync("node", ["--input-type=module", "-e", call], { encoding: "utf8", maxBuffer: 1 << 26 });
  const wallS = (performance.now() - t0) / 1000;
  if (p.status !== 0) throw new Error(`bench: child(${args.map((a) => JSON.stringify(a)).join(", ")}) exited ${p.status}: ${p.stderr}`);
  return { out: JSON.parse(p.stdout.trim().split("\n").at(-1)!) as T, wallS };
}
