// Running a program's graphs on devices whose engines run the graph executor
// (firmware/graph/executor.c; docs/graph.md, "Running a graph"). bindProgram does the host's
// part once, before the run: on every device it places the buffers (at the same HBM address on
// every device), registers them, makes each engine's CQ and queue pairs (one per peer and
// stream it talks on, and one to itself for reduce and copy), connects every queue pair to its
// partner on the peer (same engine, same stream), and writes the graph and its run block
// (layouts/graph.json GRAPH_RUN) into HBM. Then start() rings engine 0's mailbox of each device
// with the run block's address — one doorbell — and poll() reads the one word each device sends
// back when its final signal is done, or an error naming the failed node.

import { MAX_QUEUE_DEPTH, MAX_CQ_DEPTH, PORT_GROUP, GRAPH_RUN, GRAPH_ENGINE, GRAPH_QP, GRAPH_BIND, GRAPH_RUN_MARK, GRAPH_NO_QP, GRAPH_MSG_SIGNAL, GRAPH_MSG_ERROR, GRAPH_MSG_KIND_MASK, STATUS } from "../generated/layouts.js";
import type { Context, Qp } from "../verbs.js";
import { encodeGraph } from "./binary.js";
import { validateProgram } from "./validate.js";
import { GraphError, nodeLabel, isRemote, type GraphProgram } from "./types.js";

export interface BindOptions {
  /** ports the queue pairs use (default the scale-up group) */
  portGroup?: keyof typeof PORT_GROUP;
  /** entries of each send ring (default 64) */
  sqDepth?: number;
}

/** What one device's run looks like once bound. */
interface DeviceRun {
  run: number;
  buffers: Map<string, number>;
  /** node count, for reading done flags */
  nodes: number;
  done: number;
}

export type RunState = { state: "running" } | { state: "done"; devices: number } | { state: "failed"; device: number; node: number; engine: number; status: string; where: string };

const STATUS_NAME = Object.fromEntries(Object.entries(STATUS).map(([k, v]) => [v, k])) as Record<number, string>;
const align = (n: number, a: number) => Math.ceil(n / a) * a;

/** The config fields a device needs to run `p` (merge them into its config). */
export function graphDeviceConfig(p: GraphProgram, o: BindOptions = {}): Record<string, number> {
  const qps = Math.max(...p.ranks.map((r) => queuePairsOf(p, r.nodes).reduce((a, e) => a + e.length, 0)));
  const buffers = p.buffers.reduce((a, b) => a + align(b.bytes, 64), 0);
  const sq = o.sqDepth ?? 64;
  // send and receive rings (128 bytes an entry; receive rings sized by their receives), CQs (32 bytes an entry)
  const recvs = Math.max(...p.ranks.map((r) => r.nodes.filter((n) => n.op === "recv").length));
  const rings = (qps * (sq + 1) + recvs) * (128 + 32);
  // the graph, its node bindings, done flags and engine lists, and the small tables
  const graph = Math.max(...p.ranks.map((r) => 64 + r.nodes.length * (128 + 8 + 4 + 4) + r.nodes.reduce((a, n) => a + 4 * n.deps.length, 0))) + 64 * 1024;
  return { engines: Math.max(p.engines, 1), maxQps: qps + 8, maxCqs: p.engines + 4, maxMrs: 8, maxPds: 4, hbmBytes: align(buffers + rings + graph + (1 << 20), 1 << 20) };
}

/** Per engine, its queue pairs: [peer, stream] pairs in first-use order (the local one first, as [-1, 0]). */
function queuePairsOf(p: GraphProgram, nodes: GraphProgram["ranks"][number]["nodes"]): [number, number][][] {
  const out = Array.from({ length: p.engines }, () => [[-1, 0]] as [number, number][]);
  for (const n of nodes) {
    if (!isRemote(n)) continue;
    const list = out[n.engine];
    if (!list.some(([pe, s]) => pe === n.peer && s === n.stream)) list.push([n.peer, n.stream]);
  }
  return out;
}

export class GraphRun {
  private finishedDevices = new Set<number>();
  private failure: RunState | null = null;

  constructor(readonly contexts: readonly Context[], readonly program: GraphProgram, private readonly runs: DeviceRun[]) {}

  /** The HBM address of `buffer` (the same on every device). */
  address(buffer: string): number {
    const a = this.runs[0].buffers.get(buffer);
    if (a === undefined) throw new GraphError("buffer", `no buffer "${buffer}"`);
    return a;
  }

  write(device: number, buffer: string, bytes: Uint8Array): void {
    const b = this.program.buffers.find((x) => x.name === buffer);
    if (!b || bytes.length !== b.bytes) throw new GraphError(`buffer "${buffer}"`, `takes ${b?.bytes ?? 0} bytes, ${bytes.length} given`);
    this.contexts[device].write(this.address(buffer), bytes);
  }

  read(device: number, buffer: string): Uint8Array {
    const b = this.program.buffers.find((x) => x.name === buffer);
    if (!b) throw new GraphError("buffer", `no buffer "${buffer}"`);
    return this.contexts[device].read(this.address(buffer), b.bytes);
  }

  /** Rings engine 0's mailbox of every device with its run block: the engines take it from there. */
  start(): void {
    this.runs.forEach((r, d) => {
      if (!this.contexts[d].device.mailboxPush(0, r.run)) throw new GraphError(`device ${d}`, "engine 0's mailbox is full");
    });
  }

  /** Reads what the engines told the host: done when every device's final signal is done; failed at the first error. */
  poll(): RunState {
    if (this.failure) return this.failure;
    this.contexts.forEach((ctx, d) => {
      for (let e = 0; e < this.program.engines; e++) {
        for (let w = ctx.device.mailboxPop(e); w !== null; w = ctx.device.mailboxPop(e)) {
          const kind = (w & GRAPH_MSG_KIND_MASK) >>> 0;
          if (kind === GRAPH_MSG_SIGNAL && (w & ~GRAPH_MSG_KIND_MASK) >= 1) this.finishedDevices.add(d);
          else if (kind === GRAPH_MSG_ERROR && !this.failure) {
            const v = new DataView(ctx.read(this.runs[d].run, GRAPH_RUN.SIZE).buffer);
            const node = v.getUint32(GRAPH_RUN.error_node, true), status = STATUS_NAME[v.getUint32(GRAPH_RUN.error_status, true)] ?? "?";
            const engine = v.getUint32(GRAPH_RUN.error_engine, true);
            const n = this.program.ranks[d].nodes[node];
            this.failure = { state: "failed", device: d, node, engine, status, where: n ? nodeLabel(d, node, n) : `ranks[${d}].nodes[${node}]` };
          }
        }
      }
    });
    if (this.failure) return this.failure;
    return this.finishedDevices.size === this.contexts.length ? { state: "done", devices: this.contexts.length } : { state: "running" };
  }

  /** Engine cycles (mtime) when device `d`'s last signal raised semaphore 0 (0 before). */
  endCycles(d: number): number {
    const v = new DataView(this.contexts[d].read(this.runs[d].run, GRAPH_RUN.SIZE).buffer);
    return v.getUint32(GRAPH_RUN.end_lo, true) + v.getUint32(GRAPH_RUN.end_hi, true) * 2 ** 32;
  }

  /** The nodes of device `d` not done yet (for a run that did not end: what it waits for). */
  pending(d: number): number[] {
    const r = this.runs[d];
    const v = new DataView(this.contexts[d].read(r.done, 4 * r.nodes).buffer);
    const out: number[] = [];
    for (let i = 0; i < r.nodes; i++) if (v.getUint32(4 * i, true) === 0) out.push(i);
    return out;
  }
}

/**
 * Binds `p` to `contexts` (device d runs rank d), whose engines run the graph executor. The
 * devices need the config graphDeviceConfig gives, and a fabric (or cables) between them.
 */
export function bindProgram(contexts: readonly Context[], p: GraphProgram, o: BindOptions = {}): GraphRun {
  validateProgram(p);
  if (contexts.length !== p.devices) throw new GraphError("devices", `the program is for ${p.devices} devices, ${contexts.length} given`);
  if (p.engines > 32) throw new GraphError("engines", `the executor wakes engines by a 32-bit mask: at most 32, got ${p.engines}`);
  contexts.forEach((ctx, d) => {
    if (ctx.device.engines < p.engines) throw new GraphError(`device ${d}`, `has ${ctx.device.engines} engines, the program uses ${p.engines}`);
  });
  const sqDepth = o.sqDepth ?? 64;
  // the buffers first, in one block, on every device alike: they land at the same address
  const offsets: number[] = [];
  let total = 0;
  for (const b of p.buffers) {
    offsets.push(total);
    total += align(b.bytes, 64);
  }
  const bases = contexts.map((ctx) => ctx.allocHbm(total, 4096));
  if (bases.some((b) => b !== bases[0])) throw new GraphError("buffers", `do not lie at the same HBM address on every device (${bases.map((b) => `0x${b.toString(16)}`).join(", ")}): bind the program on devices with the same allocations`);
  const per = contexts.map((ctx, d) => {
    const pd = ctx.allocPd();
    const mr = ctx.regMr(pd, bases[d], total, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
    const nodes = p.ranks[d].nodes;
    const qpsOf = queuePairsOf(p, nodes);
    const recvs = new Map<string, number>();
    for (const n of nodes) if (n.op === "recv") recvs.set(`${n.engine}/${n.peer}/${n.stream}`, (recvs.get(`${n.engine}/${n.peer}/${n.stream}`) ?? 0) + 1);
    const engines = qpsOf.map((list, e) => {
      const rqDepths = list.map(([peer, s]) => Math.min(MAX_QUEUE_DEPTH, Math.max(1, recvs.get(`${e}/${peer}/${s}`) ?? 0)));
      const cqDepth = Math.min(MAX_CQ_DEPTH, list.length * sqDepth + rqDepths.reduce((a, x) => a + x, 0));
      const cq = ctx.createCq(cqDepth, { engine: e });
      const qps = list.map(([peer, stream], k) => ({ peer, stream, qp: ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: sqDepth, maxRecvWr: rqDepths[k], engine: e }) }));
      // the local queue pair talks to itself (reduce and copy never leave the device)
      const local = qps[0].qp;
      ctx.modifyQp(local, { state: "INIT" });
      ctx.modifyQp(local, { state: "RTR", destQpNum: local.qpn });
      ctx.modifyQp(local, { state: "RTS" });
      return { cq, qps };
    });
    return { pd, mr, engines };
  });
  // connect each queue pair to its partner: same engine and stream, on the peer, towards us
  per.forEach((dev, d) => dev.engines.forEach((eng, e) => {
    for (const { peer, stream, qp } of eng.qps) {
      if (peer < 0) continue;
      const partner = per[peer].engines[e].qps.find((x) => x.peer === d && x.stream === stream);
      if (!partner) throw new GraphError(`device ${d}, engine ${e}`, `talks to device ${peer} on stream ${stream}, which has no queue pair back (no node of its engine ${e} talks to device ${d} on that stream)`);
      const ctx = contexts[d];
      ctx.modifyQp(qp, { state: "INIT" });
      ctx.modifyQp(qp, { state: "RTR", destQpNum: partner.qp.qpn, destDevice: peer, portGroup: o.portGroup ?? "SCALE_UP" });
      ctx.modifyQp(qp, { state: "RTS" });
    }
  }));
  const rkeys = per.map((x) => x.mr.rkey);
  const runs = contexts.map((ctx, d) => writeRun(ctx, p, d, per[d], bases[d], offsets, rkeys));
  return new GraphRun(contexts, p, runs);
}

/** Writes device d's graph, tables and run block into its HBM; returns the run. */
function writeRun(ctx: Context, p: GraphProgram, d: number, dev: { mr: { lkey: number }; engines: { cq: { cqn: number; ring: number; depth: number }; qps: { peer: number; stream: number; qp: Qp }[] }[] }, base: number, offsets: number[], rkeys: number[]): DeviceRun {
  const nodes = p.ranks[d].nodes;
  const graph = encodeGraph(p, d);
  const put = (bytes: Uint8Array) => {
    const a = ctx.allocHbm(Math.max(bytes.length, 4), 64);
    ctx.write(a, bytes);
    return a;
  };
  const table = (n: number, size: number, fill: (v: DataView, at: number, i: number) => void) => {
    const b = new Uint8Array(Math.max(n * size, 4));
    const v = new DataView(b.buffer);
    for (let i = 0; i < n; i++) fill(v, i * size, i);
    return put(b);
  };
  // the QP table: each engine's queue pairs together, the local one first
  const qpIndex = new Map<string, number>();
  const flat: { e: number; peer: number; stream: number; qp: Qp }[] = [];
  dev.engines.forEach((eng, e) => eng.qps.forEach((x) => {
    qpIndex.set(`${e}/${x.peer}/${x.stream}`, flat.length);
    flat.push({ e, ...x });
  }));
  const qps = table(flat.length, GRAPH_QP.SIZE, (v, at, i) => {
    const { peer, stream, qp } = flat[i];
    v.setUint32(at + GRAPH_QP.qpn, qp.qpn, true);
    v.setUint16(at + GRAPH_QP.peer, peer < 0 ? d : peer, true);
    v.setUint16(at + GRAPH_QP.stream, stream, true);
    v.setUint32(at + GRAPH_QP.sq_ring, qp.sqRing, true);
    v.setUint32(at + GRAPH_QP.sq_depth, qp.sqDepth, true);
    v.setUint32(at + GRAPH_QP.rq_ring, qp.rqRing, true);
    v.setUint32(at + GRAPH_QP.rq_depth, qp.rqDepth, true);
  });
  // who waits on whom: the engines of a node's dependents, and of the waits on a signal's semaphore
  const notify = new Uint32Array(nodes.length);
  const waiters = new Map<number, number>();
  for (const n of nodes) if (n.op === "wait") waiters.set(n.sem, (waiters.get(n.sem) ?? 0) | (1 << n.engine));
  nodes.forEach((n) => n.deps.forEach((dep) => (notify[dep] |= 1 << n.engine)));
  nodes.forEach((n, i) => {
    if (n.op === "signal") notify[i] |= waiters.get(n.sem) ?? 0;
  });
  const bind = table(nodes.length, GRAPH_BIND.SIZE, (v, at, i) => {
    const n = nodes[i];
    const q = isRemote(n) ? qpIndex.get(`${n.engine}/${n.peer}/${n.stream}`)! : n.op === "reduce" || n.op === "copy" ? qpIndex.get(`${n.engine}/-1/0`)! : GRAPH_NO_QP;
    v.setUint32(at + GRAPH_BIND.qp, q >>> 0, true);
    v.setUint32(at + GRAPH_BIND.notify, notify[i] >>> 0, true);
  });
  const lists = Array.from({ length: p.engines }, (_, e) => nodes.map((n, i) => (n.engine === e ? i : -1)).filter((i) => i >= 0));
  const listAddr = lists.map((l) => table(l.length, 4, (v, at, i) => v.setUint32(at, l[i], true)));
  const engines = table(p.engines, GRAPH_ENGINE.SIZE, (v, at, e) => {
    const eng = dev.engines[e];
    v.setUint32(at + GRAPH_ENGINE.cqn, eng.cq.cqn, true);
    v.setUint32(at + GRAPH_ENGINE.cq_ring, eng.cq.ring, true);
    v.setUint32(at + GRAPH_ENGINE.cq_depth, eng.cq.depth, true);
    v.setUint32(at + GRAPH_ENGINE.local_qp, qpIndex.get(`${e}/-1/0`)!, true);
    v.setUint32(at + GRAPH_ENGINE.list, listAddr[e], true);
    v.setUint32(at + GRAPH_ENGINE.nodes, lists[e].length, true);
    v.setUint32(at + GRAPH_ENGINE.first_qp, qpIndex.get(`${e}/-1/0`)!, true);
    v.setUint32(at + GRAPH_ENGINE.qps, eng.qps.length, true);
  });
  const done = table(nodes.length, 4, () => {});
  const sems = table(Math.max(1, p.semaphores), 4, () => {});
  const bufs = table(p.buffers.length, 4, (v, at, i) => v.setUint32(at, base + offsets[i], true));
  const keys = table(rkeys.length, 4, (v, at, i) => v.setUint32(at, rkeys[i], true));
  const graphAddr = put(graph);
  const run = table(1, GRAPH_RUN.SIZE, (v, at) => {
    v.setUint32(at + GRAPH_RUN.magic, GRAPH_RUN_MARK, true);
    v.setUint32(at + GRAPH_RUN.graph, graphAddr, true);
    v.setUint32(at + GRAPH_RUN.engines, engines, true);
    v.setUint32(at + GRAPH_RUN.qps, qps, true);
    v.setUint32(at + GRAPH_RUN.bind, bind, true);
    v.setUint32(at + GRAPH_RUN.done, done, true);
    v.setUint32(at + GRAPH_RUN.sems, sems, true);
    v.setUint32(at + GRAPH_RUN.bufs, bufs, true);
    v.setUint32(at + GRAPH_RUN.rkeys, keys, true);
    v.setUint32(at + GRAPH_RUN.lkey, dev.mr.lkey, true);
    v.setUint32(at + GRAPH_RUN.error_node, 0xffffffff, true);
  });
  return { run, buffers: new Map(p.buffers.map((b, i) => [b.name, base + offsets[i]])), nodes: nodes.length, done };
}
