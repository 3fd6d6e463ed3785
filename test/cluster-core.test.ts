// The cluster's window loop in the core (assembly/cluster.ts) against the host's
// (host/fabric/runner.ts): devices built in their fabric's core instance run the same windows
// either way, so every time, counter and byte must come out the same.
import { describe, it, expect } from "vitest";
import { Context } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";
import { DeviceEndpoint } from "../host/cluster/endpoint.js";
import { Fabric } from "../host/fabric/fabric.js";
import { ClusterRunner } from "../host/fabric/runner.js";
import { leafSpine } from "../host/fabric/topology.js";
import { Device, DeviceFailedError, SnapshotError } from "../host/device.js";
import { CoreInstance } from "../host/wasm.js";

const pattern = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 29 + seed) & 0xff);

interface Setup {
  loop: "core" | "host";
  /** each device's extra config */
  config?: Record<string, number>;
  /** devices whose trace is collected (the core loop must hand them to the host after every step with output) */
  traced?: number[];
  loss?: number;
  /** every device WRITEs to device 0 (an incast) instead of to the next one */
  incast?: boolean;
  bytes?: number;
  /** the fabric's payload mode (full by default; timing makes the devices timing-mode too) */
  mode?: "full" | "timing";
}

/** 6 devices in one core instance with their fabric (2 planes, full mode unless told); device d WRITEs to d + 1 (or to 0). */
async function cluster(s: Setup) {
  const n = 6, bytes = s.bytes ?? 40_000;
  const home = new CoreInstance(coreModule());
  const mode = s.mode ?? "full";
  const config = { engines: 1, ports: 4, scaleUpPorts: 4, hbmBytes: 1 << 20, hostMemBytes: 1 << 20, transportTimeoutPs: 65_536_000, timingMode: mode === "timing" ? 1 : 0, ...s.config };
  const ctxs = await Promise.all(Array.from({ length: n }, (_, d) => Context.open(home, { ...config, deviceId: d }, { collectTrace: s.traced?.includes(d) ?? false })));
  const fabric = new Fabric(home, leafSpine({ devices: n, ports: 4, planes: 2, devicesPerLeaf: 2, spines: 2 }), { mode, seed: 11 });
  if (s.loss) fabric.topology.links.forEach((_, k) => fabric.setLoss(k, { random: s.loss }));
  const runner = new ClusterRunner(fabric, ctxs.map((c) => new DeviceEndpoint(c.device)), { loop: s.loop });
  const ends = ctxs.map((ctx, d) => {
    const pd = ctx.allocPd(), cq = ctx.createCq(64);
    const src = ctx.allocHbm(bytes), dst = ctx.allocHbm(bytes * n);
    ctx.write(src, pattern(bytes, d));
    return { ctx, cq, pd, src, dst, smr: ctx.regMr(pd, src, bytes), dmr: ctx.regMr(pd, dst, bytes * n, ["REMOTE_WRITE"]) };
  });
  const connect = (ctx: Context, qp: ReturnType<Context["createQp"]>, destQpNum: number, destDevice: number) => {
    ctx.modifyQp(qp, { state: "INIT" });
    ctx.modifyQp(qp, { state: "RTR", destQpNum, destDevice });
    ctx.modifyQp(qp, { state: "RTS" });
  };
  ends.forEach((e, d) => {
    const to = s.incast ? (d === 0 ? 1 : 0) : (d + 1) % n;
    const t = ends[to]!;
    const tx = e.ctx.createQp(e.pd, { sendCq: e.cq, recvCq: e.cq, maxSendWr: 4, maxRecvWr: 4 });
    const rx = t.ctx.createQp(t.pd, { sendCq: t.cq, recvCq: t.cq, maxSendWr: 4, maxRecvWr: 4 });
    connect(e.ctx, tx, rx.qpn, to);
    connect(t.ctx, rx, tx.qpn, d);
    e.ctx.postSend(tx, [{ wrId: d, opcode: "RDMA_WRITE", signaled: true, localAddr: e.src, length: bytes, lkey: e.smr.lkey, remoteAddr: t.dst + d * bytes, rkey: t.dmr.rkey }]);
  });
  return { ctxs, ends, fabric, runner, bytes };
}

/** Everything a run produced: completions with their times, device counters, trace, fabric and runner counters, the bytes placed. */
async function outcome(s: Setup) {
  const { ends, fabric, runner, bytes } = await cluster(s);
  // in chunks, as a scenario runs it: the loop stops and starts again between them
  let idle = false;
  for (let t = 1; !idle && t <= 400; t++) idle = runner.runUntilIdle(t * 5_000_000);
  const r = runner.stats();
  return {
    idle,
    completions: ends.map((e) => e.ctx.pollCq(e.cq, 64).map((w) => `${w.wrId} ${w.status} ${w.timePs}`)),
    stats: ends.map((e) => e.ctx.device.stats()),
    trace: ends.map((e) => e.ctx.device.traceRecords.map((t) => `${t.timePs} ${t.point} ${t.arg}`)),
    placed: ends.map((e) => Buffer.from(e.ctx.read(e.dst, bytes * 6)).toString("base64")),
    fabric: fabric.stats(),
    runner: { ...r, stageDrops: runner.stageDrops() },
  };
}

describe("the cluster's window loop in the core", () => {
  it("runs a lossy ring exactly as the host's loop does: completions, times, counters, trace, bytes", async () => {
    const setup: Omit<Setup, "loop"> = { loss: 0.05, traced: [2, 5], bytes: 100_000 };
    const core = await outcome({ ...setup, loop: "core" }), host = await outcome({ ...setup, loop: "host" });
    expect(core.idle).toBe(true);
    // the run did what it should: every WRITE completed, with retransmissions after the losses
    expect(core.completions.flat().filter((c) => c.includes("SUCCESS"))).toHaveLength(6);
    expect(core.stats.reduce((a, s) => a + (s["roce.retransmits"] ?? 0), 0)).toBeGreaterThan(0);
    expect(core.trace[2]!.length).toBeGreaterThan(0);
    expect(core.runner.steps).toBeGreaterThan(0);
    expect(core).toEqual(host);
  });

  it("runs a lossy ring in timing mode exactly as the host's loop does, arrivals written straight into the receive rings", async () => {
    // a receive ring of 24 records: some windows bring more than it has room for (the stage's way then), most do not
    const setup: Omit<Setup, "loop"> = { mode: "timing", loss: 0.05, bytes: 100_000, config: { rxRingEntries: 24 } };
    const core = await outcome({ ...setup, loop: "core" }), host = await outcome({ ...setup, loop: "host" });
    expect(core.idle).toBe(true);
    expect(core.completions.flat().filter((c) => c.includes("SUCCESS"))).toHaveLength(6);
    expect(core.stats.reduce((a, s) => a + (s["port.rx_packets"] ?? 0), 0)).toBeGreaterThan(6 * 24);
    expect(core).toEqual(host);
  });

  it("loses the arrivals a device's receive stage cannot hold, counted as the host's loop counts them", async () => {
    // 5 senders into one 4-port device whose stage holds 16 frames a window, in 256-byte packets (a link brings up to 60 a window)
    const setup: Omit<Setup, "loop"> = { incast: true, config: { rxRingEntries: 16, mtuBytes: 256, transportTimeoutPs: 4_096_000 }, bytes: 20_000 };
    const core = await outcome({ ...setup, loop: "core" }), host = await outcome({ ...setup, loop: "host" });
    expect(core.runner.stageDrops).toBeGreaterThan(0);
    expect(core).toEqual(host);
  });

  it("throws the failure of a device it steps, at the same time as the host's loop", async () => {
    const failure = async (loop: "core" | "host") => {
      const { ends, runner } = await cluster({ loop, config: { maxQps: 12, eventCapacity: 6 } });
      // device 3 also starts 8 WRITEs to itself at once: more pending phases than its 6 events
      const e = ends[3]!;
      const qps = Array.from({ length: 8 }, () => e.ctx.createQp(e.pd, { sendCq: e.cq, recvCq: e.cq, maxSendWr: 1, maxRecvWr: 1 }));
      for (const qp of qps) {
        e.ctx.modifyQp(qp, { state: "INIT" });
        e.ctx.modifyQp(qp, { state: "RTR", destQpNum: qp.qpn });
        e.ctx.modifyQp(qp, { state: "RTS" });
      }
      qps.forEach((qp, i) => e.ctx.postSend(qp, [{ wrId: 100 + i, opcode: "RDMA_WRITE", signaled: true, localAddr: e.src, length: 20_000, lkey: e.smr.lkey, remoteAddr: e.dst, rkey: e.dmr.rkey }], { doorbell: "express" }));
      let thrown: unknown;
      try {
        runner.runUntilIdle(1e9);
      } catch (err) {
        thrown = err;
      }
      return { thrown, failed: ends.map((x) => x.ctx.device.stats()["sched.overflow"]), now: ends.map((x) => x.ctx.nowPs) };
    };
    const core = await failure("core"), host = await failure("host");
    expect(core.thrown).toBeInstanceOf(DeviceFailedError);
    expect(core.failed[3]).toBe(1);
    expect(String(core.thrown)).toBe(String(host.thrown));
    expect(core.failed).toEqual(host.failed);
    expect(core.now).toEqual(host.now);
  });

  it("refuses to restore a device of a shared instance into one of its own, saying why; the first one restores", async () => {
    const home = new CoreInstance(coreModule());
    const config = { engines: 1, hbmBytes: 1 << 20, hostMemBytes: 1 << 20 };
    const first = await Device.create(home, config), second = await Device.create(home, config);
    await expect(Device.restore(coreModule(), second.save())).rejects.toThrow(SnapshotError);
    await expect(Device.restore(coreModule(), second.save())).rejects.toThrow(/shared a CoreInstance/);
    const again = await Device.restore(coreModule(), first.save());
    expect(again.nowPs).toBe(first.nowPs);
  });
});
