// A core instance past 2 GiB (a cluster's devices share one, up to 2 GiB of arenas plus the
// fabric's tables): every address the core hands the host arrives as a signed i32, and one above
// 2^31 is negative unless the host takes it as unsigned. WAS: a 64-device collective in full mode
// failed building its devices ("Start offset -2145496240 is outside the bounds of the buffer",
// host/device.ts's config slot); the statistics, HBM and port ring addresses had the same flaw.
import { describe, it, expect } from "vitest";
import { coreModule } from "../host/platform/node.js";
import { CoreInstance } from "../host/wasm.js";
import { Context } from "../host/verbs.js";
import { DevicePorts } from "../host/ports.js";

describe("a device whose arena lies above 2 GiB of its instance", () => {
  it("is built, and its memory, counters and rings are reached at the right addresses", async () => {
    const home = new CoreInstance(coreModule());
    // devices of 800 MiB of HBM each until one's arena starts past 2^31 (their pages are never
    // touched but for what the test writes, so this costs little memory)
    const ctxs: Context[] = [];
    const base = (c: Context) => c.device.core.arenaBase(c.device.handle) >>> 0;
    while (ctxs.length < 6 && (ctxs.length === 0 || base(ctxs.at(-1)!) < 2 ** 31)) ctxs.push(await Context.open(home, { engines: 1, hbmBytes: 800 * 2 ** 20, deviceId: ctxs.length }));
    const third = ctxs.at(-1)!;
    expect(base(third)).toBeGreaterThan(2 ** 31);
    // HBM: written and read back through the host's view, and by the NIC (a local COPY)
    const a = third.allocHbm(8192), b = a + 4096;
    const bytes = Uint8Array.from({ length: 4096 }, (_, i) => (i * 13) & 0xff);
    third.write(a, bytes);
    expect(third.read(a, 4096)).toEqual(bytes);
    // counters: a fresh device's, all 0, and the port ring addresses aligned where the core keeps them
    expect(Object.values(third.device.stats()).every((v) => v === 0)).toBe(true);
    const ports = new DevicePorts(third.device);
    expect(ports.stageRoom.frames).toBeGreaterThan(0);
    // a QP writing to itself moves the bytes through the NIC: the WQE scratch, HBM and the CQ all above 2 GiB
    const pd = third.allocPd(), cq = third.createCq(4);
    const mr = third.regMr(pd, a, 8192, ["LOCAL_WRITE", "REMOTE_WRITE"]);
    const qp = third.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 });
    for (const state of ["INIT", "RTR", "RTS"] as const) third.modifyQp(qp, { state, destQpNum: qp.qpn });
    third.postSend(qp, [{ wrId: 1, opcode: "RDMA_WRITE", signaled: true, localAddr: a, length: 4096, lkey: mr.lkey, remoteAddr: b, rkey: mr.rkey }]);
    third.run(third.nowPs + 100_000_000n);
    expect(third.pollCq(cq, 4).map((w) => w.status)).toEqual(["SUCCESS"]);
    expect(third.read(b, 4096)).toEqual(bytes);
    expect(third.device.stats()["nic.wqes"]).toBe(1);
  });

  it("one more than the instance's 4 GiB can hold is refused, saying so, and the devices in it run on", async () => {
    // WAS: the allocator's arithmetic wrapped past 2^32 and the next device was laid over the
    // bottom of memory: "RuntimeError: memory access out of bounds" from Device.create
    const home = new CoreInstance(coreModule());
    const ctxs: Context[] = [];
    const open = () => Context.open(home, { engines: 1, hbmBytes: 900 * 2 ** 20, deviceId: ctxs.length });
    let refused: unknown;
    while (ctxs.length < 8) {
      try { ctxs.push(await open()); } catch (e) { refused = e; break; }
    }
    expect(ctxs.length).toBe(4); // four arenas of ~930 MiB, and the tables before them
    expect(refused).toBeInstanceOf(RangeError);
    expect(String(refused)).toMatch(/no room for another device: its devices and tables hold \d+ MiB of the 4 GiB.*an arena of \d+ MiB/);
    // the last one built still moves bytes through its NIC
    const last = ctxs.at(-1)!, a = last.allocHbm(8192);
    const pd = last.allocPd(), cq = last.createCq(4);
    const mr = last.regMr(pd, a, 8192, ["LOCAL_WRITE", "REMOTE_WRITE"]);
    const qp = last.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 });
    for (const state of ["INIT", "RTR", "RTS"] as const) last.modifyQp(qp, { state, destQpNum: qp.qpn });
    last.write(a, Uint8Array.from({ length: 64 }, (_, i) => i));
    last.postSend(qp, [{ wrId: 1, opcode: "RDMA_WRITE", signaled: true, localAddr: a, length: 64, lkey: mr.lkey, remoteAddr: a + 4096, rkey: mr.rkey }]);
    last.run(last.nowPs + 100_000_000n);
    expect(last.pollCq(cq, 4).map((w) => w.status)).toEqual(["SUCCESS"]);
    expect(last.read(a + 4096, 64)).toEqual(Uint8Array.from({ length: 64 }, (_, i) => i));
  });
});
