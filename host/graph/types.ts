// A collective as work-queue graphs (docs/graph.md): one graph per device of a communicator,
// each node run by one engine of that device after the nodes it depends on. This file is the
// model both forms share: the JSON form (json.ts) and the binary layout in HBM (binary.ts,
// layouts/graph.json).

import { DTYPE, REDUCE_OP, GRAPH_OP } from "../generated/layouts.js";

export const GRAPH_OPS = ["send", "recv", "write", "read", "reduce", "copy", "wait", "signal"] as const;
export type GraphOpName = (typeof GRAPH_OPS)[number];
/** The binary opcode of each op name (layouts/graph.json GRAPH_OP). */
export const GRAPH_OP_CODE: Record<GraphOpName, number> = {
  send: GRAPH_OP.SEND, recv: GRAPH_OP.RECV, write: GRAPH_OP.WRITE, read: GRAPH_OP.READ,
  reduce: GRAPH_OP.REDUCE, copy: GRAPH_OP.COPY, wait: GRAPH_OP.WAIT, signal: GRAPH_OP.SIGNAL,
};

export const DTYPES = { f32: DTYPE.F32, f16: DTYPE.F16, bf16: DTYPE.BF16, i32: DTYPE.I32 } as const;
export type DtypeName = keyof typeof DTYPES;
export const DTYPE_BYTES: Record<DtypeName, number> = { f32: 4, f16: 2, bf16: 2, i32: 4 };
export const REDOPS = { sum: REDUCE_OP.SUM, max: REDUCE_OP.MAX, min: REDUCE_OP.MIN, prod: REDUCE_OP.PROD } as const;
export type RedopName = keyof typeof REDOPS;

/** A place in a buffer: the buffer's name and a byte offset in it. */
export interface BufferRef {
  buffer: string;
  offset: number;
}

/** What every node has: the engine that runs it, the nodes (indices in its graph) it waits for, and a name for traces and errors. */
interface NodeBase {
  engine: number;
  deps: number[];
  name?: string;
}

/** A node that talks to another device: its rank and the stream (messages of a stream are matched in order, per engine). */
interface Remote {
  peer: number;
  stream: number;
}

export interface SendNode extends NodeBase, Remote { op: "send"; src: BufferRef; bytes: number }
/** A receive: for a send (dst and at least its bytes), or for a write with notify (no dst, bytes 0). */
export interface RecvNode extends NodeBase, Remote { op: "recv"; dst?: BufferRef; bytes: number }
/** An RDMA WRITE of local src into the peer's buffer at dst; with notify, the peer's next receive on the stream completes too. */
export interface WriteNode extends NodeBase, Remote { op: "write"; src: BufferRef; dst: BufferRef; bytes: number; notify: boolean }
/** An RDMA READ of the peer's src into local dst. */
export interface ReadNode extends NodeBase, Remote { op: "read"; src: BufferRef; dst: BufferRef; bytes: number }
export interface ReduceNode extends NodeBase { op: "reduce"; dtype: DtypeName; redop: RedopName; srcs: BufferRef[]; dst: BufferRef; bytes: number }
export interface CopyNode extends NodeBase { op: "copy"; src: BufferRef; dst: BufferRef; bytes: number }
/** Done when semaphore sem of this device has reached value. */
export interface WaitNode extends NodeBase { op: "wait"; sem: number; value: number }
/** Adds value to semaphore sem of this device. */
export interface SignalNode extends NodeBase { op: "signal"; sem: number; value: number }

export type GraphNode = SendNode | RecvNode | WriteNode | ReadNode | ReduceNode | CopyNode | WaitNode | SignalNode;

/** A buffer every device of the communicator has, by this name and size (symmetric buffers). */
export interface GraphBuffer {
  name: string;
  bytes: number;
}

/** The graph of one device (one rank of the communicator). */
export interface RankGraph {
  nodes: GraphNode[];
}

/** A collective for a communicator: the buffers and semaphores each device has, and one graph per device. */
export interface GraphProgram {
  name: string;
  /** devices in the communicator; ranks has one graph each */
  devices: number;
  /** engines per device the graphs use (node engines are below it) */
  engines: number;
  buffers: GraphBuffer[];
  semaphores: number;
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
  constructor(readonly where: string, readonly problem: string) {
    super(`${where}: ${problem}`);
    this.name = "GraphError";
  }
}
