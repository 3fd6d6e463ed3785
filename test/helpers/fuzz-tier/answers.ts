// The fuzz tier's forged-answer case (issue 26, "No completion without its data"): two cabled
// devices, device 0 posting WRITE, WRITE_WITH_IMM, SEND, SEND_WITH_IMM and READ work requests of
// 1 B to 3.5 MTUs over 1 to 3 QPs to device 1, which posts the receives (some late: RNR); the
// cable drops and corrupts a few percent of frames both ways; and every window forged frames
// reach device 0 (answers: ACKs and NAKs of every kind, READ responses) and device 1 (requests)
// as an attacker who cannot see the traffic would make them. The existing fuzzers check that
// every work request completes once; this case checks that a SUCCESS had its data land.
//
// What is never forged: an answer naming exactly a packet in flight (a RoCEv2 PSN between the
// oldest unacknowledged one and the newest sent; a MetaRoCE-like PSN a path has sent and not
// heard of, an SSN a stream has in flight, or a floor above a receiver's cumulative PSN).
// Without authentication no transport can tell those from the real ones, so a SUCCESS without
// its data after one is the attack succeeding, not a bug (the plant "inflight-answers" shows the
// checker catching exactly that). The one exception is a MetaRoCE-like ACK of another epoch
// than its path's, which may name anything: the epoch is how the transport tells it apart. Every forged number is chosen outside those ranges, with margins for
// what the devices can send before the forged frame is taken; the tap checks the model the
// margins rest on (every PSN and SSN sent belongs to a work request posted).
//
// Invariants, each a violation string naming the seed, the work request and what went wrong:
//  1. every posted work request completes exactly once, on its QP, in post order per QP (the
//     receives at device 1 too);
//  2. a SUCCESS had its data land, checked when polled (a WRITE's bytes at device 1, a READ's at
//     device 0, a SEND's in its receive buffer), and the receiver's completion of a SEND or
//     WRITE_WITH_IMM matches (opcode, length, immediate); an error is one loss and forgery can
//     cause (RETRY_EXC_ERR, RNR_RETRY_EXC_ERR, then WR_FLUSH_ERR for the rest of its QP). No
//     REM_* error is legitimate here: every request is valid and no forged answer names a
//     packet in flight, so a forged NAK that fails a request is a bug;
//  3. no byte outside the registered regions, the CQ rings and the QP rings changes on either
//     device (fuzz.ts guard), and inside the regions only the bytes a work request wrote (its
//     pattern where it succeeded; its pattern or what was there where it failed);
//  4. no stall: once the forging stops, a settle period as long as every retry budget (RoCEv2:
//     transportTimeoutPs x (transportRetries + 1) and the RNR budget per outstanding request;
//     MetaRoCE-like: the RTO backoff to a failed path plus mrtGiveUpPs) ends with every work
//     request complete; both devices with nothing ever to do while one is outstanding is a
//     stall at once;
//  5. the wasm memory of each device does not grow after setup.
import { cabled, frameCopy, type Fate } from "../cable.js";
import { guard } from "../fuzz.js";
import { xorshift32 } from "../xorshift.js";
import { buildFrame } from "../../../host/wire/rocev2.js";
import { buildMetaroceFrame, metaroceCrc } from "../../../host/wire/metaroce.js";
import { portAddress } from "../../../host/fabric/topology.js";
import { OP, OPCODES, MRT, MRT_NAK, MRH_SIZE, MRA_SIZE, MRA_OFFSET } from "../../../host/generated/headers.js";
import { DMA, CQE, WQE } from "../../../host/generated/layouts.js";
import type { Context, Qp, Mr, Cq, Wc, Opcode, WcStatus } from "../../../host/verbs.js";
import type { DevicePorts, TxFrameRef } from "../../../host/ports.js";

export type Transport = "rocev2" | "metaroce";

/** How much a case does: windows of traffic and forging (then the settle), forged answers staged at device 0 per window. */
export interface AnswersBudget { windows: number; forgedPerWindow: number }

/**
 * A planted fault, to show an invariant is not vacuous: `inflight-answers` drops every frame of
 * device 0 and forges ACKs naming exactly what it sent (2: SUCCESS without data);
 * `drop-completion` loses the first SUCCESS polled (1); `scribble` writes a byte outside every
 * region (3); `no-settle` runs no settle period (4); `grow-memory` grows device 1's wasm memory (5).
 */
export type Plant = "inflight-answers" | "drop-completion" | "scribble" | "no-settle" | "grow-memory";

export interface AnswersResult {
  seed: number;
  transport: Transport;
  violations: string[];
  qps: number;
  /** send work requests posted at device 0, completions polled for them, of which SUCCESS */
  posted: number;
  completed: number;
  success: number;
  /** error completions by status */
  errors: Record<string, number>;
  /** receives posted at device 1, and completed */
  receives: number;
  receivesCompleted: number;
  /** forged frames staged at device 0 (answers) and at device 1 (requests) */
  forged: number;
  forgedRequests: number;
  /** forged frames by kind */
  forgedKinds: Record<string, number>;
  /** cable windows run while forging, and in the settle */
  windows: number;
  settleWindows: number;
  /** the counters that show the forged frames reached the transport (both devices summed) */
  counters: Record<string, number>;
  /** process CPU time of the case, ms (informative: not deterministic) */
  cpuMs: number;
}

const MTU = 1024;
const L = 1_000_000n; // the cable's latency and the window, ps
const SLOT = 4096; // one work request's bytes in a pool: at most MAX_LEN
const NSLOT = 128;
const MAX_LEN = 3 * MTU + 512;
const POOL = NSLOT * SLOT;
const MAX_OUT = 12; // send work requests outstanding per QP
const MAX_RECV = 48; // receives outstanding per QP at device 1
const POSTS = 2; // send work requests a QP posts per window, at most
const M24 = 0xffffff;
/** PSNs (RoCEv2) or SSNs (MetaRoCE-like) a QP's posts of one window can take: a forged number lies beyond this past the last one posted */
const MARGIN = 2 * POSTS * Math.ceil(MAX_LEN / MTU);
/**
 * PSNs a MetaRoCE-like path can send past the newest one seen before a forged frame made then
 * is taken (within the next window): its record holds 256, and its oldest cannot pass what was
 * seen (an ACK covering more left the receiver after what was seen was sent). A forged ACK or
 * DATA names PSNs this far past, or farther.
 */
const MARGIN_P = 2 * MRT.PATH_WINDOW;
const ENV = 42; // Ethernet, IPv4, UDP
const ROCE_HDR = ENV + 12;

const COMMON = {
  hbmBytes: 2 << 20, hostMemBytes: 2 << 20, sramBytes: 16384, maxQps: 8, maxMrs: 16, maxPds: 4, maxCqs: 4,
  mtuBytes: MTU, transportTimeoutPs: 10_000_000, transportRetries: 3, rnrTimerPs: 2_000_000, rnrRetries: 4,
};
const CONFIG: Record<Transport, Record<string, number>> = {
  rocev2: { ...COMMON, transport: 0 },
  metaroce: { ...COMMON, transport: 1, mrtConnections: 2, mrtPaths: 4, mrtRtoInitPs: 40_000_000, mrtRtoMinPs: 20_000_000, mrtGiveUpPs: 400_000_000 },
};
const SPACES: [number, number][] = [[DMA.DMA_HBM, COMMON.hbmBytes], [DMA.DMA_HOST, COMMON.hostMemBytes], [DMA.DMA_SRAM, COMMON.sramBytes]];

/** The statuses loss and forgery of answers that name no packet in flight can give: anything else is a violation. */
const ALLOWED: ReadonlySet<WcStatus> = new Set<WcStatus>(["SUCCESS", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "WR_FLUSH_ERR"]);
const COUNTERS = [
  "roce.ghost_answers", "roce.stale_answers", "roce.rx_duplicate", "roce.rx_out_of_order", "roce.rx_unknown_qp", "roce.timeouts", "nic.rnr_retries",
  "mrt.rx_unknown", "mrt.rx_malformed", "mrt.ack_cum_beyond_sent", "mrt.losses_resync", "mrt.naks_stray", "mrt.rx_beyond_window", "mrt.rx_duplicate", "mrt.rnr_naks",
] as const;

const packetsOf = (len: number) => (len === 0 ? 1 : Math.ceil(len / MTU));
/** a - b in the 24-bit PSN space, signed */
const d24 = (a: number, b: number) => (((a - b) << 8) >> 8);
/** a - b in the 32-bit PSN space of a MetaRoCE-like path, signed */
const d32 = (a: number, b: number) => (a - b) | 0;

/** A pool of slots in one region: FIFO reuse, a shadow of what the region must hold, and where a failed request may have written. */
interface Pool {
  name: string; ctx: Context; mr: Mr; free: number[]; shadow: Uint8Array;
  /** [offset, pattern]: bytes a failed request may or may not have written */
  maybe: [number, Uint8Array][];
}

interface Wr {
  id: number; qi: number; opcode: Opcode; len: number; imm?: number;
  /** RoCEv2 PSNs, MetaRoCE-like SSNs of the request stream */
  first: number; last: number;
  /** MetaRoCE-like READ: SSNs of the response on device 1's stream */
  rspFirst?: number;
  src: [Pool, number]; dst: [Pool, number];
  recv?: Recv;
  pattern: Uint8Array;
  status?: WcStatus;
}
interface Recv { id: number; qi: number; wr: Wr; slot: number; due: number; status?: WcStatus }

interface Pair {
  qi: number; q0: Qp; q1: Qp;
  next: number; // next PSN (RoCEv2) or SSN (MetaRoCE-like) a post takes
  rspNext: number; // MetaRoCE-like: next SSN of device 1's stream (READ responses)
  pending: Wr[]; // posted, not completed, in post order
  recvQueue: Recv[]; // receives to post at device 1, in order
  recvPending: Recv[]; // posted, not completed
  failed: boolean; // an error completion came: the rest are flushed, no more posts
  flushedRecvs: boolean;
  holdUntil: number; // no posts before this window (a forged number lies just past the last posted)
  // RoCEv2: what the frames tell
  port: number; // -1 until seen
  sentMax: number; // newest PSN device 0 sent (-1 none)
  ePsn: number; // device 1's expected PSN as its answers tell (-1 unknown)
}

/** A MetaRoCE-like path of one device's connection to the other, as that device's frames and the other's ACKs tell it. */
interface PathSeen {
  port: number; epoch: number;
  /** one past the newest PSN the device sent, known (false: unknown since a forged ACK may have resynchronised it) */
  bound: number; known: boolean; blindUntil: number;
  /** the other device's cumulative PSN for this path (its ACKs sent after `blindUntil`), and whether one has been seen */
  rcum: number; rcumSeen: boolean; hint: number;
}
const newPath = (): PathSeen => ({ port: -1, epoch: 0, bound: 0, known: false, blindUntil: -1, rcum: 0, rcumSeen: false, hint: 0 });

/** Options of a case: a planted fault, a trace, and forgeries off by default. */
export interface AnswersOptions {
  plant?: Plant;
  trace?: AnswersTrace;
  /**
   * MetaRoCE-like ghost ACKs up to 2^31 - 1 PSNs past what was sent, and stale ACKs from
   * anything the receiver said (by default ghosts go at most 2^29 past, and stale ACKs wait for
   * what the receiver says after a path's ghost, so that no ACK reaches the device almost 2^31
   * from the path's next PSN). On, it tests the transport's bound on how far a path's PSNs may
   * jump (docs/protocol.md): before it, the transport resynchronised a path backwards from such an
   * ACK (test/fuzz-answers.test.ts, "found by the forged-answer tier"), found within a few seeds.
   */
  halfSpace?: boolean;
}

/** What a caller may see of a case as it runs (to reduce a violation): every frame sent, as it leaves, every forged one, as it is staged, and every work request posted. */
export interface AnswersTrace {
  post?: (what: string, timePs: bigint) => void;
  frame?: (from: number, bytes: Uint8Array, hdrLen: number, fate: Fate, timePs: number) => void;
  forged?: (to: number, bytes: Uint8Array, hdrLen: number, timePs: number) => void;
}

export async function answersCase(seed: number, transport: Transport, budget: AnswersBudget, opts: AnswersOptions = {}): Promise<AnswersResult> {
  const cpu0 = process.cpuUsage();
  const plant = opts.plant;
  const metaroce = transport === "metaroce";
  const cfg = CONFIG[transport];
  const next = xorshift32(seed * 2654435761 + 1);
  const cable = xorshift32(seed ^ 0x5bd1e995);
  const rnd = (n: number) => (n <= 1 ? 0 : next() % n);
  const chance = (pct: number) => next() % 1000 < pct * 10;
  const pick = <T>(a: readonly T[]) => a[next() % a.length]!;
  const bytesOf = (n: number) => Uint8Array.from({ length: n }, () => next() & 0xff);

  const violations: string[] = [];
  let dropped = 0;
  const tag = `seed ${seed} ${transport}`;
  const violate = (what: string) => {
    if (violations.length < 60) violations.push(`${tag}: ${what}`);
    else dropped++;
  };
  const res = {
    posted: 0, completed: 0, success: 0, errors: {} as Record<string, number>, receives: 0, receivesCompleted: 0,
    forged: 0, forgedRequests: 0, forgedKinds: {} as Record<string, number>, windows: 0, settleWindows: 0,
  };
  const kind = (k: string) => { res.forgedKinds[k] = (res.forgedKinds[k] ?? 0) + 1; };

  let forging = false;
  let windowIndex = 0;
  const lastArrival = [0, 0]; // the latest arrival staged at each device (forged frames stage after it, in time order)
  const paths0: PathSeen[] = [], paths1: PathSeen[] = []; // device 0's paths (device 1 acknowledges), device 1's paths
  const pathOf = (a: PathSeen[], k: number) => (a[k] ??= newPath());
  const pairs: Pair[] = [];
  const byQpn0 = new Map<number, Pair>(), byQpn1 = new Map<number, Pair>();

  // ---- what the frames tell (both transports), and the model check

  const tapRoce = (from: number, v: DataView, f: TxFrameRef) => {
    const op = v.getUint8(42), destQp = v.getUint32(46) & M24, psn = v.getUint32(50) & M24;
    if (from === 0) {
      const p = byQpn1.get(destQp);
      if (!p || op > OP.RC_READ_REQUEST) return;
      p.port = f.port;
      if (d24(psn, p.next) >= 0) violate(`model: QP ${p.q0.qpn} sent PSN ${psn}, not one of a request posted (next ${p.next})`);
      if (p.sentMax < 0 || d24(psn, p.sentMax) > 0) p.sentMax = psn;
      return;
    }
    const p = byQpn0.get(destQp);
    if (!p || op !== OP.RC_ACK) return;
    // the responder's expected PSN: past an ACK's PSN, at a sequence NAK's or RNR NAK's
    const syn = v.getUint8(54), type = syn & 0x60;
    const e = type === 0 ? (psn + 1) & M24 : type === 0x20 || syn === 0x60 ? psn : -1;
    if (e >= 0 && (p.ePsn < 0 || d24(e, p.ePsn) > 0)) p.ePsn = e;
  };

  const tapMrt = (from: number, v: DataView, f: TxFrameRef) => {
    const type = v.getUint8(ENV) & 15, k = v.getUint8(ENV + 2), epoch = v.getUint8(ENV + 3), psn = v.getUint32(ENV + 4);
    const mine = pathOf(from === 0 ? paths0 : paths1, k), theirs = pathOf(from === 0 ? paths1 : paths0, k);
    if (type === MRT.TYPE_ACK) {
      // an ACK of path k of the other device's connection: its receiver's cumulative PSN (once
      // a forged ACK may have moved the path, only what the receiver said since: see halfSpace)
      if (!opts.halfSpace && f.timePs <= theirs.blindUntil) return;
      if (!theirs.rcumSeen || d32(psn, theirs.rcum) > 0) theirs.rcum = psn;
      theirs.rcumSeen = true;
      theirs.hint = v.getUint16(ENV + MRA_OFFSET.hint);
      return;
    }
    mine.port = f.port;
    mine.epoch = epoch;
    // after a forged ACK may have resynchronised the path, only what it sent later tells its next PSN
    if (f.timePs > mine.blindUntil) {
      if (!mine.known || d32(psn + 1, mine.bound) > 0) mine.bound = (psn + 1) >>> 0;
      mine.known = true;
    }
    if (type !== MRT.TYPE_DATA) return;
    const op = v.getUint8(ENV + 12), destQp = v.getUint32(ENV + 12) & M24, ssn = v.getUint32(ENV + 16) & M24;
    const p = (from === 0 ? byQpn1 : byQpn0).get(destQp);
    if (!p) return;
    const end = from === 0 ? p.next : p.rspNext;
    if (d24(ssn, end) >= 0) violate(`model: device ${from} sent SSN ${ssn} (op ${op}) on QP ${from === 0 ? p.q0.qpn : p.q1.qpn}, not one of a request posted (next ${end})`);
  };

  let plantDrop = false;
  const fate = (from: number, _n: number, _f: TxFrameRef): Fate => {
    if (plantDrop && from === 0) return "drop";
    const r = cable() % 1000;
    return r < 20 ? "drop" : r < 30 ? "corrupt" : "pass";
  };

  let forgeAnswer: (end: bigint) => { bytes: Uint8Array; hdrLen: number; port: number } | null = () => null;
  let forgeRequest: (end: bigint) => { bytes: Uint8Array; hdrLen: number; port: number } | null = () => null;

  const net = await cabled(cfg, L, fate, {
    tap: (from, f, what, arrivalPs) => {
      if (what !== "drop" && Number(arrivalPs) > lastArrival[1 - from]!) lastArrival[1 - from] = Number(arrivalPs);
      if (opts.trace?.frame) opts.trace.frame(from, frameCopy(f), f.hdrLen, what, f.timePs);
      if (f.hdrLen < ROCE_HDR) return;
      const v = new DataView(f.mem.buffer, f.mem.byteOffset + f.hdrAt, f.hdrLen);
      const dport = v.getUint16(36);
      if (dport === 4791) tapRoce(from, v, f);
      else if (dport === MRT.UDP_PORT && f.hdrLen >= ENV + Math.min(MRH_SIZE, MRA_SIZE)) tapMrt(from, v, f);
    },
    inject: (to, ports, end) => {
      if (!forging) return;
      let t = Math.max(Number(end), lastArrival[to]!) + 1;
      const n = to === 0 ? budget.forgedPerWindow : Math.floor(budget.forgedPerWindow / 4) + (rnd(4) < budget.forgedPerWindow % 4 ? 1 : 0);
      for (let k = 0; k < n && ports.stageRoom.frames > 64; k++) {
        const f = to === 0 ? forgeAnswer(end) : forgeRequest(end);
        if (!f) continue;
        opts.trace?.forged?.(to, f.bytes, f.hdrLen, t);
        stage(ports, t++, f, 1 - to);
        lastArrival[to] = t;
        if (to === 0) res.forged++;
        else res.forgedRequests++;
      }
    },
  });
  const [A, B] = net.ctxs as [Context, Context];

  // ---- the objects: a PD and a CQ on each, five pools of slots, 1 to 3 QP pairs

  const pd0 = A.allocPd(), pd1 = B.allocPd();
  const cq0 = A.createCq(1024), cq1 = B.createCq(1024);
  const mkPool = (name: string, ctx: Context, pd: typeof pd0, host: boolean, access: Parameters<Context["regMr"]>[3]): Pool => {
    const addr = host ? ctx.allocHostMemory(POOL, 4096) : ctx.allocHbm(POOL, 4096);
    const shadow = bytesOf(POOL);
    ctx.write(addr, shadow);
    return { name, ctx, mr: ctx.regMr(pd, addr, POOL, access), free: Array.from({ length: NSLOT }, (_, i) => i), shadow, maybe: [] };
  };
  const src = mkPool("device 0 sources", A, pd0, false, []);
  const rdst = mkPool("device 0 READ destinations", A, pd0, true, ["LOCAL_WRITE"]);
  const wdst = mkPool("device 1 WRITE destinations", B, pd1, false, ["LOCAL_WRITE", "REMOTE_WRITE"]);
  const rsrc = mkPool("device 1 READ sources", B, pd1, false, ["REMOTE_READ"]);
  const recvs = mkPool("device 1 receive buffers", B, pd1, true, ["LOCAL_WRITE"]);
  const pools = [src, rdst, wdst, rsrc, recvs];
  const addrOf = (p: Pool, i: number) => p.mr.addr + i * SLOT;

  const nQps = 1 + rnd(3);
  for (let qi = 0; qi < nQps; qi++) {
    const q0 = A.createQp(pd0, { sendCq: cq0, recvCq: cq0, maxSendWr: 32, maxRecvWr: 4 });
    const q1 = B.createQp(pd1, { sendCq: cq1, recvCq: cq1, maxSendWr: 4, maxRecvWr: 64 });
    for (const state of ["INIT", "RTR", "RTS"] as const) {
      A.modifyQp(q0, { state, destQpNum: q1.qpn, destDevice: 1 });
      B.modifyQp(q1, { state, destQpNum: q0.qpn, destDevice: 0 });
    }
    const p: Pair = { qi, q0, q1, next: 0, rspNext: 0, pending: [], recvQueue: [], recvPending: [], failed: false, flushedRecvs: false, holdUntil: 0, port: -1, sentMax: -1, ePsn: -1 };
    pairs.push(p);
    byQpn0.set(q0.qpn, p);
    byQpn1.set(q1.qpn, p);
  }

  // no frame may write outside the regions, the CQ rings and the QP rings
  const writable = (ctx: Context, cq: Cq, qps: Qp[]): [number, number][] => [
    ...pools.filter((p) => p.ctx === ctx).map((p): [number, number] => [p.mr.addr, POOL]),
    [cq.ring, cq.depth * CQE.SIZE],
    ...qps.flatMap((q): [number, number][] => [[q.sqRing, q.sqDepth * WQE.SIZE], [q.rqRing, q.rqDepth * WQE.SIZE]]),
  ];
  const guards = [
    guard(A, SPACES, writable(A, cq0, pairs.map((p) => p.q0)), seed + 11),
    guard(B, SPACES, writable(B, cq1, pairs.map((p) => p.q1)), seed + 12),
  ];
  const memory0 = [A, B].map((c) => c.device.core.memory.buffer.byteLength);
  const memoryCheck = (when: string) => {
    [A, B].forEach((c, d) => {
      const now = c.device.core.memory.buffer.byteLength;
      if (now !== memory0[d]) {
        violate(`memory: device ${d}'s wasm memory grew from ${memory0[d]} to ${now} B (${when})`);
        memory0[d] = now; // once per growth
      }
    });
  };

  // ---- work requests

  let ids = 1;
  const wrs = new Map<number, Wr>(), recvById = new Map<number, Recv>();
  const describe = (w: Wr) => `WR ${w.id} (${w.opcode} of ${w.len} B on QP ${pairs[w.qi]!.q0.qpn}, ${metaroce ? "SSN" : "PSN"} ${w.first}${w.last !== w.first ? `..${w.last}` : ""})`;
  /** A pattern for `len` bytes that differs from the destination's present content at every byte, so that a byte not landed shows. */
  const patternFor = (dst: Pool, slot: number, len: number) => {
    const at = slot * SLOT, out = bytesOf(len);
    for (let i = 0; i < len; i++) if (out[i] === dst.shadow[at + i]) out[i]! ^= 0xa5;
    return out;
  };
  const take = (p: Pool) => p.free.shift();
  const lengths = [1, 2, 3, 63, 64, 65, MTU - 1, MTU, MTU + 1, 2 * MTU - 1, 2 * MTU, 2 * MTU + 1, 3 * MTU, MAX_LEN];
  const pickLen = () => (chance(40) ? pick(lengths) : 1 + rnd(MAX_LEN));
  const OPS: [Opcode, number][] = [["RDMA_WRITE", 32], ["RDMA_WRITE_WITH_IMM", 14], ["SEND", 20], ["SEND_WITH_IMM", 8], ["RDMA_READ", 26]];
  const pickOp = () => {
    let r = rnd(100);
    for (const [op, w] of OPS) if ((r -= w) < 0) return op;
    return "RDMA_WRITE" as Opcode;
  };

  const post = (p: Pair) => {
    const opcode = pickOp(), len = pickLen();
    const read = opcode === "RDMA_READ", consumes = opcode !== "RDMA_WRITE" && !read;
    const sendLike = opcode === "SEND" || opcode === "SEND_WITH_IMM";
    if (consumes && p.recvQueue.length + p.recvPending.length >= MAX_RECV) return;
    const sp = read ? rsrc : src, dp = read ? rdst : sendLike ? recvs : wdst;
    const si = take(sp), di = take(dp), ri = opcode === "RDMA_WRITE_WITH_IMM" ? take(recvs) : di;
    if (si === undefined || di === undefined || ri === undefined) {
      // a pool is dry (failed requests keep their slots): give back what was taken, post nothing
      if (si !== undefined) sp.free.unshift(si);
      if (di !== undefined) dp.free.unshift(di);
      if (opcode === "RDMA_WRITE_WITH_IMM" && ri !== undefined) recvs.free.unshift(ri);
      return;
    }
    const pattern = patternFor(dp, di, len);
    sp.ctx.write(addrOf(sp, si), pattern);
    sp.shadow.set(pattern, si * SLOT);
    const n = metaroce && read ? 1 : packetsOf(len);
    const w: Wr = { id: ids++, qi: p.qi, opcode, len, first: p.next, last: (p.next + n - 1) & M24, src: [sp, si], dst: [dp, di], pattern };
    p.next = (p.next + n) & M24;
    if (metaroce && read) {
      w.rspFirst = p.rspNext;
      p.rspNext = (p.rspNext + packetsOf(len)) & M24;
    }
    if (opcode.endsWith("_IMM")) w.imm = next();
    if (consumes) {
      const last = p.recvQueue.at(-1)?.due ?? p.recvPending.at(-1)?.due ?? 0;
      const due = Math.max(last, windowIndex + (chance(20) ? 1 + rnd(5) : 0));
      w.recv = { id: ids++, qi: p.qi, wr: w, slot: ri, due };
      recvById.set(w.recv.id, w.recv);
      p.recvQueue.push(w.recv);
    }
    wrs.set(w.id, w);
    opts.trace?.post?.(describe(w), A.nowPs);
    p.pending.push(w);
    res.posted++;
    A.postSend(p.q0, [{
      wrId: w.id, opcode, signaled: true, localAddr: read ? addrOf(rdst, di) : addrOf(src, si), length: len, lkey: read ? rdst.mr.lkey : src.mr.lkey,
      ...(read ? { remoteAddr: addrOf(rsrc, si), rkey: rsrc.mr.rkey } : sendLike ? {} : { remoteAddr: addrOf(wdst, di), rkey: wdst.mr.rkey }),
      ...(w.imm !== undefined ? { imm: w.imm } : {}),
    }]);
  };

  const postReceives = (all: boolean) => {
    for (const p of pairs) {
      const ready: Recv[] = [];
      while (p.recvQueue.length && (all || p.recvQueue[0]!.due <= windowIndex) && p.recvPending.length + ready.length < MAX_RECV) ready.push(p.recvQueue.shift()!);
      if (!ready.length) continue;
      B.postRecv(p.q1, ready.map((r) => ({ wrId: r.id, localAddr: addrOf(recvs, r.slot), length: SLOT, lkey: recvs.mr.lkey })));
      p.recvPending.push(...ready);
      res.receives += ready.length;
    }
  };

  // ---- the checks at each completion

  /** How many bytes at `addr` of `ctx` differ from `want` (0: every byte landed). */
  const missing = (ctx: Context, addr: number, want: Uint8Array) => {
    const got = ctx.read(addr, want.length);
    let n = 0;
    for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) n++;
    return n;
  };
  const landed = (w: Wr, pool: Pool, slot: number, what: string) => {
    const n = missing(pool.ctx, addrOf(pool, slot), w.pattern);
    if (n > 0) violate(`${describe(w)}: SUCCESS but ${n} of its ${w.len} bytes are not in ${what} at 0x${addrOf(pool, slot).toString(16)}`);
    else pool.shadow.set(w.pattern, slot * SLOT);
    return n === 0;
  };
  const maybeWrote = (pool: Pool, slot: number, pattern: Uint8Array) => pool.maybe.push([slot * SLOT, pattern]);
  let dropOne = plant === "drop-completion";

  const onSend = (wc: Wc) => {
    const w = wrs.get(Number(wc.wrId));
    if (!w) { violate(`a completion on device 0 for work request ${wc.wrId}, never posted (QP ${wc.qpNum}, ${wc.status})`); return; }
    if (w.status !== undefined) { violate(`${describe(w)}: completed again (${wc.status}; first ${w.status})`); return; }
    if (dropOne && wc.status === "SUCCESS") { dropOne = false; return; }
    const p = pairs[w.qi]!;
    res.completed++;
    if (wc.qpNum !== p.q0.qpn) violate(`${describe(w)}: completed on QP ${wc.qpNum}`);
    if (wc.opcode !== w.opcode) violate(`${describe(w)}: completed as ${wc.opcode}`);
    const at = p.pending.indexOf(w);
    if (at !== 0) violate(`${describe(w)}: completed before ${at} requests posted ahead of it on its QP (first WR ${p.pending[0]?.id})`);
    if (at >= 0) p.pending.splice(at, 1);
    w.status = wc.status;
    const [dp, di] = w.dst, [sp, si] = w.src;
    if (wc.status === "SUCCESS") {
      res.success++;
      if (p.failed) violate(`${describe(w)}: SUCCESS after an error on its QP`);
      const ok = w.opcode === "RDMA_READ" ? landed(w, rdst, di, "its local buffer")
        : w.opcode === "SEND" || w.opcode === "SEND_WITH_IMM" ? landed(w, recvs, di, `the buffer of receive ${w.recv!.id}`)
        : landed(w, wdst, di, "the remote buffer");
      if (ok) {
        sp.free.push(si);
        if (dp !== recvs) dp.free.push(di);
        if (w.recv?.status === "SUCCESS") recvs.free.push(w.recv.slot);
      }
      return;
    }
    res.errors[wc.status] = (res.errors[wc.status] ?? 0) + 1;
    if (!ALLOWED.has(wc.status)) violate(`${describe(w)}: ${wc.status}, which neither loss nor answers naming no packet in flight can cause`);
    else if (wc.status === "WR_FLUSH_ERR" && !p.failed) violate(`${describe(w)}: WR_FLUSH_ERR with no error before it on its QP`);
    else if (wc.status !== "WR_FLUSH_ERR" && p.failed) violate(`${describe(w)}: ${wc.status} after an error on its QP (the rest are flushed)`);
    p.failed = true;
    // what it may have written before it failed: its slots are not used again
    maybeWrote(dp, di, w.pattern);
  };

  const onRecv = (wc: Wc) => {
    const r = recvById.get(Number(wc.wrId));
    if (!r) { violate(`a completion on device 1 for receive ${wc.wrId}, never posted (QP ${wc.qpNum}, ${wc.status})`); return; }
    if (r.status !== undefined) { violate(`receive ${r.id} of ${describe(r.wr)}: completed again (${wc.status}; first ${r.status})`); return; }
    const p = pairs[r.qi]!;
    res.receivesCompleted++;
    r.status = wc.status;
    const at = p.recvPending.indexOf(r);
    if (wc.qpNum !== p.q1.qpn) violate(`receive ${r.id}: completed on QP ${wc.qpNum}, posted on ${p.q1.qpn}`);
    if (at !== 0) violate(`receive ${r.id} of ${describe(r.wr)}: completed before ${at} receives posted ahead of it`);
    if (at >= 0) p.recvPending.splice(at, 1);
    if (wc.status === "WR_FLUSH_ERR" && p.flushedRecvs) return;
    const w = r.wr;
    if (wc.status !== "SUCCESS") { violate(`receive ${r.id} of ${describe(w)}: ${wc.status}`); return; }
    const imm = w.opcode === "RDMA_WRITE_WITH_IMM" || w.opcode === "SEND_WITH_IMM";
    const want = { opcode: w.opcode === "RDMA_WRITE_WITH_IMM" ? "RDMA_WRITE_WITH_IMM" : "RECV", byteLen: w.len, imm: imm ? w.imm : undefined };
    const got = { opcode: wc.opcode, byteLen: wc.byteLen, imm: wc.imm };
    if (JSON.stringify(want) !== JSON.stringify(got)) violate(`receive ${r.id} of ${describe(w)}: completed as ${JSON.stringify(got)}, the request says ${JSON.stringify(want)}`);
    if (w.opcode === "SEND" || w.opcode === "SEND_WITH_IMM") {
      const n = missing(B, addrOf(recvs, r.slot), w.pattern);
      if (n > 0) violate(`receive ${r.id} of ${describe(w)}: SUCCESS but ${n} of ${w.len} bytes are not in its buffer`);
      else recvs.shadow.set(w.pattern, r.slot * SLOT);
    }
    if (w.status === "SUCCESS") recvs.free.push(r.slot);
  };

  const poll = () => {
    for (const wc of A.pollCq(cq0, 1024)) onSend(wc);
    for (const wc of B.pollCq(cq1, 1024)) onRecv(wc);
  };

  // ---- forging

  const stage = (ports: DevicePorts, t: number, f: { bytes: Uint8Array; hdrLen: number; port: number }, from: number) => {
    const { bytes, hdrLen, port } = f;
    if (!ports.stageArrival(t, port, bytes.length, from, 0, bytes, 0, hdrLen, bytes, hdrLen, bytes.length - hdrLen)) throw new Error("stage full");
  };
  const live = (need: (p: Pair) => boolean) => pairs.filter((p) => !p.failed && need(p));

  if (!metaroce) {
    /** A PSN of QP pair `p` outside [oldest outstanding, newest posted + the margin]: a ghost ahead or a stale one behind. */
    const outside = (p: Pair): [number, string] => {
      const first = p.pending[0]?.first ?? p.next;
      const base = (p.next - 1 + MARGIN) & M24, span = (base - first) & M24;
      const r = rnd(100);
      if (r < 6) {
        // 1 to 4 past the newest posted: the QP posts nothing more until the frame is taken
        p.holdUntil = windowIndex + 3;
        return [(p.next + rnd(4)) & M24, "ghost +1..4"];
      }
      if (r < 20) return [(base + 1 + rnd(8)) & M24, "ghost near"];
      if (r < 40) return [(first - 1 - rnd(8)) & M24, "stale near"];
      if (r < 52) return [(base + (1 << 20)) & M24, "ghost +2^20"];
      if (r < 64) return [(base + (1 << 23) - 1 - rnd(4)) & M24, "ghost ~+2^23"];
      if (r < 76) return [(first - 1 - rnd(1 << 23)) & M24, "stale far"];
      return [(base + 1 + rnd(M24 - span)) & M24, "outside"];
    };
    const syndromes = () => {
      const r = rnd(100);
      if (r < 35) return [rnd(32), "ACK"] as const;
      if (r < 50) return [0x20 | rnd(32), "RNR NAK"] as const;
      if (r < 65) return [0x60, "NAK sequence"] as const;
      if (r < 85) return [0x61 + rnd(4), "NAK error"] as const;
      return [pick([0x40 | rnd(32), 0x65 + rnd(27), 0x80 | rnd(128)]), "syndrome reserved"] as const;
    };
    forgeAnswer = () => {
      if (plant === "inflight-answers") {
        // exactly the newest PSN sent, which the peer never got: what no transport can refuse
        const p = pick(pairs);
        if (p.sentMax < 0 || p.port < 0) return null;
        kind("in flight");
        return roceFrame(OP.RC_ACK, p.q0.qpn, p.sentMax, p.port, 1, 0, { syndrome: 0x1f, msn: rnd(1 << 24) });
      }
      const ps = live((p) => p.port >= 0);
      if (!ps.length) return null;
      const p = pick(ps);
      const [psn, where] = outside(p);
      const port = chance(95) ? p.port : (p.port + 1 + rnd(11)) % 12;
      const r = rnd(100);
      if (r < 75) {
        const [syn, what] = syndromes();
        kind(`${what}, ${where}`);
        return roceFrame(OP.RC_ACK, p.q0.qpn, psn, port, 1, 0, { syndrome: syn, msn: rnd(1 << 24) });
      }
      kind(`READ response, ${where}`);
      const op = pick([OP.RC_READ_RESPONSE_ONLY, OP.RC_READ_RESPONSE_FIRST, OP.RC_READ_RESPONSE_MIDDLE, OP.RC_READ_RESPONSE_LAST]);
      const n = op === OP.RC_READ_RESPONSE_FIRST || op === OP.RC_READ_RESPONSE_MIDDLE ? MTU : rnd(MTU + 1);
      return roceFrame(op, p.q0.qpn, psn, port, 1, n, { syndrome: 0x1f, msn: rnd(1 << 24) });
    };
    forgeRequest = () => {
      if (plant === "inflight-answers") return null;
      const ps = live((p) => p.port >= 0);
      if (!ps.length) return null;
      const p = pick(ps);
      const first = p.pending[0]?.first ?? p.next, e = p.ePsn < 0 ? 0 : p.ePsn;
      const base = (p.next - 1 + MARGIN) & M24;
      const write = { va: BigInt(addrOf(wdst, rnd(NSLOT))), rkey: wdst.mr.rkey, dmaLength: 1 + rnd(MAX_LEN) };
      if (chance(50)) {
        // ahead of anything posted: out of order at the responder, which asks for the PSN it expects (a real one)
        const room = (1 << 23) - 2 - ((base - e) & M24);
        if (room <= 1) return null;
        const psn = (base + 1 + rnd(room)) & M24;
        const op = pick([OP.RC_SEND_FIRST, OP.RC_SEND_MIDDLE, OP.RC_SEND_LAST, OP.RC_SEND_ONLY, OP.RC_SEND_ONLY_IMM, OP.RC_WRITE_FIRST, OP.RC_WRITE_MIDDLE,
          OP.RC_WRITE_LAST, OP.RC_WRITE_ONLY, OP.RC_WRITE_ONLY_IMM, OP.RC_WRITE_LAST_IMM, OP.RC_READ_REQUEST]);
        kind("request ahead");
        return roceRequest(op, p, psn, write);
      }
      // behind both the oldest outstanding request and the responder's expected PSN: a duplicate,
      // whose answer (a READ's responses too: at most 2 PSNs) is stale at device 0
      const low = d24(first, e) < 0 ? first : e;
      const psn = (low - 3 - rnd(1 << 22)) & M24;
      const op = pick([OP.RC_SEND_ONLY, OP.RC_WRITE_ONLY, OP.RC_WRITE_ONLY_IMM, OP.RC_READ_REQUEST, OP.RC_READ_REQUEST]);
      const read = { va: BigInt(addrOf(rsrc, rnd(NSLOT))), rkey: chance(70) ? rsrc.mr.rkey : wdst.mr.rkey, dmaLength: 1 + rnd(2 * MTU) };
      kind("request duplicate");
      return roceRequest(op, p, psn, op === OP.RC_READ_REQUEST ? read : write);
    };
  } else {
    const nakCodes = () => pick([MRT_NAK.RNR, MRT_NAK.REMOTE_ACCESS, MRT_NAK.INVALID_REQUEST, MRT_NAK.RNR, MRT_NAK.REMOTE_ACCESS, 4 + rnd(252)]);
    /** An SSN of pair `p`'s stream outside [oldest outstanding, newest posted + the margin]. */
    const ssnOutside = (p: Pair): number => {
      const first = p.pending[0]?.first ?? p.next;
      const r = chance(10) ? 0 : 1 + rnd(4);
      if (r === 0) { p.holdUntil = windowIndex + 3; return (p.next + rnd(4)) & M24; }
      if (r === 1) return (first - 1 - rnd(8)) & M24;
      if (r === 2) return (first - 1 - rnd(1 << 23)) & M24;
      if (r === 3) return ((1 + rnd(255)) * (1 << 24) + rnd(1 << 24)) >>> 0; // above 24 bits: no SSN
      const base = (p.next - 1 + MARGIN) & M24, span = (base - first) & M24;
      return (base + 1 + rnd(M24 - span)) & M24;
    };
    const nak = (): { nakQp: number; nakCode: number; nakSsn: number } => {
      if (chance(50) || !pairs.length) return { nakQp: 0, nakCode: 0, nakSsn: 0 };
      const p = pick(pairs);
      return { nakQp: chance(90) ? p.q1.qpn : rnd(1 << 24), nakCode: nakCodes(), nakSsn: ssnOutside(p) };
    };
    const randomSack = (below: number = MRT.PATH_WINDOW) => {
      let s = 0n;
      const n = rnd(6);
      for (let i = 0; i < n && below > 0; i++) s |= 1n << BigInt(rnd(below));
      if (chance(5) && below >= MRT.PATH_WINDOW) s = (1n << BigInt(MRT.PATH_WINDOW)) - 1n;
      return s;
    };
    forgeAnswer = (end) => {
      const ks = paths0.map((p, k) => [p, k] as const).filter(([p]) => p.port >= 0);
      if (!ks.length) return null;
      const [path, k] = pick(ks);
      const ack = (spec: { epoch: number; cum: number; sack: bigint; nakQp?: number; nakCode?: number; nakSsn?: number }) =>
        mrtAck(path.port, k, { ...spec, ce: chance(10) ? rnd(4) : 0, hint: chance(80) ? path.hint : rnd(1 << 16) });
      if (plant === "inflight-answers") {
        if (!path.known) return null;
        kind("in flight");
        return ack({ epoch: path.epoch, cum: path.bound, sack: 0n });
      }
      const r = rnd(100);
      if (r < 35 && path.known) {
        // past what the path can have sent when the ACK is taken: the sender resynchronises, completing nothing
        const far = rnd(4), top = opts.halfSpace ? 0x7fffffff - MRT.PATH_WINDOW : 1 << 29;
        const off = far === 0 ? MARGIN_P + rnd(8) : far === 1 ? top - rnd(8) : far === 2 ? MARGIN_P + rnd(1 << 16) : MARGIN_P + rnd(top - 2 * MARGIN_P);
        const cum = (path.bound + off) >>> 0, sack = chance(50) ? randomSack() : 0n;
        path.known = false;
        if (!opts.halfSpace) path.rcumSeen = false;
        path.blindUntil = Number(end + 2n * L);
        kind(far === 1 ? `ACK ghost ~2^${opts.halfSpace ? 31 : 29}` : "ACK ghost");
        return ack({ epoch: path.epoch, cum, sack, ...nak() });
      }
      if (r < 65 && path.rcumSeen) {
        // no more than the receiver has said: every PSN it names arrived
        const back = rnd(64), cum = (path.rcum - back) >>> 0;
        kind("ACK stale");
        return ack({ epoch: path.epoch, cum, sack: back > 1 ? randomSack(back - 1) : 0n, ...nak() });
      }
      if (r < 85 && path.known) {
        // another epoch: even an ACK of everything sent must be dropped
        kind("ACK old epoch");
        return ack({ epoch: (path.epoch - 1 - rnd(100)) & 0xff, cum: (path.bound - rnd(4)) >>> 0, sack: randomSack(), ...nak() });
      }
      // a READ response (or another DATA packet) for nothing
      return mrtData(1);
    };
    forgeRequest = () => (plant === "inflight-answers" ? null : mrtData(0));

    /**
     * A DATA packet (or a PROBE) from device `from`'s path that changes nothing at the receiver:
     * its floor no higher than the receiver's cumulative PSN, and either its PSN beyond the
     * receiver's window (past anything the path can have sent), or an old PSN and an SSN placed
     * long ago or beyond the stream's window.
     */
    const mrtData = (from: number) => {
      const ps = (from === 0 ? paths0 : paths1).map((p, k) => [p, k] as const).filter(([p]) => p.port >= 0 && p.rcumSeen);
      const qs = live(() => true);
      if (!ps.length || !qs.length) return null;
      const [path, k] = pick(ps);
      const p = pick(qs);
      let floor = (path.rcum - rnd(16)) >>> 0, psn: number, ssn: number, what: string;
      const first = from === 0 ? p.pending[0]?.first ?? p.next : p.pending.find((w) => w.rspFirst !== undefined)?.rspFirst ?? p.rspNext;
      const end = from === 0 ? p.next : p.rspNext;
      if (chance(50) && path.known) {
        psn = (path.bound + MARGIN_P + MRT.PATH_WINDOW + 1 + rnd(1 << 20)) >>> 0;
        ssn = rnd(1 << 24);
        what = "beyond the path's window";
      } else {
        // below the receiver's cumulative PSN (its next one is the sender's next: in flight)
        psn = (path.rcum - 1 - rnd(64)) >>> 0;
        floor = (psn - rnd(16)) >>> 0;
        if (chance(50)) { ssn = (first - 1 - rnd(1 << 22)) & M24; what = "old, SSN placed"; }
        else { ssn = (end - 1 + MARGIN + MRT.STREAM_WINDOW + 1 + rnd(1 << 22)) & M24; what = "old, SSN beyond the window"; }
      }
      const env = { ipSrc: portAddress(from, path.port), ipDst: portAddress(1 - from, path.port), path: k, epoch: chance(85) ? path.epoch : rnd(256), psn, floor };
      if (chance(10)) {
        kind(`${from === 1 ? "PROBE to 0" : "PROBE to 1"}, ${what}`);
        return { bytes: buildMetaroceFrame({ type: MRT.TYPE_PROBE, ...env }), hdrLen: ENV + MRH_SIZE, port: path.port };
      }
      const op = from === 1 ? (chance(70) ? MRT.OP_READ_RESP : pick([MRT.OP_WRITE, MRT.OP_SEND, MRT.OP_WRITE_IMM])) : pick([MRT.OP_WRITE, MRT.OP_WRITE_IMM, MRT.OP_SEND, MRT.OP_SEND_IMM, MRT.OP_READ_REQ]);
      const readReq = op === MRT.OP_READ_REQ;
      const length = 1 + rnd(MAX_LEN), j = readReq ? 0 : rnd(packetsOf(length)), offset = j * MTU, last = readReq || (j + 1) * MTU >= length;
      const payload = readReq ? new Uint8Array(0) : bytesOf(last ? length - offset : MTU);
      const region = from === 1 ? rdst : op === MRT.OP_READ_REQ ? rsrc : wdst;
      kind(`${from === 1 ? (op === MRT.OP_READ_RESP ? "READ response" : "DATA to 0") : "DATA to 1"}, ${what}`);
      return {
        bytes: buildMetaroceFrame({
          type: MRT.TYPE_DATA, ...env, flags: (j === 0 ? MRT.FLAG_FIRST : 0) | (last ? MRT.FLAG_LAST : 0) | (chance(50) ? MRT.FLAG_ACK_REQ : 0), op,
          destQp: from === 1 ? p.q0.qpn : p.q1.qpn, ssn, msn: rnd(8), offset, length, addr: BigInt(addrOf(region, rnd(NSLOT))), rkey: region.mr.rkey, imm: next(), payload,
        }),
        hdrLen: ENV + MRH_SIZE, port: path.port,
      };
    };
    const mrtAck = (port: number, k: number, spec: { epoch: number; cum: number; sack: bigint; ce: number; hint: number; nakQp?: number; nakCode?: number; nakSsn?: number }) => {
      const code = spec.nakCode ?? 0;
      const known = code <= MRT_NAK.INVALID_REQUEST;
      const bytes = buildMetaroceFrame({
        type: MRT.TYPE_ACK, ipSrc: portAddress(1, port), ipDst: portAddress(0, port), path: k, epoch: spec.epoch, cum: spec.cum, sack: spec.sack,
        ce: spec.ce, hint: spec.hint, nakQp: spec.nakQp ?? 0, nakCode: known ? code : MRT_NAK.NONE, nakSsn: spec.nakSsn ?? 0,
      });
      if (!known) {
        // a NAK code the transport does not have: written in place, the CRC again
        bytes[ENV + MRA_OFFSET.nakCode] = code;
        new DataView(bytes.buffer).setUint32(bytes.length - 4, metaroceCrc(bytes.subarray(ENV)), true);
      }
      return { bytes, hdrLen: ENV + MRA_SIZE, port };
    };
  }

  function roceFrame(opcode: number, destQp: number, psn: number, port: number, from: number, payloadLen: number, aeth: { syndrome: number; msn: number }) {
    const info = OPCODES.get(opcode)!;
    const bytes = buildFrame({
      opcode, destQp, psn, ipSrc: portAddress(from, port), ipDst: portAddress(1 - from, port),
      ...(info.headers.includes("Aeth") ? { aeth } : {}), payload: bytesOf(payloadLen),
    });
    return { bytes, hdrLen: ROCE_HDR + info.extBytes, port };
  }
  function roceRequest(opcode: number, p: Pair, psn: number, reth: { va: bigint; rkey: number; dmaLength: number }) {
    const info = OPCODES.get(opcode)!;
    const mid = /_(FIRST|MIDDLE)$/.test(info.name);
    const n = !info.payload ? 0 : mid ? MTU : rnd(MTU + 1);
    const bytes = buildFrame({
      opcode, destQp: p.q1.qpn, psn, ipSrc: portAddress(0, p.port), ipDst: portAddress(1, p.port), ackReq: chance(50),
      ...(info.headers.includes("Reth") ? { reth } : {}), ...(info.headers.includes("ImmDt") ? { immDt: next() } : {}), payload: bytesOf(n),
    });
    return { bytes, hdrLen: ROCE_HDR + info.extBytes, port: p.port };
  }

  // ---- the run: traffic and forging, then the settle

  const quiet = () => A.device.nextActivityPs === null && B.device.nextActivityPs === null;
  const outstanding = () => pairs.some((p) => p.pending.length > 0);
  const window = () => {
    net.run(A.nowPs + L);
    poll();
    memoryCheck(`window ${windowIndex}`);
    windowIndex++;
  };
  plantDrop = plant === "inflight-answers";
  forging = true;
  for (let k = 0; k < budget.windows; k++) {
    for (const p of pairs) {
      if (p.failed || windowIndex < p.holdUntil || !chance(60)) continue;
      const n = 1 + rnd(POSTS);
      for (let j = 0; j < n && p.pending.length < MAX_OUT; j++) post(p);
    }
    postReceives(false);
    // the bottom of HBM is no region's (the pools are taken from the top)
    if (plant === "scribble" && k === budget.windows >> 1) B.write(DMA.DMA_HBM + 100, Uint8Array.of(B.read(DMA.DMA_HBM + 100, 1)[0]! ^ 1));
    if (plant === "grow-memory" && k === budget.windows >> 1) B.device.core.memory.grow(1);
    window();
    res.windows++;
  }
  forging = false;
  plantDrop = false;

  // every budget to its end: the RoCEv2 retries and RNR retries of each outstanding request in
  // turn; the MetaRoCE-like RTO backoff to a failed path (mrtFailAfter = 3 expiries from
  // mrtRtoInitPs), then mrtGiveUpPs, and the RNR budget
  postReceives(true);
  const perRequest = BigInt(cfg.transportTimeoutPs! * (cfg.transportRetries! + 1) + cfg.rnrTimerPs! * (cfg.rnrRetries! + 1));
  const settlePs = plant === "no-settle" ? 0n : metaroce
    ? BigInt(7 * cfg.mrtRtoInitPs! + cfg.mrtGiveUpPs! + cfg.rnrTimerPs! * (cfg.rnrRetries! + 1) * MAX_OUT)
    : perRequest * BigInt(MAX_OUT + 1);
  const settleEnd = A.nowPs + settlePs;
  while (outstanding() && A.nowPs < settleEnd) {
    window();
    res.settleWindows++;
    if (outstanding() && quiet()) {
      violate(`stall: both devices have nothing to do (no timer armed, nothing in flight) at ${A.nowPs} ps with ${pairs.reduce((n, p) => n + p.pending.length, 0)} requests outstanding`);
      break;
    }
  }
  for (const p of pairs) for (const w of p.pending) {
    violate(`${describe(w)}: not complete ${Number(settlePs) / 1e6} us after the forging stopped (stall; QP ${A.qpState(p.q0)})`);
    maybeWrote(w.dst[0], w.dst[1], w.pattern); // what it wrote so far is its own
  }

  // the receives left at device 1 are those of requests that failed: flushed
  for (const p of pairs) {
    if (!p.recvPending.length && !p.recvQueue.length) continue;
    if (!p.failed) { for (const r of [...p.recvPending, ...p.recvQueue]) violate(`receive ${r.id} of ${describe(r.wr)} (${r.wr.status ?? "outstanding"}): never completed`); continue; }
    p.flushedRecvs = true;
    B.modifyQp(p.q1, { state: "ERR" });
  }
  for (let k = 0; k < 4; k++) window();
  for (const p of pairs) for (const r of p.recvPending) if (p.failed) violate(`receive ${r.id} of ${describe(r.wr)}: not flushed`);
  // every SEND or WRITE_WITH_IMM that succeeded had its receive complete
  for (const w of wrs.values()) if (w.status === "SUCCESS" && w.recv && w.recv.status !== "SUCCESS") violate(`${describe(w)}: SUCCESS, its receive ${w.recv.id} ${w.recv.status ?? "never completed"}`);

  // (3) the regions hold what the requests wrote, nothing else; nothing outside them changed
  for (const pool of pools) {
    const got = pool.ctx.read(pool.mr.addr, POOL);
    let bad = 0, firstBad = -1;
    for (let i = 0; i < POOL; i++) {
      if (got[i] === pool.shadow[i]) continue;
      if (pool.maybe.some(([at, pat]) => i >= at && i < at + pat.length && pat[i - at] === got[i])) continue;
      if (bad++ === 0) firstBad = i;
    }
    if (bad) violate(`${pool.name}: ${bad} bytes no request wrote changed, the first at 0x${(pool.mr.addr + firstBad).toString(16)} (slot ${Math.floor(firstBad / SLOT)} + ${firstBad % SLOT})`);
  }
  guards.forEach((check, d) => {
    const changed = check();
    if (changed.length) violate(`device ${d}: bytes outside every region and ring changed: ${changed.join(", ")}`);
  });
  memoryCheck("the end");
  if (dropped) violations.push(`${tag}: ... and ${dropped} more violations`);

  const counters: Record<string, number> = {};
  for (const c of [A, B]) {
    const st = c.device.stats();
    for (const k of COUNTERS) counters[k] = (counters[k] ?? 0) + (st[k] ?? 0);
  }
  const cpu = process.cpuUsage(cpu0);
  return { seed, transport, violations, qps: nQps, ...res, counters, cpuMs: Math.round((cpu.user + cpu.system) / 1000) };
}
