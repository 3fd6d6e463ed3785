// The collective compiler and the reference executor (issue 9): the graphs it writes are
// valid, and run by the reference they compute the collective, checked against plain
// arithmetic here (not against the graphs' own reductions).
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { allReduceRing, allReduceHalvingDoubling, allReduceTree, doubleBinaryTree, reduceScatterRing, allGatherRing, broadcastRing, allToAll, runReference, readGraphJson, validateProgram, checkRaces, split, stripesFor, GraphError, type GraphProgram } from "../host/graph/index.js";
import { f32Bits } from "../host/reduce/reference.js";

/** Deterministic pseudo-random i32 inputs per device (a small LCG, seeded by device). */
function inputsI32(devices: number, elems: number): Int32Array[] {
  return Array.from({ length: devices }, (_, d) => {
    let x = 0x9e3779b9 ^ (d * 0x85ebca6b);
    return Int32Array.from({ length: elems }, () => (x = (Math.imul(x, 1664525) + 1013904223) | 0));
  });
}

const bytesOf = (a: Int32Array | Float32Array) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

function run(p: GraphProgram, inputs: (Int32Array | Float32Array)[]) {
  checkRaces(p); // every order of the graphs' events computes these bytes
  return runReference(p, (rank, name) => (name === "in" ? bytesOf(inputs[rank]) : undefined));
}

describe("ring all-reduce, run by the reference executor", () => {
  for (const [devices, engines, elems] of [[2, 4, 1000], [3, 4, 7], [5, 16, 4099], [8, 16, 2048], [1, 16, 64]] as const) {
    it(`i32 sum on ${devices} devices, ${engines} engines, ${elems} elements: every device gets the wrapped sum`, () => {
      const ins = inputsI32(devices, elems);
      const want = Int32Array.from({ length: elems }, (_, i) => ins.reduce((a, v) => (a + v[i]) | 0, 0));
      const r = run(allReduceRing({ devices, engines, bytes: elems * 4, dtype: "i32" }), ins);
      for (let d = 0; d < devices; d++) expect(new Int32Array(r.buffers[d].get("out")!.slice().buffer)).toEqual(want);
      expect([...r.semaphores.map((s) => s[0])]).toEqual(Array(devices).fill(1));
      // semaphore 1 counted each engine with work: 7 elements in 3 segments (3, 2, 2) leave engine 3
      // nothing; one device copies on engine 0 alone
      const working = devices === 1 ? 1 : elems === 7 ? 3 : engines;
      for (const s of r.semaphores) expect(s[1]).toBe(working);
    });
  }

  it("i32 max and min are exact on 6 devices", () => {
    const ins = inputsI32(6, 300);
    for (const redop of ["max", "min"] as const) {
      const want = Int32Array.from({ length: 300 }, (_, i) => (redop === "max" ? Math.max : Math.min)(...ins.map((v) => v[i])));
      const r = run(allReduceRing({ devices: 6, engines: 3, bytes: 1200, dtype: "i32", redop }), ins);
      for (let d = 0; d < 6; d++) expect(new Int32Array(r.buffers[d].get("out")!.slice().buffer)).toEqual(want);
    }
  });

  it("f32 sum on 8 devices: every device holds the same bits, within float rounding of the exact sum", () => {
    const elems = 1024;
    const ins = inputsI32(8, elems).map((v) => Float32Array.from(v, (x) => x / 2 ** 24));
    const r = run(allReduceRing({ devices: 8, engines: 16, bytes: elems * 4, dtype: "f32" }), ins);
    const out0 = r.buffers[0].get("out")!;
    for (let d = 1; d < 8; d++) expect(r.buffers[d].get("out")).toEqual(out0);
    const got = new Float32Array(out0.slice().buffer);
    let worst = 0;
    for (let i = 0; i < elems; i++) worst = Math.max(worst, Math.abs(got[i] - ins.reduce((a, v) => a + v[i], 0)));
    // inputs lie in [-128, 128): partial sums stay below 1024, where an f32 step is 2^-13; 7
    // additions round by half a step each at most
    expect(worst).toBeLessThanOrEqual(7 * 2 ** -14);
    expect(worst).toBeGreaterThan(0); // the ring's order of additions is not float64's: not a copy of the exact sum
    expect(f32Bits(got[0])).toBe(new Uint32Array(out0.slice(0, 4).buffer)[0]);
  });

  it("writes 5 (N - 1) nodes per engine, a signal per engine when it is done, and engine 0's wait for them and final signal", () => {
    const p = allReduceRing({ devices: 8, engines: 16, bytes: 1 << 20, dtype: "bf16" });
    expect(p.ranks.map((r) => r.nodes.length)).toEqual(Array(8).fill(16 * (5 * 7 + 1) + 2));
    expect(validateProgram(p).messages.length).toBe(8 * 16 * 2 * 7);
    const nodes = p.ranks[3].nodes, n = nodes.length;
    expect(nodes[n - 1]).toMatchObject({ op: "signal", name: "done", sem: 0, value: 1, engine: 0, deps: [n - 2] });
    expect(nodes[n - 2]).toMatchObject({ op: "wait", sem: 1, value: 16, engine: 0, deps: [] });
    // engine e signals semaphore 1 after every node of its own nothing else waits for: every
    // send of both phases and the last all-gather receive
    for (let e = 0; e < 16; e++) {
      const sig = nodes.find((x) => x.name === `engine${e}.done`)!;
      expect(sig).toMatchObject({ op: "signal", sem: 1, value: 1, engine: e });
      const names = sig.deps.map((d) => nodes[d]!.engine === e && nodes[d]!.name);
      const want = [...Array.from({ length: 7 }, (_, k) => `rs${k}.send`), ...Array.from({ length: 7 }, (_, k) => `ag${k}.send`), "ag6.recv"];
      expect([...names].sort()).toEqual(want.sort());
    }
  });

  it("refuses sizes that are not whole elements", () => {
    expect(() => allReduceRing({ devices: 2, bytes: 6, dtype: "f32" })).toThrow(GraphError);
    expect(() => allReduceRing({ devices: 2, bytes: 6, dtype: "f32" })).toThrow("bytes: must be a positive multiple of the f32 element size 4, got 6");
  });

  it("split hands out the remainder to the first parts", () => {
    expect([0, 1, 2].map((k) => split(7, 3, k))).toEqual([[0, 3], [3, 2], [5, 2]]);
    expect([0, 1, 2, 3].map((k) => split(2, 4, k))).toEqual([[0, 1], [1, 1], [2, 0], [2, 0]]);
  });
});

describe("data races", () => {
  it("a copy into bytes a reduce still reads, with no order between them, is a race naming both", () => {
    const p = readGraphJson(readFileSync("examples/graphs/exchange-sum.json", "utf8"));
    // device 0 scribbles on tmp after the receive into it, while its reduce may still read it
    p.ranks[0].nodes.push({ op: "copy", name: "scribble", engine: 0, src: { buffer: "in", offset: 0 }, dst: { buffer: "tmp", offset: 1024 }, bytes: 16, deps: [0] });
    expect(() => checkRaces(p)).toThrow('ranks[0].nodes[2] (reduce "sum" on engine 1): data race on device 0\'s buffer "tmp" bytes [1024, 1040): it reads srcs[1] and ranks[0].nodes[4] (copy "scribble" on engine 0) writes dst, and neither is done before the other is posted');
    p.ranks[0].nodes[4].deps = [2]; // after the reduce (itself after the receive): no race
    expect(() => checkRaces(p)).not.toThrow();
  });

  it("two receives of one queue into the same bytes race: a sprayed transport places messages in any order", () => {
    const p = readGraphJson(readFileSync("examples/graphs/exchange-sum.json", "utf8"));
    p.ranks[0].nodes.push({ op: "recv", name: "again", engine: 0, peer: 1, stream: 0, dst: { buffer: "tmp", offset: 1024 }, bytes: 16, deps: [] });
    p.ranks[1].nodes.push({ op: "send", name: "more", engine: 0, peer: 0, stream: 0, src: { buffer: "out", offset: 0 }, bytes: 16, deps: [2] });
    expect(() => checkRaces(p)).toThrow('ranks[0].nodes[0] (recv "take" on engine 0): data race on device 0\'s buffer "tmp" bytes [1024, 1040): it writes dst and ranks[0].nodes[4] (recv "again" on engine 0) writes dst');
  });
});

describe("the reference executor", () => {
  it("runs the worked example: each device ends with in0 + in1 and semaphore 0 at 1", () => {
    const p = readGraphJson(readFileSync("examples/graphs/exchange-sum.json", "utf8"));
    const ins = [Float32Array.from({ length: 1024 }, (_, i) => i * 0.5), Float32Array.from({ length: 1024 }, (_, i) => 1000 - i)];
    const r = run(p, ins);
    const want = Float32Array.from({ length: 1024 }, (_, i) => Math.fround(i * 0.5 + (1000 - i)));
    for (let d = 0; d < 2; d++) {
      expect(new Float32Array(r.buffers[d].get("out")!.slice().buffer)).toEqual(want);
      expect(new Float32Array(r.buffers[d].get("tmp")!.slice().buffer)).toEqual(ins[1 - d]);
    }
    expect([r.semaphores[0][0], r.semaphores[1][0]]).toEqual([1, 1]);
  });

  it("a wait no signal reaches is an error naming it; the host's initial value satisfies it", () => {
    const p = readGraphJson(readFileSync("examples/graphs/exchange-sum.json", "utf8"));
    p.semaphores = 2;
    p.ranks[1].nodes.push({ op: "wait", name: "gate", engine: 1, sem: 1, value: 3, deps: [] });
    p.ranks[1].nodes.push({ op: "signal", engine: 1, sem: 1, value: 2, deps: [] });
    expect(() => runReference(p)).toThrow('ranks[1].nodes[4] (wait "gate" on engine 1): waits for semaphore 1 to reach 3, and it ends at 2: no signal is left to raise it');
    const r = runReference(p, undefined, { semaphores: [[], [0, 1]] });
    expect(r.semaphores[1][1]).toBe(3);
  });
});

describe("the other collectives, run by the reference executor", () => {
  const i32 = (b: Uint8Array) => new Int32Array(b.slice().buffer);
  const block = (a: Int32Array, k: number, n: number) => a.subarray(k * n, (k + 1) * n);

  for (const devices of [2, 4, 8]) {
    it(`halving-doubling all-reduce on ${devices} devices: the wrapped sum everywhere, race-free`, () => {
      const elems = 1000 + devices;
      const ins = inputsI32(devices, elems);
      const want = Int32Array.from({ length: elems }, (_, i) => ins.reduce((a, v) => (a + v[i]) | 0, 0));
      const r = run(allReduceHalvingDoubling({ devices, engines: 4, bytes: elems * 4, dtype: "i32" }), ins);
      for (let d = 0; d < devices; d++) expect(i32(r.buffers[d].get("out")!)).toEqual(want);
    });
  }

  it("halving-doubling exchanges with log2 N partners, the ring with one: on 8 devices 14 sends each, to devices 4, 2 and 1", () => {
    const hd = allReduceHalvingDoubling({ devices: 8, engines: 1, bytes: 8 * 1024, dtype: "i32" });
    const ring = allReduceRing({ devices: 8, engines: 1, bytes: 8 * 1024, dtype: "i32" });
    const sends = (p: GraphProgram) => p.ranks[0].nodes.filter((n) => n.op === "send");
    // reduce-scatter sends 4 + 2 + 1 segments, all-gather 1 + 2 + 4: the same bytes as the ring, to 3 partners
    expect(sends(hd).length).toBe(14);
    expect(new Set(sends(hd).map((n) => (n as { peer: number }).peer))).toEqual(new Set([4, 2, 1]));
    expect(new Set(sends(ring).map((n) => (n as { peer: number }).peer))).toEqual(new Set([1]));
    expect(() => allReduceHalvingDoubling({ devices: 6, bytes: 64, dtype: "i32" })).toThrow("devices: halving-doubling needs a power of two, got 6 (use the ring)");
  });

  it("reduce-scatter on 5 devices: device r holds block r of the sum", () => {
    const elems = 301, N = 5;
    const ins = inputsI32(N, N * elems);
    const r = run(reduceScatterRing({ devices: N, engines: 3, bytes: elems * 4, dtype: "i32" }), ins);
    for (let d = 0; d < N; d++) {
      const want = Int32Array.from({ length: elems }, (_, i) => ins.reduce((a, v) => (a + block(v, d, elems)[i]) | 0, 0));
      expect(i32(r.buffers[d].get("out")!)).toEqual(want);
    }
  });

  it("all-gather on 5 devices: every device holds every device's input, in device order", () => {
    const elems = 77, N = 5;
    const ins = inputsI32(N, elems);
    const r = run(allGatherRing({ devices: N, engines: 4, bytes: elems * 4, dtype: "i32" }), ins);
    const want = new Int32Array(N * elems);
    ins.forEach((v, d) => want.set(v, d * elems));
    for (let d = 0; d < N; d++) expect(i32(r.buffers[d].get("out")!)).toEqual(want);
  });

  it("broadcast from device 2 of 6, pipelined in chunks: every device holds the root's input", () => {
    const ins = inputsI32(6, 1000);
    const p = broadcastRing({ devices: 6, engines: 4, bytes: 4000, dtype: "i32", root: 2, chunks: 3 });
    const r = run(p, ins);
    for (let d = 0; d < 6; d++) expect(i32(r.buffers[d].get("out")!)).toEqual(ins[2]);
    // the root only sends, the one before it only receives, the others pass each chunk on
    const count = (d: number, op: string) => p.ranks[d].nodes.filter((n) => n.op === op).length;
    expect([count(2, "send"), count(2, "recv"), count(1, "send"), count(1, "recv"), count(4, "send")]).toEqual([12, 0, 0, 12, 12]);
  });

  it("all-to-all on 4 devices: device r's block p lands in device p's block r", () => {
    const elems = 50, N = 4;
    const ins = inputsI32(N, N * elems);
    const r = run(allToAll({ devices: N, engines: 2, bytes: elems * 4, dtype: "i32" }), ins);
    for (let p = 0; p < N; p++) {
      const out = i32(r.buffers[p].get("out")!);
      for (let src = 0; src < N; src++) expect(block(out, src, elems)).toEqual(block(ins[src], p, elems));
    }
  });
});

describe("striping over a port group's ports (ports)", () => {
  it("stripes each engine's slice into the fewest streams that load no port over 5 % above an even share", () => {
    // 16 engines: 8 ports divide evenly; 10 take 3 (48 lanes: 5 or 4 per port, 1.04), 12 take 3, 6 take 3 (1.0)
    expect([1, 2, 6, 8, 10, 12, 16].map((p) => stripesFor(16, p))).toEqual([1, 1, 3, 1, 3, 3, 1]);
    expect(stripesFor(4, 10)).toBe(5); // 20 lanes over 10 ports
  });

  const MIB = 1 << 20;
  it("a 16 MiB ring all-reduce on 8 devices for 10 ports: 3 streams per engine and peer, equal bytes each, nodes interleaved", () => {
    const p = allReduceRing({ devices: 8, engines: 16, bytes: 16 * MIB, dtype: "f32", ports: 10 });
    validateProgram(p);
    const nodes = p.ranks[0]!.nodes;
    const sends = nodes.filter((n) => n.op === "send");
    // per engine: 3 streams x 2 (N - 1) sends, each a third of the engine's slice of a segment
    expect(new Set(sends.map((n) => `${n.engine}/${n.stream}`)).size).toBe(48);
    expect(sends.length).toBe(48 * 14);
    // a third of an engine's slice of a segment each, to the element
    for (const n of sends) expect(Math.abs(n.bytes - 16 * MIB / 8 / 48)).toBeLessThanOrEqual(4);
    // an engine's three lanes advance in step: its first three nodes are the three streams' first receive
    const engine5 = nodes.filter((n) => n.engine === 5);
    expect(engine5.slice(0, 3).map((n) => [n.op, "stream" in n ? n.stream : -1])).toEqual([["recv", 0], ["recv", 1], ["recv", 2]]);
  });

  it("no stripes below 32 KiB messages: a 4 MiB ring all-reduce on 8 devices is the unstriped program", () => {
    const o = { devices: 8, engines: 16, bytes: 4 * MIB, dtype: "f32" as const };
    expect(allReduceRing({ ...o, ports: 10 })).toEqual(allReduceRing(o));
  });

  // the ring family striped over 3 streams (2 engines, 6 ports; stripes of any size here)
  const cases: [string, (ports: number) => GraphProgram, number][] = [
    ["ring all-reduce", (ports) => allReduceRing({ devices: 4, engines: 2, bytes: 4 * 1000, dtype: "i32", ports, stripeMinBytes: 4 }), 1000],
    ["halving-doubling", (ports) => allReduceHalvingDoubling({ devices: 4, engines: 2, bytes: 4 * 1000, dtype: "i32", ports, stripeMinBytes: 4 }), 1000],
    ["reduce-scatter", (ports) => reduceScatterRing({ devices: 3, engines: 2, bytes: 4 * 301, dtype: "i32", ports, stripeMinBytes: 4 }), 3 * 301],
    ["all-gather", (ports) => allGatherRing({ devices: 3, engines: 2, bytes: 4 * 301, dtype: "i32", ports, stripeMinBytes: 4 }), 301],
    ["all-to-all", (ports) => allToAll({ devices: 3, engines: 2, bytes: 4 * 301, dtype: "i32", ports, stripeMinBytes: 4 }), 3 * 301],
    ["broadcast", (ports) => broadcastRing({ devices: 3, engines: 2, bytes: 4 * 1000, dtype: "i32", root: 1, ports, stripeMinBytes: 4 }), 1000],
  ];
  for (const [name, make, elems] of cases) {
    it(`${name} striped over 3 streams per engine computes what it does unstriped, race-free`, () => {
      const plain = make(1), striped = make(6); // 2 engines, 6 ports: 3 stripes
      validateProgram(striped);
      const streams = new Set(striped.ranks.flatMap((r) => r.nodes).filter((n) => n.op === "send").map((n) => n.stream));
      expect(streams).toEqual(new Set([0, 1, 2]));
      const ins = inputsI32(plain.devices, elems);
      const a = run(plain, ins), b = run(striped, ins);
      for (let d = 0; d < plain.devices; d++) expect(b.buffers[d].get("out")).toEqual(a.buffers[d].get("out"));
    });
  }
});

describe("double binary tree all-reduce", () => {
  /** edges from the root down to rank r */
  const depthOf = (t: ReturnType<typeof doubleBinaryTree>[0], r: number) => {
    let d = 0;
    for (let x = r; x !== t.root; x = t.parent[x]) d++;
    return d;
  };

  it("its two trees span the ranks, at most two children each, ceil(log2 N) deep; for even N no rank has children in both", () => {
    for (let n = 1; n <= 40; n++) {
      const trees = doubleBinaryTree(n);
      for (const t of trees) {
        expect(t.parent[t.root]).toBe(-1);
        for (let r = 0; r < n; r++) {
          expect(t.children[r].length).toBeLessThanOrEqual(2);
          for (const c of t.children[r]) expect(t.parent[c]).toBe(r);
          if (r !== t.root) expect(t.children[t.parent[r]]).toContain(r);
        }
        const depth = Math.max(...Array.from({ length: n }, (_, r) => depthOf(t, r)));
        expect(depth, `n = ${n}`).toBe(Math.ceil(Math.log2(n)));
      }
      const both = Array.from({ length: n }, (_, r) => r).filter((r) => trees.every((t) => t.children[r].length > 0));
      // even n: complementary (NCCL's mirror); odd n (the shift): one rank, rank 0, has children in both
      expect(both, `n = ${n}`).toEqual(n % 2 === 0 || n === 1 ? [] : [0]);
      // halves a rank sends: up once per tree it is not the root of, down once per child; at most 4 (2x its data)
      for (let r = 0; r < n && n > 1; r++) {
        const halves = trees.reduce((a, t) => a + (t.parent[r] >= 0 ? 1 : 0) + t.children[r].length, 0);
        expect(halves).toBeLessThanOrEqual(4);
      }
    }
    expect(doubleBinaryTree(8)[0].children).toEqual([[4], [], [1, 3], [], [2, 6], [], [5, 7], []]);
    expect(doubleBinaryTree(8)[1].children).toEqual([[], [2, 0], [], [5, 1], [], [6, 4], [], [3]]);
  });

  for (const [devices, engines, elems, chunkBytes] of [[1, 16, 64, 64], [2, 1, 100, 64], [3, 2, 7, 4], [3, 16, 1001, 128], [5, 4, 4099, 256], [8, 16, 2048, 128], [12, 16, 1000, 64], [12, 1, 300, 256]] as const) {
    it(`i32 sum on ${devices} devices, ${engines} engines, ${elems} elements, chunks of ${chunkBytes} bytes: every device gets the wrapped sum, race-free`, () => {
      const ins = inputsI32(devices, elems);
      const want = Int32Array.from({ length: elems }, (_, i) => ins.reduce((a, v) => (a + v[i]) | 0, 0));
      const p = allReduceTree({ devices, engines, bytes: elems * 4, dtype: "i32", chunkBytes });
      const r = run(p, ins);
      for (let d = 0; d < devices; d++) expect(new Int32Array(r.buffers[d].get("out")!.slice().buffer)).toEqual(want);
      expect([...r.semaphores.map((s) => s[0])]).toEqual(Array(devices).fill(1));
    });
  }

  it("i32 max on 6 devices is exact", () => {
    const ins = inputsI32(6, 500);
    const want = Int32Array.from({ length: 500 }, (_, i) => Math.max(...ins.map((v) => v[i])));
    const r = run(allReduceTree({ devices: 6, engines: 8, bytes: 2000, dtype: "i32", redop: "max", chunkBytes: 128 }), ins);
    for (let d = 0; d < 6; d++) expect(new Int32Array(r.buffers[d].get("out")!.slice().buffer)).toEqual(want);
  });

  it("on 8 devices x 16 engines: 8 lanes, an engine each way; each rank sends its data once (the two roots) or twice", () => {
    const bytes = 1 << 20, p = allReduceTree({ devices: 8, engines: 16, bytes, dtype: "f32" });
    // 1 MiB: 8 lanes of 128 KiB, in 2 chunks of 64 KiB
    const sent = p.ranks.map((rk) => rk.nodes.reduce((a, n) => a + (n.op === "send" ? n.bytes : 0), 0));
    // in halves of the data: rank 4 sends up and to 2 children in tree 0 and up in tree 1 (4, 2x);
    // rank 0, the root of tree 0 (one child) and a leaf of tree 1, sends 2 (1x); so does rank 7
    expect(sent).toEqual([1, 2, 2, 2, 2, 2, 2, 1].map((x) => x * bytes));
    expect(sent.reduce((a, b) => a + b, 0)).toBe(2 * 7 * bytes); // 2 (N - 1) x data in all, as the ring
    for (const rk of p.ranks) {
      const ups = new Set(rk.nodes.filter((n) => n.name?.startsWith("up")).map((n) => n.engine));
      const downs = new Set(rk.nodes.filter((n) => n.name?.startsWith("down")).map((n) => n.engine));
      for (const e of ups) expect(e % 2).toBe(0);
      for (const e of downs) expect(e % 2).toBe(1);
      expect(rk.nodes.filter((n) => n.op === "send").every((n) => n.bytes === 65536)).toBe(true);
    }
  });

  it("refuses chunks smaller than an element", () => {
    expect(() => allReduceTree({ devices: 4, bytes: 64, dtype: "f32", chunkBytes: 2 })).toThrow("chunkBytes: must be an integer of at least one f32 element (4 bytes), got 2");
  });
});
