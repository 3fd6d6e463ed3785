// Collectives run by the engines' graph executor (issue 9): devices on a fabric, the host binds
// the program, rings one doorbell per device, and the results are checked bit for bit against
// the reference executor.
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { Context } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";
import { Fabric, ClusterRunner, singleSwitch } from "../host/fabric/index.js";
import { DeviceEndpoint } from "../host/cluster/endpoint.js";
import { readGraphJson, runReference, allReduceRing, allReduceHalvingDoubling, allReduceTree, allToAll, allGatherRing, bindProgram, executorsReady, graphDeviceConfig, type GraphProgram } from "../host/graph/index.js";

const EXECUTOR = readFileSync("firmware/graph/executor.elf");

/** Devices on one switch, each running the executor; the program bound to them. */
async function cluster(p: GraphProgram, config: Record<string, number> = {}, loss = 0, downDevice = -1) {
  const contexts: Context[] = [];
  for (let d = 0; d < p.devices; d++) {
    const ctx = await Context.open(coreModule(), { ...graphDeviceConfig(p), ...config, deviceId: d, seed: 7 });
    const img = ctx.device.loadElf(EXECUTOR);
    ctx.device.start(img.entry);
    contexts.push(ctx);
  }
  const topo = singleSwitch({ devices: p.devices, ports: Number(contexts[0].device.config.get("ports")) });
  const fabric = new Fabric(coreModule(), topo, { mode: "full", seed: 7 });
  if (loss > 0) topo.links.forEach((_, l) => fabric.setLoss(l, { random: loss }));
  // every link of one device fails for good before anything is sent
  if (downDevice >= 0) topo.links.forEach((L, l) => L.device === downDevice && fabric.failLink(l, 1_000_000));
  const runner = new ClusterRunner(fabric, contexts.map((c) => new DeviceEndpoint(c.device)));
  while (!executorsReady(contexts)) runner.runTo(runner.nowPs + 10_000_000); // the engines boot and sleep
  const run = bindProgram(contexts, p);
  return { contexts, runner, run };
}

/** Runs until every device reports its final signal or `limitPs`; the end state and the time. */
function finish(c: Awaited<ReturnType<typeof cluster>>, limitPs = 2_000_000_000) {
  const t0 = c.runner.nowPs;
  c.run.start();
  for (;;) {
    c.runner.runTo(c.runner.nowPs + 1_000_000);
    const s = c.run.poll();
    if (s.state !== "running" || c.runner.nowPs - t0 >= limitPs) return { s, elapsedPs: c.runner.nowPs - t0 };
  }
}

/** The first byte where a and b differ, -1 when they are equal (vitest's toEqual walks big arrays slowly). */
function firstDiff(a: Uint8Array, b: Uint8Array | undefined): number {
  if (!b || a.length !== b.length) return 0;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
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
    for (let d = 0; d < 4; d++) expect(firstDiff(c.run.read(d, "out"), ref.buffers[d].get("out"))).toBe(-1);
  });

  for (const [transport, loss] of [["rocev2", 0], ["metaroce", 0], ["metaroce", 0.01]] as const) {
    it(`ring all-reduce (f32 sum) on 8 devices x 16 engines, ${transport}${loss ? ", 1% loss" : ""}`, async () => {
      const p = allReduceRing({ devices: 8, engines: 16, bytes: 256 * 1024, dtype: "f32" });
      const ins = inputs(p, 3).map((b) => new Uint8Array(Float32Array.from({ length: b.length / 4 }, (_, i) => (b[i] - 128) / 16 + i / 1024).buffer));
      const c = await cluster(p, { transport: transport === "metaroce" ? 1 : 0 }, loss);
      ins.forEach((b, d) => c.run.write(d, "in", b));
      const { s } = finish(c);
      expect(s).toEqual({ state: "done", devices: 8 });
      const ref = runReference(p, (rank, name) => (name === "in" ? ins[rank] : undefined));
      for (let d = 0; d < 8; d++) expect(firstDiff(c.run.read(d, "out"), ref.buffers[d].get("out"))).toBe(-1);
    });
  }

  for (const [name, make] of [
    ["halving-doubling all-reduce (bf16 sum)", () => allReduceHalvingDoubling({ devices: 8, engines: 8, bytes: 64 * 1024, dtype: "bf16" })],
    ["all-to-all", () => allToAll({ devices: 8, engines: 8, bytes: 16 * 1024, dtype: "i32" })],
    ["all-gather", () => allGatherRing({ devices: 6, engines: 4, bytes: 16 * 1024, dtype: "i32" })],
  ] as const) {
    it(`${name} on the engines, bit for bit the reference's`, async () => {
      const p = make();
      const ins = inputs(p, 4);
      const c = await cluster(p, { transport: 1 });
      ins.forEach((b, d) => c.run.write(d, "in", b));
      expect(finish(c).s).toEqual({ state: "done", devices: p.devices });
      const ref = runReference(p, (rank, b) => (b === "in" ? ins[rank] : undefined));
      for (let d = 0; d < p.devices; d++) expect(firstDiff(c.run.read(d, "out"), ref.buffers[d].get("out"))).toBe(-1);
    });
  }

  for (const [devices, engines, dtype, transport, chunkBytes] of [[5, 4, "i32", 0, 4096], [3, 1, "i32", 1, 8192], [12, 16, "bf16", 1, 65536]] as const) {
    it(`double binary tree all-reduce (${dtype} sum) on ${devices} devices x ${engines} engines, ${transport ? "metaroce" : "rocev2"}: bit for bit the reference's${dtype === "i32" ? " and the plain wrapped sum" : ""}`, async () => {
      const p = allReduceTree({ devices, engines, bytes: 48 * 1024, dtype, chunkBytes });
      const ins = inputs(p, 5).map((b) => (dtype === "bf16" ? b.map((x, i) => (i % 2 ? 0x3c | (x & 0x80) : x)) : b));
      const c = await cluster(p, { transport });
      ins.forEach((b, d) => c.run.write(d, "in", b));
      expect(finish(c).s).toEqual({ state: "done", devices });
      const ref = runReference(p, (rank, b) => (b === "in" ? ins[rank] : undefined));
      for (let d = 0; d < devices; d++) expect(firstDiff(c.run.read(d, "out"), ref.buffers[d].get("out"))).toBe(-1);
      if (dtype !== "i32") return;
      const words = ins.map((b) => new Int32Array(b.buffer));
      const sum = Int32Array.from(words[0], (_, i) => words.reduce((a, v) => (a + v[i]) | 0, 0));
      for (let d = 0; d < devices; d++) expect(firstDiff(c.run.read(d, "out"), new Uint8Array(sum.buffer))).toBe(-1);
    });
  }

  it("a device whose links all fail ends the run with an error naming the node, not a hang", async () => {
    const p = allReduceRing({ devices: 4, engines: 2, bytes: 4096, dtype: "i32" });
    // RoCEv2 gives up after its retries: 3 x 20 us here instead of the default 67 ms
    const c = await cluster(p, { transportTimeoutPs: 20_000_000, transportRetries: 2 }, 0, 2);
    const { s, elapsedPs } = finish(c, 10_000_000_000);
    expect(s.state).toBe("failed");
    if (s.state !== "failed") return;
    // device 1 sends to device 2 (its next on the ring) and waits for it in vain
    expect(s.device).toBe(1);
    expect(s.status).toBe("RETRY_EXC_ERR");
    expect(s.where).toMatch(/^ranks\[1\]\.nodes\[\d+\] \(send "rs0\.send" on engine [01]\)$/);
    // it took the retries: the 20 us timer ran out more than twice, and not four times
    expect(elapsedPs).toBeGreaterThan(40_000_000);
    expect(elapsedPs).toBeLessThan(80_000_000);
    // what is left: device 3 still waits for what device 2 never sent
    expect(c.run.pending(3).map((i) => p.ranks[3].nodes[i].name)).toContain("rs0.recv");
  });
});
