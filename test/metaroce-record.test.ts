// A path's record of the PSNs it has out holds 256 (MRT_PATH_WINDOW): a probe, which takes a PSN
// of its own, must never take the slot of a packet still out. Found with two `menic serve`
// processes at --scale 1 (2 of 5 transfers stalled for good): a path whose window had grown to
// its whole record (a millisecond round trip at the grant) went silent; its RTO, waiting out
// what looked like congestion, sent a probe that overwrote the oldest packet's record. That
// packet's ACK then acknowledged the probe, its SSN stayed unacknowledged, nothing was left to
// send or time out, and its work request never completed.
//
// Here: two devices, one path between them, a millisecond each way. Device 0 sends 4 MiB of
// WRITEs; device 1's ACKs are held back for 20 ms once the path's record is full, longer than
// the path's RTO, and then all delivered. Every WRITE must complete, once, with its bytes.
import { describe, it, expect } from "vitest";
import { Context } from "../host/verbs.js";
import { DevicePorts, frameCopy } from "../host/ports.js";
import { coreModule } from "../host/platform/node.js";

const WINDOW_PS = 1_000_000; // the devices run 1 us at a time
const LATENCY_PS = 1_000_000_000; // 1 ms each way
const MSG = 256 * 1024, MSGS = 16;

interface InFlight { at: number; bytes: Uint8Array; hdrLen: number; wireLen: number; port: number; seq: number }

async function run(holdPs: number) {
  const cfg = { engines: 1, ports: 1, scaleUpPorts: 1, transport: 1, mrtConnections: 2, mrtPaths: 1, hostMemBytes: 8 << 20, timingMode: 0 };
  const ctxs = [await Context.open(coreModule(), { ...cfg, deviceId: 0 }), await Context.open(coreModule(), { ...cfg, deviceId: 1 })];
  const ports = ctxs.map((c) => new DevicePorts(c.device));
  const [a, b] = ctxs.map((ctx) => {
    const pd = ctx.allocPd(), cq = ctx.createCq(64);
    return { ctx, pd, cq, qp: ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 32, maxRecvWr: 4 }) };
  }) as [any, any];
  for (const [x, y, dev] of [[a, b, 1], [b, a, 0]] as const) {
    x.ctx.modifyQp(x.qp, { state: "INIT" });
    x.ctx.modifyQp(x.qp, { state: "RTR", destQpNum: y.qp.qpn, destDevice: dev });
    x.ctx.modifyQp(x.qp, { state: "RTS" });
  }
  const src = a.ctx.allocHostMemory(MSG * MSGS, 4096), dst = b.ctx.allocHostMemory(MSG * MSGS, 4096);
  const data = new Uint8Array(MSG * MSGS).map((_, i) => (i * 7 + (i >> 12)) & 255);
  a.ctx.write(src, data);
  const smr = a.ctx.regMr(a.pd, src, MSG * MSGS, ["LOCAL_WRITE"]), dmr = b.ctx.regMr(b.pd, dst, MSG * MSGS, ["LOCAL_WRITE", "REMOTE_WRITE"]);
  a.ctx.postSend(a.qp, Array.from({ length: MSGS }, (_, i) => ({
    wrId: BigInt(i), opcode: "RDMA_WRITE" as const, signaled: true, localAddr: src + i * MSG, length: MSG, lkey: smr.lkey, remoteAddr: dst + i * MSG, rkey: dmr.rkey,
  })));
  const pending: InFlight[][] = [[], []];
  let holdFrom = Infinity, t = 0;
  const ids: number[] = [];
  while (ids.length < MSGS && t < 2_000_000_000_000) {
    const end = t + WINDOW_PS;
    for (const c of ctxs) c.run(BigInt(end));
    // once device 0 has a full record out (256 packets past the grant), device 1's ACKs are held for holdPs
    if (holdFrom === Infinity && Number(a.ctx.device.stats()["mrt.tx_data"]) >= 300) holdFrom = end;
    for (let d = 0; d < 2; d++) {
      ports[d]!.drain((f) => {
        let at = f.timePs + LATENCY_PS;
        if (d === 1 && at >= holdFrom && at < holdFrom + holdPs) at = holdFrom + holdPs; // held, in order, then delivered
        pending[1 - d]!.push({ at, bytes: frameCopy(f), hdrLen: f.hdrLen, wireLen: f.wireLen, port: f.port, seq: f.seq });
      });
    }
    for (let d = 0; d < 2; d++) {
      const q = pending[d]!;
      let k = 0;
      for (; k < q.length && q[k]!.at < end + WINDOW_PS; k++) {
        const p = q[k]!;
        if (!ports[d]!.stageArrival(p.at, p.port, p.wireLen, 1 - d, p.seq, p.bytes, 0, p.hdrLen, p.bytes, p.hdrLen, p.bytes.length - p.hdrLen)) break;
      }
      q.splice(0, k);
      ports[d]!.commitArrivals();
    }
    t = end;
    for (const wc of a.ctx.pollCq(a.cq, 64)) {
      expect(wc.status).toBe("SUCCESS");
      ids.push(Number(wc.wrId));
    }
    b.ctx.pollCq(b.cq, 64);
  }
  return { ids, landed: b.ctx.read(dst, MSG * MSGS), data, stats: a.ctx.device.stats(), tPs: t };
}

describe("a probe never takes the record slot of a packet still out", () => {
  it("ACKs held 20 ms behind a full record: the RTO waits, probes without a PSN to spare, and every WRITE completes once", async () => {
    const r = await run(20_000_000_000);
    // the hold made the path's RTO wait (congestion, not loss) and then fire
    expect(r.stats["mrt.rto_waits"]).toBeGreaterThanOrEqual(1);
    expect(r.ids).toEqual(Array.from({ length: MSGS }, (_, i) => i));
    expect(Buffer.from(r.landed).equals(Buffer.from(r.data))).toBe(true);
  });
});
