// The end of a traffic run split over threads (RunOptions.partition, host/fabric/partition.ts):
// every thread hands the first what only it knows, and the first puts the run together, so
// that its result is the one a single thread reports, byte for byte.
// - Its devices: their arenas, as 4 KiB pieces that hold anything but zeros (the first thread's
//   copies of them never ran; it clears them and writes these in): counters, paths, queues.
// - Its planes: the fabric's counters (Fabric.counters: each link and switch counted only by
//   the thread that runs it, so the first adds them up).
// - Its polls: the completions of the flows whose sender it runs (TrafficRun.polled).
// - Its devices' arrivals that did not fit a receive stage (ClusterRunner.stageDrops).

import type { Partition } from "../fabric/partition.js";
import type { Cluster } from "./cluster.js";
import type { PolledPart, TrafficRun } from "./traffic-run.js";

/** The pieces an arena is cut into. */
const PIECE = 4096;

/** Hands this thread's part of the run to the first thread, which puts them together (every thread calls it, at the same point). */
export function gatherSplitRun(part: Partition, built: Cluster, tr: TrafficRun): void {
  const { contexts, fabric, runner } = built;
  const mine = contexts.flatMap((_, d) => (part.deviceThread(d, contexts.length) === part.index ? [d] : []));
  const counters = fabric.counters();
  const handed = part.exchange([runner.stageDrops()], [
    new Uint8Array(counters.buffer, counters.byteOffset, counters.byteLength),
    new TextEncoder().encode(JSON.stringify(tr.polled())),
    part.index === 0 ? new Uint8Array(0) : arenaPieces(built, mine),
  ]);
  if (part.index !== 0) return;
  // where each arena is, read before any is cleared (a device's record, its size among them, heads its arena)
  const arenas = contexts.map((_, d) => arenaOf(built, d));
  handed.forEach((h, k) => {
    if (k === 0) return;
    fabric.absorbCounters(new Float64Array(h.sections[0]!.slice().buffer));
    tr.absorb(JSON.parse(new TextDecoder().decode(h.sections[1]!.slice())) as PolledPart);
    runner.absorbStageDrops(h.nums[0]!);
    const theirs = contexts.flatMap((_, d) => (part.deviceThread(d, contexts.length) === k ? [d] : []));
    for (const d of theirs) clearArena(arenas[d]!);
    writePieces(arenas, h.sections[2]!);
  });
}

/** Device `d`'s arena in its instance's memory. */
function arenaOf(built: Cluster, d: number): Uint8Array {
  const dev = built.contexts[d]!.device, core = dev.core;
  const base = core.arenaBase(dev.handle) >>> 0, size = core.arenaBytes(dev.handle) >>> 0;
  return new Uint8Array(core.memory.buffer, base, size);
}

/** Whether `b` holds anything but zeros. */
function nonZero(b: Uint8Array): boolean {
  // 8 bytes at a time where the piece is aligned to them (arenas start on 64 bytes)
  const words = b.byteOffset % 8 === 0 ? new BigUint64Array(b.buffer, b.byteOffset, b.length >> 3) : null;
  if (words) { for (let i = 0; i < words.length; i++) if (words[i] !== 0n) return true; }
  for (let i = words ? words.length << 3 : 0; i < b.length; i++) if (b[i] !== 0) return true;
  return false;
}

/** The pieces of devices `ds`' arenas that are not all zeros: per piece (device, offset, length) as u32, then its bytes. */
function arenaPieces(built: Cluster, ds: readonly number[]): Uint8Array {
  const found: [number, number, Uint8Array][] = [];
  let bytes = 0;
  for (const d of ds) {
    const a = arenaOf(built, d);
    for (let at = 0; at < a.length; at += PIECE) {
      const p = a.subarray(at, Math.min(a.length, at + PIECE));
      if (!nonZero(p)) continue;
      found.push([d, at, p]);
      bytes += 12 + p.length;
    }
  }
  const out = new Uint8Array(bytes), dv = new DataView(out.buffer);
  let k = 0;
  for (const [d, at, p] of found) {
    dv.setUint32(k, d, true); dv.setUint32(k + 4, at, true); dv.setUint32(k + 8, p.length, true);
    out.set(p, k + 12);
    k += 12 + p.length;
  }
  return out;
}

/** Zeroes arena `a` where it is not zero already (its pages untouched stay so). */
function clearArena(a: Uint8Array): void {
  for (let at = 0; at < a.length; at += PIECE) {
    const p = a.subarray(at, Math.min(a.length, at + PIECE));
    if (nonZero(p)) p.fill(0);
  }
}

/** Writes arenaPieces' pieces into the devices' `arenas`. */
function writePieces(arenas: readonly Uint8Array[], pieces: Uint8Array): void {
  const dv = new DataView(pieces.buffer, pieces.byteOffset, pieces.byteLength);
  for (let k = 0; k < pieces.length;) {
    const d = dv.getUint32(k, true), at = dv.getUint32(k + 4, true), len = dv.getUint32(k + 8, true);
    arenas[d]!.set(pieces.subarray(k + 12, k + 12 + len), at);
    k += 12 + len;
  }
}
