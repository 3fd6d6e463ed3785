// A collective as work-queue graphs (docs/graph.md): one graph per device of a communicator,
// each node run by one engine of that device after the nodes it depends on. This file is the
// model both forms share: the JSON form (json.ts) and the binary layout in HBM (binary.ts,
// layouts/graph.json).

import { DTYPE, REDUCE_OP, GRAPH_OP } from "../generated/layouts.js";

/** The ops a graph node can have (docs/graph.md, "Nodes"). */
export const GRAPH_OPS = ["send", "recv", "write", "read", "reduce", "copy", "wait", "signal"] as const;
/** One of {@link GRAPH_OPS}. */
export type GraphOpName = (typeof GRAPH_OPS)[number];
/** The binary opcode of each op name (layouts/graph.json GRAPH_OP). */
export const GRAPH_OP_CODE: Record<GraphOpName, number> = {
  send: GRAPH_OP.SEND, recv: GRAPH_OP.RECV, write: GRAPH_OP.WRITE, read: GRAPH_OP.READ,
  reduce: GRAPH_OP.REDUCE, copy: GRAPH_OP.COPY, wait: GRAPH_OP.WAIT, signal: GRAPH_OP.SIGNAL,
};

/** An element type. */
export type DtypeName = "f32" | "f16" | "bf16" | "i32";
/** The element types a reduce node takes, with their binary codes (layouts DTYPE). */
export const DTYPES: Record<DtypeName, number> = { f32: DTYPE.F32, f16: DTYPE.F16, bf16: DTYPE.BF16, i32: DTYPE.I32 };
/** Bytes of one element of each type. */
export const DTYPE_BYTES: Record<DtypeName, number> = { f32: 4, f16: 2, bf16: 2, i32: 4 };
/** A reduction. */
export type RedopName = "sum" | "max" | "min" | "prod";
/** The reductions a reduce node does, with their binary codes (layouts REDUCE_OP). */
export const REDOPS: Record<RedopName, number> = { sum: REDUCE_OP.SUM, max: REDUCE_OP.MAX, min: REDUCE_OP.MIN, prod: REDUCE_OP.PROD };

/** A place in a buffer: the buffer's name and a byte offset in it. */
export interface BufferRef {
  /** The buffer's name (one of the program's {@link GraphProgram.buffers}). */
  buffer: string;
  /** Bytes from the buffer's start. */
  offset: number;
}

/** What every node has: the engine that runs it, the nodes (indices in its graph) it waits for, and a name for traces and errors. */
export interface NodeBase {
  /** The engine of the device that runs it. */
  engine: number;
  /** Indices of the nodes of the same graph it waits for (they may run on other engines). */
  deps: number[];
  /** A name for traces and errors. */
  name?: string;
}

/** A node that talks to another device: its rank and the stream (messages of a stream are matched in order, per engine). */
export interface Remote {
  /** The other device's rank. */
  peer: number;
  /** The stream: messages between two devices are matched to receives per engine and stream, in node order. */
  stream: number;
}

/** An RDMA SEND of `[src, src + bytes)` to the peer's next receive on the stream. */
export interface SendNode extends NodeBase, Remote {
  /** The op. */
  op: "send";
  /** What it sends. */
  src: BufferRef;
  /** How many bytes. */
  bytes: number;
}
/** A receive: for a send (dst and at least its bytes), or for a write with notify (no dst, bytes 0). */
export interface RecvNode extends NodeBase, Remote {
  /** The op. */
  op: "recv";
  /** Where a send's bytes land (none for a write's notification). */
  dst?: BufferRef;
  /** The most bytes it takes (0 for a notification). */
  bytes: number;
}
/** An RDMA WRITE of local src into the peer's buffer at dst; with notify, the peer's next receive on the stream completes too. */
export interface WriteNode extends NodeBase, Remote {
  /** The op. */
  op: "write";
  /** The local bytes. */
  src: BufferRef;
  /** Where they land in the peer's buffer. */
  dst: BufferRef;
  /** How many bytes. */
  bytes: number;
  /** Completes the peer's next receive on the stream too (WRITE_WITH_IMM). */
  notify: boolean;
}
/** An RDMA READ of the peer's src into local dst. */
export interface ReadNode extends NodeBase, Remote {
  /** The op. */
  op: "read";
  /** The peer's bytes. */
  src: BufferRef;
  /** Where they land here. */
  dst: BufferRef;
  /** How many bytes. */
  bytes: number;
}
/** `dst = redop(srcs...)` element-wise, on the engine's near-memory reduction block. */
export interface ReduceNode extends NodeBase {
  /** The op. */
  op: "reduce";
  /** Element type. */
  dtype: DtypeName;
  /** Reduction. */
  redop: RedopName;
  /** 2 to 8 sources. */
  srcs: BufferRef[];
  /** Where the result goes (one of the sources, or apart from them). */
  dst: BufferRef;
  /** Bytes of each source. */
  bytes: number;
}
/** A local copy of `[src, src + bytes)` to dst. */
export interface CopyNode extends NodeBase {
  /** The op. */
  op: "copy";
  /** What it copies. */
  src: BufferRef;
  /** Where to. */
  dst: BufferRef;
  /** How many bytes. */
  bytes: number;
}
/** Done when semaphore sem of this device has reached value. */
export interface WaitNode extends NodeBase {
  /** The op. */
  op: "wait";
  /** The semaphore. */
  sem: number;
  /** The value it waits for. */
  value: number;
}
/** Adds value to semaphore sem of this device. */
export interface SignalNode extends NodeBase {
  /** The op. */
  op: "signal";
  /** The semaphore. */
  sem: number;
  /** What it adds. */
  value: number;
}

/** A node of a graph, one of the eight ops. */
export type GraphNode = SendNode | RecvNode | WriteNode | ReadNode | ReduceNode | CopyNode | WaitNode | SignalNode;

/** A buffer every device of the communicator has, by this name and size (symmetric buffers). */
export interface GraphBuffer {
  /** Its name. */
  name: string;
  /** Its size. */
  bytes: number;
}

/** The graph of one device (one rank of the communicator). */
export interface RankGraph {
  /** Its nodes; a node's deps are indices in this list. */
  nodes: GraphNode[];
}

/** A collective for a communicator: the buffers and semaphores each device has, and one graph per device. */
export interface GraphProgram {
  /** A name for traces and reports. */
  name: string;
  /** devices in the communicator; ranks has one graph each */
  devices: number;
  /** engines per device the graphs use (node engines are below it) */
  engines: number;
  /** The buffers every device has. */
  buffers: GraphBuffer[];
  /** Semaphores per device (0 to semaphores - 1). */
  semaphores: number;
  /** One graph per device, by rank. */
  ranks: RankGraph[];
}

/** One device's graph alone, as the binary form holds it. */
export interface DeviceGraph {
  name: string;
  device: number;
  devices: number;
  engines: number;
  buffers: GraphBuffer[];
  semaphores: number;
  nodes: GraphNode[];
}

/** Ops that talk to a peer. */
export const isRemote = (n: GraphNode): n is SendNode | RecvNode | WriteNode | ReadNode =>
  n.op === "send" || n.op === "recv" || n.op === "write" || n.op === "read";

/** "ranks[2].nodes[7] (reduce "rs.3" on engine 3)": how errors name a node. */
export function nodeLabel(rank: number, index: number, n: GraphNode): string {
  return `ranks[${rank}].nodes[${index}] (${n.op}${n.name ? ` "${n.name}"` : ""} on engine ${n.engine})`;
}

/** An invalid graph: `where` names the place (a JSON path, or a node by nodeLabel), `message` what is wrong. */
export class GraphError extends Error {
  /**
   * @param where - The place: a JSON path, a node (`ranks[2].nodes[7] (reduce "rs.3" on engine 3)`), or an MSCCL gpu, threadblock and step.
   * @param problem - What is wrong there.
   */
  constructor(readonly where: string, readonly problem: string) {
    super(`${where}: ${problem}`);
    this.name = "GraphError";
  }
}
