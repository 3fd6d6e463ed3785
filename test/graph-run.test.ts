// Collectives run by the engines' graph executor (issue 9): devices on a fabric, the host binds
// the program, rings one doorbell per device, and the results are checked bit for bit against
// the reference executor.
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { Context } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";
import { Fabric, ClusterRunner, singleSwitch } from "../host/fabric/index.js";
import { DeviceEndpoint } from "../host/cluster/endpoint.js";
import { readGraphJson, runReference, allReduceRing, bindProgram, graphDeviceConfig, type GraphProgram } from "../host/graph/index.js";

const EXECUTOR = readFileSync("firmware/graph/executor.elf");

/** Devices on one switch, each running the executor; the program bound to them. */
async function cluster(p: GraphProgram, config: Record<string, number> = {}) {
  const contexts: Context[] = [];
  for (let d = 0; d < p.devices; d++) {
    const ctx = await Context.open(coreModule(), { ...graphDeviceConfig(p), ...config, deviceId: d, seed: 7 });
    const img = ctx.device.loadElf(EXECUTOR);
    ctx.device.start(img.entry);
    contexts.push(ctx);
  }
  const topo = singleSwitch({ devices: p.devices, ports: Number(contexts[0].device.config.get("ports")) });
  const fabric = new Fabric(topo, { mode: "full", seed: 7 });
  const runner = new ClusterRunner(fabric, contexts.map((c) => new DeviceEndpoint(c.device)));
  runner.runTo(2_000_000); // the engines boot and sleep
  const run = bindProgram(contexts, p);
  return { contexts, runner, run };
}

/** Runs until every device reports its final signal or `limitPs`; the end state and the time. */
function finish(c: Awaited<ReturnType<typeof cluster>>, limitPs = 2_000_000_000) {
  c.run.start();
  for (;;) {
    c.runner.runTo(c.runner.nowPs + 1_000_000);
    const s = c.run.poll();
    if (s.state !== "running" || c.runner.nowPs >= limitPs) return { s, nowPs: c.runner.nowPs };
  }
}

function inputs(p: GraphProgram, seed: number): Uint8Array[] {
  const bytes = p.buffers.find((b) => b.name === "in")!.bytes;
  return Array.from({ length: p.devices }, (_, d) => {
    let x = (seed * 7919 + d * 104729) | 0;
    return Uint8Array.from({ length: bytes }, () => ((x = (Math.imul(x, 1103515245) + 12345) | 0) >>> 16) & 0xff);
  });
}

describe("graphs run by the engines", () => {
  it("the worked example on 2 devices: out = in0 + in1 (f32) on both, bit for bit the reference's", async () => {
    const p = readGraphJson(readFileSync("examples/graphs/exchange-sum.json", "utf8"));
    const ins = inputs(p, 1).map((b) => new Uint8Array(Float32Array.from({ length: b.length / 4 }, (_, i) => (b[i] - 128) / 8).buffer));
    const c = await cluster(p);
    ins.forEach((b, d) => c.run.write(d, "in", b));
    const { s } = finish(c);
    expect(s).toEqual({ state: "done", devices: 2 });
    const ref = runReference(p, (rank, name) => (name === "in" ? ins[rank] : undefined));
    for (let d = 0; d < 2; d++) {
      expect(c.run.read(d, "out")).toEqual(ref.buffers[d].get("out"));
      expect(c.run.read(d, "tmp")).toEqual(ins[1 - d]);
    }
  });

  it("ring all-reduce (i32 sum) on 4 devices with 4 engines each", async () => {
    const p = allReduceRing({ devices: 4, engines: 4, bytes: 64 * 1024, dtype: "i32" });
    const ins = inputs(p, 2);
    const c = await cluster(p);
    ins.forEach((b, d) => c.run.write(d, "in", b));
    const { s } = finish(c);
    expect(s).toEqual({ state: "done", devices: 4 });
    const ref = runReference(p, (rank, name) => (name === "in" ? ins[rank] : undefined));
    for (let d = 0; d < 4; d++) expect(c.run.read(d, "out")).toEqual(ref.buffers[d].get("out"));
  });
});
