// The MSCCL XML importer (host/graph/msccl.ts, docs/graph.md "Importing MSCCL algorithms"): the
// shipped algorithms compute the collective (run by the reference executor, checked against plain
// arithmetic and against the compiled ring), and what cannot be mapped is refused with the message
// that names the gpu, threadblock and step.
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { importMsccl, parseMscclXml, allReduceRing, runReference, checkRaces, GraphError, type GraphProgram, type ReduceNode } from "../host/graph/index.js";

const RING = readFileSync("examples/msccl/ring-allreduce-8.xml", "utf8");
const ALLPAIRS = readFileSync("examples/msccl/allpairs-allreduce-8.xml", "utf8");

function inputsI32(devices: number, elems: number): Int32Array[] {
  return Array.from({ length: devices }, (_, d) => {
    let x = 0x9e3779b9 ^ (d * 0x85ebca6b);
    return Int32Array.from({ length: elems }, () => (x = (Math.imul(x, 1664525) + 1013904223) | 0));
  });
}
const bytesOf = (a: Int32Array | Float32Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const run = (p: GraphProgram, input: string, inputs: (Int32Array | Float32Array)[]) => runReference(p, (rank, name) => (name === input ? bytesOf(inputs[rank]) : undefined));

describe("importing MSCCL XML: the shipped algorithms", () => {
  it("parses the ring all-reduce as written: 8 gpus, 4 threadblocks of 15 steps each", () => {
    const a = parseMscclXml(RING);
    expect([a.name, a.coll, a.ngpus, a.nchannels, a.nchunksperloop, a.inplace, a.outofplace]).toEqual(["ring-allreduce-8x4", "allreduce", 8, 4, 32, false, true]);
    expect(a.gpus.map((g) => g.tbs.length)).toEqual(Array(8).fill(4));
    expect(a.gpus[3].tbs[2]).toMatchObject({ send: 4, recv: 2, chan: 2 });
    expect(a.gpus[3].tbs[2].steps.map((s) => s.type).join(" ")).toBe("s rrs rrs rrs rrs rrs rrs rrcs rcs rcs rcs rcs rcs rcs r");
  });

  for (const [name, xml] of [["ring", RING], ["all-pairs", ALLPAIRS]] as const) {
    it(`${name} all-reduce, i32 sum: every gpu ends with the wrapped sum of all inputs`, () => {
      const elems = 8 * 4 * 37;
      const im = importMsccl(xml, { bytes: elems * 4, dtype: "i32" });
      expect(im.collective).toBe("all-reduce");
      checkRaces(im.program);
      const ins = inputsI32(8, elems);
      const want = Int32Array.from({ length: elems }, (_, i) => ins.reduce((a, v) => (a + v[i]) | 0, 0));
      const r = run(im.program, im.input, ins);
      for (let d = 0; d < 8; d++) expect(new Int32Array(r.buffers[d].get(im.output)!.slice().buffer), `gpu ${d}`).toEqual(want);
      expect([...r.semaphores.map((s) => s[0])]).toEqual(Array(8).fill(1));
    });
  }

  it("the ring maps each threadblock to an engine and does the compiled ring's work: the same nodes per engine, the same f32 bits", () => {
    const bytes = 8 * 4 * 1024;
    const im = importMsccl(RING, { bytes, dtype: "f32" });
    expect(im.engineOf).toEqual(Array(8).fill([0, 1, 2, 3]));
    expect(im.chunkBytes).toBe(1024);
    const compiled = allReduceRing({ devices: 8, engines: 4, bytes, dtype: "f32" });
    const perEngine = (p: GraphProgram, e: number) => p.ranks[0].nodes.filter((n) => n.engine === e).map((n) => n.op).sort().join(",");
    for (let e = 0; e < 4; e++) expect(perEngine(im.program, e)).toBe(perEngine(compiled, e));
    const ins = Array.from({ length: 8 }, (_, d) => Float32Array.from({ length: bytes / 4 }, (_, i) => Math.sin(d * 1000 + i) * 100));
    const a = run(im.program, "in", ins), b = run(compiled, "in", ins);
    for (let d = 0; d < 8; d++) expect(a.buffers[d].get("out")).toEqual(b.buffers[d].get("out"));
  });

  it("the all-pairs algorithm: a threadblock per peer paired across gpus, and the reducer's nops become dependencies", () => {
    const im = importMsccl(ALLPAIRS, { bytes: 8 * 256, dtype: "f32" });
    // the pairs {r, p} colour the engines: both ends of each pair on one engine, a gpu's 8 threadblocks on 8 different engines
    for (let r = 0; r < 8; r++) {
      expect(new Set(im.engineOf[r]).size).toBe(8);
      im.engineOf[r].slice(0, 7).forEach((e, t) => {
        const p = t < r ? t : t + 1;
        expect(im.engineOf[p][r < p ? r : r - 1]).toBe(e);
      });
    }
    const nodes = im.program.ranks[2].nodes;
    const copy = nodes.findIndex((n) => n.op === "copy");
    // the copy of in to out touches nothing the receives into scratch do: the nops before it order nothing it needs
    expect(nodes[copy].deps).toEqual([]);
    // the seven re steps into out's chunk 2 are one reduction of 8 sources, as MSCCL fuses them; it waits for the
    // copy and the seven receives into scratch
    const reduces = nodes.filter((n) => n.op === "reduce");
    expect(reduces.map((n) => n.name)).toEqual(["tb7.s7.re.reduce+s8+s9+s10+s11+s12+s13"]);
    const fused = reduces[0] as ReduceNode;
    expect(fused.srcs).toEqual([{ buffer: "out", offset: 512 }, ...[0, 1, 3, 4, 5, 6, 7].map((p) => ({ buffer: "scratch", offset: 256 * p }))]);
    expect(fused.deps.map((d) => nodes[d].name).sort()).toEqual(["tb0.s1.r.recv", "tb1.s1.r.recv", "tb2.s1.r.recv", "tb3.s1.r.recv", "tb4.s1.r.recv", "tb5.s1.r.recv", "tb6.s1.r.recv", "tb7.s6.cpy"]);
    expect(im.program.buffers).toEqual([{ name: "in", bytes: 2048 }, { name: "out", bytes: 2048 }, { name: "scratch", bytes: 2048 }]);
  });
});

// A two-gpu all-reduce written by hand: gpu r sends the peer's chunk, receives its own chunk's
// other half and reduces it into out (rrc), sends that, receives the peer's result.
const step = (s: number, type: string, a: Record<string, string | number> = {}) =>
  `<step s="${s}" type="${type}" srcbuf="${a.srcbuf ?? "i"}" srcoff="${a.srcoff ?? -1}" dstbuf="${a.dstbuf ?? "o"}" dstoff="${a.dstoff ?? -1}" cnt="${a.cnt ?? 1}" depid="${a.depid ?? -1}" deps="${a.deps ?? -1}" hasdep="${a.hasdep ?? 0}"/>`;
const PAIR_STEPS = (r: number) => [step(0, "s", { srcoff: 1 - r }), step(1, "rrc", { srcoff: r, dstoff: r }), step(2, "s", { srcbuf: "o", srcoff: r }), step(3, "r", { dstoff: 1 - r })];
const gpu = (r: number, tbs: string, chunks = 'i_chunks="2" o_chunks="2" s_chunks="0"') => `<gpu id="${r}" ${chunks}>${tbs}</gpu>`;
const tb = (id: number, send: number, recv: number, steps: string[]) => `<tb id="${id}" send="${send}" recv="${recv}" chan="0">\n${steps.join("\n")}\n</tb>`;
const pair = (r: number, steps = PAIR_STEPS(r)) => gpu(r, tb(0, 1 - r, 1 - r, steps));
const algo = (gpus: string, head = 'nchunksperloop="2" ngpus="2"') => `<algo name="pair" proto="Simple" nchannels="1" ${head} coll="allreduce" inplace="0">\n${gpus}\n</algo>`;
const PAIR = algo(pair(0) + pair(1));
const refused = (xml: string, bytes = 64) => {
  try {
    importMsccl(xml, { bytes, dtype: "f32" });
  } catch (e) {
    expect(e).toBeInstanceOf(GraphError);
    return (e as Error).message;
  }
  throw new Error("imported");
};

describe("importing MSCCL XML: what cannot be mapped is refused, naming the place", () => {
  it("the hand-written pair imports, reduces, and ends with the final signal", () => {
    const im = importMsccl(PAIR, { bytes: 64, dtype: "i32" });
    const ins = [Int32Array.from({ length: 16 }, (_, i) => i), Int32Array.from({ length: 16 }, (_, i) => 100 * i)];
    const r = run(im.program, "in", ins);
    for (let d = 0; d < 2; d++) expect([...new Int32Array(r.buffers[d].get("out")!.slice().buffer)]).toEqual(Array.from({ length: 16 }, (_, i) => 101 * i));
    expect(im.program.ranks[0].nodes.map((n) => `${n.name} <- ${n.deps.join(",")}`)).toEqual([
      // the receive into its own slot moves up and waits for nothing; the send of the result waits for the reduction; the
      // receive into the peer's half of out waits for nothing either
      "tb0.s1.rrc.recv <- ", "tb0.s3.r.recv <- ", "tb0.s0.s.send <- ", "tb0.s1.rrc.reduce <- 0", "tb0.s2.s.send <- 3",
      "engine0.done <- 1,2,4", "all.done <- ", "done <- 6",
    ]);
  });

  it("an algorithm that runs only in place (inplace=\"1\", no outofplace) has one buffer, out, for its input and output", () => {
    const im = importMsccl(PAIR.replace('inplace="0"', 'inplace="1"'), { bytes: 64, dtype: "i32" });
    expect([im.input, im.output, im.program.buffers.map((b) => b.name)]).toEqual(["out", "out", ["out", "rtmp"]]);
    const ins = [Int32Array.from({ length: 16 }, (_, i) => i), Int32Array.from({ length: 16 }, (_, i) => 100 * i)];
    const r = run(im.program, "out", ins);
    for (let d = 0; d < 2; d++) expect([...new Int32Array(r.buffers[d].get("out")!.slice().buffer)]).toEqual(Array.from({ length: 16 }, (_, i) => 101 * i));
    // in place, the receive into the peer's half overwrites what the first send reads: it waits for that send
    const nodes = im.program.ranks[0].nodes, last = nodes.findIndex((n) => n.name === "tb0.s3.r.recv");
    expect(nodes[last].deps.map((d) => nodes[d].name)).toEqual(["tb0.s0.s.send"]);
    expect(refused(PAIR.replace('coll="allreduce" inplace="0"', 'coll="allgather" inplace="1"'))).toBe('MSCCL <algo>: an allgather that runs only in place is not supported (its input is a part of its output): give an algorithm with outofplace="1"');
  });

  it("XML that is not well-formed, with the line and column", () => {
    expect(refused(PAIR.replace("</tb></gpu><gpu", "</gpu><gpu"))).toBe("MSCCL XML line 7, column 1: not well-formed: Expected closing tag 'tb' (opened in line 2, col 52) instead of closing tag 'gpu'.");
    expect(refused("<algo name='x'/><algo name='y'/>")).toBe("MSCCL XML: must hold one <algo> element, got <algo>, <algo>");
    expect(refused(PAIR.replace("</algo>", "stray text</algo>"))).toBe('<algo>: text "stray text" where only elements may be');
  });

  it("unknown elements, attributes and step types, and missing attributes", () => {
    expect(refused(PAIR.replace('hasdep="0"/>', 'hasdep="0" foo="1"/>'))).toBe('<algo> <gpu id="0"> <tb id="0"> <step s="0">: unknown attribute foo (known: s, type, srcbuf, srcoff, dstbuf, dstoff, cnt, depid, deps, hasdep)');
    expect(refused(PAIR.replace('type="rrc"', 'type="rrx"'))).toBe('<algo> <gpu id="0"> <tb id="0"> <step s="1">: type="rrx" must be one of s, r, rcs, rrs, rrc, rrcs, cpy, re, nop');
    expect(refused(PAIR.replace("<tb ", "<block/><tb "))).toBe('<algo> <gpu id="0"> <block>: unknown element <block> (only <tb> belongs in <gpu>)');
    expect(refused(PAIR.replace(' chan="0"', ""))).toBe('<algo> <gpu id="0"> <tb id="0">: has no chan attribute');
    expect(refused(PAIR.replace('coll="allreduce"', 'coll="reduce"'))).toBe('<algo>: coll="reduce" must be one of allreduce, allgather, reducescatter, alltoall');
    expect(refused(PAIR.replace('srcbuf="i" srcoff="0"', 'srcbuf="x" srcoff="0"'))).toBe('<algo> <gpu id="0"> <tb id="0"> <step s="1">: srcbuf="x" must be one of i, o, s');
  });

  it("inconsistent chunks: a size that does not divide, buffers that do not make up the collective's, places outside a buffer", () => {
    expect(refused(PAIR, 20)).toBe('MSCCL <algo>: 20 bytes per device (5 f32 elements) do not divide into nchunksperloop="2" chunks of whole elements');
    expect(refused(algo(pair(0) + gpu(1, tb(0, 0, 0, PAIR_STEPS(1)), 'i_chunks="3" o_chunks="2" s_chunks="0"'))))
      .toBe('MSCCL gpu 1: i_chunks="3" chunks of 32 bytes are 96 bytes, but an allreduce of 64 bytes per device has 64 bytes of input (nchunksperloop="2")');
    expect(refused(algo(pair(0, [step(0, "s", { srcoff: 2 }), ...PAIR_STEPS(0).slice(1)]) + pair(1))))
      .toBe("MSCCL gpu 0 tb 0 step 0 (s): srcbuf/srcoff chunks [2, 3) of buffer i lie outside its 2 chunks (i_chunks=\"2\" on gpu 0)");
  });

  it("sends and receives that do not pair up", () => {
    expect(refused(algo(pair(0) + pair(1, PAIR_STEPS(1).slice(0, 3)))))
      .toBe("MSCCL gpu 0 tb 0 step 2 (s): gpu 0 tb 0 sends 2 times to gpu 1 on channel 0, and gpu 1 tb 0 receives 1 time: this one has no partner");
    expect(refused(algo(pair(0) + pair(1, [step(0, "s", { srcoff: 0, cnt: 2 }), ...PAIR_STEPS(1).slice(1)]))))
      .toBe("MSCCL gpu 1 tb 0 step 0 (s): sends 2 chunks, but the receive it meets, gpu 0 tb 0 step 1 (rrc), takes 1");
    expect(refused(algo(pair(0) + gpu(1, tb(0, 0, -1, PAIR_STEPS(1))))))
      .toBe("MSCCL gpu 1 tb 0 step 1 (rrc): receives, but tb 0 has no recv peer (recv=\"-1\")");
  });

  it("deadlocking dependencies: steps that wait on each other, across gpus or threadblocks", () => {
    // both gpus receive before they send
    const recvFirst = (r: number) => [step(0, "rrc", { srcoff: r, dstoff: r }), step(1, "s", { srcoff: 1 - r }), step(2, "s", { srcbuf: "o", srcoff: r }), step(3, "r", { dstoff: 1 - r })];
    expect(refused(algo(pair(0, recvFirst(0)) + pair(1, recvFirst(1))))).toBe(
      "MSCCL gpu 0 tb 0 step 0 (rrc): deadlock: the steps wait on each other in a cycle (each waits for the one after it: the step before it on its threadblock, its depid/deps step, or the send it receives): "
      + "gpu 0 tb 0 step 0 (rrc) -> gpu 1 tb 0 step 1 (s) -> gpu 1 tb 0 step 0 (rrc) -> gpu 0 tb 0 step 1 (s) -> gpu 0 tb 0 step 0 (rrc)");
    // two threadblocks of one gpu, each waiting for the other's later step
    const local = gpu(0, tb(0, -1, -1, [step(0, "nop", { cnt: 0, depid: 1, deps: 1 }), step(1, "cpy", { srcoff: 0, dstoff: 0, hasdep: 1 })])
      + tb(1, -1, -1, [step(0, "nop", { cnt: 0, depid: 0, deps: 1 }), step(1, "cpy", { srcoff: 1, dstoff: 1, hasdep: 1 })]), 'i_chunks="2" o_chunks="2" s_chunks="0"');
    expect(refused(algo(local, 'nchunksperloop="2" ngpus="1"'))).toMatch(/^MSCCL gpu 0 tb 0 step 0 \(nop\): deadlock: .*: gpu 0 tb 0 step 0 \(nop\) -> gpu 0 tb 1 step 1 \(cpy\) -> gpu 0 tb 1 step 0 \(nop\) -> gpu 0 tb 0 step 1 \(cpy\) -> gpu 0 tb 0 step 0 \(nop\)$/);
    // a dependency on a step that never publishes its progress
    expect(refused(algo(local.replaceAll('hasdep="1"', 'hasdep="0"'), 'nchunksperloop="2" ngpus="1"')))
      .toBe('MSCCL gpu 0 tb 0 step 0 (nop): depends on tb 1 step 1, which has hasdep="0": MSCCL publishes a threadblock\'s progress only at steps with hasdep="1"');
  });

  it("threadblocks whose connections would put two of one gpu on one engine, and more engines than the devices have", () => {
    // gpu 0 sends on tb 0 and receives on tb 1; gpu 1 does both on tb 0: tb 0 and tb 1 of gpu 0 would share its engine
    const g0 = gpu(0, tb(0, 1, -1, [step(0, "s", { srcoff: 1 })]) + tb(1, -1, 1, [step(0, "r", { dstoff: 1 })]));
    const g1 = gpu(1, tb(0, 0, 0, [step(0, "r", { dstoff: 1 }), step(1, "s", { srcoff: 0 })]));
    expect(refused(algo(g0 + g1))).toMatch(/^MSCCL gpu 0 tb 1: would need the engine of tb 0 of the same gpu: their connections join them/);
    expect(() => importMsccl(ALLPAIRS, { bytes: 2048, dtype: "f32", engines: 7 })).toThrow(/needs engine 7, but the devices have 7 engines/);
  });

  it("a program MSCCL runs but that races: two threadblocks writing one chunk with nothing ordering them", () => {
    const racy = gpu(0, tb(0, -1, -1, [step(0, "cpy", { srcoff: 0, dstoff: 0 })]) + tb(1, -1, -1, [step(0, "cpy", { srcoff: 1, dstoff: 0 })]), 'i_chunks="2" o_chunks="2" s_chunks="0"');
    expect(refused(algo(racy, 'nchunksperloop="2" ngpus="1"'))).toMatch(/^MSCCL "pair" as graphs: ranks\[0\]\.nodes\[\d\] \(copy "tb\d\.s0\.cpy" on engine \d\): data race on device 0's buffer "out" bytes \[0, 32\)/);
  });
});
