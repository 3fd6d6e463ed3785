// The frames of a conformance run, in a case's terms: a tester's frame built from the fields a
// case names (host/wire/ writes the bytes), damaged on request; a frame the IUT sent read back
// (host/wire/ parses it) into flat fields by the same names, matched against what a step
// expects, and described in one line for a failure's message.

import type { Bytes, Damage, FieldMatch, SendFrame, Transport, Value } from "./case.js";
import { resolve, bytesOf, ValueError, type Vars } from "./values.js";
import { buildMetaroceFrame, parseMetaroceFrame, sackOf, sackPsns, metaroceCrc, type MetaroceSpec } from "../wire/metaroce.js";
import { buildFrame, parseFrame, type FrameSpec } from "../wire/rocev2.js";
import { ipv4Checksum, UDP_IPV4_BYTES } from "../wire/udp-ipv4.js";
import { icrcIpv4 } from "../wire/icrc.js";
import { MRT, MRT_NAK, OP, IPV4_ECN, AETH_SYNDROME, AETH_NAK, ETH_SIZE, IPV4_SIZE, MRC_SIZE, ICRC_SIZE, setMrcValue, setIcrcValue } from "../generated/headers.js";

/** A frame's fields, flat: numbers, the payload's bytes, and lists (a SACK's PSNs). */
export type Fields = Record<string, number | number[] | Uint8Array>;

const prefixed = (o: Record<string, number>, prefix: string): Record<string, number> =>
  Object.fromEntries(Object.entries(o).filter(([k]) => k.startsWith(prefix)).map(([k, v]) => [k.slice(prefix.length), v]));

/** Names each field takes, by transport. */
const MRT_NAMES: Record<string, Record<string, number>> = {
  type: prefixed(MRT, "TYPE_"),
  op: prefixed(MRT, "OP_"),
  nakCode: { ...MRT_NAK },
  ecn: { ...IPV4_ECN },
  destQp: { PROBE_QP: MRT.PROBE_QP },
};
const MRT_FLAGS = prefixed(MRT, "FLAG_");

/** A RoCEv2 AETH as one number: the syndrome's type, and for a NAK its code (an ACK's credits and an RNR NAK's timer left out). */
const AETH_KINDS: Record<string, number> = {
  ACK: AETH_SYNDROME.ACK, RNR: AETH_SYNDROME.RNR_NAK,
  NAK_PSN_SEQ: AETH_SYNDROME.NAK | AETH_NAK.PSN_SEQ_ERR, NAK_INV_REQ: AETH_SYNDROME.NAK | AETH_NAK.INVALID_REQUEST,
  NAK_REM_ACCESS: AETH_SYNDROME.NAK | AETH_NAK.REMOTE_ACCESS_ERROR, NAK_REM_OP: AETH_SYNDROME.NAK | AETH_NAK.REMOTE_OPERATIONAL_ERROR,
};
const aethKind = (syndrome: number): number =>
  (syndrome & AETH_SYNDROME.TYPE_MASK) === AETH_SYNDROME.NAK ? syndrome : syndrome & AETH_SYNDROME.TYPE_MASK;
const ROCE_NAMES: Record<string, Record<string, number>> = { opcode: { ...OP }, aeth: AETH_KINDS, ecn: { ...IPV4_ECN } };

/** Sequence numbers: "$psn+1" wraps as the field does (32 bits in the MetaRoCE-like headers, 24 in RoCEv2's BTH and AETH). */
const SEQUENCE = new Set(["psn", "floor", "cum", "ssn", "msn", "nakSsn"]);
const wrapOf = (t: Transport, key: string): ((n: number) => number) =>
  !SEQUENCE.has(key) ? (n) => n : t === "rocev2" ? (n) => n & 0xffffff : (n) => n >>> 0;

const namesOf = (t: Transport) => (t === "metaroce" ? MRT_NAMES : ROCE_NAMES);

/** The bits of a flags value: a number, or names of MRT.FLAG_*. */
function flagBits(v: unknown, vars: Vars, what: string): number {
  if (!Array.isArray(v)) return resolve(v as Value, vars, {}, what);
  return v.reduce<number>((bits, name) => {
    if (typeof name !== "string" || !Object.hasOwn(MRT_FLAGS, name)) throw new ValueError(`${what}: ${JSON.stringify(name)} is not one of ${Object.keys(MRT_FLAGS).join(", ")}`);
    return bits | MRT_FLAGS[name]!;
  }, 0);
}

/** The bytes of the tester's frame `f` from `ipSrc` to `ipDst`, damaged as it asks. */
export function buildTesterFrame(t: Transport, f: SendFrame, vars: Vars, ipSrc: number, ipDst: number): Uint8Array {
  const names = namesOf(t);
  const spec: Record<string, unknown> = { ipSrc, ipDst };
  let sackList: Value[] | undefined;
  for (const [key, raw] of Object.entries(f)) {
    if (raw === undefined || key === "damage") continue;
    const what = `field ${key}`;
    if (key === "payload") spec.payload = bytesOf(raw as Bytes, what);
    else if (key === "flags" && t === "metaroce") spec.flags = flagBits(raw, vars, what);
    else if (key === "sackPsns") sackList = raw as unknown as Value[];
    else if (key === "addr") spec.addr = BigInt(resolve(raw as Value, vars, {}, what));
    else if (typeof raw === "boolean") spec[key] = raw;
    else {
      const n = resolve(raw as Value, vars, names[key], what);
      spec[key] = wrapOf(t, key)(n);
    }
  }
  let bytes: Uint8Array;
  if (t === "metaroce") {
    if (sackList) spec.sack = sackOf(spec.cum as number, sackList.map((p) => resolve(p, vars, {}, "sackPsns") >>> 0));
    bytes = buildMetaroceFrame(spec as unknown as MetaroceSpec);
  } else {
    // the case names the RETH's and AETH's fields flat; the builder takes them as headers
    const { va, rkey, dmaLength, aeth, msn, ...rest } = spec;
    if (va !== undefined || rkey !== undefined || dmaLength !== undefined) rest.reth = { va: BigInt((va as number) ?? 0), rkey: rkey ?? 0, dmaLength: dmaLength ?? 0 };
    if (aeth !== undefined || msn !== undefined) {
      const kind = (aeth as number | undefined) ?? AETH_SYNDROME.ACK;
      // an ACK says it does not limit the requester; an RNR NAK asks for the shortest timer code
      rest.aeth = { syndrome: kind === AETH_SYNDROME.ACK ? AETH_SYNDROME.CREDITS_INVALID : kind === AETH_SYNDROME.RNR_NAK ? kind | 1 : kind, msn: msn ?? 0 };
    }
    bytes = buildFrame(rest as unknown as FrameSpec);
  }
  return damage(t, bytes, f.damage ?? []);
}

/** `bytes` with its IPv4 header checksum and its transport's trailer (Mrc, ICRC) computed again: damage only the checks would catch no longer caught. */
function reseal(t: Transport, bytes: Uint8Array): Uint8Array {
  const out = bytes.slice(), v = new DataView(out.buffer);
  const ip = ETH_SIZE;
  if (out.length < UDP_IPV4_BYTES + 4) throw new ValueError(`damage: a ${out.length}-byte frame has no trailer to reseal`);
  v.setUint16(ip + 10, 0);
  v.setUint16(ip + 10, ipv4Checksum(out, ip, IPV4_SIZE));
  if (t === "metaroce") setMrcValue(v, out.length - MRC_SIZE, metaroceCrc(out.subarray(UDP_IPV4_BYTES)));
  else setIcrcValue(v, out.length - ICRC_SIZE, icrcIpv4(out.subarray(ip)));
  return out;
}

function damage(t: Transport, bytes: Uint8Array, ds: readonly Damage[]): Uint8Array {
  let out = bytes;
  for (const d of ds) {
    if ("reseal" in d) out = reseal(t, out);
    else if ("truncate" in d) out = out.slice(0, d.truncate);
    else {
      if (d.at < 0 || d.at >= out.length) throw new ValueError(`damage: byte ${d.at} is outside the ${out.length}-byte frame`);
      out = out.slice();
      out[d.at]! ^= d.xor;
    }
  }
  return out;
}

/** A frame the IUT sent, read back: its fields by the names cases use, or why it could not be read. */
export type Decoded = { ok: true; fields: Fields } | { ok: false; error: string };

/** Reads the IUT's frame `bytes` (Ethernet header to trailer). */
export function decodeIutFrame(t: Transport, bytes: Uint8Array): Decoded {
  const flat = (o: object): Fields => {
    const out: Fields = {};
    for (const [k, v] of Object.entries(o)) {
      if (typeof v === "number") out[k] = v;
      else if (typeof v === "boolean") out[k] = v ? 1 : 0;
      else if (typeof v === "bigint" && k !== "sack") out[k] = Number(v);
      else if (v instanceof Uint8Array) out[k] = v;
    }
    return out;
  };
  if (t === "metaroce") {
    const p = parseMetaroceFrame(bytes);
    if (!p.ok) return { ok: false, error: `not a MetaRoCE-like frame (${p.error})` };
    const fields = flat(p.frame);
    if (p.frame.type === MRT.TYPE_ACK) fields.sackPsns = sackPsns(p.frame);
    return { ok: true, fields };
  }
  const p = parseFrame(bytes);
  if (!p.ok) return { ok: false, error: `not a RoCEv2 frame (${p.error})` };
  const fields = flat(p.frame);
  if (p.frame.reth) Object.assign(fields, { va: Number(p.frame.reth.va), rkey: p.frame.reth.rkey, dmaLength: p.frame.reth.dmaLength });
  if (p.frame.aeth) Object.assign(fields, { aeth: aethKind(p.frame.aeth.syndrome), syndrome: p.frame.aeth.syndrome, msn: p.frame.aeth.msn });
  if (p.frame.immDt !== undefined) fields.immDt = p.frame.immDt;
  return { ok: true, fields };
}

/**
 * Whether the decoded frame `d` is what `match` says (every field named); null when it is, else
 * the first field that is not, as text.
 */
export function mismatch(t: Transport, d: Decoded, match: Record<string, FieldMatch>, vars: Vars): string | null {
  if (!d.ok) return d.error;
  const names = namesOf(t);
  for (const [key, want] of Object.entries(match)) {
    const got = d.fields[key];
    const what = `field ${key}`;
    if (key === "payload") {
      const exp = bytesOf(want as unknown as Bytes, what);
      if (!(got instanceof Uint8Array) || got.length !== exp.length || got.some((b, i) => b !== exp[i])) return `${key} is not the expected ${exp.length} bytes`;
      continue;
    }
    if (key === "payloadLength") {
      const len = d.fields.payload instanceof Uint8Array ? d.fields.payload.length : 0;
      const r = numberMismatch(len, want, vars, {}, what);
      if (r) return `payload length ${r}`;
      continue;
    }
    if (got === undefined) return `has no ${key}`;
    if (key === "sackPsns") {
      const exp = (want as Value[]).map((p) => resolve(p, vars, {}, what) >>> 0).sort((a, b) => a - b);
      // as sets: a window across 2^32 lists its PSNs in sequence order, not in numeric order
      const list = [...(got as number[])].sort((a, b) => a - b);
      if (list.length !== exp.length || list.some((p, i) => p !== exp[i])) return `sackPsns [${(got as number[]).join(", ")}], expected [${exp.join(", ")}]`;
      continue;
    }
    if (key === "flags" && t === "metaroce" && typeof got === "number") {
      if (Array.isArray(want)) {
        const bits = flagBits(want, vars, what);
        if (got !== bits) return `flags ${flagNames(got)}, expected ${flagNames(bits)}`;
      } else if (typeof want === "object" && want !== null && ("has" in want || "lacks" in want)) {
        const w = want as { has?: string[]; lacks?: string[] };
        const has = flagBits(w.has ?? [], vars, what), lacks = flagBits(w.lacks ?? [], vars, what);
        if ((got & has) !== has || (got & lacks) !== 0) return `flags ${flagNames(got)}, expected${w.has ? ` ${w.has.join("|")} set` : ""}${w.lacks ? ` ${w.lacks.join("|")} clear` : ""}`;
      } else if (got !== resolve(want as Value, vars, {}, what)) return `flags ${flagNames(got)}`;
      continue;
    }
    if (typeof got !== "number") return `${key} is not a number`;
    const r = numberMismatch(got, want, vars, names[key] ?? {}, what, wrapOf(t, key));
    if (r) return `${key} ${r}`;
  }
  return null;
}

/** Why number `got` is not `want` (a value, {min, max} or {not}), or null. */
function numberMismatch(got: number, want: FieldMatch, vars: Vars, names: Record<string, number>, what: string, wrap: (n: number) => number = (n) => n): string | null {
  const norm = (v: Value) => wrap(resolve(v, vars, names, what));
  const show = (n: number) => nameOf(names, n) ?? String(n);
  if (typeof want === "object" && want !== null && !Array.isArray(want)) {
    if ("not" in want) return got === norm(want.not) ? `is ${show(got)}, expected anything else` : null;
    const r = want as { min?: Value; max?: Value };
    if (r.min !== undefined && got < norm(r.min)) return `${show(got)} is below ${norm(r.min)}`;
    if (r.max !== undefined && got > norm(r.max)) return `${show(got)} is above ${norm(r.max)}`;
    return null;
  }
  const n = norm(want as Value);
  return got === n ? null : `${show(got)}, expected ${show(n)}`;
}

const nameOf = (names: Record<string, number>, n: number): string | undefined => Object.entries(names).find(([, v]) => v === n)?.[0];
const flagNames = (bits: number): string => Object.entries(MRT_FLAGS).filter(([, b]) => bits & b).map(([n]) => n).join("|") || "none";

/** One line saying what frame `d` is: its type and the fields a reader of a failure needs. */
export function describe(t: Transport, d: Decoded): string {
  if (!d.ok) return d.error;
  const f = d.fields;
  if (t === "metaroce") {
    const type = nameOf(MRT_NAMES.type!, f.type as number) ?? `type ${f.type}`;
    if (f.type === MRT.TYPE_ACK)
      return `ACK path ${f.path} epoch ${f.epoch} cum ${f.cum} sack [${(f.sackPsns as number[]).join(",")}] ce ${f.ce} hint ${f.hint}${f.nakCode ? ` NAK ${nameOf(MRT_NAMES.nakCode!, f.nakCode as number)} qp ${f.nakQp} ssn ${f.nakSsn}` : ""}`;
    return `${type} path ${f.path} epoch ${f.epoch} psn ${f.psn} floor ${f.floor} flags ${flagNames(f.flags as number)} op ${nameOf(MRT_NAMES.op!, f.op as number)} qp ${f.destQp} ssn ${f.ssn} msn ${f.msn} offset ${f.offset}/${f.length} payload ${(f.payload as Uint8Array).length}`;
  }
  const op = nameOf(ROCE_NAMES.opcode!, f.opcode as number) ?? `opcode ${f.opcode}`;
  return `${op} qp ${f.destQp} psn ${f.psn}${f.ackReq ? " ackReq" : ""}${f.aeth !== undefined ? ` ${nameOf(AETH_KINDS, f.aeth as number) ?? `syndrome ${f.syndrome}`} msn ${f.msn}` : ""}${f.va !== undefined ? ` va ${f.va} rkey ${f.rkey} len ${f.dmaLength}` : ""} payload ${(f.payload as Uint8Array).length}`;
}
