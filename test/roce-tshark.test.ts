import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { OP, OPCODES, AETH_SYNDROME, AETH_NAK, IPV4_ECN } from "../host/generated/headers.js";
import { parseFrame, type RoceFrame } from "../host/wire/rocev2.js";
import { PcapngWriter, type Direction } from "../host/wire/pcapng.js";
import type { Context, Wc } from "../host/verbs.js";
import type { TxFrameRef } from "../host/ports.js";
import { readPcapng } from "./helpers/pcapng-read.js";
import { cabled, frameCopy, type Fate } from "./helpers/cable.js";
import { hasTshark, readCapture, tsharkPackets, removeCaptures, independentIcrc, colonHex, field, expectHeaders } from "./helpers/tshark.js";

// Two devices joined by cables run every verb over RoCEv2 (WRITE, WRITE with immediate, SEND,
// SEND with immediate, READ; from 0 bytes through sizes that are not multiples of 4 or of the
// MTU), then lose frames on purpose (a data packet: a PSN-sequence NAK and go-back-N; an ACK: a
// timeout, a retransmission and a duplicate's ACK), meet a receiver not ready (RNR NAK) and a
// wrong rkey (remote access NAK). Every frame either device sends is captured twice, where it
// leaves (dev<d>.port<p>.out) and where it arrives (dev<d>.port<p>.in; a dropped frame only
// leaves), into a pcapng read by Wireshark's own InfiniBand dissector (tshark; .ci/run installs
// it): each frame must reach it through UDP 4791, none malformed or flagged, IPv4 checksums
// good, and every BTH, RETH, AETH and ImmDt field must be what host/wire/rocev2.ts reads from
// the same bytes. Apart from Wireshark, the frames are checked against the work requests that
// made them, and every ICRC in the file is recomputed with zlib's CRC-32.

if (!hasTshark) console.warn("test/roce-tshark: tshark is not installed here (apt-get install tshark): the Wireshark checks are skipped");

const MTU = 4096;
const SIZES = [0, 1, 3, 4, 5, MTU - 1, MTU, MTU + 1, 2 * MTU + 3];
const TIMEOUT_PS = 20_000_000;
const pattern = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 29 + seed * 7 + (i >> 8)) & 0xff);
const packetsOf = (len: number) => Math.max(1, Math.ceil(len / MTU));

type Verb = "RDMA_WRITE" | "RDMA_WRITE_WITH_IMM" | "SEND" | "SEND_WITH_IMM" | "RDMA_READ";
/** One message: `from` (0 or 1) posts it on pair `pair`; bytes from its buffer at `src` to the other's at `dst` (READ: the other way). */
interface Msg { pair: number; from: number; verb: Verb; len: number; src: number; dst: number; wrId: number; imm?: number; rkeyXor?: number; firstPsn: number }
/** A frame as one device sent it, and what the cable did with it. */
interface Sent { from: number; port: number; sentPs: bigint; arrivalPs: bigint; bytes: Uint8Array; fate: Fate }
/** A record of the capture: frame `sent`, seen leaving or arriving. */
interface Rec { sent: Sent; dir: Direction; iface: string; timePs: bigint }

const BUF = 1 << 18; // each device's buffer: every message's source or destination gets its own slice

/** Runs the traffic and returns what it sent, the messages, the completions and the two contexts. */
async function traffic() {
  const sent: Sent[] = [];
  // the frames the cable loses, picked by what they are once the QPs exist
  const loss = { writeQp: -1, ackQp: -1, droppedMiddle: false, droppedAck: false, rnrSeen: false };
  const fate = (from: number, _n: number, f: TxFrameRef): Fate => {
    const p = parseFrame(frameCopy(f));
    if (!p.ok) return "pass";
    const fr = p.frame;
    if (from === 0 && fr.destQp === loss.writeQp && fr.opcode === OP.RC_WRITE_MIDDLE && !loss.droppedMiddle) { loss.droppedMiddle = true; return "drop"; }
    // the ACK of the loss pair's second message, its one packet at PSN 3 (the first took PSNs 0-2)
    if (from === 1 && fr.destQp === loss.ackQp && fr.opcode === OP.RC_ACK && fr.psn === 3 && (fr.aeth!.syndrome & AETH_SYNDROME.TYPE_MASK) === AETH_SYNDROME.ACK && !loss.droppedAck) { loss.droppedAck = true; return "drop"; }
    if (from === 1 && fr.destQp === loss.ackQp && fr.opcode === OP.RC_ACK && (fr.aeth!.syndrome & AETH_SYNDROME.TYPE_MASK) === AETH_SYNDROME.RNR_NAK) loss.rnrSeen = true;
    return "pass";
  };
  const net = await cabled({ transportTimeoutPs: TIMEOUT_PS, rnrTimerPs: 5_000_000 }, 1_000_000n, fate, {
    tap: (from, f, what, arrivalPs) => sent.push({ from, port: f.port, sentPs: BigInt(f.timePs), arrivalPs, bytes: frameCopy(f), fate: what }),
  });
  const ctxs = net.ctxs as [Context, Context];
  const dev = ctxs.map((ctx) => {
    const pd = ctx.allocPd();
    const cq = ctx.createCq(512);
    const buf = ctx.allocHbm(BUF);
    const mr = ctx.regMr(pd, buf, BUF, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
    return { ctx, pd, cq, buf, mr, top: 0, qps: [] as ReturnType<Context["createQp"]>[] };
  });
  // QPs 0 and 1 stay unused: InfiniBand reserves them (QP0 the subnet manager's, QP1 the general
  // services', which carry MADs; in RoCEv2 QP1 carries the connection manager's), and Wireshark
  // reads the payload of an ONLY packet to either as a MAD. Five QP pairs: pair k is QP k + 2 on
  // both devices.
  for (const d of dev) for (let k = 0; k < 2; k++) d.ctx.createQp(d.pd, { sendCq: d.cq, recvCq: d.cq, maxSendWr: 1, maxRecvWr: 1 });
  const PAIRS = 5;
  for (let k = 0; k < PAIRS; k++) for (const d of dev) d.qps.push(d.ctx.createQp(d.pd, { sendCq: d.cq, recvCq: d.cq, maxSendWr: 32, maxRecvWr: 32 }));
  for (let k = 0; k < PAIRS; k++) for (let d = 0; d < 2; d++) {
    const x = dev[d]!, y = dev[1 - d]!;
    x.ctx.modifyQp(x.qps[k]!, { state: "INIT" });
    x.ctx.modifyQp(x.qps[k]!, { state: "RTR", destQpNum: y.qps[k]!.qpn, destDevice: 1 - d });
    x.ctx.modifyQp(x.qps[k]!, { state: "RTS" });
  }
  loss.writeQp = dev[1]!.qps[3]!.qpn;
  loss.ackQp = dev[0]!.qps[3]!.qpn;

  const msgs: Msg[] = [];
  const nextPsn = new Map<string, number>(); // per requesting QP
  const slice = (d: number, len: number) => { const at = dev[d]!.top; dev[d]!.top += Math.max(len, 1) + 61; return at; };
  const add = (pair: number, from: number, verb: Verb, len: number, extra: Partial<Msg> = {}) => {
    const key = `${from}.${pair}`;
    const firstPsn = nextPsn.get(key) ?? 0;
    nextPsn.set(key, firstPsn + packetsOf(len));
    const m: Msg = { pair, from, verb, len, src: slice(verb === "RDMA_READ" ? 1 - from : from, len), dst: slice(verb === "RDMA_READ" ? from : 1 - from, len), wrId: 1000 + msgs.length, firstPsn, ...extra };
    if (verb.endsWith("_IMM")) m.imm = (0xa5000000 + msgs.length * 0x10203) >>> 0;
    msgs.push(m);
  };
  for (const len of SIZES) add(0, 0, "RDMA_WRITE", len);
  for (const len of SIZES) add(0, 1, "RDMA_READ", len);
  for (const len of SIZES) add(1, 0, "RDMA_WRITE_WITH_IMM", len);
  for (const len of SIZES) add(1, 1, "SEND", len);
  for (const len of SIZES) add(2, 0, "SEND_WITH_IMM", len);
  for (const len of SIZES) add(2, 0, "RDMA_READ", len);
  // the loss pair: a 3-packet WRITE loses its middle packet, a WRITE loses its ACK, a SEND finds no receive
  add(3, 0, "RDMA_WRITE", 2 * MTU + 5);
  add(3, 0, "RDMA_WRITE", 100);
  add(3, 0, "SEND", 100);
  // a wrong rkey: the remote access NAK
  add(4, 0, "RDMA_WRITE", 64, { rkeyXor: 0x100 });

  for (const m of msgs) {
    const owner = m.verb === "RDMA_READ" ? dev[1 - m.from]! : dev[m.from]!;
    owner.ctx.write(owner.buf + m.src, pattern(m.len, m.wrId));
  }
  // receives first (the SEND of the loss pair excepted), then the requests
  const lateRecv: (() => void)[] = [];
  for (const m of msgs) {
    if (m.verb === "RDMA_WRITE" || m.verb === "RDMA_READ") continue;
    const r = dev[1 - m.from]!;
    const post = () => r.ctx.postRecv(r.qps[m.pair]!, [{ wrId: m.wrId + 500, localAddr: r.buf + m.dst, length: m.verb === "RDMA_WRITE_WITH_IMM" ? 0 : m.len, lkey: r.mr.lkey }]);
    if (m.pair === 3) lateRecv.push(post); else post();
  }
  for (const m of msgs) {
    const q = dev[m.from]!, r = dev[1 - m.from]!;
    const read = m.verb === "RDMA_READ";
    q.ctx.postSend(q.qps[m.pair]!, [{
      wrId: m.wrId, opcode: m.verb, signaled: true, localAddr: q.buf + (read ? m.dst : m.src), length: m.len, lkey: q.mr.lkey,
      remoteAddr: r.buf + (read ? m.src : m.dst), rkey: (r.mr.rkey ^ (m.rkeyXor ?? 0)) >>> 0, imm: m.imm,
    }]);
  }
  const wcs: Wc[][] = [[], []];
  const want = msgs.length + msgs.filter((m) => m.verb !== "RDMA_WRITE" && m.verb !== "RDMA_READ").length;
  while (wcs[0]!.length + wcs[1]!.length < want && ctxs[0].nowPs < 2_000_000_000n) {
    net.run(ctxs[0].nowPs + 1_000_000n);
    if (loss.rnrSeen) lateRecv.splice(0).forEach((post) => post());
    for (let d = 0; d < 2; d++) wcs[d]!.push(...dev[d]!.ctx.pollCq(dev[d]!.cq, 64));
  }
  net.run(ctxs[0].nowPs + 4n * BigInt(TIMEOUT_PS)); // anything more would show now
  for (let d = 0; d < 2; d++) wcs[d]!.push(...dev[d]!.ctx.pollCq(dev[d]!.cq, 64));
  return { sent, msgs, wcs, dev, loss };
}

const ipOf = (device: number, port: number) => ((10 << 24) | (port << 16) | device) >>> 0;

describe("RoCEv2 between two devices, captured and read by Wireshark's InfiniBand dissector", () => {
  let dir = "";
  let file = "";
  let run: Awaited<ReturnType<typeof traffic>>;
  let recs: Rec[] = [];
  let parsed: RoceFrame[] = [];
  let packets: Map<string, string[]>[] = [];

  beforeAll(async () => {
    run = await traffic();
    for (const s of run.sent) {
      recs.push({ sent: s, dir: "out", iface: `dev${s.from}.port${s.port}.out`, timePs: s.sentPs });
      if (s.fate !== "drop") recs.push({ sent: s, dir: "in", iface: `dev${1 - s.from}.port${s.port}.in`, timePs: s.arrivalPs });
    }
    recs = recs.map((r, k) => ({ r, k })).sort((a, b) => (a.r.timePs < b.r.timePs ? -1 : a.r.timePs > b.r.timePs ? 1 : a.k - b.k)).map((x) => x.r);
    parsed = recs.map((r) => {
      const p = parseFrame(r.sent.bytes);
      if (!p.ok) throw new Error(`a frame the device sent does not parse: ${p.error}`);
      return p.frame;
    });
    dir = mkdtempSync(join(tmpdir(), "menic-roce-tshark-"));
    file = join(dir, "roce.pcapng");
    const chunks: Uint8Array[] = [];
    const w = new PcapngWriter((c) => chunks.push(c), "menic roce-tshark test");
    const ifaces = new Map([...new Set(recs.map((r) => r.iface))].sort().map((name) => [name, w.addInterface(name, { speedBps: 800_000_000_000n })]));
    for (const r of recs) w.writePacket(ifaces.get(r.iface)!, r.timePs, r.sent.bytes, r.sent.bytes.length, r.dir);
    w.flush();
    writeFileSync(file, Buffer.concat(chunks));
    if (hasTshark) packets = tsharkPackets(file);
  });
  afterAll(() => removeCaptures(dir));

  it("the traffic did what was posted: every request and receive completes once, the bytes land", () => {
    const { msgs, wcs, dev } = run;
    const statusOf = (m: Msg) => (m.rkeyXor ? "REM_ACCESS_ERR" : "SUCCESS");
    const byId = (d: number) => new Map(wcs[d]!.map((w) => [Number(w.wrId), w]));
    expect(wcs.map((l) => l.length).reduce((a, b) => a + b)).toBe(new Set([...wcs[0]!, ...wcs[1]!].map((w) => `${w.qpNum}.${w.wrId}`)).size); // once each
    for (const m of msgs) {
      const at = `${m.verb} of ${m.len} B on pair ${m.pair}`;
      const wc = byId(m.from).get(m.wrId);
      expect([wc?.status, wc?.byteLen], at).toEqual([statusOf(m), m.rkeyXor ? 0 : m.len]);
      if (m.verb === "SEND" || m.verb === "SEND_WITH_IMM" || m.verb === "RDMA_WRITE_WITH_IMM") {
        const rc = byId(1 - m.from).get(m.wrId + 500);
        expect([rc?.status, rc?.byteLen, rc?.imm], at).toEqual(["SUCCESS", m.len, m.imm]);
      }
      if (m.rkeyXor) continue;
      const to = dev[m.verb === "RDMA_READ" ? m.from : 1 - m.from]!;
      expect(to.ctx.read(to.buf + m.dst, m.len), at).toEqual(pattern(m.len, m.wrId));
    }
    expect(wcs[0]!.length + wcs[1]!.length).toBe(msgs.length + msgs.filter((m) => m.verb !== "RDMA_WRITE" && m.verb !== "RDMA_READ").length);
    expect(run.loss).toEqual({ writeQp: run.loss.writeQp, ackQp: run.loss.ackQp, droppedMiddle: true, droppedAck: true, rnrSeen: true });
  });

  it("holds every RC opcode, ACK, the three kinds of NAK, retransmissions and the dropped frames", () => {
    const ops = new Set(parsed.map((f) => f.opcode));
    for (const op of OPCODES.keys()) if (op !== OP.CNP) expect(ops.has(op), OPCODES.get(op)!.name).toBe(true);
    const syndromes = new Set(parsed.filter((f) => f.aeth && f.opcode === OP.RC_ACK).map((f) => f.aeth!.syndrome));
    expect([...syndromes].sort((a, b) => a - b)).toEqual([
      AETH_SYNDROME.ACK | AETH_SYNDROME.CREDITS_INVALID, AETH_SYNDROME.RNR_NAK,
      AETH_SYNDROME.NAK | AETH_NAK.PSN_SEQ_ERR, AETH_SYNDROME.NAK | AETH_NAK.REMOTE_ACCESS_ERROR,
    ].sort((a, b) => a - b));
    // go-back-N: the three messages leave back to back (the queue does not wait for each ACK),
    // so the lost PSN 1 makes the requester send PSNs 1-4 again; the RNR NAK of the SEND (PSN 4)
    // acknowledges PSN 3 (whose ACK is lost) and the SEND goes a third time after the RNR timer
    const lossPair = parsed.filter((f, k) => recs[k]!.dir === "out" && recs[k]!.sent.from === 0 && f.destQp === run.loss.writeQp);
    const times = (psn: number) => lossPair.filter((f) => f.psn === psn).length;
    expect([0, 1, 2, 3, 4].map(times)).toEqual([1, 2, 2, 2, 3]);
    expect(run.sent.filter((s) => s.fate === "drop").length).toBe(2);
    expect(recs.length).toBe(2 * run.sent.length - 2);
  });

  it("the frames say what was posted: opcodes, PSNs, RETH, ImmDt, payload and pad of every message", () => {
    const firstSeen = new Map<string, RoceFrame>(); // (sender, destQp, psn, request or answer) -> the first frame sent
    for (const s of run.sent) {
      const f = (parseFrame(s.bytes) as { frame: RoceFrame }).frame;
      const key = `${s.from}.${f.destQp}.${f.psn}.${f.opcode <= OP.RC_READ_REQUEST ? "req" : "ans"}`;
      if (!firstSeen.has(key)) firstSeen.set(key, f);
    }
    for (const m of run.msgs) {
      if (m.rkeyXor) continue;
      const at = `${m.verb} of ${m.len} B on pair ${m.pair}`;
      const q = run.dev[m.from]!, r = run.dev[1 - m.from]!;
      const n = packetsOf(m.len);
      const read = m.verb === "RDMA_READ";
      const req = (k: number) => firstSeen.get(`${m.from}.${r.qps[m.pair]!.qpn}.${m.firstPsn + k}.req`);
      const frames = read ? Array.from({ length: n }, (_, k) => firstSeen.get(`${1 - m.from}.${q.qps[m.pair]!.qpn}.${m.firstPsn + k}.ans`)) : Array.from({ length: n }, (_, k) => req(k));
      expect(frames.every((f) => f !== undefined), at).toBe(true);
      const kind = read ? "RC_READ_RESPONSE" : m.verb.startsWith("SEND") ? "RC_SEND" : "RC_WRITE";
      const imm = m.imm !== undefined ? "_IMM" : "";
      const names = n === 1 ? [`${kind}_ONLY${imm}`] : [`${kind}_FIRST`, ...Array(n - 2).fill(`${kind}_MIDDLE`), `${kind}_LAST${imm}`];
      expect(frames.map((f) => OPCODES.get(f!.opcode)!.name), at).toEqual(names);
      expect(frames.map((f) => f!.payload.length), at).toEqual(Array.from({ length: n }, (_, k) => Math.min(MTU, m.len - k * MTU)).map((x) => Math.max(x, 0)));
      expect(Buffer.concat(frames.map((f) => f!.payload)).equals(Buffer.from(pattern(m.len, m.wrId))), at).toBe(true);
      expect(frames.map((f) => f!.ackReq), at).toEqual(read ? Array(n).fill(false) : [...Array(n - 1).fill(false), true]);
      const reth = read ? req(0)?.reth : frames[0]!.reth;
      if (m.verb !== "SEND" && m.verb !== "SEND_WITH_IMM") expect(reth, at).toEqual({ va: BigInt(r.buf + (read ? m.src : m.dst)), rkey: r.mr.rkey, dmaLength: m.len });
      if (imm) expect(frames[n - 1]!.immDt, at).toBe(m.imm);
      for (const f of frames) expect([f!.ecn, f!.ttl, f!.pKey, f!.udpSrcPort], at).toEqual([IPV4_ECN.ECT0, 64, 0xffff, 0xc000 | (read ? r : q).qps[m.pair]!.qpn]);
    }
    // addresses: port p of device d is 10.p.0.d, its MAC 02:00 and the address (docs/nic.md)
    for (const s of run.sent) {
      const f = (parseFrame(s.bytes) as { frame: RoceFrame }).frame;
      const src = ipOf(s.from, s.port), dst = ipOf(1 - s.from, s.port);
      expect([f.ipSrc, f.ipDst, f.ethSrc, f.ethDst]).toEqual([src, dst, 0x0200_0000_0000 + src, 0x0200_0000_0000 + dst]);
    }
  });

  it("every ICRC in the file is right, recomputed with zlib's CRC-32", () => {
    const f = readPcapng(new Uint8Array(readFileSync(file)));
    expect(f.packets.length).toBe(recs.length);
    expect(f.interfaces.map((i) => i.name)).toEqual([...new Set(recs.map((r) => r.iface))].sort());
    f.packets.forEach((pk, k) => {
      expect(Buffer.from(pk.data).equals(recs[k]!.sent.bytes), `packet ${k + 1}`).toBe(true);
      expect(pk.time).toBe(recs[k]!.timePs / 1000n);
      const onWire = new DataView(pk.data.buffer, pk.data.byteOffset).getUint32(pk.data.length - 4, true);
      expect(independentIcrc(pk.data), `packet ${k + 1}`).toBe(onWire);
    });
  });

  it.skipIf(!hasTshark)("Wireshark finds no malformed frame and no expert info; IPv4 checksums are good", () => {
    const flagged = readCapture(file, ["-Y", "_ws.malformed || _ws.expert", "-T", "fields", "-e", "frame.number"]);
    expect(flagged.trim()).toBe("");
    expect(packets.length).toBe(recs.length);
    packets.forEach((p, k) => expect(p.get("ip.checksum.status"), `packet ${k + 1}`).toEqual(["1"]));
  });

  it.skipIf(!hasTshark)("every frame goes from UDP 4791 to the InfiniBand dissector, at its capture point, direction and time", () => {
    packets.forEach((p, k) => {
      const r = recs[k]!, f = parsed[k]!;
      const at = `packet ${k + 1} (${OPCODES.get(f.opcode)!.name})`;
      const bodyBytes = r.sent.bytes.length - 14 - 20 - 8 - 12 - OPCODES.get(f.opcode)!.extBytes - 4;
      expect(p.get("frame.protocols"), at).toEqual([`eth:ethertype:ip:udp:infiniband${bodyBytes > 0 ? ":data" : ""}`]);
      expect(p.get("frame.interface_name"), at).toEqual([r.iface]);
      expect(p.get("frame.packet_flags_direction"), at).toEqual([r.dir === "in" ? "0x00000001" : "0x00000002"]);
      expect(p.get("frame.time_epoch"), at).toEqual([`${r.timePs / 10n ** 12n}.${((r.timePs % 10n ** 12n) / 1000n).toString().padStart(9, "0")}`]);
      expect(p.get("frame.len"), at).toEqual([String(r.sent.bytes.length)]);
      expect(p.get("udp.dstport"), at).toEqual(["4791"]);
    });
  });

  it.skipIf(!hasTshark)("the dissected BTH, RETH, AETH, ImmDt, payload and ICRC are what rocev2.ts reads from the same bytes", () => {
    packets.forEach((p, k) => {
      const f = parsed[k]!, bytes = recs[k]!.sent.bytes;
      const info = OPCODES.get(f.opcode)!;
      const at = `packet ${k + 1} (${info.name})`;
      const one = (name: string) => field(p, name, at);
      expect(one("ip.src"), at).toBe([f.ipSrc >>> 24, (f.ipSrc >>> 16) & 255, (f.ipSrc >>> 8) & 255, f.ipSrc & 255].join("."));
      expect(one("ip.dst"), at).toBe([f.ipDst >>> 24, (f.ipDst >>> 16) & 255, (f.ipDst >>> 8) & 255, f.ipDst & 255].join("."));
      expect([Number(one("ip.dsfield.ecn")), Number(one("ip.ttl")), Number(one("udp.srcport"))], at).toEqual([f.ecn, f.ttl, f.udpSrcPort]);
      expectHeaders(p, f, at);
      const body = bytes.subarray(14 + 20 + 8 + 12 + info.extBytes, bytes.length - 4); // payload and pad
      if (body.length) expect(one("data.data"), at).toBe(colonHex(body));
      else expect(p.has("data.data"), at).toBe(false);
      // Wireshark reads the ICRC as a big-endian number; on the wire it is least significant byte first
      const icrc = new DataView(bytes.buffer, bytes.byteOffset).getUint32(bytes.length - 4, false);
      expect(Number(one("infiniband.invariant.crc")), at).toBe(icrc);
    });
  });
});
