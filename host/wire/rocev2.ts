// RoCEv2 frames on the host: a plain description of a packet (RoceFrame) and the bytes on the
// wire, both ways. Ethernet II / IPv4 / UDP to port 4791 / BTH / the extension headers the
// opcode calls for (RETH, AETH, ImmDt, or a CNP's reserved bytes) / payload and pad / ICRC
// (IBA Annex A17). Byte access is the generated views of layouts/headers (host/generated/
// headers.ts); this file holds the meaning: which headers an opcode has, lengths, checksums.
// buildFrame throws on a description it cannot send (a programming error); parseFrame never
// throws and says what is wrong with bytes it refuses.

import * as H from "../generated/headers.js";
import { OPCODES, OP } from "../generated/headers.js";
import { icrcIpv4 } from "./icrc.js";

const { ETH_SIZE, IPV4_SIZE, UDP_SIZE, BTH_SIZE, RETH_SIZE, AETH_SIZE, IMM_DT_SIZE, CNP_SIZE, ICRC_SIZE } = H;

/** A RoCEv2 packet, every field the wire carries apart from lengths, checksums and the ICRC. */
export interface RoceFrame {
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
  /** UDP source port: picks the ECMP path (the destination port is 4791) */
  udpSrcPort: number;
  /** BTH */
  opcode: number;
  se: boolean;
  migReq: boolean;
  pKey: number;
  fecn: boolean;
  becn: boolean;
  destQp: number;
  ackReq: boolean;
  psn: number;
  /** present exactly when the opcode has them (OPCODES) */
  reth?: { va: bigint; rkey: number; dmaLength: number };
  aeth?: { syndrome: number; msn: number };
  immDt?: number;
  /** the payload without pad; empty for opcodes that carry none */
  payload: Uint8Array;
}

/** What buildFrame needs: the rest defaults as in `frameDefaults`. */
export type FrameSpec = Pick<RoceFrame, "opcode" | "destQp" | "psn" | "ipSrc" | "ipDst"> & Partial<RoceFrame>;

/** The locally administered MAC menic gives an IPv4 address when none is named: 02:00 + the address. */
export const macForIpv4 = (ip: number): number => 0x0200_0000_0000 + (ip >>> 0);

/** The full description buildFrame sends for `spec`: a field left out or given as undefined takes its default; a CNP gets BECN set. */
export function frameDefaults(spec: FrameSpec): RoceFrame {
  const cnp = spec.opcode === OP.CNP;
  const given = Object.fromEntries(Object.entries(spec).filter(([, v]) => v !== undefined)) as FrameSpec;
  return {
    ethDst: macForIpv4(spec.ipDst), ethSrc: macForIpv4(spec.ipSrc),
    dscp: 0, ecn: H.IPV4_ECN.ECT0, ttl: H.IPV4.TTL_DEFAULT, ipId: 0, udpSrcPort: 0xc000,
    se: false, migReq: false, pKey: H.BTH.P_KEY_DEFAULT, fecn: false, becn: cnp, ackReq: false,
    payload: new Uint8Array(0),
    ...given,
  };
}

/** Bytes of the frame buildFrame makes for `f` (no Ethernet FCS). */
export function frameBytes(f: Pick<RoceFrame, "opcode" | "payload">): number {
  const info = OPCODES.get(f.opcode);
  const body = (info?.extBytes ?? 0) + f.payload.length;
  return ETH_SIZE + IPV4_SIZE + UDP_SIZE + BTH_SIZE + body + ((4 - (body & 3)) & 3) + ICRC_SIZE;
}

/** The IPv4 header checksum of RFC 791 §3.1: ones' complement of the ones' complement sum (RFC 1071). */
export function ipv4Checksum(bytes: Uint8Array, at: number, len: number): number {
  let sum = 0;
  for (let i = 0; i < len; i += 2) sum += (bytes[at + i]! << 8) | (i + 1 < len ? bytes[at + i + 1]! : 0);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return ~sum & 0xffff;
}

function checkBits(name: string, v: number, bits: number): void {
  if (!Number.isInteger(v) || v < 0 || v >= 2 ** bits) throw new RangeError(`RoCEv2 frame: ${name} ${v} does not fit ${bits} bits`);
}

/** The frame's bytes: lengths, IPv4 checksum, pad and ICRC filled in. Throws a RangeError for a description that cannot be sent. */
export function buildFrame(spec: FrameSpec): Uint8Array {
  const f = frameDefaults(spec);
  const info = OPCODES.get(f.opcode);
  if (!info) throw new RangeError(`RoCEv2 frame: opcode 0x${f.opcode.toString(16)} is not one menic sends`);
  for (const [name, has] of [["reth", info.headers.includes("Reth")], ["aeth", info.headers.includes("Aeth")], ["immDt", info.headers.includes("ImmDt")]] as const)
    if ((f[name] !== undefined) !== has) throw new RangeError(`RoCEv2 frame: ${info.name} ${has ? "needs" : "has no"} ${name}`);
  if (!info.payload && f.payload.length) throw new RangeError(`RoCEv2 frame: ${info.name} carries no payload`);
  checkBits("ethDst", f.ethDst, 48); checkBits("ethSrc", f.ethSrc, 48);
  checkBits("ipSrc", f.ipSrc, 32); checkBits("ipDst", f.ipDst, 32);
  checkBits("dscp", f.dscp, 6); checkBits("ecn", f.ecn, 2); checkBits("ttl", f.ttl, 8); checkBits("ipId", f.ipId, 16);
  checkBits("udpSrcPort", f.udpSrcPort, 16); checkBits("pKey", f.pKey, 16);
  checkBits("destQp", f.destQp, 24); checkBits("psn", f.psn, 24);

  const total = frameBytes(f);
  const ipLen = total - ETH_SIZE;
  if (ipLen > 0xffff) throw new RangeError(`RoCEv2 frame: ${ipLen} bytes of IP datagram exceed 65535`);
  const bytes = new Uint8Array(total);
  const v = new DataView(bytes.buffer);

  H.setEthDst(v, 0, f.ethDst);
  H.setEthSrc(v, 0, f.ethSrc);
  H.setEthEtherType(v, 0, H.ETH_TYPE.IPV4);

  const ip = ETH_SIZE;
  H.setIpv4Version(v, ip, H.IPV4.VERSION);
  H.setIpv4Ihl(v, ip, H.IPV4.IHL_MIN);
  H.setIpv4Dscp(v, ip, f.dscp);
  H.setIpv4Ecn(v, ip, f.ecn);
  H.setIpv4TotalLength(v, ip, ipLen);
  H.setIpv4Identification(v, ip, f.ipId);
  H.setIpv4DontFragment(v, ip, 1); // RoCEv2 packets are never fragmented
  H.setIpv4Ttl(v, ip, f.ttl);
  H.setIpv4Protocol(v, ip, H.IPV4_PROTO.UDP);
  H.setIpv4Src(v, ip, f.ipSrc);
  H.setIpv4Dst(v, ip, f.ipDst);
  H.setIpv4Checksum(v, ip, ipv4Checksum(bytes, ip, IPV4_SIZE));

  const udp = ip + IPV4_SIZE;
  H.setUdpSrcPort(v, udp, f.udpSrcPort);
  H.setUdpDstPort(v, udp, H.UDP_PORT.ROCEV2);
  H.setUdpLength(v, udp, ipLen - IPV4_SIZE);
  // checksum left 0: not computed, as RFC 768 allows over IPv4 and RoCEv2 NICs send

  const bth = udp + UDP_SIZE;
  const body = info.extBytes + f.payload.length;
  H.setBthOpcode(v, bth, f.opcode);
  H.setBthSe(v, bth, +f.se);
  H.setBthMigReq(v, bth, +f.migReq);
  H.setBthPadCnt(v, bth, (4 - (body & 3)) & 3);
  H.setBthPKey(v, bth, f.pKey);
  H.setBthFecn(v, bth, +f.fecn);
  H.setBthBecn(v, bth, +f.becn);
  H.setBthDestQp(v, bth, f.destQp);
  H.setBthAckReq(v, bth, +f.ackReq);
  H.setBthPsn(v, bth, f.psn);

  let at = bth + BTH_SIZE;
  for (const h of info.headers) {
    if (h === "Reth") {
      const r = f.reth!;
      checkBits("reth.rkey", r.rkey, 32); checkBits("reth.dmaLength", r.dmaLength, 32);
      H.setRethVa(v, at, BigInt.asUintN(64, r.va));
      H.setRethRkey(v, at, r.rkey);
      H.setRethDmaLength(v, at, r.dmaLength);
      at += RETH_SIZE;
    } else if (h === "Aeth") {
      checkBits("aeth.syndrome", f.aeth!.syndrome, 8); checkBits("aeth.msn", f.aeth!.msn, 24);
      H.setAethSyndrome(v, at, f.aeth!.syndrome);
      H.setAethMsn(v, at, f.aeth!.msn);
      at += AETH_SIZE;
    } else if (h === "ImmDt") {
      checkBits("immDt", f.immDt!, 32);
      H.setImmDtData(v, at, f.immDt!);
      at += IMM_DT_SIZE;
    } else at += CNP_SIZE; // reserved, zero
  }
  bytes.set(f.payload, at);
  H.setIcrcValue(v, total - ICRC_SIZE, icrcIpv4(bytes.subarray(ip)));
  return bytes;
}

/** Why parseFrame refused a frame. */
export type FrameError =
  | "truncated" // shorter than its headers say
  | "not-ipv4" // EtherType, IP version or IHL
  | "ip-checksum"
  | "ip-length" // total length below its headers or beyond the frame
  | "fragment" // MF set or a fragment offset: RoCEv2 is never fragmented
  | "not-udp"
  | "not-rocev2" // UDP destination port is not 4791
  | "udp-length" // UDP length disagrees with the IP total length
  | "opcode" // an opcode menic does not know
  | "pad" // PadCnt larger than the payload, or a payload where the opcode has none
  | "icrc";

export type ParseResult = { ok: true; frame: RoceFrame; icrc: number } | { ok: false; error: FrameError };

/** Reads a frame back. Bytes after the IP datagram (Ethernet padding) are ignored. */
export function parseFrame(bytes: Uint8Array): ParseResult {
  const fail = (error: FrameError): ParseResult => ({ ok: false, error });
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
  if (H.getUdpDstPort(v, udp) !== H.UDP_PORT.ROCEV2) return fail("not-rocev2");
  if (H.getUdpLength(v, udp) !== ipLen - ihl) return fail("udp-length");
  const bth = udp + UDP_SIZE;
  const end = ip + ipLen; // one past the ICRC
  if (end < bth + BTH_SIZE + ICRC_SIZE) return fail("ip-length");
  const opcode = H.getBthOpcode(v, bth);
  const info = OPCODES.get(opcode);
  if (!info) return fail("opcode");
  let at = bth + BTH_SIZE;
  if (end - ICRC_SIZE < at + info.extBytes) return fail("ip-length");
  const f: RoceFrame = {
    ethDst: H.getEthDst(v, 0), ethSrc: H.getEthSrc(v, 0),
    ipSrc: H.getIpv4Src(v, ip), ipDst: H.getIpv4Dst(v, ip), dscp: H.getIpv4Dscp(v, ip), ecn: H.getIpv4Ecn(v, ip),
    ttl: H.getIpv4Ttl(v, ip), ipId: H.getIpv4Identification(v, ip), udpSrcPort: H.getUdpSrcPort(v, udp),
    opcode, se: !!H.getBthSe(v, bth), migReq: !!H.getBthMigReq(v, bth), pKey: H.getBthPKey(v, bth),
    fecn: !!H.getBthFecn(v, bth), becn: !!H.getBthBecn(v, bth), destQp: H.getBthDestQp(v, bth),
    ackReq: !!H.getBthAckReq(v, bth), psn: H.getBthPsn(v, bth), payload: new Uint8Array(0),
  };
  for (const h of info.headers) {
    if (h === "Reth") {
      f.reth = { va: H.getRethVa(v, at), rkey: H.getRethRkey(v, at), dmaLength: H.getRethDmaLength(v, at) };
      at += RETH_SIZE;
    } else if (h === "Aeth") {
      f.aeth = { syndrome: H.getAethSyndrome(v, at), msn: H.getAethMsn(v, at) };
      at += AETH_SIZE;
    } else if (h === "ImmDt") {
      f.immDt = H.getImmDtData(v, at);
      at += IMM_DT_SIZE;
    } else at += CNP_SIZE;
  }
  const payloadEnd = end - ICRC_SIZE - H.getBthPadCnt(v, bth);
  if (payloadEnd < at || (!info.payload && end - ICRC_SIZE !== at)) return fail("pad");
  f.payload = bytes.slice(at, payloadEnd);
  const icrc = H.getIcrcValue(v, end - ICRC_SIZE);
  if (icrcIpv4(bytes.subarray(ip, end)) !== icrc) return fail("icrc");
  return { ok: true, frame: f, icrc };
}
