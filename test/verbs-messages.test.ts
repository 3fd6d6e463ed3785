// The whole text of the errors the hot verbs calls throw (modifyQp, postSend, postRecv,
// pollCq, createQp's allocations, regMr), byte for byte: these calls build their labels only
// when a check fails, and a label built late must say what the eager one said — the call, the
// QP or CQ by its number (not 0: the third QP of a context) and the field.
import { describe, it, expect } from "vitest";
import { Context, VerbsError, type SendWr } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";

/** A context with 3 QPs (numbers 0, 1, 2) on two CQs; `q` is QP 2, in RESET; CQ 1 is its CQ. */
async function setup(config: Record<string, number> = {}) {
  const ctx = await Context.open(coreModule(), { engines: 2, hbmBytes: 1 << 20, hostMemBytes: 1 << 20, maxQps: 8, ports: 8, scaleUpPorts: 8, ...config });
  const pd = ctx.allocPd();
  ctx.createCq(4);
  const cq = ctx.createCq(16);
  const mk = () => ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 });
  const [, , q] = [mk(), mk(), mk()];
  const buf = ctx.allocHbm(4096);
  const mr = ctx.regMr(pd, buf, 4096, ["LOCAL_WRITE", "REMOTE_WRITE"]);
  const write = (wrId: number): SendWr => ({ wrId, opcode: "RDMA_WRITE", signaled: true, localAddr: buf, length: 64, lkey: mr.lkey, remoteAddr: buf, rkey: mr.rkey });
  return { ctx, pd, cq, q: q!, buf, mr, write };
}

/** The message of the VerbsError `call` throws. */
function message(call: () => unknown): string {
  try {
    call();
  } catch (e) {
    expect(e).toBeInstanceOf(VerbsError);
    return (e as Error).message;
  }
  throw new Error("the call did not throw");
}

describe("verbs error messages, whole", () => {
  it("modifyQp names QP 2 and the field", async () => {
    const { ctx, q } = await setup();
    expect(q.qpn).toBe(2);
    expect(message(() => ctx.modifyQp(q, { state: "RTSS" as "RTS" }))).toBe('modifyQp: QP 2: attr.state must be one of RESET, INIT, RTR, RTS, ERR, got "RTSS"');
    expect(message(() => ctx.modifyQp(q, { state: 3 as unknown as "RTS" }))).toBe("modifyQp: QP 2: attr.state must be one of RESET, INIT, RTR, RTS, ERR, got 3");
    expect(message(() => ctx.modifyQp(q, { state: "INIT", destDevice: 65536 }))).toBe("modifyQp: QP 2: attr.destDevice must be an integer 0..65535, got 65536");
    expect(message(() => ctx.modifyQp(q, { state: "INIT", destQpNum: 8 }))).toBe("modifyQp: QP 2: attr.destQpNum must be an integer 0..7, got 8");
    expect(message(() => ctx.modifyQp(q, { state: "INIT", destQpNum: 2 ** 24, destDevice: 1 }))).toBe("modifyQp: QP 2: attr.destQpNum must be an integer 0..16777215, got 16777216");
    expect(message(() => ctx.modifyQp(q, { state: "INIT", portGroup: "SCALE_SIDEWAYS" as "SCALE_UP" }))).toBe('modifyQp: QP 2: attr.portGroup must be one of SCALE_UP, SCALE_OUT, got "SCALE_SIDEWAYS"');
    expect(message(() => ctx.modifyQp(q, { state: "INIT", portLane: -1 }))).toBe("modifyQp: QP 2: attr.portLane must be an integer 0..4294967294, got -1");
    expect(message(() => ctx.modifyQp(q, { state: "RTR" }))).toBe("modifyQp: QP 2: RTR needs attr.destQpNum");
    expect(message(() => ctx.modifyQp(q, { state: "RTS" }))).toBe("modifyQp: QP 2: no transition from RESET to RTS");
    expect(message(() => ctx.modifyQp(q, null as never))).toBe("modifyQp: attr must be an object, got null");
    ctx.modifyQp(q, { state: "INIT" });
    expect(message(() => ctx.modifyQp(q, { state: "RTR", destQpNum: 1, destDevice: 1, portGroup: "SCALE_OUT" }))).toBe("modifyQp: QP 2: port group SCALE_OUT has no ports (scaleUpPorts 8 of 8)");
    expect(ctx.qpState(q)).toBe("INIT");
  });

  it("postSend and postRecv name QP 2, the request's index and the field", async () => {
    const { ctx, q, write } = await setup();
    const bad = (more: Record<string, unknown>) => [write(1), { ...write(2), ...more } as SendWr];
    expect(message(() => ctx.postSend(q, bad({ length: 2 ** 32 })))).toBe("postSend: QP 2: wrs[1].length must be an integer 0..4294967295, got 4294967296");
    expect(message(() => ctx.postSend(q, bad({ lkey: -1 })))).toBe("postSend: QP 2: wrs[1].lkey must be an integer 0..4294967295, got -1");
    expect(message(() => ctx.postSend(q, bad({ rkey: 1.5 })))).toBe("postSend: QP 2: wrs[1].rkey must be an integer 0..4294967295, got 1.5");
    expect(message(() => ctx.postSend(q, bad({ imm: "7" })))).toBe('postSend: QP 2: wrs[1].imm must be an integer 0..4294967295, got "7"');
    expect(message(() => ctx.postSend(q, bad({ localAddr: -64 })))).toBe("postSend: QP 2: wrs[1].localAddr must be an integer 0..2^64-1, got -64");
    expect(message(() => ctx.postSend(q, bad({ remoteAddr: 2 ** 64 })))).toBe("postSend: QP 2: wrs[1].remoteAddr must be an integer 0..2^64-1, got 18446744073709552000");
    expect(message(() => ctx.postSend(q, bad({ wrId: 1n << 64n })))).toBe("postSend: QP 2: wrs[1].wrId must be a bigint 0..2^64-1 or a safe integer >= 0, got 18446744073709551616n");
    expect(message(() => ctx.postSend(q, bad({ opcode: "toString" })))).toBe('postSend: QP 2: wrs[1].opcode must be one of RDMA_WRITE, RDMA_WRITE_WITH_IMM, SEND, SEND_WITH_IMM, RDMA_READ, REDUCE, COPY, RECV, got "toString"');
    expect(message(() => ctx.postSend(q, bad({ opcode: "RECV" })))).toBe('postSend: QP 2: wrs[1].opcode must be a send opcode, got "RECV"');
    expect(message(() => ctx.postSend(q, bad({ signaled: 1 })))).toBe("postSend: QP 2: wrs[1].signaled must be a boolean, got 1");
    expect(message(() => ctx.postSend(q, bad({ fence: "no" })))).toBe('postSend: QP 2: wrs[1].fence must be a boolean, got "no"');
    expect(message(() => ctx.postSend(q, [write(1), 5 as never]))).toBe("postSend: QP 2: wrs[1] must be a work request object, got 5");
    expect(message(() => ctx.postSend(q, bad({ reduce: 1 })))).toBe("postSend: QP 2: wrs[1].reduce must be an object, got 1");
    expect(message(() => ctx.postSend(q, bad({ reduce: { op: "SUM", dtype: "F32", sources: 4 } })))).toBe("postSend: QP 2: wrs[1].reduce.sources must be an array, got 4");
    expect(message(() => ctx.postSend(q, bad({ reduce: { op: "SUM", dtype: "F32", sources: [{ addr: 0, lkey: 0 }, 7] } })))).toBe("postSend: QP 2: wrs[1].reduce.sources[1] must be { addr, lkey }, got 7");
    expect(message(() => ctx.postSend(q, bad({ reduce: { op: "SUM", dtype: "F32", sources: [{ addr: 2 ** 32, lkey: 0 }] } })))).toBe("postSend: QP 2: wrs[1].reduce.sources[0].addr must be an integer 0..4294967295, got 4294967296");
    expect(message(() => ctx.postSend(q, bad({ reduce: { op: "SUM", dtype: "F32", sources: [{ addr: 0, lkey: -2 }] } })))).toBe("postSend: QP 2: wrs[1].reduce.sources[0].lkey must be an integer 0..4294967295, got -2");
    expect(message(() => ctx.postSend(q, bad({ reduce: { op: "SUM", dtype: "F64", sources: [] } })))).toBe('postSend: QP 2: wrs[1].reduce.dtype must be one of F32, F16, BF16, I32, got "F64"');
    expect(message(() => ctx.postSend(q, bad({ reduce: { op: "AVG", dtype: "F32", sources: [] } })))).toBe('postSend: QP 2: wrs[1].reduce.op must be one of SUM, MAX, MIN, PROD, got "AVG"');
    expect(message(() => ctx.postSend(q, "x" as never))).toBe('postSend: QP 2: wrs must be an array, got "x"');
    expect(message(() => ctx.postSend(q, [write(1)], { doorbell: "fast" as "express" }))).toBe('postSend: opts.doorbell must be one of classic, express, got "fast"');
    expect(message(() => ctx.postRecv(q, [{ wrId: 1, localAddr: 0, length: 8, lkey: 0 }, { wrId: 2, opcode: "SEND", localAddr: 0, length: 8, lkey: 0 } as never]))).toBe('postRecv: QP 2: wrs[1].opcode: a receive work request has none, got "SEND"');
    expect(message(() => ctx.postRecv(q, [{ wrId: 1, localAddr: 0, length: -8, lkey: 0 }]))).toBe("postRecv: QP 2: wrs[0].length must be an integer 0..4294967295, got -8");
    expect(message(() => ctx.postSend(q, [1, 2, 3, 4, 5].map(write)))).toBe("postSend: QP 2: send queue full: 5 entries posted to 4 free of 4: poll completions and advance time");
    expect(q.sqPosted).toBe(0);
  });

  it("pollCq, createQp's and createCq's allocations and regMr name the CQ and the field", async () => {
    const { ctx, pd, cq, buf } = await setup({ hostMemBytes: 1 << 16 });
    expect(cq.cqn).toBe(1);
    expect(message(() => ctx.pollCq(cq, -1))).toBe("pollCq: CQ 1: max must be an integer 0..9007199254740991, got -1");
    expect(message(() => ctx.pollCq(cq, 1.5))).toBe("pollCq: CQ 1: max must be an integer 0..9007199254740991, got 1.5");
    expect(message(() => ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 512, maxRecvWr: 4 }))).toBe("allocHostMemory: host memory exhausted: 65536 B wanted, 61824 B left of hostMemBytes");
    expect(message(() => ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 0, maxRecvWr: 4 }))).toBe("createQp: init.maxSendWr must be an integer 1..32768, got 0");
    expect(message(() => ctx.createCq(4096))).toBe("allocHostMemory: host memory exhausted: 131072 B wanted, 61824 B left of hostMemBytes");
    expect(message(() => ctx.allocHostMemory(0))).toBe("allocHostMemory: bytes must be an integer 1..9007199254740991, got 0");
    expect(message(() => ctx.allocHbm(64, 3))).toBe("allocHbm: alignment must be a power of two, got 3");
    expect(message(() => ctx.allocHbm(64, 0))).toBe("allocHbm: alignment must be an integer 1..1073741824, got 0");
    expect(message(() => ctx.regMr(pd, buf, 64, ["LOCAL_WRITE", "REMOTE"] as never))).toBe('regMr: access[1] must be one of LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, got "REMOTE"');
    expect(message(() => ctx.regMr(pd, buf, 0))).toBe("regMr: length must be an integer 1..9007199254740991, got 0");
  });
});
