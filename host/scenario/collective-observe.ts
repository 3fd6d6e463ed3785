// A collective's cluster as a RunObserver sees it (result.ts BuiltRun), so that its trace and
// CSV carry the fabric on the engines' timeline: its flows are the ordered pairs of devices its
// programs talk between, each the queue pairs the programs bound between them (bytes sent by the
// first device's, placed by the second's; DCQCN's lowest rate among them), and its runner stops
// at each of the observer's samples. collective.ts (a cluster per size) and sequence.ts (one
// cluster for every collective) use it. No Node APIs.

import type { Context, Qp } from "../verbs.js";
import type { Fabric } from "../fabric/fabric.js";
import type { ClusterRunner } from "../fabric/runner.js";
import { isRemote, type GraphProgram } from "../graph/types.js";
import type { GraphRun } from "../graph/runtime.js";
import type { BuiltRun, ObservedFlow, RunObserver } from "./result.js";

/** A queue pair on its device. */
interface OnDevice { ctx: Context; qp: Qp }

/** One ordered pair of devices: the queue pairs the first sends on, and their partners on the second. */
interface PairFlow { src: number; dst: number; tx: OnDevice[]; rx: OnDevice[] }

/**
 * The flows of a collective's cluster for an observer: one per ordered pair of devices that any
 * of `programs` talks between (so that they are known, and fixed, before the first program is
 * bound), each gaining queue pairs as each program is bound ({@link bind}).
 */
export class CollectiveFlows {
  private readonly pairs: PairFlow[] = [];
  private readonly byPair = new Map<string, PairFlow>();

  constructor(programs: readonly GraphProgram[], private readonly contexts: readonly Context[]) {
    const keys = new Set<string>();
    for (const p of programs) p.ranks.forEach((r, d) => { for (const n of r.nodes) if (isRemote(n)) { keys.add(`${d}>${n.peer}`); keys.add(`${n.peer}>${d}`); } });
    const list = [...keys].map((k) => k.split(">").map(Number) as [number, number]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (const [src, dst] of list) {
      const f: PairFlow = { src, dst, tx: [], rx: [] };
      this.pairs.push(f);
      this.byPair.set(`${src}>${dst}`, f);
    }
  }

  /** Adds the queue pairs `run` bound: device d's queue pair to a peer sends for (d, peer) and receives for (peer, d). */
  bind(run: GraphRun): void {
    this.contexts.forEach((ctx, d) => {
      for (const q of run.queuePairs(d)) {
        this.byPair.get(`${d}>${q.peer}`)?.tx.push({ ctx, qp: q.qp });
        this.byPair.get(`${q.peer}>${d}`)?.rx.push({ ctx, qp: q.qp });
      }
    });
  }

  /** The flows as an observer reads them, named `to <dst>` (their counters sit in the sending device's process). */
  observed(): ObservedFlow[] {
    const sum = (qs: readonly OnDevice[], k: "tx" | "rx") => qs.reduce((s, x) => s + x.ctx.qpBytes(x.qp)[k], 0);
    return this.pairs.map((f) => ({
      src: f.src, dst: f.dst, messageBytes: 0, name: `to ${f.dst}`,
      // before its first queue pair is bound, a flow sends at line rate as far as DCQCN knows
      rateGbps: () => (f.tx.length ? Math.min(...f.tx.map((x) => x.ctx.qpRateGbps(x.qp))) : Number(this.contexts[f.src]!.device.config.get("portGbps"))),
      sentBytes: () => sum(f.tx, "tx"),
      placedBytes: () => sum(f.rx, "rx"),
    }));
  }
}

/**
 * Shows `observer` a collective's cluster (its `begin`), with the flows of `programs`; gives
 * them, to be bound as each program is ({@link CollectiveFlows.bind}), or null without an observer.
 */
export function observeCluster(observer: RunObserver | undefined, c: { fabric: Fabric; runner: ClusterRunner; contexts: readonly Context[] }, transport: BuiltRun["transport"], programs: readonly GraphProgram[], size?: BuiltRun["size"]): CollectiveFlows | null {
  if (!observer) return null;
  const flows = new CollectiveFlows(programs, c.contexts);
  observer.begin({
    fabric: c.fabric, devices: c.contexts.map((x) => x.device), transport, messagesPerFlow: 0, flows: flows.observed(),
    stageDrops: () => c.runner.stageDrops(), ...(size ? { size } : {}),
  });
  return flows;
}

/**
 * runner.runUntilIdle(limitPs), stopping at each multiple of `observer`'s interval on the way
 * to sample there, and at the end. Stopping between windows changes nothing in the cluster
 * (docs/fabric.md, "Windows"); true when it stopped because all was idle.
 */
export function runObserved(runner: ClusterRunner, limitPs: number, observer: RunObserver | undefined): boolean {
  if (!observer) return runner.runUntilIdle(limitPs);
  const I = observer.intervalPs;
  for (;;) {
    const idle = runner.runUntilIdle(Math.min(limitPs, (Math.floor(runner.nowPs / I) + 1) * I));
    observer.sample(runner.nowPs);
    if (idle || runner.nowPs >= limitPs) return idle;
  }
}
