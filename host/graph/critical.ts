// The critical path of a run: the chain of events that decided when a program's run ended,
// read back from the times the executor recorded (GraphRun.spans). Its message hops are the
// collective's latency steps as they happened: 2 (N - 1) for a ring all-reduce, 2 ceil(log2 N)
// for the double binary tree (test/scenario-collective.test.ts measures both).

import { validateProgram } from "./validate.js";
import { isRemote, type GraphProgram } from "./types.js";

/** When a node of one device was posted and done, on one clock for all devices (ps or cycles). */
export interface NodeTimes {
  node: number;
  posted: number;
  done: number;
}

/** One event of the critical path: a node of a device, posted or done, and when. */
export interface PathStep {
  rank: number;
  node: number;
  event: "posted" | "done";
  at: number;
}

export interface CriticalPath {
  /** from the first event to the last device's final node done */
  steps: PathStep[];
  /** messages on the path: a receive done after its message was posted on another device */
  hops: number;
}

/**
 * Walks back from the node done last (over every device's last node, the final signal): a
 * receive's done waits for its message's posting on the peer (the bytes follow it on the wire;
 * the compiler posts receives first); another node's done for its own posting; a node's posting
 * for its dependencies' done and for the posting of the node before it on its engine (the
 * executor posts an engine's nodes in order), a wait's also for the signals on its semaphore.
 * At each event the latest of these is the one that held it back. A hop is a message crossing
 * the wire on the path: from its posting to its receive's done, or to its own done (a send is
 * done once the peer has it). `times[d]` has device d's nodes (all of them, in node order).
 */
export function criticalPath(p: GraphProgram, times: readonly (readonly NodeTimes[])[]): CriticalPath {
  const { messages } = validateProgram(p);
  const sender = new Map<string, [number, number]>();
  for (const m of messages) sender.set(`${m.to}/${m.recv}`, [m.from, m.message]);
  const prevOnEngine = p.ranks.map((r) => {
    const last = new Map<number, number>();
    return r.nodes.map((n, i) => {
      const prev = last.get(n.engine) ?? -1;
      last.set(n.engine, i);
      return prev;
    });
  });
  const at = (rank: number, node: number, event: PathStep["event"]) => times[rank][node][event];
  let cur: PathStep = { rank: 0, node: p.ranks[0].nodes.length - 1, event: "done", at: -Infinity };
  p.ranks.forEach((r, rank) => {
    const node = r.nodes.length - 1, t = at(rank, node, "done");
    if (t > cur.at) cur = { rank, node, event: "done", at: t };
  });
  const steps: PathStep[] = [cur];
  let hops = 0;
  for (;;) {
    const { rank, node } = cur, n = p.ranks[rank].nodes[node];
    const before: PathStep[] = [];
    const m = n.op === "recv" ? sender.get(`${rank}/${node}`) : undefined;
    if (cur.event === "done") {
      before.push(m ? { rank: m[0], node: m[1], event: "posted", at: at(m[0], m[1], "posted") } : { rank, node, event: "posted", at: at(rank, node, "posted") });
      if (m || isRemote(n)) hops++;
    } else {
      for (const d of n.deps) before.push({ rank, node: d, event: "done", at: at(rank, d, "done") });
      const prev = prevOnEngine[rank][node];
      if (prev >= 0) before.push({ rank, node: prev, event: "posted", at: at(rank, prev, "posted") });
      if (n.op === "wait") p.ranks[rank].nodes.forEach((s, i) => s.op === "signal" && s.sem === n.sem && before.push({ rank, node: i, event: "done", at: at(rank, i, "done") }));
    }
    let next: PathStep | undefined;
    for (const b of before) if (!next || b.at > next.at) next = b;
    if (!next) break;
    steps.push(next);
    cur = next;
  }
  return { steps: steps.reverse(), hops };
}
