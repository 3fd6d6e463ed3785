// host/wire/ holds wire formats, the bytes a link carries or a capture keeps: the one thing
// "wire" names among menic's folders (the core's checksums are assembly/checksum/).
//
// The Ethernet II / IPv4 / UDP envelope that both transports' frames travel in (RoCEv2 to UDP
// port 4791, host/wire/rocev2.ts; the MetaRoCE-like transport to 4792, host/wire/metaroce.ts):
// the fields a frame description carries for it, writing it in front of a UDP payload, and
// reading it back with the reason a frame is refused. IPv4 without options, never fragmented;
// the UDP checksum is sent as 0, as RFC 768 allows over IPv4 and RDMA NICs do. Byte access is
// the generated views of layouts/headers (host/generated/headers.ts).

import * as H from "../generated/headers.js";

const { ETH_SIZE, IPV4_SIZE, UDP_SIZE } = H;

/** Bytes of Ethernet II, IPv4 without options and UDP headers: where the UDP payload starts. */
export const UDP_IPV4_BYTES = ETH_SIZE + IPV4_SIZE + UDP_SIZE;

/** What a frame says in its Ethernet, IPv4 and UDP headers apart from lengths, checksums and the destination port. */
export interface UdpIpv4Fields {
  /** Ethernet: 48-bit MAC addresses as numbers (0x0200_0a00_0001 is 02:00:0a:00:00:01) */
  ethDst: number;
  ethSrc: number;
  /** IPv4: addresses as u32 (0x0a000001 is 10.0.0.1) */
  ipSrc: number;
  ipDst: number;
  dscp: number;
  /** ECN codepoint, IPV4_ECN.* */
  ecn: number;
  ttl: number;
  ipId: number;
  /** UDP source port: picks the ECMP path */
  udpSrcPort: number;
}

/** The locally administered MAC menic gives an IPv4 address when none is named: 02:00 + the address. */
export const macForIpv4 = (ip: number): number => 0x0200_0000_0000 + (ip >>> 0);

/** The envelope fields a description leaves out: MACs from the IP addresses, ECT(0), the default TTL. */
export const udpIpv4Defaults = (ipSrc: number, ipDst: number): Omit<UdpIpv4Fields, "ipSrc" | "ipDst"> => ({
  ethDst: macForIpv4(ipDst), ethSrc: macForIpv4(ipSrc), dscp: 0, ecn: H.IPV4_ECN.ECT0, ttl: H.IPV4.TTL_DEFAULT, ipId: 0, udpSrcPort: 0xc000,
});

/** The IPv4 header checksum of RFC 791 §3.1: ones' complement of the ones' complement sum (RFC 1071). */
export function ipv4Checksum(bytes: Uint8Array, at: number, len: number): number {
  let sum = 0;
  for (let i = 0; i < len; i += 2) sum += (bytes[at + i]! << 8) | (i + 1 < len ? bytes[at + i + 1]! : 0);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

/** Throws a RangeError naming `what` (the kind of frame) unless `v` is a whole number that fits `bits` bits. */
export function checkBits(what: string, name: string, v: number, bits: number): void {
  if (!Number.isInteger(v) || v < 0 || v >= 2 ** bits) throw new RangeError(`${what}: ${name} ${v} does not fit ${bits} bits`);
}

/**
 * A frame of `udpPayloadBytes` bytes of UDP payload to `dstPort`, with its Ethernet, IPv4 and UDP
 * headers written (lengths and IPv4 checksum filled in) and the payload left zero, at
 * UDP_IPV4_BYTES. Throws a RangeError naming `what` for a field that does not fit or a datagram
 * over 65535 bytes.
 */
export function udpIpv4Frame(what: string, f: UdpIpv4Fields, dstPort: number, udpPayloadBytes: number): Uint8Array {
  const bytes = new Uint8Array(ETH_SIZE + checkUdpIpv4(what, f, udpPayloadBytes));
  writeUdpIpv4(what, bytes, 0, f, dstPort, udpPayloadBytes);
  return bytes;
}

/** The IP datagram's length for `udpPayloadBytes` of UDP payload, having checked every field of `f` (a RangeError naming `what`). */
function checkUdpIpv4(what: string, f: UdpIpv4Fields, udpPayloadBytes: number): number {
  checkBits(what, "ethDst", f.ethDst, 48); checkBits(what, "ethSrc", f.ethSrc, 48);
  checkBits(what, "ipSrc", f.ipSrc, 32); checkBits(what, "ipDst", f.ipDst, 32);
  checkBits(what, "dscp", f.dscp, 6); checkBits(what, "ecn", f.ecn, 2); checkBits(what, "ttl", f.ttl, 8); checkBits(what, "ipId", f.ipId, 16);
  checkBits(what, "udpSrcPort", f.udpSrcPort, 16);
  const ipLen = IPV4_SIZE + UDP_SIZE + udpPayloadBytes;
  if (ipLen > 0xffff) throw new RangeError(`${what}: ${ipLen} bytes of IP datagram exceed 65535`);
  return ipLen;
}

/**
 * Writes the Ethernet, IPv4 and UDP headers udpIpv4Frame writes at `bytes[at, at + UDP_IPV4_BYTES)`
 * (IPv4 and UDP checksum fields included), for a frame whose UDP payload of `udpPayloadBytes`
 * follows them, wherever it is: a receiver that rebuilds a frame around a payload it holds
 * elsewhere (host/serve/datagram.ts). Throws a RangeError as udpIpv4Frame does.
 */
export function writeUdpIpv4(what: string, bytes: Uint8Array, at: number, f: UdpIpv4Fields, dstPort: number, udpPayloadBytes: number): void {
  const ipLen = checkUdpIpv4(what, f, udpPayloadBytes);
  const v = new DataView(bytes.buffer, bytes.byteOffset + at, UDP_IPV4_BYTES);

  H.setEthDst(v, 0, f.ethDst);
  H.setEthSrc(v, 0, f.ethSrc);
  H.setEthEtherType(v, 0, H.ETH_TYPE.IPV4);

  const ip = ETH_SIZE;
  new Uint8Array(v.buffer, v.byteOffset + ip, IPV4_SIZE + UDP_SIZE).fill(0); // fields not written below are 0
  H.setIpv4Version(v, ip, H.IPV4.VERSION);
  H.setIpv4Ihl(v, ip, H.IPV4.IHL_MIN);
  H.setIpv4Dscp(v, ip, f.dscp);
  H.setIpv4Ecn(v, ip, f.ecn);
  H.setIpv4TotalLength(v, ip, ipLen);
  H.setIpv4Identification(v, ip, f.ipId);
  H.setIpv4DontFragment(v, ip, 1); // RDMA transports' packets are never fragmented
  H.setIpv4Ttl(v, ip, f.ttl);
  H.setIpv4Protocol(v, ip, H.IPV4_PROTO.UDP);
  H.setIpv4Src(v, ip, f.ipSrc);
  H.setIpv4Dst(v, ip, f.ipDst);
  H.setIpv4Checksum(v, ip, ipv4Checksum(bytes, at + ip, IPV4_SIZE));

  const udp = ip + IPV4_SIZE;
  H.setUdpSrcPort(v, udp, f.udpSrcPort);
  H.setUdpDstPort(v, udp, dstPort);
  H.setUdpLength(v, udp, UDP_SIZE + udpPayloadBytes);
  // checksum left 0: not computed, as RFC 768 allows over IPv4 and RDMA NICs send
}

/** Why readUdpIpv4 refused a frame. */
export type UdpIpv4Error =
  | "truncated" // shorter than its headers say
  | "not-ipv4" // EtherType, IP version or IHL
  | "ip-checksum"
  | "ip-length" // total length below its headers
  | "fragment" // MF set or a fragment offset: never fragmented
  | "not-udp"
  | "port" // UDP destination port is not the one asked for
  | "udp-length"; // UDP length disagrees with the IP total length

/** A frame's envelope read back: its fields, where its UDP payload starts and where the IP datagram ends. */
export type UdpIpv4Read = { ok: true; fields: UdpIpv4Fields; ip: number; payload: number; end: number } | { ok: false; error: UdpIpv4Error };

/**
 * Reads the Ethernet, IPv4 and UDP headers of `bytes`, a frame to UDP port `dstPort`. Bytes after
 * the IP datagram (Ethernet padding) are not part of it: `end` is one past its last byte. Never throws.
 */
export function readUdpIpv4(bytes: Uint8Array, dstPort: number): UdpIpv4Read {
  const fail = (error: UdpIpv4Error): UdpIpv4Read => ({ ok: false, error });
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < ETH_SIZE + IPV4_SIZE) return fail("truncated");
  const ip = ETH_SIZE;
  if (H.getEthEtherType(v, 0) !== H.ETH_TYPE.IPV4 || H.getIpv4Version(v, ip) !== H.IPV4.VERSION || H.getIpv4Ihl(v, ip) < H.IPV4.IHL_MIN)
    return fail("not-ipv4");
  const ihl = H.getIpv4Ihl(v, ip) * 4;
  if (bytes.length < ip + ihl) return fail("truncated");
  if (ipv4Checksum(bytes, ip, ihl) !== 0) return fail("ip-checksum");
  const ipLen = H.getIpv4TotalLength(v, ip);
  if (ipLen > bytes.length - ip) return fail("truncated");
  if (H.getIpv4MoreFragments(v, ip) || H.getIpv4FragmentOffset(v, ip)) return fail("fragment");
  if (H.getIpv4Protocol(v, ip) !== H.IPV4_PROTO.UDP) return fail("not-udp");
  if (ipLen < ihl + UDP_SIZE) return fail("ip-length");
  const udp = ip + ihl;
  if (H.getUdpDstPort(v, udp) !== dstPort) return fail("port");
  if (H.getUdpLength(v, udp) !== ipLen - ihl) return fail("udp-length");
  const fields: UdpIpv4Fields = {
    ethDst: H.getEthDst(v, 0), ethSrc: H.getEthSrc(v, 0),
    ipSrc: H.getIpv4Src(v, ip), ipDst: H.getIpv4Dst(v, ip), dscp: H.getIpv4Dscp(v, ip), ecn: H.getIpv4Ecn(v, ip),
    ttl: H.getIpv4Ttl(v, ip), ipId: H.getIpv4Identification(v, ip), udpSrcPort: H.getUdpSrcPort(v, udp),
  };
  return { ok: true, fields, ip, payload: udp + UDP_SIZE, end: ip + ipLen };
}
