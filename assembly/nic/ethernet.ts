// The Ethernet II, IPv4 and UDP headers every frame a port sends starts with, whatever the
// transport after them (RoCEv2: roce-tx.ts; the MetaRoCE-like transport: metaroce/tx.ts).

import { Device } from "../core/device";
import { portsOf, portIpv4, macOf } from "./ports";
import { ipv4Checksum } from "../wire/ipv4";
import {
  ETH_SIZE, ETH_TYPE_IPV4, setEthDst, setEthSrc, setEthEtherType,
  IPV4_SIZE, IPV4_VERSION, IPV4_IHL_MIN, IPV4_TTL_DEFAULT, IPV4_PROTO_UDP, IPV4_ECN_ECT0,
  setIpv4Version, setIpv4Ihl, setIpv4Dscp, setIpv4Ecn, setIpv4TotalLength, setIpv4Identification, setIpv4DontFragment,
  setIpv4Ttl, setIpv4Protocol, setIpv4Checksum, setIpv4Src, setIpv4Dst,
  UDP_SIZE, setUdpSrcPort, setUdpDstPort, setUdpLength, setUdpChecksum,
} from "../generated/headers";

/**
 * Writes Ethernet II, IPv4 (ECT(0), don't fragment) and UDP at the start of the port's frame
 * buffer, from port `port` of this device to the same port of device `destDevice`, with
 * `udpPayload` bytes after the UDP header; returns the address of the UDP payload.
 */
export function ethIpUdp(dev: Device, port: u32, destDevice: u32, srcPort: u32, dstPort: u32, udpPayload: u32): usize {
  const f = portsOf(dev).frame;
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
