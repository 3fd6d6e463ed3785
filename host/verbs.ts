// The verbs API of the host, with ibverbs' names and semantics (ibv_alloc_pd, ibv_reg_mr,
// ibv_create_cq, ibv_create_qp, ibv_modify_qp, ibv_post_send, ibv_post_recv, ibv_poll_cq, ...).
// Queues and completion rings of host-owned objects live in host memory, which the NIC reaches
// over PCIe; engine-owned ones live in HBM. Posting writes entries into the ring (the CPU's
// own writes cost no simulated time) and rings a classic doorbell, or sends each entry through
// the express window. Platform-neutral.
//
// Every argument is checked before anything happens: a call that throws VerbsError has
// changed nothing — no allocator moved, no ring byte written, no doorbell rung, no object made.

import { Device, type DeviceOptions } from "./device.js";
import type { CoreInstance } from "./wasm.js";
import type { DeviceConfig } from "./config.js";
import {
  OPCODE, WR_FLAG, STATUS, ACCESS, QP_STATE, REDUCE_OP, DTYPE, CMD_ERR, WQE, WQE_STRIDE, CQE, DMA, REGIONS,
  OWNER_HOST, REMOTE_KEY_BIT, MAX_CQ_DEPTH, MAX_QUEUE_DEPTH, PORT_GROUP, PORT_LANE_AUTO,
} from "./generated/layouts.js";

/**
 * A verbs call refused its arguments or found a handle it does not own: the message names the
 * call, the argument and the object (`postSend: QP 3: wrs[2].length must be an integer
 * 0..4294967295, got 4294967296`). A call that throws it has changed nothing.
 */
export class VerbsError extends Error {
  /** @param message what is wrong, where */
  constructor(message: string) {
    super(message);
    this.name = "VerbsError";
  }
}

/**
 * What a work request does (ibv_wr_opcode, plus two local operations):
 * - `RDMA_WRITE`: copy `length` bytes from `localAddr` (under `lkey`) to `remoteAddr` of the
 *   destination QP's device (under `rkey`, which needs `REMOTE_WRITE`);
 * - `RDMA_WRITE_WITH_IMM`: the same, then consume a receive at the destination, whose
 *   completion carries `imm`;
 * - `SEND`, `SEND_WITH_IMM`: deliver `length` bytes from `localAddr` into the buffer of the
 *   destination QP's next posted receive;
 * - `RDMA_READ`: copy `length` bytes from `remoteAddr` (under `rkey`, which needs
 *   `REMOTE_READ`) into `localAddr` (under `lkey`, which needs `LOCAL_WRITE`);
 * - `REDUCE`: combine 2 to 8 HBM sources element by element into `localAddr` on a reduction
 *   block of this device ({@link SendWr.reduce});
 * - `COPY`: copy `length` bytes between two regions of this device, from `remoteAddr` under
 *   `rkey` (a local key of the QP's protection domain) to `localAddr` under `lkey`;
 * - `RECV`: a receive work request ({@link RecvWr}); only in completions.
 */
export type Opcode = keyof typeof OPCODE;
/** A queue pair's state (ibv_qp_state): `RESET` → `INIT` → `RTR` → `RTS`; any state → `ERR`. Entries run only in `RTS`. */
export type QpStateName = keyof typeof QP_STATE;
/**
 * A memory region's access right (ibv_access_flags): `LOCAL_WRITE` lets the NIC write the
 * region for this side (a READ's or RECV's destination, a COPY's or REDUCE's destination);
 * `REMOTE_WRITE` lets a peer's RDMA WRITE place bytes in it; `REMOTE_READ` lets a peer's RDMA
 * READ take bytes from it. Reading a region for a local source needs no right.
 */
export type AccessFlag = keyof typeof ACCESS;
/** A completion's status (ibv_wc_status, with ibverbs' numbers): `SUCCESS` or what went wrong (docs/nic.md lists which request gets which). */
export type WcStatus = keyof typeof STATUS;
/** A REDUCE's operation on each element: `SUM`, `MAX`, `MIN` or `PROD`. */
export type ReduceOp = keyof typeof REDUCE_OP;
/**
 * A REDUCE's element type, little-endian: `F32` (4 bytes), `F16`, `BF16` (2 bytes; combined in
 * f32, rounded once to the type, to nearest even) or `I32` (4 bytes; sums and products wrap
 * modulo 2^32). docs/reduce.md gives the numerics.
 */
export type ReduceDtype = keyof typeof DTYPE;
/** Which of a device's port groups a QP to another device uses: `SCALE_UP` or `SCALE_OUT`. */
export type PortGroup = keyof typeof PORT_GROUP;
/** Sources a WQE has room for (src_addr x 8). */
const WQE_SOURCES = (WQE.SIZE - WQE.src_addr) / WQE_STRIDE.src_addr;
/** The WQE's nsrc field is one byte: a larger count saturates, so it still reaches the NIC as an invalid count. */
const NSRC_MAX = 0xff;
const U32_MAX = 0xffff_ffff;
const U64_END = 2 ** 64;
/** Alignments up to the largest memory (hostMemBytes and hbmBytes are at most 1 GiB). */
const MAX_ALIGNMENT = 2 ** 30;
/** How postSend announces entries (PostSendOptions.doorbell). */
const DOORBELLS = { classic: 0, express: 1 } as const;
const STATUS_NAMES = Object.fromEntries(Object.entries(STATUS).map(([k, v]) => [v, k])) as Record<number, keyof typeof STATUS>;
const OPCODE_NAMES = Object.fromEntries(Object.entries(OPCODE).map(([k, v]) => [v, k])) as Record<number, Opcode>;

/** A protection domain ({@link Context.allocPd}): a key works only for QPs of its PD. */
export interface Pd {
  /** The NIC's number for it. */
  readonly handle: number;
}
/** A registered memory region ({@link Context.regMr}): `[addr, addr + length)` of DMA memory. */
export interface Mr {
  /** First DMA address of the region. */
  readonly addr: number;
  /** Its size in bytes. */
  readonly length: number;
  /** The local key: work requests of this side name the region by it (`lkey` fields). */
  readonly lkey: number;
  /** The remote key: a peer's RDMA WRITE or READ names the region by it (`rkey`); `lkey | 0x80000000`. */
  readonly rkey: number;
  /** The protection domain it was registered in. */
  readonly pd: Pd;
}
/** A completion queue ({@link Context.createCq}). */
export interface Cq {
  /** The NIC's number for it. */
  readonly cqn: number;
  /** How many completions its ring holds. */
  readonly depth: number;
  /** DMA address of its ring of 32-byte entries (host memory for a host CQ, HBM for an engine's). */
  readonly ring: number;
  /** Who polls it: an engine's index, or the host's owner number. */
  readonly owner: number;
  /** Completions read so far (free-running; {@link Context.pollCq} advances it). */
  consumed: number;
}
/** A queue pair ({@link Context.createQp}): a send and a receive ring of 128-byte entries. */
export interface Qp {
  /** The QP number, which a peer names at RTR (`destQpNum`) and completions carry (`qpNum`). */
  readonly qpn: number;
  /** The protection domain its keys must belong to. */
  readonly pd: Pd;
  /** Where its send requests complete. */
  readonly sendCq: Cq;
  /** Where its receives complete. */
  readonly recvCq: Cq;
  /** Who posts to it: an engine's index, or the host's owner number. */
  readonly owner: number;
  /** Entries of the send ring (`maxSendWr`). */
  readonly sqDepth: number;
  /** Entries of the receive ring (`maxRecvWr`). */
  readonly rqDepth: number;
  /** DMA address of the send ring. */
  readonly sqRing: number;
  /** DMA address of the receive ring. */
  readonly rqRing: number;
  /** Send entries posted so far, a free-running u32 count (the NIC's numbering of the ring slots). */
  sqPosted: number;
  /** Receive entries posted so far, a free-running u32 count. */
  rqPosted: number;
}

/**
 * A send work request (ibv_send_wr) for {@link Context.postSend}. Which fields matter depends
 * on the {@link Opcode}; an absent number is 0. The host checks each field's type and range
 * (a VerbsError names the bad one); keys, bounds and rights are the NIC's to judge, and a bad
 * one completes the request with an error status.
 */
export interface SendWr {
  /** The caller's id for the request, returned in its completion: a bigint below 2^64 or a safe integer ≥ 0. */
  wrId: bigint | number;
  /** What the request does. */
  opcode: Opcode;
  /** Write a completion when it succeeds (a failed request always completes). Default false, unless the QP has `sqSigAll`. */
  signaled?: boolean;
  /** ibverbs' IBV_SEND_FENCE: written into the entry's flags; the NIC does not act on it yet. Default false. */
  fence?: boolean;
  /** DMA address of this side's buffer: the source of a WRITE or SEND, the destination of a READ, COPY or REDUCE. */
  localAddr?: number;
  /** Bytes to move; for a REDUCE, the bytes of each source and of the destination (a multiple of the element size). */
  length?: number;
  /** Local key of a region covering `[localAddr, localAddr + length)`. */
  lkey?: number;
  /** DMA address on the destination QP's device (WRITE, READ), or the source of a COPY. */
  remoteAddr?: number;
  /** Remote key of the region at `remoteAddr` (WRITE, READ); for a COPY, a local key of its source. */
  rkey?: number;
  /** The 32-bit immediate of `RDMA_WRITE_WITH_IMM` and `SEND_WITH_IMM`, delivered in the receiver's completion. */
  imm?: number;
  /**
   * The REDUCE request: `localAddr`/`lkey` is the destination (in HBM, its region with
   * `LOCAL_WRITE`), `length` the bytes of each operand; every source is in HBM, under the
   * `lkey` of a region of the QP's protection domain. A count of sources outside 2..8, or an
   * unknown op or type, completes with `LOC_QP_OP_ERR`.
   */
  reduce?: {
    /** How elements combine. */
    op: ReduceOp;
    /** The element type. */
    dtype: ReduceDtype;
    /** The operands, 2 to 8, each `length` bytes. */
    sources: ReduceSource[];
  };
}

/** One operand of a REDUCE. */
export interface ReduceSource {
  /** Its DMA address, in HBM (below 2^32). */
  addr: number;
  /** The local key of a region of the QP's protection domain covering it. */
  lkey: number;
}

/** The RoCEv2 payload bytes a QP has moved ({@link Context.qpBytes}). */
export interface QpBytes {
  /** Sent in request packets, retransmissions included. */
  tx: number;
  /** Accepted in order as a responder. */
  rx: number;
}

/** A receive work request (ibv_recv_wr) for {@link Context.postRecv}: where an incoming SEND (or WRITE_WITH_IMM's completion) lands. */
export interface RecvWr {
  /** The caller's id, returned in the receive's completion: a bigint below 2^64 or a safe integer ≥ 0. */
  wrId: bigint | number;
  /** DMA address of the buffer. */
  localAddr: number;
  /** Its size: a larger SEND fails (`LOC_LEN_ERR` here, `REM_INV_REQ_ERR` at the sender). */
  length: number;
  /** Local key of a region covering the buffer, with `LOCAL_WRITE`. */
  lkey: number;
}

/** A work completion (ibv_wc), from {@link Context.pollCq}. */
export interface Wc {
  /** The request's `wrId`. */
  wrId: bigint;
  /** `SUCCESS`, or what went wrong. */
  status: WcStatus;
  /** What completed (`RECV` for a receive). */
  opcode: Opcode;
  /** Bytes moved (for a receive, the bytes the SEND delivered). */
  byteLen: number;
  /** The immediate of a WRITE_WITH_IMM or SEND_WITH_IMM, on the receiver's completion. */
  imm?: number;
  /** The QP number the completion belongs to. */
  qpNum: number;
  /** When the NIC wrote the completion (ps of device time). */
  timePs: bigint;
}

/** What {@link Context.createQp} makes (ibv_qp_init_attr). */
export interface QpInit {
  /** The CQ its send requests complete on. */
  sendCq: Cq;
  /** The CQ its receives complete on. */
  recvCq: Cq;
  /** Entries of the send ring, 1..32768. */
  maxSendWr: number;
  /** Entries of the receive ring, 1..32768. */
  maxRecvWr: number;
  /** Engine that owns the QP (posts to it and rings its doorbells; its rings in HBM); the host when absent. */
  engine?: number;
  /** Every send request completes, signaled or not (ibverbs' sq_sig_all). Default false. */
  sqSigAll?: boolean;
}

/** The attributes {@link Context.modifyQp} sets (ibv_qp_attr). */
export interface QpAttr {
  /** The state to move to. */
  state: QpStateName;
  /** At RTR, required: the QP number of the destination (0..maxQps-1). */
  destQpNum?: number;
  /** At RTR: the device the destination QP is on (default: this device, a loopback QP); another device makes the QP speak RoCEv2 (or the MetaRoCE-like transport) through its ports. */
  destDevice?: number;
  /** Which port group carries it to another device. Default `SCALE_UP`. */
  portGroup?: PortGroup;
  /**
   * At RTR to another device: which port of the group it sends on, as an index taken modulo the
   * group's size (so it survives a re-split), the same at both ends of the pair. Default: port
   * (QP number + destination QP number) mod the group's size.
   */
  portLane?: number;
}

/** Options of {@link Context.postSend}. */
export interface PostSendOptions {
  /**
   * `classic` (default): the entries go into the ring and one doorbell announces them all; the
   * NIC then fetches them (over PCIe for a host QP). `express`: each entry is itself written to
   * the NIC's express window, with no fetch.
   */
  doorbell?: "classic" | "express";
  /** When the doorbell writes leave the host (ps of device time; default now, not before now). */
  atPs?: bigint;
}

/** Options of {@link Context.postRecv}. */
export interface PostRecvOptions {
  /** When the doorbell leaves the host (ps of device time; default now, not before now). */
  atPs?: bigint;
}

// ---- argument checks: each returns the value or throws VerbsError naming `what`

/**
 * What a check names in its message: the text, or a function that makes it. The hot calls
 * (modifyQp, postSend, pollCq) pass functions, so that a check that passes builds no string.
 * A check's `tail` (".length") follows it: one `what` serves every field of a work request.
 */
type What = string | (() => string);

const label = (what: What, tail = "") => (typeof what === "string" ? what : what()) + tail;

const show = (v: unknown) => (typeof v === "bigint" ? `${v}n` : typeof v === "string" ? JSON.stringify(v) : String(v));

function checkInt(what: What, v: unknown, min: number, max: number, tail?: string): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max)
    throw new VerbsError(`${label(what, tail)} must be an integer ${min}..${max}, got ${show(v)}`);
  return v;
}

const checkU32 = (what: What, v: unknown, tail?: string) => checkInt(what, v, 0, U32_MAX, tail);

/** A 64-bit address or length held in a number: any integer-valued double converts to BigInt exactly. */
function checkU64(what: What, v: unknown, tail?: string): bigint {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v >= U64_END)
    throw new VerbsError(`${label(what, tail)} must be an integer 0..2^64-1, got ${show(v)}`);
  return BigInt(v);
}

/** A work request id: a bigint below 2^64, or a number that is a safe integer (above 2^53 a number has already lost digits). */
function checkWrId(what: What, v: unknown, tail?: string): bigint {
  if (typeof v === "bigint" && v >= 0n && v < 1n << 64n) return v;
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  throw new VerbsError(`${label(what, tail)} must be a bigint 0..2^64-1 or a safe integer >= 0, got ${show(v)}`);
}

function checkBool(what: What, v: unknown, tail?: string): boolean {
  if (v !== undefined && typeof v !== "boolean") throw new VerbsError(`${label(what, tail)} must be a boolean, got ${show(v)}`);
  return v === true;
}

/** The value of `name` in an enumeration of layouts/verbs.json (own keys only: "toString" is no opcode). */
function checkName<E extends Record<string, number>>(what: What, table: E, name: unknown, tail?: string): E[keyof E] {
  if (typeof name !== "string" || !Object.hasOwn(table, name))
    throw new VerbsError(`${label(what, tail)} must be one of ${Object.keys(table).join(", ")}, got ${show(name)}`);
  return table[name as keyof E];
}

function checkArray(what: What, v: unknown, tail?: string): unknown[] {
  if (!Array.isArray(v)) throw new VerbsError(`${label(what, tail)} must be an array, got ${show(v)}`);
  return v;
}

function checkAlloc(what: string, bytes: number, alignment: number): void {
  checkInt(what, bytes, 1, Number.MAX_SAFE_INTEGER, ": bytes");
  checkInt(what, alignment, 1, MAX_ALIGNMENT, ": alignment");
  if ((alignment & (alignment - 1)) !== 0) throw new VerbsError(`${what}: alignment must be a power of two, got ${alignment}`);
}

/** A work request with every field checked: what encodeWqe writes. */
interface WqeFields {
  opcode: number; flags: number; wrId: bigint; laddr: bigint; length: number; lkey: number; raddr: bigint; rkey: number; imm: number;
  reduce?: { dtype: number; redop: number; nsrc: number; sources: { addr: number; lkey: number }[] };
}

/**
 * Checks a work request (`what` names it in messages) for a send or a receive queue, or either
 * (`queue` absent); a missing opcode means RECV.
 */
function wqeFields(wr: unknown, what: What, queue?: "send" | "recv"): WqeFields {
  if (typeof wr !== "object" || wr === null) throw new VerbsError(`${label(what)} must be a work request object, got ${show(wr)}`);
  const s = wr as Partial<SendWr>;
  if (queue === "send" && (s.opcode === undefined || s.opcode === ("RECV" as Opcode)))
    throw new VerbsError(`${label(what)}.opcode must be a send opcode, got ${show(s.opcode)}`);
  if (queue === "recv" && s.opcode !== undefined && s.opcode !== "RECV")
    throw new VerbsError(`${label(what)}.opcode: a receive work request has none, got ${show(s.opcode)}`);
  const f: WqeFields = {
    opcode: checkName(what, OPCODE, s.opcode ?? "RECV", ".opcode"),
    flags: (checkBool(what, s.signaled, ".signaled") ? WR_FLAG.SIGNALED : 0) | (checkBool(what, s.fence, ".fence") ? WR_FLAG.FENCE : 0),
    wrId: checkWrId(what, s.wrId, ".wrId"),
    laddr: checkU64(what, s.localAddr ?? 0, ".localAddr"),
    length: checkU32(what, s.length ?? 0, ".length"),
    lkey: checkU32(what, s.lkey ?? 0, ".lkey"),
    raddr: checkU64(what, s.remoteAddr ?? 0, ".remoteAddr"),
    rkey: checkU32(what, s.rkey ?? 0, ".rkey"),
    imm: checkU32(what, s.imm ?? 0, ".imm"),
  };
  if (s.reduce !== undefined) {
    const r = s.reduce;
    if (typeof r !== "object" || r === null) throw new VerbsError(`${label(what)}.reduce must be an object, got ${show(r)}`);
    const sources = checkArray(what, r.sources, ".reduce.sources").map((src, i) => {
      const w = () => label(what, `.reduce.sources[${i}]`);
      if (typeof src !== "object" || src === null) throw new VerbsError(`${w()} must be { addr, lkey }, got ${show(src)}`);
      const { addr, lkey } = src as { addr: unknown; lkey: unknown };
      // src_addr is 32 bits wide: sources are in HBM, below 2^32
      return { addr: checkU32(w, addr, ".addr"), lkey: checkU32(w, lkey, ".lkey") };
    });
    f.reduce = {
      dtype: checkName(what, DTYPE, r.dtype, ".reduce.dtype"),
      redop: checkName(what, REDUCE_OP, r.op, ".reduce.op"),
      // a count outside 2..8 is the NIC's to reject (LOC_QP_OP_ERR, docs/nic.md); it must not wrap into a valid one
      nsrc: Math.min(sources.length, NSRC_MAX),
      sources: sources.slice(0, WQE_SOURCES),
    };
  }
  return f;
}

/**
 * Encodes one WQE into `dv` at `off` (the layout of layouts/verbs.json), having checked every
 * field: a bad one throws VerbsError naming it (`what` names the request) and writes nothing.
 */
export function encodeWqe(dv: DataView, off: number, wr: SendWr | (RecvWr & { opcode?: "RECV" }), qpn: number, what = "work request"): void {
  emitWqe(dv, off, wqeFields(wr, what), checkU32(what, qpn, ": qpn"));
}

/** Writes checked fields as one WQE. */
function emitWqe(dv: DataView, off: number, f: WqeFields, qpn: number): void {
  new Uint8Array(dv.buffer, dv.byteOffset + off, WQE.SIZE).fill(0);
  dv.setUint8(off + WQE.opcode, f.opcode);
  dv.setUint8(off + WQE.flags, f.flags);
  dv.setUint32(off + WQE.qpn, qpn, true);
  dv.setBigUint64(off + WQE.wr_id, f.wrId, true);
  dv.setBigUint64(off + WQE.laddr, f.laddr, true);
  dv.setUint32(off + WQE.length, f.length, true);
  dv.setUint32(off + WQE.lkey, f.lkey, true);
  dv.setBigUint64(off + WQE.raddr, f.raddr, true);
  dv.setUint32(off + WQE.rkey, f.rkey, true);
  dv.setUint32(off + WQE.imm, f.imm, true);
  if (f.reduce) {
    dv.setUint8(off + WQE.dtype, f.reduce.dtype);
    dv.setUint8(off + WQE.redop, f.reduce.redop);
    dv.setUint8(off + WQE.nsrc, f.reduce.nsrc);
    f.reduce.sources.forEach((src, i) => {
      dv.setUint32(off + WQE.src_addr + WQE_STRIDE.src_addr * i, src.addr, true);
      dv.setUint32(off + WQE.src_lkey + WQE_STRIDE.src_lkey * i, src.lkey, true);
    });
  }
}

type Kind = "PD" | "MR" | "CQ" | "QP";
const GONE: Record<Kind, string> = { PD: "was deallocated", MR: "is not registered: it was deregistered", CQ: "was destroyed", QP: "was destroyed" };

/**
 * Where encodeBatch encodes a batch's entries (grown as needed), for every context: one buffer,
 * not one per post, nor one per context (16,384 contexts' buffers were that many more objects,
 * with memory of their own, for the collector). Its entries are copied out before the call that
 * made them returns.
 */
let batch = new DataView(new ArrayBuffer(16 * WQE.SIZE));

/**
 * The verbs context of one device (ibv_open_device), with ibverbs' names: buffers
 * ({@link allocHostMemory}, {@link allocHbm}, {@link write}, {@link read}), protection
 * domains, memory regions, completion queues, queue pairs, posting and polling, and
 * {@link run} to advance simulated time. Every argument is checked before anything happens: a
 * call that throws {@link VerbsError} has changed nothing.
 */
export class Context {
  private hostTop = 0;
  private hbmLow: number;
  private scratch: number;
  /** Config fields the calls consult, read once (a device's config does not change; `config` holds bigints). */
  private readonly deviceId: number;
  private readonly maxQps: number;
  private readonly hostMemBytes: number;
  private readonly hostDoorbellQueue: number;
  /** Handles this context gave out and has not released, and those it has released. */
  private readonly live = new WeakMap<object, Kind>();
  private readonly released = new WeakMap<object, Kind>();

  private constructor(
    /** The device this context drives (its engines, statistics, save and restore). */
    readonly device: Device,
  ) {
    this.hbmLow = device.hbmBytes;
    this.scratch = device.core.scratchAlloc(WQE.SIZE) >>> 0;
    const cfg = (k: string) => Number(device.config.get(k));
    this.deviceId = cfg("deviceId");
    this.maxQps = cfg("maxQps");
    this.hostMemBytes = cfg("hostMemBytes");
    this.hostDoorbellQueue = cfg("hostDoorbellQueue");
  }

  /**
   * A new device and its context (what `openDevice` does with the package's core).
   * @param module the compiled core (`await coreModule()`), or an instance of it the device is
   *   built in beside others ({@link CoreInstance})
   * @param config device config fields (docs/memory-map.md); a bad one throws ConfigError
   * @param options console and trace collection
   */
  static async open(module: WebAssembly.Module | CoreInstance, config: DeviceConfig = {}, options: DeviceOptions = {}): Promise<Context> {
    return new Context(await Device.create(module, config, options));
  }

  /** A context on an existing device (e.g. a restored one); its allocators start afresh. */
  static of(device: Device): Context {
    return new Context(device);
  }

  private get core() { return this.device.core; }
  private get h() { return this.device.handle; }

  /** `h` if it is a live handle of this context of kind `kind`; else VerbsError naming `what`. */
  private own<T extends Pd | Mr | Cq | Qp>(kind: Kind, h: T, what: What): T {
    if (this.live.get(h as object) === kind) return h;
    if (this.released.get(h as object) === kind) throw new VerbsError(`${label(what)}: ${named(kind, h)} ${GONE[kind]}`);
    throw new VerbsError(`${label(what)} is not a ${kind} of this context${typeof h === "object" && h !== null ? "" : ` (got ${show(h)})`}: pass the handle its create call returned`);
  }

  private issue<T extends Pd | Mr | Cq | Qp>(kind: Kind, h: T): T {
    this.live.set(h, kind);
    return h;
  }

  private release(kind: Kind, h: Pd | Mr | Cq | Qp): void {
    this.live.delete(h);
    this.released.set(h, kind);
  }

  private checkEngine(what: string, engine: unknown): number {
    return engine === undefined ? OWNER_HOST : checkInt(what, engine, 0, this.device.engines - 1);
  }

  /**
   * Host memory for buffers, rings or CQs: the host's pinned memory, which the NIC reaches over
   * PCIe. A bump allocator (nothing is freed); throws VerbsError when `hostMemBytes` is used up.
   * @param bytes how many, at least 1
   * @param alignment a power of two up to 2^30 (default 64)
   * @returns the DMA address of the first byte (host memory starts at 0x1_0000_0000)
   */
  allocHostMemory(bytes: number, alignment = 64): number {
    checkAlloc("allocHostMemory", bytes, alignment);
    const at = align(this.hostTop, alignment);
    const hostBytes = this.hostMemBytes;
    if (at + bytes > hostBytes) throw new VerbsError(`allocHostMemory: host memory exhausted: ${bytes} B wanted, ${Math.max(0, hostBytes - at)} B left of hostMemBytes`);
    this.hostTop = at + bytes;
    return DMA.DMA_HOST + at;
  }

  /**
   * Device memory (HBM) for buffers: what REDUCE operands and engines' data use. Taken from the
   * top of HBM down (a firmware image's HBM data sits at the bottom: the allocator does not
   * know how much of it there is), never freed; throws VerbsError when HBM is used up.
   * @param bytes how many, at least 1
   * @param alignment a power of two up to 2^30 (default 64)
   * @returns the DMA address of the first byte (HBM starts at 0x8000_0000, as engines see it)
   */
  allocHbm(bytes: number, alignment = 64): number {
    checkAlloc("allocHbm", bytes, alignment);
    const at = Math.floor((this.hbmLow - bytes) / alignment) * alignment;
    if (at < 0) throw new VerbsError(`allocHbm: HBM exhausted: ${bytes} B wanted, ${Math.max(0, this.hbmLow)} B left below the HBM already taken`);
    this.hbmLow = at;
    return REGIONS.HBM.base + at;
  }

  /** Refuses a ring in HBM when HBM has no bytes (config hbmBacking 0): the NIC reads and writes a ring. */
  private ringHasBytes(what: string, ring: number, bytes: number): void {
    if (this.device.hbmDataBytes === 0 && ring >= REGIONS.HBM.base && ring < REGIONS.HBM.base + this.device.hbmBytes)
      throw new VerbsError(`${what}: its ring [0x${ring.toString(16)}, +${bytes}) would be in HBM, which has no bytes here (config hbmBacking 0, timing mode): an engine's objects need HBM with bytes; a host's go in host memory`);
  }

  /** Runs `make`, which allocates and then may throw; if it throws, the allocators are as before. */
  private allocating<T>(make: () => T): T {
    const hostTop = this.hostTop, hbmLow = this.hbmLow;
    try {
      return make();
    } catch (e) {
      this.hostTop = hostTop;
      this.hbmLow = hbmLow;
      throw e;
    }
  }

  /**
   * A live view of DMA memory (host memory, HBM or an engine's SRAM): the CPU's or a debugger's
   * access, costing no simulated time. It goes stale when the core's memory grows: use it at
   * once, or use {@link read} and {@link write}. Throws VerbsError for a range outside them.
   */
  view(addr: number, length: number): Uint8Array {
    const p = this.core.dmaAddr(this.h, checkU64("view: addr", addr), BigInt(checkInt("view: length", length, 0, Number.MAX_SAFE_INTEGER))) >>> 0;
    if (p === 0) throw new VerbsError(`view: [0x${addr.toString(16)}, +${length}) is not in host memory, HBM or engine SRAM`);
    return new Uint8Array(this.core.memory.buffer, p, length);
  }

  /** Writes `bytes` at DMA address `addr` (host memory, HBM or an engine's SRAM), as the CPU would: no simulated time, no region needed. */
  write(addr: number, bytes: Uint8Array): void { this.view(addr, bytes.length).set(bytes); }
  /** A copy of `length` bytes at DMA address `addr` (host memory, HBM or an engine's SRAM), read as the CPU would: no simulated time. */
  read(addr: number, length: number): Uint8Array { return this.view(addr, length).slice(); }

  /** ibv_alloc_pd: a new protection domain; throws VerbsError when all `maxPds` are in use. */
  allocPd(): Pd {
    const pd = this.core.pdAlloc(this.h);
    if (pd < 0) throw new VerbsError("allocPd: no free protection domain (maxPds)");
    return this.issue("PD", { handle: pd });
  }

  /** ibv_dealloc_pd; the handle is dead afterwards. */
  deallocPd(pd: Pd): void {
    this.own("PD", pd, "deallocPd: pd");
    if (!this.core.pdFree(this.h, pd.handle)) throw new VerbsError(`deallocPd: PD ${pd.handle} is in use by a region or QP`);
    this.release("PD", pd);
  }

  /**
   * ibv_reg_mr: registers `[addr, addr + length)` of DMA memory (host memory, HBM or an
   * engine's SRAM) in `pd`; throws VerbsError when all `maxMrs` are in use.
   * @param pd the protection domain whose QPs may use it
   * @param addr its first DMA address
   * @param length its size, bytes (at least 1)
   * @param access the rights the NIC grants on it (default none: a local source only)
   * @returns the region with its `lkey` and `rkey`
   */
  regMr(pd: Pd, addr: number, length: number, access: AccessFlag[] = []): Mr {
    this.own("PD", pd, "regMr: pd");
    const base = checkU64("regMr: addr", addr), len = checkInt("regMr: length", length, 1, Number.MAX_SAFE_INTEGER);
    const flags = checkArray("regMr: access", access).reduce<number>((a, k, i) => a | checkName(`regMr: access[${i}]`, ACCESS, k), 0);
    const lkey = this.core.mrReg(this.h, pd.handle, base, BigInt(len), flags) >>> 0;
    if (lkey === 0) throw new VerbsError(`regMr: cannot register [0x${addr.toString(16)}, +${length}): outside host memory, HBM and engine SRAM, or no free region (maxMrs)`);
    return this.issue("MR", { addr, length, lkey, rkey: (lkey | REMOTE_KEY_BIT) >>> 0, pd });
  }

  /** ibv_dereg_mr; a request still using it fails when it completes, with nothing placed. */
  deregMr(mr: Mr): void {
    this.own("MR", mr, "deregMr: mr");
    if (!this.core.mrDereg(this.h, mr.lkey)) throw new VerbsError(`deregMr: MR with lkey 0x${mr.lkey.toString(16)} is not registered`);
    this.release("MR", mr);
  }

  /**
   * ibv_create_cq: a CQ of `depth` entries (1..65536), owned by the host or by engine
   * `opts.engine`. Its ring is allocated (host memory for the host's, HBM for an engine's)
   * unless `opts.ring` places it: a DMA address of depth x 32 bytes, e.g. in the owner engine's
   * SRAM (DMA.SRAM_BASE + engine x 0x0100_0000 + offset), which is the cheap ring for firmware
   * to poll. The ring is zeroed.
   */
  createCq(depth: number, opts: { engine?: number; ring?: number } = {}): Cq {
    checkInt("createCq: depth", depth, 1, MAX_CQ_DEPTH);
    const owner = this.checkEngine("createCq: opts.engine", opts.engine);
    return this.allocating(() => {
      const bytes = depth * CQE.SIZE;
      const ring = opts.ring !== undefined ? Number(checkU64("createCq: opts.ring", opts.ring)) : owner === OWNER_HOST ? this.allocHostMemory(bytes) : this.allocHbm(bytes);
      this.ringHasBytes("createCq", ring, bytes);
      const cqn = this.core.cqCreate(this.h, BigInt(ring), depth, owner);
      if (cqn < 0) throw new VerbsError(`createCq: no free CQ (maxCqs)`);
      this.view(ring, bytes).fill(0); // no time has passed: the NIC has written nothing yet
      return this.issue("CQ", { cqn, depth, ring, owner, consumed: 0 });
    });
  }

  /** ibv_destroy_cq. */
  destroyCq(cq: Cq): void {
    this.own("CQ", cq, "destroyCq: cq");
    const r = this.core.cqDestroy(this.h, cq.cqn);
    if (r !== 0) throw new VerbsError(r === CMD_ERR.IN_USE ? `destroyCq: CQ ${cq.cqn} is still used by a QP` : `destroyCq: CQ ${cq.cqn} does not exist`);
    this.release("CQ", cq);
  }

  /** ibv_create_qp: a queue pair in RESET, its rings allocated where its owner reaches them. */
  createQp(pd: Pd, init: QpInit): Qp {
    this.own("PD", pd, "createQp: pd");
    if (typeof init !== "object" || init === null) throw new VerbsError(`createQp: init must be an object, got ${show(init)}`);
    this.own("CQ", init.sendCq, "createQp: init.sendCq");
    this.own("CQ", init.recvCq, "createQp: init.recvCq");
    const sqDepth = checkInt("createQp: init.maxSendWr", init.maxSendWr, 1, MAX_QUEUE_DEPTH);
    const rqDepth = checkInt("createQp: init.maxRecvWr", init.maxRecvWr, 1, MAX_QUEUE_DEPTH);
    const owner = this.checkEngine("createQp: init.engine", init.engine);
    const sigAll = checkBool("createQp: init.sqSigAll", init.sqSigAll);
    return this.allocating(() => {
      const alloc = (n: number) => (owner === OWNER_HOST ? this.allocHostMemory(n) : this.allocHbm(n));
      const sqRing = alloc(sqDepth * WQE.SIZE), rqRing = alloc(rqDepth * WQE.SIZE);
      this.ringHasBytes("createQp", sqRing, sqDepth * WQE.SIZE);
      const qpn = this.core.qpCreate(this.h, pd.handle, init.sendCq.cqn, init.recvCq.cqn, BigInt(sqRing), sqDepth, BigInt(rqRing), rqDepth, owner, sigAll ? 1 : 0);
      if (qpn < 0) throw new VerbsError(`createQp: ${qpn === CMD_ERR.ARGUMENT ? "the NIC refused its rings or owner" : "no free QP (maxQps)"}`);
      return this.issue("QP", { qpn, pd, sendCq: init.sendCq, recvCq: init.recvCq, owner, sqDepth, rqDepth, sqRing, rqRing, sqPosted: 0, rqPosted: 0 });
    });
  }

  /**
   * ibv_modify_qp. At RTR, `destQpNum` names the destination QP; `destDevice` (default: this
   * device) the device it is on — another device makes the QP talk RoCEv2 through a port of
   * `portGroup` ("SCALE_UP", the default, or "SCALE_OUT"). Moving to RESET discards posted
   * entries; to ERR flushes them (`WR_FLUSH_ERR`).
   */
  modifyQp(qp: Qp, attr: QpAttr): void {
    this.own("QP", qp, "modifyQp: qp");
    if (typeof attr !== "object" || attr === null) throw new VerbsError(`modifyQp: attr must be an object, got ${show(attr)}`);
    const at = () => `modifyQp: QP ${qp.qpn}: attr.`;
    const state = checkName(at, QP_STATE, attr.state, "state");
    const self = this.deviceId;
    const destDevice = attr.destDevice === undefined ? self : checkInt(at, attr.destDevice, 0, 0xffff, "destDevice");
    const maxQps = destDevice === self ? this.maxQps : 1 << 24;
    const dest = attr.destQpNum === undefined ? U32_MAX : checkInt(at, attr.destQpNum, 0, maxQps - 1, "destQpNum");
    const group = checkName(at, PORT_GROUP, attr.portGroup ?? "SCALE_UP", "portGroup");
    const lane = attr.portLane === undefined ? PORT_LANE_AUTO : checkInt(at, attr.portLane, 0, PORT_LANE_AUTO - 1, "portLane");
    if (state === QP_STATE.RTR && attr.destQpNum === undefined) throw new VerbsError(`modifyQp: QP ${qp.qpn}: RTR needs attr.destQpNum`);
    const r = this.core.qpModify(this.h, qp.qpn, state, dest, destDevice, group, lane);
    if (r === CMD_ERR.TRANSITION) throw new VerbsError(`modifyQp: QP ${qp.qpn}: no transition from ${this.qpState(qp)} to ${attr.state}`);
    if (r === CMD_ERR.IN_USE) throw new VerbsError(`modifyQp: QP ${qp.qpn}: cannot move to ${attr.state} while a request is in flight`);
    if (r === CMD_ERR.ARGUMENT) throw new VerbsError(`modifyQp: QP ${qp.qpn}: port group ${attr.portGroup ?? "SCALE_UP"} has no ports (scaleUpPorts ${this.device.portGroups().scaleUpPorts} of ${this.device.config.get("ports")})`);
    if (r !== 0) throw new VerbsError(`modifyQp: QP ${qp.qpn}: modify to ${attr.state} failed (${r})`);
  }

  /** ibv_query_qp's state: the QP's state now (the NIC moves it to ERR on an error). */
  qpState(qp: Qp): QpStateName {
    this.own("QP", qp, "qpState: qp");
    const v = this.core.qpState(this.h, qp.qpn);
    return (Object.entries(QP_STATE).find(([, s]) => s === v)?.[0] ?? "RESET") as QpStateName;
  }

  /** The rate DCQCN lets QP `qp` send at now, Gb/s (the port's line rate while it is not limited). */
  qpRateGbps(qp: Qp): number {
    this.own("QP", qp, "qpRateGbps: qp");
    const mbps = this.core.qpRateMbps(this.h, qp.qpn);
    return mbps > 0 ? mbps / 1000 : Number(this.device.config.get("portGbps"));
  }

  /** The RoCEv2 payload bytes QP `qp` has moved. */
  qpBytes(qp: Qp): QpBytes {
    this.own("QP", qp, "qpBytes: qp");
    return { tx: this.core.qpTxBytes(this.h, qp.qpn), rx: this.core.qpRxBytes(this.h, qp.qpn) };
  }

  /** ibv_destroy_qp: a request in flight and everything posted complete with `WR_FLUSH_ERR`. */
  destroyQp(qp: Qp): void {
    this.own("QP", qp, "destroyQp: qp");
    if (this.core.qpDestroy(this.h, qp.qpn) !== 0) throw new VerbsError(`destroyQp: QP ${qp.qpn} does not exist`);
    this.release("QP", qp);
  }

  /**
   * Checks a batch of work requests for a host-owned QP and encodes them into one buffer: the
   * whole batch is known good before the first entry reaches the ring or the first doorbell.
   * The bytes are the context's batch buffer: use them before the next post.
   */
  private encodeBatch(call: string, qp: Qp, wrs: unknown, queue: "send" | "recv"): Uint8Array {
    this.own("QP", qp, () => `${call}: qp`);
    if (qp.owner !== OWNER_HOST) throw new VerbsError(`${call}: QP ${qp.qpn} belongs to engine ${qp.owner}: its firmware posts to it`);
    const at = () => `${call}: QP ${qp.qpn}: wrs`;
    const list = checkArray(at, wrs);
    // every entry is checked (a bad one throws before anything is written), then all are encoded
    // into the context's buffer for batches: nothing a check calls (a getter on a request) can
    // run while it is being written
    const fields = list.map((wr, i) => wqeFields(wr, () => `${at()}[${i}]`, queue));
    const bytes = fields.length * WQE.SIZE;
    if (batch.byteLength < bytes) batch = new DataView(new ArrayBuffer(Math.max(bytes, 2 * batch.byteLength)));
    for (let i = 0; i < fields.length; i++) emitWqe(batch, i * WQE.SIZE, fields[i]!, qp.qpn);
    return new Uint8Array(batch.buffer, 0, bytes);
  }

  /**
   * Throws unless `n` more entries fit a queue of `depth` of which `posted` were posted and the
   * NIC has finished `done` (free-running u32 counts). The NIC's own free count would miss the
   * entries whose doorbell is still crossing PCIe.
   */
  private checkRoom(call: string, qp: Qp, queue: "send" | "receive", n: number, depth: number, posted: number, done: number): void {
    const free = depth - ((posted - done) >>> 0);
    if (n > free) throw new VerbsError(`${call}: QP ${qp.qpn}: ${queue} queue full: ${n} entries posted to ${free} free of ${depth}: poll completions and advance time`);
  }

  /** Throws unless `n` more host doorbells may be in flight to the NIC now (hostDoorbellQueue). */
  private checkDoorbells(call: string, n: number): void {
    const cap = this.hostDoorbellQueue;
    if (n > cap) throw new VerbsError(`${call}: ${n} express entries need ${n} host doorbells, more than hostDoorbellQueue (${cap}): post fewer at a time`);
    const room = this.core.hostDoorbellRoom(this.h) >>> 0;
    if (n > room) throw new VerbsError(`${call}: ${cap - room} host doorbells are crossing PCIe (hostDoorbellQueue ${cap}) and ${n} more are wanted: advance time`);
  }

  /** Copies encoded entries (at most `depth`: checkRoom) into a host-memory ring from free-running index `from`: up to the ring's end, the rest from its start. */
  private toRing(ring: number, depth: number, from: number, entries: Uint8Array): void {
    const slots = this.view(ring, depth * WQE.SIZE);
    const first = ((from >>> 0) % depth) * WQE.SIZE, fits = Math.min(entries.length, slots.length - first);
    slots.set(entries.subarray(0, fits), first);
    slots.set(entries.subarray(fits), 0);
  }

  /**
   * ibv_post_send: entries go into the ring and one classic doorbell announces them all, or each
   * goes through the express window. The doorbell writes leave the host at `opts.atPs` (default
   * now; not before now). The whole batch is checked first, including room in the ring and in
   * the host's doorbell queue (`hostDoorbellQueue`): a VerbsError then, and nothing posted.
   */
  postSend(qp: Qp, wrs: SendWr[], opts: PostSendOptions = {}): void {
    const express = checkName("postSend: opts.doorbell", DOORBELLS, opts.doorbell ?? "classic") === DOORBELLS.express;
    const at = this.device.inputTime("postSend: opts", opts.atPs);
    const entries = this.encodeBatch("postSend", qp, wrs, "send");
    const n = entries.length / WQE.SIZE;
    if (n === 0) return;
    this.checkRoom("postSend", qp, "send", n, qp.sqDepth, qp.sqPosted, this.core.qpSqDone(this.h, qp.qpn));
    this.checkDoorbells("postSend", express ? n : 1);
    if (express) {
      // the NIC places each entry in the ring slot it occupies: the host writes no ring
      for (let k = 0; k < n; k++) {
        new Uint8Array(this.core.memory.buffer, this.scratch, WQE.SIZE).set(entries.subarray(k * WQE.SIZE, (k + 1) * WQE.SIZE));
        if (!this.core.hostExpress(this.h, this.scratch, at)) throw new Error(`postSend: the core refused express doorbell ${k} of ${n} after granting room for them`);
      }
    } else {
      this.toRing(qp.sqRing, qp.sqDepth, qp.sqPosted, entries);
      if (!this.core.hostSqDoorbell(this.h, qp.qpn, (qp.sqPosted + n) & 0xffff, at)) throw new Error("postSend: the core refused a doorbell after granting room for it");
    }
    qp.sqPosted = (qp.sqPosted + n) >>> 0;
  }

  /** ibv_post_recv; the doorbell leaves the host at `opts.atPs` (default now; not before now). */
  postRecv(qp: Qp, wrs: RecvWr[], opts: PostRecvOptions = {}): void {
    const at = this.device.inputTime("postRecv: opts", opts.atPs);
    const entries = this.encodeBatch("postRecv", qp, wrs, "recv");
    const n = entries.length / WQE.SIZE;
    if (n === 0) return;
    this.checkRoom("postRecv", qp, "receive", n, qp.rqDepth, qp.rqPosted, this.core.qpRqDone(this.h, qp.qpn));
    this.checkDoorbells("postRecv", 1);
    this.toRing(qp.rqRing, qp.rqDepth, qp.rqPosted, entries);
    if (!this.core.hostRqDoorbell(this.h, qp.qpn, (qp.rqPosted + n) & 0xffff, at)) throw new Error("postRecv: the core refused a doorbell after granting room for it");
    qp.rqPosted = (qp.rqPosted + n) >>> 0;
  }

  /** ibv_poll_cq: up to `max` new completions. Throws when the CQ has overrun and nothing is left to read. */
  pollCq(cq: Cq, max = 16): Wc[] {
    this.own("CQ", cq, "pollCq: cq");
    checkInt(() => `pollCq: CQ ${cq.cqn}`, max, 0, Number.MAX_SAFE_INTEGER, ": max");
    const out: Wc[] = [];
    // the NIC's count of completions written (no time passes in here); most polls find none new
    const produced = this.core.cqProduced(this.h, cq.cqn);
    if (produced !== cq.consumed >>> 0 && max > 0) {
      const ring = this.view(cq.ring, cq.depth * CQE.SIZE);
      const dv = new DataView(ring.buffer, ring.byteOffset, ring.byteLength);
      while (out.length < max) {
        const off = (cq.consumed % cq.depth) * CQE.SIZE;
        const phase = Math.floor(cq.consumed / cq.depth) % 2 === 0 ? 1 : 0;
        if ((dv.getUint8(off + CQE.owner) & 1) !== phase || produced === cq.consumed >>> 0) break;
        const wrId = dv.getBigUint64(off + CQE.wr_id, true), status = STATUS_NAMES[dv.getUint8(off + CQE.status)];
        const opcode = OPCODE_NAMES[dv.getUint8(off + CQE.opcode)], byteLen = dv.getUint32(off + CQE.byte_len, true);
        const qpNum = dv.getUint32(off + CQE.qpn, true), timePs = dv.getBigUint64(off + CQE.timestamp, true);
        // imm only when the entry carries one (flags bit 0), in its place among the fields
        out.push(dv.getUint8(off + CQE.flags) & 1 ? { wrId, status, opcode, byteLen, imm: dv.getUint32(off + CQE.imm, true), qpNum, timePs } : { wrId, status, opcode, byteLen, qpNum, timePs });
        cq.consumed++;
      }
    }
    this.core.cqUpdateCi(this.h, cq.cqn, cq.consumed & 0xffff);
    if (out.length === 0 && this.core.cqOverrun(this.h, cq.cqn))
      throw new VerbsError(`pollCq: CQ ${cq.cqn} overran: a completion found it full, and the CQ is in the error state`);
    return out;
  }

  /** Advances simulated time to `untilPs` (ps of device time), whatever the engines do; returns the device time. */
  run(untilPs: bigint): bigint {
    return this.device.advance(untilPs);
  }

  /** The device time, in ps. */
  get nowPs(): bigint { return this.device.nowPs; }
}

const align = (n: number, a: number) => Math.ceil(n / a) * a;

function named(kind: Kind, h: Pd | Mr | Cq | Qp): string {
  if (kind === "PD") return `PD ${(h as Pd).handle}`;
  if (kind === "MR") return `MR (lkey 0x${(h as Mr).lkey.toString(16)})`;
  if (kind === "CQ") return `CQ ${(h as Cq).cqn}`;
  return `QP ${(h as Qp).qpn}`;
}
