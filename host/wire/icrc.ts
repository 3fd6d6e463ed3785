// host/wire/ holds wire formats, the bytes a link carries or a capture keeps: the one thing
// "wire" names among menic's folders (the core's checksums are assembly/checksum/).
//
// The RoCEv2 invariant CRC (ICRC), the host's reference implementation: plain and byte at a time,
// so that it can check the core's table-driven one (assembly/checksum/icrc.ts) and the frames menic
// writes. IBA Vol. 1 §7.8 defines the ICRC as the CRC-32 of IEEE 802.3 over the packet's
// invariant fields; Annex A17 (RoCEv2) says what it covers over UDP/IP: 8 bytes of all ones in
// place of the InfiniBand LRH, then the IP header, UDP header, BTH, extension headers, payload and
// pad, with the fields a switch may change (layouts/headers: `icrcMasked`) read as all ones.
// On the wire it is sent least significant byte first, as the Ethernet FCS is.

import { IPV4_ICRC_MASK, IPV4_SIZE, UDP_ICRC_MASK, UDP_SIZE, BTH_ICRC_MASK, BTH_SIZE, ICRC_SIZE } from "../generated/headers.js";

/** Bytes of all ones that stand for the LRH a RoCEv2 packet does not have (Annex A17). */
export const ICRC_LRH_BYTES = 8;

const TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** Runs the CRC-32 register `crc` over bytes[from, to): no inversion in or out. */
export function crc32Update(crc: number, bytes: Uint8Array, from = 0, to = bytes.length): number {
  for (let i = from; i < to; i++) crc = TABLE[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8);
  return crc >>> 0;
}

/** The CRC-32 of IEEE 802.3 (zlib's crc32): register starts all ones, result inverted. */
export function crc32(bytes: Uint8Array): number {
  return ~crc32Update(0xffffffff, bytes) >>> 0;
}

/** Bytes of the smallest IPv4 RoCEv2 packet: headers without options, a BTH and the ICRC. */
export const ICRC_MIN_IP_BYTES = IPV4_SIZE + UDP_SIZE + BTH_SIZE + ICRC_SIZE;

/**
 * The ICRC of a RoCEv2 packet over IPv4. `ip` holds the IP datagram from its header to the end
 * of the ICRC field (whose own 4 bytes are not covered). IPv4 options, if IHL says there are
 * any, are covered as they are. Throws a RangeError when `ip` is too short to hold the headers.
 */
export function icrcIpv4(ip: Uint8Array): number {
  const ihl = ip.length > 0 ? (ip[0]! & 0xf) * 4 : 0;
  if (ihl < IPV4_SIZE || ip.length < ihl - IPV4_SIZE + ICRC_MIN_IP_BYTES)
    throw new RangeError(`icrcIpv4: ${ip.length} bytes cannot hold IPv4 (IHL ${ihl / 4}), UDP, BTH and ICRC`);
  const covered = new Uint8Array(ICRC_LRH_BYTES + ip.length - ICRC_SIZE);
  covered.fill(0xff, 0, ICRC_LRH_BYTES);
  covered.set(ip.subarray(0, ip.length - ICRC_SIZE), ICRC_LRH_BYTES);
  const mask = (at: number, bytes: number, bits: number) => {
    for (let b = 0; b < bytes; b++) if (bits & (1 << b)) covered[ICRC_LRH_BYTES + at + b] = 0xff;
  };
  mask(0, IPV4_SIZE, IPV4_ICRC_MASK);
  mask(ihl, UDP_SIZE, UDP_ICRC_MASK);
  mask(ihl + UDP_SIZE, BTH_SIZE, BTH_ICRC_MASK);
  return crc32(covered);
}
