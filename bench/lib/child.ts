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

/** Prints the process's peak resident memory (KiB) as the last line of its stderr when it exits: preloaded into a CLI run by {@link cliPeakRss}. */
const PEAK_RSS_HOOK = 'data:text/javascript,import { writeSync } from "node:fs"; process.on("exit", () => writeSync(2, "\\npeak-rss-kib " + process.resourceUsage().maxRSS + "\\n"));';

/**
 * Runs the command line `menic <args>` (bin/menic.js, from the project's root) in a process of
 * its own, as a user would, with nothing else loaded: its peak resident memory and wall time.
 * Throws when it exits with an error.
 */
export function cliPeakRss(args: string[]): { peakRssMiB: number; wallS: number } {
  const t0 = performance.now();
  const p = spawnSync("node", ["--import", PEAK_RSS_HOOK, "bin/menic.js", ...args], { encoding: "utf8", maxBuffer: 1 << 28 });
  const wallS = (performance.now() - t0) / 1000;
  const kib = /peak-rss-kib (\d+)\s*$/.exec(p.stderr);
  if (p.status !== 0 || !kib) throw new Error(`bench: menic ${args.join(" ")} exited ${p.status}: ${p.stderr}`);
  return { peakRssMiB: +kib[1]! / 1024, wallS };
}
