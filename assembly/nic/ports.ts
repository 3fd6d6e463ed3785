// The NIC's Ethernet ports and the device/fabric boundary. Packets leave through the transmit
// ring and arrive through the receive ring, both of PKT records (layouts/device.json): a
// descriptor and the frame's first bytes, the rest of a full-mode frame (payload, pad, ICRC) in
// the ring's body area. The host drains the transmit ring and fills the receive ring a window
// at a time (a few calls, no call per packet). Each port serialises one frame at a time at
// portGbps; which QP sends next is the transports' business (nic/transport.ts: rocev2/tx.ts, metaroce/tx.ts),
// this file keeps the state.
//
// Addresses: port p of device d is 10.p.(d >> 8).(d & 255), MAC 02:00 followed by the address
// (host/fabric/topology.ts has the same rule; a test holds them together).

import { Device, Config, statAdd } from "../core/device";
import { NEVER } from "../core/time";
import { copyBytes } from "../core/copy";
import { schedule, unschedule, EventKind } from "../core/sched";
import {
  PKT_SIZE, PKT_HDR, PKT_TIME_PS, PKT_WIRE_LEN, PKT_PORT, PKT_HDR_LEN, PKT_BODY_LEN, PKT_BODY_OFF, PKT_SEQ, PKT_SRC_DEVICE,
  STAT_PORT_TX_RING_FULL, STAT_PORT_TX_PACKETS, STAT_PORT_TX_BYTES, STAT_PORT_PFC_PAUSES, WIRE_OVERHEAD_BYTES,
  PORT_GROUP_SCALE_UP, PORT_GROUP_SCALE_OUT,
} from "../generated/layouts";

/** Bytes a frame also takes on the wire: preamble and start delimiter (8), FCS (4), gap (12). */
export const WIRE_OVERHEAD: u32 = WIRE_OVERHEAD_BYTES;
/** The largest frame the NIC builds: headers (at most 74 B), an MTU of payload, pad and ICRC. */
export const FRAME_MAX: u32 = 4096 + 128;
/** Header bytes a record holds inline (PKT.hdr). */
export const HDR_MAX: u32 = PKT_SIZE - PKT_HDR;

/** One port's transmitter: when it is free, and the QPs waiting to send on it. */
@unmanaged export class Port {
  busyUntil: u64; // when its current frame's last bit has left
  dataHead: u32; // QPs with request packets to send: a list through RcQp.txNext (qpn + 1; 0 ends it)
  dataTail: u32;
  respHead: u32; // QPs with an answer to send (ACK, NAK, READ response): a list through RcQp.respNext
  respTail: u32;
  txPending: u32; // 1 while a PortTx event is pending for it (one at most)
  wakeAt: u64; // that event's time
  blocked: u32; // 1 while the transmit ring is full: the host's drain restarts it
  paused: u32; // 1 while its link partner's PFC pause holds it: it starts no frame (portPause)
}

export const PORT_STRIDE: usize = (offsetof<Port>() + 15) & ~(<usize>15);

/** A ring of PKT records and the byte area their bodies occupy, both consumed in order. */
@unmanaged export class PktRing {
  recs: usize;
  head: u32;
  count: u32;
  cap: u32;
  seq: u32; // records ever appended (the transmit ring's sequence numbers)
  body: usize;
  bodyCap: u32;
  bodyHead: u32; // offset of the oldest live body byte
  bodyTail: u32; // where the next body goes
  bodyUsed: u32; // bytes in use, counting the end of the area skipped at a wrap
}

@unmanaged export class Ports {
  port: usize; // cfg.ports Port records
  tx: usize; // PktRing: the device's packets for the host
  rx: usize; // PktRing: arrived packets, in arrival order
  stage: usize; // where the host writes a batch of arrivals: rxRingEntries records
  stageBody: usize; // and their bodies: rxBodyBytes
  frame: usize; // FRAME_MAX bytes: the frame being built or parsed
  frameHdrLen: u32; // bytes of headers in the frame just built
  rxEventAt: u64; // time of the pending RxArrive event, or NEVER
  bytesPerPs: f64; // portGbps
}

@inline export function portsOf(dev: Device): Ports { return changetype<Ports>(dev.ports); }
@inline export function portAt(dev: Device, p: u32): Port { return changetype<Port>(portsOf(dev).port + <usize>p * PORT_STRIDE); }
@inline export function txRing(dev: Device): PktRing { return changetype<PktRing>(portsOf(dev).tx); }
@inline export function rxRing(dev: Device): PktRing { return changetype<PktRing>(portsOf(dev).rx); }

@inline function align16(n: usize): usize { return (n + 15) & ~(<usize>15); }
const RING_BYTES: usize = align16(offsetof<PktRing>());

/** Arena bytes of the ports' state for config `c`. */
export function portsBytes(c: Config): usize {
  const bodies = c.timingMode != 0 ? 0 : <usize>c.txBodyBytes + 2 * <usize>c.rxBodyBytes;
  return align16(offsetof<Ports>()) + <usize>c.ports * PORT_STRIDE + 2 * RING_BYTES
    + (<usize>c.txRingEntries + 2 * <usize>c.rxRingEntries) * <usize>PKT_SIZE + bodies + <usize>FRAME_MAX;
}

function ringInit(r: PktRing, recs: usize, cap: u32, body: usize, bodyCap: u32): void {
  r.recs = recs;
  r.cap = cap;
  r.body = body;
  r.bodyCap = bodyCap;
}

/** Lays the ports' state out at `base` (16-byte aligned, portsBytes long, zeroed). */
export function portsInit(dev: Device, base: usize): void {
  const c = dev.cfg;
  const s = changetype<Ports>(base);
  dev.ports = base;
  let off = base + align16(offsetof<Ports>());
  s.port = off; off += <usize>c.ports * PORT_STRIDE;
  s.tx = off; off += RING_BYTES;
  s.rx = off; off += RING_BYTES;
  const txRecs = off; off += <usize>c.txRingEntries * <usize>PKT_SIZE;
  const rxRecs = off; off += <usize>c.rxRingEntries * <usize>PKT_SIZE;
  s.stage = off; off += <usize>c.rxRingEntries * <usize>PKT_SIZE;
  const full = c.timingMode == 0;
  const txBody = off; if (full) off += <usize>c.txBodyBytes;
  const rxBody = off; if (full) off += <usize>c.rxBodyBytes;
  s.stageBody = off; if (full) off += <usize>c.rxBodyBytes;
  s.frame = off;
  ringInit(changetype<PktRing>(s.tx), txRecs, c.txRingEntries, txBody, full ? c.txBodyBytes : 0);
  ringInit(changetype<PktRing>(s.rx), rxRecs, c.rxRingEntries, rxBody, full ? c.rxBodyBytes : 0);
  s.rxEventAt = NEVER;
  s.bytesPerPs = <f64>c.portGbps / 8000;
}

/** IPv4 address of port `port` of device `device`: 10.port.(device >> 8).(device & 255). */
@inline export function portIpv4(device: u32, port: u32): u32 {
  return (10 << 24) | ((port & 0xff) << 16) | (device & 0xffff);
}

/** The MAC of an address: 02:00 followed by the four bytes of the IPv4 address. */
@inline export function macOf(ip: u32): u64 {
  return 0x020000000000 | <u64>ip;
}

/** Picoseconds a frame of `wireLen` bytes occupies its port (preamble, FCS and gap included). */
@inline export function framePs(dev: Device, wireLen: u32): u64 {
  return <u64>Math.ceil(<f64>(wireLen + WIRE_OVERHEAD) / portsOf(dev).bytesPerPs);
}

// ---- the rings

/** Address of record `k` (0 = oldest) of ring `r`. */
@inline export function ringRec(r: PktRing, k: u32): usize {
  let slot = r.head + k;
  if (slot >= r.cap) slot -= r.cap;
  return r.recs + <usize>slot * <usize>PKT_SIZE;
}

/** Takes `len` bytes of `r`'s body area after the newest body; their offset, or -1 when there is no room. */
export function bodyAlloc(r: PktRing, len: u32): i64 {
  if (len == 0) return 0;
  if (r.bodyUsed == 0) { r.bodyHead = 0; r.bodyTail = 0; }
  if (r.bodyUsed + len > r.bodyCap) return -1;
  if (r.bodyTail >= r.bodyHead) {
    // free: [tail, cap) and [0, head)
    if (r.bodyCap - r.bodyTail >= len) {
      const at = r.bodyTail;
      r.bodyTail += len;
      r.bodyUsed += len;
      return <i64>at;
    }
    if (r.bodyHead < len) return -1;
    r.bodyUsed += r.bodyCap - r.bodyTail + len; // the end of the area is skipped
    r.bodyTail = len;
    return 0;
  }
  if (r.bodyHead - r.bodyTail < len) return -1;
  const at = r.bodyTail;
  r.bodyTail += len;
  r.bodyUsed += len;
  return <i64>at;
}

/** Frees the body of the oldest record (`off`, `len`), which is the oldest body. */
export function bodyFree(r: PktRing, off: u32, len: u32): void {
  if (len == 0) return;
  if (off < r.bodyHead) {
    // it wrapped: the skipped end of the area frees with it
    r.bodyUsed -= r.bodyCap - r.bodyHead;
    r.bodyHead = 0;
  }
  r.bodyHead = off + len;
  r.bodyUsed -= len;
}

/**
 * Drops the `n` oldest records of ring `r` and frees their bodies. An emptied ring starts again
 * at its first record: a ring that empties every window (the transmit ring the cluster drains,
 * the receive ring a device works through) then reuses the same few records, still in cache,
 * instead of walking all of its 2,048 (256 KiB) through it.
 */
export function ringConsume(r: PktRing, n: u32): void {
  if (r.bodyUsed == 0) {
    // no record holds a body (timing mode, or none sent): nothing to free, the head just moves
    const m = n < r.count ? n : r.count;
    const head = r.head + m;
    r.head = head >= r.cap ? head - r.cap : head;
    r.count -= m;
  } else {
    for (let k: u32 = 0; k < n && r.count > 0; k++) {
      const p = ringRec(r, 0);
      bodyFree(r, load<u32>(p, 20), load<u32>(p, 16));
      r.head = r.head + 1 == r.cap ? 0 : r.head + 1;
      r.count--;
    }
  }
  if (r.count == 0) r.head = 0;
}

/** Is there room in the transmit ring for a frame with a body of `bodyLen` bytes? Counts it when not. */
export function txRoom(dev: Device, bodyLen: u32): bool {
  const r = txRing(dev);
  if (r.count < r.cap && (bodyLen == 0 || bodyFits(r, bodyLen))) return true;
  statAdd(dev, STAT_PORT_TX_RING_FULL, 1);
  return false;
}

/** Would bodyAlloc(r, len) succeed? */
function bodyFits(r: PktRing, len: u32): bool {
  if (r.bodyUsed == 0) return len <= r.bodyCap;
  if (r.bodyUsed + len > r.bodyCap) return false;
  if (r.bodyTail >= r.bodyHead) return r.bodyCap - r.bodyTail >= len || r.bodyHead >= len;
  return r.bodyHead - r.bodyTail >= len;
}

// ---- the transmitters (each transport decides what a free port sends: rocev2/tx.ts, metaroce/tx.ts)

/** Makes sure port `p` looks for work at `t` (or when its current frame has left), even if it was asleep until later. */
export function wakePort(dev: Device, p: u32, t: u64): void {
  const port = portAt(dev, p);
  if (port.blocked || port.paused) return;
  const at = port.busyUntil > t ? port.busyUntil : t;
  if (port.txPending) {
    if (port.wakeAt <= at) return;
    // asleep until a paced QP's slot: an answer (or an unpaced QP) must not wait for it
    unschedule(dev, EventKind.PortTx, p);
  }
  portWakeAt(dev, port, p, at);
}

/**
 * Port `p`'s link partner paused it (IEEE 802.1Qbb XOFF: the switch's ingress for it holds too
 * much) or let it go again (XON), as the cluster runner reads the fabric at a window's start.
 * Paused, the port starts no frame: its pending PortTx event is taken back and wakePort
 * schedules none (every other PortTx is scheduled by the port's own handler, which then does not
 * run); its QPs keep their packets and their timers run.
 */
export function portPause(dev: Device, p: u32, paused: bool, t: u64): void {
  const port = portAt(dev, p);
  if (paused == (port.paused != 0)) return;
  port.paused = paused ? 1 : 0;
  if (!paused) { wakePort(dev, p, t); return; }
  statAdd(dev, STAT_PORT_PFC_PAUSES, 1);
  if (port.txPending) {
    unschedule(dev, EventKind.PortTx, p);
    port.txPending = 0;
  }
}

/** Schedules port `p`'s one PortTx event at `at`. */
export function portWakeAt(dev: Device, port: Port, p: u32, at: u64): void {
  port.txPending = 1;
  port.wakeAt = at;
  schedule(dev, at, EventKind.PortTx, p, 0);
}

/** Appends the frame in the scratch buffer (wire bytes, the first hdrLen of them headers) to the transmit ring. */
export function emit(dev: Device, p: u32, end: u64, wire: u32, hdrLen: u32): void {
  const r = txRing(dev);
  const rec = ringRec(r, r.count);
  const frame = portsOf(dev).frame;
  store<u64>(rec + PKT_TIME_PS, end);
  store<u32>(rec + PKT_WIRE_LEN, wire);
  store<u16>(rec + PKT_PORT, <u16>p);
  store<u16>(rec + PKT_HDR_LEN, <u16>hdrLen);
  copyBytes(rec + PKT_HDR, frame, hdrLen);
  let bodyLen: u32 = 0, bodyOff: u32 = 0;
  if (dev.cfg.timingMode == 0) {
    bodyLen = wire - hdrLen;
    bodyOff = <u32>bodyAlloc(r, bodyLen); // txRoom checked that it fits
    memory.copy(r.body + <usize>bodyOff, frame + hdrLen, bodyLen);
  }
  store<u32>(rec + PKT_BODY_LEN, bodyLen);
  store<u32>(rec + PKT_BODY_OFF, bodyOff);
  store<u32>(rec + PKT_SEQ, r.seq);
  store<u32>(rec + PKT_SRC_DEVICE, dev.cfg.deviceId);
  r.seq++;
  r.count++;
  statAdd(dev, STAT_PORT_TX_PACKETS, 1);
  statAdd(dev, STAT_PORT_TX_BYTES, wire);
}

/** The host drained the transmit ring: ports that found it full look again at `t`. */
export function portsUnblock(dev: Device, t: u64): void {
  for (let p: u32 = 0; p < dev.cfg.ports; p++) {
    const port = portAt(dev, p);
    if (!port.blocked) continue;
    port.blocked = 0;
    wakePort(dev, p, t);
  }
}

// ---- port groups (nic/port-groups.ts splits the ports into them)

/** The first port of group `group` (PORT_GROUP_*) when `up` ports are scale-up. */
@inline export function groupFirst(group: u32, up: u32): u32 {
  return group == PORT_GROUP_SCALE_UP ? 0 : up;
}

/** The ports of group `group` when `up` of `ports` are scale-up (0: none, or no such group). */
@inline export function groupCount(group: u32, up: u32, ports: u32): u32 {
  return group == PORT_GROUP_SCALE_UP ? up : group == PORT_GROUP_SCALE_OUT ? ports - up : 0;
}
