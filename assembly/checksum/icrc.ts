// The RoCEv2 invariant CRC (ICRC) in the core: table-driven (slicing-by-16), no allocation, over
// the packet where it lies. IBA Vol. 1 §7.8 defines the ICRC as the CRC-32 of IEEE 802.3 over
// the packet's invariant fields; Annex A17 (RoCEv2) says what it covers over UDP/IPv4: 8 bytes
// of all ones in place of the LRH, then the IPv4 header, UDP header, BTH, extension headers,
// payload and pad, with the fields a switch may change read as all ones (the `*_ICRC_MASK`
// bytes generated from layouts/headers). The value is sent least significant byte first:
// `setIcrcValue` (or a plain little-endian store) puts it on the wire.
// host/wire/icrc.ts is the plain reference this one is tested against.

import { CRC32_TABLES } from "../generated/crc32";
import { IPV4_ICRC_MASK, IPV4_SIZE, UDP_ICRC_MASK, UDP_SIZE, BTH_ICRC_MASK, BTH_SIZE, ICRC_SIZE, getIpv4Ihl } from "../generated/headers";

/** The CRC register after 8 bytes of 0xff from all ones: the LRH that RoCEv2 leaves out. */
export const ICRC_LRH_SEED: u32 = 0xdebb20e3;

/** Bytes of the smallest IPv4 RoCEv2 packet: headers without options, a BTH and the ICRC. */
export const ICRC_MIN_IP_BYTES: u32 = IPV4_SIZE + UDP_SIZE + BTH_SIZE + ICRC_SIZE;

const TABLE_BYTES: usize = 1024;

@inline function crcByte(crc: u32, b: u32): u32 {
  return load<u32>(CRC32_TABLES + (<usize>((crc ^ b) & 0xff) << 2)) ^ (crc >> 8);
}

@inline function slice(k: usize, b: u32): u32 {
  return load<u32>(CRC32_TABLES + TABLE_BYTES * k + (<usize>(b & 0xff) << 2));
}

/** Runs the CRC-32 register `crc` over `len` bytes at `p`: no inversion in or out. */
export function crc32Update(crc: u32, p: usize, len: usize): u32 {
  const end = p + len;
  // 16 bytes a step (a payload's 4 KiB is most of a frame's CRC): four words, sixteen tables
  while (end - p >= 16) {
    const a = load<u32>(p) ^ crc, b = load<u32>(p, 4), c = load<u32>(p, 8), d = load<u32>(p, 12);
    crc = slice(15, a) ^ slice(14, a >> 8) ^ slice(13, a >> 16) ^ slice(12, a >> 24)
      ^ slice(11, b) ^ slice(10, b >> 8) ^ slice(9, b >> 16) ^ slice(8, b >> 24)
      ^ slice(7, c) ^ slice(6, c >> 8) ^ slice(5, c >> 16) ^ slice(4, c >> 24)
      ^ slice(3, d) ^ slice(2, d >> 8) ^ slice(1, d >> 16) ^ slice(0, d >> 24);
    p += 16;
  }
  while (end - p >= 8) {
    const lo = load<u32>(p) ^ crc; // wasm loads are little-endian: byte 0 in the low bits
    const hi = load<u32>(p, 4);
    crc = slice(7, lo) ^ slice(6, lo >> 8) ^ slice(5, lo >> 16) ^ slice(4, lo >> 24)
      ^ slice(3, hi) ^ slice(2, hi >> 8) ^ slice(1, hi >> 16) ^ slice(0, hi >> 24);
    p += 8;
  }
  while (p < end) {
    crc = crcByte(crc, load<u8>(p));
    p++;
  }
  return crc;
}

/** The CRC-32 of `len` bytes at `p` (register all ones in, inverted out: the Ethernet FCS's CRC). */
export function crc32(p: usize, len: usize): u32 {
  return ~crc32Update(0xffffffff, p, len);
}

/** Runs the register over a `len`-byte header at `p`, reading byte b as 0xff where bit b of `mask` is set. */
function crcMasked(crc: u32, p: usize, len: u32, mask: u32): u32 {
  for (let b: u32 = 0; b < len; b++) crc = crcByte(crc, (mask >> b) & 1 ? 0xff : <u32>load<u8>(p + b));
  return crc;
}

/**
 * The ICRC of the RoCEv2 packet whose IPv4 header is at `ip`, `ipLen` bytes of IP datagram up to
 * and including the ICRC field (whose own 4 bytes are not covered). IPv4 options are covered as
 * they are. Reads nothing outside [ip, ip + ipLen); returns 0 when `ipLen` cannot hold the headers
 * (the receive path checks lengths before it asks).
 */
export function icrcIpv4(ip: usize, ipLen: u32): u32 {
  if (ipLen < ICRC_MIN_IP_BYTES) return 0;
  const ihl = getIpv4Ihl(ip) << 2;
  if (ihl < IPV4_SIZE || ipLen < ihl - IPV4_SIZE + ICRC_MIN_IP_BYTES) return 0;
  let crc = crcMasked(ICRC_LRH_SEED, ip, IPV4_SIZE, IPV4_ICRC_MASK);
  crc = crc32Update(crc, ip + IPV4_SIZE, ihl - IPV4_SIZE);
  const udp = ip + ihl;
  crc = crcMasked(crc, udp, UDP_SIZE, UDP_ICRC_MASK);
  crc = crcMasked(crc, udp + UDP_SIZE, BTH_SIZE, BTH_ICRC_MASK);
  const rest = ihl + UDP_SIZE + BTH_SIZE;
  crc = crc32Update(crc, ip + rest, ipLen - rest - ICRC_SIZE);
  return ~crc;
}
