// What the fabric reads and writes in a frame, the core's twin of host/fabric/frame.ts: the
// IPv4 5-tuple and ECN when a frame enters, CE with the header checksum updated incrementally
// (RFC 1624 eqn. 3) when a marked frame is delivered. Fields through the generated accessors.

import {
  ETH_SIZE, ETH_TYPE_IPV4, IPV4_SIZE, IPV4_VERSION, IPV4_ECN_OFFSET, IPV4_PROTO_UDP, UDP_SIZE, IPV4_ECN_CE,
  getEthEtherType, getIpv4Version, getIpv4Ihl, getIpv4Ecn, setIpv4Ecn, getIpv4Checksum, setIpv4Checksum,
  getIpv4Src, getIpv4Dst, getIpv4Protocol, getUdpSrcPort, getUdpDstPort,
} from "../generated/headers";

export const FRAME_OK: i32 = 0;
export const FRAME_TRUNCATED: i32 = 1;
export const FRAME_NOT_IPV4: i32 = 2;

/** The 5-tuple and ECN of one frame, filled by readFrame. */
@unmanaged export class FrameFields {
  src: u32;
  dst: u32;
  proto: u32;
  sport: u32;
  dport: u32;
  ecn: u32;
}

/** Reads the headers of the frame whose first `len` bytes are at `at`: FRAME_OK, FRAME_TRUNCATED or FRAME_NOT_IPV4. */
export function readFrame(at: usize, len: u32, out: FrameFields): i32 {
  if (len < ETH_SIZE + IPV4_SIZE) return FRAME_TRUNCATED;
  if (getEthEtherType(at) != ETH_TYPE_IPV4) return FRAME_NOT_IPV4;
  const ip = at + ETH_SIZE;
  if (getIpv4Version(ip) != IPV4_VERSION) return FRAME_NOT_IPV4;
  const ihlBytes: u32 = 4 * getIpv4Ihl(ip);
  if (ihlBytes < IPV4_SIZE || len < ETH_SIZE + ihlBytes) return FRAME_TRUNCATED;
  out.src = getIpv4Src(ip);
  out.dst = getIpv4Dst(ip);
  out.proto = getIpv4Protocol(ip);
  out.ecn = getIpv4Ecn(ip);
  out.sport = 0;
  out.dport = 0;
  if (out.proto == IPV4_PROTO_UDP) {
    if (len < ETH_SIZE + ihlBytes + UDP_SIZE) return FRAME_TRUNCATED;
    out.sport = getUdpSrcPort(ip + ihlBytes);
    out.dport = getUdpDstPort(ip + ihlBytes);
  }
  return FRAME_OK;
}

@inline function be16(p: usize): u32 {
  return <u32>bswap<u16>(load<u16>(p));
}

/** Sets CE in the frame at `at` (an ECN-capable one) and updates its IPv4 header checksum (RFC 1624 eqn. 3). */
export function markCe(at: usize): void {
  const ip = at + ETH_SIZE;
  const word = ip + (IPV4_ECN_OFFSET & ~1);
  const m = be16(word);
  setIpv4Ecn(ip, IPV4_ECN_CE);
  const m2 = be16(word);
  let sum = (~getIpv4Checksum(ip) & 0xffff) + (~m & 0xffff) + m2;
  sum = (sum & 0xffff) + (sum >>> 16);
  sum = (sum & 0xffff) + (sum >>> 16);
  setIpv4Checksum(ip, ~sum & 0xffff);
}
