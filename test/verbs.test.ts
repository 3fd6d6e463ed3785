import { describe, it, expect } from "vitest";
import { Context, VerbsError, type Qp, type Cq, type Pd } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";

async function loopback(config: Record<string, number> = {}, depth = 16) {
  const ctx = await Context.open(coreModule(), { engines: 2, ...config }, { collectTrace: true });
  const pd = ctx.allocPd();
  const cqA = ctx.createCq(depth), cqB = ctx.createCq(depth);
  const a = ctx.createQp(pd, { sendCq: cqA, recvCq: cqA, maxSendWr: 16, maxRecvWr: 16 });
  const b = ctx.createQp(pd, { sendCq: cqB, recvCq: cqB, maxSendWr: 16, maxRecvWr: 16 });
  for (const [q, peer] of [[a, b], [b, a]] as const) {
    ctx.modifyQp(q, { state: "INIT" });
    ctx.modifyQp(q, { state: "RTR", destQpNum: peer.qpn });
    ctx.modifyQp(q, { state: "RTS" });
  }
  return { ctx, pd, cqA, cqB, a, b };
}

/** A buffer with 64 guard bytes (0xEE) on each side, registered as `length` bytes in the middle. */
function guarded(ctx: Context, pd: Pd, where: "host" | "hbm", length: number, access: Parameters<Context["regMr"]>[3] = []) {
  const raw = where === "host" ? ctx.allocHostMemory(length + 128) : ctx.allocHbm(length + 128);
  ctx.view(raw, length + 128).fill(0xee);
  const addr = raw + 64;
  const mr = ctx.regMr(pd, addr, length, access);
  const guardsIntact = () => {
    const all = ctx.read(raw, length + 128);
    return all.subarray(0, 64).every((x) => x === 0xee) && all.subarray(64 + length).every((x) => x === 0xee);
  };
  return { addr, mr, guardsIntact };
}

const pattern = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

function drain(ctx: Context, cq: Cq, until = 1_000_000_000n) {
  ctx.run(ctx.nowPs + until);
  return ctx.pollCq(cq, 64);
}

describe("verbs loopback data movement", () => {
  it("RDMA WRITE places the bytes and completes once", async () => {
    const { ctx, pd, cqA, a } = await loopback();
    const src = guarded(ctx, pd, "host", 1000);
    const dst = guarded(ctx, pd, "hbm", 1000, ["LOCAL_WRITE", "REMOTE_WRITE"]);
    ctx.write(src.addr, pattern(1000, 1));
    ctx.postSend(a, [{ wrId: 7n, opcode: "RDMA_WRITE", signaled: true, localAddr: src.addr, length: 1000, lkey: src.mr.lkey, remoteAddr: dst.addr, rkey: dst.mr.rkey }]);
    expect(ctx.pollCq(cqA)).toEqual([]); // nothing before time passes
    const wcs = drain(ctx, cqA);
    // the completion's timestamp is when the request finished (its nic.wqe_done trace point)
    const doneAt = ctx.device.traceRecords.find((r) => r.point === "nic.wqe_done")!.timePs;
    expect(wcs).toEqual([{ wrId: 7n, status: "SUCCESS", opcode: "RDMA_WRITE", byteLen: 1000, qpNum: a.qpn, timePs: doneAt }]);
    expect(ctx.read(dst.addr, 1000)).toEqual(pattern(1000, 1));
    expect(dst.guardsIntact()).toBe(true);
    expect(drain(ctx, cqA)).toEqual([]);
  });

  it("SEND lands in the posted receive; SEND_WITH_IMM and WRITE_WITH_IMM carry the immediate", async () => {
    const { ctx, pd, cqA, cqB, a, b } = await loopback();
    const src = guarded(ctx, pd, "host", 256);
    const rx = guarded(ctx, pd, "host", 512, ["LOCAL_WRITE", "REMOTE_WRITE"]);
    ctx.write(src.addr, pattern(256, 9));
    ctx.postRecv(b, [
      { wrId: 100, localAddr: rx.addr, length: 512, lkey: rx.mr.lkey },
      { wrId: 101, localAddr: rx.addr + 256, length: 256, lkey: rx.mr.lkey },
      { wrId: 102, localAddr: rx.addr, length: 0, lkey: 0 },
    ]);
    ctx.postSend(a, [
      { wrId: 1, opcode: "SEND", signaled: true, localAddr: src.addr, length: 200, lkey: src.mr.lkey },
      { wrId: 2, opcode: "SEND_WITH_IMM", signaled: true, localAddr: src.addr, length: 256, lkey: src.mr.lkey, imm: 0xdeadbeef },
      { wrId: 3, opcode: "RDMA_WRITE_WITH_IMM", signaled: true, localAddr: src.addr, length: 16, lkey: src.mr.lkey, remoteAddr: rx.addr + 496, rkey: rx.mr.rkey, imm: 42 },
    ]);
    const sent = drain(ctx, cqA);
    expect(sent.map((w) => [w.wrId, w.status])).toEqual([[1n, "SUCCESS"], [2n, "SUCCESS"], [3n, "SUCCESS"]]);
    const got = ctx.pollCq(cqB);
    // a receive completes at the same moment as the send it matched (loopback: placed at Done)
    const sentAt = sent.map((w) => w.timePs);
    expect(got).toEqual([
      { wrId: 100n, status: "SUCCESS", opcode: "RECV", byteLen: 200, qpNum: b.qpn, timePs: sentAt[0] },
      { wrId: 101n, status: "SUCCESS", opcode: "RECV", byteLen: 256, imm: 0xdeadbeef, qpNum: b.qpn, timePs: sentAt[1] },
      { wrId: 102n, status: "SUCCESS", opcode: "RDMA_WRITE_WITH_IMM", byteLen: 16, imm: 42, qpNum: b.qpn, timePs: sentAt[2] },
    ]);
    const rxBytes = ctx.read(rx.addr, 512);
    expect(rxBytes.subarray(0, 200)).toEqual(pattern(256, 9).subarray(0, 200));
    expect(rxBytes.subarray(256, 496)).toEqual(pattern(256, 9).subarray(0, 240));
    expect(rxBytes.subarray(496, 512)).toEqual(pattern(256, 9).subarray(0, 16));
    expect(rx.guardsIntact()).toBe(true);
  });

  it("RDMA READ and COPY move bytes the other way and locally", async () => {
    const { ctx, pd, cqA, a } = await loopback();
    const remote = guarded(ctx, pd, "hbm", 4096, ["REMOTE_READ"]);
    const local = guarded(ctx, pd, "host", 4096, ["LOCAL_WRITE"]);
    const copy = guarded(ctx, pd, "hbm", 4096, ["LOCAL_WRITE"]);
    ctx.write(remote.addr, pattern(4096, 3));
    ctx.postSend(a, [
      { wrId: 1, opcode: "RDMA_READ", signaled: true, localAddr: local.addr, length: 4096, lkey: local.mr.lkey, remoteAddr: remote.addr, rkey: remote.mr.rkey },
      { wrId: 2, opcode: "COPY", signaled: true, localAddr: copy.addr, length: 4096, lkey: copy.mr.lkey, remoteAddr: local.addr, rkey: local.mr.lkey },
    ]);
    expect(drain(ctx, cqA).map((w) => w.status)).toEqual(["SUCCESS", "SUCCESS"]);
    expect(ctx.read(local.addr, 4096)).toEqual(pattern(4096, 3));
    expect(ctx.read(copy.addr, 4096)).toEqual(pattern(4096, 3));
    expect(local.guardsIntact() && copy.guardsIntact()).toBe(true);
  });

  it("does not signal unsignaled successes unless the QP signals all", async () => {
    const { ctx, pd, cqA, a } = await loopback();
    const buf = guarded(ctx, pd, "hbm", 64, ["LOCAL_WRITE", "REMOTE_WRITE"]);
    const w = { opcode: "RDMA_WRITE" as const, localAddr: buf.addr, length: 8, lkey: buf.mr.lkey, remoteAddr: buf.addr + 32, rkey: buf.mr.rkey };
    ctx.postSend(a, [{ wrId: 1, ...w }, { wrId: 2, ...w, signaled: true }]);
    expect(drain(ctx, cqA).map((c) => c.wrId)).toEqual([2n]);
  });
});

describe("bad work requests complete with the matching status and write nothing outside", () => {
  it.each([
    ["an unknown opcode", { opcode: 99 }, "LOC_QP_OP_ERR"],
    ["a length beyond the local region", { length: 2000 }, "LOC_PROT_ERR"],
    ["a wrong lkey", { lkey: 0x1234 }, "LOC_PROT_ERR"],
    ["an rkey used as lkey", { useRkeyAsLkey: true }, "LOC_PROT_ERR"],
    ["a wrong rkey", { rkey: 0x80001234 }, "REM_ACCESS_ERR"],
    ["a remote range beyond its region", { remoteOffset: 1000 }, "REM_ACCESS_ERR"],
    ["a target without REMOTE_WRITE", { noRemoteWrite: true }, "REM_ACCESS_ERR"],
  ] as const)("%s", async (_name, bad: Record<string, unknown>, status) => {
    const { ctx, pd, cqA, a } = await loopback();
    const src = guarded(ctx, pd, "host", 1024);
    const dst = guarded(ctx, pd, "hbm", 1024, bad.noRemoteWrite ? ["LOCAL_WRITE"] : ["LOCAL_WRITE", "REMOTE_WRITE"]);
    const before = ctx.read(dst.addr - 64, 1024 + 128);
    const wr = {
      wrId: 5, opcode: "RDMA_WRITE" as const, signaled: true, localAddr: src.addr, length: (bad.length as number) ?? 512,
      lkey: bad.useRkeyAsLkey ? src.mr.rkey : ((bad.lkey as number) ?? src.mr.lkey),
      remoteAddr: dst.addr + ((bad.remoteOffset as number) ?? 0), rkey: (bad.rkey as number) ?? dst.mr.rkey,
    };
    if (bad.opcode) {
      // encode a valid entry, then overwrite its opcode byte in the ring, before the doorbell is seen
      ctx.postSend(a, [wr]);
      ctx.view(a.sqRing, 1)[0] = bad.opcode as number;
    } else ctx.postSend(a, [wr]);
    // a second request behind it is flushed: every posted request completes exactly once
    ctx.postSend(a, [{ ...wr, wrId: 6, length: 8, lkey: src.mr.lkey, remoteAddr: dst.addr, rkey: dst.mr.rkey }]);
    const wcs = drain(ctx, cqA);
    expect(wcs.map((w) => [w.wrId, w.status])).toEqual([[5n, status], [6n, "WR_FLUSH_ERR"]]);
    expect(ctx.qpState(a)).toBe("ERR");
    expect(ctx.read(dst.addr - 64, 1024 + 128)).toEqual(before);
    expect(src.guardsIntact() && dst.guardsIntact()).toBe(true);
  });

  it("a SEND bigger than the posted receive fails on both sides", async () => {
    const { ctx, pd, cqA, cqB, a, b } = await loopback();
    const src = guarded(ctx, pd, "host", 256);
    const rx = guarded(ctx, pd, "host", 100, ["LOCAL_WRITE"]);
    const before = ctx.read(rx.addr - 64, 228);
    ctx.postRecv(b, [{ wrId: 9, localAddr: rx.addr, length: 100, lkey: rx.mr.lkey }]);
    ctx.postSend(a, [{ wrId: 1, opcode: "SEND", localAddr: src.addr, length: 256, lkey: src.mr.lkey }]);
    expect(drain(ctx, cqA).map((w) => w.status)).toEqual(["REM_INV_REQ_ERR"]);
    expect(ctx.pollCq(cqB).map((w) => [w.wrId, w.status])).toEqual([[9n, "LOC_LEN_ERR"]]);
    expect(ctx.qpState(b)).toBe("ERR");
    expect(ctx.read(rx.addr - 64, 228)).toEqual(before);
  });

  it("a SEND with no posted receive retries, then fails with RNR_RETRY_EXC_ERR", async () => {
    const { ctx, pd, cqA, a } = await loopback({ rnrRetries: 2, rnrTimerPs: 1_000_000 });
    const src = guarded(ctx, pd, "host", 64);
    ctx.postSend(a, [{ wrId: 1, opcode: "SEND", localAddr: src.addr, length: 64, lkey: src.mr.lkey }]);
    ctx.run(1_500_000n); // doorbell + 1 retry period: still retrying
    expect(ctx.pollCq(cqA)).toEqual([]);
    expect(drain(ctx, cqA).map((w) => w.status)).toEqual(["RNR_RETRY_EXC_ERR"]);
    expect(ctx.device.stats()["nic.rnr_retries"]).toBe(2);
  });

  it("a SEND that finds a receive posted during its retries succeeds", async () => {
    const { ctx, pd, cqA, b, a } = await loopback({ rnrRetries: 3, rnrTimerPs: 1_000_000 });
    const src = guarded(ctx, pd, "host", 64);
    const rx = guarded(ctx, pd, "host", 64, ["LOCAL_WRITE"]);
    ctx.postSend(a, [{ wrId: 1, opcode: "SEND", signaled: true, localAddr: src.addr, length: 64, lkey: src.mr.lkey }]);
    ctx.run(1_500_000n);
    ctx.postRecv(b, [{ wrId: 2, localAddr: rx.addr, length: 64, lkey: rx.mr.lkey }]);
    expect(drain(ctx, cqA).map((w) => w.status)).toEqual(["SUCCESS"]);
  });

  it("a target QP that never becomes ready ends in RETRY_EXC_ERR after the retries", async () => {
    const ctx = await Context.open(coreModule(), { engines: 1, transportRetries: 3, transportTimeoutPs: 2_000_000 });
    const pd = ctx.allocPd();
    const cq = ctx.createCq(8);
    const a = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 });
    const b = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 }); // stays in RESET
    ctx.modifyQp(a, { state: "INIT" });
    ctx.modifyQp(a, { state: "RTR", destQpNum: b.qpn });
    ctx.modifyQp(a, { state: "RTS" });
    const src = guarded(ctx, pd, "host", 64);
    ctx.postSend(a, [{ wrId: 1, opcode: "SEND", localAddr: src.addr, length: 64, lkey: src.mr.lkey }]);
    ctx.run(7_000_000n); // three timeouts of 2 us have not all passed
    expect(ctx.pollCq(cq)).toEqual([]);
    ctx.run(20_000_000n);
    expect(ctx.pollCq(cq).map((w) => w.status)).toEqual(["RETRY_EXC_ERR"]);
    expect(ctx.device.stats()["nic.transport_retries"]).toBe(3);
  });

  it("a full CQ overruns into the error state instead of losing completions silently", async () => {
    const { ctx, pd, cqA, a } = await loopback({}, 2);
    const buf = guarded(ctx, pd, "hbm", 64, ["LOCAL_WRITE", "REMOTE_WRITE"]);
    const w = { opcode: "RDMA_WRITE" as const, signaled: true, localAddr: buf.addr, length: 8, lkey: buf.mr.lkey, remoteAddr: buf.addr + 32, rkey: buf.mr.rkey };
    ctx.postSend(a, [1, 2, 3, 4].map((id) => ({ wrId: id, ...w })));
    ctx.run(ctx.nowPs + 100_000_000n);
    expect(ctx.pollCq(cqA, 8).map((c) => c.wrId)).toEqual([1n, 2n]);
    expect(() => ctx.pollCq(cqA)).toThrow(VerbsError);
    expect(() => ctx.pollCq(cqA)).toThrow(/CQ \d+ overran/);
    expect(ctx.device.stats()["cq.overrun"]).toBeGreaterThanOrEqual(1);
    expect(ctx.qpState(a)).toBe("ERR");
  });
});

describe("verbs control path", () => {
  it("rejects bad objects and transitions with a message", async () => {
    const { ctx, pd, a, cqA } = await loopback();
    expect(() => ctx.modifyQp(a, { state: "INIT" })).toThrow(/no transition from RTS to INIT/);
    expect(() => ctx.regMr(pd, 0x40000000, 16)).toThrow(/cannot register/);
    expect(() => ctx.destroyCq(cqA)).toThrow(/still used by a QP/);
    expect(() => ctx.deallocPd(pd)).toThrow(/in use/);
    const mr = ctx.regMr(pd, ctx.allocHbm(64), 64);
    ctx.deregMr(mr);
    expect(() => ctx.deregMr(mr)).toThrow(/not registered/);
  });

  it("destroying a QP completes what was posted with WR_FLUSH_ERR", async () => {
    // b (QP 1, not 0) posts three opcodes, so that a completion naming QP 0 or opcode 0
    // (RDMA_WRITE) by default, or one entry's opcode for another's, would show
    const { ctx, pd, cqB, a, b } = await loopback();
    expect([a.qpn, b.qpn]).toEqual([0, 1]);
    const buf = guarded(ctx, pd, "host", 64, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
    const w = { signaled: true, localAddr: buf.addr + 32, length: 8, lkey: buf.mr.lkey, remoteAddr: buf.addr, rkey: buf.mr.rkey };
    ctx.postSend(b, [{ wrId: 1, opcode: "RDMA_READ", ...w }, { wrId: 2, opcode: "SEND", ...w }, { wrId: 3, opcode: "RDMA_WRITE", ...w }]);
    ctx.run(ctx.nowPs + 1_300_000n); // the fetch is done and the READ is in flight
    expect(ctx.device.stats()["nic.wqes"]).toBe(1);
    const destroyedAt = ctx.nowPs;
    ctx.destroyQp(b);
    ctx.run(ctx.nowPs + 100_000_000n);
    // the request in flight and the two behind it: each once, in order, flushed, no bytes, at the destroy
    const flushed = (wrId: bigint, opcode: string) => ({ wrId, status: "WR_FLUSH_ERR", opcode, byteLen: 0, qpNum: 1, timePs: destroyedAt });
    expect(ctx.pollCq(cqB)).toEqual([flushed(1n, "RDMA_READ"), flushed(2n, "SEND"), flushed(3n, "RDMA_WRITE")]);
    expect(ctx.pollCq(cqB)).toEqual([]);
    expect(buf.guardsIntact()).toBe(true);
    expect(ctx.read(buf.addr + 32, 8)).toEqual(new Uint8Array(8).fill(0xee)); // the READ placed nothing
  });
});

describe("bad REDUCE requests", () => {
  async function reduceCase(mutate: (w: ReturnType<typeof baseWr>, ctx: Context, pd: Pd) => void) {
    const { ctx, pd, cqA, a } = await loopback();
    const dst = guarded(ctx, pd, "hbm", 256, ["LOCAL_WRITE"]);
    const s0 = guarded(ctx, pd, "hbm", 256), s1 = guarded(ctx, pd, "hbm", 256);
    const w = baseWr(dst, s0, s1);
    mutate(w, ctx, pd);
    const before = ctx.read(dst.addr - 64, 384);
    ctx.postSend(a, [w]);
    const wcs = drain(ctx, cqA);
    expect(ctx.read(dst.addr - 64, 384)).toEqual(before);
    return wcs.map((c) => c.status);
  }
  type G = ReturnType<typeof guarded>;
  function baseWr(dst: G, s0: G, s1: G) {
    return {
      wrId: 1, opcode: "REDUCE" as const, signaled: true, localAddr: dst.addr, length: 256, lkey: dst.mr.lkey,
      reduce: { op: "SUM" as const, dtype: "F32" as "F32" | "BF16", sources: [{ addr: s0.addr, lkey: s0.mr.lkey }, { addr: s1.addr, lkey: s1.mr.lkey }] },
    };
  }
  it("a length that is not a multiple of the element size: LOC_LEN_ERR", async () => {
    expect(await reduceCase((w) => { w.length = 254; })).toEqual(["LOC_LEN_ERR"]);
    expect(await reduceCase((w) => { w.length = 255; w.reduce.dtype = "BF16"; })).toEqual(["LOC_LEN_ERR"]);
  });
  it("more than 8 sources, or fewer than 2: LOC_QP_OP_ERR", async () => {
    expect(await reduceCase((w) => { w.reduce.sources = new Array(9).fill(w.reduce.sources[0]); })).toEqual(["LOC_QP_OP_ERR"]);
    expect(await reduceCase((w) => { w.reduce.sources = [w.reduce.sources[0]]; })).toEqual(["LOC_QP_OP_ERR"]);
  });
  it("a wrong source key, a destination without LOCAL_WRITE: LOC_PROT_ERR; a source in host memory does not fit the entry", async () => {
    // src_addr is 32 bits: a host-memory source (DMA address above 2^32) is refused before posting, not truncated
    await expect(reduceCase((w, ctx, pd) => {
      const host = ctx.allocHostMemory(256);
      w.reduce.sources[1] = { addr: host, lkey: ctx.regMr(pd, host, 256).lkey };
    })).rejects.toThrow(/wrs\[0\]\.reduce\.sources\[1\]\.addr must be an integer 0\.\.4294967295/);
    expect(await reduceCase((w) => { w.reduce.sources[0].lkey ^= 0x100; })).toEqual(["LOC_PROT_ERR"]);
    expect(await reduceCase((w, ctx, pd) => { w.lkey = ctx.regMr(pd, w.localAddr, 256).lkey; })).toEqual(["LOC_PROT_ERR"]);
  });
});

describe("NIC determinism", () => {
  async function busy() {
    const { ctx, pd, a, b } = await loopback({ hbmBytes: 4 << 20 });
    const src = guarded(ctx, pd, "host", 65536);
    const dst = guarded(ctx, pd, "hbm", 65536, ["LOCAL_WRITE", "REMOTE_WRITE"]);
    ctx.write(src.addr, pattern(65536, 5));
    ctx.device.setComputeLoad(20_000);
    for (let i = 0; i < 4; i++) {
      ctx.postSend(a, [{ wrId: i, opcode: "RDMA_WRITE", signaled: true, localAddr: src.addr, length: 65536, lkey: src.mr.lkey, remoteAddr: dst.addr, rkey: dst.mr.rkey }], { doorbell: i % 2 ? "express" : "classic" });
      ctx.postRecv(b, [{ wrId: 100 + i, localAddr: dst.addr, length: 65536, lkey: dst.mr.lkey }]);
      ctx.postSend(a, [{ wrId: 10 + i, opcode: "SEND", signaled: true, localAddr: src.addr, length: 4096, lkey: src.mr.lkey }]);
    }
    return ctx;
  }
  it("gives the same bytes after save and restore in the middle of transfers", async () => {
    const whole = await busy();
    whole.run(50_000_000n);
    const half = await busy();
    half.run(5_000_000n);
    const startedAtSave = half.device.stats()["nic.wqes"];
    expect(startedAtSave).toBeGreaterThan(0); // the save falls while requests are in flight
    expect(startedAtSave).toBeLessThan(8);
    const resumed = await (await import("../host/device.js")).Device.restore(coreModule(), half.device.save());
    resumed.advance(50_000_000n);
    expect(whole.device.stats()["nic.wqes"]).toBe(8); // every request has run
    expect(Buffer.compare(resumed.save(), whole.device.save())).toBe(0);
  });
});

describe("targets that change while a request is in flight", () => {
  it("a SEND whose target goes to error mid-flight ends in RETRY_EXC_ERR and places nothing", async () => {
    const { ctx, pd, cqA, cqB, a, b } = await loopback();
    const src = guarded(ctx, pd, "host", 65536);
    const rx = guarded(ctx, pd, "host", 65536, ["LOCAL_WRITE"]);
    const before = ctx.read(rx.addr, 65536);
    ctx.write(src.addr, pattern(65536, 4));
    ctx.postRecv(b, [{ wrId: 9, localAddr: rx.addr, length: 65536, lkey: rx.mr.lkey }]);
    ctx.postSend(a, [{ wrId: 1, opcode: "SEND", signaled: true, localAddr: src.addr, length: 65536, lkey: src.mr.lkey }]);
    ctx.run(1_500_000n); // the 64 KiB read over PCIe is under way
    ctx.modifyQp(b, { state: "ERR" }); // flushes b's receive
    expect(ctx.pollCq(cqB).map((w) => [w.wrId, w.status])).toEqual([[9n, "WR_FLUSH_ERR"]]);
    expect(drain(ctx, cqA).map((w) => w.status)).toEqual(["RETRY_EXC_ERR"]);
    expect(ctx.read(rx.addr, 65536)).toEqual(before);
    expect(ctx.pollCq(cqB)).toEqual([]); // the flushed receive completed once, not twice
  });
});

describe("a QP moved to error while a request waits", () => {
  it("flushes the waiting request instead of retrying it", async () => {
    const { ctx, pd, cqA, a } = await loopback({ rnrRetries: 5, rnrTimerPs: 1_000_000 });
    const src = guarded(ctx, pd, "host", 64);
    ctx.postSend(a, [{ wrId: 1, opcode: "SEND", localAddr: src.addr, length: 64, lkey: src.mr.lkey }]);
    ctx.run(1_500_000n); // waiting for its first RNR retry
    ctx.modifyQp(a, { state: "ERR" });
    expect(drain(ctx, cqA).map((w) => [w.wrId, w.status])).toEqual([[1n, "WR_FLUSH_ERR"]]);
    expect(ctx.device.stats()["nic.rnr_retries"]).toBe(1);
    expect(ctx.device.stats()["nic.flushed"]).toBe(1);
    expect(ctx.device.stats()["nic.errors"]).toBe(0);
  });
});

describe("engine SRAM through the NIC interface", () => {
  it("an RDMA WRITE lands in engine 1's SRAM at DMA_SRAM + 1 x SRAM_WINDOW", async () => {
    const { DMA, REGIONS } = await import("../host/generated/layouts.js");
    const { ctx, pd, cqA, a } = await loopback({}, 16);
    const sram1 = DMA.DMA_SRAM + 1 * REGIONS.SRAM.window + 0x8000;
    const src = guarded(ctx, pd, "hbm", 256);
    const dstMr = ctx.regMr(pd, sram1, 256, ["LOCAL_WRITE", "REMOTE_WRITE"]);
    const hbmDst = guarded(ctx, pd, "hbm", 256, ["LOCAL_WRITE", "REMOTE_WRITE"]);
    ctx.write(src.addr, pattern(256, 8));
    const w = { opcode: "RDMA_WRITE" as const, signaled: true, localAddr: src.addr, length: 256, lkey: src.mr.lkey };
    ctx.postSend(a, [{ ...w, wrId: 1, remoteAddr: sram1, rkey: dstMr.rkey }, { ...w, wrId: 2, remoteAddr: hbmDst.addr, rkey: hbmDst.mr.rkey }]);
    expect(drain(ctx, cqA).map((c) => c.status)).toEqual(["SUCCESS", "SUCCESS"]);
    // the bytes are in engine 1's own SRAM at 0x8000, where its firmware sees them
    const sramView = new Uint8Array(ctx.device.core.memory.buffer, ctx.device.core.sramPtr(ctx.device.handle, 1) + 0x8000, 256);
    expect(sramView).toEqual(pattern(256, 8));
    expect(ctx.read(hbmDst.addr, 256)).toEqual(pattern(256, 8));
    // an SRAM range that runs past the engine's SRAM is not memory at all
    expect(() => ctx.regMr(pd, DMA.DMA_SRAM + REGIONS.SRAM.window - 128, 256)).toThrow(/cannot register/);
    // when, by hand from the default config (docs/nic.md, "Executing a request"): one classic
    // doorbell, an 8 B posted write (300 ns + 8 B at 512 Gb/s), then the NIC reads both 128 B
    // entries from host memory (800 ns + 256 B at 512 Gb/s); the requests then run one by one
    const rec = ctx.device.traceRecords;
    const starts = rec.filter((r) => r.point === "nic.wqe_start").map((r) => Number(r.timePs));
    const dones = rec.filter((r) => r.point === "nic.wqe_done").map((r) => Number(r.timePs));
    expect(starts[0]).toBe(300_000 + 125 + 800_000 + 4_000);
    expect(starts[1]).toBe(dones[0]);
    const dmaPs = 256 / 1.2; // 256 B at nicDmaGbps (9600 Gb/s = 1.2 B/ps)
    const cqePs = 300_000 + 500; // the 32 B CQE over PCIe into the host CQ
    // decode 20 ns, the HBM source's latency 100 ns, the source through HBM at the DMA rate;
    // then the SRAM destination costs nicSramLatencyPs (10 ns) and the NIC interface's DMA rate
    const toSramPs = 20_000 + 100_000 + dmaPs + 10_000 + dmaPs + cqePs;
    // against an HBM destination, written through HBM with the source read (512 B of flow)
    const toHbmPs = 20_000 + 100_000 + 2 * dmaPs + cqePs;
    // each stream ends on a whole ps, rounded up: up to 1 ps later apiece
    expect(dones[0] - starts[0] - toSramPs).toBeGreaterThanOrEqual(0);
    expect(dones[0] - starts[0] - toSramPs).toBeLessThan(2);
    expect(dones[1] - starts[1] - toHbmPs).toBeGreaterThanOrEqual(0);
    expect(dones[1] - starts[1] - toHbmPs).toBeLessThan(1);
  });
});

describe("destroying a QP that holds its reduction block", () => {
  it("hands the block to the QP waiting for it", async () => {
    const ctx = await Context.open(coreModule(), { engines: 1 }); // every host QP uses block 0
    const pd = ctx.allocPd();
    const cq = ctx.createCq(16);
    const qps = [0, 1].map(() => {
      const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 1 });
      ctx.modifyQp(qp, { state: "INIT" });
      ctx.modifyQp(qp, { state: "RTR", destQpNum: qp.qpn });
      ctx.modifyQp(qp, { state: "RTS" });
      return qp;
    });
    const area = ctx.allocHbm(3 << 20);
    const mr = ctx.regMr(pd, area, 3 << 20, ["LOCAL_WRITE"]);
    const reduce = (wrId: number) => ({
      wrId, opcode: "REDUCE" as const, signaled: true, localAddr: area + (2 << 20), length: 1 << 20, lkey: mr.lkey,
      reduce: { op: "SUM" as const, dtype: "I32" as const, sources: [{ addr: area, lkey: mr.lkey }, { addr: area + (1 << 20), lkey: mr.lkey }] },
    });
    ctx.postSend(qps[0], [reduce(1)]);
    ctx.postSend(qps[1], [reduce(2)]);
    ctx.run(1_500_000n); // QP 0 streams through the block, QP 1 waits for it
    ctx.destroyQp(qps[0]);
    ctx.run(1_000_000_000n);
    const wcs = ctx.pollCq(cq).map((w) => [w.wrId, w.status]);
    expect(wcs).toEqual([[1n, "WR_FLUSH_ERR"], [2n, "SUCCESS"]]);
  });
});

describe("host inputs at a later time", () => {
  it("a WRITE whose doorbell leaves 10 us later completes exactly 10 us later", async () => {
    const times: bigint[] = [];
    for (const later of [0n, 10_000_000n]) {
      const { ctx, pd, cqA, a } = await loopback();
      const src = ctx.allocHbm(4096), dst = ctx.allocHbm(4096);
      const smr = ctx.regMr(pd, src, 4096), dmr = ctx.regMr(pd, dst, 4096, ["REMOTE_WRITE"]);
      const t0 = ctx.nowPs;
      ctx.postSend(a, [{ wrId: 1, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: 4096, lkey: smr.lkey, remoteAddr: dst, rkey: dmr.rkey }], { atPs: t0 + later });
      expect(drain(ctx, cqA).map((w) => w.status)).toEqual(["SUCCESS"]);
      const done = ctx.device.traceRecords.filter((r) => r.point === "nic.wqe_done").map((r) => r.timePs);
      times.push(done[0]! - t0);
      expect(() => ctx.postRecv(a, [{ wrId: 2, localAddr: dst, length: 64, lkey: dmr.lkey }], { atPs: 0n })).toThrow(RangeError);
    }
    expect(times[1]! - times[0]!).toBe(10_000_000n);
  });
});
