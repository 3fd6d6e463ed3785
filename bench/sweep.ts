// npm run bench -- sweep: a sweep's runs on worker threads (`menic run --jobs N`, issue 31 §4).
// examples/scenarios/permutation.json swept over 8 seeds (8 runs of about the same size, each a
// permutation drawn from its seed), in timing mode with 4,096 x 256 KiB per device (about 1 s a
// run), run by the `menic` command as a user runs it, on 1 thread and on N (2, and every core
// when there are more):
//   sweep.jobs<N>.speedup   wall time of the whole command on 1 thread over that on N
//   sweep.jobs<N>.wall_s    wall time on N threads (the median of 3, each beside a 1-thread run:
//                           1, N, 1, N, 1, N, so that a machine getting busier is shared by both)
// Every N-thread run's JSON must be the 1-thread run's, byte for byte; the bench fails otherwise.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { figure, median } from "./lib/report.js";

const SEEDS = [1, 2, 3, 4, 5, 6, 7, 8];
const REPEATS = 3;

function sweepFile(dir: string): string {
  const s = JSON.parse(readFileSync("examples/scenarios/permutation.json", "utf8"));
  delete s.$schema;
  s.fabric.mode = "timing";
  s.traffic.messages = 4096;
  s.until = "100ms";
  s.sweep = { seed: SEEDS };
  const f = join(dir, "sweep.json");
  writeFileSync(f, JSON.stringify(s));
  return f;
}

function timed(file: string, jobs: number): { wallS: number; stdout: string } {
  const t0 = performance.now();
  const r = spawnSync("node", ["bin/menic.js", "run", file, "--json", "--jobs", String(jobs)], { encoding: "utf8", maxBuffer: 1 << 30 });
  const wallS = (performance.now() - t0) / 1000;
  if (r.status !== 0) throw new Error(`menic run --jobs ${jobs} exited ${r.status}: ${r.stderr}`);
  return { wallS, stdout: r.stdout };
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "menic-bench-sweep-"));
  try {
    const file = sweepFile(dir);
    const cores = availableParallelism();
    const counts = [...new Set([2, cores])].filter((n) => n >= 2);
    for (const jobs of counts) {
      const one: number[] = [], many: number[] = [];
      let reference: string | null = null;
      for (let i = 0; i < REPEATS; i++) {
        const a = timed(file, 1), b = timed(file, jobs);
        reference ??= a.stdout;
        if (a.stdout !== reference || b.stdout !== reference) throw new Error(`sweep: --jobs ${jobs} gave other bytes than one thread`);
        one.push(a.wallS);
        many.push(b.wallS);
      }
      figure(`sweep.jobs${jobs}.speedup`, median(one) / median(many), "x", `a sweep of ${SEEDS.length} runs, whole command: 1 thread's wall time over ${jobs} threads' (identical JSON)`, { cores });
      figure(`sweep.jobs${jobs}.wall_s`, median(many), "s", `the same on ${jobs} threads (1 thread: ${median(one).toFixed(2)} s)`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
