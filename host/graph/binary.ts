// The binary form of one device's graph, as its engines read it from HBM (layouts/graph.json,
// docs/graph.md): header, nodes, dependency lists, buffer table, names. encodeGraph writes
// rank r of a program; decodeGraph reads one back, refusing bytes that are not a graph with a
// GraphError saying where; programOf puts decoded graphs together again.

import {
  GRAPH_HEADER, GRAPH_NODE, GRAPH_NODE_STRIDE, GRAPH_BUFFER, GRAPH_MAGIC, GRAPH_VERSION, GRAPH_NO_PEER, GRAPH_NO_NAME,
  GRAPH_MAX_SOURCES, GRAPH_FLAG,
} from "../generated/layouts.js";
import {
  GraphError, GRAPH_OPS, GRAPH_OP_CODE, DTYPES, REDOPS, isRemote,
  type BufferRef, type DeviceGraph, type GraphNode, type GraphProgram, type DtypeName, type RedopName,
} from "./types.js";

const align8 = (n: number) => (n + 7) & ~7;

/** The bytes of rank `rank`'s graph of `p` (validate the program first: this only lays it out). */
export function encodeGraph(p: GraphProgram, rank: number): Uint8Array {
  const nodes = p.ranks[rank].nodes;
  // names: the program's, then the buffers', then the nodes'; each once
  const names: number[] = [];
  const offsets = new Map<string, number>();
  const enc = new TextEncoder();
  let strBytes = 0;
  const name = (s: string): number => {
    let at = offsets.get(s);
    if (at === undefined) {
      at = strBytes;
      offsets.set(s, at);
      const b = enc.encode(s);
      names.push(...b, 0);
      strBytes += b.length + 1;
    }
    return at;
  };
  name(p.name);
  const bufIndex = new Map(p.buffers.map((b, i) => [b.name, i]));
  const ndeps = nodes.reduce((a, n) => a + n.deps.length, 0);
  const nodeOff = GRAPH_HEADER.SIZE;
  const depOff = nodeOff + nodes.length * GRAPH_NODE.SIZE;
  const bufOff = align8(depOff + 4 * ndeps);
  const strOff = bufOff + p.buffers.length * GRAPH_BUFFER.SIZE;
  const bufNames = p.buffers.map((b) => name(b.name));
  const nodeNames = nodes.map((n) => (n.name === undefined ? GRAPH_NO_NAME : name(n.name)));
  const total = strOff + strBytes;
  const out = new Uint8Array(total);
  const v = new DataView(out.buffer);
  const H = GRAPH_HEADER;
  v.setUint32(H.magic, GRAPH_MAGIC, true);
  v.setUint16(H.version, GRAPH_VERSION, true);
  v.setUint16(H.engines, p.engines, true);
  v.setUint16(H.device, rank, true);
  v.setUint16(H.devices, p.devices, true);
  v.setUint32(H.nodes, nodes.length, true);
  v.setUint32(H.node_off, nodeOff, true);
  v.setUint32(H.deps, ndeps, true);
  v.setUint32(H.dep_off, depOff, true);
  v.setUint32(H.buffers, p.buffers.length, true);
  v.setUint32(H.buf_off, bufOff, true);
  v.setUint32(H.str_off, strOff, true);
  v.setUint32(H.str_bytes, strBytes, true);
  v.setUint32(H.semaphores, p.semaphores, true);
  v.setUint32(H.bytes, total, true);
  const N = GRAPH_NODE;
  const place = (at: number, field: number, r: BufferRef) => {
    v.setUint32(at + field, bufIndex.get(r.buffer)!, true);
    v.setUint32(at + field + 4, r.offset, true);
  };
  let dep = 0;
  nodes.forEach((n, i) => {
    const at = nodeOff + i * N.SIZE;
    out[at + N.op] = GRAPH_OP_CODE[n.op];
    out[at + N.engine] = n.engine;
    v.setUint16(at + N.peer, isRemote(n) ? n.peer : GRAPH_NO_PEER, true);
    if (isRemote(n)) v.setUint16(at + N.stream, n.stream, true);
    v.setUint16(at + N.ndeps, n.deps.length, true);
    v.setUint32(at + N.deps, dep, true);
    v.setUint32(at + N.name, nodeNames[i], true);
    for (const d of n.deps) v.setUint32(depOff + 4 * dep++, d, true);
    if ("bytes" in n) v.setUint32(at + N.bytes, n.bytes, true);
    const srcs = n.op === "reduce" ? n.srcs : "src" in n ? [n.src] : [];
    out[at + N.nsrc] = srcs.length;
    srcs.forEach((s, k) => place(at, N.src_buf + k * GRAPH_NODE_STRIDE.src_buf, s));
    if ("dst" in n && n.dst) place(at, N.dst_buf, n.dst);
    switch (n.op) {
      case "reduce":
        out[at + N.dtype] = DTYPES[n.dtype];
        out[at + N.redop] = REDOPS[n.redop];
        break;
      case "write":
        out[at + N.flags] = n.notify ? GRAPH_FLAG.NOTIFY : 0;
        break;
      case "wait":
      case "signal":
        v.setUint32(at + N.sem, n.sem, true);
        v.setUint32(at + N.value, n.value, true);
        break;
    }
  });
  const B = GRAPH_BUFFER;
  p.buffers.forEach((b, i) => {
    v.setUint32(bufOff + i * B.SIZE + B.name, bufNames[i], true);
    v.setUint32(bufOff + i * B.SIZE + B.bytes, b.bytes, true);
  });
  out.set(names, strOff);
  return out;
}

/** Reads a graph written by encodeGraph. Bytes that are not one (wrong magic or version, tables past the end, unknown ops, bad indices) throw GraphError. */
export function decodeGraph(bytes: Uint8Array): DeviceGraph {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const H = GRAPH_HEADER, N = GRAPH_NODE, B = GRAPH_BUFFER;
  const bad = (where: string, problem: string): never => {
    throw new GraphError(`graph bytes: ${where}`, problem);
  };
  if (bytes.byteLength < H.SIZE) bad("header", `${bytes.byteLength} bytes, fewer than the ${H.SIZE}-byte header`);
  const u32 = (at: number) => v.getUint32(at, true), u16 = (at: number) => v.getUint16(at, true);
  if (u32(H.magic) !== GRAPH_MAGIC) bad("header.magic", `0x${u32(H.magic).toString(16)} is not 0x${GRAPH_MAGIC.toString(16)}: not a menic graph`);
  if (u16(H.version) !== GRAPH_VERSION) bad("header.version", `version ${u16(H.version)}; this reader knows ${GRAPH_VERSION}`);
  const total = u32(H.bytes);
  if (total > bytes.byteLength) bad("header.bytes", `says ${total} bytes, only ${bytes.byteLength} given`);
  const table = (what: string, off: number, count: number, size: number) => {
    if (off + count * size > total) bad(`header.${what}`, `the table [${off}, ${off + count * size}) runs past the graph's ${total} bytes`);
  };
  const nNodes = u32(H.nodes), nDeps = u32(H.deps), nBufs = u32(H.buffers);
  const nodeOff = u32(H.node_off), depOff = u32(H.dep_off), bufOff = u32(H.buf_off), strOff = u32(H.str_off), strBytes = u32(H.str_bytes);
  table("node_off", nodeOff, nNodes, N.SIZE);
  table("dep_off", depOff, nDeps, 4);
  table("buf_off", bufOff, nBufs, B.SIZE);
  table("str_off", strOff, strBytes, 1);
  const dec = new TextDecoder("utf-8", { fatal: true });
  const str = (off: number, where: string): string => {
    if (off >= strBytes) bad(where, `name offset ${off} is outside the names (${strBytes} bytes)`);
    const end = bytes.indexOf(0, strOff + off);
    if (end < 0 || end >= strOff + strBytes) bad(where, "name is not NUL-terminated within the names");
    try {
      return dec.decode(bytes.subarray(strOff + off, end));
    } catch {
      return bad(where, "name is not UTF-8");
    }
  };
  const buffers = Array.from({ length: nBufs }, (_, i) => ({ name: str(u32(bufOff + i * B.SIZE + B.name), `buffers[${i}].name`), bytes: u32(bufOff + i * B.SIZE + B.bytes) }));
  const ref = (at: number, where: string): BufferRef => {
    const b = u32(at);
    if (b >= nBufs) bad(where, `buffer index ${b} is out of range (${nBufs} buffers)`);
    return { buffer: buffers[b].name, offset: u32(at + 4) };
  };
  const opNames = Object.fromEntries(Object.entries(GRAPH_OP_CODE).map(([k, c]) => [c, k])) as Record<number, (typeof GRAPH_OPS)[number]>;
  const dtypeNames = Object.fromEntries(Object.entries(DTYPES).map(([k, c]) => [c, k])) as Record<number, DtypeName>;
  const redopNames = Object.fromEntries(Object.entries(REDOPS).map(([k, c]) => [c, k])) as Record<number, RedopName>;
  const nodes: GraphNode[] = [];
  for (let i = 0; i < nNodes; i++) {
    const at = nodeOff + i * N.SIZE, w = `nodes[${i}]`;
    const op = opNames[bytes[at + N.op]] ?? bad(`${w}.op`, `unknown op ${bytes[at + N.op]}`);
    const nd = u16(at + N.ndeps), first = u32(at + N.deps);
    if (first + nd > nDeps) bad(`${w}.deps`, `[${first}, ${first + nd}) runs past the ${nDeps} dependency entries`);
    const deps = Array.from({ length: nd }, (_, k) => u32(depOff + 4 * (first + k)));
    const nameAt = u32(at + N.name);
    const base = { engine: bytes[at + N.engine], deps, ...(nameAt === GRAPH_NO_NAME ? {} : { name: str(nameAt, `${w}.name`) }) };
    const nsrc = bytes[at + N.nsrc];
    if (nsrc > GRAPH_MAX_SOURCES) bad(`${w}.nsrc`, `${nsrc} sources, at most ${GRAPH_MAX_SOURCES}`);
    const srcs = Array.from({ length: nsrc }, (_, k) => ref(at + N.src_buf + k * GRAPH_NODE_STRIDE.src_buf, `${w}.src[${k}]`));
    const one = (): BufferRef => srcs[0] ?? bad(`${w}.nsrc`, `a ${op} has one source, got ${nsrc}`);
    const dst = () => ref(at + N.dst_buf, `${w}.dst`);
    const remote = { peer: u16(at + N.peer), stream: u16(at + N.stream) };
    const nbytes = u32(at + N.bytes);
    switch (op) {
      case "send": nodes.push({ op, ...base, ...remote, src: one(), bytes: nbytes }); break;
      case "recv": nodes.push({ op, ...base, ...remote, ...(nbytes > 0 ? { dst: dst() } : {}), bytes: nbytes }); break;
      case "write": nodes.push({ op, ...base, ...remote, src: one(), dst: dst(), bytes: nbytes, notify: (bytes[at + N.flags] & GRAPH_FLAG.NOTIFY) !== 0 }); break;
      case "read": nodes.push({ op, ...base, ...remote, src: one(), dst: dst(), bytes: nbytes }); break;
      case "reduce": {
        const dtype = dtypeNames[bytes[at + N.dtype]] ?? bad(`${w}.dtype`, `unknown dtype ${bytes[at + N.dtype]}`);
        const redop = redopNames[bytes[at + N.redop]] ?? bad(`${w}.redop`, `unknown reduce op ${bytes[at + N.redop]}`);
        nodes.push({ op, ...base, dtype, redop, srcs, dst: dst(), bytes: nbytes });
        break;
      }
      case "copy": nodes.push({ op, ...base, src: one(), dst: dst(), bytes: nbytes }); break;
      case "wait":
      case "signal": nodes.push({ op, ...base, sem: u32(at + N.sem), value: u32(at + N.value) }); break;
    }
  }
  return {
    name: str(0, "name"), device: u16(H.device), devices: u16(H.devices), engines: u16(H.engines),
    buffers, semaphores: u32(H.semaphores), nodes,
  };
}

/** The program whose ranks these are (one per device, any order): they must agree on everything but their nodes. */
export function programOf(graphs: DeviceGraph[]): GraphProgram {
  if (graphs.length === 0) throw new GraphError("graphs", "none given");
  const g0 = graphs[0];
  const ranks = new Array<{ nodes: GraphNode[] } | undefined>(g0.devices);
  for (const g of graphs) {
    const same = g.name === g0.name && g.devices === g0.devices && g.engines === g0.engines && g.semaphores === g0.semaphores &&
      JSON.stringify(g.buffers) === JSON.stringify(g0.buffers);
    if (!same) throw new GraphError(`graph of device ${g.device}`, `is not of the same program as device ${g0.device}'s (name, devices, engines, semaphores and buffers must agree)`);
    if (g.device >= g0.devices) throw new GraphError(`graph of device ${g.device}`, `device is out of range (${g0.devices} devices)`);
    if (ranks[g.device]) throw new GraphError(`graph of device ${g.device}`, "given twice");
    ranks[g.device] = { nodes: g.nodes };
  }
  const missing = ranks.findIndex((r) => r === undefined);
  if (missing >= 0 || ranks.length !== g0.devices) throw new GraphError(`graph of device ${missing}`, "missing");
  return { name: g0.name, devices: g0.devices, engines: g0.engines, buffers: g0.buffers, semaphores: g0.semaphores, ranks: ranks as { nodes: GraphNode[] }[] };
}
