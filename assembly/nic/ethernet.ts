// The Ethernet II, IPv4 and UDP headers every frame a port sends starts with, whatever the
// transport after them (RoCEv2: rocev2/tx.ts; the MetaRoCE-like transport: metaroce/tx.ts).

import { Device } from "../core/device";
import { portsOf, portIpv4, macOf } from "./ports";
import { ipv4Checksum } from "../checksum/ipv4";
import {
  ETH_SIZE, ETH_TYPE_IPV4, setEthDst, setEthSrc, setEthEtherType,
  IPV4_SIZE, IPV4_VERSION, IPV4_IHL_MIN, IPV4_TTL_DEFAULT, IPV4_PROTO_UDP, IPV4_ECN_ECT0,
  setIpv4Version, setIpv4Ihl, setIpv4Dscp, setIpv4Ecn, setIpv4TotalLength, setIpv4Identification, setIpv4DontFragment,
  setIpv4Ttl, setIpv4Protocol, setIpv4Checksum, getIpv4Checksum, setIpv4Src, setIpv4Dst,
  UDP_SIZE, setUdpSrcPort, setUdpDstPort, setUdpLength, setUdpChecksum,
} from "../generated/headers";

/**
 * Writes Ethernet II, IPv4 (ECT(0), don't fragment) and UDP at the start of the port's frame
 * buffer, from port `port` of this device to the same port of device `destDevice`, with
 * `udpPayload` bytes after the UDP header; returns the address of the UDP payload.
 */
export function ethIpUdp(dev: Device, port: u32, destDevice: u32, srcPort: u32, dstPort: u32, udpPayload: u32): usize {
  return writeEthIpUdp(dev, portsOf(dev).frame, port, destDevice, srcPort, dstPort, udpPayload);
}

/** Bytes of a template of the three headers (ethIpUdpTemplate): their 42, rounded up to 16. */
export const ETH_IP_UDP_TEMPLATE: usize = 48;

/**
 * Writes at `at` (ETH_IP_UDP_TEMPLATE bytes) the headers ethIpUdp writes for these addresses
 * and ports, as if with no UDP payload and no IPv4 header: lengths 0, and the checksum that goes
 * with them. A sender whose frames differ in their length alone (a MetaRoCE-like path) starts
 * each from it (ethIpUdpFrom), which costs a copy instead of a dozen fields.
 */
export function ethIpUdpTemplate(dev: Device, at: usize, port: u32, destDevice: u32, srcPort: u32, dstPort: u32): void {
  writeEthIpUdp(dev, at, port, destDevice, srcPort, dstPort, 0);
  const ip = at + ETH_SIZE;
  setIpv4TotalLength(ip, 0);
  setUdpLength(ip + IPV4_SIZE, 0);
  setIpv4Checksum(ip, 0);
  setIpv4Checksum(ip, ipv4Checksum(ip));
}

/**
 * Starts the port's frame buffer with template `tmpl` (ethIpUdpTemplate) for `udpPayload` bytes
 * after the UDP header: the bytes ethIpUdp writes. Returns the address of the UDP payload.
 */
export function ethIpUdpFrom(dev: Device, tmpl: usize, udpPayload: u32): usize {
  const f = portsOf(dev).frame;
  // the 42 bytes of Ethernet (14), IPv4 (20) and UDP (8)
  v128.store(f, v128.load(tmpl));
  v128.store(f, v128.load(tmpl, 16), 16);
  store<u64>(f, load<u64>(tmpl, 32), 32);
  store<u16>(f, load<u16>(tmpl, 40), 40);
  const ip = f + ETH_SIZE, ipLen = IPV4_SIZE + UDP_SIZE + udpPayload;
  setIpv4TotalLength(ip, ipLen);
  setUdpLength(ip + IPV4_SIZE, UDP_SIZE + udpPayload);
  // the checksum with the length added (RFC 1624, eqn. 3, from a length of 0): the template's
  // is the complement of the sum of the other words, never 0 (the first word is not)
  let sum = (~getIpv4Checksum(ip) & 0xffff) + ipLen;
  sum = (sum & 0xffff) + (sum >> 16);
  setIpv4Checksum(ip, ~sum & 0xffff);
  return ip + IPV4_SIZE + UDP_SIZE;
}

function writeEthIpUdp(dev: Device, f: usize, port: u32, destDevice: u32, srcPort: u32, dstPort: u32, udpPayload: u32): usize {
  const src = portIpv4(dev.cfg.deviceId, port), dst = portIpv4(destDevice, port);
  setEthDst(f, macOf(dst));
  setEthSrc(f, macOf(src));
  setEthEtherType(f, ETH_TYPE_IPV4);
  const ip = f + ETH_SIZE;
  const ipLen = IPV4_SIZE + UDP_SIZE + udpPayload;
  store<u64>(ip, 0);
  store<u64>(ip, 0, 8);
  store<u32>(ip, 0, 16);
  setIpv4Version(ip, IPV4_VERSION);
  setIpv4Ihl(ip, IPV4_IHL_MIN);
  setIpv4Dscp(ip, 0);
  setIpv4Ecn(ip, IPV4_ECN_ECT0);
  setIpv4TotalLength(ip, ipLen);
  setIpv4Identification(ip, 0);
  setIpv4DontFragment(ip, 1);
  setIpv4Ttl(ip, IPV4_TTL_DEFAULT);
  setIpv4Protocol(ip, IPV4_PROTO_UDP);
  setIpv4Src(ip, src);
  setIpv4Dst(ip, dst);
  setIpv4Checksum(ip, ipv4Checksum(ip));
  const udp = ip + IPV4_SIZE;
  setUdpSrcPort(udp, srcPort);
  setUdpDstPort(udp, dstPort);
  setUdpLength(udp, ipLen - IPV4_SIZE);
  setUdpChecksum(udp, 0);
  return udp + UDP_SIZE;
}
