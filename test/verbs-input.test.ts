// The host API refuses bad arguments, and a refused call changes nothing: every test here
// compares the whole device (Device.save(): tables, rings, host memory, HBM, the event queue
// and the doorbells in flight) before and after the call, and probes the host's allocators.
import { describe, it, expect } from "vitest";
import { Context, VerbsError, type Qp, type SendWr, type RecvWr } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";
import { CQE } from "../host/generated/layouts.js";

const SMALL = { engines: 2, hbmBytes: 1 << 20, hostMemBytes: 1 << 20 };
const LONG = 100_000_000n; // 100 us: every request here has long completed

async function open(config: Record<string, number> = {}) {
  return Context.open(coreModule(), { ...SMALL, ...config }, { collectTrace: true });
}

function connect(ctx: Context, q: Qp, peer: Qp) {
  ctx.modifyQp(q, { state: "INIT" });
  ctx.modifyQp(q, { state: "RTR", destQpNum: peer.qpn });
  ctx.modifyQp(q, { state: "RTS" });
}

/** Two connected QPs with 4-deep queues sharing one CQ, and a registered HBM buffer. */
async function setup(config: Record<string, number> = {}, depth = 4) {
  const ctx = await open(config);
  const pd = ctx.allocPd();
  const cq = ctx.createCq(64);
  const a = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: depth, maxRecvWr: depth });
  const b = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: depth, maxRecvWr: depth });
  connect(ctx, a, b);
  connect(ctx, b, a);
  const buf = ctx.allocHbm(4096);
  const mr = ctx.regMr(pd, buf, 4096, ["LOCAL_WRITE", "REMOTE_WRITE"]);
  const write = (wrId: number | bigint): SendWr => ({ wrId, opcode: "RDMA_WRITE", signaled: true, localAddr: buf, length: 64, lkey: mr.lkey, remoteAddr: buf + 2048, rkey: mr.rkey });
  const send = (wrId: number): SendWr => ({ wrId, opcode: "SEND", signaled: true, localAddr: buf, length: 64, lkey: mr.lkey });
  const recv = (wrId: number | bigint): RecvWr => ({ wrId, localAddr: buf + 1024, length: 64, lkey: mr.lkey });
  return { ctx, pd, cq, a, b, buf, mr, write, send, recv };
}

/** `call` throws VerbsError with a message matching `message`, and the device is byte for byte as before. */
function refused(ctx: Context, call: () => unknown, message: RegExp): void {
  const before = ctx.device.save();
  let err: unknown = null;
  try {
    call();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(VerbsError);
  expect((err as Error).message).toMatch(message);
  expect(Buffer.compare(ctx.device.save(), before)).toBe(0);
}

const doorbellsSeen = (ctx: Context) => ctx.device.traceRecords.filter((r) => r.point === "nic.doorbell").length;

/** Runs long enough for anything posted to complete; returns (wrId, status) of every completion. */
function settle(ctx: Context, cq: ReturnType<Context["createCq"]>) {
  ctx.run(ctx.nowPs + LONG);
  return ctx.pollCq(cq, 64).map((w) => [w.qpNum, w.wrId, w.status]);
}

describe("sizes and engines are checked before anything is allocated", () => {
  it("createCq: a depth outside 1..65536 or not an integer is refused and the next CQ does not overlap", async () => {
    const ctx = await open();
    const first = ctx.createCq(4);
    const probe = ctx.allocHostMemory(64);
    for (const depth of [-2, 0, 65537, 1.5, NaN, Infinity, "4" as unknown as number])
      refused(ctx, () => ctx.createCq(depth), /^createCq: depth must be an integer 1\.\.65536, got /);
    expect(ctx.allocHostMemory(64)).toBe(probe + 64); // the allocator did not move
    const next = ctx.createCq(4);
    expect(next.ring).toBeGreaterThanOrEqual(probe + 128);
    expect(next.ring).toBeGreaterThanOrEqual(first.ring + 4 * CQE.SIZE);
    expect(next.cqn).toBe(first.cqn + 1);
  });

  it("createQp: maxSendWr and maxRecvWr outside 1..32768 are refused without allocating rings", async () => {
    const ctx = await open();
    const pd = ctx.allocPd(), cq = ctx.createCq(4);
    const probe = ctx.allocHostMemory(64);
    const ok = { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 };
    for (const bad of [0, 32769, 2.5, NaN, -1]) {
      refused(ctx, () => ctx.createQp(pd, { ...ok, maxSendWr: bad }), /^createQp: init\.maxSendWr must be an integer 1\.\.32768/);
      refused(ctx, () => ctx.createQp(pd, { ...ok, maxRecvWr: bad }), /^createQp: init\.maxRecvWr must be an integer 1\.\.32768/);
    }
    expect(ctx.allocHostMemory(64)).toBe(probe + 64);
    expect(ctx.createQp(pd, ok).qpn).toBe(0);
  });

  it("a CQ or QP the NIC has no room for leaves the allocator where it was", async () => {
    const ctx = await open({ maxCqs: 1, maxQps: 1 });
    const pd = ctx.allocPd(), cq = ctx.createCq(4);
    ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 });
    const probe = ctx.allocHostMemory(64);
    refused(ctx, () => ctx.createCq(4), /^createCq: no free CQ \(maxCqs\)/);
    refused(ctx, () => ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 }), /^createQp: no free QP \(maxQps\)/);
    expect(ctx.allocHostMemory(64)).toBe(probe + 64);
  });

  it("an engine number the device does not have is refused (2 engines)", async () => {
    const ctx = await open();
    const pd = ctx.allocPd(), cq = ctx.createCq(4), ecq = ctx.createCq(4, { engine: 1 });
    const hbmProbe = ctx.allocHbm(64);
    for (const engine of [2, 99, -1, 1.5, 0xffff]) {
      refused(ctx, () => ctx.createCq(4, { engine }), /^createCq: opts\.engine must be an integer 0\.\.1, got /);
      refused(ctx, () => ctx.createQp(pd, { sendCq: ecq, recvCq: ecq, maxSendWr: 4, maxRecvWr: 4, engine }), /^createQp: init\.engine must be an integer 0\.\.1, got /);
    }
    expect(ctx.allocHbm(64)).toBe(hbmProbe - 64);
    expect(ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4, engine: 1 }).owner).toBe(1);
  });

  it("allocHostMemory and allocHbm take positive integer sizes and power-of-two alignments", async () => {
    const ctx = await open();
    const host = ctx.allocHostMemory(64), hbm = ctx.allocHbm(64);
    for (const [call, probe, step] of [["allocHostMemory", () => ctx.allocHostMemory(64), 64], ["allocHbm", () => ctx.allocHbm(64), -64]] as const) {
      const f = call === "allocHostMemory" ? ctx.allocHostMemory.bind(ctx) : ctx.allocHbm.bind(ctx);
      for (const bytes of [0, -64, 1.5, NaN]) refused(ctx, () => f(bytes), new RegExp(`^${call}: bytes must be an integer 1\\.\\.`));
      for (const alignment of [0, 1.5, NaN, 2 ** 31]) refused(ctx, () => f(64, alignment), new RegExp(`^${call}: alignment must be an integer 1\\.\\.1073741824`));
      for (const alignment of [3, 96]) refused(ctx, () => f(64, alignment), new RegExp(`^${call}: alignment must be a power of two, got ${alignment}`));
      expect(probe()).toBe((call === "allocHostMemory" ? host : hbm) + step);
    }
  });
});

describe("names and numbers in work requests", () => {
  const BAD: [string, Partial<Record<keyof SendWr, unknown>>, RegExp][] = [
    ["a length above 2^32 - 1", { length: 2 ** 32 }, /wrs\[2\]\.length must be an integer 0\.\.4294967295, got 4294967296/],
    ["an immediate above 2^32 - 1", { imm: 2 ** 32 + 5 }, /wrs\[2\]\.imm must be an integer 0\.\.4294967295/],
    ["a negative lkey", { lkey: -1 }, /wrs\[2\]\.lkey must be an integer 0\.\.4294967295/],
    ["a fractional rkey", { rkey: 1.5 }, /wrs\[2\]\.rkey must be an integer/],
    ["a fractional local address", { localAddr: 0x80000000 + 0.5 }, /wrs\[2\]\.localAddr must be an integer 0\.\.2\^64-1/],
    ["a negative remote address", { remoteAddr: -1 }, /wrs\[2\]\.remoteAddr must be an integer 0\.\.2\^64-1/],
    ["a remote address of 2^64", { remoteAddr: 2 ** 64 }, /wrs\[2\]\.remoteAddr must be an integer 0\.\.2\^64-1/],
    ["a negative wrId", { wrId: -1 }, /wrs\[2\]\.wrId must be a bigint 0\.\.2\^64-1 or a safe integer >= 0, got -1/],
    ["a wrId number beyond 2^53", { wrId: 2 ** 53 + 2 }, /wrs\[2\]\.wrId must be/],
    ["a wrId of 2^64", { wrId: 1n << 64n }, /wrs\[2\]\.wrId must be .* got 18446744073709551616n/],
    ["a fractional wrId", { wrId: 1.5 }, /wrs\[2\]\.wrId must be/],
    ["an opcode from Object.prototype", { opcode: "toString" }, /wrs\[2\]\.opcode must be one of RDMA_WRITE, .* got "toString"/],
    ["RECV on the send queue", { opcode: "RECV" }, /wrs\[2\]\.opcode must be a send opcode, got "RECV"/],
    ["no opcode", { opcode: undefined }, /wrs\[2\]\.opcode must be a send opcode, got undefined/],
    ["signaled that is not a boolean", { signaled: "yes" }, /wrs\[2\]\.signaled must be a boolean/],
  ];

  for (const doorbell of ["classic", "express"] as const) {
    it.each(BAD)(`postSend (${doorbell}) with %s in its 3rd WR posts none of the batch`, async (_name, bad, message) => {
      const { ctx, cq, a, write } = await setup({}, 8);
      const bad3 = { ...write(3), ...bad } as SendWr;
      refused(ctx, () => ctx.postSend(a, [write(1), write(2), bad3], { doorbell }), new RegExp(`^postSend: QP ${a.qpn}: ${message.source}`));
      expect(a.sqPosted).toBe(0);
      expect(settle(ctx, cq)).toEqual([]); // no doorbell, so nothing ever runs
      expect(doorbellsSeen(ctx)).toBe(0);
      // the queue is as it was: the next batch runs exactly its own entries
      ctx.postSend(a, [write(7), write(8)], { doorbell });
      expect(settle(ctx, cq)).toEqual([[a.qpn, 7n, "SUCCESS"], [a.qpn, 8n, "SUCCESS"]]);
    });
  }

  it.each([
    ["a length above 2^32 - 1", { length: 2 ** 32 }, /wrs\[1\]\.length must be an integer 0\.\.4294967295/],
    ["a negative local address", { localAddr: -64 }, /wrs\[1\]\.localAddr must be an integer 0\.\.2\^64-1/],
    ["a fractional lkey", { lkey: 0.5 }, /wrs\[1\]\.lkey must be an integer/],
    ["a negative wrId", { wrId: -3 }, /wrs\[1\]\.wrId must be/],
    ["an opcode", { opcode: "SEND" }, /wrs\[1\]\.opcode: a receive work request has none, got "SEND"/],
  ] as [string, Record<string, unknown>, RegExp][])("postRecv with %s in its 2nd WR posts none of the batch", async (_name, bad, message) => {
    const { ctx, cq, a, b, send, recv } = await setup();
    refused(ctx, () => ctx.postRecv(b, [recv(1), { ...recv(2), ...bad } as RecvWr]), new RegExp(`^postRecv: QP ${b.qpn}: ${message.source}`));
    expect(b.rqPosted).toBe(0);
    expect(settle(ctx, cq)).toEqual([]);
    ctx.postRecv(b, [recv(5)]);
    ctx.postSend(a, [send(6)]);
    const wcs = settle(ctx, cq);
    expect(wcs.filter(([q]) => q === b.qpn)).toEqual([[b.qpn, 5n, "SUCCESS"]]);
    expect(wcs.filter(([q]) => q === a.qpn)).toEqual([[a.qpn, 6n, "SUCCESS"]]);
  });

  describe("REDUCE", () => {
    async function reduceSetup() {
      const s = await setup();
      const dst = s.ctx.allocHbm(256), srcs = s.ctx.allocHbm(256);
      const dmr = s.ctx.regMr(s.pd, dst, 256, ["LOCAL_WRITE"]), smr = s.ctx.regMr(s.pd, srcs, 256);
      const reduce = (n: number, more: Record<string, unknown> = {}): SendWr => ({
        wrId: 1, opcode: "REDUCE", signaled: true, localAddr: dst, length: 256, lkey: dmr.lkey,
        reduce: { op: "SUM", dtype: "F32", sources: new Array(n).fill({ addr: srcs, lkey: smr.lkey }), ...more } as SendWr["reduce"],
      });
      return { ...s, dst, reduce };
    }

    it("unknown dtype and op names are refused", async () => {
      const { ctx, a, reduce } = await reduceSetup();
      refused(ctx, () => ctx.postSend(a, [reduce(2, { dtype: "F64" })]), /^postSend: QP \d+: wrs\[0\]\.reduce\.dtype must be one of F32, F16, BF16, I32, got "F64"/);
      refused(ctx, () => ctx.postSend(a, [reduce(2, { op: "AVG" })]), /^postSend: QP \d+: wrs\[0\]\.reduce\.op must be one of SUM, MAX, MIN, PROD, got "AVG"/);
      refused(ctx, () => ctx.postSend(a, [reduce(2, { op: "valueOf" })]), /wrs\[0\]\.reduce\.op must be one of/);
      refused(ctx, () => ctx.postSend(a, [reduce(2, { sources: [{ addr: 0x80000000, lkey: 2 ** 32 }] })]), /wrs\[0\]\.reduce\.sources\[0\]\.lkey must be an integer 0\.\.4294967295/);
    });

    it("258 or 263 sources do not wrap into a valid count: the NIC completes them with LOC_QP_OP_ERR", async () => {
      for (const n of [258, 263, 9]) {
        const { ctx, cq, a, dst, reduce } = await reduceSetup();
        const before = ctx.read(dst, 256);
        ctx.postSend(a, [reduce(n)]);
        expect(settle(ctx, cq)).toEqual([[a.qpn, 1n, "LOC_QP_OP_ERR"]]);
        expect(ctx.read(dst, 256)).toEqual(before);
      }
    });
  });
});

describe("modifyQp and regMr arguments", () => {
  it("an unknown state is refused and the QP stays where it was", async () => {
    const { ctx, a } = await setup();
    for (const state of ["RTSS", "toString", "rts", 3])
      refused(ctx, () => ctx.modifyQp(a, { state: state as "RTS" }), /^modifyQp: QP 0: attr\.state must be one of RESET, INIT, RTR, RTS, ERR, got /);
    expect(ctx.qpState(a)).toBe("RTS");
  });

  it("destQpNum must be a QP number of the device (0..maxQps-1)", async () => {
    const ctx = await open({ maxQps: 4 });
    const pd = ctx.allocPd(), cq = ctx.createCq(4);
    const q = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 });
    ctx.modifyQp(q, { state: "INIT" });
    for (const dest of [-1, 2.5, 4, NaN, 2 ** 32 - 1])
      refused(ctx, () => ctx.modifyQp(q, { state: "RTR", destQpNum: dest }), /^modifyQp: QP 0: attr\.destQpNum must be an integer 0\.\.3, got /);
    refused(ctx, () => ctx.modifyQp(q, { state: "RTR" }), /^modifyQp: QP 0: RTR needs attr\.destQpNum/);
    expect(ctx.qpState(q)).toBe("INIT");
    ctx.modifyQp(q, { state: "RTR", destQpNum: 3 });
    expect(ctx.qpState(q)).toBe("RTR");
  });

  it("regMr refuses misspelt access flags, and addresses and lengths that are not integers", async () => {
    const ctx = await open();
    const pd = ctx.allocPd(), buf = ctx.allocHbm(256);
    refused(ctx, () => ctx.regMr(pd, buf, 256, ["LOCAL_WRITE", "REMOTE_WRTIE" as "REMOTE_WRITE"]), /^regMr: access\[1\] must be one of LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, got "REMOTE_WRTIE"/);
    refused(ctx, () => ctx.regMr(pd, buf, 256, "LOCAL_WRITE" as unknown as []), /^regMr: access must be an array/);
    refused(ctx, () => ctx.regMr(pd, buf + 0.5, 256), /^regMr: addr must be an integer 0\.\.2\^64-1/);
    for (const length of [0, -256, NaN, 1.5]) refused(ctx, () => ctx.regMr(pd, buf, length), /^regMr: length must be an integer 1\.\./);
    const mr = ctx.regMr(pd, buf, 256, ["LOCAL_WRITE", "REMOTE_READ"]);
    expect(mr.lkey).toBe(0x001); // index 0, generation 1: no refused call took a region
  });

  it("view and pollCq check their numbers", async () => {
    const { ctx, cq, buf } = await setup();
    refused(ctx, () => ctx.view(buf + 0.5, 8), /^view: addr must be an integer/);
    refused(ctx, () => ctx.read(buf, -1), /^view: length must be an integer/);
    refused(ctx, () => ctx.pollCq(cq, -1), /^pollCq: CQ 0: max must be an integer 0\.\./);
  });
});

describe("handles", () => {
  it("a destroyed QP's handle is refused, also once its number belongs to a new QP", async () => {
    const { ctx, pd, cq, a, b, write } = await setup();
    ctx.destroyQp(a);
    const c = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 });
    expect(c.qpn).toBe(a.qpn); // the number is reused
    refused(ctx, () => ctx.postSend(a, [write(1)]), /^postSend: qp: QP 0 was destroyed/);
    refused(ctx, () => ctx.postSend(a, [write(1)], { doorbell: "express" }), /^postSend: qp: QP 0 was destroyed/);
    refused(ctx, () => ctx.postRecv(a, []), /^postRecv: qp: QP 0 was destroyed/);
    refused(ctx, () => ctx.modifyQp(a, { state: "INIT" }), /^modifyQp: qp: QP 0 was destroyed/);
    refused(ctx, () => ctx.qpState(a), /^qpState: qp: QP 0 was destroyed/);
    refused(ctx, () => ctx.destroyQp(a), /^destroyQp: qp: QP 0 was destroyed/);
    // the new QP is untouched by the old handle's attempts
    expect(ctx.qpState(c)).toBe("RESET");
    connect(ctx, c, b);
    ctx.postSend(c, [write(2)]);
    expect(settle(ctx, cq)).toEqual([[c.qpn, 2n, "SUCCESS"]]);
    expect(ctx.device.stats()["nic.bad_doorbell"]).toBe(0);
  });

  it("destroyed CQs, deregistered MRs and deallocated PDs are refused", async () => {
    const ctx = await open();
    const pd = ctx.allocPd(), pd2 = ctx.allocPd();
    const cq = ctx.createCq(4), cq2 = ctx.createCq(4);
    ctx.destroyCq(cq);
    refused(ctx, () => ctx.pollCq(cq), /^pollCq: cq: CQ 0 was destroyed/);
    refused(ctx, () => ctx.destroyCq(cq), /^destroyCq: cq: CQ 0 was destroyed/);
    refused(ctx, () => ctx.createQp(pd, { sendCq: cq2, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 }), /^createQp: init\.recvCq: CQ 0 was destroyed/);
    const buf = ctx.allocHbm(64);
    const mr = ctx.regMr(pd, buf, 64);
    ctx.deregMr(mr);
    ctx.regMr(pd, buf, 64); // takes the same table entry, a new generation
    refused(ctx, () => ctx.deregMr(mr), /^deregMr: mr: MR \(lkey 0x1\) is not registered: it was deregistered/);
    ctx.deallocPd(pd2);
    refused(ctx, () => ctx.regMr(pd2, buf, 64), /^regMr: pd: PD 1 was deallocated/);
    refused(ctx, () => ctx.createQp(pd2, { sendCq: cq2, recvCq: cq2, maxSendWr: 4, maxRecvWr: 4 }), /^createQp: pd: PD 1 was deallocated/);
    refused(ctx, () => ctx.deallocPd(pd2), /^deallocPd: pd: PD 1 was deallocated/);
  });

  it("handles of another context, and made-up ones, are refused", async () => {
    const one = await setup(), other = await setup();
    refused(one.ctx, () => one.ctx.postSend(other.a, [one.write(1)]), /^postSend: qp is not a QP of this context/);
    refused(one.ctx, () => one.ctx.pollCq(other.cq), /^pollCq: cq is not a CQ of this context/);
    refused(one.ctx, () => one.ctx.createQp(one.pd, { sendCq: one.cq, recvCq: other.cq, maxSendWr: 4, maxRecvWr: 4 }), /^createQp: init\.recvCq is not a CQ of this context/);
    refused(one.ctx, () => one.ctx.deregMr(other.mr), /^deregMr: mr is not a MR of this context/);
    refused(one.ctx, () => one.ctx.regMr({ handle: 0 }, one.buf, 64), /^regMr: pd is not a PD of this context/);
    refused(one.ctx, () => one.ctx.regMr(one.cq as never, one.buf, 64), /^regMr: pd is not a PD of this context/);
    refused(one.ctx, () => one.ctx.postSend(undefined as never, []), /^postSend: qp is not a QP of this context \(got undefined\)/);
  });

  it("postRecv to an engine's QP is refused like postSend: its firmware posts to it", async () => {
    const ctx = await open();
    const pd = ctx.allocPd(), cq = ctx.createCq(4, { engine: 0 });
    const q = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4, engine: 0 });
    const buf = ctx.allocHbm(64), mr = ctx.regMr(pd, buf, 64, ["LOCAL_WRITE"]);
    refused(ctx, () => ctx.postRecv(q, [{ wrId: 1, localAddr: buf, length: 64, lkey: mr.lkey }]), /^postRecv: QP 0 belongs to engine 0: its firmware posts to it/);
    refused(ctx, () => ctx.postSend(q, [{ wrId: 1, opcode: "RDMA_WRITE" }]), /^postSend: QP 0 belongs to engine 0/);
  });
});

describe("posting more than the queue holds before the NIC has seen the first entries", () => {
  for (const doorbell of ["classic", "express"] as const) {
    it(`4 then 4 more to a 4-deep send queue (${doorbell}): the second batch is refused, the first runs once`, async () => {
      const { ctx, cq, a, write } = await setup();
      ctx.postSend(a, [1, 2, 3, 4].map(write), { doorbell });
      refused(ctx, () => ctx.postSend(a, [5, 6, 7, 8].map(write), { doorbell }), /^postSend: QP 0: send queue full: 4 entries posted to 0 free of 4/);
      refused(ctx, () => ctx.postSend(a, [write(5)], { doorbell }), /send queue full: 1 entries posted to 0 free of 4/);
      expect(a.sqPosted).toBe(4);
      expect(settle(ctx, cq)).toEqual([1n, 2n, 3n, 4n].map((id) => [a.qpn, id, "SUCCESS"]));
      // the NIC has finished them: the queue takes 4 again
      ctx.postSend(a, [5, 6, 7, 8].map(write), { doorbell });
      expect(settle(ctx, cq)).toEqual([5n, 6n, 7n, 8n].map((id) => [a.qpn, id, "SUCCESS"]));
    });
  }

  it("4 then 4 more to a 4-deep receive queue: the second batch is refused, the first 4 are consumed once", async () => {
    const { ctx, cq, a, b, send, recv } = await setup();
    ctx.postRecv(b, [1, 2, 3, 4].map(recv));
    refused(ctx, () => ctx.postRecv(b, [5, 6, 7, 8].map(recv)), /^postRecv: QP 1: receive queue full: 4 entries posted to 0 free of 4/);
    expect(b.rqPosted).toBe(4);
    ctx.postSend(a, [11, 12, 13, 14].map(send));
    const wcs = settle(ctx, cq);
    expect(wcs.filter(([q]) => q === b.qpn)).toEqual([1n, 2n, 3n, 4n].map((id) => [b.qpn, id, "SUCCESS"]));
    expect(wcs.filter(([q]) => q === a.qpn)).toEqual([11n, 12n, 13n, 14n].map((id) => [a.qpn, id, "SUCCESS"]));
    ctx.postRecv(b, [5, 6, 7, 8].map(recv));
    expect(b.rqPosted).toBe(8);
  });
});

describe("queue room after RESET", () => {
  it("entries discarded by RESET while their doorbell crossed PCIe free their slots and never run", async () => {
    const { ctx, cq, a, b, write } = await setup();
    ctx.modifyQp(a, { state: "RESET" });
    ctx.modifyQp(a, { state: "INIT" }); // entries wait: they run only in RTS
    ctx.postSend(a, [write(1), write(2)]);
    ctx.modifyQp(a, { state: "RESET" }); // discards them without completions (IB spec 10.3.1)
    connect(ctx, a, b);
    ctx.postSend(a, [3, 4, 5, 6].map(write)); // the whole depth is free again
    expect(settle(ctx, cq)).toEqual([3n, 4n, 5n, 6n].map((id) => [a.qpn, id, "SUCCESS"]));
    expect(a.sqPosted).toBe(6);
  });
});

describe("host doorbells in flight (hostDoorbellQueue)", () => {
  it("a post needing more doorbells than are free is refused whole until time advances", async () => {
    const { ctx, cq, a, b, write, recv } = await setup({ hostDoorbellQueue: 2 }, 8);
    ctx.postSend(a, [write(1), write(2)], { doorbell: "express" }); // 2 doorbells crossing PCIe
    refused(ctx, () => ctx.postSend(a, [write(3)]), /^postSend: 2 host doorbells are crossing PCIe \(hostDoorbellQueue 2\) and 1 more are wanted: advance time/);
    refused(ctx, () => ctx.postSend(a, [write(3)], { doorbell: "express" }), /^postSend: 2 host doorbells are crossing PCIe/);
    refused(ctx, () => ctx.postRecv(b, [recv(9)]), /^postRecv: 2 host doorbells are crossing PCIe/);
    refused(ctx, () => ctx.postSend(a, [3, 4, 5].map(write), { doorbell: "express" }), /^postSend: 3 express entries need 3 host doorbells, more than hostDoorbellQueue \(2\)/);
    expect(a.sqPosted).toBe(2);
    expect(settle(ctx, cq)).toEqual([[a.qpn, 1n, "SUCCESS"], [a.qpn, 2n, "SUCCESS"]]);
    ctx.postSend(a, [3, 4, 5].map(write)); // one classic doorbell for the batch
    expect(settle(ctx, cq)).toEqual([3n, 4n, 5n].map((id) => [a.qpn, id, "SUCCESS"]));
  });
});

describe("batches of many entries", () => {
  it("40 entries, 3, then 40 across the ring's end: each runs once, in order (the context's batch buffer grows and is reused)", async () => {
    const { ctx, cq, a, write } = await setup({}, 64);
    const ids = (from: number, n: number) => Array.from({ length: n }, (_, k) => from + k);
    const done: unknown[] = [];
    for (const batch of [ids(0, 40), ids(40, 3), ids(43, 40)]) {
      ctx.postSend(a, batch.map(write));
      ctx.run(ctx.nowPs + LONG);
      for (let w = ctx.pollCq(cq, 64); w.length > 0; w = ctx.pollCq(cq, 64)) done.push(...w.map((c) => [c.wrId, c.status]));
    }
    expect(done).toEqual(ids(0, 83).map((id) => [BigInt(id), "SUCCESS"]));
  });
});
