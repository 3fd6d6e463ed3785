// Running a program's graphs on devices whose engines run the graph executor
// (firmware/graph/executor.c; docs/graph.md, "Running a graph"). bindProgram does the host's
// part once, before the run: on every device it places the buffers (at the same HBM address on
// every device), registers them, makes each engine's CQ and queue pairs (one per peer and
// stream it talks on, and one to itself for reduce and copy), connects every queue pair to its
// partner on the peer (same engine, same stream), writes each engine's part of the graph into
// the executor's stage in that engine's SRAM (its tasks, their work requests, dependencies,
// queue pairs, its CQ's ring) and the receive work requests into the receive rings, and writes
// the graph and a run block (layouts/graph.json GRAPH_RUN) into HBM. Then start() rings engine
// 0's mailbox of each device with the run block's address — one doorbell — and poll() reads the
// one word each device sends back when its final signal is done, or an error naming the node.

import {
  MAX_QUEUE_DEPTH, PORT_GROUP, DMA, REGIONS, CQE, WQE, GRAPH_RUN, GRAPH_RUN_MARK, GRAPH_MSG_SIGNAL, GRAPH_MSG_ERROR, GRAPH_MSG_KIND_MASK, STATUS,
  GRAPH_STAGE, GRAPH_STAGE_MARK, GRAPH_TASK, GRAPH_TASK_KIND, GRAPH_STAGE_QP, GRAPH_DEP_REMOTE, REDUCE_OP, DTYPE,
} from "../generated/layouts.js";
import { encodeWqe, type Context, type Qp, type SendWr } from "../verbs.js";
import { readSections, readSymbols } from "../elf.js";
import { executorElf } from "../generated/executor-elf.js";
import { encodeGraph } from "./binary.js";
import { validateProgram } from "./validate.js";
import { GraphError, nodeLabel, isRemote, type GraphProgram, type GraphNode, type BufferRef } from "./types.js";

/** How {@link Cluster.bind} binds a program. */
export interface BindOptions {
  /** ports the queue pairs use (default the scale-up group) */
  portGroup?: keyof typeof PORT_GROUP;
  /**
   * RoCEv2: give the queue pairs between two devices consecutive port lanes, so that they cover
   * the group's ports (default true); false: each on port (QP number + destination QP number) mod
   * the group's size.
   */
  spreadPorts?: boolean;
  /** the executor the engines run (its `stage` symbol says where their parts go); default the one the host carries */
  executor?: Uint8Array;
}

/** What one device's run looks like once bound. */
interface DeviceRun {
  run: number;
  buffers: Map<string, number>;
  /** node count, for reading done flags */
  nodes: number;
  done: number;
  /** per engine: where its tasks' times are (a DMA address in its SRAM) and its nodes, in task order */
  stages: { at: number; nodes: number[] }[];
}

/** A node as it ran: on which engine, when it was posted and when it was done (engine cycles; 0: not yet). */
export interface NodeSpan {
  /** the node's index in its device's graph */
  node: number;
  /** the engine that ran it */
  engine: number;
  /** engine cycle it was posted at */
  postedCycles: number;
  /** engine cycle it was done at */
  doneCycles: number;
}

/** A queue pair a program bound to another device ({@link GraphRun.queuePairs}): its engine, peer and stream. */
export interface RemoteQp {
  /** The engine whose nodes use it. */
  engine: number;
  /** The device at its other end. */
  peer: number;
  /** The stream (of that engine and peer) it carries. */
  stream: number;
  /** The queue pair. */
  qp: Qp;
}

/** Where a bound program's run is ({@link GraphRun.poll}): running, done on every device, or failed at a node. */
export type RunState =
  | {
    /** Still running. */
    state: "running";
  }
  | {
    /** Every device's final signal is done. */
    state: "done";
    /** How many devices. */
    devices: number;
  }
  | {
    /** A node failed. */
    state: "failed";
    /** The device it failed on. */
    device: number;
    /** The node, by its index in that device's graph. */
    node: number;
    /** The engine that ran it. */
    engine: number;
    /** Its completion status (WcStatus). */
    status: string;
    /** The node in words (`ranks[d].nodes[i] (send to 2)`). */
    where: string;
  };

const STATUS_NAME = Object.fromEntries(Object.entries(STATUS).map(([k, v]) => [v, k])) as Record<number, string>;
const align = (n: number, a: number) => Math.ceil(n / a) * a;

/** The config fields a device needs to run `p` (merge them into its config). */
export function graphDeviceConfig(p: GraphProgram): Record<string, number> {
  const qps = Math.max(...p.ranks.map((r) => queuePairsOf(p, r.nodes).reduce((a, e) => a + e.length, 0)));
  const buffers = p.buffers.reduce((a, b) => a + align(b.bytes, 64), 0);
  // send and receive rings (a 128-byte entry per node that uses one), the graph and its tables
  const nodes = Math.max(...p.ranks.map((r) => r.nodes.length));
  const deps = Math.max(...p.ranks.map((r) => r.nodes.reduce((a, n) => a + n.deps.length, 0)));
  const graph = 64 + nodes * (128 + 4 + 128 + 4) + 4 * deps + (qps + p.engines) * 256 + 64 * 1024;
  return { engines: Math.max(p.engines, 1), maxQps: qps + 8, maxCqs: p.engines + 4, maxMrs: 8, maxPds: 4, hbmBytes: align(buffers + graph + (1 << 20), 1 << 20) };
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

/**
 * A program bound to devices ({@link Cluster.bind}): write its inputs, start
 * it with one doorbell per device, poll it as the devices run, read its results.
 */
export class GraphRun {
  private finishedDevices = new Set<number>();
  private failure: RunState | null = null;

  /** @internal bindProgram makes it */
  constructor(
    /** The devices, device d running rank d. */
    readonly contexts: readonly Context[],
    /** The program. */
    readonly program: GraphProgram,
    private readonly runs: DeviceRun[],
    private readonly remote: readonly RemoteQp[][],
  ) {}

  /** Device `d`'s queue pairs to other devices: one per engine, peer and stream its nodes talk on. */
  queuePairs(d: number): readonly RemoteQp[] {
    return this.remote[d]!;
  }

  /** The HBM address of `buffer` (the same on every device). */
  address(buffer: string): number {
    const a = this.runs[0].buffers.get(buffer);
    if (a === undefined) throw new GraphError("buffer", `no buffer "${buffer}"`);
    return a;
  }

  /** Writes `bytes` (the buffer's whole size) into `buffer` of `device` (before {@link start}: its input). */
  write(device: number, buffer: string, bytes: Uint8Array): void {
    const b = this.program.buffers.find((x) => x.name === buffer);
    if (!b || bytes.length !== b.bytes) throw new GraphError(`buffer "${buffer}"`, `takes ${b?.bytes ?? 0} bytes, ${bytes.length} given`);
    this.contexts[device].write(this.address(buffer), bytes);
  }

  /** The bytes of `buffer` of `device` now (once {@link poll} says done: its result). */
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

  /** Device `d`'s nodes as they ran (the executor writes the times into its stage), in node order. */
  spans(d: number): NodeSpan[] {
    const out: NodeSpan[] = [];
    this.runs[d].stages.forEach((st, e) => {
      const v = new DataView(this.contexts[d].read(st.at, 16 * st.nodes.length || 4).buffer);
      const u64 = (at: number) => v.getUint32(at, true) + v.getUint32(at + 4, true) * 2 ** 32;
      st.nodes.forEach((node, k) => out.push({ node, engine: e, postedCycles: u64(16 * k), doneCycles: u64(16 * k + 8) }));
    });
    return out.sort((a, b) => a.node - b.node);
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

/** Where the executor's stage is in an engine's SRAM, from its symbol table. */
function stageOf(elf: Uint8Array): { addr: number; bytes: number } {
  const sym = readSymbols(readSections(elf)).find((x) => x.name === "stage");
  if (!sym || sym.size === 0) throw new GraphError("executor", "has no `stage` symbol: not the graph executor (firmware/graph/executor.c)");
  return { addr: sym.value, bytes: sym.size };
}

const SQ_OPS = new Set(["send", "write", "read", "reduce", "copy"]);

/**
 * Whether every engine of `contexts` has booted the executor and sleeps waiting for a doorbell
 * (its start-up zeroes the stage: bind only after it). Run the devices until it is true.
 */
export function executorsReady(contexts: readonly Context[]): boolean {
  return contexts.every((ctx) => Array.from({ length: ctx.device.engines }, (_, e) => ctx.device.engine(e).state).every((s) => s === "sleeping"));
}

/**
 * Binds `p` to `contexts` (device d runs rank d), whose engines run the graph executor and have
 * booted it (executorsReady). The devices need the config graphDeviceConfig gives, and a fabric
 * (or cables) between them.
 */
export function bindProgram(contexts: readonly Context[], p: GraphProgram, o: BindOptions = {}): GraphRun {
  validateProgram(p);
  if (contexts.length !== p.devices) throw new GraphError("devices", `the program is for ${p.devices} devices, ${contexts.length} given`);
  if (p.engines > 32) throw new GraphError("engines", `the executor wakes engines by a 32-bit mask: at most 32, got ${p.engines}`);
  contexts.forEach((ctx, d) => {
    if (ctx.device.engines < p.engines) throw new GraphError(`device ${d}`, `has ${ctx.device.engines} engines, the program uses ${p.engines}`);
  });
  contexts.forEach((ctx, d) => {
    for (let e = 0; e < ctx.device.engines; e++) {
      const st = ctx.device.engine(e).state;
      if (st !== "sleeping") throw new GraphError(`device ${d}, engine ${e}`, `is ${st}, not asleep waiting for a doorbell: run the devices until the executor has booted (executorsReady) before binding`);
    }
  });
  const stage = stageOf(o.executor ?? executorElf());
  // the buffers first, in one block, on every device alike: they land at the same address
  const offsets: number[] = [];
  let total = 0;
  for (const b of p.buffers) {
    offsets.push(total);
    total += align(b.bytes, 64);
  }
  const bases = contexts.map((ctx) => ctx.allocHbm(total, 4096));
  if (bases.some((b) => b !== bases[0])) throw new GraphError("buffers", `do not lie at the same HBM address on every device (${bases.map((b) => `0x${b.toString(16)}`).join(", ")}): bind the program on devices with the same allocations`);
  const addr = (r: BufferRef) => bases[0] + offsets[p.buffers.findIndex((b) => b.name === r.buffer)] + r.offset;
  const per = contexts.map((ctx, d) => {
    const pd = ctx.allocPd();
    const mr = ctx.regMr(pd, bases[d], total, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
    const nodes = p.ranks[d].nodes;
    const engines = queuePairsOf(p, nodes).map((list, e) => {
      const mine = nodes.map((n, i) => ({ n, i })).filter((x) => x.n.engine === e);
      const on = (k: number) => mine.filter(({ n }) => (k === 0 ? n.op === "reduce" || n.op === "copy" : isRemote(n) && n.peer === list[k][0] && n.stream === list[k][1]));
      const depths = list.map((_, k) => {
        const q = on(k);
        const sq = q.filter(({ n }) => SQ_OPS.has(n.op)).length, rq = q.filter(({ n }) => n.op === "recv").length;
        if (sq > MAX_QUEUE_DEPTH || rq > MAX_QUEUE_DEPTH) throw new GraphError(`device ${d}, engine ${e}`, `posts ${Math.max(sq, rq)} work requests on one queue pair, more than a ring holds (${MAX_QUEUE_DEPTH})`);
        return { sq: Math.max(1, sq), rq: Math.max(1, rq) };
      });
      const completions = mine.filter(({ n }) => SQ_OPS.has(n.op) || n.op === "recv").length;
      const layout = stageLayout(mine.length, mine.reduce((a, x) => a + x.n.deps.length, 0), list.length, nodes.length, mine.filter(({ n }) => SQ_OPS.has(n.op)).length, Math.max(1, completions));
      if (layout.bytes > stage.bytes) throw new GraphError(`device ${d}, engine ${e}`, `its part of the graph needs ${layout.bytes} bytes of stage in its SRAM (${mine.length} nodes), the executor has ${stage.bytes}: spread the work over more engines or fewer, larger nodes`);
      const sramDma = DMA.DMA_SRAM + e * REGIONS.SRAM.window + stage.addr;
      const cq = ctx.createCq(layout.cqDepth, { engine: e, ring: sramDma + layout.cq });
      const qps = list.map(([peer, stream], k) => ({ peer, stream, qp: ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: depths[k].sq, maxRecvWr: depths[k].rq, engine: e }) }));
      // the local queue pair talks to itself (reduce and copy never leave the device)
      const local = qps[0].qp;
      ctx.modifyQp(local, { state: "INIT" });
      ctx.modifyQp(local, { state: "RTR", destQpNum: local.qpn });
      ctx.modifyQp(local, { state: "RTS" });
      return { cq, qps, mine, layout, sramDma };
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
      ctx.modifyQp(qp, { state: "RTR", destQpNum: partner.qp.qpn, destDevice: peer, portGroup: o.portGroup ?? "SCALE_UP", portLane: o.spreadPorts === false ? undefined : portLane(per, d, peer, e, stream) });
      ctx.modifyQp(qp, { state: "RTS" });
    }
  }));
  // engines with no part in this run: no stage (a stage left from an earlier run would run again)
  contexts.forEach((ctx, d) => {
    for (let e = p.engines; e < ctx.device.engines; e++) ctx.write(DMA.DMA_SRAM + e * REGIONS.SRAM.window + stage.addr, new Uint8Array(GRAPH_STAGE.SIZE));
  });
  const rkeys = per.map((x) => x.mr.rkey);
  const runs = contexts.map((ctx, d) => writeRun(ctx, p, d, per[d], addr, rkeys));
  const remote = per.map((dev) => dev.engines.flatMap((eng, engine) => eng.qps.filter((q) => q.peer >= 0).map(({ peer, stream, qp }) => ({ engine, peer, stream, qp }))));
  return new GraphRun(contexts, p, runs, remote);
}

/**
 * The port lane of device d's queue pair of engine e and stream `stream` to `peer` (over RoCEv2 a
 * queue pair sends on port lane mod the group's size: docs/graph.md, "Ports"). The n queue pairs
 * between two devices take n consecutive lanes in (engine, stream) order, so k x the group's
 * ports of them cover every port k times; both devices of the pair have the same queue pairs
 * towards each other, so both ends compute the same lane. The lanes of a pair start at
 * (d + peer) x n, so pairs with fewer queue pairs than ports do not all start on the same port.
 */
function portLane(per: { engines: { qps: { peer: number; stream: number }[] }[] }[], d: number, peer: number, e: number, stream: number): number {
  const pairs = per[d].engines.flatMap((eng, x) => eng.qps.filter((q) => q.peer === peer).map((q) => [x, q.stream] as const));
  pairs.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return (d + peer) * pairs.length + pairs.findIndex(([x, s]) => x === e && s === stream);
}

interface StageLayout { tasks: number; deps: number; qps: number; bitmap: number; wqes: number; cq: number; cqDepth: number; times: number; bytes: number }

/** Offsets of an engine's stage: header, tasks, dependency entries, queue pairs, done bitmap, work requests, CQ ring, the tasks' times. */
function stageLayout(tasks: number, deps: number, qps: number, nodes: number, wqes: number, cqDepth: number): StageLayout {
  const t = GRAPH_STAGE.SIZE, dp = t + tasks * GRAPH_TASK.SIZE, q = dp + 4 * deps, bm = q + qps * GRAPH_STAGE_QP.SIZE;
  const w = align(bm + 4 * Math.ceil(nodes / 32), 64), c = align(w + wqes * WQE.SIZE, 64), tm = align(c + cqDepth * CQE.SIZE, 8);
  return { tasks: t, deps: dp, qps: q, bitmap: bm, wqes: w, cq: c, cqDepth, times: tm, bytes: tm + 16 * tasks };
}

/** The work request of node n (task k of its engine), posted on queue pair qpn. */
function wqeOf(n: GraphNode, i: number, k: number, lkey: number, rkeys: number[], addr: (r: BufferRef) => number): SendWr {
  const wrId = BigInt(i) | (BigInt(k) << 32n);
  switch (n.op) {
    case "send": return { wrId, opcode: "SEND", signaled: true, localAddr: addr(n.src), length: n.bytes, lkey };
    case "write": return { wrId, opcode: n.notify ? "RDMA_WRITE_WITH_IMM" : "RDMA_WRITE", signaled: true, localAddr: addr(n.src), length: n.bytes, lkey, remoteAddr: addr(n.dst), rkey: rkeys[n.peer], imm: i };
    case "read": return { wrId, opcode: "RDMA_READ", signaled: true, localAddr: addr(n.dst), length: n.bytes, lkey, remoteAddr: addr(n.src), rkey: rkeys[n.peer] };
    case "copy": return { wrId, opcode: "COPY", signaled: true, localAddr: addr(n.dst), length: n.bytes, lkey, remoteAddr: addr(n.src), rkey: lkey };
    case "reduce": return {
      wrId, opcode: "REDUCE", signaled: true, localAddr: addr(n.dst), length: n.bytes, lkey,
      reduce: { op: n.redop.toUpperCase() as keyof typeof REDUCE_OP, dtype: n.dtype.toUpperCase() as keyof typeof DTYPE, sources: n.srcs.map((s) => ({ addr: addr(s), lkey })) },
    };
    default: throw new GraphError(`node ${i}`, `${n.op} has no work request`);
  }
}

/** Writes device d's stages (one per engine, into its SRAM), receive rings, graph and run block; returns the run. */
function writeRun(ctx: Context, p: GraphProgram, d: number, dev: { mr: { lkey: number }; engines: { cq: { cqn: number }; qps: { peer: number; stream: number; qp: Qp }[]; mine: { n: GraphNode; i: number }[]; layout: StageLayout; sramDma: number }[] }, addr: (r: BufferRef) => number, rkeys: number[]): DeviceRun {
  const nodes = p.ranks[d].nodes;
  const put = (bytes: Uint8Array) => {
    const a = ctx.allocHbm(Math.max(bytes.length, 4), 64);
    ctx.write(a, bytes);
    return a;
  };
  const graphAddr = put(encodeGraph(p, d));
  const done = put(new Uint8Array(4 * nodes.length));
  const sems = put(new Uint8Array(4 * Math.max(1, p.semaphores)));
  const runBytes = new Uint8Array(GRAPH_RUN.SIZE);
  const rv = new DataView(runBytes.buffer);
  rv.setUint32(GRAPH_RUN.magic, GRAPH_RUN_MARK, true);
  rv.setUint32(GRAPH_RUN.graph, graphAddr, true);
  rv.setUint32(GRAPH_RUN.done, done, true);
  rv.setUint32(GRAPH_RUN.sems, sems, true);
  rv.setUint32(GRAPH_RUN.error_node, 0xffffffff, true);
  const run = put(runBytes);
  // who waits on whom: the engines of a node's dependents, and of the waits on a signal's semaphore
  const notify = new Uint32Array(nodes.length);
  const waiters = new Map<number, number>();
  for (const n of nodes) if (n.op === "wait") waiters.set(n.sem, (waiters.get(n.sem) ?? 0) | (1 << n.engine));
  nodes.forEach((n) => n.deps.forEach((dep) => (notify[dep] |= 1 << n.engine)));
  nodes.forEach((n, i) => {
    if (n.op === "signal") notify[i] |= waiters.get(n.sem) ?? 0;
  });
  dev.engines.forEach((eng, e) => {
    const L = eng.layout;
    const b = new Uint8Array(L.bytes);
    const v = new DataView(b.buffer);
    const H = GRAPH_STAGE;
    v.setUint32(H.magic, GRAPH_STAGE_MARK, true);
    v.setUint32(H.run, run, true);
    v.setUint32(H.tasks, eng.mine.length, true);
    v.setUint32(H.task_off, L.tasks, true);
    v.setUint32(H.dep_off, L.deps, true);
    v.setUint32(H.qps, eng.qps.length, true);
    v.setUint32(H.qp_off, L.qps, true);
    v.setUint32(H.bitmap_off, L.bitmap, true);
    v.setUint32(H.cqn, eng.cq.cqn, true);
    v.setUint32(H.cq_off, L.cq, true);
    v.setUint32(H.cq_depth, L.cqDepth, true);
    v.setUint32(H.bytes, L.bytes, true);
    v.setUint32(H.times_off, L.times, true);
    eng.qps.forEach((q, k) => v.setUint32(L.qps + k * GRAPH_STAGE_QP.SIZE + GRAPH_STAGE_QP.qpn, q.qp.qpn, true));
    const qpIndex = (n: GraphNode) => (isRemote(n) ? eng.qps.findIndex((q) => q.peer === n.peer && q.stream === n.stream) : 0);
    const rqSlot = new Map<number, number>();
    let dep = 0, wqe = 0;
    eng.mine.forEach(({ n, i }, k) => {
      const T = L.tasks + k * GRAPH_TASK.SIZE;
      const kind = n.op === "recv" ? GRAPH_TASK_KIND.RECV : n.op === "signal" ? GRAPH_TASK_KIND.SIGNAL : n.op === "wait" ? GRAPH_TASK_KIND.WAIT : GRAPH_TASK_KIND.EXPRESS;
      v.setUint32(T + GRAPH_TASK.node, i, true);
      v.setUint8(T + GRAPH_TASK.kind, kind);
      v.setUint32(T + GRAPH_TASK.ndeps, n.deps.length, true);
      v.setUint32(T + GRAPH_TASK.deps, dep, true);
      v.setUint32(T + GRAPH_TASK.notify, notify[i] >>> 0, true);
      for (const x of n.deps) v.setUint32(L.deps + 4 * dep++, (nodes[x].engine === e ? x : (x | GRAPH_DEP_REMOTE)) >>> 0, true);
      if (n.op === "signal" || n.op === "wait") {
        v.setUint32(T + GRAPH_TASK.sem, n.sem, true);
        v.setUint32(T + GRAPH_TASK.value, n.value, true);
        return;
      }
      const q = eng.qps[qpIndex(n)];
      v.setUint16(T + GRAPH_TASK.qp, qpIndex(n), true);
      if (n.op === "recv") {
        // the receive's WQE goes into its ring now, in the order the engine will announce it
        const slot = rqSlot.get(q.qp.qpn) ?? 0;
        rqSlot.set(q.qp.qpn, slot + 1);
        const w = new DataView(new ArrayBuffer(WQE.SIZE));
        encodeWqe(w, 0, { opcode: "RECV", wrId: BigInt(i) | (BigInt(k) << 32n), localAddr: n.dst ? addr(n.dst) : 0, length: n.bytes, lkey: dev.mr.lkey }, q.qp.qpn, `node ${i}`);
        ctx.write(q.qp.rqRing + (slot % q.qp.rqDepth) * WQE.SIZE, new Uint8Array(w.buffer));
        return;
      }
      const at = L.wqes + wqe++ * WQE.SIZE;
      v.setUint32(T + GRAPH_TASK.wqe, at, true);
      encodeWqe(v, at, wqeOf(n, i, k, dev.mr.lkey, rkeys, addr), q.qp.qpn, `node ${i}`);
    });
    ctx.write(eng.sramDma, b);
  });
  const stages = dev.engines.map((eng) => ({ at: eng.sramDma + eng.layout.times, nodes: eng.mine.map((x) => x.i) }));
  return { run, buffers: new Map(p.buffers.map((b) => [b.name, addr({ buffer: b.name, offset: 0 })])), nodes: nodes.length, done, stages };
}
