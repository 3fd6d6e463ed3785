// The collective compiler: a collective for a communicator of N devices, as a program of N
// graphs (docs/graph.md, "Collectives"). Every device's data is split into N segments, and
// every segment into one slice per engine: engine e of every device moves and reduces slice e
// of each segment, on its own queue pairs (stream `stream`), so the engines run side by side.

import {
  GraphError, DTYPE_BYTES,
  type BufferRef, type DtypeName, type GraphNode, type GraphProgram, type RedopName,
} from "./types.js";

export interface CollectiveOptions {
  /** devices in the communicator */
  devices: number;
  /** engines per device that take part (default 16) */
  engines?: number;
  /** bytes of data on each device (all-reduce: the vector each device contributes) */
  bytes: number;
  dtype: DtypeName;
  /** stream of the collective's messages (default 0) */
  stream?: number;
  name?: string;
}

export interface AllReduceOptions extends CollectiveOptions {
  redop?: RedopName;
}

/** [first element, elements] of part k when `total` elements are split into `parts` (the first ones one larger). */
export function split(total: number, parts: number, k: number): [number, number] {
  const base = Math.floor(total / parts), extra = total % parts;
  return [k * base + Math.min(k, extra), base + (k < extra ? 1 : 0)];
}

const mod = (a: number, n: number) => ((a % n) + n) % n;

function check(o: CollectiveOptions): { engines: number; elems: number; esize: number; stream: number } {
  const engines = o.engines ?? 16;
  if (!Number.isInteger(o.devices) || o.devices < 1) throw new GraphError("devices", `must be a positive integer, got ${o.devices}`);
  if (!Number.isInteger(engines) || engines < 1 || engines > 256) throw new GraphError("engines", `must be an integer in [1, 256], got ${engines}`);
  const esize = DTYPE_BYTES[o.dtype];
  if (esize === undefined) throw new GraphError("dtype", `unknown dtype ${String(o.dtype)}`);
  if (!Number.isInteger(o.bytes) || o.bytes <= 0 || o.bytes % esize !== 0) throw new GraphError("bytes", `must be a positive multiple of the ${o.dtype} element size ${esize}, got ${o.bytes}`);
  return { engines, elems: o.bytes / esize, esize, stream: o.stream ?? 0 };
}

/** Adds a final signal (semaphore 0, +1) on engine 0 after every node nothing else waits for: the host waits for it. */
function finish(nodes: GraphNode[]): void {
  const waited = new Uint8Array(nodes.length);
  for (const n of nodes) for (const d of n.deps) waited[d] = 1;
  const sinks = nodes.map((_, i) => i).filter((i) => waited[i] === 0);
  nodes.push({ op: "signal", name: "done", engine: 0, sem: 0, value: 1, deps: sinks });
}

/**
 * Ring all-reduce: every device ends with op over all devices' `in`, in `out`. Reduce-scatter
 * then all-gather around the ring 0 -> 1 -> ... -> N-1 -> 0, N - 1 steps each. Step k of the
 * reduce-scatter sends segment r - k (from `in` at k = 0, then from `out`) to the next device and
 * receives segment r - k - 1 from the previous one into `tmp`, which it reduces with its own
 * `in` into `out`; after it, device r holds segment r + 1 reduced over all devices. Step k of
 * the all-gather sends segment r + 1 - k of `out` on and receives segment r - k into `out`.
 * Buffers: in, out, tmp (bytes each). Dependencies keep every buffer's readers and writers in
 * order (a receive into `out` waits for the send that read the same bytes).
 */
export function allReduceRing(o: AllReduceOptions): GraphProgram {
  const { engines, elems, esize, stream } = check(o);
  const N = o.devices, redop = o.redop ?? "sum";
  const ranks = Array.from({ length: N }, (_, r) => {
    const nodes: GraphNode[] = [];
    const add = (n: GraphNode) => nodes.push(n) - 1;
    if (N === 1) {
      add({ op: "copy", name: "copy", engine: 0, src: { buffer: "in", offset: 0 }, dst: { buffer: "out", offset: 0 }, bytes: o.bytes, deps: [] });
      finish(nodes);
      return { nodes };
    }
    const next = (r + 1) % N, prev = mod(r - 1, N);
    for (let e = 0; e < engines; e++) {
      /** engine e's slice of segment s in `buffer` and its bytes (0 when the slice is empty) */
      const slice = (buffer: string, s: number): [BufferRef, number] => {
        const [s0, sn] = split(elems, N, s);
        const [e0, en] = split(sn, engines, e);
        return [{ buffer, offset: (s0 + e0) * esize }, en * esize];
      };
      if (slice("in", 0)[1] === 0) continue; // segment 0 is the largest: no slice e there, none anywhere
      const remote = { engine: e, stream };
      // reduce-scatter: receives first (they wait for nothing), then send, reduce
      const rsRecv: number[] = [], rsSend: number[] = [], rsReduce: number[] = [];
      for (let k = 0; k < N - 1; k++) {
        const [dst, bytes] = slice("tmp", mod(r - k - 1, N));
        rsRecv.push(bytes ? add({ op: "recv", name: `rs${k}.recv`, ...remote, peer: prev, dst, bytes, deps: [] }) : -1);
      }
      for (let k = 0; k < N - 1; k++) {
        const [src, sbytes] = slice(k === 0 ? "in" : "out", mod(r - k, N));
        if (sbytes) rsSend.push(add({ op: "send", name: `rs${k}.send`, ...remote, peer: next, src, bytes: sbytes, deps: k > 0 && rsReduce[k - 1] >= 0 ? [rsReduce[k - 1]] : [] }));
        else rsSend.push(-1);
        const s = mod(r - k - 1, N);
        const [mine, bytes] = slice("in", s);
        rsReduce.push(bytes ? add({ op: "reduce", name: `rs${k}.reduce`, engine: e, dtype: o.dtype, redop, srcs: [mine, slice("tmp", s)[0]], dst: slice("out", s)[0], bytes, deps: [rsRecv[k]] }) : -1);
      }
      // all-gather
      let lastRecv = -1;
      for (let k = 0; k < N - 1; k++) {
        const [dst, rbytes] = slice("out", mod(r - k, N));
        const recv = rbytes ? add({ op: "recv", name: `ag${k}.recv`, ...remote, peer: prev, dst, bytes: rbytes, deps: k > 0 && rsSend[k] >= 0 ? [rsSend[k]] : [] }) : -1;
        const [src, sbytes] = slice("out", mod(r + 1 - k, N));
        const after = k === 0 ? rsReduce[N - 2] : lastRecv;
        if (sbytes) add({ op: "send", name: `ag${k}.send`, ...remote, peer: next, src, bytes: sbytes, deps: after >= 0 ? [after] : [] });
        lastRecv = recv;
      }
    }
    finish(nodes);
    return { nodes };
  });
  return {
    name: o.name ?? `allreduce-ring-${N}x${o.bytes}`, devices: N, engines,
    buffers: [{ name: "in", bytes: o.bytes }, { name: "out", bytes: o.bytes }, { name: "tmp", bytes: o.bytes }],
    semaphores: 1, ranks,
  };
}
