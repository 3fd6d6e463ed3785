// What a collective's graphs must mean before any device runs them (docs/graph.md,
// "Validation"): ranges, buffers, dependencies without cycles, every message matched by a
// receive on the other side, and no deadlock across devices. The first problem found is
// thrown as a GraphError naming the node (nodeLabel) and what is wrong.

import {
  GraphError, nodeLabel, isRemote, DTYPE_BYTES,
  type BufferRef, type GraphNode, type GraphProgram, type RecvNode, type SendNode, type WriteNode,
} from "./types.js";
import { GRAPH_MAX_SOURCES } from "../generated/layouts.js";

export interface ValidateOptions {
  /** engines of the devices that will run it (node engines must be below it) */
  deviceEngines?: number;
}

/** Throws a GraphError for the first thing wrong with `p`; returns the matching of messages to receives when all is well. */
export function validateProgram(p: GraphProgram, o: ValidateOptions = {}): Matching {
  if (p.devices < 1) throw new GraphError("devices", "must be at least 1");
  if (p.engines < 1) throw new GraphError("engines", "must be at least 1");
  if (o.deviceEngines !== undefined && p.engines > o.deviceEngines) throw new GraphError("engines", `the graphs use ${p.engines} engines, the devices have ${o.deviceEngines}`);
  if (p.ranks.length !== p.devices) throw new GraphError("ranks", `has ${p.ranks.length} graphs for ${p.devices} devices (one per device)`);
  const sizes = new Map<string, number>();
  p.buffers.forEach((b, i) => {
    if (sizes.has(b.name)) throw new GraphError(`buffers[${i}]`, `a second buffer named "${b.name}"`);
    if (b.bytes === 0) throw new GraphError(`buffers[${i}]`, `"${b.name}" has 0 bytes`);
    sizes.set(b.name, b.bytes);
  });
  p.ranks.forEach((r, rank) => r.nodes.forEach((n, i) => checkNode(p, sizes, rank, i, n)));
  p.ranks.forEach((r, rank) => checkAcyclic(r.nodes, rank));
  const m = matchMessages(p);
  checkDeadlock(p, m);
  return m;
}

function checkNode(p: GraphProgram, sizes: Map<string, number>, rank: number, i: number, n: GraphNode): void {
  const where = nodeLabel(rank, i, n);
  const fail = (problem: string): never => {
    throw new GraphError(where, problem);
  };
  if (n.engine >= p.engines) fail(`engine ${n.engine} is out of range (the graphs use engines 0 to ${p.engines - 1})`);
  if (isRemote(n)) {
    if (n.peer >= p.devices) fail(`peer ${n.peer} is out of range (the communicator has devices 0 to ${p.devices - 1})`);
    if (n.peer === rank) fail(`peer ${n.peer} is this device itself`);
  }
  const inBuffer = (r: BufferRef, field: string, align = 1) => {
    const size = sizes.get(r.buffer);
    if (size === undefined) fail(`${field}: no buffer "${r.buffer}" (the buffers are ${[...sizes.keys()].map((k) => `"${k}"`).join(", ") || "none"})`);
    if (r.offset + bytesOf(n) > size!) fail(`${field}: bytes [${r.offset}, ${r.offset + bytesOf(n)}) run past buffer "${r.buffer}" (${size} bytes)`);
    if (r.offset % align !== 0) fail(`${field}: offset ${r.offset} is not a multiple of the element size ${align}`);
  };
  const positive = () => {
    if (bytesOf(n) === 0) fail("moves 0 bytes");
  };
  switch (n.op) {
    case "send": positive(); inBuffer(n.src, "src"); break;
    case "recv":
      if (n.dst) {
        positive();
        inBuffer(n.dst, "dst");
      } else if (n.bytes !== 0) fail(`a receive without dst takes only a write's notification: bytes must be 0, got ${n.bytes}`);
      break;
    case "write":
    case "read":
    case "copy": positive(); inBuffer(n.src, "src"); inBuffer(n.dst, "dst"); break;
    case "reduce": {
      positive();
      const e = DTYPE_BYTES[n.dtype];
      if (n.srcs.length < 2 || n.srcs.length > GRAPH_MAX_SOURCES) fail(`has ${n.srcs.length} sources (the reduction block takes 2 to ${GRAPH_MAX_SOURCES})`);
      if (n.bytes % e !== 0) fail(`bytes ${n.bytes} is not a multiple of the ${n.dtype} element size ${e}`);
      n.srcs.forEach((s, k) => inBuffer(s, `srcs[${k}]`, e));
      inBuffer(n.dst, "dst", e);
      break;
    }
    case "wait":
    case "signal":
      if (n.sem >= p.semaphores) fail(`semaphore ${n.sem} is out of range (the program declares ${p.semaphores})`);
      break;
  }
  const seen = new Set<number>();
  for (const d of n.deps) {
    if (d >= p.ranks[rank].nodes.length) fail(`depends on node ${d}, which does not exist (the graph has ${p.ranks[rank].nodes.length} nodes)`);
    if (d === i) fail("depends on itself");
    if (seen.has(d)) fail(`lists node ${d} twice in deps`);
    seen.add(d);
  }
}

const bytesOf = (n: GraphNode): number => ("bytes" in n ? n.bytes : 0);

/** Kahn's algorithm over one device's dependencies; a cycle is reported with its nodes. */
function checkAcyclic(nodes: GraphNode[], rank: number): void {
  const succ: number[][] = nodes.map(() => []);
  const indeg = new Int32Array(nodes.length);
  nodes.forEach((n, i) => n.deps.forEach((d) => {
    succ[d].push(i);
    indeg[i]++;
  }));
  const ready: number[] = [];
  indeg.forEach((d, i) => d === 0 && ready.push(i));
  let done = 0;
  while (ready.length) {
    const i = ready.pop()!;
    done++;
    for (const s of succ[i]) if (--indeg[s] === 0) ready.push(s);
  }
  if (done === nodes.length) return;
  const cycle = findCycle(nodes.length, (i) => nodes[i].deps, (i) => indeg[i] > 0);
  const first = cycle[0];
  throw new GraphError(nodeLabel(rank, first, nodes[first]), `its dependencies form a cycle: ${cycle.map((i) => `nodes[${i}]`).join(" -> ")} -> nodes[${first}]`);
}

/** A cycle among vertices 0..n-1 with edges v -> next(v), starting from vertices where `candidate` holds (one must lie on a cycle). */
function findCycle(n: number, next: (v: number) => readonly number[], candidate: (v: number) => boolean): number[] {
  const color = new Uint8Array(n); // 0 unseen, 1 on the stack, 2 finished
  const parent = new Int32Array(n).fill(-1);
  for (let s = 0; s < n; s++) {
    if (color[s] !== 0 || !candidate(s)) continue;
    const stack: [number, number][] = [[s, 0]];
    color[s] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1];
      const out = next(top[0]);
      if (top[1] === out.length) {
        color[top[0]] = 2;
        stack.pop();
        continue;
      }
      const w = out[top[1]++];
      if (color[w] === 1) {
        // the cycle is w .. top, along the stack
        const cyc: number[] = [];
        for (let k = stack.length - 1; k >= 0; k--) {
          cyc.push(stack[k][0]);
          if (stack[k][0] === w) break;
        }
        return cyc.reverse();
      }
      if (color[w] === 0) {
        color[w] = 1;
        parent[w] = top[0];
        stack.push([w, 0]);
      }
    }
  }
  return [];
}

/** A message (a send, or a write with notify) and the receive it completes, by rank and node index. */
export interface MatchedMessage {
  from: number;
  message: number;
  to: number;
  recv: number;
}

export interface Matching {
  messages: MatchedMessage[];
}

/**
 * Pairs every message with its receive. Between two devices, messages are matched per engine
 * and stream, in node order (each engine's queue pair for a peer and stream carries them in
 * the order its nodes are posted): the k-th send or notifying write of rank a's engine e to b
 * on stream s completes the k-th receive of rank b's engine e from a on stream s.
 */
function matchMessages(p: GraphProgram): Matching {
  const key = (from: number, to: number, engine: number, stream: number) => `${from}>${to}/e${engine}/s${stream}`;
  const sent = new Map<string, number[]>(), taken = new Map<string, number[]>();
  p.ranks.forEach((r, rank) => r.nodes.forEach((n, i) => {
    if (n.op === "send" || (n.op === "write" && n.notify)) push(sent, key(rank, n.peer, n.engine, n.stream), i);
    else if (n.op === "recv") push(taken, key(n.peer, rank, n.engine, n.stream), i);
  }));
  const messages: MatchedMessage[] = [];
  const channel = (k: string) => {
    const [pair, e, s] = k.split("/");
    const [from, to] = pair.split(">");
    return `from device ${from} to device ${to}, engine ${e.slice(1)}, stream ${s.slice(1)}`;
  };
  for (const [k, ms] of sent) {
    const rs = taken.get(k) ?? [];
    const [from, to] = k.split("/")[0].split(">").map(Number);
    if (rs.length < ms.length) {
      const extra = ms[rs.length];
      throw new GraphError(nodeLabel(from, extra, p.ranks[from].nodes[extra]), `no receive matches it: ${ms.length} messages ${channel(k)} and ${rs.length} receives`);
    }
    ms.forEach((m, j) => {
      const mn = p.ranks[from].nodes[m] as SendNode | WriteNode, rn = p.ranks[to].nodes[rs[j]] as RecvNode;
      const where = nodeLabel(to, rs[j], rn);
      if (mn.op === "send" && !rn.dst) throw new GraphError(where, `takes the send ${nodeLabel(from, m, mn)} but has no dst`);
      if (mn.op === "send" && rn.bytes < mn.bytes) throw new GraphError(where, `takes ${rn.bytes} bytes at most, but its message ${nodeLabel(from, m, mn)} sends ${mn.bytes}`);
      if (mn.op === "write" && rn.dst) throw new GraphError(where, `takes the notification of the write ${nodeLabel(from, m, mn)}: it must have no dst (the write places its bytes)`);
      messages.push({ from, message: m, to, recv: rs[j] });
    });
  }
  for (const [k, rs] of taken) {
    const ms = sent.get(k) ?? [];
    if (rs.length > ms.length) {
      const to = Number(k.split("/")[0].split(">")[1]), extra = rs[ms.length];
      throw new GraphError(nodeLabel(to, extra, p.ranks[to].nodes[extra]), `no message matches it: ${ms.length} messages ${channel(k)} and ${rs.length} receives`);
    }
  }
  return { messages };
}

function push(m: Map<string, number[]>, k: string, v: number): void {
  const a = m.get(k);
  if (a) a.push(v);
  else m.set(k, [v]);
}

/**
 * The events of a program's nodes and what orders them. Each node has two events, posted
 * (P = 2v: its dependencies are done and the node before it on its engine was posted) and done
 * (C = 2v + 1), where v numbers the nodes of all ranks in order (rank 0's first). Edges:
 * C(dep) -> P(n); P(n) -> C(n); on one engine, P(prev) -> P(next) (the executor posts an
 * engine's nodes in order: one whose dependencies are not done holds back the ones after it);
 * on a send queue (which runs its requests one at a time), C(prev) -> C(next); for a message m
 * and its receive r, P(r) -> C(m) (a send is done only once the receive is posted) and
 * P(m) -> C(r).
 */
export interface EventGraph {
  /** rank r's node i is node base[r] + i */
  base: number[];
  /** out[e]: the events that come after event e */
  out: number[][];
}

export function eventGraph(p: GraphProgram, m: Matching): EventGraph {
  const base: number[] = [];
  let n = 0;
  for (const r of p.ranks) {
    base.push(n);
    n += r.nodes.length;
  }
  const P = (rank: number, i: number) => 2 * (base[rank] + i), C = (rank: number, i: number) => 2 * (base[rank] + i) + 1;
  const out: number[][] = Array.from({ length: 2 * n }, () => []);
  p.ranks.forEach((r, rank) => {
    const lastOnQueue = new Map<string, number>(), lastOnEngine = new Map<number, number>();
    r.nodes.forEach((node, i) => {
      for (const d of node.deps) out[C(rank, d)].push(P(rank, i));
      out[P(rank, i)].push(C(rank, i));
      const before = lastOnEngine.get(node.engine);
      if (before !== undefined) out[P(rank, before)].push(P(rank, i));
      lastOnEngine.set(node.engine, i);
      if (!isRemote(node) || node.op === "recv") return;
      const q = `${node.engine}/${node.peer}/${node.stream}`;
      const prev = lastOnQueue.get(q);
      if (prev !== undefined) out[C(rank, prev)].push(C(rank, i));
      lastOnQueue.set(q, i);
    });
  });
  for (const x of m.messages) {
    out[P(x.to, x.recv)].push(C(x.from, x.message));
    out[P(x.from, x.message)].push(C(x.to, x.recv));
  }
  return { base, out };
}

/** Rank and node index of event e. */
export function eventNode(g: EventGraph, e: number): { rank: number; i: number } {
  const v = e >> 1;
  let rank = g.base.length - 1;
  while (g.base[rank] > v) rank--;
  return { rank, i: v - g.base[rank] };
}

/** Deadlock across devices: a cycle among the events means no order of them can run the graphs to the end. */
function checkDeadlock(p: GraphProgram, m: Matching): void {
  const g = eventGraph(p, m);
  const cycle = findCycle(g.out.length, (v) => g.out[v], () => true);
  if (cycle.length === 0) return;
  const names: string[] = [];
  for (const v of cycle) {
    const { rank, i } = eventNode(g, v);
    const label = `${v & 1 ? "done" : "posted"} ${nodeLabel(rank, i, p.ranks[rank].nodes[i])}`;
    if (names[names.length - 1] !== label) names.push(label);
  }
  const first = eventNode(g, cycle[0]);
  throw new GraphError(nodeLabel(first.rank, first.i, p.ranks[first.rank].nodes[first.i]),
    `deadlock: the graphs wait on each other in a cycle: ${names.slice(0, 12).join(" -> ")}${names.length > 12 ? ` -> ... (${names.length} events)` : ""}`);
}
