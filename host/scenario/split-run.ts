// The end of a traffic run split over threads (RunOptions.partition, host/fabric/partition.ts):
// every thread hands the first what only it knows of what a result reports, and the first puts
// the run together, so that its result is the one a single thread reports, byte for byte. The
// first thread's copies of the others' devices never ran; what it reports of them comes from
// their threads:
// - their counters: each device's statistics, written over the first thread's copy (a result
//   sums them: counters.ts);
// - their MetaRoCE-like paths, as the result summarises them (SplitGathered.paths);
// - the fabric's counters (Fabric.counters: each link and switch counted only by the thread
//   that runs its plane, so the first adds them up);
// - their polls: the completions of the flows whose sender they run (TrafficRun.polled);
// - their arrivals that did not fit a receive stage (ClusterRunner.stageDrops).

import type { Partition } from "../fabric/partition.js";
import type { MetarocePath } from "../device.js";
import type { Cluster } from "./cluster.js";
import type { PolledPart, TrafficRun } from "./traffic-run.js";

/** What the first thread of a split run reports beyond its own devices and fabric: every device's paths. */
export interface SplitGathered {
  /** per device, its MetaRoCE-like paths at the end (none on RoCEv2) */
  paths: MetarocePath[][];
}

/**
 * Hands this thread's part of the run to the first thread, which puts them together (every
 * thread calls it, at the same point); the first gets what else its result needs, the others null.
 */
export function gatherSplitRun(part: Partition, built: Cluster, tr: TrafficRun): SplitGathered | null {
  const { contexts, fabric, runner } = built;
  const n = contexts.length;
  const of = (k: number) => contexts.flatMap((_, d) => (part.deviceThread(d, n) === k ? [d] : []));
  const mine = of(part.index);
  const counters = fabric.counters();
  const stats = new Uint8Array(mine.reduce((s, d) => s + statsOf(built, d).length, 0));
  let at = 0;
  for (const d of mine) { const b = statsOf(built, d); stats.set(b, at); at += b.length; }
  const text = JSON.stringify({ polled: tr.polled(), paths: mine.map((d) => contexts[d]!.device.metarocePaths()) });
  const handed = part.exchange([runner.stageDrops()], [new Uint8Array(counters.buffer, counters.byteOffset, counters.byteLength), new TextEncoder().encode(text), stats]);
  if (part.index !== 0) return null;
  const paths = contexts.map((c, d) => (part.deviceThread(d, n) === 0 ? c.device.metarocePaths() : []));
  handed.forEach((h, k) => {
    if (k === 0) return;
    fabric.absorbCounters(new Float64Array(h.sections[0]!.slice().buffer));
    const theirs = JSON.parse(new TextDecoder().decode(h.sections[1]!.slice())) as { polled: PolledPart; paths: MetarocePath[][] };
    tr.absorb(theirs.polled);
    runner.absorbStageDrops(h.nums[0]!);
    let at = 0;
    of(k).forEach((d, i) => {
      const b = statsOf(built, d);
      b.set(h.sections[2]!.subarray(at, at + b.length));
      at += b.length;
      paths[d] = theirs.paths[i]!;
    });
  });
  return { paths };
}

/** Device `d`'s statistics, as bytes of its instance's memory. */
function statsOf(built: Cluster, d: number): Uint8Array {
  const dev = built.contexts[d]!.device, core = dev.core;
  return new Uint8Array(core.memory.buffer, core.statsPtr(dev.handle) >>> 0, 8 * core.statCount());
}
