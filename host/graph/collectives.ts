// The collective compiler: a collective for a communicator of N devices, as a program of N
// graphs (docs/graph.md, "Collectives"). Every device's data is split into N segments, and
// every segment into one slice per engine: engine e of every device moves and reduces slice e
// of each segment, on its own queue pairs (stream `stream`), so the engines run side by side.
// Given the ports the queue pairs share (`ports`), each engine's slice is striped further over
// k streams, enough that the engines' queue pairs to a peer are a multiple of the ports: the
// ring-family collectives are compiled for engines x k lanes, then folded onto the engines.

import {
  GraphError, DTYPE_BYTES,
  type BufferRef, type DtypeName, type GraphNode, type GraphProgram, type RedopName,
} from "./types.js";

/** What a collective's program is compiled for (allReduceRing and the others). */
export interface CollectiveOptions {
  /** devices in the communicator */
  devices: number;
  /** engines per device that take part (default 16) */
  engines?: number;
  /** bytes of data on each device (all-reduce: the vector each device contributes) */
  bytes: number;
  /** element type */
  dtype: DtypeName;
  /** stream of the collective's messages (default 0); striped ones use the streams after it */
  stream?: number;
  /**
   * ports of the group its queue pairs use, when each carries one queue pair's traffic (RoCEv2:
   * runtime.ts gives a pair's queue pairs consecutive port lanes): each engine's slice is striped
   * over stripesFor(engines, ports) streams, so every port carries an even share, within 5 %.
   * Default 1 (no striping). The double binary tree has lanes of its own and ignores it.
   */
  ports?: number;
  /** least bytes of a striped message (default 32 KiB): fewer stripes when messages would be smaller */
  stripeMinBytes?: number;
  /** the program's name (default the collective's and its size) */
  name?: string;
}

/** What a reducing collective's program is compiled for. */
export interface AllReduceOptions extends CollectiveOptions {
  /** the reduction (default sum) */
  redop?: RedopName;
}

/** [first element, elements] of part k when `total` elements are split into `parts` (the first ones one larger). */
export function split(total: number, parts: number, k: number): [number, number] {
  const base = Math.floor(total / parts), extra = total % parts;
  return [k * base + Math.min(k, extra), base + (k < extra ? 1 : 0)];
}

const mod = (a: number, n: number) => ((a % n) + n) % n;

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * The options checked; `lanes` = engines x `stripes`, the lanes a striped compiler slices for
 * (fold puts them on the engines). `parts`: what an engine's share of `bytes` is cut into for one
 * message (the ring all-reduce: its N segments), so that a stripe's messages are its bytes / parts.
 */
function check(o: CollectiveOptions, parts = 1): { engines: number; lanes: number; stripes: number; elems: number; esize: number; stream: number } {
  const engines = o.engines ?? 16, ports = o.ports ?? 1;
  if (!Number.isInteger(o.devices) || o.devices < 1) throw new GraphError("devices", `must be a positive integer, got ${o.devices}`);
  if (!Number.isInteger(engines) || engines < 1 || engines > 256) throw new GraphError("engines", `must be an integer in [1, 256], got ${engines}`);
  if (!Number.isInteger(ports) || ports < 1 || ports > 256) throw new GraphError("ports", `must be an integer in [1, 256], got ${ports}`);
  const esize = DTYPE_BYTES[o.dtype];
  if (esize === undefined) throw new GraphError("dtype", `unknown dtype ${String(o.dtype)}`);
  if (!Number.isInteger(o.bytes) || o.bytes <= 0 || o.bytes % esize !== 0) throw new GraphError("bytes", `must be a positive multiple of the ${o.dtype} element size ${esize}, got ${o.bytes}`);
  const minBytes = o.stripeMinBytes ?? MIN_STRIPE_BYTES;
  if (!Number.isInteger(minBytes) || minBytes < 1) throw new GraphError("stripeMinBytes", `must be a positive integer, got ${minBytes}`);
  const stripes = Math.min(stripesFor(engines, ports), Math.max(1, Math.floor(o.bytes / (parts * engines * minBytes))));
  return { engines, lanes: engines * stripes, stripes, elems: o.bytes / esize, esize, stream: o.stream ?? 0 };
}

/** Most a port may carry over an even share, when lanes do not divide evenly over the ports. */
const STRIPE_TOLERANCE = 1.05;

/**
 * Least bytes of a striped message: below, the executor's work per node (a few hundred ns of
 * engine time) costs more than the ports it spreads over save. Measured on 8 devices x 16
 * engines, RoCEv2, 10 scale-up ports, ring all-reduce: 4 MiB takes 35.7 us with no stripes
 * (32 KiB messages), 41.4 us with 3 (11 KiB); 8 MiB 46.9, 43.1 with 2 (32 KiB), 44.8 with 3;
 * 16 MiB 70.7, 57.5 with 2, 55.0 with 3 (44 KiB).
 */
const MIN_STRIPE_BYTES = 32768;

/**
 * Streams each engine's slice is striped over so that `engines` x k equal lanes, on consecutive
 * ports, load no port more than STRIPE_TOLERANCE x an even share: the fewest such k (each stripe
 * costs the engines nodes of executor work; ports / gcd(engines, ports) always divides evenly).
 * 16 engines: 10 ports take 3 (48 lanes, 5 or 4 per port: 1.04), 12 ports 3, 8 ports 1.
 */
export function stripesFor(engines: number, ports: number): number {
  const even = ports / gcd(engines, ports);
  for (let k = 1; k < even; k++) if ((Math.ceil((engines * k) / ports) * ports) / (engines * k) <= STRIPE_TOLERANCE) return k;
  return even;
}

/**
 * Puts a rank's nodes compiled for engines x `stripes` lanes on the engines: lane v runs on
 * engine floor(v / stripes), its messages on stream `stream` + v mod stripes (a queue pair of
 * its own per peer). An engine's lanes are interleaved node by node (their i-th nodes in a row),
 * so they advance in step and, as an engine posts in order, none holds another back for long;
 * each lane's nodes keep their order, so messages still meet their receives in order.
 */
function fold(nodes: GraphNode[], stripes: number, stream: number): GraphNode[] {
  if (stripes === 1) return nodes;
  const byLane = new Map<number, number[]>();
  nodes.forEach((n, i) => byLane.set(n.engine, [...(byLane.get(n.engine) ?? []), i]));
  const order: number[] = [];
  const lanes = [...byLane.keys()].sort((a, b) => a - b);
  for (const e of [...new Set(lanes.map((v) => Math.floor(v / stripes)))]) {
    const mine = lanes.filter((v) => Math.floor(v / stripes) === e).map((v) => byLane.get(v)!);
    const longest = Math.max(...mine.map((l) => l.length));
    for (let k = 0; k < longest; k++) for (const l of mine) if (k < l.length) order.push(l[k]!);
  }
  const at = new Array<number>(nodes.length);
  order.forEach((old, i) => (at[old] = i));
  return order.map((old) => {
    const n = nodes[old]!;
    const moved = { ...n, engine: Math.floor(n.engine / stripes), deps: n.deps.map((d) => at[d]!) };
    return "stream" in moved ? { ...moved, stream: stream + (n.engine % stripes) } : moved;
  }) as GraphNode[];
}

/**
 * Ends a device's graph: each engine signals semaphore 1 once every node of its own that nothing
 * else waits for is done (its own nodes: cheap to check), and engine 0 waits for all of those
 * signals, then signals semaphore 0 (+1): the host waits for that one. (One signal depending on
 * every engine's last nodes directly would read each of them from another engine's flags.)
 */
export function finish(nodes: GraphNode[]): void {
  const waited = new Uint8Array(nodes.length);
  for (const n of nodes) for (const d of n.deps) waited[d] = 1;
  const sinks = nodes.map((_, i) => i).filter((i) => waited[i] === 0);
  const engines = [...new Set(sinks.map((i) => nodes[i]!.engine))].sort((a, b) => a - b);
  for (const e of engines) nodes.push({ op: "signal", name: `engine${e}.done`, engine: e, sem: 1, value: 1, deps: sinks.filter((i) => nodes[i]!.engine === e) });
  const all = nodes.push({ op: "wait", name: "all.done", engine: 0, sem: 1, value: engines.length, deps: [] }) - 1;
  nodes.push({ op: "signal", name: "done", engine: 0, sem: 0, value: 1, deps: [all] });
}

/**
 * Ring all-reduce: every device ends with op over all devices' `in`, in `out`. Reduce-scatter
 * then all-gather around the ring 0 -> 1 -> ... -> N-1 -> 0, N - 1 steps each. Step k of the
 * reduce-scatter sends segment r - k (from `in` at k = 0, then from `acc`) to the next device and
 * receives segment r - k - 1 from the previous one into `tmp`, which it reduces with its own
 * `in` into `acc` (into `out` at the last step); after it, device r holds segment r + 1 reduced
 * over all devices. Step k of the all-gather sends segment r + 1 - k of `out` on and receives
 * segment r - k into `out`. Buffers: in, out, tmp, acc (bytes each). The partial sums live apart
 * from `out`, so no receive waits for a send to be done before it is posted: every receive of
 * both phases is posted at once, and a message never finds its receive missing (receiver not
 * ready), however far ahead its sender runs.
 */
export function allReduceRing(o: AllReduceOptions): GraphProgram {
  const { engines, lanes, stripes, elems, esize, stream } = check(o, o.devices);
  const N = o.devices, redop = o.redop ?? "sum";
  const ranks = Array.from({ length: N }, (_, r) => {
    let nodes: GraphNode[] = [];
    const add = (n: GraphNode) => nodes.push(n) - 1;
    if (N === 1) {
      add({ op: "copy", name: "copy", engine: 0, src: { buffer: "in", offset: 0 }, dst: { buffer: "out", offset: 0 }, bytes: o.bytes, deps: [] });
      finish(nodes);
      return { nodes };
    }
    const next = (r + 1) % N, prev = mod(r - 1, N);
    for (let e = 0; e < lanes; e++) {
      /** lane e's slice of segment s in `buffer` and its bytes (0 when the slice is empty) */
      const slice = (buffer: string, s: number): [BufferRef, number] => {
        const [s0, sn] = split(elems, N, s);
        const [e0, en] = split(sn, lanes, e);
        return [{ buffer, offset: (s0 + e0) * esize }, en * esize];
      };
      if (slice("in", 0)[1] === 0) continue; // segment 0 is the largest: no slice e there, none anywhere
      const remote = { engine: e, stream };
      // every receive first (they wait for nothing), in the order the previous device sends:
      // the executor posts an engine's nodes in order, and the all-gather's first receive, posted
      // behind the reduce-scatter's last reduce, met the previous device's next message first
      // (an RNR NAK: 2 retransmissions at 8 devices and 64 MiB on RoCEv2). The all-gather's go to
      // segments of `out` nothing else touches until they are done.
      const rsRecv: number[] = [], rsSend: number[] = [], rsReduce: number[] = [];
      for (let k = 0; k < N - 1; k++) {
        const [dst, bytes] = slice("tmp", mod(r - k - 1, N));
        rsRecv.push(bytes ? add({ op: "recv", name: `rs${k}.recv`, ...remote, peer: prev, dst, bytes, deps: [] }) : -1);
      }
      const rsSendOf = (k: number) => {
        const [src, sbytes] = slice(k === 0 ? "in" : "acc", mod(r - k, N));
        rsSend.push(sbytes ? add({ op: "send", name: `rs${k}.send`, ...remote, peer: next, src, bytes: sbytes, deps: k > 0 && rsReduce[k - 1] >= 0 ? [rsReduce[k - 1]] : [] }) : -1);
      };
      rsSendOf(0); // it waits for nothing: the first bytes leave before the rest is posted
      const agRecv: number[] = [];
      for (let k = 0; k < N - 1; k++) {
        const [dst, rbytes] = slice("out", mod(r - k, N));
        agRecv.push(rbytes ? add({ op: "recv", name: `ag${k}.recv`, ...remote, peer: prev, dst, bytes: rbytes, deps: [] }) : -1);
      }
      // reduce-scatter: send, reduce
      for (let k = 0; k < N - 1; k++) {
        if (k > 0) rsSendOf(k);
        const s = mod(r - k - 1, N);
        const [mine, bytes] = slice("in", s);
        rsReduce.push(bytes ? add({ op: "reduce", name: `rs${k}.reduce`, engine: e, dtype: o.dtype, redop, srcs: [mine, slice("tmp", s)[0]], dst: slice(k === N - 2 ? "out" : "acc", s)[0], bytes, deps: [rsRecv[k]] }) : -1);
      }
      // all-gather: send what is held on
      for (let k = 0; k < N - 1; k++) {
        const [src, sbytes] = slice("out", mod(r + 1 - k, N));
        const after = k === 0 ? rsReduce[N - 2] : agRecv[k - 1];
        if (sbytes) add({ op: "send", name: `ag${k}.send`, ...remote, peer: next, src, bytes: sbytes, deps: after >= 0 ? [after] : [] });
      }
    }
    nodes = fold(nodes, stripes, stream);
    finish(nodes);
    return { nodes };
  });
  return {
    name: o.name ?? `allreduce-ring-${N}x${o.bytes}`, devices: N, engines,
    buffers: [{ name: "in", bytes: o.bytes }, { name: "out", bytes: o.bytes }, { name: "tmp", bytes: o.bytes }, { name: "acc", bytes: o.bytes }],
    semaphores: 2, ranks,
  };
}

/** Engine e's slice of block s (each block `elems` elements) of `buffer`: [place, bytes], bytes 0 when the slice is empty. */
function blockSlice(elems: number, lanes: number, esize: number) {
  return (buffer: string, s: number, e: number): [BufferRef, number] => {
    const [e0, en] = split(elems, lanes, e);
    return [{ buffer, offset: (s * elems + e0) * esize }, en * esize];
  };
}

/**
 * A program of N ranks from per-rank node builders, each ending with the final signal; a builder
 * for `stripes` > 1 places lanes, which fold puts on the engines.
 */
function program(name: string, o: CollectiveOptions, engines: number, buffers: { name: string; bytes: number }[], build: (r: number, add: (n: GraphNode) => number) => void, stripes = 1): GraphProgram {
  const ranks = Array.from({ length: o.devices }, (_, r) => {
    const built: GraphNode[] = [];
    build(r, (n) => built.push(n) - 1);
    const nodes = fold(built, stripes, o.stream ?? 0);
    finish(nodes);
    return { nodes };
  });
  return { name: o.name ?? name, devices: o.devices, engines, buffers, semaphores: 2, ranks };
}

/**
 * Ring all-gather: device r contributes `in` (bytes) and every device ends with all of them in
 * `out` (devices x bytes), device d's at block d. Step k sends block r - k of `out` (block r
 * straight from `in` at k = 0) to the next device and receives block r - k - 1 from the
 * previous one; a copy puts the device's own block in place.
 */
export function allGatherRing(o: CollectiveOptions): GraphProgram {
  const { engines, lanes, stripes, elems, esize, stream } = check(o);
  const N = o.devices, block = blockSlice(elems, lanes, esize);
  return program(`allgather-ring-${N}x${o.bytes}`, o, engines, [{ name: "in", bytes: o.bytes }, { name: "out", bytes: N * o.bytes }], (r, add) => {
    const next = (r + 1) % N, prev = mod(r - 1, N);
    for (let e = 0; e < lanes; e++) {
      const [mine, bytes] = block("in", 0, e);
      if (bytes === 0) continue;
      add({ op: "copy", name: "own", engine: e, src: mine, dst: block("out", r, e)[0], bytes, deps: [] });
      const recvs: number[] = [];
      for (let k = 0; k < N - 1; k++) recvs.push(add({ op: "recv", name: `ag${k}.recv`, engine: e, peer: prev, stream, dst: block("out", mod(r - k - 1, N), e)[0], bytes, deps: [] }));
      for (let k = 0; k < N - 1; k++)
        add({ op: "send", name: `ag${k}.send`, engine: e, peer: next, stream, src: k === 0 ? mine : block("out", mod(r - k, N), e)[0], bytes, deps: k === 0 ? [] : [recvs[k - 1]] });
    }
  }, stripes);
}

/**
 * Ring reduce-scatter: device r contributes `in` (devices x bytes) and ends with block r of the
 * reduction over all devices in `out` (bytes). Step k sends block r - k - 1 (from `in` at k = 0,
 * then from `acc`) and receives block r - k - 2 into `tmp`, reducing it with its own `in` into
 * `acc` — into `out` at the last step, when the block is r.
 */
export function reduceScatterRing(o: AllReduceOptions): GraphProgram {
  const { engines, lanes, stripes, elems, esize, stream } = check(o);
  const N = o.devices, redop = o.redop ?? "sum", block = blockSlice(elems, lanes, esize);
  const big = N * o.bytes;
  return program(`reducescatter-ring-${N}x${o.bytes}`, o, engines, [{ name: "in", bytes: big }, { name: "out", bytes: o.bytes }, { name: "tmp", bytes: big }, { name: "acc", bytes: big }], (r, add) => {
    const next = (r + 1) % N, prev = mod(r - 1, N);
    for (let e = 0; e < lanes; e++) {
      const bytes = block("in", 0, e)[1];
      if (bytes === 0) continue;
      if (N === 1) {
        add({ op: "copy", name: "own", engine: e, src: block("in", 0, e)[0], dst: block("out", 0, e)[0], bytes, deps: [] });
        continue;
      }
      const recvs: number[] = [], reduces: number[] = [];
      for (let k = 0; k < N - 1; k++) recvs.push(add({ op: "recv", name: `rs${k}.recv`, engine: e, peer: prev, stream, dst: block("tmp", mod(r - k - 2, N), e)[0], bytes, deps: [] }));
      for (let k = 0; k < N - 1; k++) {
        add({ op: "send", name: `rs${k}.send`, engine: e, peer: next, stream, src: block(k === 0 ? "in" : "acc", mod(r - k - 1, N), e)[0], bytes, deps: k === 0 ? [] : [reduces[k - 1]] });
        const s = mod(r - k - 2, N), last = k === N - 2;
        reduces.push(add({ op: "reduce", name: `rs${k}.reduce`, engine: e, dtype: o.dtype, redop, srcs: [block("in", s, e)[0], block("tmp", s, e)[0]], dst: last ? block("out", 0, e)[0] : block("acc", s, e)[0], bytes, deps: [recvs[k]] }));
      }
    }
  }, stripes);
}

/**
 * Ring broadcast from `root`: every device ends with the root's `in` in `out`. The data moves
 * along the ring root -> root + 1 -> ... in `chunks` pieces per engine slice (default 4), each
 * device passing a piece on as soon as it has it, so the ring is a pipeline.
 */
export function broadcastRing(o: CollectiveOptions & { root?: number; chunks?: number }): GraphProgram {
  const { engines, lanes, stripes, elems, esize, stream } = check(o, o.chunks ?? 4);
  const N = o.devices, root = o.root ?? 0, chunks = o.chunks ?? 4;
  if (!Number.isInteger(root) || root < 0 || root >= N) throw new GraphError("root", `must be a device of the communicator (0 to ${N - 1}), got ${root}`);
  if (!Number.isInteger(chunks) || chunks < 1) throw new GraphError("chunks", `must be a positive integer, got ${chunks}`);
  return program(`broadcast-ring-${N}x${o.bytes}`, o, engines, [{ name: "in", bytes: o.bytes }, { name: "out", bytes: o.bytes }], (r, add) => {
    const next = (r + 1) % N, prev = mod(r - 1, N), last = mod(root - 1, N) === r;
    for (let e = 0; e < lanes; e++) {
      const [e0, en] = split(elems, lanes, e);
      const pieces = Array.from({ length: chunks }, (_, c) => {
        const [c0, cn] = split(en, chunks, c);
        return { c, bytes: cn * esize, at: (buffer: string): BufferRef => ({ buffer, offset: (e0 + c0) * esize }) };
      }).filter((x) => x.bytes > 0);
      if (r === root) {
        for (const { c, bytes, at } of pieces) {
          add({ op: "copy", name: `c${c}.own`, engine: e, src: at("in"), dst: at("out"), bytes, deps: [] });
          if (N > 1) add({ op: "send", name: `c${c}.send`, engine: e, peer: next, stream, src: at("in"), bytes, deps: [] });
        }
        continue;
      }
      // every piece's receive first, then the sends that pass them on: a receive posted only
      // after the previous piece went on met its SEND early (an RNR NAK and a retransmission
      // per piece, with no loss: issue 27), as the other collectives post theirs first
      const got = pieces.map(({ c, bytes, at }) => add({ op: "recv", name: `c${c}.recv`, engine: e, peer: prev, stream, dst: at("out"), bytes, deps: [] }));
      if (!last) pieces.forEach(({ c, bytes, at }, k) => add({ op: "send", name: `c${c}.send`, engine: e, peer: next, stream, src: at("out"), bytes, deps: [got[k]!] }));
    }
  }, stripes);
}

/**
 * All-to-all: device r's block p of `in` (devices x bytes) ends in device p's block r of `out`.
 * Every engine sends its slice of each block straight to its device and takes its slice of
 * each block from the others; a copy moves the device's own block.
 */
export function allToAll(o: CollectiveOptions): GraphProgram {
  const { engines, lanes, stripes, elems, esize, stream } = check(o);
  const N = o.devices, block = blockSlice(elems, lanes, esize);
  return program(`alltoall-${N}x${o.bytes}`, o, engines, [{ name: "in", bytes: N * o.bytes }, { name: "out", bytes: N * o.bytes }], (r, add) => {
    for (let e = 0; e < lanes; e++) {
      const bytes = block("in", 0, e)[1];
      if (bytes === 0) continue;
      // receives first, from every peer in ring order, then the sends in the same order
      for (let k = 1; k < N; k++) {
        const p = mod(r - k, N);
        add({ op: "recv", name: `from${p}`, engine: e, peer: p, stream, dst: block("out", p, e)[0], bytes, deps: [] });
      }
      add({ op: "copy", name: "own", engine: e, src: block("in", r, e)[0], dst: block("out", r, e)[0], bytes, deps: [] });
      for (let k = 1; k < N; k++) {
        const p = (r + k) % N;
        add({ op: "send", name: `to${p}`, engine: e, peer: p, stream, src: block("in", p, e)[0], bytes, deps: [] });
      }
    }
  }, stripes);
}

/**
 * All-reduce by recursive halving and doubling (devices a power of two): log2 N steps of
 * reduce-scatter, each exchanging half of what a device still holds with the partner whose
 * rank differs in one bit (the highest first), then log2 N steps of all-gather in reverse.
 * Fewer steps than the ring (2 log2 N against 2 (N - 1)), with larger messages early on.
 */
export function allReduceHalvingDoubling(o: AllReduceOptions): GraphProgram {
  const { engines, lanes, stripes, elems, esize, stream } = check(o, o.devices);
  const N = o.devices, redop = o.redop ?? "sum";
  if ((N & (N - 1)) !== 0) throw new GraphError("devices", `halving-doubling needs a power of two, got ${N} (use the ring)`);
  const steps = Math.log2(N);
  const seg = (buffer: string, s: number, e: number): [BufferRef, number] => {
    const [s0, sn] = split(elems, N, s);
    const [e0, en] = split(sn, lanes, e);
    return [{ buffer, offset: (s0 + e0) * esize }, en * esize];
  };
  // reduce-scatter step k receives N / 2^(k+1) segments into a region of tmp of its own, so
  // that every step's receives are posted at the start: a receive that waited for the step
  // before to have read tmp met the partner's data first (an RNR NAK and a retransmission
  // each: 448 on RoCEv2 at 8 devices and 64 MiB). The regions add up to less than the vector.
  const [base, extra] = [Math.floor(elems / N), elems % N];
  const stepAt: number[] = []; // element offset of step k's region
  let tmpElems = 0;
  for (let k = 0, m = N >> 1; k < steps; k++, m >>= 1) { stepAt.push(tmpElems); tmpElems += m * base + Math.min(m, extra); }
  /** Segment s's lane e in step k's region of tmp, whose first segment is `first`. */
  const tmpSeg = (k: number, first: number, s: number, e: number): BufferRef => {
    const [s0, sn] = split(elems, N, s);
    return { buffer: "tmp", offset: (stepAt[k]! + s0 - split(elems, N, first)[0] + split(sn, lanes, e)[0]) * esize };
  };
  return program(`allreduce-hd-${N}x${o.bytes}`, o, engines, [{ name: "in", bytes: o.bytes }, { name: "out", bytes: o.bytes }, { name: "tmp", bytes: Math.max(tmpElems, 1) * esize }, { name: "acc", bytes: o.bytes }], (r, add) => {
    for (let e = 0; e < lanes; e++) {
      if (seg("in", 0, e)[1] === 0) continue;
      if (N === 1) {
        add({ op: "copy", name: "copy", engine: e, src: seg("in", 0, e)[0], dst: seg("out", 0, e)[0], bytes: seg("in", 0, e)[1], deps: [] });
        continue;
      }
      // the steps: reduce-scatter step k keeps half the range it held and sends the other half
      // to the partner r ^ N/2^(k+1); the all-gather walks back, each step taking the half the
      // partner holds (the other half of what the two held before reduce-scatter step k)
      const rs: { k: number; partner: number; klo: number; khi: number; slo: number; shi: number }[] = [];
      let lo = 0, hi = N;
      for (let k = 0; k < steps; k++) {
        const d = N >> (k + 1), mid = (lo + hi) / 2, keepLo = (r & d) === 0;
        const [klo, khi] = keepLo ? [lo, mid] : [mid, hi], [slo, shi] = keepLo ? [mid, hi] : [lo, mid];
        rs.push({ k, partner: r ^ d, klo, khi, slo, shi });
        [lo, hi] = [klo, khi];
      }
      const ag: { k: number; partner: number; lo: number; hi: number; plo: number; phi: number }[] = [];
      for (let k = steps - 1; k >= 0; k--) {
        const d = N >> (k + 1), size = hi - lo, plo = (r & d) === 0 ? lo + size : lo - size;
        ag.push({ k, partner: r ^ d, lo, hi, plo, phi: plo + size });
        [lo, hi] = [Math.min(lo, plo), Math.max(hi, plo + size)];
      }
      // every receive first, in the order each partner sends (its reduce-scatter step, then its
      // all-gather step): the executor posts an engine's nodes in order, and a receive behind a
      // reduce waiting for an earlier step met the partner's data first (an RNR NAK and a
      // retransmission each). Their places are distinct: tmp's regions, out's other segments.
      // (Step 0's sends, which wait for nothing, go right after its receives: the first bytes
      // leave before the engine posts the rest.)
      const rsRecv = new Map<string, number>();
      /** per segment: the node that last wrote its acc (or out) */
      const wrote = new Map<number, number>(), rsWrote = new Map<number, number>();
      const rsRecvs = (k: number, partner: number, klo: number, khi: number) => {
        for (let s = klo; s < khi; s++) {
          const bytes = seg("tmp", s, e)[1];
          if (bytes) rsRecv.set(`${k}.${s}`, add({ op: "recv", name: `rs${k}.recv${s}`, engine: e, peer: partner, stream, dst: tmpSeg(k, klo, s, e), bytes, deps: [] }));
        }
      };
      const rsSends = (k: number, partner: number, slo: number, shi: number) => {
        for (let s = slo; s < shi; s++) {
          const [src, bytes] = seg(k === 0 ? "in" : "acc", s, e);
          if (bytes) add({ op: "send", name: `rs${k}.send${s}`, engine: e, peer: partner, stream, src, bytes, deps: rsWrote.has(s) ? [rsWrote.get(s)!] : [] });
        }
      };
      rsRecvs(0, rs[0]!.partner, rs[0]!.klo, rs[0]!.khi);
      rsSends(0, rs[0]!.partner, rs[0]!.slo, rs[0]!.shi);
      for (const { k, partner, klo, khi } of rs.slice(1)) rsRecvs(k, partner, klo, khi);
      for (const { k, partner, plo, phi } of ag) for (let s = plo; s < phi; s++) {
        const [dst, bytes] = seg("out", s, e);
        if (bytes) wrote.set(s, add({ op: "recv", name: `ag${k}.recv${s}`, engine: e, peer: partner, stream, dst, bytes, deps: [] }));
      }
      for (const { k, partner, klo, khi, slo, shi } of rs) {
        if (k > 0) rsSends(k, partner, slo, shi);
        for (let s = klo; s < khi; s++) {
          const [mine, bytes] = seg(k === 0 ? "in" : "acc", s, e);
          if (!bytes) continue;
          const last = k === steps - 1;
          const n = add({ op: "reduce", name: `rs${k}.reduce${s}`, engine: e, dtype: o.dtype, redop, srcs: [mine, tmpSeg(k, klo, s, e)], dst: seg(last ? "out" : "acc", s, e)[0], bytes, deps: [rsRecv.get(`${k}.${s}`)!, ...(rsWrote.has(s) ? [rsWrote.get(s)!] : [])] });
          rsWrote.set(s, n);
          if (last) wrote.set(s, n);
        }
      }
      for (const { k, partner, lo, hi } of ag) for (let s = lo; s < hi; s++) {
        const [src, bytes] = seg("out", s, e);
        if (bytes) add({ op: "send", name: `ag${k}.send${s}`, engine: e, peer: partner, stream, src, bytes, deps: wrote.has(s) ? [wrote.get(s)!] : [] });
      }
    }
  }, stripes);
}

/** One binary tree over the ranks of a communicator: each rank's parent (-1 at the root) and children (at most two). */
export interface RankTree {
  root: number;
  parent: number[];
  children: number[][];
}

/**
 * The two complementary binary trees of a double binary tree over n ranks (the shape NCCL's tree
 * algorithm uses). Tree 0 is the in-order tree of the positions 0 .. n - 1 by their lowest set
 * bit: position p with lowest bit b > 1 has children p - b/2 and the first of p + b/2, p + b/4,
 * ..., p + 1 below n; odd positions are leaves; position 0 is the root, with the highest power
 * of two below n as its one child. Depth: ceil(log2 n). Tree 1 is the same shape with position p
 * at rank n - 1 - p (n even: odd positions map to even ranks, so every rank is a leaf in one of
 * the trees and has children in at most one), or at rank p + 1 mod n (n odd, where the mirror
 * would keep odd ranks odd). Every rank then sends about twice its data in all: up and down in
 * the tree where it has children, up once in the other.
 */
export function doubleBinaryTree(n: number): [RankTree, RankTree] {
  if (!Number.isInteger(n) || n < 1) throw new GraphError("devices", `must be a positive integer, got ${n}`);
  const kids: number[][] = Array.from({ length: n }, () => []);
  if (n > 1) kids[0].push(2 ** Math.floor(Math.log2(n - 1)));
  for (let p = 1; p < n; p++) {
    const b = p & -p;
    if (b < 2) continue;
    kids[p].push(p - b / 2);
    for (let h = b / 2; h >= 1; h /= 2) if (p + h < n) { kids[p].push(p + h); break; }
  }
  const tree = (rankOf: (p: number) => number): RankTree => {
    const parent = Array<number>(n).fill(-1), children: number[][] = Array.from({ length: n }, () => []);
    kids.forEach((ks, p) => ks.forEach((k) => {
      children[rankOf(p)].push(rankOf(k));
      parent[rankOf(k)] = rankOf(p);
    }));
    return { root: rankOf(0), parent, children };
  };
  return [tree((p) => p), tree(n % 2 === 0 ? (p) => n - 1 - p : (p) => (p + 1) % n)];
}

/**
 * Most pipeline chunks a lane is cut into. Each chunk costs its engines a few nodes of executor
 * work: measured on 8 devices x 16 engines (examples/scenarios/allreduce-tree.json), 64 chunks of
 * 32 KiB per lane leave a 16 MiB all-reduce engine-bound (118 us), 16 of 128 KiB take 76 us.
 */
const TREE_MAX_CHUNKS = 16;

/**
 * All-reduce by a double binary tree (NCCL's tree algorithm): the data is cut in two halves, one
 * per tree of doubleBinaryTree, and each half into lanes, each lane into chunks of at most
 * `chunkBytes` (default 64 KiB; larger when a lane would have more than 16 chunks). In its tree, each rank receives a chunk
 * from each child into `tmp` (child k's at block k), reduces it with its own `in` into `acc`
 * (`out` at the root) and sends that to its parent (a leaf sends `in` as it is): the reduction
 * goes up chunk after chunk while the root already sends the first ones down; going down, each
 * rank receives a chunk from its parent into `out` and passes it on to its children. So each
 * chunk crosses 2 ceil(log2 N) links in sequence (the ring: 2 (N - 1)), and each rank sends
 * about 2x its data (the ring: 2 (N - 1) / N x).
 *
 * Engines: with 4 or more, lane l of the 2 floor(E / 4) lanes (tree l mod 2) has its own two
 * engines, 2l going up (receives from the children, reductions, sends to the parent) and 2l + 1
 * going down (receives from the parent, sends to the children), so the two directions of a
 * lane overlap as NCCL's split tree kernel's do; with 2 or 3 engines each tree has one engine
 * for both directions, with 1 both trees share it. An engine's nodes are in the order
 * (direction, lane, chunk) — receives first — on every rank, so the k-th message between two
 * ranks on an engine meets the k-th receive.
 */
export function allReduceTree(o: AllReduceOptions & { chunkBytes?: number }): GraphProgram {
  const { engines, elems, esize, stream } = check(o);
  const N = o.devices, redop = o.redop ?? "sum", chunkBytes = o.chunkBytes ?? 65536;
  if (!Number.isInteger(chunkBytes) || chunkBytes < esize) throw new GraphError("chunkBytes", `must be an integer of at least one ${o.dtype} element (${esize} bytes), got ${chunkBytes}`);
  const trees = doubleBinaryTree(N);
  const perTree = Math.max(1, Math.floor(engines / 4));
  /** lane l: tree l % 2, its elements [first, first + count), its up and down engines */
  const lanes = Array.from({ length: 2 * perTree }, (_, l) => {
    const t = l % 2, [h0, hn] = split(elems, 2, t), [l0, ln] = split(hn, perTree, Math.floor(l / 2));
    const up = engines >= 4 ? 2 * l : engines >= 2 ? t : 0;
    const down = engines >= 4 ? 2 * l + 1 : up;
    const chunks = Math.max(1, Math.min(TREE_MAX_CHUNKS, Math.ceil((ln * esize) / chunkBytes), ln));
    return { tree: trees[t], first: h0 + l0, count: ln, up, down, chunks };
  }).filter((l) => l.count > 0);
  return program(`allreduce-tree-${N}x${o.bytes}`, o, engines, [{ name: "in", bytes: o.bytes }, { name: "out", bytes: o.bytes }, { name: "tmp", bytes: 2 * o.bytes }, { name: "acc", bytes: o.bytes }], (r, add) => {
    if (N === 1) {
      for (const l of lanes) add({ op: "copy", name: "copy", engine: l.up, src: { buffer: "in", offset: l.first * esize }, dst: { buffer: "out", offset: l.first * esize }, bytes: l.count * esize, deps: [] });
      return;
    }
    /** chunk c of lane l in `buffer` (block k of it: tmp holds one block per child) and its bytes */
    const at = (l: (typeof lanes)[number], c: number, buffer: string, k = 0): [BufferRef, number] => {
      const [c0, cn] = split(l.count, l.chunks, c);
      return [{ buffer, offset: (k * elems + l.first + c0) * esize }, cn * esize];
    };
    const chunks = (l: (typeof lanes)[number]) => Array.from({ length: l.chunks }, (_, c) => c);
    // receives first, none waits for anything: each chunk's bytes have their own place
    const fromChild = lanes.map((l) => chunks(l).map((c) => l.tree.children[r].map((child, k) => {
      const [dst, bytes] = at(l, c, "tmp", k);
      return add({ op: "recv", name: `up${c}.from${child}`, engine: l.up, peer: child, stream, dst, bytes, deps: [] });
    })));
    const fromParent = lanes.map((l) => chunks(l).map((c) => {
      const parent = l.tree.parent[r];
      if (parent < 0) return -1;
      const [dst, bytes] = at(l, c, "out");
      return add({ op: "recv", name: `down${c}.from${parent}`, engine: l.down, peer: parent, stream, dst, bytes, deps: [] });
    }));
    // up: reduce what the children sent with my own, send it to the parent (the root keeps it in out)
    const reduced = lanes.map((l, li) => chunks(l).map((c) => {
      const parent = l.tree.parent[r], kids = l.tree.children[r];
      const [mine, bytes] = at(l, c, "in");
      let ready = -1;
      if (kids.length > 0) {
        const dst = at(l, c, parent < 0 ? "out" : "acc")[0];
        ready = add({ op: "reduce", name: `up${c}.reduce`, engine: l.up, dtype: o.dtype, redop, srcs: [mine, ...kids.map((_, k) => at(l, c, "tmp", k)[0])], dst, bytes, deps: fromChild[li][c] });
      }
      if (parent >= 0) add({ op: "send", name: `up${c}.to${parent}`, engine: l.up, peer: parent, stream, src: kids.length > 0 ? at(l, c, "acc")[0] : mine, bytes, deps: ready >= 0 ? [ready] : [] });
      return ready;
    }));
    // down: pass the result on to the children as soon as it is here
    lanes.forEach((l, li) => chunks(l).forEach((c) => {
      const got = l.tree.parent[r] < 0 ? reduced[li][c] : fromParent[li][c];
      const [src, bytes] = at(l, c, "out");
      for (const child of l.tree.children[r]) add({ op: "send", name: `down${c}.to${child}`, engine: l.down, peer: child, stream, src, bytes, deps: [got] });
    }));
  });
}
