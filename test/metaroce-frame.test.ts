import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { crc32 as zlibCrc32 } from "node:zlib";
import * as H from "../host/generated/headers.js";
import { MRT, MRT_NAK } from "../host/generated/headers.js";
import {
  buildMetaroceFrame, parseMetaroceFrame, metaroceDefaults, metaroceFrameBytes, sackPsns, sackOf,
  type MetaroceFrame, type MetaroceSpec,
} from "../host/wire/metaroce.js";
import { ipv4Checksum } from "../host/wire/udp-ipv4.js";

// MetaRoCE-like frames (host/wire/metaroce.ts): the bytes checked at the offsets docs/headers.md
// gives (counted here by hand, not read from the generated views), the CRC trailer recomputed with
// zlib, the SACK's bit order, every reason a frame is refused, and properties over random frames
// and random or mutated bytes: parsing never throws and gives back what was built.

const ip = { ipSrc: 0x0a000001, ipDst: 0x0a000102 };
const H0 = 42; // Ethernet 14 + IPv4 20 + UDP 8
const be32 = (b: Uint8Array, at: number) => new DataView(b.buffer, b.byteOffset).getUint32(at);
const le32 = (b: Uint8Array, at: number) => new DataView(b.buffer, b.byteOffset).getUint32(at, true);
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

describe("MetaRoCE-like frames (host/wire/metaroce.ts)", () => {
  it("puts every DATA field where docs/headers.md says, and the CRC-32 of the UDP payload at the end, least significant byte first", () => {
    const payload = Uint8Array.from({ length: 37 }, (_, i) => (i * 13 + 5) & 0xff);
    const b = buildMetaroceFrame({
      ...ip, type: MRT.TYPE_DATA, flags: MRT.FLAG_FIRST | MRT.FLAG_ACK_REQ, path: 0xa5, epoch: 7, psn: 0xfedc_ba98, floor: 0x0102_0304,
      op: MRT.OP_SEND_IMM, destQp: 0xabcdef, ssn: 0x00ff_fffe, msn: 0x0a0b_0c0d, offset: 4096, length: 8192, addr: 0x0123_4567_89ab_cdefn,
      rkey: 0x8000_0042, imm: 0xdead_beef, payload, udpSrcPort: 0xc1c5, ecn: 1, dscp: 26, ttl: 9, ipId: 0x4242,
    });
    expect(b.length).toBe(42 + 48 + 37 + 4);
    expect(metaroceFrameBytes({ type: MRT.TYPE_DATA, payload })).toBe(b.length);
    expect(hex(b.subarray(0, 14))).toBe("02000a000102" + "02000a000001" + "0800");
    expect(hex(b.subarray(14, 24))).toBe("45" + "69" + (b.length - 14).toString(16).padStart(4, "0") + "4242" + "4000" + "09" + "11");
    expect(ipv4Checksum(b, 14, 20)).toBe(0);
    expect(hex(b.subarray(34, 42))).toBe("c1c5" + "12b8" + (b.length - 34).toString(16).padStart(4, "0") + "0000");
    expect(hex(b.subarray(H0, H0 + 48))).toBe(
      "11" + "a0" + "a5" + "07" + "fedcba98" + "01020304" + "03" + "abcdef" + "00fffffe" + "0a0b0c0d" + "00001000" + "00002000" +
      "0123456789abcdef" + "80000042" + "deadbeef");
    expect(hex(b.subarray(H0 + 48, b.length - 4))).toBe(hex(payload));
    expect(le32(b, b.length - 4)).toBe(zlibCrc32(b.subarray(H0, b.length - 4)));
  });

  it("puts every ACK field where docs/headers.md says; SACK bit i (PSN cum + 1 + i) is sent most significant first", () => {
    const cum = 0xffff_fff0;
    const psns = [cum + 1, cum + 2, cum + 64, cum + 65, cum + 200, cum + 256].map((p) => p >>> 0);
    const b = buildMetaroceFrame({ ...ip, type: MRT.TYPE_ACK, path: 3, epoch: 2, cum, sack: sackOf(cum, psns), ce: 17, hint: 0x8000,
      nakQp: 0x123456, nakCode: MRT_NAK.RNR, nakSsn: 0x00abcdef });
    expect(b.length).toBe(42 + 52 + 4);
    expect(hex(b.subarray(H0, H0 + 8))).toBe("12" + "00" + "03" + "02" + "fffffff0");
    // bits: PSN cum+1 is the top bit of the first SACK byte; cum+64 the lowest of sack0; cum+65 the top of sack1;
    // cum+200 is i = 199 = 192 + 7: sack3, bit 63 - 7; cum+256 the lowest bit of sack3
    expect(hex(b.subarray(H0 + 8, H0 + 40))).toBe("c000000000000001" + "8000000000000000" + "0000000000000000" + "0100000000000001");
    expect(hex(b.subarray(H0 + 40, H0 + 52))).toBe("11" + "00" + "8000" + "123456" + "01" + "00abcdef");
    expect(le32(b, b.length - 4)).toBe(zlibCrc32(b.subarray(H0, b.length - 4)));
    const r = parseMetaroceFrame(b);
    expect(r.ok && r.frame.type === MRT.TYPE_ACK && sackPsns(r.frame)).toEqual(psns);
  });

  it("converts between SACK bits and PSN lists, across the 32-bit wrap, and refuses PSNs it cannot hold", () => {
    expect(sackOf(10, [])).toBe(0n);
    expect(sackOf(10, [11])).toBe(1n);
    expect(sackOf(10, [266])).toBe(1n << 255n);
    expect(sackPsns({ cum: 0xffff_ffff, sack: 0b101n })).toEqual([0, 2]);
    expect(sackPsns({ cum: 5, sack: (1n << 256n) - 1n }).length).toBe(256);
    expect(() => sackOf(10, [10])).toThrow(/PSN 10/);
    expect(() => sackOf(10, [267])).toThrow(/PSN 267/);
  });

  it("builds a PROBE with no payload to the probe QP, floor = PSN by default", () => {
    const f = metaroceDefaults({ ...ip, type: MRT.TYPE_PROBE, path: 1, psn: 99 });
    expect([f.destQp, f.floor, f.payload.length]).toEqual([0xffffff, 99, 0]);
    const b = buildMetaroceFrame(f);
    expect(b.length).toBe(42 + 48 + 4);
    expect(b[H0]).toBe(0x13);
  });

  it("refuses bad frames with a reason, never throwing", () => {
    const data = buildMetaroceFrame({ ...ip, type: MRT.TYPE_DATA, path: 1, psn: 5, op: MRT.OP_WRITE, length: 100, offset: 50, payload: new Uint8Array(50) });
    const ack = buildMetaroceFrame({ ...ip, type: MRT.TYPE_ACK, path: 1, cum: 5 });
    const probe = buildMetaroceFrame({ ...ip, type: MRT.TYPE_PROBE, path: 1, psn: 5 });
    /** `good` edited by `edit`; `seal` recomputes the CRC trailer (and the IP checksum and lengths) after the edit */
    const bad = (good: Uint8Array, edit: (b: Uint8Array, v: DataView) => Uint8Array | void, seal = true) => {
      let b: Uint8Array = Uint8Array.from(good);
      b = edit(b, new DataView(b.buffer)) ?? b;
      const v = new DataView(b.buffer);
      if (seal) {
        v.setUint16(16, b.length - 14); v.setUint16(24, 0); v.setUint16(24, ipv4Checksum(b, 14, 20)); v.setUint16(38, b.length - 34);
        if (b.length >= H0 + 4) v.setUint32(b.length - 4, zlibCrc32(b.subarray(H0, b.length - 4)), true);
      }
      const r = parseMetaroceFrame(b);
      return r.ok ? "ok" : r.error;
    };
    for (const g of [data, ack, probe]) expect(bad(g, () => {})).toBe("ok");
    expect(bad(data, (b) => { b[60]! ^= 1; }, false)).toBe("crc");
    expect(bad(data, (b) => { b[b.length - 10]! ^= 1; }, false)).toBe("crc"); // a payload byte
    expect(bad(ack, (b) => { b[b.length - 1]! ^= 0x80; }, false)).toBe("crc");
    expect(bad(data, (b) => { b[H0] = 0x21; })).toBe("version");
    expect(bad(ack, (b) => { b[H0] = 0x02; })).toBe("version");
    expect(bad(data, (b) => { b[H0] = 0x14; })).toBe("type");
    expect(bad(data, (b) => { b[H0] = 0x10; })).toBe("type");
    expect(bad(data, (b) => b.slice(0, H0 + 40))).toBe("short"); // 36 bytes of header, 4 taken as the trailer
    expect(bad(ack, (b) => b.slice(0, H0 + 52))).toBe("short"); // the trailer missing
    expect(bad(data, (b) => b.slice(0, H0))).toBe("short");
    expect(bad(ack, (b) => Uint8Array.from([...b, 0, 0, 0, 0]))).toBe("length");
    expect(bad(probe, (b) => Uint8Array.from([...b, 0, 0, 0, 0]))).toBe("length");
    expect(bad(data, (b) => { b[H0 + 12] = 6; })).toBe("op");
    expect(bad(data, (_, v) => { v.setUint32(H0 + 28, 99); })).toBe("bounds"); // 50 + 50 > 99
    expect(bad(data, (_, v) => { v.setUint32(H0 + 24, 0xffff_fff0); })).toBe("bounds"); // no 32-bit wrap
    expect(bad(data, (_, v) => { v.setUint32(H0 + 28, 100); })).toBe("ok");
    expect(bad(ack, (b) => { b[H0 + 47] = 4; })).toBe("nak-code");
    expect(bad(data, (_, v) => { v.setUint16(36, 4791); })).toBe("not-metaroce");
    expect(bad(data, (b) => { b[24]! ^= 1; }, false)).toBe("ip-checksum");
    expect(bad(data, (_, v) => { v.setUint16(38, 9); }, false)).toBe("udp-length");
    expect(parseMetaroceFrame(data.subarray(0, 30))).toEqual({ ok: false, error: "truncated" });
    expect(parseMetaroceFrame(new Uint8Array(0))).toEqual({ ok: false, error: "truncated" });
    // Ethernet padding after the datagram is not part of it
    expect(parseMetaroceFrame(Uint8Array.from([...probe, 0, 0, 0, 0, 0, 0])).ok).toBe(true);
  });

  it("refuses to build what it cannot send", () => {
    const d = { ...ip, type: MRT.TYPE_DATA, path: 1, psn: 1 } as const;
    expect(() => buildMetaroceFrame({ ...d, op: 6 })).toThrow(/op 6/);
    expect(() => buildMetaroceFrame({ ...d, destQp: 1 << 24 })).toThrow(/destQp/);
    expect(() => buildMetaroceFrame({ ...d, psn: 2 ** 32 })).toThrow(/psn/);
    expect(() => buildMetaroceFrame({ ...d, addr: 1n << 64n })).toThrow(/addr/);
    expect(() => buildMetaroceFrame({ ...d, payload: new Uint8Array(8), length: 7 })).toThrow(/run past/);
    expect(() => buildMetaroceFrame({ ...d, type: MRT.TYPE_PROBE, payload: new Uint8Array(1), length: 1 })).toThrow(/PROBE carries no payload/);
    expect(() => buildMetaroceFrame({ ...d, payload: new Uint8Array(70000), length: 70000 })).toThrow(/65535/);
    expect(() => buildMetaroceFrame({ ...d, type: 5 } as unknown as MetaroceSpec)).toThrow(/type 5/);
    const a = { ...ip, type: MRT.TYPE_ACK, path: 1, cum: 1 } as const;
    expect(() => buildMetaroceFrame({ ...a, sack: 1n << 256n })).toThrow(/sack/);
    expect(() => buildMetaroceFrame({ ...a, nakCode: 9 })).toThrow(/NAK code 9/);
    expect(() => buildMetaroceFrame({ ...a, hint: 65536 })).toThrow(/hint/);
    expect(() => buildMetaroceFrame({ ...a, resv: 256 })).toThrow(/resv/);
  });
});

const u = (bits: number) => fc.integer({ min: 0, max: 2 ** bits - 1 });
const envelope = { ethDst: fc.nat(2 ** 48 - 1), ethSrc: fc.nat(2 ** 48 - 1), ipSrc: u(32), ipDst: u(32), dscp: u(6), ecn: u(2), ttl: u(8), ipId: u(16), udpSrcPort: u(16) };
/** Any DATA, PROBE or ACK packet buildMetaroceFrame can send. */
const arbMetaroceFrame: fc.Arbitrary<MetaroceFrame> = fc.oneof(
  fc.record({ ...envelope, type: fc.constantFrom(MRT.TYPE_DATA, MRT.TYPE_PROBE), flags: u(8), path: u(8), epoch: u(8), psn: u(32), floor: u(32),
    op: fc.constantFrom(MRT.OP_WRITE, MRT.OP_WRITE_IMM, MRT.OP_SEND, MRT.OP_SEND_IMM), destQp: u(24), ssn: u(32), msn: u(32), offset: u(20),
    extra: u(20), addr: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), rkey: u(32), imm: u(32), payload: fc.uint8Array({ maxLength: 300 }) })
    .map(({ extra, ...f }) => {
      const payload = f.type === MRT.TYPE_PROBE ? new Uint8Array(0) : f.payload;
      return { ...f, payload, length: f.offset + payload.length + extra };
    }),
  fc.record({ ...envelope, type: fc.constant(MRT.TYPE_ACK), flags: u(8), path: u(8), epoch: u(8), cum: u(32),
    sack: fc.oneof(fc.constant(0n), fc.constant((1n << 256n) - 1n), fc.bigInt({ min: 0n, max: (1n << 256n) - 1n })), ce: u(8), resv: u(8), hint: u(16),
    nakQp: u(24), nakCode: fc.constantFrom(0, 1, 2, 3), nakSsn: u(32) }),
);

describe("MetaRoCE-like frames, properties (fast-check)", () => {
  it("build then parse gives back every field, and building that again the same bytes", () => {
    fc.assert(fc.property(arbMetaroceFrame, (f) => {
      const b = buildMetaroceFrame(f);
      const r = parseMetaroceFrame(b);
      expect(r.ok).toBe(true);
      if (!r.ok) return;
      expect(r.frame).toEqual(f);
      expect(r.crc).toBe(zlibCrc32(b.subarray(H0, b.length - 4)));
      expect(hex(buildMetaroceFrame(r.frame))).toBe(hex(b));
    }), { numRuns: 500 });
  });

  it("never throws on any byte string, and what it accepts is a MetaRoCE-like datagram to port 4792", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), (b) => {
      const r = parseMetaroceFrame(b);
      if (r.ok) expect(H.getUdpDstPort(new DataView(b.buffer, b.byteOffset), 36)).toBe(4792);
    }), { numRuns: 2000 });
  });

  it("never throws on a valid frame with bytes changed, cut or added; one changed byte it accepts is outside every checksum, and read", () => {
    const edit = fc.record({ at: fc.nat(), xor: fc.integer({ min: 1, max: 255 }), cut: fc.nat(400), extra: fc.uint8Array({ maxLength: 8 }), how: fc.nat(2) });
    fc.assert(fc.property(arbMetaroceFrame, fc.array(edit, { minLength: 1, maxLength: 4 }), (f, edits) => {
      const good = buildMetaroceFrame(f);
      let b = Uint8Array.from(good);
      for (const e of edits) {
        if (e.how === 0 && b.length) b[e.at % b.length]! ^= e.xor;
        else if (e.how === 1) b = b.slice(0, e.cut % (b.length + 1));
        else b = Uint8Array.from([...b, ...e.extra]);
      }
      const r = parseMetaroceFrame(b);
      if (edits.length === 1 && edits[0]!.how === 0 && r.ok) {
        // only bytes no checksum covers: MAC addresses, UDP source port and checksum; every byte but the checksum is read
        const at = edits[0]!.at % good.length;
        expect(at < 12 || (at >= 34 && at < 36) || at === 40 || at === 41, `byte ${at}`).toBe(true);
        const again = buildMetaroceFrame(r.frame);
        again[40] = b[40]!; again[41] = b[41]!;
        expect(hex(again)).toBe(hex(b));
      }
    }), { numRuns: 1500 });
  });
});
