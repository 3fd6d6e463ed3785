import { describe, it, expect } from "vitest";
import { cabled, connectedPair, settle } from "./helpers/cable.js";
import type { Context, Qp, Cq } from "../host/verbs.js";

const pattern = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

/** A connected RC pair: QP a on device 0, QP b on device 1. */
const pair = (config: Record<string, number> = {}) => connectedPair(config);

describe("RoCEv2 between two devices", () => {
  it("an RDMA WRITE of 64 KiB lands in the other device's HBM and completes once", async () => {
    const { net, a, b } = await pair();
    const src = a.ctx.allocHbm(65536), dst = b.ctx.allocHbm(65536);
    a.ctx.write(src, pattern(65536, 3));
    const smr = a.ctx.regMr(a.pd, src, 65536), dmr = b.ctx.regMr(b.pd, dst, 65536, ["REMOTE_WRITE"]);
    a.ctx.postSend(a.qp, [{ wrId: 9, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: 65536, lkey: smr.lkey, remoteAddr: dst, rkey: dmr.rkey }]);
    const wcs = settle(net, a.ctx, a.cq, 1);
    expect(wcs.map((w) => [Number(w.wrId), w.status, w.byteLen])).toEqual([[9, "SUCCESS", 65536]]);
    expect(b.ctx.read(dst, 65536)).toEqual(pattern(65536, 3));
    // 16 data packets of 4 KiB, one ACK back
    expect(a.ctx.device.stats()["port.tx_packets"]).toBe(16);
    expect(b.ctx.device.stats()["port.tx_packets"]).toBe(1);
    expect(b.ctx.device.stats()["roce.rx_bad_icrc"]).toBe(0);
  });

  it("SEND with immediate fills the posted receive; READ brings the bytes back", async () => {
    const { net, a, b } = await pair();
    const buf = a.ctx.allocHbm(20000), rbuf = b.ctx.allocHbm(20000);
    a.ctx.write(buf, pattern(10000, 5));
    b.ctx.write(rbuf + 10000, pattern(10000, 7));
    const amr = a.ctx.regMr(a.pd, buf, 20000, ["LOCAL_WRITE"]);
    const bmr = b.ctx.regMr(b.pd, rbuf, 20000, ["LOCAL_WRITE", "REMOTE_READ"]);
    b.ctx.postRecv(b.qp, [{ wrId: 70, localAddr: rbuf, length: 10000, lkey: bmr.lkey }]);
    a.ctx.postSend(a.qp, [
      { wrId: 1, opcode: "SEND_WITH_IMM", signaled: true, localAddr: buf, length: 10000, lkey: amr.lkey, imm: 0xabcd },
      { wrId: 2, opcode: "RDMA_READ", signaled: true, localAddr: buf + 10000, length: 10000, lkey: amr.lkey, remoteAddr: rbuf + 10000, rkey: bmr.rkey },
    ]);
    const wa = settle(net, a.ctx, a.cq, 2);
    expect(wa.map((w) => [Number(w.wrId), w.status, w.opcode])).toEqual([[1, "SUCCESS", "SEND_WITH_IMM"], [2, "SUCCESS", "RDMA_READ"]]);
    const wb = b.ctx.pollCq(b.cq, 8);
    expect(wb.map((w) => [Number(w.wrId), w.status, w.byteLen, w.imm])).toEqual([[70, "SUCCESS", 10000, 0xabcd]]);
    expect(b.ctx.read(rbuf, 10000)).toEqual(pattern(10000, 5));
    expect(a.ctx.read(buf + 10000, 10000)).toEqual(pattern(10000, 7));
  });
});

async function writer(fate: Parameters<typeof cabled>[2], config: Record<string, number> = {}, bytes = 16384) {
  const net = await cabled(config, 1_000_000n, fate);
  const [A, B] = net.ctxs as [Context, Context];
  const ends = [A, B].map((ctx) => {
    const pd = ctx.allocPd(), cq = ctx.createCq(64);
    return { ctx, pd, cq, qp: ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 16, maxRecvWr: 16 }) };
  });
  const [a, b] = ends as [typeof ends[0], typeof ends[0]];
  for (const [x, y, dev] of [[a, b, 1], [b, a, 0]] as const) {
    x.ctx.modifyQp(x.qp, { state: "INIT" });
    x.ctx.modifyQp(x.qp, { state: "RTR", destQpNum: y.qp.qpn, destDevice: dev });
    x.ctx.modifyQp(x.qp, { state: "RTS" });
  }
  const src = A.allocHbm(bytes), dst = B.allocHbm(bytes);
  A.write(src, pattern(bytes, 11));
  const smr = A.regMr(a.pd, src, bytes), dmr = B.regMr(b.pd, dst, bytes, ["REMOTE_WRITE"]);
  const post = (rkey = dmr.rkey) => A.postSend(a.qp, [{ wrId: 5, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: bytes, lkey: smr.lkey, remoteAddr: dst, rkey }]);
  return { net, a, b, src, dst, post, dmr, bytes };
}

describe("RoCEv2 recovers from loss the way RC does", () => {
  it("a lost data packet: one PSN-sequence NAK, go back N, the bytes land intact", async () => {
    // device 0's second frame (PSN 1 of 4) is lost
    const w = await writer((from, n) => (from === 0 && n === 1 ? "drop" : "pass"));
    w.post();
    expect(settle(w.net, w.a.ctx, w.a.cq, 1).map((c) => c.status)).toEqual(["SUCCESS"]);
    expect(w.b.ctx.read(w.dst, w.bytes)).toEqual(pattern(w.bytes, 11));
    const sb = w.b.ctx.device.stats(), sa = w.a.ctx.device.stats();
    expect(sb["roce.rx_out_of_order"]).toBe(2); // PSNs 2 and 3 arrive before the retransmission
    expect(sb["roce.naks_sent"]).toBe(1); // once per expected PSN
    expect(sa["roce.retransmits"]).toBe(1);
    expect(sa["port.tx_packets"]).toBe(4 + 3); // PSNs 0-3, then 1-3 again
    // every frame a device received is counted once: taken by a half, skipped, or dropped with a reason
    for (const s of [sa, sb]) {
      const parts = ["roce.rx_requests", "roce.rx_answers", "roce.rx_duplicate", "roce.rx_out_of_order", "roce.stale_answers", "roce.ghost_answers",
        "roce.rx_malformed", "roce.rx_bad_icrc", "roce.rx_not_mine", "roce.rx_unknown_qp", "roce.rx_cnp"];
      expect(parts.reduce((n, k) => n + s[k]!, 0)).toBe(s["port.rx_packets"]);
    }
    expect(sb["roce.rx_requests"]).toBe(4); // PSN 0, then 1-3 once they come in order
    expect(sa["roce.rx_answers"]).toBe(2); // the NAK and the ACK
  });

  it("a corrupted packet is dropped for its ICRC and recovered the same way", async () => {
    const w = await writer((from, n) => (from === 0 && n === 2 ? "corrupt" : "pass"));
    w.post();
    expect(settle(w.net, w.a.ctx, w.a.cq, 1).map((c) => c.status)).toEqual(["SUCCESS"]);
    expect(w.b.ctx.read(w.dst, w.bytes)).toEqual(pattern(w.bytes, 11));
    expect(w.b.ctx.device.stats()["roce.rx_bad_icrc"]).toBe(1);
  });

  it("a lost ACK: the transport timer sends again, the duplicate is ACKed, the request completes once", async () => {
    let acks = 0;
    const w = await writer((from) => (from === 1 && acks++ === 0 ? "drop" : "pass"), { transportTimeoutPs: 20_000_000 });
    w.post();
    const wcs = settle(w.net, w.a.ctx, w.a.cq, 1, 200_000_000n);
    expect(wcs.map((c) => [Number(c.wrId), c.status])).toEqual([[5, "SUCCESS"]]);
    expect(w.a.ctx.device.stats()["roce.timeouts"]).toBe(1);
    expect(w.b.ctx.device.stats()["roce.rx_duplicate"]).toBe(4);
    w.net.run(w.a.ctx.nowPs + 50_000_000n);
    expect(w.a.ctx.pollCq(w.a.cq, 8)).toEqual([]); // once
  });

  it("no answer at all: RETRY_EXC_ERR after transportRetries timeouts", async () => {
    const w = await writer((from) => (from === 0 ? "drop" : "pass"), { transportTimeoutPs: 10_000_000, transportRetries: 2 });
    w.post();
    const wcs = settle(w.net, w.a.ctx, w.a.cq, 1, 500_000_000n);
    expect(wcs.map((c) => c.status)).toEqual(["RETRY_EXC_ERR"]);
    expect(w.a.ctx.device.stats()["roce.timeouts"]).toBe(3);
    expect(w.a.ctx.qpState(w.a.qp)).toBe("ERR");
  });

  it("a wrong rkey: REM_ACCESS_ERR at the requester, nothing placed", async () => {
    const w = await writer(() => "pass");
    w.post((w.dmr.rkey ^ 0x100) >>> 0);
    expect(settle(w.net, w.a.ctx, w.a.cq, 1).map((c) => c.status)).toEqual(["REM_ACCESS_ERR"]);
    expect(w.b.ctx.read(w.dst, w.bytes).every((x) => x === 0)).toBe(true);
  });
});

describe("timing mode", () => {
  it("moves no bytes, and takes exactly as long as full mode", async () => {
    const done: bigint[] = [];
    for (const timingMode of [0, 1]) {
      const w = await writer(() => "pass", { timingMode }, 65536);
      w.post();
      expect(settle(w.net, w.a.ctx, w.a.cq, 1).map((c) => c.status)).toEqual(["SUCCESS"]);
      const rec = w.a.ctx.device.traceRecords.filter((r) => r.point === "nic.wqe_done");
      done.push(rec[0]!.timePs);
      const landed = w.b.ctx.read(w.dst, 65536);
      expect(landed.every((x) => x === 0)).toBe(timingMode === 1);
      expect(w.a.ctx.device.stats()["port.tx_bytes"]).toBe(16 * (14 + 20 + 8 + 12 + 4096 + 4) + 16);
    }
    expect(done[1]).toBe(done[0]);
  });

  it("a WRITE's time is the sum of its parts, by hand", async () => {
    const w = await writer(() => "pass", {}, 4096);
    w.post();
    settle(w.net, w.a.ctx, w.a.cq, 1);
    const tr = w.a.ctx.device.traceRecords;
    const start = tr.find((r) => r.point === "nic.wqe_start")!.timePs, end = tr.find((r) => r.point === "nic.wqe_done")!.timePs;
    // decode 20 ns + HBM latency 100 ns + 4 KiB streamed at 1.2 TB/s (3413.33 ps, rounded up)
    // + one frame of 14+20+8+12+16 (RETH) +4096+4 = 4170 B and 24 B of overhead at 100 B/ns
    // + 1 us of cable + the ACK (14+20+8+12+4 (AETH)+4 = 62 B + 24 at 100 B/ns) + 1 us back
    // + the 32-byte CQE into host memory over PCIe (pcieGbps 512: 500 ps) and its 300 ns write latency
    const cqePs = (32 * 8000) / 512 + 300_000;
    const expected = 20_000 + 100_000 + Math.ceil(4096 / 1.2) + 41_940 + 1_000_000 + 860 + 1_000_000 + cqePs;
    expect(Number(end - start)).toBeGreaterThanOrEqual(expected - 1);
    expect(Number(end - start)).toBeLessThanOrEqual(expected + 1);
  });
});

describe("DCQCN", () => {
  /** Marks a frame CE on the way (the ICRC leaves ECN out; the IPv4 checksum is fixed up). */
  function markCe(f: { mem: Uint8Array; hdrAt: number }): void {
    const ip = f.hdrAt + 14;
    f.mem[ip + 1] = (f.mem[ip + 1]! & ~3) | 3;
    f.mem[ip + 10] = 0;
    f.mem[ip + 11] = 0;
    let sum = 0;
    for (let i = 0; i < 20; i += 2) sum += (f.mem[ip + i]! << 8) | f.mem[ip + i + 1]!;
    while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
    f.mem[ip + 10] = (~sum >> 8) & 0xff;
    f.mem[ip + 11] = ~sum & 0xff;
  }

  it("a CE mark brings one CNP, and the sender halves its rate: its packets leave twice as far apart", async () => {
    const sent: number[] = [];
    const w = await writer((from, n, f) => {
      if (from === 0) sent.push(f.timePs);
      if (from === 0 && n === 0) markCe(f); // the first data packet arrives marked
      return "pass";
    }, {}, 1 << 20);
    w.post();
    expect(settle(w.net, w.a.ctx, w.a.cq, 1).map((c) => c.status)).toEqual(["SUCCESS"]);
    expect(w.b.ctx.device.stats()["roce.rx_ce"]).toBe(1);
    expect(w.b.ctx.device.stats()["roce.cnps_sent"]).toBe(1);
    expect(w.a.ctx.device.stats()["roce.rx_cnp"]).toBe(1);
    expect(w.a.ctx.device.stats()["roce.rate_cuts"]).toBe(1);
    const gaps = sent.slice(1).map((t, i) => t - sent[i]!);
    // a middle 4 KiB frame (no RETH) is 14+20+8+12+4096+4 = 4154 B + 24 B of overhead: 41,780 ps
    // at 800 Gb/s; after the cut (alpha starts at 1: the rate halves, to 400 Gb/s) 83,560 ps
    expect(gaps.slice(1, 11)).toEqual(new Array(10).fill(41_780));
    const after = gaps.slice(-20);
    expect(after).toEqual(new Array(after.length).fill(83_560));
  });

  it("is off with dcqcn 0: CE is counted, no CNP, no cut", async () => {
    const w = await writer((from, n, f) => { if (from === 0 && n === 0) markCe(f); return "pass"; }, { dcqcn: 0 }, 65536);
    w.post();
    expect(settle(w.net, w.a.ctx, w.a.cq, 1).map((c) => c.status)).toEqual(["SUCCESS"]);
    expect(w.b.ctx.device.stats()["roce.rx_ce"]).toBe(1);
    expect(w.b.ctx.device.stats()["roce.cnps_sent"]).toBe(0);
    expect(w.a.ctx.device.stats()["roce.rate_cuts"]).toBe(0);
  });
});
