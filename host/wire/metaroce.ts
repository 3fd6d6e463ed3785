// host/wire/ holds wire formats, the bytes a link carries or a capture keeps: the one thing
// "wire" names among menic's folders (the core's checksums are assembly/checksum/).
//
// MetaRoCE-like frames on the host (docs/protocol.md, "Packets"): a plain description of a packet
// (MetaroceFrame) and the bytes on the wire, both ways. Ethernet II / IPv4 / UDP to port 4792
// (udp-ipv4.ts) / the data header Mrh (DATA, PROBE) or the ACK header Mra / the payload (DATA
// only) / the Mrc trailer: the CRC-32 of the UDP payload before it (the ICRC's CRC, icrc.ts, with
// nothing masked), least significant byte first. Byte access is the generated views of
// layouts/headers (host/generated/headers.ts); this file holds the meaning: which header a type
// has, lengths, the SACK's bit order, the CRC. For tests, captures and tools/wireshark/metaroce.lua's
// checks; the device's own sender and receiver are assembly/metaroce/.
// buildMetaroceFrame throws on a description it cannot send (a programming error);
// parseMetaroceFrame never throws and says what is wrong with bytes it refuses.

import * as H from "../generated/headers.js";
import { MRT, MRT_NAK } from "../generated/headers.js";
import { crc32 } from "./icrc.js";
import { checkBits, readUdpIpv4, udpIpv4Defaults, udpIpv4Frame, UDP_IPV4_BYTES, type UdpIpv4Error, type UdpIpv4Fields } from "./udp-ipv4.js";

const { MRH_SIZE, MRA_SIZE, MRC_SIZE } = H;
const WHAT = "MetaRoCE-like frame";

/** The SACK's reach: bit i of `sack` is PSN cum + 1 + i (MRT_PATH_WINDOW). */
export const SACK_BITS = MRT.PATH_WINDOW;
const SACK_WORDS = SACK_BITS / 64;

/** A DATA or PROBE packet: every field of its Mrh, and the payload. */
export interface MetaroceData extends UdpIpv4Fields {
  type: typeof MRT.TYPE_DATA | typeof MRT.TYPE_PROBE;
  /** MRT.FLAG_* bits */
  flags: number;
  path: number;
  epoch: number;
  psn: number;
  floor: number;
  /** MRT.OP_* */
  op: number;
  destQp: number;
  ssn: number;
  msn: number;
  offset: number;
  length: number;
  addr: bigint;
  rkey: number;
  imm: number;
  /** empty in a PROBE */
  payload: Uint8Array;
}

/** An ACK: every field of its Mra. */
export interface MetaroceAck extends UdpIpv4Fields {
  type: typeof MRT.TYPE_ACK;
  /** reserved, sent as 0 */
  flags: number;
  path: number;
  epoch: number;
  cum: number;
  /** 256 bits: bit i (least significant first) set when PSN cum + 1 + i arrived. On the wire it is most significant first. */
  sack: bigint;
  ce: number;
  /** reserved, sent as 0; read back as it came, so that a parsed ACK builds the same bytes */
  resv: number;
  /** the receiver's fair share for this sender, a fraction of its line rate × 65535 */
  hint: number;
  nakQp: number;
  /** MRT_NAK.* (NONE: no NAK) */
  nakCode: number;
  nakSsn: number;
}

/** A MetaRoCE-like packet, every field the wire carries apart from lengths, checksums and the CRC trailer. */
export type MetaroceFrame = MetaroceData | MetaroceAck;

type Optional<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;
/** What buildMetaroceFrame needs of a DATA or PROBE packet: the rest defaults as in metaroceDefaults. */
export type MetaroceDataSpec = Optional<MetaroceData, Exclude<keyof MetaroceData, "type" | "ipSrc" | "ipDst" | "path" | "psn">>;
/** What buildMetaroceFrame needs of an ACK: the rest defaults as in metaroceDefaults. */
export type MetaroceAckSpec = Optional<MetaroceAck, Exclude<keyof MetaroceAck, "type" | "ipSrc" | "ipDst" | "path" | "cum">>;
export type MetaroceSpec = MetaroceDataSpec | MetaroceAckSpec;

const defined = <T extends object>(spec: T): Partial<T> => Object.fromEntries(Object.entries(spec).filter(([, v]) => v !== undefined)) as Partial<T>;

/**
 * The full description buildMetaroceFrame sends for `spec`: a field left out or undefined takes
 * its default (the envelope's as for RoCEv2; the path floor is the PSN itself, nothing older
 * outstanding; a PROBE's destination QP is MRT.PROBE_QP; everything else 0 or empty).
 */
export function metaroceDefaults(spec: MetaroceDataSpec): MetaroceData;
export function metaroceDefaults(spec: MetaroceAckSpec): MetaroceAck;
export function metaroceDefaults(spec: MetaroceSpec): MetaroceFrame;
export function metaroceDefaults(spec: MetaroceSpec): MetaroceFrame {
  const env = udpIpv4Defaults(spec.ipSrc, spec.ipDst);
  if (spec.type === MRT.TYPE_ACK)
    return { ...env, flags: 0, epoch: 0, sack: 0n, ce: 0, resv: 0, hint: 0, nakQp: 0, nakCode: MRT_NAK.NONE, nakSsn: 0, ...(defined(spec) as MetaroceAckSpec) };
  return {
    ...env, flags: 0, epoch: 0, floor: spec.psn, op: MRT.OP_WRITE, destQp: spec.type === MRT.TYPE_PROBE ? MRT.PROBE_QP : 0,
    ssn: 0, msn: 0, offset: 0, length: 0, addr: 0n, rkey: 0, imm: 0, payload: new Uint8Array(0), ...(defined(spec) as MetaroceDataSpec),
  };
}

/** The MRT.OP_* values a DATA packet may carry. */
export const METAROCE_OPS: readonly number[] = [MRT.OP_WRITE, MRT.OP_WRITE_IMM, MRT.OP_SEND, MRT.OP_SEND_IMM, MRT.OP_READ_REQ, MRT.OP_READ_RESP];
/** The MRT_NAK.* codes an ACK may carry. */
export const METAROCE_NAKS: readonly number[] = [MRT_NAK.NONE, MRT_NAK.RNR, MRT_NAK.REMOTE_ACCESS, MRT_NAK.INVALID_REQUEST];

/** Bytes of the UDP payload of `f`: its header, payload and CRC trailer. */
export const metaroceUdpPayloadBytes = (f: Pick<MetaroceData, "type" | "payload"> | Pick<MetaroceAck, "type">): number =>
  (f.type === MRT.TYPE_ACK ? MRA_SIZE : MRH_SIZE + (f as MetaroceData).payload.length) + MRC_SIZE;

/** Bytes of the frame buildMetaroceFrame makes for `f` (no Ethernet FCS). */
export const metaroceFrameBytes = (f: Parameters<typeof metaroceUdpPayloadBytes>[0]): number => UDP_IPV4_BYTES + metaroceUdpPayloadBytes(f);

/** The Mrc value of a UDP payload whose last MRC_SIZE bytes are the trailer: the CRC-32 of everything before it. */
export const metaroceCrc = (udpPayload: Uint8Array): number => crc32(udpPayload.subarray(0, udpPayload.length - MRC_SIZE));

/** The PSNs an ACK's SACK says arrived, lowest first (32-bit, wrapping). */
export function sackPsns(ack: Pick<MetaroceAck, "cum" | "sack">): number[] {
  const out: number[] = [];
  for (let i = 0; i < SACK_BITS; i++) if ((ack.sack >> BigInt(i)) & 1n) out.push((ack.cum + 1 + i) >>> 0);
  return out;
}

/** The SACK that says `psns` arrived above `cum`; throws a RangeError for a PSN outside cum + 1 .. cum + 256. */
export function sackOf(cum: number, psns: Iterable<number>): bigint {
  let sack = 0n;
  for (const p of psns) {
    const i = (p - cum - 1) >>> 0;
    if (i >= SACK_BITS) throw new RangeError(`${WHAT}: PSN ${p} is not within the SACK above cumulative PSN ${cum}`);
    sack |= 1n << BigInt(i);
  }
  return sack;
}

/** The 64-bit wire word k of `sack` (sackK): its bit 63 - j is sack bit 64k + j. */
function sackWord(sack: bigint, k: number): bigint {
  let w = 0n;
  for (let j = 0; j < 64; j++) if ((sack >> BigInt(64 * k + j)) & 1n) w |= 1n << BigInt(63 - j);
  return w;
}
/** The inverse: `word`'s bits as sack bits 64k .. 64k + 63. */
function sackFromWord(word: bigint, k: number): bigint {
  let s = 0n;
  for (let j = 0; j < 64; j++) if ((word >> BigInt(63 - j)) & 1n) s |= 1n << BigInt(64 * k + j);
  return s;
}
const SACK_SET = [H.setMraSack0, H.setMraSack1, H.setMraSack2, H.setMraSack3];
const SACK_GET = [H.getMraSack0, H.getMraSack1, H.getMraSack2, H.getMraSack3];

function checkData(f: MetaroceData): void {
  if (f.type !== MRT.TYPE_DATA && f.type !== MRT.TYPE_PROBE) throw new RangeError(`${WHAT}: type ${f.type} is not DATA, ACK or PROBE`);
  for (const [name, bits] of [["flags", 8], ["path", 8], ["epoch", 8], ["psn", 32], ["floor", 32], ["op", 8], ["destQp", 24], ["ssn", 32],
    ["msn", 32], ["offset", 32], ["length", 32], ["rkey", 32], ["imm", 32]] as const) checkBits(WHAT, name, f[name], bits);
  if (typeof f.addr !== "bigint" || f.addr < 0n || f.addr >= 1n << 64n) throw new RangeError(`${WHAT}: addr ${f.addr} does not fit 64 bits`);
  if (f.type === MRT.TYPE_PROBE && f.payload.length) throw new RangeError(`${WHAT}: a PROBE carries no payload`);
  if (f.type === MRT.TYPE_DATA && !METAROCE_OPS.includes(f.op)) throw new RangeError(`${WHAT}: op ${f.op} is not one menic sends`);
  if (f.offset + f.payload.length > f.length)
    throw new RangeError(`${WHAT}: ${f.payload.length} bytes at offset ${f.offset} run past the message's ${f.length}`);
}

function checkAck(f: MetaroceAck): void {
  for (const [name, bits] of [["flags", 8], ["path", 8], ["epoch", 8], ["cum", 32], ["ce", 8], ["resv", 8], ["hint", 16], ["nakQp", 24], ["nakCode", 8], ["nakSsn", 32]] as const)
    checkBits(WHAT, name, f[name], bits);
  if (typeof f.sack !== "bigint" || f.sack < 0n || f.sack >= 1n << BigInt(SACK_BITS)) throw new RangeError(`${WHAT}: sack does not fit ${SACK_BITS} bits`);
  if (!METAROCE_NAKS.includes(f.nakCode)) throw new RangeError(`${WHAT}: NAK code ${f.nakCode} is not one menic sends`);
}

/** The frame's bytes: lengths, IPv4 checksum and CRC trailer filled in. Throws a RangeError for a description that cannot be sent. */
export function buildMetaroceFrame(spec: MetaroceSpec): Uint8Array {
  const f = metaroceDefaults(spec);
  if (f.type === MRT.TYPE_ACK) checkAck(f);
  else checkData(f);
  const bytes = udpIpv4Frame(WHAT, f, MRT.UDP_PORT, metaroceUdpPayloadBytes(f));
  const v = new DataView(bytes.buffer);
  const h = UDP_IPV4_BYTES;
  if (f.type === MRT.TYPE_ACK) {
    H.setMraVersion(v, h, MRT.VERSION);
    H.setMraType(v, h, f.type);
    H.setMraFlags(v, h, f.flags);
    H.setMraPath(v, h, f.path);
    H.setMraEpoch(v, h, f.epoch);
    H.setMraCum(v, h, f.cum);
    SACK_SET.forEach((set, k) => set(v, h, sackWord(f.sack, k)));
    H.setMraCe(v, h, f.ce);
    H.setMraResv(v, h, f.resv);
    H.setMraHint(v, h, f.hint);
    H.setMraNakQp(v, h, f.nakQp);
    H.setMraNakCode(v, h, f.nakCode);
    H.setMraNakSsn(v, h, f.nakSsn);
  } else {
    H.setMrhVersion(v, h, MRT.VERSION);
    H.setMrhType(v, h, f.type);
    H.setMrhFlags(v, h, f.flags);
    H.setMrhPath(v, h, f.path);
    H.setMrhEpoch(v, h, f.epoch);
    H.setMrhPsn(v, h, f.psn);
    H.setMrhFloor(v, h, f.floor);
    H.setMrhOp(v, h, f.op);
    H.setMrhDestQp(v, h, f.destQp);
    H.setMrhSsn(v, h, f.ssn);
    H.setMrhMsn(v, h, f.msn);
    H.setMrhOffset(v, h, f.offset);
    H.setMrhLength(v, h, f.length);
    H.setMrhAddr(v, h, f.addr);
    H.setMrhRkey(v, h, f.rkey);
    H.setMrhImm(v, h, f.imm);
    bytes.set(f.payload, h + MRH_SIZE);
  }
  H.setMrcValue(v, bytes.length - MRC_SIZE, metaroceCrc(bytes.subarray(h)));
  return bytes;
}

/** Why parseMetaroceFrame refused a frame: the envelope's reasons (udp-ipv4.ts), or: */
export type MetaroceError =
  | Exclude<UdpIpv4Error, "port">
  | "not-metaroce" // UDP destination port is not 4792
  | "version" // not MRT.VERSION: nothing else can be read
  | "type" // not DATA, ACK or PROBE
  | "short" // the UDP payload is shorter than its header and CRC trailer
  | "crc" // the Mrc trailer is not the CRC-32 of what precedes it
  | "length" // bytes after an ACK's header, or a PROBE with a payload
  | "op" // a DATA packet's op is not an MRT.OP_*
  | "bounds" // a DATA packet's payload runs past its message's length (offset + payload > length)
  | "nak-code"; // an ACK's NAK code is not an MRT_NAK.*

/** Every reason parseMetaroceFrame gives, in the order it checks them (tools/wireshark/metaroce.lua names the same). */
export const METAROCE_ERRORS: readonly MetaroceError[] = ["truncated", "not-ipv4", "ip-checksum", "fragment", "not-udp", "ip-length", "not-metaroce",
  "udp-length", "version", "type", "short", "crc", "length", "op", "bounds", "nak-code"];

export type MetaroceParse = { ok: true; frame: MetaroceFrame; crc: number } | { ok: false; error: MetaroceError };

/** Reads a frame back. Bytes after the IP datagram (Ethernet padding) are ignored. Never throws. */
export function parseMetaroceFrame(bytes: Uint8Array): MetaroceParse {
  const fail = (error: MetaroceError): MetaroceParse => ({ ok: false, error });
  const env = readUdpIpv4(bytes, MRT.UDP_PORT);
  if (!env.ok) return fail(env.error === "port" ? "not-metaroce" : env.error);
  const { payload: h, end } = env;
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (end - h < 1) return fail("short");
  // version and type share the first byte in both headers
  if (H.getMrhVersion(v, h) !== MRT.VERSION) return fail("version");
  const type = H.getMrhType(v, h);
  if (type !== MRT.TYPE_DATA && type !== MRT.TYPE_ACK && type !== MRT.TYPE_PROBE) return fail("type");
  const headerBytes = type === MRT.TYPE_ACK ? MRA_SIZE : MRH_SIZE;
  if (end - h < headerBytes + MRC_SIZE) return fail("short");
  const crc = H.getMrcValue(v, end - MRC_SIZE);
  if (metaroceCrc(bytes.subarray(h, end)) !== crc) return fail("crc");
  const bodyEnd = end - MRC_SIZE;
  if (type === MRT.TYPE_ACK) {
    if (bodyEnd !== h + MRA_SIZE) return fail("length");
    const nakCode = H.getMraNakCode(v, h);
    if (!METAROCE_NAKS.includes(nakCode)) return fail("nak-code");
    let sack = 0n;
    SACK_GET.forEach((get, k) => { sack |= sackFromWord(get(v, h), k); });
    const frame: MetaroceAck = {
      ...env.fields, type, flags: H.getMraFlags(v, h), path: H.getMraPath(v, h), epoch: H.getMraEpoch(v, h), cum: H.getMraCum(v, h), sack,
      ce: H.getMraCe(v, h), resv: H.getMraResv(v, h), hint: H.getMraHint(v, h), nakQp: H.getMraNakQp(v, h), nakCode, nakSsn: H.getMraNakSsn(v, h),
    };
    return { ok: true, frame, crc };
  }
  const payload = bytes.slice(h + MRH_SIZE, bodyEnd);
  if (type === MRT.TYPE_PROBE && payload.length) return fail("length");
  const op = H.getMrhOp(v, h);
  if (type === MRT.TYPE_DATA && !METAROCE_OPS.includes(op)) return fail("op");
  const offset = H.getMrhOffset(v, h), length = H.getMrhLength(v, h);
  if (offset + payload.length > length) return fail("bounds");
  const frame: MetaroceData = {
    ...env.fields, type, flags: H.getMrhFlags(v, h), path: H.getMrhPath(v, h), epoch: H.getMrhEpoch(v, h), psn: H.getMrhPsn(v, h),
    floor: H.getMrhFloor(v, h), op, destQp: H.getMrhDestQp(v, h), ssn: H.getMrhSsn(v, h), msn: H.getMrhMsn(v, h), offset, length,
    addr: H.getMrhAddr(v, h), rkey: H.getMrhRkey(v, h), imm: H.getMrhImm(v, h), payload,
  };
  return { ok: true, frame, crc };
}
