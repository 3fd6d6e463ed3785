import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { Context } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";
import { STATUS } from "../host/generated/layouts.js";

// firmware/examples/nic.c: engine 0 posts an express RDMA WRITE and a classic REDUCE on its own
// QP and sleeps in wfi until each completion interrupt.
describe("an engine drives the NIC from firmware", () => {
  it("writes through the express window, reduces through a classic doorbell, and sleeps until each completion", async () => {
    const ctx = await Context.open(coreModule(), { engines: 2 }, { collectTrace: true });
    const dev = ctx.device;
    const img = dev.loadElf(readFileSync("firmware/examples/nic.elf"));
    const pd = ctx.allocPd();
    const cq = ctx.createCq(8, { engine: 0 });
    const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 8, maxRecvWr: 8, engine: 0 });
    ctx.modifyQp(qp, { state: "INIT" });
    ctx.modifyQp(qp, { state: "RTR", destQpNum: qp.qpn }); // connected to itself
    ctx.modifyQp(qp, { state: "RTS" });
    const n = 1024; // f32 elements
    const area = ctx.allocHbm(3 * 4 * n);
    const mr = ctx.regMr(pd, area, 3 * 4 * n, ["LOCAL_WRITE", "REMOTE_WRITE"]);
    const src = area, dst = area + 4 * n, rdst = area + 8 * n;
    const values = Float32Array.from({ length: n }, (_, i) => (i - 512) * 0.75);
    ctx.write(src, new Uint8Array(values.buffer));

    dev.start(img.entry);
    for (const word of [qp.qpn, qp.sqRing, qp.sqDepth, cq.cqn, cq.ring, cq.depth, src, mr.lkey, dst, mr.rkey, 4 * n, rdst, mr.lkey])
      expect(dev.mailboxPush(0, word)).toBe(true);
    dev.run(1_000_000_000n);

    expect(dev.engine(0)).toMatchObject({ state: "exited", exitCode: 0 });
    const mail = [dev.mailboxPop(0), dev.mailboxPop(0), dev.mailboxPop(0), dev.mailboxPop(0)];
    expect([mail[0], mail[2]]).toEqual([STATUS.SUCCESS, STATUS.SUCCESS]);
    expect(new Float32Array(ctx.read(dst, 4 * n).buffer)).toEqual(values);
    expect(new Float32Array(ctx.read(rdst, 4 * n).buffer)).toEqual(values.map((v) => v * 2));
    // the engine slept through both waits: woken twice, by its NIC interrupt
    expect(dev.engine(0).sleepPs).toBeGreaterThan(0);
    expect(dev.traceRecords.filter((r) => r.point === "engine.wake" && r.engine === 0)).toHaveLength(2);
    // NIC time of each request, start to completion written, from the default config:
    //   write:  20 ns decode + 100 ns HBM latency + 8 KiB (read + write) at 1.2 TB/s + 100 ns CQE into HBM
    //   reduce: 20 ns decode + 20 ns setup + 100 ns HBM latency + 2 x 4 KiB of sources at
    //           128 B/cycle x 1.37 GHz (plus the 4 KiB written alongside) + 100 ns CQE
    const starts = dev.traceRecords.filter((r) => r.point === "nic.wqe_start").map((r) => r.timePs);
    const dones = dev.traceRecords.filter((r) => r.point === "nic.wqe_done").map((r) => r.timePs);
    expect(dones.map((d, k) => Number(d - starts[k]))).toEqual([
      20_000 + 100_000 + Math.ceil(8192 / (9600 / 8000)) + 100_000,
      20_000 + 20_000 + 100_000 + Math.ceil(12288 / ((128 * 1.37e6) / 1e9 * 1.5)) + 100_000,
    ]);
    // the engine's own wait includes posting and reading the CQE back from HBM (100 ns a load)
    expect(mail[1]!).toBeGreaterThan((226_827 * 1.37) / 1000);
    expect(dev.console(0)).toMatch(/^express write: status 0, wr_id 1, 4096 bytes, \d+ cycles\nclassic reduce: status 0, wr_id 2, 4096 bytes, \d+ cycles\n$/);
  });
});
