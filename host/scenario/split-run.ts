// The end of a traffic run split over threads (RunOptions.partition, host/fabric/partition.ts):
// every thread hands the first what only it knows of what a result reports, and the first puts
// the run together, so that its result is the one a single thread reports, byte for byte. Each
// thread holds only its own devices; what the first reports of the others' comes from their
// threads:
// - their counters, summed over each thread's devices (counters.ts countedStats), added up;
// - their MetaRoCE-like paths, as the result summarises them (SplitGathered.paths);
// - the fabric's counters (Fabric.counters: each link and switch counted only by the thread
//   that runs its plane, so the first adds them up);
// - their polls: the completions of the flows whose sender they run (TrafficRun.polled);
// - their arrivals that did not fit a receive stage (ClusterRunner.stageDrops).

import type { Partition } from "../fabric/partition.js";
import type { MetarocePath } from "../device.js";
import type { Cluster } from "./cluster.js";
import type { PolledPart, TrafficRun } from "./traffic-run.js";
import { countedStats, sumStats, type CountedStat } from "./counters.js";

/** What the first thread of a split run reports beyond its own devices and fabric: every device's counters and paths. */
export interface SplitGathered {
  /** countedStats' counters summed over every device */
  sums: Record<CountedStat, number>;
  /** per device, its MetaRoCE-like paths at the end (none on RoCEv2) */
  paths: MetarocePath[][];
}

/**
 * Hands this thread's part of the run to the first thread, which puts them together (every
 * thread calls it, at the same point); the first gets what else its result needs, the others null.
 */
export function gatherSplitRun(part: Partition, built: Cluster, tr: TrafficRun, metaroce: boolean): SplitGathered | null {
  const { contexts, fabric, runner } = built;
  const n = contexts.length;
  const of = (k: number) => Array.from({ length: n }, (_, d) => d).filter((d) => part.deviceThread(d, n) === k);
  const mine = of(part.index).map((d) => contexts[d]!.device);
  const counters = fabric.counters(), names = countedStats(metaroce);
  const sums = sumStats(mine, names);
  const text = JSON.stringify({ polled: tr.polled(), paths: mine.map((dev) => dev.metarocePaths()) });
  const handed = part.exchange([runner.stageDrops(), ...names.map((k) => sums[k])], [new Uint8Array(counters.buffer, counters.byteOffset, counters.byteLength), new TextEncoder().encode(text)]);
  if (part.index !== 0) return null;
  const paths: MetarocePath[][] = new Array(n);
  of(0).forEach((d, i) => (paths[d] = mine[i]!.metarocePaths()));
  handed.forEach((h, k) => {
    if (k === 0) return;
    fabric.absorbCounters(new Float64Array(h.sections[0]!.slice().buffer));
    const theirs = JSON.parse(new TextDecoder().decode(h.sections[1]!.slice())) as { polled: PolledPart; paths: MetarocePath[][] };
    tr.absorb(theirs.polled);
    runner.absorbStageDrops(h.nums[0]!);
    // counters are integers below 2^53: their sum is the same in any order
    names.forEach((name, i) => (sums[name] += h.nums[1 + i]!));
    of(k).forEach((d, i) => (paths[d] = theirs.paths[i]!));
  });
  return { sums, paths };
}
