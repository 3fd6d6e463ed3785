// Imports a collective written in MSCCL's XML algorithm format (the files msccl-tools writes and
// the MSCCL executors of MSCCL and RCCL run) as a program of graphs (docs/graph.md, "Importing
// MSCCL algorithms"). Two steps: parseMscclXml reads the XML into the algorithm as it stands
// (every element and attribute checked, nothing sized yet); importMsccl sizes its chunks from the
// collective's byte count and maps it onto the graph model. What cannot be mapped is refused with
// a GraphError naming the gpu, threadblock and step; the program is then validated and checked for
// data races, so an import runs as MSCCL would or is refused, never silently different.
//
// The mapping, in short:
// - a threadblock is an engine (the same engine on both ends of each connection, since a message
//   meets its receive on the same engine: validate.ts), its channel the stream;
// - the input, output and scratch buffers are buffers "in", "out" and "scratch", a chunk
//   (count x multiplier / nchunksperloop elements) a place in them; received data that is reduced
//   lands first in a slot of its own in buffer "rtmp";
// - a step is one to three nodes (s: send; r: recv; rcs: recv, send; rrs: recv, reduce, send;
//   rrc: recv, reduce; rrcs: recv, reduce, send; cpy: copy; re: reduce, a run of them fused into
//   one of up to 8 sources as MSCCL fuses them; nop: none);
// - MSCCL's order — each threadblock's steps in sequence, a step after its depid/deps step, a
//   receive after the send it takes — is kept where it matters: a node depends on every earlier
//   node (in that order) that touches the same bytes, one of them writing. So a send does not hold
//   back the steps after it (MSCCL's sends go into the peer's FIFO and return), and a receive that
//   lands in a slot of its own is posted at once.

import { XMLParser, XMLValidator } from "fast-xml-parser";
import {
  GraphError, DTYPE_BYTES,
  type BufferRef, type DtypeName, type GraphBuffer, type GraphNode, type GraphProgram, type RedopName,
} from "./types.js";
import { finish } from "./collectives.js";
import { validateProgram } from "./validate.js";
import { findRace } from "./races.js";
import { GRAPH_MAX_SOURCES } from "../generated/layouts.js";

/** MSCCL's step types: send, receive, the fused receive-reduce-copy-send family, local copy and reduce, and nop (a dependency only). */
export const MSCCL_STEP_TYPES = ["s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop"] as const;
/** One of {@link MSCCL_STEP_TYPES}. */
export type MscclStepType = (typeof MSCCL_STEP_TYPES)[number];
/** A buffer as MSCCL names it: `i` input, `o` output, `s` scratch. */
export type MscclBuffer = "i" | "o" | "s";
/** A collective an import maps, by its MSCCL name (`coll`). */
export type MscclCollective = "allreduce" | "allgather" | "reducescatter" | "alltoall";
/** The collectives an import maps: each MSCCL name (`coll`) and menic's. */
export const MSCCL_COLLECTIVES: Record<MscclCollective, "all-reduce" | "all-gather" | "reduce-scatter" | "all-to-all"> = { allreduce: "all-reduce", allgather: "all-gather", reducescatter: "reduce-scatter", alltoall: "all-to-all" };

/** One `<step>` of a threadblock. */
export interface MscclStep {
  /** its index in the threadblock (`s`: 0, 1, 2, ... in order) */
  s: number;
  /** What it does. */
  type: MscclStepType;
  /** The buffer it reads (`srcbuf`). */
  srcbuf: MscclBuffer;
  /** The first chunk it reads (`srcoff`; -1: none). */
  srcoff: number;
  /** The buffer it writes (`dstbuf`). */
  dstbuf: MscclBuffer;
  /** The first chunk it writes (`dstoff`; -1: none). */
  dstoff: number;
  /** Chunks it moves (`cnt`). */
  cnt: number;
  /** The threadblock of this gpu whose step it waits for (`depid`; -1: none). */
  depid: number;
  /** That step (`deps`; -1: none). */
  deps: number;
  /** Whether another threadblock waits for it (`hasdep`): MSCCL publishes progress only at such steps. */
  hasdep: boolean;
}

/** One `<tb>`: a threadblock, its peers and channel, its steps in order. */
export interface MscclThreadBlock {
  /** Its index on its gpu (`id`: 0, 1, 2, ...). */
  id: number;
  /** The gpu its sends go to (-1: none). */
  send: number;
  /** The gpu its receives come from (-1: none). */
  recv: number;
  /** Its channel (`chan`). */
  chan: number;
  /** Its steps, in order. */
  steps: MscclStep[];
}

/** One `<gpu>`: a rank, its buffers' sizes in chunks, its threadblocks. */
export interface MscclGpu {
  /** Its rank (`id`). */
  id: number;
  /** Chunks of its input buffer (`i_chunks`). */
  iChunks: number;
  /** Chunks of its output buffer (`o_chunks`). */
  oChunks: number;
  /** Chunks of its scratch buffer (`s_chunks`). */
  sChunks: number;
  /** Its threadblocks, by id. */
  tbs: MscclThreadBlock[];
}

/** An MSCCL algorithm as its XML says it (`<algo>`), checked but not yet sized. */
export interface MscclAlgorithm {
  /** Its name (`name`). */
  name: string;
  /** The collective (`coll`). */
  coll: MscclCollective;
  /** Ranks (`ngpus`). */
  ngpus: number;
  /** Channels (`nchannels`): every threadblock's `chan` is below it. */
  nchannels: number;
  /** Chunks per loop (`nchunksperloop`): a chunk is the collective's count x multiplier / nchunksperloop elements. */
  nchunksperloop: number;
  /** MSCCL's protocol (`proto`: Simple, LL, LL128): how its GPUs move data; here the transport does, and it is not used. */
  proto: "Simple" | "LL" | "LL128";
  /** Runs in place (`inplace`): input and output are one buffer. */
  inplace: boolean;
  /** Runs out of place (`outofplace`; absent: the opposite of `inplace`). */
  outofplace: boolean;
  /** The ranks, by id. */
  gpus: MscclGpu[];
}

// ---- parsing -------------------------------------------------------------------------------

type Attrs = Record<string, string>;
interface Element { tag: string; attrs: Attrs; children: Element[]; where: string }

const ATTRS = {
  algo: { required: ["name", "nchunksperloop", "nchannels", "ngpus", "proto", "coll", "inplace"], optional: ["outofplace", "minBytes", "maxBytes"] },
  gpu: { required: ["id", "i_chunks", "o_chunks", "s_chunks"], optional: [] },
  tb: { required: ["id", "send", "recv", "chan"], optional: [] },
  step: { required: ["s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep"], optional: [] },
} as const;
const CHILD: Record<string, string | undefined> = { algo: "gpu", gpu: "tb", tb: "step", step: undefined };

/** The document's elements (fast-xml-parser, order kept), text refused: MSCCL's format has none. */
function elements(text: string): Element {
  const ok = XMLValidator.validate(text, { allowBooleanAttributes: false });
  if (ok !== true) throw new GraphError(`MSCCL XML line ${ok.err.line}, column ${ok.err.col}`, `not well-formed: ${ok.err.msg}`);
  const parser = new XMLParser({ preserveOrder: true, ignoreAttributes: false, attributeNamePrefix: "", parseAttributeValue: false, parseTagValue: false, ignoreDeclaration: true, ignorePiTags: true, trimValues: true, processEntities: false });
  const tree = parser.parse(text) as Record<string, unknown>[];
  const convert = (raw: Record<string, unknown>, where: string): Element | null => {
    const tag = Object.keys(raw).find((k) => k !== ":@")!;
    if (tag === "#text") {
      if (String(raw[tag]).trim() !== "") throw new GraphError(where || "MSCCL XML", `text ${JSON.stringify(String(raw[tag]).slice(0, 40))} where only elements may be`);
      return null;
    }
    const attrs = (raw[":@"] ?? {}) as Attrs;
    const label = `${where ? `${where} ` : ""}<${tag}${attrs.id !== undefined ? ` id="${attrs.id}"` : attrs.s !== undefined ? ` s="${attrs.s}"` : ""}>`;
    const kids = (raw[tag] as Record<string, unknown>[]).map((c) => convert(c, label)).filter((c): c is Element => c !== null);
    return { tag, attrs, children: kids, where: label };
  };
  const top = tree.map((r) => convert(r, "")).filter((c): c is Element => c !== null);
  if (top.length !== 1 || top[0].tag !== "algo") throw new GraphError("MSCCL XML", `must hold one <algo> element, got ${top.map((t) => `<${t.tag}>`).join(", ") || "none"}`);
  return top[0];
}

/** Checks an element's attributes (all required ones, no unknown one) and its children's tag. */
function checkElement(e: Element): void {
  const spec = ATTRS[e.tag as keyof typeof ATTRS];
  const known: readonly string[] = [...spec.required, ...spec.optional];
  for (const k of Object.keys(e.attrs)) if (!known.includes(k)) throw new GraphError(e.where, `unknown attribute ${k} (known: ${known.join(", ")})`);
  for (const k of spec.required) if (e.attrs[k] === undefined) throw new GraphError(e.where, `has no ${k} attribute`);
  const child = CHILD[e.tag];
  for (const c of e.children) if (c.tag !== child) throw new GraphError(c.where, child ? `unknown element <${c.tag}> (only <${child}> belongs in <${e.tag}>)` : `unknown element <${c.tag}> (<${e.tag}> has no children)`);
}

function int(e: Element, k: string, min: number, max = 2 ** 31 - 1): number {
  const v = e.attrs[k];
  if (!/^-?\d+$/.test(v) || Number(v) < min || Number(v) > max) throw new GraphError(e.where, `${k}="${v}" must be an integer in [${min}, ${max}]`);
  return Number(v);
}

function oneOf<T extends string>(e: Element, k: string, names: readonly T[]): T {
  const v = e.attrs[k];
  if (!names.includes(v as T)) throw new GraphError(e.where, `${k}="${v}" must be one of ${names.join(", ")}`);
  return v as T;
}

/** Children numbered by attribute `k`, which must be 0, 1, 2, ... in document order. */
function inOrder(list: Element[], k: string, what: string): void {
  list.forEach((c, i) => {
    if (Number(c.attrs[k]) !== i) throw new GraphError(c.where, `${k}="${c.attrs[k]}": the ${what} must be numbered 0, 1, 2, ... in order (expected ${i})`);
  });
}

/**
 * Reads MSCCL's XML algorithm format into an {@link MscclAlgorithm}: well-formed XML with one
 * `<algo>` of `<gpu>`s of `<tb>`s of `<step>`s, every attribute the format requires present and in
 * range, none unknown, gpus 0 to ngpus - 1, threadblocks and steps numbered in order, peers and
 * channels in range, a step's dependency on an existing step of another threadblock that has
 * `hasdep="1"`. Throws a GraphError naming the element (`<algo> <gpu id="2"> <tb id="1"> <step s="4">`).
 */
export function parseMscclXml(text: string): MscclAlgorithm {
  const algo = elements(text);
  checkElement(algo);
  const ngpus = int(algo, "ngpus", 1, 65535), nchannels = int(algo, "nchannels", 1, 65535);
  const coll = oneOf(algo, "coll", Object.keys(MSCCL_COLLECTIVES) as MscclCollective[]);
  const inplace = int(algo, "inplace", 0, 1) === 1;
  const outofplace = algo.attrs.outofplace === undefined ? !inplace : int(algo, "outofplace", 0, 1) === 1;
  if (!inplace && !outofplace) throw new GraphError(algo.where, "runs neither in place nor out of place (inplace and outofplace both 0)");
  if (algo.attrs.minBytes !== undefined) int(algo, "minBytes", 0, Number.MAX_SAFE_INTEGER);
  if (algo.attrs.maxBytes !== undefined) int(algo, "maxBytes", 0, Number.MAX_SAFE_INTEGER);
  const gpus = algo.children.map((g) => {
    checkElement(g);
    return g;
  });
  if (gpus.length !== ngpus) throw new GraphError(algo.where, `has ${gpus.length} <gpu> elements for ngpus="${ngpus}"`);
  inOrder(gpus, "id", "gpus");
  const parsed: MscclAlgorithm = {
    name: algo.attrs.name, coll, ngpus, nchannels, nchunksperloop: int(algo, "nchunksperloop", 1),
    proto: oneOf(algo, "proto", ["Simple", "LL", "LL128"] as const), inplace, outofplace,
    gpus: gpus.map((g) => {
      const id = int(g, "id", 0, ngpus - 1);
      g.children.forEach(checkElement);
      inOrder(g.children, "id", "threadblocks");
      const peer = (tb: Element, k: string) => {
        const p = int(tb, k, -1, ngpus - 1);
        if (p === id) throw new GraphError(tb.where, `${k}="${p}" is this gpu itself`);
        return p;
      };
      return {
        id, iChunks: int(g, "i_chunks", 0), oChunks: int(g, "o_chunks", 0), sChunks: int(g, "s_chunks", 0),
        tbs: g.children.map((tb) => {
          tb.children.forEach(checkElement);
          inOrder(tb.children, "s", "steps");
          const buf = (st: Element, k: string) => oneOf(st, k, ["i", "o", "s"] as const);
          return {
            id: int(tb, "id", 0), send: peer(tb, "send"), recv: peer(tb, "recv"), chan: int(tb, "chan", 0, nchannels - 1),
            steps: tb.children.map((st): MscclStep => {
              const type = oneOf(st, "type", MSCCL_STEP_TYPES);
              const depid = int(st, "depid", -1), deps = int(st, "deps", -1);
              if ((depid < 0) !== (deps < 0)) throw new GraphError(st.where, `depid="${depid}" and deps="${deps}": both name a step, or both are -1`);
              return {
                s: int(st, "s", 0), type, srcbuf: buf(st, "srcbuf"), srcoff: int(st, "srcoff", -1), dstbuf: buf(st, "dstbuf"), dstoff: int(st, "dstoff", -1),
                cnt: int(st, "cnt", type === "nop" ? 0 : 1), depid, deps, hasdep: int(st, "hasdep", 0, 1) === 1,
              };
            }),
          };
        }),
      };
    }),
  };
  // dependencies: on an existing step of another threadblock of the same gpu, which publishes its progress
  for (const g of parsed.gpus) for (const tb of g.tbs) for (const st of tb.steps) {
    if (st.depid < 0) continue;
    const where = stepWhere(g.id, tb.id, st);
    if (st.depid === tb.id) throw new GraphError(where, `depends on its own threadblock (depid="${st.depid}"): its steps already run in order`);
    const other = g.tbs[st.depid];
    if (!other) throw new GraphError(where, `depends on tb ${st.depid}, which gpu ${g.id} does not have (it has ${g.tbs.length})`);
    const target = other.steps[st.deps];
    if (!target) throw new GraphError(where, `depends on tb ${st.depid} step ${st.deps}, which does not exist (tb ${st.depid} has ${other.steps.length} steps)`);
    if (!target.hasdep) throw new GraphError(where, `depends on tb ${st.depid} step ${st.deps}, which has hasdep="0": MSCCL publishes a threadblock's progress only at steps with hasdep="1"`);
  }
  return parsed;
}

/** "gpu 2 tb 1 step 4 (rrs)": a step, in the importer's messages. */
function stepName(gpu: number, tb: number, st: MscclStep): string {
  return `gpu ${gpu} tb ${tb} step ${st.s} (${st.type})`;
}

/** "MSCCL gpu 2 tb 1 step 4 (rrs)": where the importer's errors say a step is. */
function stepWhere(gpu: number, tb: number, st: MscclStep): string {
  return `MSCCL ${stepName(gpu, tb, st)}`;
}

// ---- mapping -------------------------------------------------------------------------------

/** How to size and map an MSCCL algorithm ({@link importMsccl}). */
export interface MscclImportOptions {
  /** Bytes per device, as NCCL counts them: all-reduce the vector, all-gather each device's input, reduce-scatter each device's result, all-to-all each block. */
  bytes: number;
  /** Element type. */
  dtype: DtypeName;
  /** Reduction of the reducing steps (default sum). */
  redop?: RedopName;
  /** Engines per device (default 16): the threadblocks must fit. */
  engines?: number;
}

/** An imported MSCCL algorithm: the program, and how it maps. */
export interface MscclImport {
  /** The program: one graph per gpu, its threadblocks as engines, ending with the final signal on semaphore 0. */
  program: GraphProgram;
  /** The collective, by menic's name. */
  collective: "all-reduce" | "all-gather" | "reduce-scatter" | "all-to-all";
  /** The buffer the devices' input goes into before the run (`in`, or `out` for an algorithm that runs only in place). */
  input: string;
  /** The buffer that holds the result (`out`). */
  output: string;
  /** Bytes of one chunk. */
  chunkBytes: number;
  /** engineOf[gpu][tb]: the engine running each threadblock. */
  engineOf: number[][];
}

const SENDS: ReadonlySet<MscclStepType> = new Set(["s", "rcs", "rrs", "rrcs"]);
const RECVS: ReadonlySet<MscclStepType> = new Set(["r", "rcs", "rrs", "rrc", "rrcs"]);

/** A node under construction: the node, its step, and the bytes it reads and writes (for dependencies by hazard). */
interface Draft {
  node: GraphNode;
  /** global step index (steps of all gpus, in order) */
  step: number;
  reads: BufferRef[];
  writes: BufferRef[];
  bytes: number;
}

/**
 * The chunk size of `a` for `o.bytes` per device, and its buffers' sizes: a chunk is MSCCL's
 * count x multiplier / nchunksperloop elements (the multiplier: ngpus for all-gather,
 * reduce-scatter and all-to-all), and every gpu's i_chunks and o_chunks must make up the
 * collective's input and output. Throws a GraphError saying which does not fit.
 */
/**
 * The bytes per device that a size of algorithm `a` must be a multiple of: its count (x ngpus but
 * for an all-reduce, MSCCL's size multiplier) cut into nchunksperloop chunks of whole `dtype`
 * elements. sizeChunks refuses any other size.
 */
export function mscclSizeUnit(a: MscclAlgorithm, dtype: MscclImportOptions["dtype"]): number {
  const mult = a.coll === "allreduce" ? 1 : a.ngpus;
  const gcd = (x: number, y: number): number => (y === 0 ? x : gcd(y, x % y));
  return DTYPE_BYTES[dtype] * (a.nchunksperloop / gcd(mult, a.nchunksperloop));
}

function sizeChunks(a: MscclAlgorithm, o: MscclImportOptions): { chunk: number; inBytes: number; outBytes: number; inPlace: boolean } {
  const N = a.ngpus, esize = DTYPE_BYTES[o.dtype];
  if (esize === undefined) throw new GraphError("dtype", `unknown dtype ${String(o.dtype)}`);
  const inPlace = !a.outofplace;
  if (inPlace && a.coll !== "allreduce") throw new GraphError("MSCCL <algo>", `an ${a.coll} that runs only in place is not supported (its input is a part of its output): give an algorithm with outofplace="1"`);
  if (!Number.isInteger(o.bytes) || o.bytes <= 0 || o.bytes % esize !== 0) throw new GraphError("bytes", `must be a positive multiple of the ${o.dtype} element size ${esize}, got ${o.bytes}`);
  const mult = a.coll === "allreduce" ? 1 : N;
  const elems = (o.bytes * mult) / esize;
  if (elems % a.nchunksperloop !== 0) throw new GraphError("MSCCL <algo>", `${o.bytes} bytes per device (${elems} ${o.dtype} elements${mult > 1 ? ` for ${N} gpus` : ""}) do not divide into nchunksperloop="${a.nchunksperloop}" chunks of whole elements`);
  const chunk = (elems / a.nchunksperloop) * esize;
  const inBytes = a.coll === "allreduce" || a.coll === "allgather" ? o.bytes : N * o.bytes;
  const outBytes = a.coll === "allreduce" || a.coll === "reducescatter" ? o.bytes : N * o.bytes;
  for (const g of a.gpus) {
    const check = (chunks: number, attr: string, want: number, what: string) => {
      if (chunks * chunk !== want) throw new GraphError(`MSCCL gpu ${g.id}`, `${attr}="${chunks}" chunks of ${chunk} bytes are ${chunks * chunk} bytes, but an ${a.coll} of ${o.bytes} bytes per device has ${want} bytes of ${what} (nchunksperloop="${a.nchunksperloop}")`);
    };
    check(g.iChunks, "i_chunks", inBytes, "input");
    check(g.oChunks, "o_chunks", outBytes, "output");
  }
  return { chunk, inBytes, outBytes, inPlace };
}

/**
 * The checks of {@link importMsccl} that need no graph built, cheap enough to run on every size of
 * a scenario before anything runs: the chunks fit the size, every send meets a receive, and the
 * threadblocks get engines. Throws a GraphError as importMsccl would.
 */
export function checkMsccl(a: MscclAlgorithm, o: MscclImportOptions): void {
  sizeChunks(a, o);
  connect(a);
  assignEngines(a, o.engines ?? 16);
}

/**
 * Maps an MSCCL algorithm (XML text, or what {@link parseMscclXml} read) onto a program of graphs
 * for `o.bytes` per device (see the module's header and docs/graph.md for the mapping). Throws a
 * GraphError naming the gpu, threadblock and step for what cannot be mapped: chunks that do not
 * divide the size or do not match the collective's buffers, places outside a buffer, a send with
 * no receive on the peer, steps that wait on each other in a cycle (MSCCL would hang), threadblocks
 * that cannot each have an engine of their own with both ends of every connection on the same
 * engine, and a program that deadlocks on the engines or races.
 */
export function importMsccl(xml: string | MscclAlgorithm, o: MscclImportOptions): MscclImport {
  const a = typeof xml === "string" ? parseMscclXml(xml) : xml;
  const N = a.ngpus, redop = o.redop ?? "sum";
  const { chunk, inBytes, outBytes, inPlace } = sizeChunks(a, o);
  const collective = MSCCL_COLLECTIVES[a.coll];
  const input = inPlace ? "out" : "in";
  const bufName: Record<MscclBuffer, string> = { i: input, o: "out", s: "scratch" };
  const conns = connect(a);
  const engineOf = assignEngines(a, o.engines ?? 16);

  // global step numbering, and MSCCL's order among steps: in sequence on a threadblock, after the
  // depid/deps step, a receive after the send it takes (every gpu's steps in one graph)
  const stepBase: number[][] = [];
  const steps: { g: number; tb: number; st: MscclStep }[] = [];
  for (const g of a.gpus) stepBase.push(g.tbs.map((tb) => {
    const base = steps.length;
    for (const st of tb.steps) steps.push({ g: g.id, tb: tb.id, st });
    return base;
  }));
  const preds: number[][] = steps.map(() => []);
  for (const g of a.gpus) for (const tb of g.tbs) tb.steps.forEach((st, k) => {
    const v = stepBase[g.id][tb.id] + k;
    if (k > 0) preds[v].push(v - 1);
    if (st.depid >= 0) preds[v].push(stepBase[g.id][st.depid] + st.deps);
  });
  for (const c of conns) c.pairs.forEach(([s, r]) => preds[stepBase[c.to][c.recvTb] + r].push(stepBase[c.from][c.sendTb] + s));
  const order = topological(steps.length, preds, (cycle) => {
    const names = cycle.map((v) => stepName(steps[v].g, steps[v].tb, steps[v].st));
    throw new GraphError(stepWhere(steps[cycle[0]].g, steps[cycle[0]].tb, steps[cycle[0]].st), `deadlock: the steps wait on each other in a cycle (each waits for the one after it: the step before it on its threadblock, its depid/deps step, or the send it receives): ${names.join(" -> ")} -> ${names[0]}`);
  });
  const before = reachability(steps.length, preds, order);

  // rtmp: a slot per receive that is reduced, so that it can be posted at once
  const rtmpAt = new Map<number, number>();
  let rtmpBytes = 0;
  for (const g of a.gpus) {
    let at = 0;
    for (const tb of g.tbs) for (const st of tb.steps) if (st.type === "rrs" || st.type === "rrc" || st.type === "rrcs") {
      rtmpAt.set(stepBase[g.id][tb.id] + st.s, at);
      at += st.cnt * chunk;
    }
    rtmpBytes = Math.max(rtmpBytes, at);
  }

  const ranks = a.gpus.map((g) => {
    const drafts: Draft[][] = g.tbs.map(() => []);
    for (const tb of g.tbs) for (const st of tb.steps) {
      const v = stepBase[g.id][tb.id] + st.s, where = stepWhere(g.id, tb.id, st);
      const chunks: Record<MscclBuffer, number> = { i: g.iChunks, o: g.oChunks, s: g.sChunks };
      const place = (b: MscclBuffer, off: number, field: string): BufferRef => {
        if (off < 0 || off + st.cnt > chunks[b]) throw new GraphError(where, `${field} chunks [${off}, ${off + st.cnt}) of buffer ${b} lie outside its ${chunks[b]} chunks (${b}_chunks="${chunks[b]}" on gpu ${g.id})`);
        return { buffer: bufName[b], offset: off * chunk };
      };
      const bytes = st.cnt * chunk, engine = engineOf[g.id][tb.id], stream = tb.chan;
      const name = (part: string) => `tb${tb.id}.s${st.s}.${st.type}${part ? `.${part}` : ""}`;
      const add = (node: GraphNode, reads: BufferRef[], writes: BufferRef[]) => drafts[tb.id].push({ node, step: v, reads, writes, bytes });
      const src = () => place(st.srcbuf, st.srcoff, "srcbuf/srcoff"), dst = () => place(st.dstbuf, st.dstoff, "dstbuf/dstoff");
      const send = (from: BufferRef) => add({ op: "send", name: name("send"), engine, peer: tb.send, stream, src: from, bytes, deps: [] }, [from], []);
      const recv = (into: BufferRef, part: string) => add({ op: "recv", name: name(part), engine, peer: tb.recv, stream, dst: into, bytes, deps: [] }, [], [into]);
      /** a reduction, or `fused` (the node of the re step before) taking one more source */
      const reduce = (srcs: BufferRef[], into: BufferRef, fused?: Draft) => {
        for (const s of srcs) if (s.buffer === into.buffer && s.offset !== into.offset && Math.abs(s.offset - into.offset) < bytes)
          throw new GraphError(where, "its source and destination chunks partly overlap: the reduction block takes a destination that is one of the sources or apart from them");
        if (fused && fused.node.op === "reduce") {
          fused.node.srcs = srcs;
          fused.node.name = `${fused.node.name}+s${st.s}`;
          fused.reads = srcs;
          return;
        }
        add({ op: "reduce", name: name("reduce"), engine, dtype: o.dtype, redop, srcs, dst: into, bytes, deps: [] }, srcs, [into]);
      };
      const slot = (): BufferRef => ({ buffer: "rtmp", offset: rtmpAt.get(v)! });
      switch (st.type) {
        case "s": send(src()); break;
        case "r": recv(dst(), "recv"); break;
        case "rcs": { const d = dst(); recv(d, "recv"); send(d); break; }
        case "rrs": { const t = slot(); recv(t, "recv"); reduce([src(), t], t); send(t); break; }
        case "rrc": { const t = slot(); recv(t, "recv"); reduce([src(), t], dst()); break; }
        case "rrcs": { const t = slot(), d = dst(); recv(t, "recv"); reduce([src(), t], d); send(d); break; }
        case "cpy": {
          const s = src(), d = dst();
          if (s.buffer === d.buffer && Math.abs(s.offset - d.offset) < bytes) throw new GraphError(where, "copies between overlapping chunks");
          add({ op: "copy", name: name(""), engine, src: s, dst: d, bytes, deps: [] }, [s], [d]);
          break;
        }
        case "re": {
          const d = dst(), from = src(), last = drafts[tb.id][drafts[tb.id].length - 1];
          // MSCCL fuses a run of re steps into one reduction: same destination, same source buffer,
          // no dependency of its own, the one before published to nobody (hasdep="0")
          const prev = st.s > 0 ? tb.steps[st.s - 1] : undefined;
          if (prev?.type === "re" && !prev.hasdep && st.depid < 0 && prev.dstbuf === st.dstbuf && prev.dstoff === st.dstoff && prev.srcbuf === st.srcbuf && prev.cnt === st.cnt
            && last?.node.op === "reduce" && last.node.srcs.length < GRAPH_MAX_SOURCES) {
            reduce([...last.node.srcs, from], d, last);
            break;
          }
          reduce([d, from], d);
          break;
        }
        case "nop": break;
      }
    }
    return drafts;
  });

  const nodesOf = ranks.map((drafts) => hazardDeps(drafts, before));
  const program: GraphProgram = {
    name: a.name, devices: N, engines: Math.max(1, ...engineOf.flat().map((e) => e + 1)),
    buffers: [
      ...(inPlace ? [] : [{ name: "in", bytes: inBytes }]), { name: "out", bytes: outBytes },
      ...(a.gpus.some((g) => g.sChunks > 0) ? [{ name: "scratch", bytes: Math.max(...a.gpus.map((g) => g.sChunks)) * chunk }] : []),
      ...(rtmpBytes > 0 ? [{ name: "rtmp", bytes: rtmpBytes }] : []),
    ] satisfies GraphBuffer[],
    semaphores: 2,
    ranks: nodesOf.map((nodes) => {
      finish(nodes);
      return { nodes };
    }),
  };
  try {
    const race = findRace(program, validateProgram(program));
    if (race) throw race;
  } catch (e) {
    if (e instanceof GraphError) throw new GraphError(`MSCCL "${a.name}" as graphs`, `${e.message} (node names: tb<threadblock>.s<step>.<type>; ranks are gpus)`);
    throw e;
  }
  return { program, collective, input, output: "out", chunkBytes: chunk, engineOf };
}

/** A connection: the threadblock of gpu `from` sending to `to` on a channel, the one receiving it there, and their steps paired in order ([send step, receive step]). */
interface Connection { from: number; sendTb: number; to: number; recvTb: number; chan: number; pairs: [number, number][] }

const times = (n: number) => `${n} time${n === 1 ? "" : "s"}`;

/** Pairs every connection's sends with its receives, in order, with the same chunk counts. */
function connect(a: MscclAlgorithm): Connection[] {
  const conns: Connection[] = [];
  const receivers = new Map<string, number>();
  for (const g of a.gpus) for (const tb of g.tbs) {
    if (!tb.steps.some((st) => RECVS.has(st.type))) continue;
    if (tb.recv < 0) throw new GraphError(stepWhere(g.id, tb.id, tb.steps.find((st) => RECVS.has(st.type))!), `receives, but tb ${tb.id} has no recv peer (recv="-1")`);
    const k = `${tb.recv}>${g.id}/${tb.chan}`;
    if (receivers.has(k)) throw new GraphError(`MSCCL gpu ${g.id} tb ${tb.id}`, `tb ${receivers.get(k)} of gpu ${g.id} receives from gpu ${tb.recv} on channel ${tb.chan} too: a connection has one threadblock at each end`);
    receivers.set(k, tb.id);
  }
  const senders = new Set<string>();
  for (const g of a.gpus) for (const tb of g.tbs) {
    const sends = tb.steps.filter((st) => SENDS.has(st.type));
    if (sends.length === 0) continue;
    if (tb.send < 0) throw new GraphError(stepWhere(g.id, tb.id, sends[0]), `sends, but tb ${tb.id} has no send peer (send="-1")`);
    const k = `${g.id}>${tb.send}/${tb.chan}`;
    if (senders.has(k)) throw new GraphError(`MSCCL gpu ${g.id} tb ${tb.id}`, `another threadblock of gpu ${g.id} sends to gpu ${tb.send} on channel ${tb.chan} too: a connection has one threadblock at each end`);
    senders.add(k);
    const r = receivers.get(k);
    if (r === undefined) throw new GraphError(stepWhere(g.id, tb.id, sends[0]), `sends to gpu ${tb.send} on channel ${tb.chan}, where no threadblock receives from gpu ${g.id} on that channel`);
    const rtb = a.gpus[tb.send].tbs[r];
    const recvs = rtb.steps.filter((st) => RECVS.has(st.type));
    const n = Math.min(sends.length, recvs.length);
    for (let i = 0; i < n; i++) if (sends[i].cnt !== recvs[i].cnt)
      throw new GraphError(stepWhere(g.id, tb.id, sends[i]), `sends ${sends[i].cnt} chunks, but the receive it meets, ${stepName(tb.send, r, recvs[i])}, takes ${recvs[i].cnt}`);
    if (sends.length !== recvs.length) {
      const extra = sends.length > recvs.length ? stepWhere(g.id, tb.id, sends[n]) : stepWhere(tb.send, r, recvs[n]);
      throw new GraphError(extra, `gpu ${g.id} tb ${tb.id} sends ${times(sends.length)} to gpu ${tb.send} on channel ${tb.chan}, and gpu ${tb.send} tb ${r} receives ${times(recvs.length)}: this one has no partner`);
    }
    conns.push({ from: g.id, sendTb: tb.id, to: tb.send, recvTb: r, chan: tb.chan, pairs: sends.map((s, i) => [s.s, recvs[i].s]) });
  }
  for (const g of a.gpus) for (const tb of g.tbs) {
    const first = tb.steps.find((st) => RECVS.has(st.type));
    if (first && !senders.has(`${tb.recv}>${g.id}/${tb.chan}`)) throw new GraphError(stepWhere(g.id, tb.id, first), `receives from gpu ${tb.recv} on channel ${tb.chan}, which sends nothing to gpu ${g.id} on that channel`);
  }
  return conns;
}

/**
 * An engine per threadblock: both ends of a connection on the same engine (a message meets its
 * receive there), the threadblocks of a gpu on different engines. The connections join
 * threadblocks into groups that must share an engine; groups that meet on a gpu get different
 * engines (greedy colouring, largest groups first).
 */
function assignEngines(a: MscclAlgorithm, engines: number): number[][] {
  const base: number[] = [];
  let n = 0;
  for (const g of a.gpus) {
    base.push(n);
    n += g.tbs.length;
  }
  const parent = Array.from({ length: n }, (_, i) => i);
  const find = (x: number): number => (parent[x] === x ? x : (parent[x] = find(parent[x])));
  for (const g of a.gpus) for (const tb of g.tbs) {
    if (tb.send < 0 || !tb.steps.some((st) => SENDS.has(st.type))) continue;
    const peer = a.gpus[tb.send].tbs.find((t) => t.recv === g.id && t.chan === tb.chan && t.steps.some((st) => RECVS.has(st.type)));
    if (peer) parent[find(base[g.id] + tb.id)] = find(base[tb.send] + peer.id);
  }
  const groups = new Map<number, { gpu: number; tb: number }[]>();
  a.gpus.forEach((g) => g.tbs.forEach((tb) => {
    const r = find(base[g.id] + tb.id);
    const list = groups.get(r) ?? [];
    const twin = list.find((m) => m.gpu === g.id);
    if (twin) throw new GraphError(`MSCCL gpu ${g.id} tb ${tb.id}`, `would need the engine of tb ${twin.tb} of the same gpu: their connections join them (a message meets its receive on the same engine here, and each threadblock needs an engine of its own); split the threadblocks so that no chain of connections comes back to another threadblock of a gpu`);
    list.push({ gpu: g.id, tb: tb.id });
    groups.set(r, list);
  }));
  const engineOf = a.gpus.map((g) => g.tbs.map(() => -1));
  const used = a.gpus.map(() => new Set<number>());
  const sorted = [...groups.values()].sort((x, y) => y.length - x.length || x[0].gpu - y[0].gpu || x[0].tb - y[0].tb);
  for (const grp of sorted) {
    let e = 0;
    while (grp.some((m) => used[m.gpu].has(e))) e++;
    if (e >= engines) throw new GraphError(`MSCCL gpu ${grp[0].gpu} tb ${grp[0].tb}`, `needs engine ${e}, but the devices have ${engines} engines (threadblocks joined by connections share an engine, and a gpu's threadblocks each need their own)`);
    for (const m of grp) {
      engineOf[m.gpu][m.tb] = e;
      used[m.gpu].add(e);
    }
  }
  return engineOf;
}

/** Kahn's order of vertices with predecessors `preds`; on a cycle, `cycle` gets one (each vertex followed by a predecessor it waits for). */
function topological(n: number, preds: number[][], cycle: (c: number[]) => never): number[] {
  const succ: number[][] = Array.from({ length: n }, () => []);
  const indeg = new Int32Array(n);
  preds.forEach((ps, v) => ps.forEach((p) => {
    succ[p].push(v);
    indeg[v]++;
  }));
  const order: number[] = [];
  for (let v = 0; v < n; v++) if (indeg[v] === 0) order.push(v);
  for (let k = 0; k < order.length; k++) for (const s of succ[order[k]]) if (--indeg[s] === 0) order.push(s);
  if (order.length === n) return order;
  // walk back along predecessors still blocked until a vertex repeats
  let v = indeg.findIndex((d) => d > 0);
  const seen = new Map<number, number>(), path: number[] = [];
  while (!seen.has(v)) {
    seen.set(v, path.length);
    path.push(v);
    v = preds[v].find((p) => indeg[p] > 0)!;
  }
  return cycle(path.slice(seen.get(v)));
}

/** before(u, v): step u comes before step v in MSCCL's order (bitsets; n^2 / 8 bytes). */
function reachability(n: number, preds: number[][], order: number[]): (u: number, v: number) => boolean {
  const words = (n + 31) >>> 5;
  const anc = new Uint32Array(n * words);
  for (const v of order) {
    const row = v * words;
    for (const p of preds[v]) {
      anc[row + (p >>> 5)] |= 1 << (p & 31);
      const prow = p * words;
      for (let w = 0; w < words; w++) anc[row + w] |= anc[prow + w];
    }
  }
  return (u, v) => (anc[v * words + (u >>> 5)] & (1 << (u & 31))) !== 0;
}

const overlaps = (x: BufferRef, xb: number, y: BufferRef, yb: number) => x.buffer === y.buffer && x.offset < y.offset + yb && y.offset < x.offset + xb;

/**
 * One gpu's nodes with their dependencies: a node depends on every node before it in MSCCL's order
 * (an earlier step, or earlier in the same step) that touches bytes it touches, one of the two
 * writing. Each engine's nodes are in step order, except that a receive moves up to just after the
 * last node of its engine it depends on, directly or through other engines, and after the receive
 * before it (receives meet messages in order): posted early, it is ready when its message comes.
 */
function hazardDeps(drafts: Draft[][], before: (u: number, v: number) => boolean): GraphNode[] {
  const all = drafts.flat();
  const pos = new Map<Draft, number>();
  for (const list of drafts) list.forEach((d, i) => pos.set(d, i));
  const conflict = (x: Draft, d: Draft) =>
    x.writes.some((w) => d.reads.some((r) => overlaps(w, x.bytes, r, d.bytes)) || d.writes.some((r) => overlaps(w, x.bytes, r, d.bytes)))
    || d.writes.some((w) => x.reads.some((r) => overlaps(w, d.bytes, r, x.bytes)));
  const depsOf = new Map<Draft, Draft[]>();
  for (const d of all) {
    depsOf.set(d, all.filter((x) => x !== d && (x.step === d.step ? pos.get(x)! < pos.get(d)! : before(x.step, d.step)) && conflict(x, d)));
  }
  // keep only the dependencies no other one already implies
  const ancestors = new Map<Draft, Set<Draft>>();
  const ancestorsOf = (d: Draft): Set<Draft> => {
    let s = ancestors.get(d);
    if (s) return s;
    s = new Set<Draft>();
    for (const x of depsOf.get(d)!) {
      s.add(x);
      for (const y of ancestorsOf(x)) s.add(y);
    }
    ancestors.set(d, s);
    return s;
  };
  for (const d of all) ancestorsOf(d);
  for (const d of all) {
    const ds = depsOf.get(d)!;
    depsOf.set(d, ds.filter((x) => !ds.some((y) => y !== x && ancestors.get(y)!.has(x))));
  }
  // per engine (threadblock), the order its nodes are posted in
  const posted = drafts.map((list) => {
    const out: Draft[] = [];
    const mine = new Set(list);
    let lastRecv = -1;
    for (const d of list) {
      if (d.node.op !== "recv") {
        out.push(d);
        continue;
      }
      // after the latest node of this engine it depends on, directly or through other engines
      let at = lastRecv;
      for (const x of ancestors.get(d)!) if (mine.has(x)) at = Math.max(at, out.indexOf(x));
      out.splice(at + 1, 0, d);
      lastRecv = at + 1;
    }
    return out;
  });
  // node order in the graph: engine by engine, each in posting order
  const index = new Map<Draft, number>();
  const nodes: GraphNode[] = [];
  for (const out of posted) for (const d of out) index.set(d, nodes.push(d.node) - 1);
  for (const out of posted) for (const d of out) d.node.deps = depsOf.get(d)!.map((x) => index.get(x)!);
  return nodes;
}
