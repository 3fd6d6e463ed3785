import { describe, it, expect } from "vitest";
import { cabled, frameCopy, type CableFate } from "./helpers/cable.js";
import { parseFrame, buildFrame, type RoceFrame } from "../host/wire/rocev2.js";
import { readLoss } from "../bench/read-loss.js";
import { portAddress } from "../host/fabric/topology.js";
import { AETH_SYNDROME, AETH_NAK } from "../host/generated/headers.js";
import { OP } from "../host/generated/headers.js";
import type { Context, Cq, Mr, Qp, Wc } from "../host/verbs.js";

// RC recovery the RoCEv2 transport once got wrong, found while writing the fuzz test
// (test/roce-fuzz.test.ts) by reading assembly/rocev2/rx.ts (then nic/roce-rx.ts); each test failed on the old code.

/** Devices 0 and 1 cabled, QP a on 0 connected to QP b on 1, a region on each with every right. */
async function pair(fate?: CableFate, config: Record<string, number> = {}) {
  const net = await cabled({ transportTimeoutPs: 10_000_000, transportRetries: 2, rnrTimerPs: 5_000_000, ...config }, 1_000_000n, fate);
  const [a, b] = net.ctxs.map((ctx): End => {
    const pd = ctx.allocPd(), cq = ctx.createCq(16), buf = ctx.allocHbm(65536);
    const mr = ctx.regMr(pd, buf, 65536, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
    return { ctx, cq, buf, mr, qp: ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 }) };
  }) as [End, End];
  for (const state of ["INIT", "RTR", "RTS"] as const) {
    a.ctx.modifyQp(a.qp, { state, destQpNum: b.qp.qpn, destDevice: 1 });
    b.ctx.modifyQp(b.qp, { state, destQpNum: a.qp.qpn, destDevice: 0 });
  }
  /** Runs until `e` has `n` completions (or 1 ms), and returns them. */
  const settle = (e: End, n: number) => {
    const out: Wc[] = [];
    for (let k = 0; k < 1000 && out.length < n; k++) {
      net.run(e.ctx.nowPs + 1_000_000n);
      out.push(...e.ctx.pollCq(e.cq, 16));
    }
    return out;
  };
  return { net, a, b, settle };
}
interface End { ctx: Context; cq: Cq; buf: number; mr: Mr; qp: Qp }

describe("RC recovery (regressions)", () => {
  // WAS: rocev2/rx.ts responder() took a FIRST or ONLY packet as the start of a message
  // (q.rxOp = RX_WRITE) before it checks that a WRITE ONLY with immediate has a receive for its
  // immediate. With none posted it answers RNR NAK but leaves rxOp set and ePsn where it was; the
  // requester sends the WRITE ONLY with immediate again after rnrTimerPs, at the same PSN, and the
  // responder, finding a message begun, answers NAK invalid request: REM_INV_REQ_ERR, both QPs in
  // error, though the receive was posted in time. (A WRITE of several packets is not hit: its
  // FIRST is a duplicate on the retry, and the LAST finds the message it belongs to.)
  // Now the receive is checked before the message is taken.
  it("a one-packet WRITE with immediate that meets no receive lands once the receive is posted (RNR, then retry)", async () => {
    const { net, a, b, settle } = await pair();
    a.ctx.postSend(a.qp, [{ wrId: 1, opcode: "RDMA_WRITE_WITH_IMM", signaled: true, localAddr: a.buf, length: 100, lkey: a.mr.lkey, remoteAddr: b.buf, rkey: b.mr.rkey, imm: 7 }]);
    net.run(3_000_000n); // the WRITE has met no receive: RNR NAK
    expect(b.ctx.device.stats()["roce.naks_sent"]).toBe(1);
    b.ctx.postRecv(b.qp, [{ wrId: 2, localAddr: b.buf, length: 0, lkey: b.mr.lkey }]);
    expect(settle(a, 1).map((w) => w.status)).toEqual(["SUCCESS"]); // was REM_INV_REQ_ERR
    expect(b.ctx.pollCq(b.cq, 4).map((w) => [w.status, w.imm])).toEqual([["SUCCESS", 7]]);
    // the message went again once, for the RNR NAK (issue 27: retransmissions by cause; was not
    // counted as a retransmission at all when the RNR named the message in flight)
    const st = a.ctx.device.stats();
    expect([st["roce.retransmits"], st["roce.retransmits_rnr"], st["roce.retransmits_nak"], st["roce.retransmits_timeout"]]).toEqual([1, 1, 0, 0]);
  });

  // WAS: a lost READ response ended the READ with RETRY_EXC_ERR. The requester asks again by
  // sending the READ request again (rocev2/rx.ts requester(), goBack to msgPsn; the timer does the
  // same), at the PSN the responder has already moved past, so responder() takes it as a
  // duplicate and only ACKs it (the d < 0 branch); an ACK does not complete a READ, the timer
  // expires again, and after transportRetries the READ fails. IBA vol. 1 9.7.5.1.3 (duplicate
  // RDMA READ requests): the responder executes a duplicate READ request again and sends its
  // responses from the request's PSN. docs/nic.md says "a lost READ response makes the requester
  // ask again from the first missing one", which the code does not do either (it asks from the
  // first). Now a duplicate READ request runs again from its PSN (and the requester asks only
  // for the rest: the next describe).
  for (const lost of [0, 1, 2]) {
    it(`a READ of 3 packets whose response ${lost} is lost still completes, with every byte`, async () => {
      let responses = 0;
      const dropOne: CableFate = (from, _n, f) => {
        const p = parseFrame(frameCopy(f));
        return from === 1 && p.ok && p.frame.opcode >= OP.RC_READ_RESPONSE_FIRST && p.frame.opcode <= OP.RC_READ_RESPONSE_ONLY && responses++ === lost ? "drop" : "pass";
      };
      const { a, b, settle } = await pair(dropOne);
      const len = 3 * 4096;
      b.ctx.write(b.buf, Uint8Array.from({ length: len }, (_, i) => (i * 7) & 0xff));
      a.ctx.postSend(a.qp, [{ wrId: 3, opcode: "RDMA_READ", signaled: true, localAddr: a.buf, length: len, lkey: a.mr.lkey, remoteAddr: b.buf, rkey: b.mr.rkey }]);
      expect(settle(a, 1).map((w) => w.status)).toEqual(["SUCCESS"]); // was RETRY_EXC_ERR
      expect(a.ctx.read(a.buf, len)).toEqual(b.ctx.read(b.buf, len));
    });
  }
});

// Issue 27, point 3: after one lost READ response the requester sent the whole READ request
// again for every later response (each out of order), and the responder started over each time:
// 8 READs at 1 % loss cost 68 requests and 331 responses where 200 were needed. Now, as Linux
// rxe does, it asks once per gap, for the rest of the READ from the first missing response
// (IBA vol. 1 9.7.5.1.3: a retried READ asks only for what has not arrived); the later
// responses of the gap are dropped; the transport timer asks for the rest the same way.
describe("a READ's lost responses cost the rest of the READ once (issue 27)", () => {
  const isResponse = (op: number) => op >= OP.RC_READ_RESPONSE_FIRST && op <= OP.RC_READ_RESPONSE_ONLY;
  const MTU = 1024, N = 25;

  /** b's region read by a in one READ of N packets, through a cable that loses the READ responses and requests numbered (0-based, in the order sent) in `lost`; what was sent, and how it ended. */
  async function read(lost: { responses: number[]; requests?: number[] }) {
    const requests: RoceFrame[] = [];
    let responses = 0;
    const fate: CableFate = (from, _n, f) => {
      const p = parseFrame(frameCopy(f));
      if (!p.ok) return "pass";
      if (from === 0 && p.frame.opcode === OP.RC_READ_REQUEST) return (lost.requests ?? []).includes(requests.push(p.frame) - 1) ? "drop" : "pass";
      if (from === 1 && isResponse(p.frame.opcode)) return lost.responses.includes(responses++) ? "drop" : "pass";
      return "pass";
    };
    const { a, b, settle } = await pair(fate, { mtuBytes: MTU });
    const len = N * MTU;
    b.ctx.write(b.buf, Uint8Array.from({ length: len }, (_, i) => (i * 13 + (i >> 10)) & 0xff));
    a.ctx.postSend(a.qp, [{ wrId: 9, opcode: "RDMA_READ", signaled: true, localAddr: a.buf, length: len, lkey: a.mr.lkey, remoteAddr: b.buf, rkey: b.mr.rkey }]);
    const wcs = settle(a, 1).map((w) => w.status);
    const same = a.ctx.read(a.buf, len).every((v, i) => v === b.ctx.read(b.buf, len)[i]);
    /** what READ request `n` asked for, from the first one's PSN and address: [PSNs in, bytes in, length] */
    const asked = (n: number) => {
      const r = requests[n]!;
      return [(r.psn - requests[0]!.psn) & 0xffffff, Number(r.reth!.va - BigInt(b.buf)), r.reth!.dmaLength];
    };
    return { wcs, same, requests, asked, responses, stats: a.ctx.device.stats() };
  }

  for (const k of [0, 5, 24]) {
    // WAS (k 0 and 5): one new whole READ request per later response, the responder starting
    // over for each (k 0: 49 requests); k 24 (the last: no later response tells) waited for the
    // timer, which asked for the whole READ again: 50 responses.
    it(`response ${k} of ${N} lost: one more READ request, for the ${N - k} responses from it, and they come once`, async () => {
      const r = await read({ responses: [k] });
      expect(r.wcs).toEqual(["SUCCESS"]);
      expect(r.same).toBe(true);
      expect(r.requests.length).toBe(2);
      expect(r.asked(1)).toEqual([k, k * MTU, (N - k) * MTU]);
      expect(r.responses).toBe(N + (N - k));
      expect(r.stats["roce.retransmits"]).toBe(1);
      expect(r.stats["roce.timeouts"]).toBe(k === N - 1 ? 1 : 0); // the last: only the timer can tell
    });
  }

  // WAS: the timer asked for the whole READ again (25 more responses)
  it("the request for the rest lost too: the timer asks for the same rest again", async () => {
    const r = await read({ responses: [5], requests: [1] });
    expect(r.wcs).toEqual(["SUCCESS"]);
    expect(r.same).toBe(true);
    expect(r.requests.map((_, n) => r.asked(n))).toEqual([[0, 0, N * MTU], [5, 5 * MTU, 20 * MTU], [5, 5 * MTU, 20 * MTU]]);
    expect(r.responses).toBe(N + 20);
    expect(r.stats["roce.timeouts"]).toBe(1);
    expect(r.stats["roce.retransmits"]).toBe(2);
  });

  // a new gap after progress asks again, once, for what is left from it
  it("a response of the rest lost too: one more request, from the new gap", async () => {
    const r = await read({ responses: [5, N + 5] }); // PSN 5, then PSN 10 (the rest's sixth)
    expect(r.wcs).toEqual(["SUCCESS"]);
    expect(r.same).toBe(true);
    expect(r.requests.map((_, n) => r.asked(n))).toEqual([[0, 0, N * MTU], [5, 5 * MTU, 20 * MTU], [10, 10 * MTU, 15 * MTU]]);
    expect(r.responses).toBe(N + 20 + 15);
    expect(r.stats["roce.timeouts"]).toBe(0);
  });

  // Asking for the rest must not take anything but the responses themselves as proof that those
  // before it are in: a PSN-sequence NAK naming a PSN inside the READ (issue 26's kind of frame:
  // no responder sends one, the READ's PSNs being taken at once) sends the request from there,
  // but the responses from there are out of order: it asks again from the first missing one.
  // (Taking the NAK's PSN as the first missing one completed the READ with its first 10 KiB unread.)
  it("a NAK naming a PSN inside the READ skips none of the responses before it", async () => {
    let port = -1, first = -1, responses = 0;
    const { net, a, b, settle } = await pair((from, _n, f) => {
      const p = parseFrame(frameCopy(f));
      if (from === 0 && p.ok && p.frame.opcode === OP.RC_READ_REQUEST && first < 0) { port = f.port; first = p.frame.psn; }
      return from === 1 && p.ok && isResponse(p.frame.opcode) && responses++ < N ? "drop" : "pass"; // the first READ's all lost
    }, { mtuBytes: MTU });
    const len = N * MTU;
    b.ctx.write(b.buf, Uint8Array.from({ length: len }, (_, i) => (i * 13 + (i >> 10)) & 0xff));
    a.ctx.postSend(a.qp, [{ wrId: 9, opcode: "RDMA_READ", signaled: true, localAddr: a.buf, length: len, lkey: a.mr.lkey, remoteAddr: b.buf, rkey: b.mr.rkey }]);
    net.run(3_000_000n);
    expect(responses).toBe(N);
    const nak = buildFrame({ opcode: OP.RC_ACK, destQp: a.qp.qpn, psn: (first + 10) & 0xffffff, ipSrc: portAddress(1, port), ipDst: portAddress(0, port), aeth: { syndrome: AETH_SYNDROME.NAK | AETH_NAK.PSN_SEQ_ERR, msn: 0 } });
    if (!net.ports[0]!.stageArrival(Number(a.ctx.nowPs + 500_000n), port, nak.length, 1, 0, nak, 0, nak.length - 4, nak, nak.length - 4, 4)) throw new Error("stage full");
    net.ports[0]!.commitArrivals();
    expect(settle(a, 1).map((w) => w.status)).toEqual(["SUCCESS"]);
    expect(a.ctx.read(a.buf, len)).toEqual(b.ctx.read(b.buf, len));
    expect(responses).toBe(N + (N - 10) + N); // the rest from the NAK's PSN, then all of it
  });

  // The goal (bench/read-loss.ts measures it on its own seeds): 8 READs of 25 packets, 1 % of
  // frames lost each way, 20 seeds. Asking once per gap costs the rest of the READ from the lost
  // response: 1 + p (n + 1) / 2 = 1.13 expected for n = 25 when, as on a 1 us cable, the READ's
  // responses have all left before the request for the rest arrives (WAS: 1.35 on these seeds);
  // on a short cable the responder, starting over on that request, sends less of what the
  // requester drops: at most 1.1 (WAS: 1.22).
  it("8 READs at 1 % loss send at most 1.2 times the responses needed on a 1 us cable, 1.1 on a 100 ns one", async () => {
    const seeds = Array.from({ length: 20 }, (_, k) => 1 + k);
    for (const [latencyPs, most] of [[1_000_000n, 1.2], [100_000n, 1.1]] as const) {
      const c = await readLoss(seeds, 0.01, latencyPs);
      expect(c.good).toBe(c.reads);
      expect(c.lost).toBeGreaterThan(40); // the loss is there: about 1 % of some 5,000 frames
      expect(c.responses / c.needed).toBeLessThanOrEqual(most);
      expect(c.requests / c.reads).toBeLessThan(1.5);
    }
  });
});

// Issue 26: answers that no request asked for. IBA vol. 1 9.7.5.1.1: an ACK whose PSN lies
// outside the outstanding requests is a ghost, dropped without effect.
describe("ghost answers (issue 26)", () => {
  /** a on device 0 posts `n` one-packet WRITEs to b, which never gets them (every frame of device 0 is lost); then one forged ACK naming `psnOf(last PSN sent)` reaches a. */
  async function forged(n: number, psnOf: (lastSent: number) => number) {
    let port = -1, lastSent = -1, forgedAt = -1n;
    const { net, a, b, settle } = await pair((from, _n, f) => {
      if (from !== 0) return "pass";
      const p = parseFrame(frameCopy(f));
      if (p.ok && p.frame.opcode === OP.RC_WRITE_ONLY) { port = f.port; lastSent = p.frame.psn; }
      return "drop";
    });
    const ack = () => buildFrame({ opcode: OP.RC_ACK, destQp: a.qp.qpn, psn: psnOf(lastSent), ipSrc: portAddress(1, port), ipDst: portAddress(0, port), aeth: { syndrome: AETH_SYNDROME.ACK | AETH_SYNDROME.CREDITS_INVALID, msn: n } });
    b.ctx.write(b.buf, new Uint8Array(64).fill(0x55));
    a.ctx.write(a.buf, new Uint8Array(64).fill(0xaa));
    a.ctx.postSend(a.qp, Array.from({ length: n }, (_, k) => ({ wrId: k, opcode: "RDMA_WRITE" as const, signaled: true, localAddr: a.buf, length: 64, lkey: a.mr.lkey, remoteAddr: b.buf + 64 * k, rkey: b.mr.rkey })));
    net.run(2_000_000n); // every WRITE sent (and lost)
    expect(lastSent).toBeGreaterThanOrEqual(0);
    const bytes = ack();
    forgedAt = a.ctx.nowPs + 500_000n;
    // staged for the next window, as a frame from device 1 would be
    if (!net.ports[0]!.stageArrival(Number(forgedAt), port, bytes.length, 1, 0, bytes, 0, bytes.length - 4, bytes, bytes.length - 4, 4)) throw new Error("stage full");
    net.ports[0]!.commitArrivals();
    const wcs = settle(a, n);
    return { wcs, a, b, stats: a.ctx.device.stats() };
  }

  // WAS: requester() acknowledged every outstanding message before the PSN it named when that
  // PSN lay past the last one, before checking it was a PSN it had sent: 4 x SUCCESS, no byte
  // at the target.
  it("an ACK 2^20 PSNs past anything sent completes nothing: the WRITEs fail by retries, the ghost is counted", async () => {
    const { wcs, b, stats } = await forged(4, (last) => (last + (1 << 20)) & 0xffffff);
    expect(wcs.map((w) => w.status)).toEqual(["RETRY_EXC_ERR", "WR_FLUSH_ERR", "WR_FLUSH_ERR", "WR_FLUSH_ERR"]);
    expect(stats["roce.ghost_answers"]).toBe(1);
    expect(stats["roce.rx_answers"]).toBe(0);
    expect(b.ctx.read(b.buf, 64)).toEqual(new Uint8Array(64).fill(0x55));
  });

  it("an ACK one PSN past the last sent is a ghost too; one naming the last sent completes all four", async () => {
    const past = await forged(4, (last) => (last + 1) & 0xffffff);
    expect(past.wcs[0]!.status).toBe("RETRY_EXC_ERR");
    expect(past.stats["roce.ghost_answers"]).toBe(1);
    const last = await forged(4, (l) => l);
    expect(last.wcs.map((w) => w.status)).toEqual(["SUCCESS", "SUCCESS", "SUCCESS", "SUCCESS"]);
    expect(last.stats["roce.ghost_answers"]).toBe(0);
  });
});

// Issue 26: READ responses other than the ones the READ asked for. Found by the fuzz test
// (FUZZ_SEED=67822): the target, its responder's PSNs moved by forged requests, answered a
// one-packet READ with the FIRST response of a longer READ a forger had asked for.
describe("bad READ responses (issue 26)", () => {
  /** a READs `len` bytes of b; every frame b sends is lost, and `responses(psn of the READ request)` reach a instead. */
  async function answered(len: number, responses: (psn: number) => { opcode: number; payload: Uint8Array }[]) {
    let port = -1, psn = -1;
    const { net, a, b, settle } = await pair((from, _n, f) => {
      if (from === 1) return "drop";
      const p = parseFrame(frameCopy(f));
      if (p.ok && p.frame.opcode === OP.RC_READ_REQUEST && psn < 0) { port = f.port; psn = p.frame.psn; }
      return "pass";
    });
    b.ctx.write(b.buf, Uint8Array.from({ length: len }, (_, i) => (i * 7) & 0xff));
    a.ctx.write(a.buf, new Uint8Array(len).fill(0xaa));
    a.ctx.postSend(a.qp, [{ wrId: 9, opcode: "RDMA_READ", signaled: true, localAddr: a.buf, length: len, lkey: a.mr.lkey, remoteAddr: b.buf, rkey: b.mr.rkey }]);
    net.run(2_000_000n); // the request sent
    expect(psn).toBeGreaterThanOrEqual(0);
    const at = a.ctx.nowPs + 500_000n;
    responses(psn).forEach((r, k) => {
      const hasAeth = r.opcode !== OP.RC_READ_RESPONSE_MIDDLE;
      const bytes = buildFrame({ opcode: r.opcode, destQp: a.qp.qpn, psn: (psn + k) & 0xffffff, ipSrc: portAddress(1, port), ipDst: portAddress(0, port), payload: r.payload, ...(hasAeth ? { aeth: { syndrome: AETH_SYNDROME.ACK | AETH_SYNDROME.CREDITS_INVALID, msn: 1 } } : {}) });
      const hdrLen = 54 + (hasAeth ? 4 : 0); // Ethernet, IPv4, UDP, BTH, AETH
      if (!net.ports[0]!.stageArrival(Number(at) + 1000 * k, port, bytes.length, 1, 0, bytes, 0, hdrLen, bytes, hdrLen, bytes.length - hdrLen)) throw new Error("stage full");
    });
    net.ports[0]!.commitArrivals();
    return { wcs: settle(a, 1), got: a.ctx.read(a.buf, len), want: b.ctx.read(b.buf, len), stats: a.ctx.device.stats() };
  }

  // WAS: the FIRST was taken as the READ's one response: the READ's next expected response moved
  // past its last PSN without a completion, and the timer's request for "the rest" asked for
  // nothing: the READ never completed, and its QP sent nothing again
  it("a one-packet READ answered by a FIRST response completes BAD_RESP_ERR", async () => {
    const r = await answered(64, () => [{ opcode: OP.RC_READ_RESPONSE_FIRST, payload: new Uint8Array(4096).fill(1) }]);
    expect(r.wcs.map((w) => w.status)).toEqual(["BAD_RESP_ERR"]);
  });

  /** The three responses of a READ of `len` bytes, b's bytes in them, the LAST `short` bytes short. */
  const threeResponses = (len: number, short: number) => {
    const data = Uint8Array.from({ length: len }, (_, i) => (i * 7) & 0xff);
    return [
      { opcode: OP.RC_READ_RESPONSE_FIRST, payload: data.slice(0, 4096) },
      { opcode: OP.RC_READ_RESPONSE_MIDDLE, payload: data.slice(4096, 8192) },
      { opcode: OP.RC_READ_RESPONSE_LAST, payload: data.slice(8192, len - short) },
    ];
  };

  // WAS: SUCCESS, with the READ's last 100 bytes never written (a short FIRST or MIDDLE is
  // malformed and dropped before it reaches the QP: only a LAST can be short)
  it("a READ of 3 packets whose LAST is 100 bytes short completes BAD_RESP_ERR, not SUCCESS with a hole", async () => {
    const len = 3 * 4096 - 100;
    const r = await answered(len, () => threeResponses(len, 100));
    expect(r.wcs.map((w) => w.status)).toEqual(["BAD_RESP_ERR"]);
  });

  it("the same three responses with the whole LAST complete SUCCESS with every byte (the check refuses only bad ones)", async () => {
    const len = 3 * 4096 - 100;
    const r = await answered(len, () => threeResponses(len, 0));
    expect(r.wcs.map((w) => w.status)).toEqual(["SUCCESS"]);
    expect(r.got).toEqual(r.want);
  });

  it("a READ of 2 packets answered ONLY, then a LAST too long, completes BAD_RESP_ERR at the first", async () => {
    const r = await answered(4096 + 10, () => [{ opcode: OP.RC_READ_RESPONSE_ONLY, payload: new Uint8Array(4096) }, { opcode: OP.RC_READ_RESPONSE_LAST, payload: new Uint8Array(20) }]);
    expect(r.wcs.map((w) => w.status)).toEqual(["BAD_RESP_ERR"]);
    expect(r.got).toEqual(new Uint8Array(4096 + 10).fill(0xaa)); // nothing of a bad response lands
  });
});
