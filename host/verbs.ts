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
import {
  OPCODE, WR_FLAG, STATUS, ACCESS, QP_STATE, REDUCE_OP, DTYPE, CMD_ERR, WQE, WQE_STRIDE, CQE, DMA, REGIONS,
  OWNER_HOST, REMOTE_KEY_BIT, MAX_CQ_DEPTH, MAX_QUEUE_DEPTH, PORT_GROUP,
} from "./generated/layouts.js";

export class VerbsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "VerbsError";
  }
}

export type Opcode = keyof typeof OPCODE;
export type QpStateName = keyof typeof QP_STATE;
/** Sources a WQE has room for (src_addr x 8). */
const WQE_SOURCES = (WQE.SIZE - WQE.src_addr) / WQE_STRIDE.src_addr;
/** The WQE's nsrc field is one byte: a larger count saturates, so it still reaches the NIC as an invalid count. */
const NSRC_MAX = 0xff;
const U32_MAX = 0xffff_ffff;
const U64_END = 2 ** 64;
/** Alignments up to the largest memory (hostMemBytes and hbmBytes are at most 1 GiB). */
const MAX_ALIGNMENT = 2 ** 30;
const STATUS_NAMES = Object.fromEntries(Object.entries(STATUS).map(([k, v]) => [v, k])) as Record<number, keyof typeof STATUS>;
const OPCODE_NAMES = Object.fromEntries(Object.entries(OPCODE).map(([k, v]) => [v, k])) as Record<number, Opcode>;

export interface Pd { readonly handle: number }
export interface Mr { readonly addr: number; readonly length: number; readonly lkey: number; readonly rkey: number; readonly pd: Pd }
export interface Cq { readonly cqn: number; readonly depth: number; readonly ring: number; readonly owner: number; consumed: number }
export interface Qp {
  readonly qpn: number; readonly pd: Pd; readonly sendCq: Cq; readonly recvCq: Cq; readonly owner: number;
  readonly sqDepth: number; readonly rqDepth: number; readonly sqRing: number; readonly rqRing: number;
  /** Entries posted so far, free-running u32 counts (the NIC's numbering of the ring slots). */
  sqPosted: number; rqPosted: number;
}

export interface SendWr {
  wrId: bigint | number;
  opcode: Opcode;
  signaled?: boolean;
  fence?: boolean;
  localAddr?: number;
  length?: number;
  lkey?: number;
  remoteAddr?: number;
  rkey?: number;
  imm?: number;
  /** REDUCE: sources (2 to 8, in HBM), operation and element type; localAddr/lkey is the destination. */
  reduce?: { op: keyof typeof REDUCE_OP; dtype: keyof typeof DTYPE; sources: { addr: number; lkey: number }[] };
}

export interface RecvWr { wrId: bigint | number; localAddr: number; length: number; lkey: number }

export interface Wc {
  wrId: bigint;
  status: keyof typeof STATUS;
  opcode: Opcode;
  byteLen: number;
  imm?: number;
  qpNum: number;
  /** when the NIC wrote the completion (ps of device time) */
  timePs: bigint;
}

export interface QpInit {
  sendCq: Cq;
  recvCq: Cq;
  maxSendWr: number;
  maxRecvWr: number;
  /** Engine that owns the QP (posts to it and rings its doorbells); the host when absent. */
  engine?: number;
  sqSigAll?: boolean;
}

// ---- argument checks: each returns the value or throws VerbsError naming `what`

const show = (v: unknown) => (typeof v === "bigint" ? `${v}n` : typeof v === "string" ? JSON.stringify(v) : String(v));

function checkInt(what: string, v: unknown, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max)
    throw new VerbsError(`${what} must be an integer ${min}..${max}, got ${show(v)}`);
  return v;
}

const checkU32 = (what: string, v: unknown) => checkInt(what, v, 0, U32_MAX);

/** A 64-bit address or length held in a number: any integer-valued double converts to BigInt exactly. */
function checkU64(what: string, v: unknown): bigint {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v >= U64_END)
    throw new VerbsError(`${what} must be an integer 0..2^64-1, got ${show(v)}`);
  return BigInt(v);
}

/** A work request id: a bigint below 2^64, or a number that is a safe integer (above 2^53 a number has already lost digits). */
function checkWrId(what: string, v: unknown): bigint {
  if (typeof v === "bigint" && v >= 0n && v < 1n << 64n) return v;
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  throw new VerbsError(`${what} must be a bigint 0..2^64-1 or a safe integer >= 0, got ${show(v)}`);
}

function checkBool(what: string, v: unknown): boolean {
  if (v !== undefined && typeof v !== "boolean") throw new VerbsError(`${what} must be a boolean, got ${show(v)}`);
  return v === true;
}

/** The value of `name` in an enumeration of layouts/verbs.json (own keys only: "toString" is no opcode). */
function checkName<E extends Record<string, number>>(what: string, table: E, name: unknown): E[keyof E] {
  if (typeof name !== "string" || !Object.hasOwn(table, name))
    throw new VerbsError(`${what} must be one of ${Object.keys(table).join(", ")}, got ${show(name)}`);
  return table[name as keyof E];
}

function checkArray(what: string, v: unknown): unknown[] {
  if (!Array.isArray(v)) throw new VerbsError(`${what} must be an array, got ${show(v)}`);
  return v;
}

function checkAlloc(what: string, bytes: number, alignment: number): void {
  checkInt(`${what}: bytes`, bytes, 1, Number.MAX_SAFE_INTEGER);
  checkInt(`${what}: alignment`, alignment, 1, MAX_ALIGNMENT);
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
function wqeFields(wr: unknown, what: string, queue?: "send" | "recv"): WqeFields {
  if (typeof wr !== "object" || wr === null) throw new VerbsError(`${what} must be a work request object, got ${show(wr)}`);
  const s = wr as Partial<SendWr>;
  if (queue === "send" && (s.opcode === undefined || s.opcode === ("RECV" as Opcode)))
    throw new VerbsError(`${what}.opcode must be a send opcode, got ${show(s.opcode)}`);
  if (queue === "recv" && s.opcode !== undefined && s.opcode !== "RECV")
    throw new VerbsError(`${what}.opcode: a receive work request has none, got ${show(s.opcode)}`);
  const f: WqeFields = {
    opcode: checkName(`${what}.opcode`, OPCODE, s.opcode ?? "RECV"),
    flags: (checkBool(`${what}.signaled`, s.signaled) ? WR_FLAG.SIGNALED : 0) | (checkBool(`${what}.fence`, s.fence) ? WR_FLAG.FENCE : 0),
    wrId: checkWrId(`${what}.wrId`, s.wrId),
    laddr: checkU64(`${what}.localAddr`, s.localAddr ?? 0),
    length: checkU32(`${what}.length`, s.length ?? 0),
    lkey: checkU32(`${what}.lkey`, s.lkey ?? 0),
    raddr: checkU64(`${what}.remoteAddr`, s.remoteAddr ?? 0),
    rkey: checkU32(`${what}.rkey`, s.rkey ?? 0),
    imm: checkU32(`${what}.imm`, s.imm ?? 0),
  };
  if (s.reduce !== undefined) {
    const r = s.reduce;
    if (typeof r !== "object" || r === null) throw new VerbsError(`${what}.reduce must be an object, got ${show(r)}`);
    const sources = checkArray(`${what}.reduce.sources`, r.sources).map((src, i) => {
      const w = `${what}.reduce.sources[${i}]`;
      if (typeof src !== "object" || src === null) throw new VerbsError(`${w} must be { addr, lkey }, got ${show(src)}`);
      const { addr, lkey } = src as { addr: unknown; lkey: unknown };
      // src_addr is 32 bits wide: sources are in HBM, below 2^32
      return { addr: checkU32(`${w}.addr`, addr), lkey: checkU32(`${w}.lkey`, lkey) };
    });
    f.reduce = {
      dtype: checkName(`${what}.reduce.dtype`, DTYPE, r.dtype),
      redop: checkName(`${what}.reduce.op`, REDUCE_OP, r.op),
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
  emitWqe(dv, off, wqeFields(wr, what), checkU32(`${what}: qpn`, qpn));
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

/** The verbs context of one device (ibv_open_device). */
export class Context {
  private hostTop = 0;
  private hbmLow: number;
  private scratch: number;
  /** Handles this context gave out and has not released, and those it has released. */
  private readonly live = new WeakMap<object, Kind>();
  private readonly released = new WeakMap<object, Kind>();

  private constructor(readonly device: Device) {
    this.hbmLow = device.hbmBytes;
    this.scratch = device.core.scratchAlloc(WQE.SIZE);
  }

  static async open(module: WebAssembly.Module, config: unknown = {}, options: DeviceOptions = {}): Promise<Context> {
    return new Context(await Device.create(module, config, options));
  }

  /** A context on an existing device (e.g. a restored one); its allocators start afresh. */
  static of(device: Device): Context {
    return new Context(device);
  }

  private get core() { return this.device.core; }
  private get h() { return this.device.handle; }

  /** `h` if it is a live handle of this context of kind `kind`; else VerbsError naming `what`. */
  private own<T extends Pd | Mr | Cq | Qp>(kind: Kind, h: T, what: string): T {
    if (this.live.get(h as object) === kind) return h;
    if (this.released.get(h as object) === kind) throw new VerbsError(`${what}: ${named(kind, h)} ${GONE[kind]}`);
    throw new VerbsError(`${what} is not a ${kind} of this context${typeof h === "object" && h !== null ? "" : ` (got ${show(h)})`}: pass the handle its create call returned`);
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

  /** DMA address of `bytes` of host memory (a bump allocator: the host's pinned buffers). */
  allocHostMemory(bytes: number, alignment = 64): number {
    checkAlloc("allocHostMemory", bytes, alignment);
    const at = align(this.hostTop, alignment);
    const hostBytes = Number(this.device.config.get("hostMemBytes"));
    if (at + bytes > hostBytes) throw new VerbsError(`allocHostMemory: host memory exhausted: ${bytes} B wanted, ${Math.max(0, hostBytes - at)} B left of hostMemBytes`);
    this.hostTop = at + bytes;
    return DMA.DMA_HOST + at;
  }

  /** DMA address of `bytes` of HBM, taken from the top down (firmware's .hbm data sits at the bottom). */
  allocHbm(bytes: number, alignment = 64): number {
    checkAlloc("allocHbm", bytes, alignment);
    const at = Math.floor((this.hbmLow - bytes) / alignment) * alignment;
    if (at < 0) throw new VerbsError(`allocHbm: HBM exhausted: ${bytes} B wanted, ${Math.max(0, this.hbmLow)} B left below the HBM already taken`);
    this.hbmLow = at;
    return REGIONS.HBM.base + at;
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

  /** A live view of DMA memory (host memory or HBM): the CPU's or a debugger's access. */
  view(addr: number, length: number): Uint8Array {
    const p = this.core.dmaAddr(this.h, checkU64("view: addr", addr), BigInt(checkInt("view: length", length, 0, Number.MAX_SAFE_INTEGER)));
    if (p === 0) throw new VerbsError(`view: [0x${addr.toString(16)}, +${length}) is not in host memory, HBM or engine SRAM`);
    return new Uint8Array(this.core.memory.buffer, p, length);
  }

  write(addr: number, bytes: Uint8Array): void { this.view(addr, bytes.length).set(bytes); }
  read(addr: number, length: number): Uint8Array { return this.view(addr, length).slice(); }

  allocPd(): Pd {
    const pd = this.core.pdAlloc(this.h);
    if (pd < 0) throw new VerbsError("allocPd: no free protection domain (maxPds)");
    return this.issue("PD", { handle: pd });
  }

  deallocPd(pd: Pd): void {
    this.own("PD", pd, "deallocPd: pd");
    if (!this.core.pdFree(this.h, pd.handle)) throw new VerbsError(`deallocPd: PD ${pd.handle} is in use by a region or QP`);
    this.release("PD", pd);
  }

  regMr(pd: Pd, addr: number, length: number, access: (keyof typeof ACCESS)[] = []): Mr {
    this.own("PD", pd, "regMr: pd");
    const base = checkU64("regMr: addr", addr), len = checkInt("regMr: length", length, 1, Number.MAX_SAFE_INTEGER);
    const flags = checkArray("regMr: access", access).reduce<number>((a, k, i) => a | checkName(`regMr: access[${i}]`, ACCESS, k), 0);
    const lkey = this.core.mrReg(this.h, pd.handle, base, BigInt(len), flags) >>> 0;
    if (lkey === 0) throw new VerbsError(`regMr: cannot register [0x${addr.toString(16)}, +${length}): outside host memory, HBM and engine SRAM, or no free region (maxMrs)`);
    return this.issue("MR", { addr, length, lkey, rkey: (lkey | REMOTE_KEY_BIT) >>> 0, pd });
  }

  deregMr(mr: Mr): void {
    this.own("MR", mr, "deregMr: mr");
    if (!this.core.mrDereg(this.h, mr.lkey)) throw new VerbsError(`deregMr: MR with lkey 0x${mr.lkey.toString(16)} is not registered`);
    this.release("MR", mr);
  }

  /**
   * A CQ of `depth` entries, owned by the host or by engine `opts.engine`. Its ring is allocated
   * (host memory for the host's, HBM for an engine's) unless `opts.ring` places it: a DMA address
   * of depth x 32 bytes, e.g. in the owner engine's SRAM (DMA.SRAM_BASE + engine x 0x0100_0000 +
   * offset), which is the cheap ring for firmware to poll. The ring is zeroed.
   */
  createCq(depth: number, opts: { engine?: number; ring?: number } = {}): Cq {
    checkInt("createCq: depth", depth, 1, MAX_CQ_DEPTH);
    const owner = this.checkEngine("createCq: opts.engine", opts.engine);
    return this.allocating(() => {
      const bytes = depth * CQE.SIZE;
      const ring = opts.ring !== undefined ? Number(checkU64("createCq: opts.ring", opts.ring)) : owner === OWNER_HOST ? this.allocHostMemory(bytes) : this.allocHbm(bytes);
      const cqn = this.core.cqCreate(this.h, BigInt(ring), depth, owner);
      if (cqn < 0) throw new VerbsError(`createCq: no free CQ (maxCqs)`);
      this.view(ring, bytes).fill(0); // no time has passed: the NIC has written nothing yet
      return this.issue("CQ", { cqn, depth, ring, owner, consumed: 0 });
    });
  }

  destroyCq(cq: Cq): void {
    this.own("CQ", cq, "destroyCq: cq");
    const r = this.core.cqDestroy(this.h, cq.cqn);
    if (r !== 0) throw new VerbsError(r === CMD_ERR.IN_USE ? `destroyCq: CQ ${cq.cqn} is still used by a QP` : `destroyCq: CQ ${cq.cqn} does not exist`);
    this.release("CQ", cq);
  }

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
      const qpn = this.core.qpCreate(this.h, pd.handle, init.sendCq.cqn, init.recvCq.cqn, BigInt(sqRing), sqDepth, BigInt(rqRing), rqDepth, owner, sigAll ? 1 : 0);
      if (qpn < 0) throw new VerbsError(`createQp: ${qpn === CMD_ERR.ARGUMENT ? "the NIC refused its rings or owner" : "no free QP (maxQps)"}`);
      return this.issue("QP", { qpn, pd, sendCq: init.sendCq, recvCq: init.recvCq, owner, sqDepth, rqDepth, sqRing, rqRing, sqPosted: 0, rqPosted: 0 });
    });
  }

  /**
   * ibv_modify_qp. At RTR, `destQpNum` names the destination QP; `destDevice` (default: this
   * device) the device it is on — another device makes the QP talk RoCEv2 through a port of
   * `portGroup` ("SCALE_UP", the default, or "SCALE_OUT").
   */
  modifyQp(qp: Qp, attr: { state: QpStateName; destQpNum?: number; destDevice?: number; portGroup?: keyof typeof PORT_GROUP }): void {
    this.own("QP", qp, "modifyQp: qp");
    if (typeof attr !== "object" || attr === null) throw new VerbsError(`modifyQp: attr must be an object, got ${show(attr)}`);
    const state = checkName(`modifyQp: QP ${qp.qpn}: attr.state`, QP_STATE, attr.state);
    const self = Number(this.device.config.get("deviceId"));
    const destDevice = attr.destDevice === undefined ? self : checkInt(`modifyQp: QP ${qp.qpn}: attr.destDevice`, attr.destDevice, 0, 0xffff);
    const maxQps = destDevice === self ? Number(this.device.config.get("maxQps")) : 1 << 24;
    const dest = attr.destQpNum === undefined ? U32_MAX : checkInt(`modifyQp: QP ${qp.qpn}: attr.destQpNum`, attr.destQpNum, 0, maxQps - 1);
    const group = checkName(`modifyQp: QP ${qp.qpn}: attr.portGroup`, PORT_GROUP, attr.portGroup ?? "SCALE_UP");
    if (state === QP_STATE.RTR && attr.destQpNum === undefined) throw new VerbsError(`modifyQp: QP ${qp.qpn}: RTR needs attr.destQpNum`);
    const r = this.core.qpModify(this.h, qp.qpn, state, dest, destDevice, group);
    if (r === CMD_ERR.TRANSITION) throw new VerbsError(`modifyQp: QP ${qp.qpn}: no transition from ${this.qpState(qp)} to ${attr.state}`);
    if (r === CMD_ERR.IN_USE) throw new VerbsError(`modifyQp: QP ${qp.qpn}: cannot move to ${attr.state} while a request is in flight`);
    if (r === CMD_ERR.ARGUMENT) throw new VerbsError(`modifyQp: QP ${qp.qpn}: port group ${attr.portGroup ?? "SCALE_UP"} has no ports (scaleUpPorts ${this.device.config.get("scaleUpPorts")} of ${this.device.config.get("ports")})`);
    if (r !== 0) throw new VerbsError(`modifyQp: QP ${qp.qpn}: modify to ${attr.state} failed (${r})`);
  }

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

  /** RoCEv2 payload bytes QP `qp` has moved: request packets sent (retransmissions included), and accepted in order as a responder. */
  qpBytes(qp: Qp): { tx: number; rx: number } {
    this.own("QP", qp, "qpBytes: qp");
    return { tx: this.core.qpTxBytes(this.h, qp.qpn), rx: this.core.qpRxBytes(this.h, qp.qpn) };
  }

  destroyQp(qp: Qp): void {
    this.own("QP", qp, "destroyQp: qp");
    if (this.core.qpDestroy(this.h, qp.qpn) !== 0) throw new VerbsError(`destroyQp: QP ${qp.qpn} does not exist`);
    this.release("QP", qp);
  }

  /**
   * Checks a batch of work requests for a host-owned QP and encodes them into one buffer: the
   * whole batch is known good before the first entry reaches the ring or the first doorbell.
   */
  private encodeBatch(call: string, qp: Qp, wrs: unknown, queue: "send" | "recv"): Uint8Array {
    this.own("QP", qp, `${call}: qp`);
    if (qp.owner !== OWNER_HOST) throw new VerbsError(`${call}: QP ${qp.qpn} belongs to engine ${qp.owner}: its firmware posts to it`);
    const list = checkArray(`${call}: QP ${qp.qpn}: wrs`, wrs);
    const out = new Uint8Array(list.length * WQE.SIZE);
    const dv = new DataView(out.buffer);
    const fields = list.map((wr, i) => wqeFields(wr, `${call}: QP ${qp.qpn}: wrs[${i}]`, queue));
    fields.forEach((f, i) => emitWqe(dv, i * WQE.SIZE, f, qp.qpn));
    return out;
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
    const cap = Number(this.device.config.get("hostDoorbellQueue"));
    if (n > cap) throw new VerbsError(`${call}: ${n} express entries need ${n} host doorbells, more than hostDoorbellQueue (${cap}): post fewer at a time`);
    const room = this.core.hostDoorbellRoom(this.h) >>> 0;
    if (n > room) throw new VerbsError(`${call}: ${cap - room} host doorbells are crossing PCIe (hostDoorbellQueue ${cap}) and ${n} more are wanted: advance time`);
  }

  /** Copies encoded entries into a host-memory ring from free-running index `from`. */
  private toRing(ring: number, depth: number, from: number, entries: Uint8Array): void {
    for (let k = 0; k < entries.length / WQE.SIZE; k++) {
      const slot = ring + (((from + k) >>> 0) % depth) * WQE.SIZE;
      this.view(slot, WQE.SIZE).set(entries.subarray(k * WQE.SIZE, (k + 1) * WQE.SIZE));
    }
  }

  /**
   * ibv_post_send: entries go into the ring and one classic doorbell announces them all, or each
   * goes through the express window. The doorbell writes leave the host at `opts.atPs` (default
   * now; not before now).
   */
  postSend(qp: Qp, wrs: SendWr[], opts: { doorbell?: "classic" | "express"; atPs?: bigint } = {}): void {
    const express = checkName("postSend: opts.doorbell", { classic: 0, express: 1 }, opts.doorbell ?? "classic") === 1;
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
  postRecv(qp: Qp, wrs: RecvWr[], opts: { atPs?: bigint } = {}): void {
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
    checkInt(`pollCq: CQ ${cq.cqn}: max`, max, 0, Number.MAX_SAFE_INTEGER);
    const out: Wc[] = [];
    const ring = this.view(cq.ring, cq.depth * CQE.SIZE);
    const dv = new DataView(ring.buffer, ring.byteOffset, ring.byteLength);
    while (out.length < max) {
      const off = (cq.consumed % cq.depth) * CQE.SIZE;
      const phase = Math.floor(cq.consumed / cq.depth) % 2 === 0 ? 1 : 0;
      if ((dv.getUint8(off + CQE.owner) & 1) !== phase || this.core.cqProduced(this.h, cq.cqn) === (cq.consumed >>> 0)) break;
      const flags = dv.getUint8(off + CQE.flags);
      out.push({
        wrId: dv.getBigUint64(off + CQE.wr_id, true),
        status: STATUS_NAMES[dv.getUint8(off + CQE.status)],
        opcode: OPCODE_NAMES[dv.getUint8(off + CQE.opcode)],
        byteLen: dv.getUint32(off + CQE.byte_len, true),
        ...(flags & 1 ? { imm: dv.getUint32(off + CQE.imm, true) } : {}),
        qpNum: dv.getUint32(off + CQE.qpn, true),
        timePs: dv.getBigUint64(off + CQE.timestamp, true),
      });
      cq.consumed++;
    }
    this.core.cqUpdateCi(this.h, cq.cqn, cq.consumed & 0xffff);
    if (out.length === 0 && this.core.cqOverrun(this.h, cq.cqn))
      throw new VerbsError(`pollCq: CQ ${cq.cqn} overran: a completion found it full, and the CQ is in the error state`);
    return out;
  }

  /** Advances simulated time (ps); returns the device time. */
  run(untilPs: bigint): bigint {
    return this.device.advance(untilPs);
  }

  get nowPs(): bigint { return this.device.nowPs; }
}

const align = (n: number, a: number) => Math.ceil(n / a) * a;

function named(kind: Kind, h: Pd | Mr | Cq | Qp): string {
  if (kind === "PD") return `PD ${(h as Pd).handle}`;
  if (kind === "MR") return `MR (lkey 0x${(h as Mr).lkey.toString(16)})`;
  if (kind === "CQ") return `CQ ${(h as Cq).cqn}`;
  return `QP ${(h as Qp).qpn}`;
}
