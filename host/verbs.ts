// The verbs API of the host, with ibverbs' names and semantics (ibv_alloc_pd, ibv_reg_mr,
// ibv_create_cq, ibv_create_qp, ibv_modify_qp, ibv_post_send, ibv_post_recv, ibv_poll_cq, ...).
// Queues and completion rings of host-owned objects live in host memory, which the NIC reaches
// over PCIe; engine-owned ones live in HBM. Posting writes entries into the ring (the CPU's
// own writes cost no simulated time) and rings a classic doorbell, or sends each entry through
// the express window. Platform-neutral.

import { Device, type DeviceOptions } from "./device.js";
import { OPCODE, WR_FLAG, STATUS, ACCESS, QP_STATE, REDUCE_OP, DTYPE, WQE, CQE, DMA, REGIONS } from "./generated/layouts.js";

export class VerbsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "VerbsError";
  }
}

export type Opcode = keyof typeof OPCODE;
export type QpStateName = keyof typeof QP_STATE;
const OWNER_HOST = 0xffff;
const STATUS_NAMES = Object.fromEntries(Object.entries(STATUS).map(([k, v]) => [v, k])) as Record<number, keyof typeof STATUS>;
const OPCODE_NAMES = Object.fromEntries(Object.entries(OPCODE).map(([k, v]) => [v, k])) as Record<number, Opcode>;

export interface Pd { readonly handle: number }
export interface Mr { readonly addr: number; readonly length: number; readonly lkey: number; readonly rkey: number; readonly pd: Pd }
export interface Cq { readonly cqn: number; readonly depth: number; readonly ring: number; readonly owner: number; consumed: number }
export interface Qp {
  readonly qpn: number; readonly pd: Pd; readonly sendCq: Cq; readonly recvCq: Cq; readonly owner: number;
  readonly sqDepth: number; readonly rqDepth: number; readonly sqRing: number; readonly rqRing: number;
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

const align = (n: number, a: number) => Math.ceil(n / a) * a;

/** Encodes one WQE into `dv` at `off` (the layout of layouts/verbs.json). */
export function encodeWqe(dv: DataView, off: number, wr: SendWr | (RecvWr & { opcode?: "RECV" }), qpn: number): void {
  new Uint8Array(dv.buffer, dv.byteOffset + off, WQE.SIZE).fill(0);
  const op = OPCODE[(wr.opcode ?? "RECV") as Opcode];
  if (op === undefined) throw new VerbsError(`unknown opcode ${String(wr.opcode)}`);
  const s = wr as SendWr;
  dv.setUint8(off + WQE.opcode, op);
  dv.setUint8(off + WQE.flags, (s.signaled ? WR_FLAG.SIGNALED : 0) | (s.fence ? WR_FLAG.FENCE : 0));
  dv.setUint32(off + WQE.qpn, qpn, true);
  dv.setBigUint64(off + WQE.wr_id, BigInt(wr.wrId), true);
  dv.setBigUint64(off + WQE.laddr, BigInt(s.localAddr ?? 0), true);
  dv.setUint32(off + WQE.length, s.length ?? 0, true);
  dv.setUint32(off + WQE.lkey, s.lkey ?? 0, true);
  dv.setBigUint64(off + WQE.raddr, BigInt(s.remoteAddr ?? 0), true);
  dv.setUint32(off + WQE.rkey, s.rkey ?? 0, true);
  dv.setUint32(off + WQE.imm, s.imm ?? 0, true);
  if (s.reduce) {
    dv.setUint8(off + WQE.dtype, DTYPE[s.reduce.dtype]);
    dv.setUint8(off + WQE.redop, REDUCE_OP[s.reduce.op]);
    dv.setUint8(off + WQE.nsrc, s.reduce.sources.length);
    // more than 8 sources do not fit the entry: the count says so and the NIC rejects it
    s.reduce.sources.slice(0, 8).forEach((src, i) => {
      dv.setUint32(off + WQE.src_addr + 8 * i, src.addr, true);
      dv.setUint32(off + WQE.src_lkey + 8 * i, src.lkey, true);
    });
  }
}

/** The verbs context of one device (ibv_open_device). */
export class Context {
  private hostTop = 0;
  private hbmLow: number;
  private scratch: number;

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

  /** DMA address of `bytes` of host memory (a bump allocator: the host's pinned buffers). */
  allocHostMemory(bytes: number, alignment = 64): number {
    const at = align(this.hostTop, alignment);
    const hostBytes = Number(this.device.config.get("hostMemBytes"));
    if (at + bytes > hostBytes) throw new VerbsError(`host memory exhausted: ${bytes} B wanted, ${hostBytes - at} B left of hostMemBytes`);
    this.hostTop = at + bytes;
    return DMA.DMA_HOST + at;
  }

  /** DMA address of `bytes` of HBM, taken from the top down (firmware's .hbm data sits at the bottom). */
  allocHbm(bytes: number, alignment = 64): number {
    const at = Math.floor((this.hbmLow - bytes) / alignment) * alignment;
    if (at < 0) throw new VerbsError(`HBM exhausted: ${bytes} B wanted`);
    this.hbmLow = at;
    return REGIONS.HBM.base + at;
  }

  /** A live view of DMA memory (host memory or HBM): the CPU's or a debugger's access. */
  view(addr: number, length: number): Uint8Array {
    const p = this.core.dmaAddr(this.h, BigInt(addr), BigInt(length));
    if (p === 0) throw new VerbsError(`[0x${addr.toString(16)}, +${length}) is not in host memory or HBM`);
    return new Uint8Array(this.core.memory.buffer, p, length);
  }

  write(addr: number, bytes: Uint8Array): void { this.view(addr, bytes.length).set(bytes); }
  read(addr: number, length: number): Uint8Array { return this.view(addr, length).slice(); }

  allocPd(): Pd {
    const pd = this.core.pdAlloc(this.h);
    if (pd < 0) throw new VerbsError("no free protection domain (maxPds)");
    return { handle: pd };
  }

  deallocPd(pd: Pd): void {
    if (!this.core.pdFree(this.h, pd.handle)) throw new VerbsError(`PD ${pd.handle} is in use or not allocated`);
  }

  regMr(pd: Pd, addr: number, length: number, access: (keyof typeof ACCESS)[] = []): Mr {
    const flags = access.reduce((a, k) => a | ACCESS[k], 0);
    const lkey = this.core.mrReg(this.h, pd.handle, BigInt(addr), BigInt(length), flags) >>> 0;
    if (lkey === 0) throw new VerbsError(`cannot register [0x${addr.toString(16)}, +${length}): bad PD, outside host memory and HBM, or no free region (maxMrs)`);
    return { addr, length, lkey, rkey: (lkey | 0x80000000) >>> 0, pd };
  }

  deregMr(mr: Mr): void {
    if (!this.core.mrDereg(this.h, mr.lkey)) throw new VerbsError(`MR with lkey 0x${mr.lkey.toString(16)} is not registered`);
  }

  createCq(depth: number, opts: { engine?: number } = {}): Cq {
    const owner = opts.engine ?? OWNER_HOST;
    const ring = owner === OWNER_HOST ? this.allocHostMemory(depth * CQE.SIZE) : this.allocHbm(depth * CQE.SIZE);
    this.view(ring, depth * CQE.SIZE).fill(0);
    const cqn = this.core.cqCreate(this.h, BigInt(ring), depth, owner);
    if (cqn < 0) throw new VerbsError(`cannot create a CQ of depth ${depth} (1..65536, maxCqs)`);
    return { cqn, depth, ring, owner, consumed: 0 };
  }

  destroyCq(cq: Cq): void {
    const r = this.core.cqDestroy(this.h, cq.cqn);
    if (r !== 0) throw new VerbsError(r === -3 ? `CQ ${cq.cqn} is still used by a QP` : `CQ ${cq.cqn} does not exist`);
  }

  createQp(pd: Pd, init: QpInit): Qp {
    const owner = init.engine ?? OWNER_HOST;
    const alloc = (n: number) => (owner === OWNER_HOST ? this.allocHostMemory(n) : this.allocHbm(n));
    const sqRing = alloc(init.maxSendWr * WQE.SIZE), rqRing = alloc(init.maxRecvWr * WQE.SIZE);
    const qpn = this.core.qpCreate(this.h, pd.handle, init.sendCq.cqn, init.recvCq.cqn, BigInt(sqRing), init.maxSendWr,
      BigInt(rqRing), init.maxRecvWr, owner, init.sqSigAll ? 1 : 0);
    if (qpn < 0) throw new VerbsError(`cannot create QP: ${qpn === -4 ? "depths must be 1..32768 and the owner an engine" : "bad PD or CQ, or no free QP (maxQps)"}`);
    return { qpn, pd, sendCq: init.sendCq, recvCq: init.recvCq, owner, sqDepth: init.maxSendWr, rqDepth: init.maxRecvWr, sqRing, rqRing, sqPosted: 0, rqPosted: 0 };
  }

  modifyQp(qp: Qp, attr: { state: QpStateName; destQpNum?: number }): void {
    const r = this.core.qpModify(this.h, qp.qpn, QP_STATE[attr.state], attr.destQpNum ?? 0xffffffff);
    if (r === -2) throw new VerbsError(`QP ${qp.qpn}: no transition from ${this.qpState(qp)} to ${attr.state}`);
    if (r === -4) throw new VerbsError(`QP ${qp.qpn}: RTR needs destQpNum`);
    if (r !== 0) throw new VerbsError(`QP ${qp.qpn}: modify failed (${r})`);
  }

  qpState(qp: Qp): QpStateName {
    const v = this.core.qpState(this.h, qp.qpn);
    return (Object.entries(QP_STATE).find(([, s]) => s === v)?.[0] ?? "RESET") as QpStateName;
  }

  destroyQp(qp: Qp): void {
    if (this.core.qpDestroy(this.h, qp.qpn) !== 0) throw new VerbsError(`QP ${qp.qpn} does not exist`);
  }

  /** ibv_post_send: entries go into the ring and one classic doorbell announces them all, or each goes through the express window. */
  postSend(qp: Qp, wrs: SendWr[], opts: { doorbell?: "classic" | "express" } = {}): void {
    if (qp.owner !== OWNER_HOST) throw new VerbsError(`QP ${qp.qpn} belongs to engine ${qp.owner}: its firmware posts to it`);
    // room is counted on the host: entries whose doorbell is still crossing PCIe take room too
    if (wrs.length > qp.sqDepth - ((qp.sqPosted - this.core.qpSqDone(this.h, qp.qpn)) >>> 0)) throw new VerbsError(`QP ${qp.qpn}: send queue full (${qp.sqDepth} entries)`);
    if ((this.core.hostDoorbellRoom(this.h) >>> 0) < (opts.doorbell === "express" ? wrs.length : 1)) throw new VerbsError("every host doorbell slot is crossing PCIe (hostDoorbellQueue): advance time");
    if (opts.doorbell === "express") {
      const dv = new DataView(this.core.memory.buffer);
      for (const wr of wrs) {
        encodeWqe(dv, this.scratch, wr, qp.qpn);
        this.core.hostExpress(this.h, this.scratch);
        qp.sqPosted++;
      }
      return;
    }
    for (const wr of wrs) {
      const slot = qp.sqRing + (qp.sqPosted % qp.sqDepth) * WQE.SIZE;
      const v = this.view(slot, WQE.SIZE);
      encodeWqe(new DataView(v.buffer, v.byteOffset, WQE.SIZE), 0, wr, qp.qpn);
      qp.sqPosted++;
    }
    this.core.hostSqDoorbell(this.h, qp.qpn, qp.sqPosted & 0xffff);
  }

  /** ibv_post_recv. */
  postRecv(qp: Qp, wrs: RecvWr[]): void {
    if (wrs.length > qp.rqDepth - ((qp.rqPosted - this.core.qpRqDone(this.h, qp.qpn)) >>> 0)) throw new VerbsError(`QP ${qp.qpn}: receive queue full (${qp.rqDepth} entries)`);
    if ((this.core.hostDoorbellRoom(this.h) >>> 0) < 1) throw new VerbsError("every host doorbell slot is crossing PCIe (hostDoorbellQueue): advance time");
    for (const wr of wrs) {
      const slot = qp.rqRing + (qp.rqPosted % qp.rqDepth) * WQE.SIZE;
      const v = this.view(slot, WQE.SIZE);
      encodeWqe(new DataView(v.buffer, v.byteOffset, WQE.SIZE), 0, { ...wr, opcode: "RECV" }, qp.qpn);
      qp.rqPosted++;
    }
    this.core.hostRqDoorbell(this.h, qp.qpn, qp.rqPosted & 0xffff);
  }

  /** ibv_poll_cq: up to `max` new completions. Throws when the CQ has overrun and nothing is left to read. */
  pollCq(cq: Cq, max = 16): Wc[] {
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
      });
      cq.consumed++;
    }
    this.core.cqUpdateCi(this.h, cq.cqn, cq.consumed & 0xffff);
    if (out.length === 0 && this.core.cqOverrun(this.h, cq.cqn))
      throw new VerbsError(`CQ ${cq.cqn} overran: a completion found it full, and the CQ is in the error state`);
    return out;
  }

  /** Advances simulated time (ps); returns the device time. */
  run(untilPs: bigint): bigint {
    return this.device.advance(untilPs);
  }

  get nowPs(): bigint { return this.device.nowPs; }
}
