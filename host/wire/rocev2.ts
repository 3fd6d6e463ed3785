// host/wire/ holds wire formats, the bytes a link carries or a capture keeps: the one thing
// "wire" names among menic's folders (the core's checksums are assembly/checksum/).
//
// RoCEv2 frames on the host: a plain description of a packet (RoceFrame) and the bytes on the
// wire, both ways. Ethernet II / IPv4 / UDP to port 4791 (udp-ipv4.ts) / BTH / the extension
// headers the opcode calls for (RETH, AETH, ImmDt, or a CNP's reserved bytes) / payload and pad /
// ICRC (IBA Annex A17). Byte access is the generated views of layouts/headers (host/generated/
// headers.ts); this file holds the meaning: which headers an opcode has, lengths, checksums.
// buildFrame throws on a description it cannot send (a programming error); parseFrame never
// throws and says what is wrong with bytes it refuses.

import * as H from "../generated/headers.js";
import { OPCODES, OP } from "../generated/headers.js";
import { icrcIpv4 } from "./icrc.js";
import { checkBits, readUdpIpv4, udpIpv4Defaults, udpIpv4Frame, UDP_IPV4_BYTES, type UdpIpv4Error, type UdpIpv4Fields } from "./udp-ipv4.js";

export { ipv4Checksum, macForIpv4 } from "./udp-ipv4.js";

const { ETH_SIZE, BTH_SIZE, RETH_SIZE, AETH_SIZE, IMM_DT_SIZE, CNP_SIZE, ICRC_SIZE } = H;

/** A RoCEv2 packet, every field the wire carries apart from lengths, checksums and the ICRC (the UDP destination port is 4791). */
export interface RoceFrame extends UdpIpv4Fields {
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

/** The full description buildFrame sends for `spec`: a field left out or given as undefined takes its default; a CNP gets BECN set. */
export function frameDefaults(spec: FrameSpec): RoceFrame {
  const cnp = spec.opcode === OP.CNP;
  const given = Object.fromEntries(Object.entries(spec).filter(([, v]) => v !== undefined)) as FrameSpec;
  return {
    ...udpIpv4Defaults(spec.ipSrc, spec.ipDst),
    se: false, migReq: false, pKey: H.BTH.P_KEY_DEFAULT, fecn: false, becn: cnp, ackReq: false,
    payload: new Uint8Array(0),
    ...given,
  };
}

/** Bytes of the frame buildFrame makes for `f` (no Ethernet FCS). */
export function frameBytes(f: Pick<RoceFrame, "opcode" | "payload">): number {
  const info = OPCODES.get(f.opcode);
  const body = (info?.extBytes ?? 0) + f.payload.length;
  return UDP_IPV4_BYTES + BTH_SIZE + body + ((4 - (body & 3)) & 3) + ICRC_SIZE;
}

const WHAT = "RoCEv2 frame";

/** The frame's bytes: lengths, IPv4 checksum, pad and ICRC filled in. Throws a RangeError for a description that cannot be sent. */
export function buildFrame(spec: FrameSpec): Uint8Array {
  const f = frameDefaults(spec);
  const info = OPCODES.get(f.opcode);
  if (!info) throw new RangeError(`RoCEv2 frame: opcode 0x${f.opcode.toString(16)} is not one menic sends`);
  for (const [name, has] of [["reth", info.headers.includes("Reth")], ["aeth", info.headers.includes("Aeth")], ["immDt", info.headers.includes("ImmDt")]] as const)
    if ((f[name] !== undefined) !== has) throw new RangeError(`RoCEv2 frame: ${info.name} ${has ? "needs" : "has no"} ${name}`);
  if (!info.payload && f.payload.length) throw new RangeError(`RoCEv2 frame: ${info.name} carries no payload`);
  checkBits(WHAT, "pKey", f.pKey, 16);
  checkBits(WHAT, "destQp", f.destQp, 24); checkBits(WHAT, "psn", f.psn, 24);

  const total = frameBytes(f);
  const bytes = udpIpv4Frame(WHAT, f, H.UDP_PORT.ROCEV2, total - UDP_IPV4_BYTES);
  const v = new DataView(bytes.buffer);
  const ip = ETH_SIZE;
  const bth = UDP_IPV4_BYTES;
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
      checkBits(WHAT, "reth.rkey", r.rkey, 32); checkBits(WHAT, "reth.dmaLength", r.dmaLength, 32);
      H.setRethVa(v, at, BigInt.asUintN(64, r.va));
      H.setRethRkey(v, at, r.rkey);
      H.setRethDmaLength(v, at, r.dmaLength);
      at += RETH_SIZE;
    } else if (h === "Aeth") {
      checkBits(WHAT, "aeth.syndrome", f.aeth!.syndrome, 8); checkBits(WHAT, "aeth.msn", f.aeth!.msn, 24);
      H.setAethSyndrome(v, at, f.aeth!.syndrome);
      H.setAethMsn(v, at, f.aeth!.msn);
      at += AETH_SIZE;
    } else if (h === "ImmDt") {
      checkBits(WHAT, "immDt", f.immDt!, 32);
      H.setImmDtData(v, at, f.immDt!);
      at += IMM_DT_SIZE;
    } else at += CNP_SIZE; // reserved, zero
  }
  bytes.set(f.payload, at);
  H.setIcrcValue(v, total - ICRC_SIZE, icrcIpv4(bytes.subarray(ip)));
  return bytes;
}

/** Why parseFrame refused a frame: the envelope's reasons (udp-ipv4.ts), or: */
export type FrameError =
  | Exclude<UdpIpv4Error, "port">
  | "not-rocev2" // UDP destination port is not 4791
  | "ip-length" // total length below the BTH and ICRC
  | "opcode" // an opcode menic does not know
  | "pad" // PadCnt larger than the payload, or a payload where the opcode has none
  | "icrc";

export type ParseResult = { ok: true; frame: RoceFrame; icrc: number } | { ok: false; error: FrameError };

/** Reads a frame back. Bytes after the IP datagram (Ethernet padding) are ignored. */
export function parseFrame(bytes: Uint8Array): ParseResult {
  const fail = (error: FrameError): ParseResult => ({ ok: false, error });
  const env = readUdpIpv4(bytes, H.UDP_PORT.ROCEV2);
  if (!env.ok) return fail(env.error === "port" ? "not-rocev2" : env.error);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const { ip, payload: bth, end } = env; // end: one past the ICRC
  if (end < bth + BTH_SIZE + ICRC_SIZE) return fail("ip-length");
  const opcode = H.getBthOpcode(v, bth);
  const info = OPCODES.get(opcode);
  if (!info) return fail("opcode");
  let at = bth + BTH_SIZE;
  if (end - ICRC_SIZE < at + info.extBytes) return fail("ip-length");
  const f: RoceFrame = {
    ...env.fields,
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
