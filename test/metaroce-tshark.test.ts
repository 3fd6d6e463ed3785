import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 as zlibCrc32 } from "node:zlib";
import { MRT, MRT_NAK, IPV4_ECN } from "../host/generated/headers.js";
import { buildMetaroceFrame, parseMetaroceFrame, sackOf, type MetaroceSpec, type MetaroceError } from "../host/wire/metaroce.js";
import { ipv4Checksum } from "../host/wire/udp-ipv4.js";
import { PcapngWriter } from "../host/wire/pcapng.js";
import { hasTshark, removeCaptures } from "./helpers/tshark.js";
import { xorshift32 } from "./helpers/xorshift.js";
import { checkMetaroceCapture, checkMetarocePackets, metarocePackets, readMetaroceCapture, type ExpectedPacket } from "./helpers/metaroce-tshark.js";

// The repository's Wireshark dissector for the MetaRoCE-like transport (tools/wireshark/
// metaroce.lua), run by Debian's tshark (.ci/run installs it) over a pcapng of frames built by
// host/wire/metaroce.ts: every type, op and flag, SACKs empty, full, sparse, at the highest bit and
// across the 32-bit wrap, rate hints from 0 to all ones, every NAK code, and malformed frames of
// every kind the parser refuses. Every field tshark shows must equal what was built; the malformed
// frames, and only they, are flagged, with the parser's reason.

if (!hasTshark) console.warn("test/metaroce-tshark: tshark is not installed here (apt-get install tshark): the Wireshark checks are skipped");

const ip = { ipSrc: 0x0a000001, ipDst: 0x0a000102 };
const H0 = 42;
const bytesOf = (n: number, k: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + k) & 0xff);
/** The UDP source port of path k towards peer 2 (docs/protocol.md, "Names"). */
const portOf = (k: number) => 0xc000 | (k << 6) | 2;

/** Good frames: each type, op and flag; SACK patterns; hints; NAK codes; the envelope's fields varied. */
function goodSpecs(): MetaroceSpec[] {
  const D = (k: number, s: Partial<MetaroceSpec>): MetaroceSpec => ({
    ...ip, type: MRT.TYPE_DATA, path: k % 8, epoch: 1, psn: 1000 + k, floor: 990 + k, destQp: 0x000100 + k, ssn: 50 + k, msn: 7,
    addr: 0x0000_7f00_1234_0000n + BigInt(k) * 4096n, rkey: 0x8000_0100 + k, udpSrcPort: portOf(k % 8), ipId: k, ...s,
  } as MetaroceSpec);
  const A = (k: number, s: Partial<MetaroceSpec>): MetaroceSpec => ({ ...ip, ipSrc: ip.ipDst, ipDst: ip.ipSrc, type: MRT.TYPE_ACK, path: k % 8, epoch: 1,
    cum: 5000 + k, udpSrcPort: portOf(k % 8), ...s } as MetaroceSpec);
  const cum = 0xffff_ff80; // SACKs across the 32-bit wrap
  return [
    D(0, { op: MRT.OP_WRITE, flags: MRT.FLAG_FIRST, offset: 0, length: 2500, payload: bytesOf(1024, 0) }),
    D(1, { op: MRT.OP_WRITE, flags: 0, offset: 1024, length: 2500, payload: bytesOf(1024, 1) }),
    D(2, { op: MRT.OP_WRITE, flags: MRT.FLAG_LAST | MRT.FLAG_ACK_REQ, offset: 2048, length: 2500, payload: bytesOf(452, 2) }),
    D(3, { op: MRT.OP_WRITE_IMM, flags: MRT.FLAG_FIRST | MRT.FLAG_LAST | MRT.FLAG_ACK_REQ, length: 64, payload: bytesOf(64, 3), imm: 0xc0de_0003 }),
    D(4, { op: MRT.OP_SEND, flags: MRT.FLAG_FIRST | MRT.FLAG_LAST | MRT.FLAG_ACK_REQ, length: 17, payload: bytesOf(17, 4), addr: 0n, rkey: 0 }),
    D(5, { op: MRT.OP_SEND_IMM, flags: MRT.FLAG_RETX | MRT.FLAG_ACK_REQ, offset: 4096, length: 8192, payload: bytesOf(4096, 5), imm: 0xffff_ffff }),
    D(6, { op: MRT.OP_SEND, flags: MRT.FLAG_FIRST | MRT.FLAG_LAST, length: 0, payload: new Uint8Array(0) }), // a zero-byte SEND
    D(7, { op: MRT.OP_WRITE, flags: 0xf0, path: 255, epoch: 255, psn: 0xffff_ffff, floor: 0xffff_fff0, destQp: 0xfffffe, ssn: 0xffffff,
      msn: 0xffff_ffff, offset: 0xffff_fff0, length: 0xffff_ffff, addr: (1n << 64n) - 1n, rkey: 0xffff_ffff, payload: bytesOf(15, 7),
      ecn: IPV4_ECN.CE, dscp: 63, ttl: 255, ipId: 0xffff, udpSrcPort: 0xffff }),
    { ...ip, type: MRT.TYPE_PROBE, path: 3, epoch: 4, psn: 77, floor: 70, flags: MRT.FLAG_ACK_REQ, udpSrcPort: portOf(3) },
    A(9, { sack: 0n, hint: 65535 }), // empty SACK, the whole line rate
    A(10, { sack: (1n << 256n) - 1n, hint: 0, ce: 255 }), // full SACK
    A(11, { cum, sack: sackOf(cum, [1, 3, 64, 65, 127, 128, 130, 200].map((d) => (cum + d) >>> 0)), ce: 5, hint: 32768 }), // sparse, across the wrap
    A(12, { sack: 1n << 255n, hint: 1 }), // the highest bit only: PSN cum + 256
    A(13, { sack: 1n, nakQp: 0x000105, nakCode: MRT_NAK.RNR, nakSsn: 54, hint: 21845 }),
    A(14, { nakQp: 0xabcdef, nakCode: MRT_NAK.REMOTE_ACCESS, nakSsn: 0xffffff, flags: 0 }),
    A(15, { nakQp: 0xffffff, nakCode: MRT_NAK.INVALID_REQUEST, nakSsn: 0, epoch: 255, path: 255, cum: 0 }),
  ];
}

/** `bytes` with the IPv4 total length and checksum, the UDP length and the CRC trailer made to fit it again. */
function reseal(bytes: Uint8Array, crc = true): Uint8Array {
  const v = new DataView(bytes.buffer, bytes.byteOffset);
  v.setUint16(16, bytes.length - 14);
  v.setUint16(24, 0);
  v.setUint16(24, ipv4Checksum(bytes, 14, 20));
  v.setUint16(38, bytes.length - 34);
  if (crc && bytes.length >= H0 + 4) v.setUint32(bytes.length - 4, zlibCrc32(bytes.subarray(H0, bytes.length - 4)), true);
  return bytes;
}

/** Malformed frames, each of one kind the parser refuses, with its reason. */
function badFrames(): { bytes: Uint8Array; why: MetaroceError }[] {
  const data = buildMetaroceFrame({ ...ip, type: MRT.TYPE_DATA, path: 1, psn: 9, op: MRT.OP_WRITE, length: 100, payload: bytesOf(100, 9) });
  const ack = buildMetaroceFrame({ ...ip, type: MRT.TYPE_ACK, path: 1, cum: 9, sack: 5n });
  const probe = buildMetaroceFrame({ ...ip, type: MRT.TYPE_PROBE, path: 1, psn: 9 });
  const edit = (b: Uint8Array, f: (c: Uint8Array, v: DataView) => void) => {
    const c = Uint8Array.from(b);
    f(c, new DataView(c.buffer));
    return c;
  };
  return [
    { bytes: reseal(data.slice(0, H0 + 40), false), why: "short" }, // 40 bytes of a 48-byte header
    { bytes: reseal(ack.slice(0, H0 + 52), false), why: "short" }, // an ACK without its trailer
    { bytes: edit(data, (c) => { c[H0 + 60]! ^= 0x10; }), why: "crc" }, // a payload bit flipped on the way
    { bytes: edit(ack, (c) => { c[c.length - 1]! ^= 0x80; }), why: "crc" },
    { bytes: reseal(edit(ack, (c) => { c[H0] = 0x22; })), why: "version" },
    { bytes: reseal(edit(data, (c) => { c[H0] = 0x1f; })), why: "type" },
    { bytes: reseal(Uint8Array.from([...ack.subarray(0, ack.length - 4), 1, 2, 3, 4, 0, 0, 0, 0])), why: "length" },
    { bytes: reseal(Uint8Array.from([...probe.subarray(0, probe.length - 4), 1, 2, 3, 4, 0, 0, 0, 0])), why: "length" },
    { bytes: reseal(edit(data, (c) => { c[H0 + 12] = 7; })), why: "op" },
    { bytes: reseal(edit(data, (_, v) => { v.setUint32(H0 + 24, 1); })), why: "bounds" }, // 100 bytes at offset 1 of a 100-byte message
    { bytes: reseal(edit(ack, (c) => { c[H0 + 47] = 9; })), why: "nak-code" },
  ];
}

describe.skipIf(!hasTshark)("a pcapng of MetaRoCE-like frames, read by tools/wireshark/metaroce.lua (tshark)", () => {
  let dir = "";
  let file = "";
  const good = goodSpecs();
  const bad = badFrames();
  /** good and bad frames interleaved, so a dissector that carried state from one packet to the next would show it */
  const frames: { bytes: Uint8Array; expected: ExpectedPacket }[] = [];
  good.forEach((s, k) => {
    frames.push({ bytes: buildMetaroceFrame(s), expected: s });
    if (k < bad.length) frames.push({ bytes: bad[k]!.bytes, expected: { malformed: bad[k]!.why } });
  });

  const write = (name: string, list: Uint8Array[]) => {
    const chunks: Uint8Array[] = [];
    const w = new PcapngWriter((c) => chunks.push(c), "menic test");
    w.addInterface("dev0.port0");
    list.forEach((b, k) => w.writePacket(0, BigInt(k) * 1_000_000n, b));
    w.flush();
    const path = join(dir, name);
    writeFileSync(path, Buffer.concat(chunks));
    return path;
  };

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "menic-metaroce-"));
    file = write("metaroce.pcapng", frames.map((f) => f.bytes));
  });
  afterAll(() => removeCaptures(dir));

  it("covers every type, op, flag and NAK code, and every reason the parser gives past the envelope", () => {
    const specs = good.map((s) => ({ flags: 0, nakCode: 0, op: -1, ...s }));
    expect(new Set(specs.map((s) => s.type))).toEqual(new Set([MRT.TYPE_DATA, MRT.TYPE_ACK, MRT.TYPE_PROBE]));
    expect(new Set(specs.filter((s) => s.type === MRT.TYPE_DATA).map((s) => s.op))).toEqual(new Set([0, 1, 2, 3]));
    for (const fl of [MRT.FLAG_FIRST, MRT.FLAG_LAST, MRT.FLAG_ACK_REQ, MRT.FLAG_RETX]) expect(specs.some((s) => s.type !== MRT.TYPE_ACK && s.flags & fl)).toBe(true);
    expect(new Set(specs.filter((s) => s.type === MRT.TYPE_ACK).map((s) => s.nakCode))).toEqual(new Set([0, 1, 2, 3]));
    expect(new Set(bad.map((b) => b.why))).toEqual(new Set(["short", "crc", "version", "type", "length", "op", "bounds", "nak-code"]));
  });

  it("parses back with host/wire/metaroce.ts as built: the good ones whole, the bad ones refused for the reason meant", () => {
    for (const f of frames) {
      const r = parseMetaroceFrame(f.bytes);
      expect(r.ok ? "ok" : r.error).toBe("malformed" in f.expected ? f.expected.malformed : "ok");
    }
  });

  it("shows every field as built, flags the malformed ones with the parser's reason, and no other", () => {
    checkMetaroceCapture(file, frames.map((f) => f.expected));
    const flagged = readMetaroceCapture(file, ["-Y", "_ws.malformed || _ws.expert", "-T", "fields", "-e", "frame.number"]);
    const want = frames.flatMap((f, k) => ("malformed" in f.expected ? [String(k + 1)] : []));
    expect(flagged.trim().split("\n")).toEqual(want);
  });

  it("sums up each packet in the Info column", () => {
    const info = readMetaroceCapture(file, ["-T", "fields", "-e", "_ws.col.Info"]).trim().split("\n");
    const at = (k: number) => info[frames.indexOf(frames.find((f) => f.expected === good[k])!)];
    expect(at(0)).toBe("DATA path 0 epoch 1 PSN 1000 WRITE QP 0x000100 SSN 50 MSN 7 offset 0/2500 [FIRST]");
    expect(at(8)).toBe("PROBE path 3 epoch 4 PSN 77 [ACK_REQ]");
    expect(at(11)).toBe(`ACK path 3 epoch 1 cum ${0xffff_ff80}, 8 SACKed, CE 5, hint 0.5000`);
    expect(at(13)).toBe("ACK path 5 epoch 1 cum 5013, 1 SACKed, CE 0, hint 0.3333, NAK RNR QP 0x000105 SSN 54");
    expect(info[1]).toMatch(/\[malformed: short\]$/);
  });

  it("agrees with host/wire/metaroce.ts on 1,500 frames mutated at random: the same verdict and reason, and every field of those it accepts", () => {
    const rnd = xorshift32(0x8e7a_0c8);
    const seeds = frames.filter((f) => !("malformed" in f.expected)).map((f) => f.bytes);
    const list: Uint8Array[] = [];
    for (let n = 0; n < 1500; n++) {
      let b = Uint8Array.from(seeds[rnd() % seeds.length]!);
      const kind = rnd() % 4;
      const udpBytes = b.length - H0;
      if (kind === 0) { // header or payload bytes changed and the CRC made right again: the checks after the CRC
        for (let e = 1 + (rnd() % 3); e > 0; e--) b[H0 + 1 + (rnd() % (udpBytes - 5))]! ^= 1 + (rnd() % 255);
        reseal(b);
      } else if (kind === 1) { // changed on the way: the CRC no longer checks
        b[H0 + (rnd() % udpBytes)]! ^= 1 + (rnd() % 255);
      } else if (kind === 2) { // cut short or grown, IP and UDP lengths fixed, the CRC made right or not
        const len = H0 + 1 + (rnd() % (udpBytes + 8));
        b = Uint8Array.from({ length: len }, (_, i) => (i < b.length ? b[i]! : rnd() & 0xff));
        reseal(b, rnd() % 2 === 0);
      } else { // another version or type
        b[H0] = rnd() & 0xff;
        reseal(b, rnd() % 2 === 0);
      }
      list.push(b);
    }
    const path = write("mutated.pcapng", list);
    const verdicts = list.map(parseMetaroceFrame);
    const reasons = new Set(verdicts.map((r) => (r.ok ? "ok" : r.error)));
    expect([...reasons].sort()).toEqual(["bounds", "crc", "length", "nak-code", "ok", "op", "short", "type", "version"]);
    checkMetarocePackets(metarocePackets(path), verdicts.map((r) => (r.ok ? r.frame : { malformed: r.error })), path);
  });

  it("shows a frame the capture cut short (snap length) as far as it was kept, not as malformed", () => {
    const chunks: Uint8Array[] = [];
    const w = new PcapngWriter((c) => chunks.push(c), "menic test");
    w.addInterface("cut", { snapLen: H0 + 60 }); // the whole Mrh, 12 bytes of payload
    w.writePacket(0, 0n, frames[0]!.bytes);
    w.flush();
    const path = join(dir, "snap.pcapng");
    writeFileSync(path, Buffer.concat(chunks));
    const [p] = metarocePackets(path);
    expect(p!.get("metaroce.mrh.psn")).toEqual(["1000"]);
    expect(p!.get("metaroce.mrh.imm")).toEqual(["0x00000000"]); // the last field of the header, kept
    expect(p!.get("metaroce.captured")).toEqual(["60"]);
    for (const absent of ["metaroce.error", "metaroce.payload", "metaroce.mrc.value", "_ws.expert.message", "_ws.malformed"]) expect(p!.get(absent), absent).toBeUndefined();
  });

  it("would notice a field shown other than built, a SACK bit off by one, or a malformed frame taken for good", () => {
    const list = frames.map((f) => f.expected);
    const packets = metarocePackets(file);
    const check = (l: ExpectedPacket[]) => checkMetarocePackets(packets, l, file);
    check(list);
    const wrong = (k: number, change: Partial<MetaroceSpec> | ExpectedPacket, whole = false) =>
      list.map((e, i) => (i === k ? (whole ? change : { ...e, ...change }) : e)) as ExpectedPacket[];
    const k0 = frames.findIndex((f) => f.expected === good[0]), k11 = frames.findIndex((f) => f.expected === good[11]);
    expect(() => check(wrong(k0, { psn: 1001 }))).toThrow(/metaroce.mrh.psn is 1000, sent 1001/);
    expect(() => check(wrong(k0, { udpSrcPort: 1 }))).toThrow(/udp.srcport/);
    expect(() => check(wrong(k0, { payload: bytesOf(1024, 1) }))).toThrow(/metaroce.payload is/);
    const s = (good[11] as { sack: bigint }).sack;
    expect(() => check(wrong(k11, { sack: s ^ 3n }))).toThrow(/metaroce.mra.sack/);
    expect(() => check(wrong(k11, { sack: s ^ (1n << 200n) }))).toThrow(/metaroce.mra.sack/);
    expect(() => check(wrong(k11, { hint: 32767 }))).toThrow(/metaroce.mra.hint/);
    expect(() => check(wrong(1, good[0]!, true))).toThrow(/frame 2/);
    expect(() => check(wrong(k0, { malformed: "crc" }, true))).toThrow(/the reason/);
    expect(() => check(wrong(1, { malformed: "crc" }, true))).toThrow(/the reason/); // short, not crc
  });
});

describe.runIf(!hasTshark && !!process.env.CI)("tshark in CI", () => {
  it("is installed (.ci/run installs Debian's tshark; the dissector's checks must run in CI)", () => {
    expect.fail("tshark is not on PATH in CI");
  });
});

describe("tools/wireshark/metaroce.lua's field table", () => {
  it("is what scripts/gen-wireshark.mjs writes from layouts/headers/mrh.json, mra.json, mrc.json now (regenerate: node scripts/gen-wireshark.mjs)", () => {
    const r = spawnSync("node", ["scripts/gen-wireshark.mjs", "--check"], { encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
  });
});
