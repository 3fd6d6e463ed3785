import { describe, it, expect } from "vitest";
import { Device } from "../host/device.js";
import { Context } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";
import { writeElf } from "./helpers/rv.js";
import { WQE, STATUS } from "../host/generated/layouts.js";

// A small deterministic generator (xorshift32) so that a failure replays exactly.
function rng(seed: number) {
  let x = seed >>> 0 || 1;
  return () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), x >>> 0);
}

const CAUSES = new Set([0, 1, 2, 3, 4, 5, 6, 7, 11]);

describe("garbage never takes the emulator down", () => {
  it("random instruction words: every engine faults with a defined cause, runs, sleeps or exits", async () => {
    for (let seed = 1; seed <= 4; seed++) {
      const next = rng(seed);
      const words = Uint32Array.from({ length: 4096 }, () => next());
      const dev = await Device.create(coreModule(), { engines: 16 });
      dev.loadElf(writeElf(0, [{ vaddr: 0, data: new Uint8Array(words.buffer), flags: 7 }]));
      // each engine starts somewhere else in the garbage
      for (let e = 0; e < 16; e++) dev.core.startEngine(dev.handle, e, (next() % 4096) * 4);
      dev.run(20_000_000n);
      for (let e = 0; e < 16; e++) {
        const r = dev.engine(e);
        expect(["faulted", "running", "sleeping", "exited"]).toContain(r.state);
        if (r.state === "faulted") expect(CAUSES.has(r.mcause!)).toBe(true);
      }
    }
  });

  it("random work requests: each completes with some status and nothing lands outside registered memory", async () => {
    const next = rng(7);
    const ctx = await Context.open(coreModule(), { engines: 2, transportTimeoutPs: 100_000, rnrTimerPs: 100_000 });
    const pd = ctx.allocPd();
    const cq = ctx.createCq(256);
    const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 128, maxRecvWr: 16 });
    ctx.modifyQp(qp, { state: "INIT" });
    ctx.modifyQp(qp, { state: "RTR", destQpNum: qp.qpn });
    ctx.modifyQp(qp, { state: "RTS" });
    // one registered HBM region with guards, and everything else in HBM filled with a pattern
    const hbmBytes = Number(ctx.device.config.get("hbmBytes"));
    const all = ctx.view(0x80000000, hbmBytes);
    all.fill(0x5a);
    const region = 0x80000000 + (1 << 20);
    const mr = ctx.regMr(pd, region, 4096, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
    let completed = 0;
    const statuses = new Map<string, number>();
    for (let i = 0; i < 128; i++) {
      if (ctx.qpState(qp) === "ERR") {
        ctx.modifyQp(qp, { state: "RESET" });
        ctx.modifyQp(qp, { state: "INIT" });
        ctx.modifyQp(qp, { state: "RTR", destQpNum: qp.qpn });
        ctx.modifyQp(qp, { state: "RTS" });
      }
      ctx.postSend(qp, [{ wrId: i, opcode: "RDMA_WRITE", signaled: true }]);
      // scribble random bytes over the entry just written, keeping only its wr_id
      const slot = ctx.view(qp.sqRing + ((qp.sqPosted - 1) % qp.sqDepth) * WQE.SIZE, WQE.SIZE);
      const id = slot.slice(WQE.wr_id, WQE.wr_id + 8);
      for (let b = 0; b < WQE.SIZE; b++) slot[b] = next() & 0xff;
      const dv = new DataView(slot.buffer, slot.byteOffset, WQE.SIZE);
      // aim most addresses and keys at the region, so that many requests are valid or nearly so
      if (next() % 4) { dv.setBigUint64(WQE.laddr, BigInt(region + (next() % 4096)), true); dv.setUint32(WQE.lkey, mr.lkey, true); }
      if (next() % 4) { dv.setBigUint64(WQE.raddr, BigInt(region + (next() % 4096)), true); dv.setUint32(WQE.rkey, next() % 4 ? mr.rkey : mr.lkey, true); }
      if (next() % 4) dv.setUint8(WQE.opcode, [0, 4, 17, 16, 1, 2][next() % 6]);
      dv.setUint32(WQE.length, next() % 2 ? next() % 512 : next() % 8192, true);
      dv.setUint8(WQE.flags, 1);
      slot.set(id, WQE.wr_id);
      ctx.run(ctx.nowPs + 50_000_000n);
      const wcs = ctx.pollCq(cq, 256);
      expect(wcs.map((w) => w.wrId)).toEqual([BigInt(i)]);
      statuses.set(wcs[0].status, (statuses.get(wcs[0].status) ?? 0) + 1);
      completed += wcs.length;
    }
    expect(completed).toBe(128); // every request completed exactly once
    // some requests were valid and moved bytes; outside the registered region HBM is untouched
    // (the queues and the CQ live in host memory)
    expect(statuses.get("SUCCESS") ?? 0).toBeGreaterThan(4);
    expect(statuses.size).toBeGreaterThan(3); // and several kinds of failure
    const outside = [...all.subarray(0, 1 << 20), ...all.subarray((1 << 20) + 4096)];
    expect(outside.every((b) => b === 0x5a)).toBe(true);
  });
});
