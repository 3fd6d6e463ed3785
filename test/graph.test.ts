// Work-queue graphs (issue 9, graph format): the JSON form reads and writes without loss, the
// binary form lies as layouts/graph.json says and converts back, and every invalid graph is
// refused with a message naming the node.
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import {
  readGraphJson, writeGraphText, graphJson, validateProgram, encodeGraph, decodeGraph, programOf, GraphError,
  type GraphProgram, type GraphNode,
} from "../host/graph/index.js";

const EXAMPLE = "examples/graphs/exchange-sum.json";
const text = readFileSync(EXAMPLE, "utf8");
const example = () => readGraphJson(text);

/** The example with rank `rank`'s nodes changed by `f`. */
function edited(f: (nodes: GraphNode[], p: GraphProgram) => void, rank = 0): GraphProgram {
  const p = example();
  f(p.ranks[rank].nodes, p);
  return p;
}

function refusal(p: GraphProgram | (() => unknown)): GraphError {
  try {
    if (typeof p === "function") p();
    else validateProgram(p);
  } catch (e) {
    expect(e).toBeInstanceOf(GraphError);
    return e as GraphError;
  }
  throw new Error("accepted");
}

describe("graph JSON form", () => {
  it("the shipped example is in canonical form: read then written gives the same text", () => {
    expect(writeGraphText(example())).toBe(text);
  });

  it("written then read gives the same program, defaults included", () => {
    const p = example();
    p.ranks[0].nodes.push({ op: "write", engine: 1, peer: 1, stream: 3, src: { buffer: "out", offset: 8 }, dst: { buffer: "tmp", offset: 16 }, bytes: 64, notify: false, deps: [2] });
    p.ranks[0].nodes.push({ op: "wait", engine: 0, sem: 0, value: 2, deps: [] });
    expect(readGraphJson(writeGraphText(p))).toEqual(p);
    // notify false and an absent name are left out of the text; an omitted offset and deps read as 0 and []
    expect(writeGraphText(p)).not.toContain('"notify"');
    const loose = JSON.parse(text);
    delete loose.ranks[0].nodes[3].deps;
    delete loose.ranks[0].nodes[1].src.offset;
    const q = readGraphJson(loose);
    expect(q.ranks[0].nodes[3].deps).toEqual([]);
    expect((q.ranks[0].nodes[1] as { src: { offset: number } }).src.offset).toBe(0);
  });

  it("refuses malformed structure, naming the path", () => {
    const j = () => JSON.parse(text);
    const cases: [unknown, string][] = [
      [(() => { const o = j(); o.ranks[0].nodes[2].op = "gather"; return o; })(), "ranks[0].nodes[2].op: must be one of send, recv, write, read, reduce, copy, wait, signal; got \"gather\""],
      [(() => { const o = j(); o.ranks[1].nodes[0].engine = -1; return o; })(), "ranks[1].nodes[0].engine: must be an integer in [0, 255], got -1"],
      [(() => { const o = j(); o.ranks[0].nodes[1].lenght = 4; return o; })(), "ranks[0].nodes[1].lenght: unknown field (allowed here: op, name, engine, deps, peer, stream, src, bytes)"],
      [(() => { const o = j(); o.ranks[0].nodes[2].dtype = "f64"; return o; })(), "ranks[0].nodes[2].dtype: must be one of f32, f16, bf16, i32; got \"f64\""],
      [(() => { const o = j(); o.format = "msccl"; return o; })(), "format: must be \"menic-graph\", got \"msccl\""],
      [(() => { const o = j(); o.ranks[0].nodes[3].deps = [1, "2"]; return o; })(), "ranks[0].nodes[3].deps[1]: must be an integer in [0, 4294967295], got \"2\""],
      ["{ not json", "(input): not JSON"],
    ];
    for (const [input, msg] of cases) expect(refusal(() => readGraphJson(input)).message).toContain(msg);
  });
});

describe("graph validation", () => {
  it("accepts the example and pairs each send with the receive on the other side", () => {
    const m = validateProgram(example());
    expect(m.messages).toEqual([
      { from: 0, message: 1, to: 1, recv: 0 },
      { from: 1, message: 1, to: 0, recv: 0 },
    ]);
  });

  it("refuses each kind of bad node with a message that names it", () => {
    const cases: [GraphProgram, string][] = [
      [edited((n) => { n[3].deps = [3]; }), 'ranks[0].nodes[3] (signal "done" on engine 1): depends on itself'],
      [edited((n) => { n[2].deps = [3]; n[3].deps = [2]; }), 'ranks[0].nodes[2] (reduce "sum" on engine 1): its dependencies form a cycle: nodes[2] -> nodes[3] -> nodes[2]'],
      [edited((n) => { n[3].deps = [1, 9]; }), 'ranks[0].nodes[3] (signal "done" on engine 1): depends on node 9, which does not exist (the graph has 4 nodes)'],
      [edited((n) => { n[2].engine = 2; }), 'ranks[0].nodes[2] (reduce "sum" on engine 2): engine 2 is out of range (the graphs use engines 0 to 1)'],
      [edited((n) => { (n[1] as { peer: number }).peer = 2; }), 'ranks[0].nodes[1] (send "give" on engine 0): peer 2 is out of range (the communicator has devices 0 to 1)'],
      [edited((n) => { (n[1] as { peer: number }).peer = 1; }, 1), 'ranks[1].nodes[1] (send "give" on engine 0): peer 1 is this device itself'],
      [edited((n) => { (n[1] as { src: { offset: number } }).src.offset = 64; }), 'ranks[0].nodes[1] (send "give" on engine 0): src: bytes [64, 4160) run past buffer "in" (4096 bytes)'],
      [edited((n) => { (n[2] as { dst: { buffer: string } }).dst.buffer = "output"; }), 'ranks[0].nodes[2] (reduce "sum" on engine 1): dst: no buffer "output" (the buffers are "in", "tmp", "out")'],
      [edited((n) => { (n[2] as { srcs: unknown[] }).srcs.length = 1; }), 'ranks[0].nodes[2] (reduce "sum" on engine 1): has 1 sources (the reduction block takes 2 to 8)'],
      [edited((n) => { (n[2] as { bytes: number }).bytes = 4094; }), 'ranks[0].nodes[2] (reduce "sum" on engine 1): bytes 4094 is not a multiple of the f32 element size 4'],
      [edited((n) => { (n[3] as { sem: number }).sem = 1; }), 'ranks[0].nodes[3] (signal "done" on engine 1): semaphore 1 is out of range (the program declares 1)'],
      [edited((n) => { (n[0] as { bytes: number }).bytes = 1024; }), 'ranks[0].nodes[0] (recv "take" on engine 0): takes 1024 bytes at most, but its message ranks[1].nodes[1] (send "give" on engine 0) sends 4096'],
      [edited((n) => { n.splice(0, 1, { op: "copy", engine: 0, src: { buffer: "in", offset: 0 }, dst: { buffer: "tmp", offset: 0 }, bytes: 4096, deps: [] }); }),
        'ranks[1].nodes[1] (send "give" on engine 0): no receive matches it: 1 messages from device 1 to device 0, engine 0, stream 0 and 0 receives'],
      [edited((n) => { (n[1] as { stream: number }).stream = 5; }), 'ranks[0].nodes[1] (send "give" on engine 0): no receive matches it: 1 messages from device 0 to device 1, engine 0, stream 5 and 0 receives'],
      [edited((_, p) => { p.ranks.pop(); }), "ranks: has 1 graphs for 2 devices (one per device)"],
      [edited((_, p) => { p.buffers.push({ name: "in", bytes: 8 }); }), 'buffers[3]: a second buffer named "in"'],
    ];
    for (const [p, msg] of cases) expect(refusal(p).message).toBe(msg);
  });

  it("a write with notify completes a receive without dst, and only such a receive", () => {
    const notify = edited((n) => { n[1] = { op: "write", name: "put", engine: 0, peer: 1, stream: 0, src: { buffer: "in", offset: 0 }, dst: { buffer: "tmp", offset: 0 }, bytes: 4096, notify: true, deps: [] }; });
    expect(refusal(notify).message).toBe('ranks[1].nodes[0] (recv "take" on engine 0): takes the notification of the write ranks[0].nodes[1] (write "put" on engine 0): it must have no dst (the write places its bytes)');
    notify.ranks[1].nodes[0] = { op: "recv", name: "take", engine: 0, peer: 0, stream: 0, bytes: 0, deps: [] };
    expect(validateProgram(notify).messages).toContainEqual({ from: 0, message: 1, to: 1, recv: 0 });
  });

  it("finds a deadlock across devices: each posts its receive only after its own send is done", () => {
    // a send is done only once the peer's receive is posted: with the receive behind the send on
    // both sides, neither can finish (the shipped example posts its receives first and is fine)
    /** the example with each device's send first and its receive after the send is done, on `ranks` */
    const receiveAfterSend = (ranks: number[]) => {
      const p = example();
      for (const r of ranks) {
        const [take, give, sum, done] = p.ranks[r].nodes;
        p.ranks[r].nodes = [give, { ...take, deps: [0] }, { ...sum, deps: [1] }, { ...done, deps: [0, 2] }];
      }
      return p;
    };
    const e = refusal(receiveAfterSend([0, 1]));
    expect(e.message).toMatch(/^ranks\[\d\]\.nodes\[\d\] \((recv "take"|send "give") on engine 0\): deadlock: the graphs wait on each other in a cycle: /);
    for (const k of ['ranks[0].nodes[1] (recv "take"', 'ranks[0].nodes[0] (send "give"', 'ranks[1].nodes[1] (recv "take"', 'ranks[1].nodes[0] (send "give"']) expect(e.message).toContain(k);
    // the same dependency on one side only is no deadlock
    expect(() => validateProgram(receiveAfterSend([0]))).not.toThrow();
  });

  it("finds a deadlock made by an engine's order: the executor posts an engine's nodes in order", () => {
    // device 0's sum moves to engine 0, before the receive it depends on: the receive is never
    // posted (the sum holds it back), device 1's send never finds it. Run on the engines, device 1
    // ends with RNR_RETRY_EXC_ERR and device 0 waits for ever: the validator refuses it first.
    const p = example();
    const [take, give, sum, done] = p.ranks[0].nodes;
    p.ranks[0].nodes = [{ ...sum, engine: 0, deps: [1] }, take, give, { ...done, deps: [2, 0] }];
    expect(refusal(p).message).toBe('ranks[0].nodes[0] (reduce "sum" on engine 0): deadlock: the graphs wait on each other in a cycle: posted ranks[0].nodes[0] (reduce "sum" on engine 0) -> posted ranks[0].nodes[1] (recv "take" on engine 0) -> done ranks[0].nodes[1] (recv "take" on engine 0)');
    // on engine 1, as the example has it, the sum holds nothing back
    p.ranks[0].nodes[0].engine = 1;
    expect(() => validateProgram(p)).not.toThrow();
  });

  it("finds a deadlock made by a queue's order: receives are posted in node order", () => {
    // device 1 takes two messages of one stream on engine 0; its first receive depends on the
    // second being done, but the second can be posted only after the first: no local cycle
    // (the dependencies alone are fine), a deadlock all the same
    const p = example();
    p.ranks[0].nodes.push({ op: "send", name: "second", engine: 0, peer: 1, stream: 0, src: { buffer: "out", offset: 0 }, bytes: 4096, deps: [] });
    p.ranks[1].nodes.push({ op: "recv", name: "later", engine: 0, peer: 0, stream: 0, dst: { buffer: "out", offset: 0 }, bytes: 4096, deps: [] });
    p.ranks[1].nodes[0].deps = [4];
    const e = refusal(p);
    expect(e.message).toContain("deadlock");
    expect(e.message).toContain('ranks[1].nodes[4] (recv "later" on engine 0)');
    // the other way round (the second receive after the first is done) is fine
    p.ranks[1].nodes[0].deps = [];
    p.ranks[1].nodes[4].deps = [0];
    expect(() => validateProgram(p)).not.toThrow();
  });
});

describe("graph binary form", () => {
  it("lies as layouts/graph.json says", () => {
    const b = encodeGraph(example(), 1);
    const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
    expect(new TextDecoder().decode(b.subarray(0, 4))).toBe("MGRF");
    // header: version 1, 2 engines, device 1 of 2, 4 nodes at 64, 3 dependency entries after
    // them (64 + 4 x 128 = 576), 3 buffers at the next multiple of 8 after 576 + 12, names after
    expect([v.getUint16(4, true), v.getUint16(6, true), v.getUint16(8, true), v.getUint16(10, true)]).toEqual([1, 2, 1, 2]);
    expect([v.getUint32(12, true), v.getUint32(16, true), v.getUint32(20, true), v.getUint32(24, true)]).toEqual([4, 64, 3, 576]);
    expect([v.getUint32(28, true), v.getUint32(32, true), v.getUint32(36, true), v.getUint32(44, true)]).toEqual([3, 592, 616, 1]);
    // names: "exchange-sum", "in", "tmp", "out", "take", "give", "sum", "done", each NUL-terminated
    const names = "exchange-sum\0in\0tmp\0out\0take\0give\0sum\0done\0";
    expect(v.getUint32(40, true)).toBe(names.length);
    expect(v.getUint32(48, true)).toBe(616 + names.length);
    expect(new TextDecoder().decode(b.subarray(616))).toBe(names);
    // node 2, the reduce: op 4, engine 1, f32 (0) sum (0), 2 sources, no peer, 1 dependency from entry 0
    const n2 = 64 + 2 * 128;
    expect([...b.subarray(n2, n2 + 6)]).toEqual([4, 1, 0, 0, 0, 2]);
    expect([v.getUint16(n2 + 6, true), v.getUint16(n2 + 10, true), v.getUint32(n2 + 12, true), v.getUint32(n2 + 16, true)]).toEqual([0xffff, 1, 0, 4096]);
    expect(v.getUint32(n2 + 28, true)).toBe(names.indexOf("\0sum\0") + 1);
    // dst out+0 (buffer 2), sources in+0 (0) and tmp+0 (1)
    expect([v.getUint32(n2 + 32, true), v.getUint32(n2 + 64, true), v.getUint32(n2 + 72, true)]).toEqual([2, 0, 1]);
    // the dependency array: node 2's [0], node 3's [1, 2]
    expect([v.getUint32(576, true), v.getUint32(580, true), v.getUint32(584, true)]).toEqual([0, 1, 2]);
    // node 1, the send: op 0, peer 0, stream 0
    expect([b[64 + 128], v.getUint16(64 + 128 + 6, true)]).toEqual([0, 0]);
  });

  it("decodes to the same program, from every rank's bytes in any order", () => {
    const p = example();
    p.ranks[0].nodes.push({ op: "write", engine: 1, peer: 1, stream: 7, src: { buffer: "out", offset: 8 }, dst: { buffer: "tmp", offset: 16 }, bytes: 64, notify: true, deps: [2] });
    p.ranks[1].nodes.push({ op: "recv", engine: 1, peer: 0, stream: 7, bytes: 0, deps: [] });
    p.ranks[1].nodes.push({ op: "read", name: "pull", engine: 1, peer: 0, stream: 2, src: { buffer: "out", offset: 0 }, dst: { buffer: "tmp", offset: 0 }, bytes: 512, deps: [4] });
    validateProgram(p);
    const graphs = [1, 0].map((r) => decodeGraph(encodeGraph(p, r)));
    expect(graphs[0].device).toBe(1);
    expect(programOf(graphs)).toEqual(p);
    expect(graphJson(programOf(graphs))).toEqual(graphJson(p));
  });

  it("refuses bytes that are not a graph, saying where", () => {
    const good = encodeGraph(example(), 0);
    const broken = (f: (b: Uint8Array, v: DataView) => void) => {
      const b = good.slice();
      f(b, new DataView(b.buffer));
      return refusal(() => decodeGraph(b)).message;
    };
    expect(refusal(() => decodeGraph(good.subarray(0, 40))).message).toBe("graph bytes: header: 40 bytes, fewer than the 64-byte header");
    expect(broken((b) => (b[0] = 0))).toBe("graph bytes: header.magic: 0x46524700 is not 0x4652474d: not a menic graph");
    expect(broken((_, v) => v.setUint16(4, 2, true))).toBe("graph bytes: header.version: version 2; this reader knows 1");
    expect(broken((b) => (b[64 + 128 * 2] = 99))).toBe("graph bytes: nodes[2].op: unknown op 99");
    expect(broken((_, v) => v.setUint32(64 + 128 * 2 + 64, 7, true))).toBe("graph bytes: nodes[2].src[0]: buffer index 7 is out of range (3 buffers)");
    expect(broken((_, v) => v.setUint32(64 + 128 * 3 + 12, 2, true))).toBe("graph bytes: nodes[3].deps: [2, 4) runs past the 3 dependency entries");
    expect(broken((_, v) => v.setUint32(12, 1000, true))).toBe("graph bytes: header.node_off: the table [64, 128064) runs past the graph's 659 bytes");
    expect(refusal(() => decodeGraph(good.subarray(0, 600))).message).toBe("graph bytes: header.bytes: says 659 bytes, only 600 given");
  });
});
