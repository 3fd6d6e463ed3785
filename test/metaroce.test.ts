import { describe, it, expect } from "vitest";
import { connectedPair, settle as settleCq, type cabled, type CableFate, type CableHooks } from "./helpers/cable.js";
import type { Context, Cq } from "../host/verbs.js";
import type { TxFrameRef } from "../host/ports.js";

// The MetaRoCE-like transport between two devices joined port to port (docs/protocol.md):
// spraying, placement, completions, loss recovery by SACK and by tail probe, RNR, errors.

const pattern = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
const MRT = { transport: 1, mrtConnections: 2 };
const UDP_PORT = 4792;

/** What a frame is, read from its headers: type (1 DATA, 2 ACK, 3 PROBE), flags, path, PSN, SSN, UDP source port. */
function look(f: TxFrameRef) {
  const v = new DataView(f.mem.buffer, f.hdrAt, f.hdrLen);
  if (v.getUint16(36) !== UDP_PORT) return null;
  const h = 42;
  return { type: v.getUint8(h) & 15, flags: v.getUint8(h + 1), path: v.getUint8(h + 2), psn: v.getUint32(h + 4), ssn: v.getUint8(h) & 15 ? v.getUint32(h + 16) : 0, udpSrc: v.getUint16(34), port: f.port, timePs: f.timePs };
}

/** A connected pair of QPs over the MetaRoCE-like transport: a on device 0, b on device 1. */
const pair = (fate?: CableFate, config: Record<string, number> = {}, hooks: CableHooks = {}) => connectedPair({ ...MRT, ...config }, fate, hooks);

const settle = (net: Awaited<ReturnType<typeof cabled>>, ctx: Context, cq: Cq, n: number) => settleCq(net, ctx, cq, n, 200_000_000n);

/** Device 0 WRITEs `bytes` to device 1 (one message); what the tap saw, both ways. */
async function write(bytes: number, fate?: CableFate, config: Record<string, number> = {}) {
  const seen: { from: number; f: NonNullable<ReturnType<typeof look>>; fate: string }[] = [];
  const { net, a, b } = await pair(fate, config, { tap: (from: number, f: TxFrameRef, what: string) => { const x = look(f); if (x) seen.push({ from, f: x, fate: what }); } });
  const src = a.ctx.allocHbm(bytes), dst = b.ctx.allocHbm(bytes);
  a.ctx.write(src, pattern(bytes, 3));
  const smr = a.ctx.regMr(a.pd, src, bytes), dmr = b.ctx.regMr(b.pd, dst, bytes, ["REMOTE_WRITE"]);
  const t0 = a.ctx.nowPs;
  a.ctx.postSend(a.qp, [{ wrId: 9, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: bytes, lkey: smr.lkey, remoteAddr: dst, rkey: dmr.rkey }]);
  const wcs = settle(net, a.ctx, a.cq, 1);
  return { wcs, landed: b.ctx.read(dst, bytes), seen, A: a.ctx.device.stats(), B: b.ctx.device.stats(), t0, a, b };
}

describe("the MetaRoCE-like transport between two devices", () => {
  it("sprays a 64 KiB WRITE over 8 paths (8 UDP source ports, 8 ports), places it, completes it once", async () => {
    const r = await write(65536);
    expect(r.wcs.map((w) => [Number(w.wrId), w.status, w.byteLen])).toEqual([[9, "SUCCESS", 65536]]);
    expect(r.landed).toEqual(pattern(65536, 3));
    const data = r.seen.filter((s) => s.from === 0 && s.f.type === 1);
    expect(data.length).toBe(16);
    expect(new Set(data.map((s) => s.f.udpSrc)).size).toBe(8);
    expect(new Set(data.map((s) => s.f.port))).toEqual(new Set([0, 1, 2, 3, 4, 5, 6, 7]));
    // the connection's first frame is its request for a grant: a PROBE (type 3) with FIRST and
    // ACK_REQ, path 0's PSN 0; no data leaves before its answer comes back
    const sent = r.seen.filter((s) => s.from === 0);
    expect([sent[0]!.f.type, sent[0]!.f.flags, sent[0]!.f.path, sent[0]!.f.psn]).toEqual([3, 0xa0, 0, 0]);
    const grant = r.seen.find((s) => s.from === 1 && s.f.type === 2)!;
    expect(grant.f.timePs).toBeLessThan(data[0]!.f.timePs);
    expect(r.A["mrt.tx_requests"]).toBe(1);
    expect(r.A["mrt.tx_probes"]).toBe(0);
    // SSNs 0..15 once each, two PSNs per path (0 and 1, after the request on path 0)
    expect(data.map((s) => s.f.ssn).sort((x, y) => x - y)).toEqual([...Array(16).keys()]);
    for (let p = 0; p < 8; p++) expect(data.filter((s) => s.f.path === p).map((s) => s.f.psn)).toEqual(p === 0 ? [1, 2] : [0, 1]);
    expect(r.A["mrt.tx_retransmits"]).toBe(0);
    expect(r.B["mrt.rx_duplicate"]).toBe(0);
    expect(r.B["mrt.rx_bad_crc"]).toBe(0);
  });

  it("a lost data packet is sent again at once, found by the SACK hole under the next one on its path", async () => {
    // drop the 3rd data frame device 0 sends (SSN 2, path 2's first PSN)
    let dataN = 0;
    const r = await write(65536, (from, _n, f) => (from === 0 && look(f)?.type === 1 && dataN++ === 2 ? "drop" : "pass"));
    expect(r.wcs.map((w) => w.status)).toEqual(["SUCCESS"]);
    expect(r.landed).toEqual(pattern(65536, 3));
    expect(r.A["mrt.losses_sack"]).toBe(1);
    expect(r.A["mrt.tx_retransmits"]).toBe(1);
    expect(r.A["mrt.rtos"]).toBe(0);
    expect(r.A["mrt.tx_probes"]).toBe(0);
    const again = r.seen.filter((s) => s.from === 0 && s.f.type === 1 && (s.f.flags & 0x10) !== 0);
    expect(again.map((s) => s.f.ssn)).toEqual([2]);
    // sent again under a new PSN
    const lost = r.seen.find((s) => s.fate === "drop")!;
    expect(again[0]!.f.path === lost.f.path && again[0]!.f.psn === lost.f.psn).toBe(false);
  });

  it("a lost last packet: the tail probe is that packet sent again, and the message completes within the probe time plus one round trip", async () => {
    let dataN = 0;
    const r = await write(65536, (from, _n, f) => (from === 0 && look(f)?.type === 1 && dataN++ === 15 ? "drop" : "pass"));
    expect(r.wcs.map((w) => w.status)).toEqual(["SUCCESS"]);
    expect(r.landed).toEqual(pattern(65536, 3));
    if (process.env.MRT_DEBUG) console.log(r.seen.map((s) => `${s.from} ${s.fate} t${s.f.timePs} type${s.f.type} path${s.f.path} psn${s.f.psn} ssn${s.f.ssn} fl${s.f.flags}`).join("\n"));
    // one probe, and it is the lost packet again (DATA, RETX and ACK_REQ, a new PSN): no empty PROBE
    expect(r.A["mrt.tx_probes"]).toBe(1);
    expect(r.A["mrt.tx_retransmits"]).toBe(1);
    expect(r.A["mrt.rtos"]).toBe(0);
    expect(r.B["mrt.rx_duplicate"]).toBe(0);
    expect(r.seen.filter((s) => s.f.type === 3 && (s.f.flags & 0x80) === 0)).toEqual([]); // no PROBE but the request
    const lost = r.seen.find((s) => s.fate === "drop")!;
    const probe = r.seen.find((s) => s.from === 0 && s.f.type === 1 && (s.f.flags & 0x10) !== 0)!;
    expect([probe.f.path, probe.f.ssn, probe.f.psn]).toEqual([lost.f.path, lost.f.ssn, lost.f.psn + 1]);
    // the path last heard of its first packet (PSN 0): its ACK arrived a cable latency after it
    // left; the probe goes max(4 us, 2 x that round trip) later (a frame's time is its end: a
    // data frame's is 42 ns after it began, which the round trip and the probe's time both miss)
    const first = r.seen.find((s) => s.from === 0 && s.f.type === 1 && s.f.path === lost.f.path)!;
    const ack = r.seen.find((s) => s.from === 1 && s.f.type === 2 && s.f.path === lost.f.path)!;
    const heard = ack.f.timePs + 1_000_000, rtt = heard - first.f.timePs;
    const due = heard + Math.max(4_000_000, 2 * rtt);
    expect(probe.f.timePs).toBeGreaterThanOrEqual(due);
    expect(probe.f.timePs).toBeLessThan(due + 200_000);
    // done one round trip after the probe (it lands, its ACK comes back) plus the completion's latency
    // (with an empty probe it took two: the probe's ACK showed the hole, then the packet went again)
    const done = Number(r.wcs[0]!.timePs);
    expect(done - probe.f.timePs).toBeLessThan(rtt + 1_000_000);
  });

  it("a tail probe that finds nothing lost costs nothing: it carries the next new packet when there is one", async () => {
    // path 0's ACKs are lost from 4 us to 9 us: after the grant (its ACK leaves at 3.1 us; a window
    // from 3 us dropped the grant itself, and the request's probe then sent data before any grant,
    // which the conformance case mrt-request-first refuses), and ending while the path still has
    // packets to send, so that a later ACK covers what the lost ones said (a lost ACK of the
    // path's last packets is a tail loss: its probe sends that packet again). Its probe fires (4 us,
    // or twice its round trip, after it last heard) though no data packet was lost
    const r = await write(1 << 20, (from, _n, f) => (from === 1 && look(f)?.type === 2 && look(f)?.path === 0 && f.timePs > 4_000_000n && f.timePs < 9_000_000n ? "drop" : "pass"), { mrtPaths: 2, mrtInitCwndBytes: 65536 });
    expect(r.wcs.map((w) => w.status)).toEqual(["SUCCESS"]);
    expect(r.A["mrt.tx_probes"]).toBeGreaterThan(0);
    // no packet was lost: nothing placed twice, and the probes were new packets
    expect(r.B["mrt.rx_duplicate"]).toBe(0);
    expect(r.A["mrt.tx_retransmits"]).toBe(0);
    expect(r.seen.filter((s) => s.f.type === 3 && (s.f.flags & 0x80) === 0)).toEqual([]); // no PROBE but the request
  });

  it("a path that goes silent with its whole record out (256 PSNs) loses track of none of them: no tail probe overwrites the oldest, the RTO sends them all again", async () => {
    // two paths (ports 0 and 1), a 2 MiB initial window per port: a path may have 256 PSNs out.
    // Path 1 goes dead after its 40th packet and keeps sending until it has 256 out (~10 us at
    // line rate); its tail probe comes 15 us after it last heard, before its RTO (20 us)
    let port1 = 0;
    const fate: CableFate = (from, _n, f) => (from === 0 && f.port === 1 && ++port1 > 40 ? "drop" : "pass");
    const r = await write(3 << 20, fate, { mrtPaths: 2, mrtInitCwndBytes: 2 << 20, mrtProbeMinPs: 15_000_000 });
    expect(r.wcs.map((w) => w.status)).toEqual(["SUCCESS"]);
    expect(Buffer.compare(r.landed, pattern(3 << 20, 3))).toBe(0); // (toEqual on 3 MiB takes seconds)
    const path1 = r.seen.filter((s) => s.from === 0 && s.f.path === 1);
    // it did fill its record: PSN 40 + 255 went out before it heard of anything lost
    expect(Math.max(...path1.map((s) => s.f.psn))).toBeGreaterThanOrEqual(295);
    // every data packet dropped on it went again, on path 0
    const dropped = new Set(path1.filter((s) => s.fate === "drop" && s.f.type === 1).map((s) => s.f.ssn));
    const again = new Set(r.seen.filter((s) => s.from === 0 && s.f.type === 1 && (s.f.flags & 0x10) !== 0 && s.fate === "pass").map((s) => s.f.ssn));
    expect(dropped.size).toBeGreaterThan(200);
    for (const ssn of dropped) expect(again.has(ssn)).toBe(true);
    expect(r.A["mrt.rtos"]).toBeGreaterThan(0);
  });

  it("SEND and SEND with immediate fill the posted receives in order; WRITE with immediate consumes one", async () => {
    const { net, a, b } = await pair();
    const buf = a.ctx.allocHbm(30000), rbuf = b.ctx.allocHbm(30000), wdst = b.ctx.allocHbm(8192);
    a.ctx.write(buf, pattern(30000, 5));
    const amr = a.ctx.regMr(a.pd, buf, 30000);
    const bmr = b.ctx.regMr(b.pd, rbuf, 30000, ["LOCAL_WRITE"]), wmr = b.ctx.regMr(b.pd, wdst, 8192, ["REMOTE_WRITE"]);
    b.ctx.postRecv(b.qp, [
      { wrId: 70, localAddr: rbuf, length: 10000, lkey: bmr.lkey },
      { wrId: 71, localAddr: rbuf + 10000, length: 20000, lkey: bmr.lkey },
      { wrId: 72, localAddr: rbuf, length: 0, lkey: bmr.lkey },
    ]);
    a.ctx.postSend(a.qp, [
      { wrId: 1, opcode: "SEND", signaled: true, localAddr: buf, length: 9000, lkey: amr.lkey },
      { wrId: 2, opcode: "SEND_WITH_IMM", signaled: true, localAddr: buf + 9000, length: 20000, lkey: amr.lkey, imm: 0xfeed },
      { wrId: 3, opcode: "RDMA_WRITE_WITH_IMM", signaled: true, localAddr: buf, length: 8192, lkey: amr.lkey, remoteAddr: wdst, rkey: wmr.rkey, imm: 0xbeef },
    ]);
    expect(settle(net, a.ctx, a.cq, 3).map((w) => [Number(w.wrId), w.status])).toEqual([[1, "SUCCESS"], [2, "SUCCESS"], [3, "SUCCESS"]]);
    const rx = settle(net, b.ctx, b.cq, 3);
    expect(rx.map((w) => [Number(w.wrId), w.status, w.opcode, w.byteLen, w.imm ?? null])).toEqual([
      [70, "SUCCESS", "RECV", 9000, null], [71, "SUCCESS", "RECV", 20000, 0xfeed], [72, "SUCCESS", "RDMA_WRITE_WITH_IMM", 8192, 0xbeef],
    ]);
    expect(b.ctx.read(rbuf, 9000)).toEqual(pattern(30000, 5).subarray(0, 9000));
    expect(b.ctx.read(rbuf + 10000, 20000)).toEqual(pattern(30000, 5).subarray(9000, 29000));
    expect(b.ctx.read(wdst, 8192)).toEqual(pattern(30000, 5).subarray(0, 8192));
  });

  it("a SEND before its receive is posted is NAKed RNR, waits the RNR timer, and lands once the receive is there", async () => {
    const { net, a, b } = await pair(undefined, { rnrTimerPs: 20_000_000, rnrRetries: 6 });
    const buf = a.ctx.allocHbm(12000), rbuf = b.ctx.allocHbm(12000);
    a.ctx.write(buf, pattern(12000, 9));
    const amr = a.ctx.regMr(a.pd, buf, 12000), bmr = b.ctx.regMr(b.pd, rbuf, 12000, ["LOCAL_WRITE"]);
    a.ctx.postSend(a.qp, [{ wrId: 5, opcode: "SEND", signaled: true, localAddr: buf, length: 12000, lkey: amr.lkey }]);
    net.run(a.ctx.nowPs + 30_000_000n);
    expect(a.ctx.pollCq(a.cq, 4)).toEqual([]);
    expect(a.ctx.device.stats()["mrt.rnr_naks"]).toBeGreaterThan(0);
    b.ctx.postRecv(b.qp, [{ wrId: 80, localAddr: rbuf, length: 12000, lkey: bmr.lkey }]);
    expect(settle(net, a.ctx, a.cq, 1).map((w) => [Number(w.wrId), w.status])).toEqual([[5, "SUCCESS"]]);
    expect(settle(net, b.ctx, b.cq, 1).map((w) => [Number(w.wrId), w.status, w.byteLen])).toEqual([[80, "SUCCESS", 12000]]);
    expect(b.ctx.read(rbuf, 12000)).toEqual(pattern(12000, 9));
  });

  it("a WRITE with a wrong rkey ends with REM_ACCESS_ERR and nothing placed; the rest of the queue is flushed", async () => {
    const { net, a, b } = await pair();
    const src = a.ctx.allocHbm(8192), dst = b.ctx.allocHbm(8192);
    a.ctx.write(src, pattern(8192, 1));
    const smr = a.ctx.regMr(a.pd, src, 8192), dmr = b.ctx.regMr(b.pd, dst, 8192, ["REMOTE_READ"]);
    a.ctx.postSend(a.qp, [
      { wrId: 1, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: 8192, lkey: smr.lkey, remoteAddr: dst, rkey: dmr.rkey },
      { wrId: 2, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: 8192, lkey: smr.lkey, remoteAddr: dst, rkey: dmr.rkey },
    ]);
    expect(settle(net, a.ctx, a.cq, 2).map((w) => [Number(w.wrId), w.status])).toEqual([[1, "REM_ACCESS_ERR"], [2, "WR_FLUSH_ERR"]]);
    expect(b.ctx.read(dst, 8192)).toEqual(new Uint8Array(8192));
    expect(a.ctx.qpState(a.qp)).toBe("ERR");
  });

  it("a READ brings the bytes back on the responder's own stream, in order with the WRITEs around it, even with its response's packets lost", async () => {
    // drop device 1's 2nd and 5th data frames: packets of the READ's response
    let respN = 0;
    const { net, a, b } = await pair((from, _n, f) => (from === 1 && look(f)?.type === 1 && [1, 4].includes(respN++) ? "drop" : "pass"));
    const buf = a.ctx.allocHbm(3 * 8192), rbuf = b.ctx.allocHbm(24000);
    b.ctx.write(rbuf, pattern(20000, 11));
    a.ctx.write(buf, pattern(8192, 12));
    const amr = a.ctx.regMr(a.pd, buf, 3 * 8192, ["LOCAL_WRITE"]), bmr = b.ctx.regMr(b.pd, rbuf, 24000, ["REMOTE_READ", "REMOTE_WRITE"]);
    a.ctx.postSend(a.qp, [
      { wrId: 1, opcode: "RDMA_WRITE", signaled: true, localAddr: buf, length: 8192, lkey: amr.lkey, remoteAddr: rbuf + 12000, rkey: bmr.rkey },
      { wrId: 2, opcode: "RDMA_READ", signaled: true, localAddr: buf + 8192, length: 10000, lkey: amr.lkey, remoteAddr: rbuf, rkey: bmr.rkey },
      { wrId: 3, opcode: "RDMA_WRITE", signaled: true, localAddr: buf, length: 100, lkey: amr.lkey, remoteAddr: rbuf + 11000, rkey: bmr.rkey },
      { wrId: 4, opcode: "RDMA_READ", signaled: true, localAddr: buf + 2 * 8192, length: 0, lkey: amr.lkey, remoteAddr: rbuf, rkey: bmr.rkey },
    ]);
    const wcs = settle(net, a.ctx, a.cq, 4);
    expect(wcs.map((w) => [Number(w.wrId), w.status, w.opcode, w.byteLen])).toEqual([
      [1, "SUCCESS", "RDMA_WRITE", 8192], [2, "SUCCESS", "RDMA_READ", 10000], [3, "SUCCESS", "RDMA_WRITE", 100], [4, "SUCCESS", "RDMA_READ", 0],
    ]);
    // the READ saw the bytes as they were (its range lies before the WRITE's at 12000)
    expect(a.ctx.read(buf + 8192, 10000)).toEqual(pattern(20000, 11).subarray(0, 10000));
    expect(b.ctx.device.stats()["mrt.tx_retransmits"]).toBe(2);
    // the responder's side of a READ is no work request of its: nothing in its CQ
    expect(b.ctx.pollCq(b.cq, 8)).toEqual([]);
  });

  it("a READ of bytes the rkey does not grant ends with REM_ACCESS_ERR", async () => {
    const { net, a, b } = await pair();
    const buf = a.ctx.allocHbm(4096), rbuf = b.ctx.allocHbm(4096);
    const amr = a.ctx.regMr(a.pd, buf, 4096, ["LOCAL_WRITE"]), bmr = b.ctx.regMr(b.pd, rbuf, 4096, ["REMOTE_WRITE"]);
    a.ctx.postSend(a.qp, [{ wrId: 4, opcode: "RDMA_READ", signaled: true, localAddr: buf, length: 4096, lkey: amr.lkey, remoteAddr: rbuf, rkey: bmr.rkey }]);
    expect(settle(net, a.ctx, a.cq, 1).map((w) => [Number(w.wrId), w.status])).toEqual([[4, "REM_ACCESS_ERR"]]);
  });
});

// Every path of a connection dead (docs/protocol.md "Giving up"): after mrtGiveUpPs of all of them
// failed, the connection gives up as a RoCEv2 QP does when its retries run out; one path back before
// then, and nothing fails.
describe("the MetaRoCE-like transport when every path of a connection is dead", () => {
  const GIVE_UP = 100_000_000; // 100 us
  const CONFIG = { mrtRtoInitPs: 2_000_000, mrtRtoMinPs: 2_000_000, mrtFailAfter: 3, mrtGiveUpPs: GIVE_UP };

  /** A pair whose device 0 frames are dropped on the ports `dead()` names; a first WRITE done before any dies (RTT samples). */
  async function deadPaths(dead: () => Set<number>) {
    const { net, a, b } = await pair((from, _n, f) => (from === 0 && dead().has(f.port) ? "drop" : "pass"), CONFIG);
    const src = a.ctx.allocHbm(65536), dst = b.ctx.allocHbm(65536);
    a.ctx.write(src, pattern(65536, 4));
    const smr = a.ctx.regMr(a.pd, src, 65536), dmr = b.ctx.regMr(b.pd, dst, 65536, ["REMOTE_WRITE"]);
    const post = (...ids: number[]) => a.ctx.postSend(a.qp, ids.map((id) => ({ wrId: id, opcode: "RDMA_WRITE" as const, signaled: true, localAddr: src, length: 16384, lkey: smr.lkey, remoteAddr: dst, rkey: dmr.rkey })));
    post(1);
    expect(settle(net, a.ctx, a.cq, 1).map((w) => w.status)).toEqual(["SUCCESS"]);
    /** Runs a microsecond at a time until every path of device 0 is failed; when (the end of that microsecond). */
    const allFailed = () => {
      const t0 = a.ctx.nowPs;
      while (a.ctx.device.metarocePaths().some((p) => p.state !== "failed")) {
        if (a.ctx.nowPs > t0 + 1_000_000_000n) throw new Error("the paths never all failed");
        net.run(a.ctx.nowPs + 1_000_000n);
      }
      return a.ctx.nowPs;
    };
    return { net, a, b, post, allFailed, dst };
  }

  it("all fail for good: after mrtGiveUpPs the QP is in ERR, its oldest WRITE ends RETRY_EXC_ERR, the others are flushed, each once", async () => {
    let down = new Set<number>();
    const { net, a, post, allFailed } = await deadPaths(() => down);
    down = new Set([0, 1, 2, 3, 4, 5, 6, 7]);
    post(2, 3, 4);
    const failedAt = allFailed();
    expect(a.ctx.pollCq(a.cq, 8)).toEqual([]);
    const wcs = settleCq(net, a.ctx, a.cq, 3, 2n * BigInt(GIVE_UP));
    expect(wcs.map((w) => [Number(w.wrId), w.status])).toEqual([[2, "RETRY_EXC_ERR"], [3, "WR_FLUSH_ERR"], [4, "WR_FLUSH_ERR"]]);
    // at the bound: the last path failed within the microsecond before failedAt
    for (const w of wcs) {
      expect(Number(w.timePs - failedAt)).toBeGreaterThan(GIVE_UP - 1_000_000);
      expect(Number(w.timePs - failedAt)).toBeLessThanOrEqual(GIVE_UP);
    }
    expect(a.ctx.qpState(a.qp)).toBe("ERR");
    const st = a.ctx.device.stats();
    expect([st["mrt.conns_given_up"], st["mrt.paths_failed"], st["mrt.paths_recovered"]]).toEqual([1, 8, 0]);
    // once: nothing more comes, however long it stays dead
    net.run(a.ctx.nowPs + 3n * BigInt(GIVE_UP));
    expect(a.ctx.pollCq(a.cq, 8)).toEqual([]);
  });

  it("a path failed for longer than 256 probes comes back when its plane does (its unanswered probes do not fill its record)", async () => {
    let down = new Set<number>();
    const { net, a, post } = await deadPaths(() => down);
    down = new Set([3]);
    post(2);
    // failed within a few RTOs, then probed every 4 x mrtRtoMinPs = 8 us: 3 ms is 375 probes
    net.run(a.ctx.nowPs + 3_000_000_000n);
    expect(a.ctx.device.stats()["mrt.tx_probes"]).toBeGreaterThan(300);
    expect(a.ctx.device.metarocePaths()[3]!.state).toBe("failed");
    down = new Set();
    net.run(a.ctx.nowPs + 20_000_000n);
    expect(a.ctx.device.metarocePaths()[3]!.state).toBe("active");
    expect(a.ctx.device.stats()["mrt.paths_recovered"]).toBe(1);
    expect(settle(net, a.ctx, a.cq, 1).map((w) => w.status)).toEqual(["SUCCESS"]);
  });

  it("one path back before the bound: the WRITEs complete with success over it, and nothing gives up", async () => {
    let down = new Set<number>();
    const { net, a, b, post, allFailed, dst } = await deadPaths(() => down);
    down = new Set([0, 1, 2, 3, 4, 5, 6, 7]);
    post(2, 3, 4);
    const failedAt = allFailed();
    net.run(failedAt + BigInt(GIVE_UP / 2));
    down = new Set([0, 1, 2, 4, 5, 6, 7]); // port 3 (path 3) comes back; its next probe finds it
    const wcs = settleCq(net, a.ctx, a.cq, 3, 2n * BigInt(GIVE_UP));
    expect(wcs.map((w) => [Number(w.wrId), w.status])).toEqual([[2, "SUCCESS"], [3, "SUCCESS"], [4, "SUCCESS"]]);
    expect(b.ctx.read(dst, 16384)).toEqual(pattern(65536, 4).subarray(0, 16384));
    net.run(failedAt + 2n * BigInt(GIVE_UP));
    expect(a.ctx.qpState(a.qp)).toBe("RTS");
    const st = a.ctx.device.stats();
    expect([st["mrt.conns_given_up"], st["mrt.paths_recovered"]]).toEqual([0, 1]);
    expect(a.ctx.device.metarocePaths().map((p) => p.state)).toEqual(["failed", "failed", "failed", "active", "failed", "failed", "failed", "failed"]);
  });
});
