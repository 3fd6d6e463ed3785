// Verbs objects of the NIC as plain data in the arena: protection domains, memory regions,
// completion queues and queue pairs, in fixed-capacity tables. Keys and numbers are what the
// host and firmware hold; lookups check validity, generation and protection domain.
// DMA addresses are mem/dma.ts.

import { nicOf } from "./state";
import { Device } from "../core/device";
import { dmaPtr, dmaIsHbm } from "../mem/dma";
import { WQE_SIZE, CQE_SIZE, ACCESS_LOCAL_WRITE, ACCESS_REMOTE_WRITE, ACCESS_REMOTE_READ, OWNER_HOST, REMOTE_KEY_BIT, MAX_CQ_DEPTH } from "../generated/layouts";

export { OWNER_HOST, REMOTE_KEY_BIT };

@unmanaged export class Mr {
  base: u64;
  length: u64;
  lkey: u32;
  access: u32;
  pd: u32;
  valid: u32;
  gen: u32;
}

@unmanaged export class Cq {
  base: u64; // DMA address of the ring of CQE_SIZE entries
  depth: u32;
  pi: u32; // entries written (free-running)
  ci: u32; // entries consumed (free-running, from CQ_CI or the host)
  valid: u32;
  overrun: u32; // 1 once a completion found the ring full: the CQ is in error
  armEngine: u32; // engine to interrupt at the next completion, or NOT_ARMED
  owner: u32;
}
export const NOT_ARMED: u32 = 0xffffffff;

export const RANGES: u32 = 8;

/**
 * A queue pair: what every QP has, whatever transport (if any) carries it. A transport's record
 * of the QP lies in areas of the same slot this record reserves: the MetaRoCE-like transport's
 * stream state (metaroce/stream.ts, streamOf) in bytes QP_STREAM_OFFSET .., in the first cache
 * line; RoCEv2's (rocev2/qp.ts, rcOf) in bytes QP_RC_OFFSET .. to the end. nic/ reads neither
 * (transport.ts is its way in); a device's transport is the one that writes its area, the other
 * area stays zero.
 */
@unmanaged export class Qp {
  // what a packet of either transport reads and writes, first: the first 64 bytes are every field
  // the MetaRoCE-like transport touches per packet, the next 64 those both transports do (a
  // packet used to touch four of its lines: four cache misses once the device had been idle)
  valid: u32;
  state: u32; // QP_STATE_*
  remote: u32; // 1 when destDevice is another device
  destQpn: u32;
  // bytes 16 .. 55: the MetaRoCE-like transport's stream state, MrtStream (metaroce/stream.ts) overlays them
  private stream0: u64; private stream1: u64; private stream2: u64; private stream3: u64; private stream4: u64;
  // messages sent and not yet acknowledged (outstanding.ts)
  outHead: u32;
  outCount: u32;

  rtxActive: u32; // 1 while outstanding messages are being sent again
  rtxK: u32; // the outstanding message being sent again
  rtxPsn: u32; // and its next PSN
  outAcked: u32; // the oldest of them acknowledged, waiting for their completions to be visible
  // RoCEv2's alone (an RNR NAK holds the QP's packets until this time), but kept beside the rtx
  // fields above, which a RoCEv2 packet reads with it, rather than a line of RoCEv2's area
  holdUntil: u64;
  // what it moved, for observers (never read by the NIC itself)
  txBytes: u64; // requester: payload bytes of request packets sent, retransmissions included
  rxBytes: u64; // responder: payload bytes of request packets accepted in order (placed)
  // its queues
  sqBase: u64;
  rqBase: u64;
  announced: u32; // send entries the NIC knows of (free-running)
  sqCi: u32; // send entries completed, or the one executing (busy)

  pd: u32;
  sendCq: u32;
  recvCq: u32;
  owner: u32; // engine number or OWNER_HOST
  sigAll: u32;
  sqDepth: u32;
  rqDepth: u32;
  rqPi: u32; // receive entries posted
  rqCi: u32; // receive entries consumed
  busy: u32; // executing sqCi
  phase: u32; // NicPhase of the request in progress
  gen: u32; // invalidates events of an abandoned request
  retriesLeft: u32;
  status: u32; // the request's outcome so far
  waitBlock: u32; // reduction block this QP waits for, or NOT_ARMED
  waitFlow: u32; // 1 while its request waits for a free slot of the HBM flow table
  startNextPending: u32; // 1 while a NicStartNext event is scheduled for it
  nranges: u32;
  rnrLeft: u32;
  reqFlags: u32;
  reqBlock: u32;
  reqBytes: u64; // HBM bytes the request streams
  reqLen: u64;

  // the path, set at RTR: a QP whose destination is another device talks to it through a port
  destDevice: u32; // the destination QP's device (cfg.deviceId: this one, over loopback)
  port: u32; // the port it sends on (in its port group)
  group: u32; // PORT_GROUP_*: its port group (a re-split moves it to a port of the group's new ports)
  lane: u32; // its port's index in the group, modulo the group's size (PORT_LANE_AUTO: from the QP numbers)
  // the request's packet sequence (requester.ts; both transports: a MetaRoCE-like stream's SSNs are these PSNs)
  sqPsn: u32; // the PSN the next message starts at
  msgPsn: u32; // the current message's first PSN
  msgLastPsn: u32; // and its last
  msgPsnSet: u32; // 1 once the current request has its PSNs (a retry sends the same ones)
  // bytes 264 .. 459: RoCEv2's record of the QP, RcQp (rocev2/qp.ts) overlays them
  private rc0: u64; private rc1: u64; private rc2: u64; private rc3: u64; private rc4: u64; private rc5: u64;
  private rc6: u64; private rc7: u64; private rc8: u64; private rc9: u64; private rc10: u64; private rc11: u64;
  private rc12: u64; private rc13: u64; private rc14: u64; private rc15: u64; private rc16: u64; private rc17: u64;
  private rc18: u64; private rc19: u64; private rc20: u64; private rc21: u64; private rc22: u64; private rc23: u64;
  private rc24: u32;
}

// Per-QP extra blocks live beside the table: RANGES x 16 bytes of (end u32, pad, time u64),
// and the copy of the request being executed (WQE_SIZE bytes).
export const QP_RANGE_BYTES: usize = <usize>RANGES * 16;

@inline export function mrAt(dev: Device, i: u32): Mr { return changetype<Mr>(nicOf(dev).mrs + <usize>i * MR_STRIDE); }
@inline export function cqAt(dev: Device, i: u32): Cq { return changetype<Cq>(nicOf(dev).cqs + <usize>i * CQ_STRIDE); }
@inline export function qpAt(dev: Device, i: u32): Qp {
  // the layout the per-packet cache-line work found (docs/performance.md): a change is a decision
  if (QP_STRIDE != 464 || QP_STREAM_OFFSET != 16 || QP_RC_OFFSET != 264) ERROR("the Qp slot's layout changed: 464 bytes, the stream area at 16, RoCEv2's at 264");
  return changetype<Qp>(nicOf(dev).qps + <usize>i * QP_STRIDE);
}
export const MR_STRIDE: usize = (offsetof<Mr>() + 7) & ~(<usize>7);
export const CQ_STRIDE: usize = (offsetof<Cq>() + 7) & ~(<usize>7);
export const QP_STRIDE: usize = (offsetof<Qp>() + 7) & ~(<usize>7);
/** The areas of a QP's slot a transport's record overlays (Qp): the stream area, in its first cache line... */
export const QP_STREAM_OFFSET: usize = offsetof<Qp>("stream0");
export const QP_STREAM_BYTES: usize = offsetof<Qp>("outHead") - QP_STREAM_OFFSET;
/** ...and RoCEv2's area, the rest of the slot. */
export const QP_RC_OFFSET: usize = offsetof<Qp>("rc0");
export const QP_RC_BYTES: usize = offsetof<Qp>() - QP_RC_OFFSET;

/** Wasm address of send-queue entry `i` (free-running index) of QP `q`. */
@inline export function sqSlot(dev: Device, q: Qp, i: u32): usize {
  return dmaPtr(dev, q.sqBase + <u64>(i % q.sqDepth) * WQE_SIZE, WQE_SIZE);
}

/** Wasm address of receive-queue entry `i` (free-running index) of QP `q`. */
@inline export function rqSlot(dev: Device, q: Qp, i: u32): usize {
  return dmaPtr(dev, q.rqBase + <u64>(i % q.rqDepth) * WQE_SIZE, WQE_SIZE);
}

@inline export function qpRanges(dev: Device, qpn: u32): usize { return nicOf(dev).qpRanges + <usize>qpn * QP_RANGE_BYTES; }
@inline export function qpWqe(dev: Device, qpn: u32): usize { return nicOf(dev).qpWqes + <usize>qpn * WQE_SIZE; }

// ---- protection domains

// Ownership: every PD, CQ and QP has an owner, the host (OWNER_HOST) or one engine; a region
// belongs to the owner of its PD. Firmware's verbs commands act only on their engine's own
// objects (nic-cmd.ts); the host, as the driver, may act on any.

/** Allocates a PD for `owner` (an engine or OWNER_HOST); -1 when none is free. */
export function pdAlloc(dev: Device, owner: u32): i32 {
  for (let i: u32 = 0; i < dev.cfg.maxPds; i++) {
    const p = nicOf(dev).pds + (<usize>i << 2);
    if (load<u32>(p) == 0) { store<u32>(p, owner + 1); return <i32>i; }
  }
  return -1;
}

/** Frees a PD; false while a region or QP still uses it. */
export function pdFree(dev: Device, pd: u32): bool {
  if (!pdValid(dev, pd)) return false;
  for (let i: u32 = 0; i < dev.cfg.maxMrs; i++) if (mrAt(dev, i).valid && mrAt(dev, i).pd == pd) return false;
  for (let i: u32 = 0; i < dev.cfg.maxQps; i++) if (qpAt(dev, i).valid && qpAt(dev, i).pd == pd) return false;
  store<u32>(nicOf(dev).pds + (<usize>pd << 2), 0);
  return true;
}

@inline export function pdValid(dev: Device, pd: u32): bool {
  return pd < dev.cfg.maxPds && load<u32>(nicOf(dev).pds + (<usize>pd << 2)) != 0;
}

/** Is `pd` a PD of `owner`? */
@inline export function pdOwnedBy(dev: Device, pd: u32, owner: u32): bool {
  return pdValid(dev, pd) && load<u32>(nicOf(dev).pds + (<usize>pd << 2)) == owner + 1;
}

// ---- memory regions: lkey = index << 8 | generation (1..255); rkey = lkey | REMOTE_KEY_BIT

/** Registers [base, base + length) of DMA memory; returns the lkey, or 0 on failure. */
export function mrReg(dev: Device, pd: u32, base: u64, length: u64, access: u32): u32 {
  // (HBM without bytes, config hbmBacking 0, takes regions too: timing mode bounds them)
  if (!pdValid(dev, pd) || length == 0 || (dmaPtr(dev, base, length) == 0 && !dmaIsHbm(dev, base, length))) return 0;
  if (access & ~(ACCESS_LOCAL_WRITE | ACCESS_REMOTE_WRITE | ACCESS_REMOTE_READ)) return 0;
  for (let i: u32 = 0; i < dev.cfg.maxMrs; i++) {
    const m = mrAt(dev, i);
    if (m.valid) continue;
    m.gen = m.gen % 255 + 1;
    m.valid = 1;
    m.base = base;
    m.length = length;
    m.access = access;
    m.pd = pd;
    m.lkey = (i << 8) | m.gen;
    return m.lkey;
  }
  return 0;
}

/** The region an lkey (or rkey) names, or null when it names none. */
export function mrOf(dev: Device, key: u32): Mr | null {
  const i = (key & ~REMOTE_KEY_BIT) >> 8;
  if (i >= dev.cfg.maxMrs) return null;
  const m = mrAt(dev, i);
  return m.valid && m.lkey == (key & ~REMOTE_KEY_BIT) ? m : null;
}

export function mrDereg(dev: Device, lkey: u32): bool {
  const m = mrOf(dev, lkey);
  if (m == null) return false;
  m.valid = 0;
  return true;
}

/**
 * The region a key names, if the key is valid for this use (remote keys only for remote
 * access and the reverse), belongs to `pd`, covers [addr, addr + len) and grants `need`.
 * Zero-length accesses need no region (IB spec 10.6.3.1: keys are not checked) and pass.
 */
export function mrCheck(dev: Device, key: u32, remote: bool, pd: u32, addr: u64, len: u64, need: u32): bool {
  if (len == 0) return true;
  if (((key & REMOTE_KEY_BIT) != 0) != remote) return false;
  const i = (key & ~REMOTE_KEY_BIT) >> 8;
  if (i >= dev.cfg.maxMrs) return false;
  const m = mrAt(dev, i);
  if (!m.valid || m.lkey != (key & ~REMOTE_KEY_BIT) || m.pd != pd) return false;
  if (addr < m.base || len > m.length || addr - m.base > m.length - len) return false;
  return (m.access & need) == need;
}

// ---- completion queues

export function cqCreate(dev: Device, base: u64, depth: u32, owner: u32): i32 {
  if (depth == 0 || depth > MAX_CQ_DEPTH || dmaPtr(dev, base, <u64>depth * CQE_SIZE) == 0) return -1;
  for (let i: u32 = 0; i < dev.cfg.maxCqs; i++) {
    const c = cqAt(dev, i);
    if (c.valid) continue;
    c.valid = 1;
    c.base = base;
    c.depth = depth;
    c.pi = 0;
    c.ci = 0;
    c.overrun = 0;
    c.armEngine = NOT_ARMED;
    c.owner = owner;
    return <i32>i;
  }
  return -1;
}

/** Consumer index from a 16-bit update: the entries before it may be reused. */
export function cqSetCi(dev: Device, cqn: u32, ci16: u32): void {
  if (cqn >= dev.cfg.maxCqs) return;
  const c = cqAt(dev, cqn);
  if (!c.valid) return;
  const ci = c.ci + ((ci16 - c.ci) & 0xffff);
  if (ci - c.ci <= c.pi - c.ci) c.ci = ci;
}
