// The interface layer of the ports' receive side: the host hands arrivals over a window at a
// time into the receive ring; each, when due, has its Ethernet II, IPv4 and UDP headers checked
// once here, then goes to the transport its UDP destination port names (nic/transport.ts), which
// checks its own headers on. Bad frames are counted by reason and dropped; nothing traps.

import { Device, statAdd } from "../core/device";
import { schedule, EventKind } from "../core/sched";
import { NEVER } from "../core/time";
import { copyBytes } from "../core/copy";
import { PktRing, portsOf, rxRing, ringRec, ringConsume, bodyAlloc, portIpv4, FRAME_MAX, HDR_MAX } from "./ports";
import { transportOfUdpPort, transportReceive, TRANSPORT_HDR_MIN, TRANSPORT_TRAILER } from "./transport";
import { ipv4Checksum } from "../checksum/ipv4";
import {
  ETH_SIZE, ETH_TYPE_IPV4, getEthEtherType, IPV4_SIZE, IPV4_VERSION, IPV4_IHL_MIN, IPV4_PROTO_UDP, getIpv4Version, getIpv4Ihl,
  getIpv4TotalLength, getIpv4Protocol, getIpv4Dst, UDP_SIZE, getUdpDstPort, getUdpLength,
} from "../generated/headers";
import {
  PKT_SIZE, PKT_TIME_PS, PKT_WIRE_LEN, PKT_PORT, PKT_HDR_LEN, PKT_BODY_LEN, PKT_BODY_OFF, PKT_HDR,
  STAT_PORT_RX_PACKETS, STAT_PORT_RX_RING_FULL, STAT_PORT_RX_LATE, STAT_ROCE_RX_MALFORMED, STAT_ROCE_RX_NOT_MINE,
} from "../generated/layouts";

// ---- the receive ring

/**
 * Takes `n` arrivals the host staged (records at Ports.stage, bodies at Ports.stageBody) into
 * the receive ring, in the order given. An arrival before now is late (counted) and taken as
 * arriving now; one before the previous arrival is taken at that one's time; one that finds the
 * ring full is dropped (counted). Returns how many were taken.
 */
export function rxPut(dev: Device, n: u32): u32 {
  const s = portsOf(dev);
  const r = rxRing(dev);
  let taken: u32 = 0;
  for (let k: u32 = 0; k < n && k < dev.cfg.rxRingEntries; k++) {
    const src = s.stage + <usize>k * <usize>PKT_SIZE;
    const bodyLen: u32 = dev.cfg.timingMode != 0 ? 0 : load<u32>(src + PKT_BODY_LEN);
    if (r.count >= r.cap || bodyLen > dev.cfg.rxBodyBytes) { statAdd(dev, STAT_PORT_RX_RING_FULL, 1); continue; }
    const at = bodyAlloc(r, bodyLen);
    if (at < 0) { statAdd(dev, STAT_PORT_RX_RING_FULL, 1); continue; }
    const dst = ringRec(r, r.count);
    copyBytes(dst, src, <usize>PKT_SIZE);
    const off = load<u32>(src + PKT_BODY_OFF);
    if (bodyLen > 0 && <u64>off + <u64>bodyLen <= <u64>dev.cfg.rxBodyBytes) memory.copy(r.body + <usize>at, s.stageBody + <usize>off, bodyLen);
    else if (bodyLen > 0) memory.fill(r.body + <usize>at, 0, bodyLen); // a body outside the stage: the frame will not check
    store<u32>(dst + PKT_BODY_LEN, bodyLen);
    store<u32>(dst + PKT_BODY_OFF, <u32>at);
    rxAppended(dev, r);
    taken++;
  }
  if (r.count > 0) wantRxEvent(dev, load<u64>(ringRec(r, 0) + PKT_TIME_PS));
  return taken;
}

/**
 * The record just written after the receive ring's last one (its body in place, or none) is
 * an arrival: its time is kept no earlier than now and than the one before it, and it joins
 * the ring.
 */
@inline function rxAppended(dev: Device, r: PktRing): void {
  const dst = ringRec(r, r.count);
  let t = load<u64>(dst + PKT_TIME_PS);
  if (t < dev.now) { statAdd(dev, STAT_PORT_RX_LATE, 1); t = dev.now; }
  if (r.count > 0) { const prev = load<u64>(ringRec(r, r.count - 1) + PKT_TIME_PS); if (t < prev) t = prev; }
  store<u64>(dst + PKT_TIME_PS, t);
  r.count++;
}

/**
 * As rxPut, for `n` bodiless arrivals (timing mode) written straight into the receive ring
 * after its last record (the cluster's delivery, when the ring has room for all of them);
 * they join it as rxPut's would.
 */
export function rxCommit(dev: Device, n: u32): void {
  const r = rxRing(dev);
  for (let k: u32 = 0; k < n; k++) rxAppended(dev, r);
  if (r.count > 0) wantRxEvent(dev, load<u64>(ringRec(r, 0) + PKT_TIME_PS));
}

function wantRxEvent(dev: Device, t: u64): void {
  const s = portsOf(dev);
  if (s.rxEventAt <= t) return;
  s.rxEventAt = t;
  schedule(dev, t, EventKind.RxArrive, 0, 0);
}

/** The RxArrive event: every arrival due by `t` is received, in order. */
export function rxArrive(dev: Device, t: u64): void {
  const s = portsOf(dev);
  if (t != s.rxEventAt) return; // an earlier event took its place
  s.rxEventAt = NEVER;
  const r = rxRing(dev);
  while (r.count > 0) {
    const rec = ringRec(r, 0);
    const at = load<u64>(rec + PKT_TIME_PS);
    if (at > t) { wantRxEvent(dev, at); return; }
    receive(dev, rec, r.body, at);
    ringConsume(r, 1);
  }
}

// ---- one frame

@inline function bad(dev: Device, stat: u32): void { statAdd(dev, stat, 1); }

/**
 * Checks the Ethernet, IPv4 and UDP headers of the frame of record `rec` and hands it to the
 * transport its UDP port names. (Their counters keep the names `roce.rx_malformed` and
 * `roce.rx_not_mine` they had when RoCEv2 was the only transport.)
 */
function receive(dev: Device, rec: usize, body: usize, t: u64): void {
  statAdd(dev, STAT_PORT_RX_PACKETS, 1);
  const s = portsOf(dev);
  const wire = load<u32>(rec + PKT_WIRE_LEN), hdrLen = <u32>load<u16>(rec + PKT_HDR_LEN);
  const port = <u32>load<u16>(rec + PKT_PORT);
  const full = dev.cfg.timingMode == 0;
  const bodyLen = load<u32>(rec + PKT_BODY_LEN);
  const minHdr = ETH_SIZE + IPV4_SIZE + UDP_SIZE + TRANSPORT_HDR_MIN;
  if (hdrLen < minHdr || hdrLen > HDR_MAX || wire < hdrLen + TRANSPORT_TRAILER || wire > FRAME_MAX || port >= dev.cfg.ports
    || (full && bodyLen != wire - hdrLen)) { bad(dev, STAT_ROCE_RX_MALFORMED); return; }
  // full mode: headers and body side by side in the frame buffer (the transport's CRC covers
  // both); timing mode has no body, and the headers are read where they are, in the ring's record
  let f = s.frame;
  if (full) {
    copyBytes(f, rec + PKT_HDR, hdrLen);
    memory.copy(f + hdrLen, body + <usize>load<u32>(rec + PKT_BODY_OFF), bodyLen);
  } else f = rec + PKT_HDR;
  const ip = f + ETH_SIZE, udp = ip + IPV4_SIZE;
  const transport = transportOfUdpPort(getUdpDstPort(udp));
  if (getEthEtherType(f) != ETH_TYPE_IPV4 || getIpv4Version(ip) != IPV4_VERSION || getIpv4Ihl(ip) != IPV4_IHL_MIN
    || getIpv4TotalLength(ip) != wire - ETH_SIZE || ipv4Checksum(ip) != 0 || getIpv4Protocol(ip) != IPV4_PROTO_UDP
    || transport < 0 || getUdpLength(udp) != wire - ETH_SIZE - IPV4_SIZE) { bad(dev, STAT_ROCE_RX_MALFORMED); return; }
  if (getIpv4Dst(ip) != portIpv4(dev.cfg.deviceId, port)) { bad(dev, STAT_ROCE_RX_NOT_MINE); return; }
  transportReceive(dev, <u32>transport, f, wire, hdrLen, port, full, t);
}
