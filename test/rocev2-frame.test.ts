import { describe, it, expect } from "vitest";
import * as H from "../host/generated/headers.js";
import { OP, OPCODES } from "../host/generated/headers.js";
import { buildFrame, parseFrame, frameDefaults, frameBytes, ipv4Checksum, type FrameSpec, type RoceFrame } from "../host/wire/rocev2.js";
import { icrcIpv4 } from "../host/wire/icrc.js";
import { PcapngWriter } from "../host/wire/pcapng.js";
import { readPcapng } from "./helpers/pcapng-read.js";
import { xorshift32 } from "./helpers/xorshift.js";

// RoCEv2 frames built and parsed on the host (host/wire/rocev2.ts), and the pcapng writer's
// blocks (host/wire/pcapng.ts), read back by a reader of the test's own.


/** A frame of opcode `op` with every field drawn from `next`. */
function randomSpec(op: number, next: () => number): FrameSpec {
  const info = OPCODES.get(op)!;
  const bit = () => (next() & 1) === 1;
  return {
    opcode: op, destQp: next() & 0xffffff, psn: next() & 0xffffff, ipSrc: next() >>> 0, ipDst: next() >>> 0,
    ethDst: (next() & 0xffff) * 2 ** 32 + (next() >>> 0), ethSrc: (next() & 0xffff) * 2 ** 32 + (next() >>> 0),
    dscp: next() & 63, ecn: next() & 3, ttl: next() & 255, ipId: next() & 0xffff, udpSrcPort: next() & 0xffff,
    se: bit(), migReq: bit(), pKey: next() & 0xffff, fecn: bit(), becn: bit(), ackReq: bit(),
    reth: info.headers.includes("Reth") ? { va: (BigInt(next() >>> 0) << 32n) | BigInt(next() >>> 0), rkey: next() >>> 0, dmaLength: next() >>> 0 } : undefined,
    aeth: info.headers.includes("Aeth") ? { syndrome: next() & 0xff, msn: next() & 0xffffff } : undefined,
    immDt: info.headers.includes("ImmDt") ? next() >>> 0 : undefined,
    payload: info.payload ? Uint8Array.from({ length: next() % 300 }, () => next() & 0xff) : undefined,
  };
}

/** frameDefaults without the keys whose value is undefined (what parseFrame returns). */
const expected = (s: FrameSpec): RoceFrame => JSON.parse(JSON.stringify(frameDefaults(s), (_, v) => (typeof v === "bigint" ? `${v}n` : v)));
const plain = (f: RoceFrame) => JSON.parse(JSON.stringify(f, (_, v) => (typeof v === "bigint" ? `${v}n` : v)));

describe("RoCEv2 frames", () => {
  it("round-trip every opcode with random fields, with lengths, IPv4 checksum, pad and ICRC right", () => {
    const next = xorshift32(99);
    for (const op of OPCODES.keys()) for (let n = 0; n < 40; n++) {
      const spec = randomSpec(op, next);
      const bytes = buildFrame(spec);
      const v = new DataView(bytes.buffer);
      const info = OPCODES.get(op)!;
      const payload = spec.payload?.length ?? 0;
      const pad = (4 - ((info.extBytes + payload) & 3)) & 3;
      expect(bytes.length).toBe(14 + 20 + 8 + 12 + info.extBytes + payload + pad + 4);
      expect(bytes.length).toBe(frameBytes(frameDefaults(spec)));
      expect(H.getIpv4TotalLength(v, 14)).toBe(bytes.length - 14);
      expect(H.getUdpLength(v, 34)).toBe(bytes.length - 34);
      expect(H.getUdpDstPort(v, 34)).toBe(4791);
      expect(H.getBthPadCnt(v, 42)).toBe(pad);
      expect(ipv4Checksum(bytes, 14, 20)).toBe(0); // a header with a right checksum sums to 0
      expect(H.getIcrcValue(v, bytes.length - 4)).toBe(icrcIpv4(bytes.subarray(14)));
      const back = parseFrame(bytes);
      expect(back.ok ? "ok" : back.error, info.name).toBe("ok");
      if (back.ok) expect(plain(back.frame)).toEqual(expected(spec));
    }
  });

  it("puts the fields where Wireshark and the standards expect them (a hand-checked READ request)", () => {
    const bytes = buildFrame({
      opcode: OP.RC_READ_REQUEST, destQp: 0x000d2a, psn: 0x123456, ipSrc: 0xc0a80001, ipDst: 0xc0a80002, ackReq: true,
      udpSrcPort: 0xc123, ipId: 7, reth: { va: 0x0000_7f00_1234_5000n, rkey: 0x1234, dmaLength: 65536 },
    });
    const hex = Buffer.from(bytes).toString("hex");
    expect(hex.slice(0, 28)).toBe("0200c0a80002" + "0200c0a80001" + "0800");
    // IPv4: 45, ECT(0), length 20+8+12+16+4 = 60, id 7, DF, TTL 64, UDP, checksum, addresses
    expect(hex.slice(28, 68)).toMatch(/^4502003c00074000401[1-9a-f].{4}c0a80001c0a80002$/);
    expect(hex.slice(68, 84)).toBe("c12312b700280000"); // UDP 0xc123 -> 4791, length 40, checksum 0
    expect(hex.slice(84, 108)).toBe("0c00ffff00000d2a80123456"); // BTH: opcode 12, P_Key, DestQP, A + PSN
    expect(hex.slice(108, 140)).toBe("00007f0012345000" + "00001234" + "00010000"); // RETH
    expect(bytes.length).toBe(14 + 60);
  });

  it("parses the CNP a ConnectX-4 Lx sent, ICRC included", () => {
    const cnp = Buffer.from("e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201000012b70028000081" + "00ffff40000118" + "00000000" + "00".repeat(16) + "82fd002a", "hex");
    const r = parseFrame(new Uint8Array(cnp));
    expect(r.ok ? "ok" : r.error).toBe("ok");
    if (!r.ok) return;
    expect(r.frame).toMatchObject({ opcode: OP.CNP, destQp: 0x118, psn: 0, becn: true, fecn: false, pKey: 0xffff, dscp: 48, ecn: 2, ttl: 64, ipSrc: 0x0a001101, ipDst: 0x0a001201, udpSrcPort: 0 });
    expect(r.icrc).toBe(0x2a00fd82);
    // and menic builds the same bytes, ICRC included, from the fields it read
    const again = buildFrame(r.frame);
    expect(Buffer.from(again).toString("hex")).toBe(cnp.toString("hex"));
  });

  it("refuses bad frames with a reason, never throwing", () => {
    const good = buildFrame({ opcode: OP.RC_SEND_ONLY, destQp: 5, psn: 6, ipSrc: 1, ipDst: 2, payload: new Uint8Array(10) });
    const bad = (edit: (b: Uint8Array, v: DataView) => void) => {
      const b = Uint8Array.from(good);
      edit(b, new DataView(b.buffer));
      const r = parseFrame(b);
      return r.ok ? "ok" : r.error;
    };
    const fixIp = (b: Uint8Array, v: DataView) => { H.setIpv4Checksum(v, 14, 0); H.setIpv4Checksum(v, 14, ipv4Checksum(b, 14, 20)); };
    expect(bad(() => {})).toBe("ok");
    expect(bad((b) => { b[b.length - 1]! ^= 1; })).toBe("icrc");
    expect(bad((b) => { b[60]! ^= 1; })).toBe("icrc"); // a payload byte
    expect(bad((b, v) => { H.setIpv4Ttl(v, 14, 3); H.setIpv4Ecn(v, 14, 3); fixIp(b, v); H.setBthFecn(v, 42, 1); })).toBe("ok"); // what switches change
    expect(bad((b) => { b[24]! ^= 1; })).toBe("ip-checksum");
    expect(bad((b, v) => { H.setEthEtherType(v, 0, 0x86dd); })).toBe("not-ipv4");
    expect(bad((b, v) => { H.setUdpDstPort(v, 34, 4792); })).toBe("not-rocev2");
    expect(bad((b, v) => { H.setIpv4Protocol(v, 14, 6); fixIp(b, v); })).toBe("not-udp");
    expect(bad((b, v) => { H.setIpv4MoreFragments(v, 14, 1); fixIp(b, v); })).toBe("fragment");
    expect(bad((b, v) => { H.setUdpLength(v, 34, 9); })).toBe("udp-length");
    expect(bad((b, v) => { H.setBthOpcode(v, 42, 0x64); })).toBe("opcode");
    expect(bad((b, v) => { H.setIpv4TotalLength(v, 14, 2000); fixIp(b, v); })).toBe("truncated");
    expect(parseFrame(good.subarray(0, 30))).toEqual({ ok: false, error: "truncated" });
    const ack = buildFrame({ opcode: OP.RC_ACK, destQp: 5, psn: 6, ipSrc: 1, ipDst: 2, aeth: { syndrome: 0, msn: 1 } });
    const v = new DataView(ack.buffer);
    H.setBthPadCnt(v, 42, 3);
    expect(parseFrame(ack)).toEqual({ ok: false, error: "pad" });
    // Ethernet padding after the datagram is not part of it
    const padded = new Uint8Array(good.length + 6);
    padded.set(good);
    expect(parseFrame(padded).ok).toBe(true);
  });

  it("refuses to build a frame its opcode does not allow", () => {
    const base = { destQp: 1, psn: 1, ipSrc: 1, ipDst: 2 };
    expect(() => buildFrame({ ...base, opcode: OP.RC_WRITE_FIRST })).toThrow(/needs reth/);
    expect(() => buildFrame({ ...base, opcode: OP.RC_SEND_ONLY, immDt: 3 })).toThrow(/has no immDt/);
    expect(() => buildFrame({ ...base, opcode: OP.RC_ACK, aeth: { syndrome: 0, msn: 0 }, payload: new Uint8Array(1) })).toThrow(/no payload/);
    expect(() => buildFrame({ ...base, opcode: 0x64 })).toThrow(/opcode/);
    expect(() => buildFrame({ ...base, opcode: OP.RC_SEND_ONLY, psn: 1 << 24 })).toThrow(/psn/);
    expect(() => buildFrame({ ...base, opcode: OP.RC_SEND_ONLY, payload: new Uint8Array(70000) })).toThrow(/65535/);
  });
});

describe("pcapng writer", () => {
  const frames = [1, 17, 4096].map((n, i) => buildFrame({ opcode: OP.RC_WRITE_MIDDLE, destQp: i, psn: i, ipSrc: 1, ipDst: 2, payload: new Uint8Array(n).fill(i + 1) }));

  function capture(bufferBytes: number, snapLen = 0) {
    const chunks: Uint8Array[] = [];
    const w = new PcapngWriter((c) => chunks.push(c), "menic-test", bufferBytes);
    const a = w.addInterface("dev0.p0", { description: "device 0 port 0", speedBps: 800_000_000_000n, snapLen });
    const b = w.addInterface("leaf1.p3");
    frames.forEach((f, i) => w.writePacket(i === 1 ? b : a, 5_000_000_000_123n + BigInt(i) * ((1n << 32n) + 7n), f, f.length, i === 2 ? "in" : undefined));
    w.flush();
    return { chunks, bytes: Buffer.concat(chunks) };
  }

  it("writes a section, an interface per capture point and a packet block per frame, times in nanoseconds", () => {
    const { bytes } = capture(1 << 20);
    const file = readPcapng(new Uint8Array(bytes));
    expect(file.application).toBe("menic-test");
    expect(file.interfaces).toEqual([
      { linkType: 1, snapLen: 0, name: "dev0.p0", description: "device 0 port 0", speedBps: 800_000_000_000n, tsresol: 9 },
      { linkType: 1, snapLen: 0, name: "leaf1.p3", tsresol: 9 },
    ]);
    expect(file.packets.map((p) => [p.iface, p.time, p.originalLength, p.flags])).toEqual([
      [0, 5_000_000_000n, frames[0]!.length, undefined], // picoseconds truncated to nanoseconds
      [1, (5_000_000_000_123n + (1n << 32n) + 7n) / 1000n, frames[1]!.length, undefined],
      [0, (5_000_000_000_123n + 2n * ((1n << 32n) + 7n)) / 1000n, frames[2]!.length, 1],
    ]);
    file.packets.forEach((p, i) => expect(p.data).toEqual(frames[i]));
  });

  it("gives the same bytes however small its buffer, in chunks no larger than it (unless one block is)", () => {
    const whole = capture(1 << 20);
    const small = capture(200);
    expect(small.bytes.equals(whole.bytes)).toBe(true);
    expect(small.chunks.length).toBeGreaterThan(3);
    const big = small.chunks.filter((c) => c.length > 200);
    expect(big.length).toBe(1); // the 4 KiB frame's block, alone in its chunk
    expect(new DataView(big[0]!.buffer).getUint32(4, true)).toBe(big[0]!.length);
  });

  it("keeps snapLen bytes of each frame and says how long it was", () => {
    const { bytes } = capture(1 << 20, 64);
    const file = readPcapng(new Uint8Array(bytes));
    expect(file.interfaces[0]!.snapLen).toBe(64);
    expect(file.packets[2]!.data).toEqual(frames[2]!.subarray(0, 64));
    expect(file.packets[2]!.originalLength).toBe(frames[2]!.length);
  });

  it("refuses an interface it has not described and a time that is not a u64", () => {
    const w = new PcapngWriter(() => {});
    expect(() => w.writePacket(0, 0n, frames[0]!)).toThrow(/interface 0/);
    w.addInterface("x");
    expect(() => w.writePacket(0, 1n << 64n, frames[0]!)).toThrow(/u64/);
  });
});
