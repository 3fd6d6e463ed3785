// Checking a pcapng of MetaRoCE-like frames against what was sent, through Wireshark: tshark runs
// the repository's dissector (tools/wireshark/metaroce.lua) and every field it shows must equal
// the frame's description, field by field; a frame expected to be malformed must be flagged, with
// the reason host/wire/metaroce.ts gives, and no other frame may be. Shared by the tests that
// build frames by hand and those that capture a run (take a pcapng path and the frames expected).
import { fileURLToPath } from "node:url";
import { crc32 as zlibCrc32 } from "node:zlib";
import { expect } from "vitest";
import { MRT, HEADER_LAYOUTS } from "../../host/generated/headers.js";
import { buildMetaroceFrame, metaroceDefaults, type MetaroceError, type MetaroceFrame, type MetaroceSpec } from "../../host/wire/metaroce.js";
import { spawnSync } from "node:child_process";
import { TSHARK_SETTINGS, fieldsOf, colonHex } from "./tshark.js";

/** The dissector under test. */
export const METAROCE_LUA = fileURLToPath(new URL("../../tools/wireshark/metaroce.lua", import.meta.url));

/**
 * tshark on `file` with the MetaRoCE-like dissector loaded (and readCapture's settings). Throws when
 * the script does not load or fails on a packet: tshark says so on stderr and carries on without it.
 */
export function readMetaroceCapture(file: string, args: string[]): string {
  const r = spawnSync("tshark", ["-r", file, ...TSHARK_SETTINGS, "-X", `lua_script:${METAROCE_LUA}`, ...args], { encoding: "utf8", maxBuffer: 256 << 20 });
  if (r.status !== 0 || /Lua: Error|lua_error|\.lua:\d+:/.test(r.stderr)) throw new Error(`tshark with ${METAROCE_LUA} on ${file} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
}

/** Every packet of `file` as tshark dissects it with the MetaRoCE-like dissector: its fields by name. */
export const metarocePackets = (file: string) =>
  (JSON.parse(readMetaroceCapture(file, ["-T", "json", "--no-duplicate-keys"])) as { _source: { layers: unknown } }[]).map((p) => fieldsOf(p._source.layers));

/** What a capture's packet should be: a frame described as sent (filled in by metaroceDefaults), or one Wireshark must flag, and why. */
export type ExpectedPacket = MetaroceSpec | MetaroceFrame | { malformed: MetaroceError };

const ipText = (a: number) => [24, 16, 8, 0].map((s) => (a >>> s) & 0xff).join(".");
const macText = (m: number) => colonHex(Uint8Array.from({ length: 6 }, (_, i) => Math.floor(m / 2 ** (8 * (5 - i))) % 256));
const big = (s: string) => BigInt(s);

/** What the dissector must show for `f`, field by field: every value as tshark's JSON gives it, compared as numbers or text. */
function expectedFields(f: MetaroceFrame): Map<string, (string | number | bigint)[]> {
  const out = new Map<string, (string | number | bigint)[]>();
  const put = (k: string, ...v: (string | number | bigint)[]) => out.set(k, v);
  const bytes = buildMetaroceFrame(f);
  const udpPayload = bytes.subarray(42);
  const header = f.type === MRT.TYPE_ACK ? "Mra" : "Mrh";
  const layout = HEADER_LAYOUTS.find((h) => h.name === header)!;
  const values: Record<string, number | bigint> = { ...(f as unknown as Record<string, number | bigint>), version: MRT.VERSION };
  if (f.type === MRT.TYPE_ACK) {
    // the layout: "bit 63 - i (most significant first): PSN cum + 1 + i arrived", word k holding i = 64k ..
    for (let k = 0; k < 4; k++) {
      let w = 0n;
      for (let j = 0; j < 64; j++) if ((f.sack >> BigInt(64 * k + j)) & 1n) w |= 1n << BigInt(63 - j);
      values[`sack${k}`] = w;
    }
    const arrived = [...Array(256).keys()].filter((i) => (f.sack >> BigInt(i)) & 1n);
    const bitmap = [...Array(256).keys()].map((i) => ((f.sack >> BigInt(i)) & 1n ? "1" : "."));
    put("metaroce.mra.sack.bitmap", Array.from({ length: 32 }, (_, g) => bitmap.slice(8 * g, 8 * g + 8).join("")).join(" "));
    put("metaroce.mra.sack.count", arrived.length);
    if (arrived.length) {
      const highest = (f.cum + 1 + arrived.at(-1)!) % 2 ** 32;
      put("metaroce.mra.sack.highest", highest);
      // PSNs cum .. highest, less those that arrived
      put("metaroce.mra.sack.missing", ((highest - f.cum + 2 ** 32) % 2 ** 32) + 1 - arrived.length);
      put("metaroce.mra.sack.psn", ...arrived.map((i) => (f.cum + 1 + i) % 2 ** 32));
    }
    put("metaroce.mra.hint.fraction", f.hint / 65535);
  } else {
    for (const [name, bit] of [["first", MRT.FLAG_FIRST], ["last", MRT.FLAG_LAST], ["ack_req", MRT.FLAG_ACK_REQ], ["retx", MRT.FLAG_RETX], ["drained", MRT.FLAG_DRAINED]] as const)
      put(`metaroce.mrh.flags.${name}`, f.flags & bit ? 1 : 0);
    put("metaroce.payload.length", f.payload.length);
    if (f.payload.length) put("metaroce.payload", colonHex(f.payload));
  }
  for (const fl of layout.fields) put(`metaroce.${header.toLowerCase()}.${fl.name.toLowerCase()}`, values[fl.name]!);
  const crc = zlibCrc32(udpPayload.subarray(0, udpPayload.length - 4));
  put("metaroce.mrc.value", crc);
  put("metaroce.mrc.computed", crc);
  put("metaroce.mrc.status", 1);
  return out;
}

/** Equal as the field's kind says: whole numbers exactly (64-bit ones as bigints), fractions to 1e-12, text as text. */
function same(shown: string, want: string | number | bigint): boolean {
  if (typeof want === "bigint") return big(shown) === want;
  if (typeof want === "number") return Number.isInteger(want) ? /^(0x[0-9a-f]+|\d+)$/i.test(shown) && big(shown) === BigInt(want) : Math.abs(Number(shown) - want) < 1e-12;
  return shown === want;
}

/**
 * Runs tshark with the MetaRoCE-like dissector on the pcapng `file` and checks it against
 * `expected`, one entry per packet in order: a good frame is dissected from UDP 4792 with every
 * field it carries (Ethernet, IPv4 and UDP included) equal to the description, no field of the
 * dissector left unchecked, and no expert info or malformed mark; a malformed one is flagged with
 * the reason named first.
 */
export function checkMetaroceCapture(file: string, expected: readonly ExpectedPacket[]): void {
  checkMetarocePackets(metarocePackets(file), expected, file);
}

/** checkMetaroceCapture on packets tshark has dissected already (metarocePackets), from the capture `file`. */
export function checkMetarocePackets(packets: Map<string, string[]>[], expected: readonly ExpectedPacket[], file: string): void {
  expect(packets.length, `${file}: packets`).toBe(expected.length);
  packets.forEach((p, k) => {
    const e = expected[k]!;
    const at = `${file}: frame ${k + 1}`;
    if ("malformed" in e) {
      expect(p.get("metaroce.error")?.[0], `${at}: the reason`).toBe(e.malformed);
      expect(p.has("_ws.expert.message") || p.has("_ws.malformed"), `${at}: expert info`).toBe(true);
      return;
    }
    const f = metaroceDefaults(e);
    expect(p.get("frame.protocols"), at).toEqual(["eth:ethertype:ip:udp:metaroce"]);
    for (const bad of ["metaroce.error", "_ws.expert.message", "_ws.malformed"]) expect(p.get(bad), `${at}: ${bad}`).toBeUndefined();
    const env: [string, string | number][] = [["eth.dst", macText(f.ethDst)], ["eth.src", macText(f.ethSrc)], ["ip.src", ipText(f.ipSrc)],
      ["ip.dst", ipText(f.ipDst)], ["ip.dsfield.dscp", f.dscp], ["ip.dsfield.ecn", f.ecn], ["ip.ttl", f.ttl], ["ip.id", f.ipId],
      ["udp.srcport", f.udpSrcPort], ["udp.dstport", MRT.UDP_PORT], ["ip.checksum.status", 1]];
    for (const [name, want] of env) expect(same(p.get(name)?.[0] ?? "(none)", want), `${at}: ${name} is ${p.get(name)?.[0]}, sent ${want}`).toBe(true);
    const want = expectedFields(f);
    for (const [name, values] of want) {
      const shown = p.get(name) ?? [];
      expect(shown.length, `${at}: ${name} shown ${shown.length} times, sent ${values.length}`).toBe(values.length);
      values.forEach((w, i) => expect(same(shown[i]!, w), `${at}: ${name} is ${shown[i]}, sent ${w}`).toBe(true));
    }
    const unchecked = [...p.keys()].filter((name) => name.startsWith("metaroce.") && !want.has(name));
    expect(unchecked, `${at}: fields the dissector shows that the check does not know`).toEqual([]);
  });
}
