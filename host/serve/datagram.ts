// A served device's frames as UDP datagrams and back (docs/serve.md, "Datagrams"). A frame a
// port sends leaves as one datagram: its UDP payload (the transport's header, payload and
// trailer: RoCEv2's ICRC, the MetaRoCE-like CRC), from the frame's own UDP source port to the
// transport's port of the destination device's address. A datagram received is rebuilt into
// the frame its sender's device wrote: Ethernet II, IPv4 and UDP as nic/ethernet.ts writes them
// (10.p.d addresses, 02:00 MACs, ECT(0), DF, TTL 64, checksum 0), the datagram's source port as
// the frame's, then its payload. RoCEv2's ICRC covers the IPv4 addresses and both UDP ports
// (IBA Annex A17), so a rebuilt frame checks only if all of them come back as sent. Which
// transport header a payload starts with decides where the frame's headers end (a PKT record's
// hdr_len, which each transport checks; host/wire/split.ts): a payload too short for it, or of an opcode or type
// the device does not know, cannot be staged and is counted as malformed. No Node APIs.

import * as H from "../generated/headers.js";
import { PKT } from "../generated/layouts.js";
import type { TxFrameRef } from "../ports.js";
import { addressPort, portAddress } from "../fabric/topology.js";
import { UDP_IPV4_BYTES, udpIpv4Defaults, writeUdpIpv4 } from "../wire/udp-ipv4.js";
import { transportHeaderBytes } from "../wire/split.js";

const { ETH_SIZE, IPV4_SIZE } = H;

/** Header bytes a PKT record holds: a rebuilt frame's headers must fit (host/ports.ts stageArrival). */
const HDR_MAX = PKT.SIZE - PKT.hdr;

/** Where a sent frame goes as a datagram: from `port`'s socket for UDP source port `srcUdpPort`, to `dstDevice`'s port `port` at transport port `dstUdpPort`. */
export interface DatagramRoute {
  port: number;
  dstDevice: number;
  srcUdpPort: number;
  /** 4791 (RoCEv2) or 4792 (MetaRoCE-like): the frame's UDP destination port */
  dstUdpPort: number;
  /** bytes of UDP payload (copyUdpPayload's) */
  bytes: number;
}

/**
 * Reads a frame's datagram: at least its envelope of headers, read as the device wrote them
 * (each frame's views made once per wasm memory buffer). A frame whose destination address is
 * no device port (never from a device) gives null.
 */
export class FrameDatagrams {
  private view: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(0));
  private readonly route: DatagramRoute = { port: 0, dstDevice: 0, srcUdpPort: 0, dstUdpPort: 0, bytes: 0 };

  /** The route of sent frame `f`, valid until the next call; null when its headers are not a device's envelope. */
  routeOf(f: TxFrameRef): DatagramRoute | null {
    if (f.hdrLen < UDP_IPV4_BYTES) return null;
    if (this.view.buffer !== f.mem.buffer) this.view = new DataView(f.mem.buffer);
    const v = this.view, ip = f.mem.byteOffset + f.hdrAt + ETH_SIZE, udp = ip + IPV4_SIZE;
    const dst = addressPort(H.getIpv4Dst(v, ip));
    if (dst === null || dst.port !== f.port) return null;
    const r = this.route;
    r.port = f.port;
    r.dstDevice = dst.device;
    r.srcUdpPort = H.getUdpSrcPort(v, udp);
    r.dstUdpPort = H.getUdpDstPort(v, udp);
    r.bytes = f.hdrLen - UDP_IPV4_BYTES + f.bodyLen;
    return r;
  }
}

/** Copies sent frame `f`'s UDP payload (headers after UDP, then its body) into `out`, which holds exactly its bytes. */
export function copyUdpPayload(f: TxFrameRef, out: Uint8Array): void {
  const head = f.hdrLen - UDP_IPV4_BYTES;
  out.set(f.mem.subarray(f.hdrAt + UDP_IPV4_BYTES, f.hdrAt + f.hdrLen));
  out.set(f.mem.subarray(f.bodyAt, f.bodyAt + f.bodyLen), head);
}

/**
 * Writes at `out[at, at + UDP_IPV4_BYTES)` the Ethernet, IPv4 and UDP headers a device writes
 * (nic/ethernet.ts) in front of `payloadBytes` of UDP payload, from device `srcDevice`'s port
 * `port` and UDP port `srcUdpPort` to device `dstDevice`'s same port at transport port
 * `dstUdpPort`: what a receiver puts back around a datagram (ArrivalBuilder; the conformance
 * tester, host/conform/udp-target.ts, both ways).
 */
export function writeDeviceEnvelope(out: Uint8Array, at: number, srcDevice: number, dstDevice: number, port: number, srcUdpPort: number, dstUdpPort: number, payloadBytes: number): void {
  const ipSrc = portAddress(srcDevice, port), ipDst = portAddress(dstDevice, port);
  writeUdpIpv4("datagram envelope", out, at, { ipSrc, ipDst, ...udpIpv4Defaults(ipSrc, ipDst), udpSrcPort: srcUdpPort }, dstUdpPort, payloadBytes);
}

/** A datagram rebuilt into a frame: its headers in `hdr[0, hdrLen)`, its body the payload from `bodyAt` on. */
export interface Arrival {
  hdr: Uint8Array;
  hdrLen: number;
  wireLen: number;
  bodyAt: number;
}

/**
 * Rebuilds received datagrams into frames, one at a time, into one buffer of headers (valid
 * until the next `rebuild`): the envelope a device sends, then the transport's headers.
 */
export class ArrivalBuilder {
  private readonly out: Arrival = { hdr: new Uint8Array(HDR_MAX), hdrLen: 0, wireLen: 0, bodyAt: 0 };

  /**
   * The frame `payload` was, sent from device `srcDevice`'s port `port` and UDP port `srcUdpPort`
   * to device `dstDevice`'s same port at transport port `dstUdpPort`; null when its transport
   * headers cannot be found (transportHeaderBytes) or do not fit a record.
   */
  rebuild(payload: Uint8Array, srcDevice: number, dstDevice: number, port: number, srcUdpPort: number, dstUdpPort: number): Arrival | null {
    const th = transportHeaderBytes(dstUdpPort, payload);
    if (th === null || UDP_IPV4_BYTES + th > HDR_MAX) return null;
    const a = this.out;
    writeDeviceEnvelope(a.hdr, 0, srcDevice, dstDevice, port, srcUdpPort, dstUdpPort, payload.length);
    a.hdr.set(payload.subarray(0, th), UDP_IPV4_BYTES);
    a.hdrLen = UDP_IPV4_BYTES + th;
    a.wireLen = UDP_IPV4_BYTES + payload.length;
    a.bodyAt = th;
    return a;
  }
}
