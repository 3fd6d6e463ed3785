// The IPv4 header checksum (RFC 791, RFC 1071): the one's-complement of the one's-complement
// sum of the header's 16-bit words.

/**
 * The one's-complement checksum over the 20-byte IPv4 header at `ip`: with its checksum field
 * zero, the value to write there; over a header as received, 0 when the header is intact.
 */
export function ipv4Checksum(ip: usize): u32 {
  // a one's-complement sum does not depend on byte order (RFC 1071, 2.B): the five 32-bit words
  // are summed as they load (little-endian), and the folded sum's two bytes swapped at the end.
  // 2^16 is 1 in one's-complement arithmetic, so a word's two halves add as its value does, and
  // the folds bring the carries back in
  let sum: u64 = <u64>load<u32>(ip) + <u64>load<u32>(ip, 4) + <u64>load<u32>(ip, 8) + <u64>load<u32>(ip, 12) + <u64>load<u32>(ip, 16);
  sum = (sum & 0xffffffff) + (sum >> 32);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
  return ~<u32>bswap<u16>(<u16>sum) & 0xffff;
}
