// An imported MSCCL algorithm as a scenario's collective (collective.graph, docs/graph.md
// "Importing MSCCL algorithms"): run by the engines' executor and checked bit for bit against the
// reference executor; the shipped ring takes the compiled ring's time (they do the same work); bad
// graphs are refused when the scenario is read, naming the field.
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { coreModule } from "../host/platform/node.js";
import { runScenario } from "../host/scenario/run.js";
import { resolveScenario, inlineGraphFiles } from "../host/scenario/scenario.js";
import { formatResult } from "../host/scenario/report.js";
import { goldenRun } from "./helpers/golden.js";

const FILE = "examples/scenarios/allreduce-msccl.json";
const shipped = JSON.parse(readFileSync(FILE, "utf8"));
const inlined = () => inlineGraphFiles(shipped, (f) => readFileSync(join(dirname(FILE), f), "utf8")) as typeof shipped;

/**
 * How far the imported ring's time may be from the compiled ring's: both move and reduce the same
 * chunks in the same order on 4 engines; they differ only in node order and dependencies (measured:
 * 0.7 % at 64 KiB, 1.4 % at 1 MiB).
 */
const TOLERANCE = 0.05;

describe("MSCCL XML algorithms in scenarios", () => {
  it("the shipped ring all-reduce runs on 8 devices, every result the reference's, within 5 % of the compiled ring's time", async () => {
    // what `menic run --json` printed for it, its graph file inlined (test/golden.test.ts holds it to the code)
    const imported = goldenRun("allreduce-msccl");
    expect(imported.finished).toBe(true);
    expect(imported.collective!.algorithm).toBe('msccl "ring-allreduce-8x4"');
    expect(imported.collective!.rows.map((r) => [r.check, r.status])).toEqual([["ok", "done"], ["ok", "done"]]);
    const { graph: _, ...compiledCollective } = shipped.collective;
    const compiled = await runScenario(coreModule(), { ...shipped, collective: { ...compiledCollective, algorithm: "ring" } });
    expect(compiled.collective!.rows.map((r) => r.check)).toEqual(["ok", "ok"]);
    imported.collective!.rows.forEach((r, k) => {
      const ratio = r.timePs / compiled.collective!.rows[k]!.timePs;
      expect(Math.abs(ratio - 1), `size ${r.bytes}: imported ${r.timePs} ps, compiled ${compiled.collective!.rows[k]!.timePs} ps`).toBeLessThan(TOLERANCE);
    });
    expect(formatResult(imported)).toMatch(/^all-reduce \(msccl "ring-allreduce-8x4"\), f32 sum, 8 devices x 4 engines, metaroce$/m);
  });

  it("the all-pairs all-reduce (scratch, nops, cross-threadblock dependencies) on 8 engines, bf16, checked bit for bit", async () => {
    const text = readFileSync("examples/msccl/allpairs-allreduce-8.xml", "utf8");
    const r = await runScenario(coreModule(), { ...shipped, collective: { ...shipped.collective, sizes: [65536], dtype: "bf16", engines: 8, graph: { format: "msccl-xml", text } } });
    expect(r.finished).toBe(true);
    expect(r.collective!.rows.map((x) => [x.check, x.status])).toEqual([["ok", "done"]]);
  });

  it("an algorithm that runs only in place: its input goes into out, and out is checked", async () => {
    // two gpus: each sends the other's chunk, reduces the one it gets with its own in place, and sends that back
    const step = (s: number, type: string, src: string, dst: string) => `<step s="${s}" type="${type}" srcbuf="${src[0]}" srcoff="${src.slice(1)}" dstbuf="${dst[0]}" dstoff="${dst.slice(1)}" cnt="1" depid="-1" deps="-1" hasdep="0"/>`;
    const gpu = (r: number) => `<gpu id="${r}" i_chunks="2" o_chunks="2" s_chunks="0"><tb id="0" send="${1 - r}" recv="${1 - r}" chan="0">`
      + step(0, "s", `i${1 - r}`, `o${1 - r}`) + step(1, "rrc", `i${r}`, `o${r}`) + step(2, "s", `o${r}`, `o${r}`) + step(3, "r", `o${1 - r}`, `o${1 - r}`) + "</tb></gpu>";
    const a = `<algo name="pair-inplace" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="0">${gpu(0)}${gpu(1)}</algo>`;
    const r = await runScenario(coreModule(), { ...shipped, devices: { count: 2 }, collective: { op: "all-reduce", sizes: [4096], dtype: "i32", engines: 1, graph: { format: "msccl-xml", text: a } } });
    expect(r.collective!.rows.map((x) => [x.check, x.status])).toEqual([["ok", "done"]]);
  });

  it("refuses, when the scenario is read, a graph for another collective, other devices, a size it cannot split, or a file not read", () => {
    const sc = inlined();
    const at = (c: Record<string, unknown>, devices = 8) => {
      try {
        resolveScenario({ ...sc, devices: { count: devices }, collective: { ...sc.collective, ...c } });
      } catch (e) {
        return (e as Error).message;
      }
      return "accepted";
    };
    expect(at({})).toBe("accepted");
    expect(at({ op: "all-to-all" })).toBe('scenario.collective.graph.text: the algorithm "ring-allreduce-8x4" is an allreduce (coll="allreduce"), the collective an all-to-all');
    expect(at({}, 4)).toBe('scenario.collective.graph.text: the algorithm "ring-allreduce-8x4" is for 8 gpus (ngpus="8"), the scenario has 4 devices');
    expect(at({ sizes: [65536, 1000] })).toBe('scenario.collective.sizes[1]: 1000 bytes is not a multiple of 128, what the algorithm "ring-allreduce-8x4" of graph.text needs (nchunksperloop="32" chunks of whole f32 elements)');
    expect(at({ engines: 3 })).toBe("scenario.collective.graph.text: at sizes[0] (65536 bytes): MSCCL gpu 0 tb 3: needs engine 3, but the devices have 3 engines (threadblocks joined by connections share an engine, and a gpu's threadblocks each need their own)");
    expect(at({ graph: { format: "msccl-xml", text: sc.collective.graph.text.replace('type="rrs"', 'type="rs"') } })).toBe('scenario.collective.graph.text: <algo> <gpu id="0"> <tb id="0"> <step s="1">: type="rs" must be one of s, r, rcs, rrs, rrc, rrcs, cpy, re, nop');
    expect(() => resolveScenario(shipped)).toThrow('scenario.collective.graph.file: "../msccl/ring-allreduce-8.xml" is not read here: menic run reads it relative to the scenario file; through the API give the XML as text, or call inlineGraphFiles first');
    expect(() => inlineGraphFiles(shipped, () => { throw new Error("ENOENT: no such file"); })).toThrow("scenario.collective.graph.file: ../msccl/ring-allreduce-8.xml: ENOENT: no such file");
  });
});
