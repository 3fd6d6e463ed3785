// Regression tests for the NIC's queue promises (issue 6): every work request completes exactly
// once, whatever happens to its QP, its peer or its keys while it is in flight; doorbells are
// never lost on their way; engines act only on their own objects.
import { describe, it, expect } from "vitest";
import { Context, VerbsError, encodeWqe, type Cq, type Pd, type Wc } from "../host/verbs.js";
import { DeviceFailedError } from "../host/device.js";
import { coreModule } from "../host/platform/node.js";
import { programElf } from "./helpers/rv.js";
import { MMIO, CMD, CMD_ERR, WQE } from "../host/generated/layouts.js";

async function pair(config: Record<string, number> = {}, depth = 64) {
  const ctx = await Context.open(coreModule(), { engines: 2, ...config });
  const pd = ctx.allocPd();
  const cqA = ctx.createCq(depth), cqB = ctx.createCq(depth);
  const a = ctx.createQp(pd, { sendCq: cqA, recvCq: cqA, maxSendWr: 16, maxRecvWr: 16 });
  const b = ctx.createQp(pd, { sendCq: cqB, recvCq: cqB, maxSendWr: 16, maxRecvWr: 16 });
  for (const [q, peer] of [[a, b], [b, a]] as const) connect(ctx, q, peer.qpn);
  return { ctx, pd, cqA, cqB, a, b };
}

function connect(ctx: Context, q: Parameters<Context["modifyQp"]>[0], dest: number) {
  ctx.modifyQp(q, { state: "INIT" });
  ctx.modifyQp(q, { state: "RTR", destQpNum: dest });
  ctx.modifyQp(q, { state: "RTS" });
}

/** Runs until nothing is left to happen (1 ms at a time) and returns every completion of `cqs`. */
function settle(ctx: Context, ...cqs: Cq[]): Wc[] {
  const out: Wc[] = [];
  for (let k = 0; k < 20; k++) {
    ctx.run(ctx.nowPs + 1_000_000_000n);
    for (const cq of cqs) for (let w = ctx.pollCq(cq, 256); w.length; w = ctx.pollCq(cq, 256)) out.push(...w);
  }
  return out;
}

const ids = (wcs: Wc[]) => wcs.map((w) => Number(w.wrId));
const pattern = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

function buffers(ctx: Context, pd: Pd, bytes: number) {
  const src = ctx.allocHostMemory(bytes), dst = ctx.allocHbm(bytes);
  ctx.write(src, pattern(bytes, 3));
  return {
    src, dst,
    smr: ctx.regMr(pd, src, bytes),
    dmr: ctx.regMr(pd, dst, bytes, ["LOCAL_WRITE", "REMOTE_WRITE"]),
  };
}

describe("doorbells are never lost", () => {
  it("5,000 one-WR posts before time advances all complete (they used to overflow the event heap)", async () => {
    const ctx = await Context.open(coreModule(), { engines: 2 });
    const pd = ctx.allocPd();
    const cq = ctx.createCq(8192);
    const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 8192, maxRecvWr: 1 });
    connect(ctx, qp, qp.qpn);
    for (let i = 0; i < 5000; i++) ctx.postSend(qp, [{ wrId: i, opcode: "RDMA_WRITE", signaled: true }]);
    const wcs = settle(ctx, cq);
    expect(ids(wcs)).toEqual([...Array(5000).keys()]);
    expect(wcs.every((w) => w.status === "SUCCESS")).toBe(true);
    expect(ctx.device.stats()["sched.overflow"]).toBe(0);
  });

  it("a post beyond hostDoorbellQueue throws and loses nothing; after time advances posting goes on", async () => {
    const ctx = await Context.open(coreModule(), { engines: 2, hostDoorbellQueue: 8 });
    const pd = ctx.allocPd();
    const cq = ctx.createCq(64);
    const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 64, maxRecvWr: 1 });
    connect(ctx, qp, qp.qpn);
    for (let i = 0; i < 8; i++) ctx.postSend(qp, [{ wrId: i, opcode: "RDMA_WRITE", signaled: true }], { doorbell: i % 2 ? "express" : "classic" });
    expect(() => ctx.postSend(qp, [{ wrId: 99, opcode: "RDMA_WRITE", signaled: true }])).toThrow(VerbsError);
    ctx.run(ctx.nowPs + 100_000_000n);
    ctx.postSend(qp, [{ wrId: 8, opcode: "RDMA_WRITE", signaled: true }]);
    expect(ids(settle(ctx, cq))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it("an engine whose doorbell queue is full stalls until the oldest arrives; every doorbell counts", async () => {
    // engine 0 rings its QP's receive doorbell 40 times in a row with a queue of 2
    const ctx = await Context.open(coreModule(), { engines: 1, engineDoorbellQueue: 2, nicDoorbellLatencyPs: 50_000 });
    const pd = ctx.allocPd();
    const cq = ctx.createCq(64, { engine: 0 });
    const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 64, engine: 0 });
    const lines = [`li t0, ${MMIO.NIC.RQ_DB}`];
    for (let i = 1; i <= 40; i++) lines.push(`li t1, ${(qp.qpn << 16) | i}`, "sw t1, 0(t0)");
    lines.push(`li t0, ${MMIO.SYS.EXIT}`, "sw zero, 0(t0)");
    const dev = ctx.device;
    dev.start(dev.loadElf(programElf(lines.join("\n"))).entry);
    ctx.run(ctx.nowPs + 10_000_000n);
    expect(dev.engine(0).state).toBe("exited");
    expect(dev.core.qpRqDone(dev.handle, qp.qpn) >>> 0).toBe(0);
    // 40 receives posted, none lost: moving the QP to ERR flushes exactly 40
    ctx.modifyQp(qp, { state: "ERR" });
    const wcs = settle(ctx, cq);
    expect(wcs.length).toBe(40);
    expect(wcs.every((w) => w.status === "WR_FLUSH_ERR" && w.opcode === "RECV")).toBe(true);
    // 40 stores at ~1 cycle apart, 50 ns each in flight, two at a time: the engine waited
    expect(dev.stats()["nic.doorbell_stalls"]).toBeGreaterThan(0);
    expect(dev.engine(0).cycles).toBeGreaterThan(Math.floor((38 / 2) * 50 * 1.37));
  });
});

describe("a doorbell the ring cannot hold", () => {
  it("from firmware that over-posts: counted, and the QP goes to ERR instead of running overwritten entries", async () => {
    const ctx = await Context.open(coreModule(), { engines: 1 });
    const pd = ctx.allocPd();
    const cq = ctx.createCq(16, { engine: 0 });
    const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4, engine: 0 });
    connect(ctx, qp, qp.qpn);
    // six new entries announced on a 4-deep send queue
    const prog = [`li t0, ${MMIO.NIC.SQ_DB}`, `li t1, ${(qp.qpn << 16) | 6}`, "sw t1, 0(t0)", `li t0, ${MMIO.SYS.EXIT}`, "sw zero, 0(t0)"].join("\n");
    ctx.device.start(ctx.device.loadElf(programElf(prog)).entry);
    expect(settle(ctx, cq)).toEqual([]);
    expect(ctx.device.stats()["nic.bad_doorbell"]).toBe(1);
    expect(ctx.device.stats()["nic.wqes"]).toBe(0);
    expect(ctx.qpState(qp)).toBe("ERR");
  });
});

describe("every work request completes exactly once", () => {
  it("a QP moved to ERR with a request in flight flushes it and the entries behind it at once, in order, then flushes new ones once", async () => {
    const { ctx, pd, cqA, a } = await pair();
    const big = buffers(ctx, pd, 1 << 20);
    const wr = (wrId: number) => ({ wrId, opcode: "RDMA_WRITE" as const, signaled: true, localAddr: big.src, length: 1 << 20, lkey: big.smr.lkey, remoteAddr: big.dst, rkey: big.dmr.rkey });
    const before = ctx.read(big.dst, 1 << 20);
    ctx.postSend(a, [wr(1), wr(2), wr(3)]);
    ctx.run(ctx.nowPs + 3_000_000n); // request 1 is reading host memory over PCIe
    const erredAt = ctx.nowPs;
    ctx.modifyQp(a, { state: "ERR" });
    // request 1 had not executed: flushed with the rest, at the transition, before them
    const now = ctx.pollCq(cqA, 16);
    expect(now.map((w) => [Number(w.wrId), w.status, w.timePs])).toEqual([1, 2, 3].map((id) => [id, "WR_FLUSH_ERR", erredAt]));
    ctx.postSend(a, [wr(4)]);
    const wcs = settle(ctx, cqA);
    expect(wcs.map((w) => [Number(w.wrId), w.status])).toEqual([[4, "WR_FLUSH_ERR"]]);
    expect(ctx.read(big.dst, 1 << 20)).toEqual(before); // nothing placed
    ctx.postSend(a, [wr(5)]);
    expect(ids(settle(ctx, cqA))).toEqual([5]);
  });

  it("a send queue completes in posting order when its QP is destroyed in ERR with a request ended and entries still crossing PCIe (verbs model, seed 105253)", async () => {
    // the property's counterexample: a 1-byte WRITE in flight, the QP moved to ERR, a WRITE and
    // a receive posted (their doorbells still crossing PCIe, two at most), then destroyQp.
    // The destroy used to deliver the doorbells, flush the new WRITE behind the request in
    // flight, and flush that request last: completions 2, 3, 1.
    const { ctx, pd, cqA, a } = await pair({ hostDoorbellQueue: 2 });
    const src = ctx.allocHostMemory(64), dst = ctx.allocHostMemory(64);
    ctx.write(src, pattern(64, 9));
    const smr = ctx.regMr(pd, src, 64), dmr = ctx.regMr(pd, dst, 64, ["LOCAL_WRITE", "REMOTE_WRITE"]);
    const write = (wrId: number) => ({ wrId, opcode: "RDMA_WRITE" as const, signaled: true, localAddr: src, length: 1, lkey: smr.lkey, remoteAddr: dst, rkey: dmr.rkey });
    ctx.postSend(a, [write(1)]);
    ctx.run(ctx.nowPs + 1_500_000n);
    expect(ctx.pollCq(cqA, 16)).toEqual([]); // still in flight: its fetch and source read cross PCIe
    ctx.modifyQp(a, { state: "ERR" });
    const erredAt = ctx.nowPs;
    ctx.postSend(a, [write(2)]);
    ctx.postRecv(a, [{ wrId: 3, localAddr: dst, length: 64, lkey: dmr.lkey }]);
    expect(() => ctx.postSend(a, [write(4)])).toThrow(/doorbell/); // two doorbells are crossing PCIe
    ctx.destroyQp(a);
    const wcs = [...ctx.pollCq(cqA, 16), ...settle(ctx, cqA)];
    const send = wcs.filter((w) => w.opcode !== "RECV"), recv = wcs.filter((w) => w.opcode === "RECV");
    expect(send.map((w) => [Number(w.wrId), w.status, w.timePs])).toEqual([[1, "WR_FLUSH_ERR", erredAt], [2, "WR_FLUSH_ERR", erredAt]]);
    expect(recv.map((w) => [Number(w.wrId), w.status])).toEqual([[3, "WR_FLUSH_ERR"]]);
    expect(ctx.read(dst, 64)).toEqual(new Uint8Array(64)); // the WRITE in flight placed nothing
  });

  it("a peer's oversized SEND that errors a busy QP completes its entries once", async () => {
    const { ctx, pd, cqA, cqB, a, b } = await pair();
    const big = buffers(ctx, pd, 1 << 20);
    const small = ctx.allocHostMemory(64), msg = ctx.allocHostMemory(128);
    const smallMr = ctx.regMr(pd, small, 64, ["LOCAL_WRITE"]), msgMr = ctx.regMr(pd, msg, 128);
    const wr = (wrId: number) => ({ wrId, opcode: "RDMA_WRITE" as const, signaled: true, localAddr: big.src, length: 1 << 20, lkey: big.smr.lkey, remoteAddr: big.dst, rkey: big.dmr.rkey });
    ctx.postRecv(b, [{ wrId: 20, localAddr: small, length: 64, lkey: smallMr.lkey }]);
    ctx.postSend(b, [wr(10), wr(11), wr(12)]);
    ctx.run(ctx.nowPs + 3_000_000n);
    ctx.postSend(a, [{ wrId: 30, opcode: "SEND", signaled: true, localAddr: msg, length: 128, lkey: msgMr.lkey }]);
    const wcs = settle(ctx, cqA, cqB);
    expect(ids(wcs).sort((x, y) => x - y)).toEqual([10, 11, 12, 20, 30]);
    const status = Object.fromEntries(wcs.map((w) => [Number(w.wrId), w.status]));
    // a's reads queue behind b's first 1 MiB on PCIe, so b is on request 11 when the SEND
    // fails its receive and b goes to ERR: 11 has not executed and is flushed, then 12, in order
    expect(status).toEqual({ 10: "SUCCESS", 11: "WR_FLUSH_ERR", 12: "WR_FLUSH_ERR", 20: "LOC_LEN_ERR", 30: "REM_INV_REQ_ERR" });
    expect(ids(wcs.filter((w) => w.opcode !== "RECV" && w.qpNum === b.qpn))).toEqual([10, 11, 12]);
  });

  it("RESET discards what was posted, even entries whose doorbell had not arrived", async () => {
    for (const advance of [false, true]) {
      const ctx = await Context.open(coreModule(), { engines: 2 });
      const pd = ctx.allocPd();
      const cq = ctx.createCq(16);
      const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 8, maxRecvWr: 8 });
      ctx.modifyQp(qp, { state: "INIT" });
      ctx.postSend(qp, [1, 2, 3].map((wrId) => ({ wrId, opcode: "RDMA_WRITE" as const, signaled: true })));
      if (advance) ctx.run(ctx.nowPs + 10_000_000n);
      ctx.modifyQp(qp, { state: "RESET" });
      connect(ctx, qp, qp.qpn);
      ctx.postSend(qp, [{ wrId: 4, opcode: "RDMA_WRITE", signaled: true }]);
      expect(ids(settle(ctx, cq))).toEqual([4]);
    }
  });

  it("destroyQp flushes entries whose doorbell is still crossing PCIe", async () => {
    const ctx = await Context.open(coreModule(), { engines: 2 });
    const pd = ctx.allocPd();
    const cq = ctx.createCq(16);
    const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 8, maxRecvWr: 8 });
    connect(ctx, qp, qp.qpn);
    ctx.postSend(qp, [1, 2].map((wrId) => ({ wrId, opcode: "RDMA_WRITE" as const, signaled: true })));
    ctx.postSend(qp, [{ wrId: 3, opcode: "RDMA_WRITE", signaled: true }], { doorbell: "express" });
    ctx.destroyQp(qp);
    const wcs = settle(ctx, cq);
    expect(ids(wcs)).toEqual([1, 2, 3]);
    expect(wcs.every((w) => w.status === "WR_FLUSH_ERR")).toBe(true);
  });

  it("two QPs sending to one target each fill their own receive", async () => {
    const ctx = await Context.open(coreModule(), { engines: 2 });
    const pd = ctx.allocPd();
    const cq = ctx.createCq(16);
    const [x, y, target] = [0, 1, 2].map(() => ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 }));
    connect(ctx, target, x.qpn);
    connect(ctx, x, target.qpn);
    connect(ctx, y, target.qpn);
    const rx = ctx.allocHbm(128), rxMr = ctx.regMr(pd, rx, 128, ["LOCAL_WRITE"]);
    ctx.view(rx, 128).fill(0);
    ctx.postRecv(target, [{ wrId: 100, localAddr: rx, length: 64, lkey: rxMr.lkey }, { wrId: 101, localAddr: rx + 64, length: 64, lkey: rxMr.lkey }]);
    const msgs = [x, y].map((qp, k) => {
      const m = ctx.allocHostMemory(64);
      ctx.write(m, pattern(64, 50 + k));
      ctx.postSend(qp, [{ wrId: k, opcode: "SEND", signaled: true, localAddr: m, length: 64, lkey: ctx.regMr(pd, m, 64).lkey }]);
      return pattern(64, 50 + k);
    });
    const wcs = settle(ctx, cq);
    expect(wcs.map((w) => [Number(w.wrId), w.status, w.byteLen]).sort((p, q) => (p[0] as number) - (q[0] as number)))
      .toEqual([[0, "SUCCESS", 64], [1, "SUCCESS", 64], [100, "SUCCESS", 64], [101, "SUCCESS", 64]]);
    const got = [ctx.read(rx, 64), ctx.read(rx + 64, 64)];
    expect(got).toContainEqual(msgs[0]);
    expect(got).toContainEqual(msgs[1]);
  });

  it("a WRITE whose target region is deregistered in flight lands nothing and completes REM_ACCESS_ERR", async () => {
    const { ctx, pd, cqA, a } = await pair();
    const big = buffers(ctx, pd, 1 << 16);
    ctx.view(big.dst, 1 << 16).fill(0x77);
    ctx.postSend(a, [{ wrId: 1, opcode: "RDMA_WRITE", signaled: true, localAddr: big.src, length: 1 << 16, lkey: big.smr.lkey, remoteAddr: big.dst, rkey: big.dmr.rkey }]);
    ctx.run(ctx.nowPs + 1_500_000n); // started: reading the source over PCIe
    expect(ctx.device.stats()["nic.wqes"]).toBe(1);
    ctx.deregMr(big.dmr);
    const wcs = settle(ctx, cqA);
    expect(wcs.map((w) => [Number(w.wrId), w.status])).toEqual([[1, "REM_ACCESS_ERR"]]);
    expect(ctx.read(big.dst, 1 << 16).every((v) => v === 0x77)).toBe(true);
  });
});

/** `n` looped-back QPs, each with one express RDMA WRITE of 64 KiB from HBM to HBM posted (wrId = its index). */
async function hbmWriters(n: number, config: Record<string, number>) {
  const ctx = await Context.open(coreModule(), { engines: 2, ...config });
  const pd = ctx.allocPd();
  const cq = ctx.createCq(1024);
  const src = ctx.allocHbm(1 << 16), dst = ctx.allocHbm(1 << 16);
  const smr = ctx.regMr(pd, src, 1 << 16), dmr = ctx.regMr(pd, dst, 1 << 16, ["REMOTE_WRITE"]);
  const qps = Array.from({ length: n }, () => ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 1, maxRecvWr: 1 }));
  for (const qp of qps) connect(ctx, qp, qp.qpn);
  qps.forEach((qp, i) => ctx.postSend(qp, [{ wrId: i, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: 1 << 16, lkey: smr.lkey, remoteAddr: dst, rkey: dmr.rkey }], { doorbell: "express" }));
  return { ctx, cq, qps };
}

describe("an event queue that overflows", () => {
  it("fails the run loudly: counted, the device stops, the host throws", async () => {
    // 8 WRITEs start together and each has a phase pending: an override of 4 events is too few
    // (the default sizes the queue from the tables: never too few)
    const { ctx, cq } = await hbmWriters(8, { maxQps: 8, maxCqs: 2, eventCapacity: 4 });
    expect(() => ctx.run(ctx.nowPs + 100_000_000n)).toThrow(DeviceFailedError);
    expect(() => ctx.run(ctx.nowPs + 100_000_000n)).toThrow(/event queue overflowed/);
    const stuckAt = ctx.nowPs;
    expect(ctx.device.stats()["sched.overflow"]).toBe(1);
    expect(() => ctx.run(stuckAt + 100_000_000n)).toThrow(DeviceFailedError);
    expect(ctx.nowPs).toBe(stuckAt); // it runs no more
    expect(ctx.pollCq(cq, 16).length).toBeLessThan(8);
  });

  it("is sized from the tables: 700 WRITEs at once on 1024 QPs never overflow it", async () => {
    const { ctx, cq } = await hbmWriters(700, { maxQps: 1024, maxCqs: 4 });
    expect(settle(ctx, cq).length).toBe(700);
    expect(ctx.device.stats()["sched.overflow"]).toBe(0);
  });
});

describe("the HBM flow table", () => {
  it("requests beyond its 512 slots wait for a flow to end instead of polling", async () => {
    const n = 700;
    const { ctx, cq, qps } = await hbmWriters(n, { maxQps: 1024, maxCqs: 4 });
    // QPs destroyed while their flows stream still free their slots for those waiting
    ctx.run(ctx.nowPs + 2_000_000n);
    expect(ctx.device.stats()["hbm.flow_full"]).toBeGreaterThan(0);
    // (all the streaming ones: nothing else would ever end and wake the waiters)
    for (const qp of qps.slice(0, 512)) ctx.destroyQp(qp);
    const wcs = settle(ctx, cq);
    expect(wcs.length).toBe(n);
    expect(wcs.filter((w) => w.wrId < 512n).every((w) => w.status === "WR_FLUSH_ERR")).toBe(true);
    expect(wcs.filter((w) => w.wrId >= 512n).every((w) => w.status === "SUCCESS")).toBe(true);
    const s = ctx.device.stats();
    expect(s["hbm.flow_full"]).toBeGreaterThanOrEqual(n - 512);
    // each request takes a handful of events (doorbell, phases, HBM ticks); polling every
    // nanosecond for microseconds took thousands per waiting request
    expect(Number(s["sched.events"]) / n).toBeLessThan(12);
  });
});

describe("the express window takes stores of every width", () => {
  /** Engine 0 writes `wqe` into its express window with the given stores, then exits. */
  function expressProgram(wqe: Uint8Array, tail: string[]): string {
    const dv = new DataView(wqe.buffer, wqe.byteOffset, wqe.byteLength);
    const lines = [`li t0, ${MMIO.NIC.EXPRESS}`];
    for (let off = 0; off < WQE.SIZE - 4; off += 4) lines.push(`li t1, ${dv.getUint32(off, true)}`, `sw t1, ${off}(t0)`);
    lines.push(...tail, `li t0, ${MMIO.SYS.EXIT}`, "sw zero, 0(t0)");
    return lines.join("\n");
  }

  it("a byte store writes one byte; the halfword store to the last two bytes is the doorbell", async () => {
    const ctx = await Context.open(coreModule(), { engines: 1 });
    const pd = ctx.allocPd();
    const cq = ctx.createCq(16, { engine: 0 });
    const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4, engine: 0 });
    connect(ctx, qp, qp.qpn);
    const src = ctx.allocHbm(64), dst = ctx.allocHbm(64);
    ctx.write(src, pattern(64, 1));
    ctx.view(dst, 64).fill(0);
    const smr = ctx.regMr(pd, src, 64), dmr = ctx.regMr(pd, dst, 64, ["REMOTE_WRITE"]);
    const wqe = new Uint8Array(WQE.SIZE);
    encodeWqe(new DataView(wqe.buffer), 0, { wrId: 5, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: 64, lkey: smr.lkey, remoteAddr: dst, rkey: dmr.rkey }, qp.qpn);
    const last = new DataView(wqe.buffer).getUint32(WQE.SIZE - 4, true);
    // the length's low byte becomes 0x20 (32 bytes); the register's upper bytes must not land
    const prog = expressProgram(wqe, [
      "li t1, 0xffffff20", `sb t1, ${WQE.length}(t0)`,
      `li t1, ${last & 0xffff}`, `sh t1, ${WQE.SIZE - 4}(t0)`,
      `li t1, ${last >>> 16}`, `sh t1, ${WQE.SIZE - 2}(t0)`,
    ]);
    const dev = ctx.device;
    dev.start(dev.loadElf(programElf(prog)).entry);
    const wcs = settle(ctx, cq);
    expect(wcs.map((w) => [Number(w.wrId), w.status, w.byteLen])).toEqual([[5, "SUCCESS", 32]]);
    expect(ctx.read(dst, 64)).toEqual(Uint8Array.from([...pattern(64, 1).subarray(0, 32), ...new Uint8Array(32)]));
    expect(dev.stats()["nic.bad_doorbell"]).toBe(0);
  });
});

describe("engines act only on their own objects", () => {
  it("commands and CQ writes on the host's objects fail or are dropped, and the host's objects keep working", async () => {
    const { ctx, pd, cqA, a } = await pair();
    const buf = ctx.allocHbm(256), mr = ctx.regMr(pd, buf, 256, ["LOCAL_WRITE", "REMOTE_WRITE"]);
    const N = MMIO.NIC;
    const lines: string[] = [`li s0, ${N.CMD}`, `li s1, ${N.CMD_ARG0}`, `li s2, ${MMIO.MBOX.OUT_DATA}`];
    /** Runs command `op` with arguments `args` and sends its result to the host's mailbox. */
    const cmd = (op: number, ...args: number[]) => {
      args.forEach((v, k) => lines.push(`li t1, ${v >>> 0}`, `sw t1, ${4 * k}(s1)`));
      lines.push(`li t1, ${op}`, "sw t1, 0(s0)", `lw t1, ${N.CMD_RESULT - N.CMD}(s0)`, "sw t1, 0(s2)");
    };
    cmd(CMD.DEREG_MR, mr.lkey);
    cmd(CMD.DESTROY_CQ, cqA.cqn);
    cmd(CMD.DEALLOC_PD, pd.handle);
    cmd(CMD.REG_MR, pd.handle, buf, 0, 64, 1); // into the host's PD
    cmd(CMD.CREATE_QP, pd.handle, cqA.cqn, cqA.cqn, 0x1000, 4, 0x2000, 4, 0);
    cmd(CMD.MODIFY_QP, a.qpn, 5 /* ERR */, 0);
    cmd(CMD.ALLOC_PD); // its own PD (the host has PD 0): 1
    cmd(CMD.REG_MR, 1, 0, 1, 64, 1); // host memory (DMA 0x1_0000_0000)
    cmd(CMD.REG_MR, 1, 0x100, 2, 64, 1); // engine 0's SRAM through its DMA window, from engine 1
    cmd(CMD.REG_MR, 1, 0x100, 0, 64, 1); // its own SRAM: a key
    lines.push(`li t1, ${(cqA.cqn << 16) | 7}`, `sw t1, ${N.CQ_CI - N.CMD}(s0)`); // claim the host consumed 7
    lines.push(`li t1, ${cqA.cqn}`, `sw t1, ${N.CQ_ARM - N.CMD}(s0)`);
    lines.push(`li t0, ${MMIO.SYS.EXIT}`, "sw zero, 0(t0)");
    const dev = ctx.device;
    dev.core.startEngine(dev.handle, 1, dev.loadElf(programElf(lines.join("\n"))).entry);
    ctx.run(ctx.nowPs + 100_000_000n);
    expect(dev.engine(1).state).toBe("exited");
    const results: number[] = [];
    for (let v = dev.core.mboxPop(dev.handle, 1); v >= 0n; v = dev.core.mboxPop(dev.handle, 1)) results.push(Number(BigInt.asIntN(32, v)));
    const no = CMD_ERR.NO_OBJECT, bad = CMD_ERR.ARGUMENT;
    expect(results.slice(0, 9)).toEqual([no, no, no, no, no, no, 1, bad, bad]);
    expect(results[9]).toBeGreaterThan(0);
    expect(dev.stats()["nic.bad_doorbell"]).toBe(2);
    // the host's QP, region and CQ still work: a WRITE into the region completes on its CQ
    const src = ctx.allocHostMemory(64), smr = ctx.regMr(pd, src, 64);
    ctx.write(src, pattern(64, 9));
    ctx.postSend(a, [{ wrId: 77, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: 64, lkey: smr.lkey, remoteAddr: buf, rkey: mr.rkey }]);
    expect(settle(ctx, cqA).map((w) => [Number(w.wrId), w.status])).toEqual([[77, "SUCCESS"]]);
    expect(ctx.read(buf, 64)).toEqual(pattern(64, 9));
    expect(dev.engine(1).state).toBe("exited");
  });
});

describe("the event queue holds only what is really pending", () => {
  it("an engine woken again and again before its timer keeps one timer event, not one per sleep", async () => {
    // the timer is armed far away; 300 mailbox words each wake the engine, which sleeps again
    const dev = (await Context.open(coreModule(), { engines: 1, maxQps: 1, eventCapacity: 70 })).device;
    const prog = [
      `li t0, ${MMIO.TIMER.MTIMECMP_HI}`, "li t1, 1", "sw t1, 0(t0)", `li t0, ${MMIO.TIMER.MTIMECMP_LO}`, "sw zero, 0(t0)",
      "li t1, 0x880", "csrw mie, t1", // MEIE and MTIE; MIE stays off: wfi wakes, no trap is taken
      `li t0, ${MMIO.MBOX.IN_DATA}`,
      "loop:", "wfi", "lw t1, 0(t0)", "j loop",
    ].join("\n");
    dev.start(dev.loadElf(programElf(prog)).entry, 1);
    for (let i = 0; i < 300; i++) {
      dev.mailboxPush(0, i);
      dev.run(dev.nowPs + 1_000_000n);
    }
    const s = dev.stats();
    expect(s["engine.wakeups"]).toBe(299); // the first word is there before the first wfi
    expect(s["sched.overflow"]).toBe(0);
    expect(s["sched.peak"]).toBeLessThanOrEqual(2);
  });

  it("the HBM model keeps one tick pending however often flows start", async () => {
    const n = 200;
    // express doorbells cross PCIe 2 ns apart: 200 flows start one after another, each
    // moving every flow's completion
    const { ctx, cq } = await hbmWriters(n, { maxQps: n });
    expect(settle(ctx, cq).length).toBe(n);
    // at most: a doorbell event, a phase event per request (none while it streams), one tick
    expect(ctx.device.stats()["sched.peak"]).toBeLessThanOrEqual(n + 2);
  });
});
