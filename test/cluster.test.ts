import { describe, it, expect } from "vitest";
import { Context } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";
import { DeviceEndpoint } from "../host/cluster/endpoint.js";
import { Fabric } from "../host/fabric/fabric.js";
import { ClusterRunner } from "../host/fabric/runner.js";
import { leafSpine } from "../host/fabric/topology.js";

const pattern = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

/**
 * `n` devices with 4 ports on a 2-plane leaf/spine (2 devices per leaf, 2 spines per plane).
 * Device d WRITEs `bytes` to device (d + 1) % n: its QP "tx" is connected to the next device's
 * QP "rx" (an RC pair), each on the scale-up ports.
 */
async function ring(n: number, bytes: number, stepOrder?: number[]) {
  const config = { engines: 1, ports: 4, scaleUpPorts: 4, hbmBytes: 1 << 20 };
  const ctxs = await Promise.all(Array.from({ length: n }, (_, d) => Context.open(coreModule(), { ...config, deviceId: d }, { collectTrace: true })));
  const fabric = new Fabric(coreModule(), leafSpine({ devices: n, ports: 4, planes: 2, devicesPerLeaf: 2, spines: 2 }), { mode: "full", seed: 7 });
  const runner = new ClusterRunner(fabric, ctxs.map((c) => new DeviceEndpoint(c.device)), { stepOrder });
  const ends = ctxs.map((ctx, d) => {
    const pd = ctx.allocPd(), cq = ctx.createCq(16);
    const qp = () => ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 });
    const src = ctx.allocHbm(bytes), dst = ctx.allocHbm(bytes);
    ctx.write(src, pattern(bytes, d));
    return { ctx, cq, tx: qp(), rx: qp(), src, dst, smr: ctx.regMr(pd, src, bytes), dmr: ctx.regMr(pd, dst, bytes, ["REMOTE_WRITE"]) };
  });
  const connect = (ctx: Context, qp: ReturnType<Context["createQp"]>, destQpNum: number, destDevice: number) => {
    ctx.modifyQp(qp, { state: "INIT" });
    ctx.modifyQp(qp, { state: "RTR", destQpNum, destDevice });
    ctx.modifyQp(qp, { state: "RTS" });
  };
  ends.forEach((e, d) => {
    const next = (d + 1) % n, prev = (d + n - 1) % n;
    connect(e.ctx, e.tx, ends[next]!.rx.qpn, next);
    connect(e.ctx, e.rx, ends[prev]!.tx.qpn, prev);
  });
  for (const [d, e] of ends.entries()) {
    const to = ends[(d + 1) % n]!;
    e.ctx.postSend(e.tx, [{ wrId: d, opcode: "RDMA_WRITE", signaled: true, localAddr: e.src, length: bytes, lkey: e.smr.lkey, remoteAddr: to.dst, rkey: to.dmr.rkey }]);
  }
  return { ctxs, ends, fabric, runner };
}

describe("devices on a leaf/spine fabric", () => {
  it("a ring of WRITEs crosses leaves and spines and every one lands, completed once", async () => {
    const { ends, fabric, runner } = await ring(4, 65536);
    expect(runner.runUntilIdle(1e10)).toBe(true);
    for (const [d, e] of ends.entries()) {
      expect(e.ctx.pollCq(e.cq, 8).map((w) => [Number(w.wrId), w.status])).toEqual([[d, "SUCCESS"]]);
      expect(e.ctx.read(e.dst, 65536)).toEqual(pattern(65536, (d + 3) % 4));
      expect(e.ctx.device.stats()["roce.retransmits"]).toBe(0);
    }
    // 4 x 16 data frames and 4 ACKs; every frame crossed host link, leaf, (spine, leaf,) host link
    const s = fabric.stats();
    expect(JSON.stringify(s.drops ?? {})).not.toMatch(/[1-9]/);
  });

  it("gives the same times and counters whatever order the devices are stepped in", async () => {
    const times = async (order?: number[]) => {
      const { ends, runner, fabric } = await ring(4, 20000, order);
      runner.runUntilIdle(1e10);
      return JSON.stringify({
        done: ends.map((e) => e.ctx.device.traceRecords.filter((r) => r.point === "nic.wqe_done").map((r) => r.timePs.toString())),
        stats: fabric.stats(),
      });
    };
    expect(await times([3, 1, 0, 2])).toBe(await times());
  });
});
