// Packet sequence numbers: 24 bits that wrap (IBA vol. 1 9.7.1), and how many a message takes.

import { BTH_PSN_MASK } from "../generated/headers";

/** Packets a message of `len` bytes takes (a zero-length message still takes one). */
@inline export function packetsOf(len: u32, mtu: u32): u32 {
  return len == 0 ? 1 : (len + mtu - 1) / mtu;
}

@inline export function psnAdd(psn: u32, n: u32): u32 {
  return (psn + n) & BTH_PSN_MASK;
}

/** a - b in the 24-bit PSN space, as a signed distance. */
@inline export function psnDiff(a: u32, b: u32): i32 {
  return (<i32>((a - b) << 8)) >> 8;
}
