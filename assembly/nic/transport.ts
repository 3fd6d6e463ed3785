// The transports a device's QPs to other devices run over, and the one place the rest of nic/
// reaches them: nic/ calls these functions and never imports a transport by name. A transport
// lives in its own folder (rocev2/, metaroce/) and provides
//   - receive: a frame to its UDP port, Ethernet, IPv4 and UDP already checked (nic/rx.ts);
//   - port transmit: the PortTx event of a port of a device running it (its frame scheduler);
//   - send: a request's source is read and its packets may go (nic/requester.ts);
//   - connect, reset and close: a QP reaches RTR towards another device, goes to RESET, or is
//     destroyed;
//   - its record of a QP, in an area of the QP's slot nic/verbs.ts reserves for it (Qp);
//   - the port split (nic/port-groups.ts): whether a QP still owes answers or has packets
//     queued, what a QP moved to another port starts again with, which of its connections are
//     not quiescent, and spreading them over the new ports.
// Registering a third: its folder, its value of the config field `transport` (layouts/device.json
// TRANSPORT) and its UDP port below, and a case in each function of this file.

import { Device } from "../core/device";
import { Qp } from "./verbs";
import { packetsOf } from "./psn";
import { rocev2Receive } from "../rocev2/rx";
import { portTx, rocev2Send, rocev2Answering, rocev2Moved, rocev2Close } from "../rocev2/tx";
import { rocev2Reset } from "../rocev2/qp";
import { mrtReceive } from "../metaroce/rx";
import { mrtPortTx, mrtSend, mrtConnect, streamClose } from "../metaroce/tx";
import { streamOf } from "../metaroce/stream";
import { connBusy, connPeer, connsRespread } from "../metaroce/spread";
import { UDP_PORT_ROCEV2, MRT_UDP_PORT, BTH_SIZE, ICRC_SIZE } from "../generated/headers";
import { OPCODE_RDMA_READ, TRANSPORT_ROCEV2, TRANSPORT_METAROCE } from "../generated/layouts";

/** The shortest transport header any transport's frame carries after UDP (RoCEv2's BTH; the MetaRoCE-like header is longer). */
export const TRANSPORT_HDR_MIN: u32 = BTH_SIZE;
/** The trailer every transport's frame ends with (RoCEv2's ICRC; the MetaRoCE-like CRC-32 is as long). */
export const TRANSPORT_TRAILER: u32 = ICRC_SIZE;

/** The transport whose frames go to UDP port `udp`, or -1 for none. */
@inline export function transportOfUdpPort(udp: u32): i32 {
  if (udp == UDP_PORT_ROCEV2) return <i32>TRANSPORT_ROCEV2;
  if (udp == MRT_UDP_PORT) return <i32>TRANSPORT_METAROCE;
  return -1;
}

/** A frame for transport `transport` (by its UDP port, whatever the device runs: that transport counts what it cannot take). */
@inline export function transportReceive(dev: Device, transport: u32, f: usize, wire: u32, hdrLen: u32, port: u32, full: bool, t: u64): void {
  if (transport == TRANSPORT_METAROCE) mrtReceive(dev, f, wire, hdrLen, port, full, t);
  else rocev2Receive(dev, f, wire, hdrLen, port, full, t);
}

/** The PortTx event: port `p` is free at `t`. */
export function transportPortTx(dev: Device, p: u32, t: u64): void {
  if (dev.cfg.transport == TRANSPORT_METAROCE) mrtPortTx(dev, p, t); else portTx(dev, p, t);
}

/** The packets (PSNs of the QP's sequence) a request of `op` for `bytes` takes: a MetaRoCE-like READ request is one packet of its stream (its response comes on the peer's). */
export function transportRequestPackets(dev: Device, op: u32, bytes: u32): u32 {
  if (dev.cfg.transport == TRANSPORT_METAROCE && op == OPCODE_RDMA_READ) return 1;
  return packetsOf(bytes, dev.cfg.mtuBytes);
}

/** The request at the head of QP `qpn` (operation `op`, its PSNs set) has its source read: its packets may go. */
export function transportSend(dev: Device, q: Qp, qpn: u32, op: u32, t: u64): void {
  if (dev.cfg.transport == TRANSPORT_METAROCE) mrtSend(dev, q, qpn, op, t); else rocev2Send(dev, q, qpn, op, t);
}

/** QP `qpn` goes to RTR towards device `peer` over `count` ports of `group` from `first`: false when the transport has no room for it. */
export function transportConnect(dev: Device, q: Qp, qpn: u32, peer: u32, group: u32, first: u32, count: u32): bool {
  if (dev.cfg.transport == TRANSPORT_METAROCE) return mrtConnect(dev, q, qpn, peer, group, first, count);
  return true;
}

/** QP `qpn` is being destroyed: the transport lets go of it. */
export function transportClose(dev: Device, q: Qp, qpn: u32): void {
  if (dev.cfg.transport == TRANSPORT_METAROCE) streamClose(dev, q, qpn); else rocev2Close(dev, q, qpn);
}

/** QP `q` goes to RESET: what the transport keeps of it starts again (a MetaRoCE-like stream does at its next RTR). */
export function transportReset(dev: Device, q: Qp): void {
  if (dev.cfg.transport != TRANSPORT_METAROCE) rocev2Reset(q);
}

/** Has QP `q` packets queued for the transport to send (a MetaRoCE-like stream in its connection's list)? */
export function transportQueued(dev: Device, q: Qp): bool {
  return dev.cfg.transport == TRANSPORT_METAROCE && streamOf(q).listed != 0;
}

/** Does QP `q` owe its peer an answer, or is it half way through receiving a message? */
export function transportAnswering(dev: Device, q: Qp): bool {
  return dev.cfg.transport == TRANSPORT_METAROCE ? false : rocev2Answering(q);
}

/** QP `qpn` now sends on another port (a re-split): what it kept of the old one starts again. */
export function transportMoved(dev: Device, q: Qp, qpn: u32): void {
  if (dev.cfg.transport != TRANSPORT_METAROCE) rocev2Moved(dev, q, qpn);
}

/** The first connection of the transport that is not quiescent (a re-split must wait for it), or -1. */
export function transportBusyConnection(dev: Device): i32 {
  return dev.cfg.transport == TRANSPORT_METAROCE ? connBusy(dev) : -1;
}

/** The peer device of connection `c` (one transportBusyConnection named). */
export function transportConnectionPeer(dev: Device, c: u32): u32 {
  return dev.cfg.transport == TRANSPORT_METAROCE ? connPeer(dev, c) : 0;
}

/** The ports are re-split, `up` of them scale-up: every connection's paths move to its group's ports. */
export function transportRespread(dev: Device, up: u32): void {
  if (dev.cfg.transport == TRANSPORT_METAROCE) connsRespread(dev, up);
}
