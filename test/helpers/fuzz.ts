// What the bad-input fuzz tests of both transports share: staging a record whose descriptor lies,
// the IPv4 fields a mutation must keep agreeing, the mutations of recorded frames (each test its
// own weights and fields), and the guard over memory no frame may write.
import { xorshift32 } from "./xorshift.js";
import { ipv4Checksum } from "../../host/wire/rocev2.js";
import { PKT, WQE, CQE } from "../../host/generated/layouts.js";
import type { Context, Qp, Mr, Cq, Wc, SendWr } from "../../host/verbs.js";
import type { DevicePorts } from "../../host/ports.js";

/** A record as the device will read it: its descriptor and its bytes (headers, then the body). */
export interface Arrival { timePs: number; port: number; wire: number; hdrLen: number; bytes: Uint8Array }

/** What a record's descriptor says apart from what stageArrival writes (records only a broken host would stage). */
export type Lie = { hdrLen: number } | { bodyLen: number } | { bodyOff: number };

/** An arrival as the device reads it: the lengths its descriptor gives and the bytes it finds. */
export interface Seen { port: number; wire: number; hdrLen: number; bodyLen: number; bytes: Uint8Array }

/**
 * Stages arrival `a` at `ports`, then makes its descriptor lie as `lie` says, by writing the
 * staged record in place: what only a broken host could stage. Returns the record as the device
 * will read it (`full`: bodies travel; `rxBodyBytes`: the body area, `frameMax`: the largest frame).
 */
export function stageLie(ports: DevicePorts, a: Arrival, lie: Lie | undefined, full: boolean, rxBodyBytes: number, frameMax: number): Seen {
  const body = a.bytes.length - a.hdrLen;
  if (!ports.stageArrival(a.timePs, a.port, a.wire, 0, 0, a.bytes, 0, a.hdrLen, a.bytes, a.hdrLen, body)) throw new Error("the stage is full");
  if (!lie) return { ...a, bodyLen: body };
  const core = ports.device.core;
  const slot = core.rxStage(ports.device.handle) + (Number(ports.device.config.get("rxRingEntries")) - ports.stageRoom.frames - 1) * PKT.SIZE;
  const v = new DataView(core.memory.buffer);
  if ("hdrLen" in lie) {
    v.setUint16(slot + PKT.hdr_len, lie.hdrLen, true);
    return { ...a, hdrLen: lie.hdrLen, bodyLen: body };
  }
  if (!full) return { ...a, bodyLen: 0 }; // no body: what the descriptor says of it is not read
  if ("bodyLen" in lie) {
    v.setUint32(slot + PKT.body_len, lie.bodyLen, true);
    // within the body area, the device copies bodyLen bytes from the stage: what they are does not matter, the length is wrong
    return { ...a, bodyLen: lie.bodyLen, bytes: new Uint8Array(a.hdrLen + Math.min(lie.bodyLen, frameMax)) };
  }
  // a body said to lie beyond the stage: the device takes zeros in its place
  v.setUint32(slot + PKT.body_off, lie.bodyOff, true);
  const seen = a.bytes.slice();
  if (lie.bodyOff + body > rxBodyBytes) seen.fill(0, a.hdrLen);
  return { ...a, bytes: seen, bodyLen: body };
}

/** IPv4 total length and UDP length made to agree with the frame's length (and the IPv4 checksum with them). */
export function fixLengths(b: Uint8Array): void {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (b.length >= 18) v.setUint16(16, (b.length - 14) & 0xffff);
  if (b.length >= 40) v.setUint16(38, (b.length - 34) & 0xffff);
  fixIpv4(b);
}

/** The IPv4 header checksum written again, for a frame long enough to hold the header. */
export function fixIpv4(b: Uint8Array): void {
  if (b.length < 34) return;
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  v.setUint16(24, 0);
  v.setUint16(24, ipv4Checksum(b, 14, 20));
}

/**
 * Fills every byte of `spaces` ([DMA base, bytes]: a device's HBM, host memory, SRAM) that no
 * frame may write with a pattern, and returns a check that says where one changed. `writable`
 * lists [DMA address, bytes].
 */
export function guard(ctx: Context, spaces: [number, number][], writable: [number, number][], seed: number) {
  const next = xorshift32(seed);
  const kept = spaces.map(([base, len]) => {
    const mask = new Uint8Array(len).fill(1);
    for (const [at, n] of writable) if (at >= base && at < base + len) mask.fill(0, at - base, Math.min(len, at - base + n));
    const img = ctx.read(base, len);
    for (let i = 0; i < len; i++) if (mask[i]) img[i] = next() & 0xff;
    ctx.write(base, img);
    return { base, len, mask, img };
  });
  return () => {
    const changed: string[] = [];
    for (const { base, len, mask, img } of kept) {
      const now = ctx.read(base, len);
      for (let i = 0; i < len && changed.length < 8; i++) if (mask[i] && now[i] !== img[i]) changed.push(`0x${(base + i).toString(16)}`);
    }
    return changed;
  };
}

/** One device's side of the fuzz tests' traffic: its PD, CQ, regions, QPs, and the work requests it has outstanding. */
export interface End {
  ctx: Context; cq: Cq; data: Mr; recv: Mr; host: Mr; qps: Qp[]; idle: Qp;
  /** work request id -> [QP number, "send" | "recv", its opcode], until it completes */
  open: Map<bigint, [number, "send" | "recv", string]>;
  done: Set<bigint>;
}

/**
 * The objects of a fuzz test on cabled devices P (the peer, 0) and T (the target, 1): on each a
 * PD, a CQ, a data region (remote reads and writes), a receive region (local writes), a
 * host-memory region; four QP pairs with traffic and one idle pair. On the target also: a QP
 * left in INIT, a QP connected to itself (loopback), and three regions no frame may change: one
 * in another PD, one without remote write, one deregistered. Then the bookkeeping of work
 * requests: every one gets an id of its own and must complete exactly once (`poll` throws at a
 * completion for one not outstanding); `runFor` runs both devices `windows` windows of
 * `latencyPs` on, polling after each.
 */
export function fuzzObjects(P: Context, T: Context, run: (untilPs: bigint) => void, latencyPs: bigint) {
  const ends = [P, T].map((ctx): End => {
    const pd = ctx.allocPd();
    const cq = ctx.createCq(1024);
    const data = ctx.regMr(pd, ctx.allocHbm(65536), 65536, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
    const recv = ctx.regMr(pd, ctx.allocHbm(32768), 32768, ["LOCAL_WRITE"]);
    const host = ctx.regMr(pd, ctx.allocHostMemory(16384), 16384, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
    const mk = () => ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 16, maxRecvWr: 32 });
    const qps = [mk(), mk(), mk(), mk()];
    return { ctx, cq, data, recv, host, qps, idle: mk(), open: new Map(), done: new Set() };
  });
  const [p, t] = ends as [End, End];
  const pd2 = T.allocPd();
  const tpd = t.data.pd;
  const decoys = [
    T.regMr(pd2, T.allocHbm(8192), 8192, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]),
    T.regMr(tpd, T.allocHbm(8192), 8192, ["REMOTE_READ"]),
    T.regMr(tpd, T.allocHbm(8192), 8192, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]),
  ];
  T.deregMr(decoys[2]!);
  const initQp = T.createQp(tpd, { sendCq: t.cq, recvCq: t.cq, maxSendWr: 4, maxRecvWr: 4 });
  T.modifyQp(initQp, { state: "INIT" });
  const loopQp = T.createQp(tpd, { sendCq: t.cq, recvCq: t.cq, maxSendWr: 4, maxRecvWr: 4 });
  for (const state of ["INIT", "RTR", "RTS"] as const) T.modifyQp(loopQp, { state, destQpNum: loopQp.qpn });

  const pairs = () => [...p.qps.map((q, i) => [q, t.qps[i]!] as const), [p.idle, t.idle] as const];
  const connect = () => {
    for (const [a, b] of pairs()) for (const state of ["INIT", "RTR", "RTS"] as const) {
      P.modifyQp(a, { state, destQpNum: b.qpn, destDevice: 1 });
      T.modifyQp(b, { state, destQpNum: a.qpn, destDevice: 0 });
    }
  };
  connect();

  let wrIds = 1n;
  const post = (e: End, qp: Qp, wr: Omit<SendWr, "wrId">) => {
    const wrId = wrIds++;
    e.open.set(wrId, [qp.qpn, "send", wr.opcode]);
    e.ctx.postSend(qp, [{ ...wr, wrId, signaled: true } as SendWr]);
    return wrId;
  };
  const postRecv = (e: End, qp: Qp, at: number, length: number, lkey = e.recv.lkey) => {
    const wrId = wrIds++;
    e.open.set(wrId, [qp.qpn, "recv", "RECV"]);
    e.ctx.postRecv(qp, [{ wrId, localAddr: e.recv.addr + at, length, lkey }]);
  };
  const completions: Wc[] = [];
  const poll = () => {
    for (const e of ends) for (const wc of e.ctx.pollCq(e.cq, 1024)) {
      completions.push(wc);
      const o = e.open.get(wc.wrId);
      if (!o || e.done.has(wc.wrId)) throw new Error(`device ${e === p ? 0 : 1}: a completion for work request ${wc.wrId} on QP ${wc.qpNum}, which is ${e.done.has(wc.wrId) ? "already complete" : "not outstanding"}`);
      const asPosted = o[1] === "recv" ? wc.opcode === "RECV" || wc.opcode === "RDMA_WRITE_WITH_IMM" : wc.opcode === o[2];
      if (o[0] !== wc.qpNum || !asPosted) throw new Error(`work request ${wc.wrId} (${o[2]} on QP ${o[0]}) completed as ${wc.opcode} on QP ${wc.qpNum}`);
      e.open.delete(wc.wrId);
      e.done.add(wc.wrId);
    }
  };
  /** Runs both devices `windows` windows on, polling after each. */
  const runFor = (windows: number) => {
    for (let k = 0; k < windows; k++) {
      run(T.nowPs + latencyPs);
      poll();
    }
  };
  const sendsOpen = () => ends.some((e) => [...e.open.values()].some(([, q]) => q === "send"));
  return { p, t, ends, decoys, initQp, loopQp, pairs, connect, post, postRecv, completions, poll, runFor, sendsOpen };
}

/** Where the frames of a device may write: its regions that grant a write (full mode: in timing mode no byte lands), its CQ ring, its QPs' rings. */
export function writableOf(e: End, qps: Qp[], timing = false): [number, number][] {
  return [
    ...(timing ? [] : [[e.data.addr, e.data.length], [e.recv.addr, e.recv.length], [e.host.addr, e.host.length]] as [number, number][]),
    [e.cq.ring, e.cq.depth * CQE.SIZE],
    ...qps.flatMap((q): [number, number][] => [[q.sqRing, q.sqDepth * WQE.SIZE], [q.rqRing, q.rqDepth * WQE.SIZE]]),
  ];
}

/** A header field a mutation may change: its offset and bytes, and values that hurt (without them, its bits are flipped or replaced). */
export interface Field { at: number; n: number; v?: () => number | bigint }

/**
 * How a fuzz test mutates a recorded frame: its random stream, and what differs between the
 * transports. `cuts` are the upper bounds of the test's draw k (0..99) for each kind, in order:
 * replayed as it was, a field changed, a header bit flipped, a body bit flipped, truncated, the
 * record's length lying, random bytes, an empty record, longer than the largest frame; above
 * the last: the descriptor lying (one of `lies`). A changed field's bits are flipped when the
 * draw of 10 is below `fieldModes[0]`, replaced by random bytes below `fieldModes[1]`, else given
 * one of its values.
 */
export interface Mutation {
  next: () => number;
  cuts: readonly [number, number, number, number, number, number, number, number, number];
  fieldModes: readonly [number, number];
  fields: (b: Uint8Array, hdrLen: number) => Field[];
  /** the transport's trailer (RoCEv2's ICRC, the MetaRoCE-like CRC-32) written again */
  fixTrailer: (b: Uint8Array) => void;
  lies: (body: number, hdrLen: number) => Lie[];
  hdrMax: number;
  frameMax: number;
}

/** Recorded frame `base` mutated as draw `k` says, arriving at `timePs` (on another port now and then). */
export function mutate(m: Mutation, base: Arrival, k: number, timePs: number): { a: Arrival; lie?: Lie } {
  const { next, cuts, fieldModes, frameMax } = m;
  const rnd = (n: number) => next() % n;
  const chance = (pct: number) => rnd(100) < pct;
  const pick = <T>(a: readonly T[]) => a[next() % a.length]!;
  const bytesOf = (n: number) => Uint8Array.from({ length: n }, () => next() & 0xff);
  let b = base.bytes.slice();
  let hdrLen = base.hdrLen;
  let wire: number | undefined;
  let lie: Lie | undefined;
  if (k < cuts[0]) {
    // replayed as it was: a duplicate, perhaps long after (reordered)
  } else if (k < cuts[1]) {
    const f = pick(m.fields(b, hdrLen));
    const mode = rnd(10);
    if (mode < fieldModes[0] || !f.v) b[f.at + rnd(f.n)]! ^= 1 << rnd(8);
    else if (mode < fieldModes[1]) b.set(bytesOf(f.n), f.at);
    else {
      let v = BigInt(f.v());
      for (let i = f.n - 1; i >= 0; i--, v >>= 8n) b[f.at + i] = Number(v & 0xffn);
    }
    if (chance(90)) {
      if (f.at !== 24) fixIpv4(b); // a changed IPv4 field, its checksum agreeing (unless the checksum is the field)
      m.fixTrailer(b);
    }
  } else if (k < cuts[2]) {
    b[rnd(hdrLen)]! ^= 1 << rnd(8); // a bit anywhere in the headers
    if (chance(50)) m.fixTrailer(b);
  } else if (k < cuts[3]) {
    b[b.length > hdrLen ? hdrLen + rnd(b.length - hdrLen) : rnd(hdrLen)]! ^= 1 << rnd(8); // in the payload or trailer (timing mode: the headers)
  } else if (k < cuts[4]) {
    b = b.slice(0, rnd(b.length)); // truncated, the lengths saying so or not
    hdrLen = Math.min(hdrLen, b.length);
    if (chance(50)) { fixLengths(b); m.fixTrailer(b); }
  } else if (k < cuts[5]) {
    wire = pick([b.length + 1 + rnd(8), b.length - 1 - rnd(8), 0, next(), frameMax + 1]) >>> 0; // the record's length lies
    if (wire === b.length) wire++;
  } else if (k < cuts[6]) {
    b = bytesOf(rnd(200)); // random bytes
    hdrLen = Math.min(b.length, rnd(m.hdrMax + 1));
  } else if (k < cuts[7]) {
    b = new Uint8Array(0); // an empty record
    hdrLen = 0;
  } else if (k < cuts[8]) {
    // longer than the largest frame (or exactly as long), the lengths and trailer agreeing
    const to = chance(30) ? frameMax : frameMax + 1 + rnd(2000);
    const longer = new Uint8Array(to);
    longer.set(b.subarray(0, b.length - 4));
    longer.set(bytesOf(to - b.length), b.length - 4);
    b = longer;
    fixLengths(b);
    m.fixTrailer(b);
  } else {
    lie = pick(m.lies(b.length - hdrLen, hdrLen));
  }
  const port = chance(3) ? rnd(16) : base.port;
  // timing mode: a record carries the headers alone, its length the frame's (the body that is not there counted in)
  return { a: { timePs, port, wire: wire ?? b.length + base.wire - base.bytes.length, hdrLen, bytes: b }, lie };
}
