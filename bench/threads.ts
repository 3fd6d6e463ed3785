// npm run bench -- threads: one run split over worker threads (issue 31 §4; `menic run
// --threads N`, docs/scale.md). The fabric bench's devices (8 ports, one per plane) in a
// permutation of WRITEs, timing mode: 1,024 devices on a leaf/spine of 8 planes (1 MiB, 8 flows
// a pair), over RoCEv2 and over the MetaRoCE-like transport; 16,384 devices on the scale bench's
// three-tier Clos (64 KiB). Each run is a process of its own, the thread counts alternating
// (1, 2, ..., 1, 2, ...; 3 rounds at 1,024 devices, 2 at 16,384):
//   threads.<case>.speedup_<n>        the run itself (from the end of set-up to the result, as
//                                     the first thread sees it) on 1 thread over on n (goal: at
//                                     least 1.6 on 2 cores), median of the runs
//   threads.<case>.process_speedup_<n> the same for the whole process: set-up too (each thread
//                                     builds its own devices and the whole fabric, side by side)
//   threads.<case>.setup_speedup_<n>  the same for set-up alone (start to the run's start)
//   threads.<case>.peak_rss_mib_<n>   the process's peak resident memory on n threads
// Every thread count's result must be the one thread's, byte for byte (else the bench fails).
import { createHash } from "node:crypto";
import { availableParallelism } from "node:os";
import { runScenarioThreads } from "../host/platform/run-threads.js";
import type { ScenarioInput } from "../host/scenario/run.js";
import { scenario } from "./fabric.js";
import { figure, median } from "./lib/report.js";
import { inChild } from "./lib/child.js";

type Case = "devices1024.rocev2" | "devices1024.metaroce" | "devices16384.three_tier";

interface Measured {
  ended: string;
  runS: number;
  wallS: number;
  /** from the start to the run's start, s */
  setupS: number;
  peakRssMiB: number;
  hops: number;
  /** sha256 of the result's JSON */
  digest: string;
}

/** The scenario of case `c`. */
function input(c: Case): ScenarioInput {
  if (c === "devices16384.three_tier") {
    const sc = scenario(16384, "timing", 1, "rocev2");
    sc.traffic!.messageBytes = 65536;
    sc.fabric!.topology = { kind: "three-tier", planes: 8, devicesPerLeaf: 16, leavesPerPod: 16, spinesPerPod: 16, superSpines: 16 };
    return sc;
  }
  return scenario(1024, "timing", 1, c === "devices1024.rocev2" ? "rocev2" : "metaroce");
}

/** One run on `threads` threads, in this process (the child's side). */
export async function child(c: Case, threads: number): Promise<void> {
  const t0 = performance.now();
  let tRun = 0;
  const r = await runScenarioThreads(input(c), threads, { maxMemoryBytes: 2 ** 40, onStart: () => { tRun = performance.now(); } });
  const end = performance.now();
  const m: Measured = {
    ended: r.ended, runS: (end - tRun) / 1000, wallS: (end - t0) / 1000, setupS: (tRun - t0) / 1000, peakRssMiB: process.resourceUsage().maxRSS / 1024,
    hops: r.fabric?.hops ?? 0, digest: createHash("sha256").update(JSON.stringify(r)).digest("hex"),
  };
  console.log(JSON.stringify(m));
}

export async function run(): Promise<void> {
  const counts = Array.from({ length: Math.max(2, Math.min(8, availableParallelism())) }, (_, i) => i + 1);
  const cases: [Case, number][] = [["devices1024.rocev2", 3], ["devices1024.metaroce", 3], ["devices16384.three_tier", 2]];
  for (const [c, repeats] of cases) {
    const runs = new Map<number, Measured[]>(counts.map((n) => [n, []]));
    for (let k = 0; k < repeats; k++) for (const n of counts) runs.get(n)!.push(inChild<Measured>(import.meta.url, c, n).out);
    const one = runs.get(1)!;
    for (const [n, ms] of runs) {
      for (const m of ms) {
        if (m.ended !== "finished") throw new Error(`bench threads: ${c} on ${n} threads ${m.ended}`);
        if (m.digest !== one[0]!.digest) throw new Error(`bench threads: ${c} on ${n} threads gave another result than on 1`);
      }
      if (n > 1) {
        figure(`threads.${c}.speedup_${n}`, median(one.map((m) => m.runS)) / median(ms.map((m) => m.runS)), "x",
          `the run (set-up done to result) on 1 thread over on ${n}, ${c.replace(".", ", ")}, a permutation in timing mode (median of ${ms.length}; goal at 2: at least 1.6)`,
          { runS: { 1: one.map((m) => +m.runS.toFixed(2)), [n]: ms.map((m) => +m.runS.toFixed(2)) }, hops: one[0]!.hops });
        figure(`threads.${c}.process_speedup_${n}`, median(one.map((m) => m.wallS)) / median(ms.map((m) => m.wallS)), "x",
          `the whole process on 1 thread over on ${n}: set-up too, each thread building its own devices and the whole fabric`, { wallS: { 1: one.map((m) => +m.wallS.toFixed(2)), [n]: ms.map((m) => +m.wallS.toFixed(2)) } });
        figure(`threads.${c}.setup_speedup_${n}`, median(one.map((m) => m.setupS)) / median(ms.map((m) => m.setupS)), "x",
          `set-up (the start to the run's start) on 1 thread over on ${n}`, { setupS: { 1: one.map((m) => +m.setupS.toFixed(2)), [n]: ms.map((m) => +m.setupS.toFixed(2)) } });
      }
      figure(`threads.${c}.peak_rss_mib_${n}`, Math.max(...ms.map((m) => m.peakRssMiB)), "MiB", `the process's peak resident memory on ${n} thread${n > 1 ? "s" : ""}`, {});
    }
  }
}
