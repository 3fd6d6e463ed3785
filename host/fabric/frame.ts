// What the fabric reads and writes in a frame: the Ethernet II / IPv4 / UDP headers, through
// the generated accessors of layouts/headers (host/generated/headers.ts). A switch reads the
// IPv4 destination (routing), the 5-tuple (ECMP: the UDP source port is the entropy) and the
// ECN codepoint; the only thing it writes is CE, with the header checksum updated
// incrementally (RFC 1624). The tuple is read once, when a frame enters the fabric: no switch
// rewrites it, so every switch would read the same bytes.

import {
  ETH_SIZE, ETH_TYPE, IPV4_SIZE, IPV4_ECN, IPV4_OFFSET, IPV4_PROTO, IPV4, UDP_SIZE,
  getEthEtherType, getIpv4Version, getIpv4Ihl, getIpv4Ecn, setIpv4Ecn, getIpv4Checksum, setIpv4Checksum,
  getIpv4Src, getIpv4Dst, getIpv4Protocol, getUdpSrcPort, getUdpDstPort,
} from "../generated/headers.js";

/** Why a frame cannot cross the fabric (FRAME_OK when it can). */
export const FRAME_OK = 0;
export const FRAME_TRUNCATED = 1;
export const FRAME_NOT_IPV4 = 2;

/** The 5-tuple and ECN of one frame: one reusable scratch record, filled by readFrame. */
export interface FrameFields {
  src: number;
  dst: number;
  proto: number;
  /** 0 when the datagram is not UDP */
  sport: number;
  dport: number;
  ecn: number;
}

export const newFrameFields = (): FrameFields => ({ src: 0, dst: 0, proto: 0, sport: 0, dport: 0, ecn: 0 });

/**
 * Reads the headers of the frame whose first `len` bytes are at `at` in `v` into `out`.
 * Returns FRAME_OK, FRAME_TRUNCATED (fewer bytes than Ethernet + the IPv4 header its IHL
 * announces, + UDP when the protocol is UDP) or FRAME_NOT_IPV4 (another EtherType or IP
 * version). No VLAN tags (menic's NIC sends none).
 */
export function readFrame(v: DataView, at: number, len: number, out: FrameFields): number {
  if (len < ETH_SIZE + IPV4_SIZE) return FRAME_TRUNCATED;
  if (getEthEtherType(v, at) !== ETH_TYPE.IPV4) return FRAME_NOT_IPV4;
  const ip = at + ETH_SIZE;
  if (getIpv4Version(v, ip) !== IPV4.VERSION) return FRAME_NOT_IPV4;
  const ihlBytes = 4 * getIpv4Ihl(v, ip);
  if (ihlBytes < IPV4_SIZE || len < ETH_SIZE + ihlBytes) return FRAME_TRUNCATED;
  out.src = getIpv4Src(v, ip);
  out.dst = getIpv4Dst(v, ip);
  out.proto = getIpv4Protocol(v, ip);
  out.ecn = getIpv4Ecn(v, ip);
  out.sport = out.dport = 0;
  if (out.proto === IPV4_PROTO.UDP) {
    if (len < ETH_SIZE + ihlBytes + UDP_SIZE) return FRAME_TRUNCATED;
    out.sport = getUdpSrcPort(v, ip + ihlBytes);
    out.dport = getUdpDstPort(v, ip + ihlBytes);
  }
  return FRAME_OK;
}

/** True when the frame at `at` may be marked: ECT(0) or ECT(1) (RFC 3168 §5). */
export function ecnCapable(v: DataView, at: number): boolean {
  const ecn = getIpv4Ecn(v, at + ETH_SIZE);
  return ecn === IPV4_ECN.ECT0 || ecn === IPV4_ECN.ECT1;
}

/** The ECN codepoint of the frame at `at`. */
export const ecnOf = (v: DataView, at: number): number => getIpv4Ecn(v, at + ETH_SIZE);

/**
 * Sets CE in the frame at `at` (an ECN-capable one: RFC 3168 §5 lets a router change ECT to
 * CE, never Not-ECT) and updates the IPv4 header checksum incrementally, RFC 1624 eqn. 3:
 * HC' = ~(~HC + ~m + m'), m and m' the old and new 16-bit word holding the ECN bits, in ones'
 * complement arithmetic (eqn. 3 never yields the -0 that eqn. 2 can).
 */
export function markCe(v: DataView, at: number): void {
  const ip = at + ETH_SIZE;
  const word = ip + (IPV4_OFFSET.ecn & ~1);
  const m = v.getUint16(word);
  setIpv4Ecn(v, ip, IPV4_ECN.CE);
  const m2 = v.getUint16(word);
  let sum = (~getIpv4Checksum(v, ip) & 0xffff) + (~m & 0xffff) + m2;
  sum = (sum & 0xffff) + (sum >>> 16);
  sum = (sum & 0xffff) + (sum >>> 16);
  setIpv4Checksum(v, ip, ~sum & 0xffff);
}
