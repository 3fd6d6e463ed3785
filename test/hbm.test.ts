import { describe, it, expect } from "vitest";
import { Context } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";
import { programElf } from "./helpers/rv.js";

const MIB = 1 << 20;

/** 16 host QPs (QP i uses reduction block i), each reducing two 1 MiB f32 buffers at once. */
async function sixteenReductions(config: Record<string, number>, computeGbps = 0) {
  const ctx = await Context.open(coreModule(), { engines: 16, hbmBytes: 64 * MIB, ...config }, { collectTrace: true });
  const pd = ctx.allocPd();
  const cq = ctx.createCq(64);
  const jobs = [];
  for (let i = 0; i < 16; i++) {
    const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 2, maxRecvWr: 1 });
    ctx.modifyQp(qp, { state: "INIT" });
    ctx.modifyQp(qp, { state: "RTR", destQpNum: qp.qpn });
    ctx.modifyQp(qp, { state: "RTS" });
    const area = ctx.allocHbm(3 * MIB);
    const mr = ctx.regMr(pd, area, 3 * MIB, ["LOCAL_WRITE"]);
    const a = new Float32Array(MIB / 4).map((_, k) => k + i), b = new Float32Array(MIB / 4).fill(0.5);
    ctx.write(area, new Uint8Array(a.buffer));
    ctx.write(area + MIB, new Uint8Array(b.buffer));
    jobs.push({ qp, area, mr, a });
  }
  ctx.device.setComputeLoad(computeGbps);
  for (const { qp, area, mr } of jobs) {
    ctx.postSend(qp, [{
      wrId: qp.qpn, opcode: "REDUCE", signaled: true, localAddr: area + 2 * MIB, length: MIB, lkey: mr.lkey,
      reduce: { op: "SUM", dtype: "F32", sources: [{ addr: area, lkey: mr.lkey }, { addr: area + MIB, lkey: mr.lkey }] },
    }]);
  }
  const t0 = ctx.nowPs;
  // time advances exactly as far as asked (the compute load never ends): 10 ns at a time
  // until all 16 have completed, so the compute load's share is measured while they stream
  const wcs: ReturnType<typeof ctx.pollCq> = [];
  while (wcs.length < 16 && ctx.nowPs < t0 + 1_000_000_000n) {
    ctx.run(ctx.nowPs + 10_000n);
    wcs.push(...ctx.pollCq(cq, 64));
  }
  expect(wcs.map((w) => w.status)).toEqual(new Array(16).fill("SUCCESS"));
  const rec = ctx.device.traceRecords;
  const start = new Map(rec.filter((r) => r.point === "nic.wqe_start").map((r) => [r.arg, Number(r.timePs)]));
  const done = new Map(rec.filter((r) => r.point === "nic.wqe_done").map((r) => [r.arg >> 8, Number(r.timePs)]));
  // each request is fixed latency (decode, setup, HBM latency, completion over PCIe) plus its
  // stream; the doorbells arrive 2 ns apart, so the 16 streams overlap all but a few ns
  const fixedPs = 20_000 + 20_000 + 100_000 + 300_500;
  const streamPs = [...start].reduce((s, [qpn, t]) => s + done.get(qpn)! - t - fixedPs, 0) / 16;
  const sourceTBps = (16 * 2 * MIB) / streamPs; // bytes per ps = TB/s
  const out = new Float32Array(ctx.read(jobs[3].area + 2 * MIB, MIB).buffer);
  expect(out[10]).toBe(jobs[3].a[10] + 0.5);
  const computeServed = ctx.device.hbmServed().compute;
  return { sourceTBps, streamPs, computeServed, elapsedPs: Number(ctx.nowPs - t0) };
}

describe("reduction blocks against HBM bandwidth", () => {
  it("16 blocks reach 16 x 128 B x 1.37 GHz = 2.806 TB/s of sources when HBM allows", async () => {
    // K = 2: HBM carries 1.5 x the source rate, 4.21 TB/s, below the 6.1 TB/s default
    const r = await sixteenReductions({});
    expect(r.sourceTBps).toBeCloseTo(2.806, 2);
  });

  it("become HBM-bound when HBM cannot carry 4.21 TB/s: 3.05 TB/s of HBM leaves 2/3 of it for sources", async () => {
    const r = await sixteenReductions({ hbmGbps: 24_400 });
    expect(r.sourceTBps).toBeCloseTo((3.05 * 2) / 3, 2);
  });

  it("share HBM max-min fairly with the compute load: compute gets what the reductions leave", async () => {
    const r = await sixteenReductions({}, 24_000); // compute asks for 3 TB/s
    expect(r.sourceTBps).toBeCloseTo(2.806, 2); // reductions are below their fair share: untouched
    // while they stream, compute is served 6.1 - 4.21 TB/s instead of the 3 TB/s it asked for
    const computeTBps = r.computeServed / r.elapsedPs;
    expect(computeTBps).toBeGreaterThan(1.89);
    expect(computeTBps).toBeLessThan(3.0);
  });
});

describe("engines' HBM accesses under load", () => {
  // 1000 loads from HBM in a loop: lw + addi + taken bne
  const LOADS = `
    li s0, 0x80000000
    li s1, 1000
  loop:
    lw t0, 0(s0)
    addi s1, s1, -1
    bne s1, zero, loop
    li t1, 0x10000004
    sw zero, 0(t1)
  `;
  async function loopCycles(computeGbps: number) {
    const ctx = await Context.open(coreModule(), { engines: 1 });
    const dev = ctx.device;
    dev.setComputeLoad(computeGbps);
    dev.start(dev.loadElf(programElf(LOADS)).entry);
    dev.run(1_000_000_000n);
    return dev.engine(0).cycles;
  }
  it("stretch with the utilisation the streams make: x (1 + 0.5 u / (1 - u))", async () => {
    const idle = await loopCycles(0), loaded = await loopCycles(24_400); // u = 0.5
    expect(idle).toBe(4 + 1000 * (137 + 1 + 3) - 2 + 2 + 8);
    expect(loaded).toBe(4 + 1000 * (Math.round(137 * 1.5) + 1 + 3) - 2 + 2 + 8);
  });
});
