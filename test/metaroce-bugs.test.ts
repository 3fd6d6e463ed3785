import { describe, it, expect } from "vitest";
import { connectedPair, settle as settleCq, type cabled, type CableFate } from "./helpers/cable.js";
import type { Context, Cq } from "../host/verbs.js";
import type { TxFrameRef } from "../host/ports.js";
import { MRA_OFFSET, MRA_SIZE } from "../host/generated/headers.js";

// The MetaRoCE-like transport's answers, found wrong by an adversarial round (issue 26): each test
// failed on the code before its fix.

const MRT = { transport: 1, mrtConnections: 2 };
const settle = (net: Awaited<ReturnType<typeof cabled>>, ctx: Context, cq: Cq, n: number) => settleCq(net, ctx, cq, n, 200_000_000n);
/** Is this frame an ACK of the MetaRoCE-like transport carrying a NAK (its code non-zero)? */
const isNak = (f: TxFrameRef) => {
  const v = new DataView(f.mem.buffer, f.hdrAt, f.hdrLen);
  return v.getUint16(36) === 4792 && (v.getUint8(42) & 15) === 2 && f.hdrLen >= 42 + MRA_SIZE && v.getUint8(42 + MRA_OFFSET.nakCode) !== 0;
};

describe("a refused one-packet WRITE never completes with success (issue 26, point 2)", () => {
  /** a WRITEs `len` bytes to b's region through `key` (b's, or one the test makes), then a second WRITE behind it. */
  async function refused(how: "other PD" | "no REMOTE_WRITE" | "out of bounds", len: number, fate?: CableFate, alone = false) {
    const { net, a, b } = await pair(fate);
    const src = a.ctx.allocHbm(8192), dst = b.ctx.allocHbm(8192);
    a.ctx.write(src, new Uint8Array(8192).fill(0x5a));
    const smr = a.ctx.regMr(a.pd, src, 8192);
    const mr = how === "other PD" ? b.ctx.regMr(b.ctx.allocPd(), dst, 8192, ["REMOTE_WRITE"])
      : how === "no REMOTE_WRITE" ? b.ctx.regMr(b.pd, dst, 8192, ["REMOTE_READ"]) : b.ctx.regMr(b.pd, dst, 4096, ["REMOTE_WRITE"]);
    const at = how === "out of bounds" ? dst + 4096 - 16 : dst;
    a.ctx.postSend(a.qp, [
      { wrId: 1, opcode: "RDMA_WRITE" as const, signaled: true, localAddr: src, length: len, lkey: smr.lkey, remoteAddr: at, rkey: mr.rkey },
      { wrId: 2, opcode: "RDMA_WRITE" as const, signaled: true, localAddr: src, length: 64, lkey: smr.lkey, remoteAddr: dst, rkey: mr.rkey },
    ].slice(0, alone ? 1 : 2));
    const wcs = settle(net, a.ctx, a.cq, alone ? 1 : 2).map((w) => [Number(w.wrId), w.status]);
    return { wcs, landed: b.ctx.read(dst, 8192), a, stats: a.ctx.device.stats(), bStats: b.ctx.device.stats() };
  }
  const pair = (fate?: CableFate) => connectedPair(MRT, fate);

  // WAS: refuse() recorded the packet's PSN and NAKed it in the same ACK; the sender acknowledged
  // the SSN (completing the one-packet message with SUCCESS) before it read the NAK, which then
  // failed the next message instead.
  for (const how of ["other PD", "no REMOTE_WRITE", "out of bounds"] as const) {
    it(`${how}: REM_ACCESS_ERR, the next flushed, no byte lands, the QP in ERR, nothing counted lost`, async () => {
      const r = await refused(how, 64);
      expect(r.wcs).toEqual([[1, "REM_ACCESS_ERR"], [2, "WR_FLUSH_ERR"]]);
      // the second WRITE was on its way before the NAK came back: refused too, but for the one out
      // of bounds, whose second WRITE lies inside the region and lands (a flushed work request's
      // effects at the target are undefined, as in ibverbs); the first's bytes never land
      const second = how === "out of bounds";
      expect(r.landed.subarray(second ? 64 : 0)).toEqual(new Uint8Array(second ? 8192 - 64 : 8192));
      expect(r.bStats["mrt.naks_sent"]).toBe(second ? 1 : 2);
      expect(r.a.ctx.qpState(r.a.qp)).toBe("ERR");
      // a refusal is no loss: nothing sent again, no RTO
      expect([r.stats["mrt.losses_sack"], r.stats["mrt.losses_rto"], r.stats["mrt.tx_retransmits"], r.stats["mrt.rtos"]]).toEqual([0, 0, 0, 0]);
    });
  }

  it("a longer refused WRITE still ends REM_ACCESS_ERR", async () => {
    const r = await refused("no REMOTE_WRITE", 8192);
    expect(r.wcs).toEqual([[1, "REM_ACCESS_ERR"], [2, "WR_FLUSH_ERR"]]);
    expect(r.landed).toEqual(new Uint8Array(8192));
  });

  // The NAK rides one ACK; when that ACK is lost, the refused packet must not be taken as
  // delivered by the next ACK: it is sent again, refused again, and NAKed again.
  it("the ACK carrying the NAK is lost: the packet is sent again and refused again, never SUCCESS", async () => {
    let naks = 0;
    const r = await refused("other PD", 64, (from, _n, f) => (from === 1 && isNak(f) && naks++ === 0 ? "drop" : "pass"), true);
    expect(r.wcs).toEqual([[1, "REM_ACCESS_ERR"]]);
    expect(r.landed).toEqual(new Uint8Array(8192));
    expect(naks).toBe(2);
    expect(r.bStats["mrt.naks_sent"]).toBe(2);
    // found missing by the tail probe, which is the packet sent again
    expect(r.stats["mrt.tx_retransmits"] + r.stats["mrt.tx_probes"]).toBeGreaterThanOrEqual(1);
  });
});

describe("a refused one-packet SEND never completes with success (issue 26, point 2)", () => {
  it("a SEND longer than its receive: REM_INV_REQ_ERR at the sender, the receive untouched", async () => {
    const { net, a, b } = await connectedPair(MRT);
    const src = a.ctx.allocHbm(4096), dst = b.ctx.allocHbm(4096);
    a.ctx.write(src, new Uint8Array(4096).fill(0x77));
    const smr = a.ctx.regMr(a.pd, src, 4096), dmr = b.ctx.regMr(b.pd, dst, 4096, ["LOCAL_WRITE"]);
    b.ctx.postRecv(b.qp, [{ wrId: 70, localAddr: dst, length: 16, lkey: dmr.lkey }]);
    a.ctx.postSend(a.qp, [{ wrId: 7, opcode: "SEND", signaled: true, localAddr: src, length: 64, lkey: smr.lkey }]);
    expect(settle(net, a.ctx, a.cq, 1).map((w) => [Number(w.wrId), w.status])).toEqual([[7, "REM_INV_REQ_ERR"]]);
    expect(b.ctx.read(dst, 4096)).toEqual(new Uint8Array(4096));
  });
});

describe("the RNR budget is whole again after progress (issue 26, point 4)", () => {
  // WAS: rnrLeft was filled when a work request began and never again, so a stream whose
  // receiver posts its receives slowly failed RNR_RETRY_EXC_ERR after rnrRetries holds in all,
  // though each hold ended with a SEND placed (a 3-device broadcast failed so, without faults).
  // IBA vol. 1 9.7.5.2.8 counts RNR retries for the request that meets them: progress refills.
  it("4 SENDs, their receives posted one every 1.5 RNR timers, rnrRetries 2: all SUCCESS, in order", async () => {
    const rnrTimerPs = 4_000_000;
    const { net, a, b } = await connectedPair({ ...MRT, rnrTimerPs, rnrRetries: 2 });
    const src = a.ctx.allocHbm(4096), dst = b.ctx.allocHbm(4096);
    a.ctx.write(src, Uint8Array.from({ length: 4096 }, (_, i) => i & 0xff));
    const smr = a.ctx.regMr(a.pd, src, 4096), dmr = b.ctx.regMr(b.pd, dst, 4096, ["LOCAL_WRITE"]);
    a.ctx.postSend(a.qp, [0, 1, 2, 3].map((k) => ({ wrId: k, opcode: "SEND" as const, signaled: true, localAddr: src + 64 * k, length: 64, lkey: smr.lkey })));
    const done = [];
    for (let k = 0; k < 4; k++) {
      net.run(a.ctx.nowPs + BigInt(rnrTimerPs * 1.5));
      done.push(...a.ctx.pollCq(a.cq, 8));
      b.ctx.postRecv(b.qp, [{ wrId: 100 + k, localAddr: dst + 64 * k, length: 64, lkey: dmr.lkey }]);
    }
    done.push(...settle(net, a.ctx, a.cq, 4 - done.length));
    expect(done.map((w) => [Number(w.wrId), w.status])).toEqual([[0, "SUCCESS"], [1, "SUCCESS"], [2, "SUCCESS"], [3, "SUCCESS"]]);
    expect(b.ctx.read(dst, 256)).toEqual(Uint8Array.from({ length: 256 }, (_, i) => i & 0xff));
    // more holds than the budget: it was refilled
    expect(a.ctx.device.stats()["nic.rnr_retries"]).toBeGreaterThan(2);
  });
});
