// The JSON form of a collective's graphs (docs/graph.md): read with every field checked, and
// written in one canonical form, so that reading what was written gives the same program and
// writing what was read gives the canonical text. Structure only here; what the graph means
// (ranges, buffers, matching, deadlock) is validate.ts's.

import {
  GraphError, GRAPH_OPS, DTYPES, REDOPS,
  type BufferRef, type GraphBuffer, type GraphNode, type GraphProgram, type GraphOpName, type DtypeName, type RedopName,
} from "./types.js";

/** The format tag of the JSON form. */
export const GRAPH_FORMAT = "menic-graph";
export const GRAPH_JSON_VERSION = 1;

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

function obj(v: unknown, where: string): Obj {
  if (!isObj(v)) throw new GraphError(where, `must be an object, got ${describe(v)}`);
  return v;
}

function describe(v: unknown): string {
  if (Array.isArray(v)) return "an array";
  if (v === null) return "null";
  return typeof v === "string" ? JSON.stringify(v) : typeof v === "object" ? "an object" : String(v);
}

function uint(v: unknown, where: string, max = 0xffff_ffff): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > max) throw new GraphError(where, `must be an integer in [0, ${max}], got ${describe(v)}`);
  return v;
}

function str(v: unknown, where: string): string {
  if (typeof v !== "string" || v.length === 0) throw new GraphError(where, `must be a non-empty string, got ${describe(v)}`);
  if (v.includes("\0")) throw new GraphError(where, "must not contain NUL");
  return v;
}

function oneOf<T extends string>(v: unknown, names: readonly T[], where: string): T {
  if (typeof v !== "string" || !names.includes(v as T)) throw new GraphError(where, `must be one of ${names.join(", ")}; got ${describe(v)}`);
  return v as T;
}

/** Refuses fields the form does not have (a misspelt optional field would otherwise vanish). */
function only(o: Obj, allowed: readonly string[], where: string): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) throw new GraphError(`${where}.${k}`, `unknown field (allowed here: ${allowed.join(", ")})`);
}

function ref(v: unknown, where: string): BufferRef {
  const o = obj(v, where);
  only(o, ["buffer", "offset"], where);
  return { buffer: str(o.buffer, `${where}.buffer`), offset: o.offset === undefined ? 0 : uint(o.offset, `${where}.offset`) };
}

const COMMON = ["op", "name", "engine", "deps"];
/** The fields of each op, beyond COMMON. */
const FIELDS: Record<GraphOpName, readonly string[]> = {
  send: ["peer", "stream", "src", "bytes"],
  recv: ["peer", "stream", "dst", "bytes"],
  write: ["peer", "stream", "src", "dst", "bytes", "notify"],
  read: ["peer", "stream", "src", "dst", "bytes"],
  reduce: ["dtype", "redop", "srcs", "dst", "bytes"],
  copy: ["src", "dst", "bytes"],
  wait: ["sem", "value"],
  signal: ["sem", "value"],
};

function node(v: unknown, where: string): GraphNode {
  const o = obj(v, where);
  const op = oneOf(o.op, GRAPH_OPS, `${where}.op`);
  only(o, [...COMMON, ...FIELDS[op]], where);
  const engine = uint(o.engine, `${where}.engine`, 255);
  const depsRaw = o.deps === undefined ? [] : o.deps;
  if (!Array.isArray(depsRaw)) throw new GraphError(`${where}.deps`, `must be an array of node indices, got ${describe(depsRaw)}`);
  const deps = depsRaw.map((d, i) => uint(d, `${where}.deps[${i}]`));
  const base = { engine, deps, ...(o.name === undefined ? {} : { name: str(o.name, `${where}.name`) }) };
  const bytes = () => uint(o.bytes, `${where}.bytes`);
  const peer = () => ({ peer: uint(o.peer, `${where}.peer`, 0xfffe), stream: o.stream === undefined ? 0 : uint(o.stream, `${where}.stream`, 0xffff) });
  switch (op) {
    case "send": return { op, ...base, ...peer(), src: ref(o.src, `${where}.src`), bytes: bytes() };
    case "recv": return { op, ...base, ...peer(), ...(o.dst === undefined ? {} : { dst: ref(o.dst, `${where}.dst`) }), bytes: bytes() };
    case "write": {
      if (o.notify !== undefined && typeof o.notify !== "boolean") throw new GraphError(`${where}.notify`, `must be true or false, got ${describe(o.notify)}`);
      return { op, ...base, ...peer(), src: ref(o.src, `${where}.src`), dst: ref(o.dst, `${where}.dst`), bytes: bytes(), notify: o.notify === true };
    }
    case "read": return { op, ...base, ...peer(), src: ref(o.src, `${where}.src`), dst: ref(o.dst, `${where}.dst`), bytes: bytes() };
    case "reduce": {
      if (!Array.isArray(o.srcs)) throw new GraphError(`${where}.srcs`, `must be an array of buffer places, got ${describe(o.srcs)}`);
      return {
        op, ...base, dtype: oneOf(o.dtype, Object.keys(DTYPES) as DtypeName[], `${where}.dtype`), redop: oneOf(o.redop, Object.keys(REDOPS) as RedopName[], `${where}.redop`),
        srcs: o.srcs.map((s, i) => ref(s, `${where}.srcs[${i}]`)), dst: ref(o.dst, `${where}.dst`), bytes: bytes(),
      };
    }
    case "copy": return { op, ...base, src: ref(o.src, `${where}.src`), dst: ref(o.dst, `${where}.dst`), bytes: bytes() };
    case "wait":
    case "signal": return { op, ...base, sem: uint(o.sem, `${where}.sem`), value: uint(o.value, `${where}.value`) };
  }
}

/**
 * Reads the JSON form (text or a parsed value) into a program, checking its structure: every
 * field present, of its type and range, and no unknown field. Throws GraphError naming the
 * path. Does not check what the graph means: see validateProgram.
 */
export function readGraphJson(input: string | unknown): GraphProgram {
  let v = input;
  if (typeof input === "string") {
    try {
      v = JSON.parse(input);
    } catch (e) {
      throw new GraphError("(input)", `not JSON: ${(e as Error).message}`);
    }
  }
  const o = obj(v, "(graph)");
  only(o, ["format", "version", "name", "devices", "engines", "buffers", "semaphores", "ranks"], "(graph)");
  if (o.format !== GRAPH_FORMAT) throw new GraphError("format", `must be "${GRAPH_FORMAT}", got ${describe(o.format)}`);
  if (o.version !== GRAPH_JSON_VERSION) throw new GraphError("version", `must be ${GRAPH_JSON_VERSION}, got ${describe(o.version)}`);
  if (!Array.isArray(o.buffers)) throw new GraphError("buffers", `must be an array, got ${describe(o.buffers)}`);
  const buffers: GraphBuffer[] = o.buffers.map((b, i) => {
    const w = `buffers[${i}]`, bo = obj(b, w);
    only(bo, ["name", "bytes"], w);
    return { name: str(bo.name, `${w}.name`), bytes: uint(bo.bytes, `${w}.bytes`) };
  });
  if (!Array.isArray(o.ranks)) throw new GraphError("ranks", `must be an array (one graph per device), got ${describe(o.ranks)}`);
  const ranks = o.ranks.map((r, i) => {
    const w = `ranks[${i}]`, ro = obj(r, w);
    only(ro, ["nodes"], w);
    if (!Array.isArray(ro.nodes)) throw new GraphError(`${w}.nodes`, `must be an array, got ${describe(ro.nodes)}`);
    return { nodes: ro.nodes.map((n, k) => node(n, `${w}.nodes[${k}]`)) };
  });
  return {
    name: str(o.name, "name"), devices: uint(o.devices, "devices", 0xfffe), engines: uint(o.engines, "engines", 256),
    buffers, semaphores: o.semaphores === undefined ? 0 : uint(o.semaphores, "semaphores"), ranks,
  };
}

function refJson(r: BufferRef): Obj {
  return { buffer: r.buffer, offset: r.offset };
}

/** A node in canonical form: fields in a fixed order, defaults (notify false, no name) left out. */
function nodeJson(n: GraphNode): Obj {
  const o: Obj = { op: n.op };
  if (n.name !== undefined) o.name = n.name;
  o.engine = n.engine;
  switch (n.op) {
    case "send": Object.assign(o, { peer: n.peer, stream: n.stream, src: refJson(n.src), bytes: n.bytes }); break;
    case "recv": Object.assign(o, { peer: n.peer, stream: n.stream }, n.dst ? { dst: refJson(n.dst) } : {}, { bytes: n.bytes }); break;
    case "write": Object.assign(o, { peer: n.peer, stream: n.stream, src: refJson(n.src), dst: refJson(n.dst), bytes: n.bytes }, n.notify ? { notify: true } : {}); break;
    case "read": Object.assign(o, { peer: n.peer, stream: n.stream, src: refJson(n.src), dst: refJson(n.dst), bytes: n.bytes }); break;
    case "reduce": Object.assign(o, { dtype: n.dtype, redop: n.redop, srcs: n.srcs.map(refJson), dst: refJson(n.dst), bytes: n.bytes }); break;
    case "copy": Object.assign(o, { src: refJson(n.src), dst: refJson(n.dst), bytes: n.bytes }); break;
    case "wait":
    case "signal": Object.assign(o, { sem: n.sem, value: n.value }); break;
  }
  o.deps = [...n.deps];
  return o;
}

/** The program in the canonical JSON form (a value; JSON.stringify it, or use writeGraphText). */
export function graphJson(p: GraphProgram): Obj {
  return {
    format: GRAPH_FORMAT, version: GRAPH_JSON_VERSION, name: p.name, devices: p.devices, engines: p.engines,
    buffers: p.buffers.map((b) => ({ name: b.name, bytes: b.bytes })), semaphores: p.semaphores,
    ranks: p.ranks.map((r) => ({ nodes: r.nodes.map(nodeJson) })),
  };
}

/** A value on one line, with a space after each colon and comma. */
function oneLine(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(oneLine).join(", ")}]`;
  if (isObj(v)) return `{ ${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${oneLine(x)}`).join(", ")} }`;
  return JSON.stringify(v);
}

/** The canonical text: a buffer or a node per line, so that graphs read well and diff well. */
export function writeGraphText(p: GraphProgram): string {
  const { buffers, ranks, ...head } = graphJson(p);
  const list = (items: unknown[], indent: string) => items.map((x, i) => `${indent}${oneLine(x)}${i < items.length - 1 ? "," : ""}`);
  const lines = ["{", ...Object.entries(head).map(([k, v]) => `  ${JSON.stringify(k)}: ${oneLine(v)},`)];
  lines.push('  "buffers": [', ...list(buffers as unknown[], "    "), "  ],");
  const rs = ranks as { nodes: unknown[] }[];
  lines.push('  "ranks": [');
  rs.forEach((r, i) => lines.push('    { "nodes": [', ...list(r.nodes, "      "), `    ] }${i < rs.length - 1 ? "," : ""}`));
  lines.push("  ]", "}", "");
  return lines.join("\n");
}
