import { describe, it, expect, beforeAll } from "vitest";
import { execFileSync } from "node:child_process";
import * as H from "../host/generated/headers.js";
import { HEADER_LAYOUTS, OPCODES, type HeaderField, type HeaderLayout } from "../host/generated/headers.js";
import { crc32, crc32Update, icrcIpv4, ICRC_MIN_IP_BYTES } from "../host/wire/icrc.js";
import { buildWireWasm, SCRATCH_BYTES, type WireWasm } from "./helpers/wire-wasm.js";
import { xorshift32 } from "./helpers/xorshift.js";

// The packet header views generated from layouts/headers/*.json, and the ICRC: the TypeScript and
// AssemblyScript accessors against a bit-by-bit reference, the two ICRCs against each other and
// against a packet captured from real hardware.

let wasm: WireWasm;
beforeAll(async () => {
  wasm = await buildWireWasm();
});

const randomBytes = (next: () => number, n: number) => Uint8Array.from({ length: n }, () => next() & 0xff);
const hexBytes = (s: string) => Uint8Array.from(s.replace(/\s+/g, "").match(/../g)!.map((x) => parseInt(x, 16)));

/** The field's value read bit by bit, MSB first (bytes reversed first for a little-endian field). */
function refGet(buf: Uint8Array, f: HeaderField): bigint {
  const b = f.littleEndian ? Uint8Array.from(buf) : buf;
  if (f.littleEndian) b.subarray(f.bit / 8, (f.bit + f.bits) / 8).reverse();
  let v = 0n;
  for (let i = f.bit; i < f.bit + f.bits; i++) v = (v << 1n) | BigInt((b[i >> 3]! >> (7 - (i & 7))) & 1);
  return v;
}
/** Bits of the header outside field f, as a string of 0/1 (to check a set leaves them alone). */
function otherBits(buf: Uint8Array, f: HeaderField): string {
  let s = "";
  for (let i = 0; i < buf.length * 8; i++) if (i < f.bit || i >= f.bit + f.bits) s += (buf[i >> 3]! >> (7 - (i & 7))) & 1;
  return s;
}
const cap = (s: string) => s[0]!.toUpperCase() + s.slice(1);
type TsGet = (v: DataView, at: number) => number | bigint;
type TsSet = (v: DataView, at: number, x: number | bigint) => void;
const tsAccessors = (h: HeaderLayout, f: HeaderField) => ({
  get: (H as unknown as Record<string, TsGet>)[`get${h.name}${cap(f.name)}`]!,
  set: (H as unknown as Record<string, TsSet>)[`set${h.name}${cap(f.name)}`]!,
});

describe("generated header views", () => {
  it("are what scripts/gen-headers.mjs writes from layouts/headers/*.json now (regenerate: npm run gen:headers)", () => {
    let out = "";
    try {
      execFileSync("node", ["scripts/gen-headers.mjs", "--check"], { encoding: "utf8", stdio: "pipe" });
    } catch (e) {
      out = String((e as { stderr?: string }).stderr);
    }
    expect(out).toBe("");
  });

  it("have the sizes and offsets of the standards", () => {
    expect([H.ETH_SIZE, H.IPV4_SIZE, H.UDP_SIZE, H.BTH_SIZE, H.RETH_SIZE, H.AETH_SIZE, H.IMM_DT_SIZE, H.CNP_SIZE, H.ICRC_SIZE])
      .toEqual([14, 20, 8, 12, 16, 4, 4, 16, 4]);
    expect(H.IPV4_OFFSET).toMatchObject({ totalLength: 2, identification: 4, ttl: 8, protocol: 9, checksum: 10, src: 12, dst: 16 });
    expect(H.BTH_OFFSET).toMatchObject({ pKey: 2, destQp: 5, psn: 9 });
    expect(H.RETH_OFFSET).toEqual({ va: 0, rkey: 8, dmaLength: 12 });
    // the ICRC masks IPv4 ToS (byte 1), TTL (8) and checksum (10, 11); the UDP checksum; BTH byte 4
    expect([H.IPV4_ICRC_MASK, H.UDP_ICRC_MASK, H.BTH_ICRC_MASK]).toEqual([0b1101_0000_0010, 0b1100_0000, 0b1_0000]);
    expect(H.UDP_PORT.ROCEV2).toBe(4791);
  });

  it("get and set every field like a bit-by-bit reference, in TypeScript and AssemblyScript", () => {
    const next = xorshift32(7);
    const mem = () => new Uint8Array(wasm.memory.buffer);
    const base = wasm.scratch();
    let checked = 0;
    for (const h of HEADER_LAYOUTS) for (const f of h.fields) {
      const ts = tsAccessors(h, f);
      const asGet = wasm[`get_${h.name}_${f.name}`] as (p: number) => bigint;
      const asSet = wasm[`set_${h.name}_${f.name}`] as (p: number, v: bigint) => void;
      for (let round = 0; round < 20; round++) {
        const at = 3 + (round % 5); // headers need not be aligned
        const buf = randomBytes(next, at + h.size + 3);
        const hdr = () => buf.subarray(at, at + h.size);
        const want = refGet(hdr(), f);
        const dv = new DataView(buf.buffer);
        expect(BigInt(ts.get(dv, at)), `${h.name}.${f.name} TS get`).toBe(want);
        mem().set(buf, base);
        expect(BigInt.asUintN(64, asGet(base + at)), `${h.name}.${f.name} AS get`).toBe(want);

        const value = BigInt.asUintN(f.bits, (BigInt(next()) << 32n) | BigInt(next()));
        const before = otherBits(hdr(), f);
        const outside = [...buf.subarray(0, at), ...buf.subarray(at + h.size)];
        ts.set(dv, at, f.bits === 64 ? value : Number(value));
        expect(refGet(hdr(), f), `${h.name}.${f.name} TS set`).toBe(value);
        expect(otherBits(hdr(), f), `${h.name}.${f.name} TS set leaves other bits`).toBe(before);
        expect([...buf.subarray(0, at), ...buf.subarray(at + h.size)]).toEqual(outside);

        asSet(base + at, value);
        expect(mem().subarray(base, base + buf.length), `${h.name}.${f.name} AS set`).toEqual(buf);
        checked++;
      }
    }
    expect(checked).toBe(HEADER_LAYOUTS.reduce((n, h) => n + h.fields.length, 0) * 20);
  });

  it("say the same in both views which headers and payload follow each opcode", () => {
    for (let op = 0; op < 256; op++) {
      const info = OPCODES.get(op);
      const flags = wasm.opcodeFlags(op);
      expect(wasm.opcodeExtBytes(op), `opcode ${op}`).toBe(info?.extBytes ?? 0);
      if (!info) { expect(flags).toBe(0); continue; }
      const want = 1 | (info.payload ? 2 : 0) | info.headers.reduce((m, n) => m | (4 << ["Reth", "Aeth", "ImmDt", "Cnp"].indexOf(n)), 0);
      expect(flags, info.name).toBe(want);
    }
    expect(OPCODES.get(H.OP.RC_WRITE_ONLY_IMM)?.headers).toEqual(["Reth", "ImmDt"]);
    expect(OPCODES.get(H.OP.CNP)?.headers).toEqual(["Cnp"]);
  });
});

// A CNP a ConnectX-4 Lx sent (published with scapy's RoCE tests): Ethernet, IPv4 (DSCP 48, ECN 2,
// TTL 64), UDP 0 -> 4791 with checksum 0, BTH opcode 0x81 with BECN set, DestQP 0x118, 16 reserved
// bytes, ICRC 82 fd 00 2a. Hardware computed that ICRC, so it checks what we read as masked and
// the byte order, not just that our two implementations agree.
const CAPTURED_CNP = hexBytes(`
  e41d2dab2bc2 7cfe90643b32 0800
  45c2 003c 718c 4000 4011 9161 0a001101 0a001201
  0000 12b7 0028 0000
  8100ffff 40000118 00000000
  00000000000000000000000000000000
  82fd002a`);

describe("ICRC", () => {
  const put = (bytes: Uint8Array) => {
    new Uint8Array(wasm.memory.buffer).set(bytes, wasm.scratch());
    return wasm.scratch();
  };

  it("is the CRC-32 of IEEE 802.3 (check value of '123456789' is 0xcbf43926)", () => {
    const s = new TextEncoder().encode("123456789");
    expect(crc32(s)).toBe(0xcbf43926);
    expect(~wasm.crc32Update(0xffffffff, put(s), s.length) >>> 0).toBe(0xcbf43926);
  });

  it("starts from the register after 8 bytes of all ones, the LRH RoCEv2 leaves out", () => {
    expect(crc32Update(0xffffffff, new Uint8Array(8).fill(0xff))).toBe(0xdebb20e3);
  });

  it("matches the ICRC a ConnectX-4 Lx put on a CNP, in both implementations", () => {
    const ip = CAPTURED_CNP.subarray(H.ETH_SIZE);
    const onWire = H.getIcrcValue(new DataView(ip.buffer, ip.byteOffset), ip.length - 4);
    expect(onWire).toBe(0x2a00fd82);
    expect(icrcIpv4(ip)).toBe(onWire);
    expect(wasm.icrcIpv4(put(ip), ip.length) >>> 0).toBe(onWire);
  });

  it("ignores the fields a switch may change, and nothing else", () => {
    const ip = Uint8Array.from(CAPTURED_CNP.subarray(H.ETH_SIZE));
    const dv = new DataView(ip.buffer);
    const crc = icrcIpv4(ip);
    H.setIpv4Ttl(dv, 0, 3); H.setIpv4Ecn(dv, 0, H.IPV4_ECN.CE); H.setIpv4Dscp(dv, 0, 0); H.setIpv4Checksum(dv, 0, 0x1234);
    H.setUdpChecksum(dv, H.IPV4_SIZE, 0xbeef); H.setBthFecn(dv, H.IPV4_SIZE + H.UDP_SIZE, 1); H.setBthResv6a(dv, H.IPV4_SIZE + H.UDP_SIZE, 5);
    expect(icrcIpv4(ip)).toBe(crc);
    for (let i = 0; i < ip.length - 4; i++) {
      const masked = (i < 20 && H.IPV4_ICRC_MASK & (1 << i)) || (i >= 20 && i < 28 && H.UDP_ICRC_MASK & (1 << (i - 20)))
        || (i >= 28 && i < 40 && H.BTH_ICRC_MASK & (1 << (i - 28)));
      if (masked) continue;
      ip[i]! ^= 0x10;
      expect(icrcIpv4(ip), `byte ${i}`).not.toBe(crc);
      expect(wasm.icrcIpv4(put(ip), ip.length) >>> 0, `byte ${i}`).toBe(icrcIpv4(ip));
      ip[i]! ^= 0x10;
    }
  });

  it("agrees between TypeScript and AssemblyScript on random packets of every length, options included", () => {
    const next = xorshift32(2024);
    for (let n = 0; n < 600; n++) {
      const options = n % 7 === 0 ? (next() % 10) * 4 : 0;
      const len = ICRC_MIN_IP_BYTES + options + (n < 100 ? n : next() % 9000);
      const ip = randomBytes(next, len);
      ip[0] = 0x40 | (5 + options / 4);
      expect(wasm.icrcIpv4(put(ip), len) >>> 0, `packet ${n}, ${len} bytes`).toBe(icrcIpv4(ip));
    }
  });

  it("refuses lengths that cannot hold the headers (0 in the core, RangeError on the host)", () => {
    const ip = Uint8Array.from(CAPTURED_CNP.subarray(H.ETH_SIZE));
    expect(wasm.icrcIpv4(put(ip), ICRC_MIN_IP_BYTES - 1)).toBe(0);
    expect(() => icrcIpv4(ip.subarray(0, ICRC_MIN_IP_BYTES - 1))).toThrow(RangeError);
    ip[0] = 0x4f; // IHL 15: 60 bytes of IPv4 header do not fit
    expect(wasm.icrcIpv4(put(ip), ip.length)).toBe(0);
    expect(() => icrcIpv4(ip)).toThrow(RangeError);
    ip[0] = 0x44; // IHL 4 is below the minimum
    expect(wasm.icrcIpv4(put(ip), ip.length)).toBe(0);
    expect(SCRATCH_BYTES).toBeGreaterThan(9000 + 100);
  });
});
