// The IPv4 header checksum (RFC 791, RFC 1071): the one's-complement of the one's-complement
// sum of the header's 16-bit words.

/**
 * The one's-complement checksum over the 20-byte IPv4 header at `ip`: with its checksum field
 * zero, the value to write there; over a header as received, 0 when the header is intact.
 */
export function ipv4Checksum(ip: usize): u32 {
  let sum: u32 = 0;
  for (let i: usize = 0; i < 20; i += 2) sum += (<u32>load<u8>(ip + i) << 8) | <u32>load<u8>(ip + i + 1);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
  return ~sum & 0xffff;
}
