// Data races in a program's graphs: two nodes touching overlapping bytes of one device's
// buffer, at least one of them writing, with neither ordered before the other by the event
// graph (validate.ts eventGraph: one is done before the other is posted). Such a graph computes
// what the order of the moment gives — the reference executor and the engines could disagree —
// so the compiler's graphs must have none (test/collectives.test.ts), and a hand-written graph
// can be checked for them.

import { eventGraph, validateProgram, type Matching } from "./validate.js";
import { GraphError, nodeLabel, type BufferRef, type GraphProgram } from "./types.js";

interface Access {
  /** the node (global index, eventGraph numbering) */
  v: number;
  lo: number;
  hi: number;
  write: boolean;
  what: string;
}

/** The first race found, as a GraphError naming both nodes; null when there is none. Memory grows as (events)^2 / 8 bytes: for graphs of up to some 50,000 nodes. */
export function findRace(p: GraphProgram, m: Matching): GraphError | null {
  const g = eventGraph(p, m);
  const nEv = g.out.length;
  // accesses per (device, buffer)
  const acc = new Map<string, Access[]>();
  const add = (rank: number, r: BufferRef, bytes: number, v: number, write: boolean, what: string) => {
    if (bytes === 0) return;
    const k = `${rank}/${r.buffer}`;
    const list = acc.get(k) ?? [];
    list.push({ v, lo: r.offset, hi: r.offset + bytes, write, what });
    acc.set(k, list);
  };
  p.ranks.forEach((rk, rank) => rk.nodes.forEach((n, i) => {
    const v = g.base[rank] + i;
    switch (n.op) {
      case "send": add(rank, n.src, n.bytes, v, false, "reads src"); break;
      case "recv": if (n.dst) add(rank, n.dst, n.bytes, v, true, "writes dst"); break;
      case "write": add(rank, n.src, n.bytes, v, false, "reads src"); add(n.peer, n.dst, n.bytes, v, true, `writes dst on device ${n.peer}`); break;
      case "read": add(n.peer, n.src, n.bytes, v, false, `reads src on device ${n.peer}`); add(rank, n.dst, n.bytes, v, true, "writes dst"); break;
      case "reduce": n.srcs.forEach((s, k) => add(rank, s, n.bytes, v, false, `reads srcs[${k}]`)); add(rank, n.dst, n.bytes, v, true, "writes dst"); break;
      case "copy": add(rank, n.src, n.bytes, v, false, "reads src"); add(rank, n.dst, n.bytes, v, true, "writes dst"); break;
    }
  }));
  // reach[e]: the events after e (a bitset), built in reverse topological order
  const words = (nEv + 31) >>> 5;
  const reach = new Uint32Array(nEv * words);
  const indeg = new Int32Array(nEv);
  for (const succ of g.out) for (const e of succ) indeg[e]++;
  const order: number[] = [];
  for (let e = 0; e < nEv; e++) if (indeg[e] === 0) order.push(e);
  for (let k = 0; k < order.length; k++) for (const s of g.out[order[k]]) if (--indeg[s] === 0) order.push(s);
  for (let k = order.length - 1; k >= 0; k--) {
    const e = order[k], row = e * words;
    for (const s of g.out[e]) {
      reach[row + (s >>> 5)] |= 1 << (s & 31);
      const srow = s * words;
      for (let w = 0; w < words; w++) reach[row + w] |= reach[srow + w];
    }
  }
  const before = (a: number, b: number) => {
    const from = 2 * a + 1, to = 2 * b; // a done, b posted
    return (reach[from * words + (to >>> 5)] & (1 << (to & 31))) !== 0;
  };
  const where = (v: number) => {
    let rank = g.base.length - 1;
    while (g.base[rank] > v) rank--;
    const i = v - g.base[rank];
    return nodeLabel(rank, i, p.ranks[rank].nodes[i]);
  };
  for (const [k, list] of acc) {
    list.sort((a, b) => a.lo - b.lo || a.v - b.v);
    for (let x = 0; x < list.length; x++) {
      const a = list[x];
      for (let y = x + 1; y < list.length && list[y].lo < a.hi; y++) {
        const b = list[y];
        if (a.v === b.v || (!a.write && !b.write) || before(a.v, b.v) || before(b.v, a.v)) continue;
        const [rank, buffer] = k.split("/");
        const lo = Math.max(a.lo, b.lo), hi = Math.min(a.hi, b.hi);
        return new GraphError(where(a.v), `data race on device ${rank}'s buffer "${buffer}" bytes [${lo}, ${hi}): it ${a.what} and ${where(b.v)} ${b.what}, and neither is done before the other is posted`);
      }
    }
  }
  return null;
}

/** Validates `p` and throws the first data race in it as a GraphError. */
export function checkRaces(p: GraphProgram): void {
  const race = findRace(p, validateProgram(p));
  if (race) throw race;
}
