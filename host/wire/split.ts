// Where a frame's headers end, as a receiving port reads them: a device's receive ring holds a
// frame as its headers (a PKT record's header room) and its body apart (layouts/device.json
// PKT), so bytes from outside menic (a conformance tester's frame, a UDP datagram) are split
// here as a NIC's parser would: Ethernet, IPv4 and UDP, then the transport header its UDP port
// and first bytes name (RoCEv2's BTH and the extended headers its opcode has; the
// MetaRoCE-like Mrh or Mra). A frame too short or of no known transport is split at the end of
// what it has, and the device counts it malformed.

import { ETH_SIZE, IPV4_SIZE, UDP_SIZE, BTH_SIZE, MRH_SIZE, MRA_SIZE, MRT, UDP_PORT, OPCODES } from "../generated/headers.js";

const ENVELOPE = ETH_SIZE + IPV4_SIZE + UDP_SIZE;

/** Bytes of the headers of the frame `bytes` (Ethernet header on): at most its length. */
export function frameHeaderBytes(bytes: Uint8Array): number {
  if (bytes.length < ENVELOPE + 1) return bytes.length;
  const dstPort = (bytes[ETH_SIZE + IPV4_SIZE + 2]! << 8) | bytes[ETH_SIZE + IPV4_SIZE + 3]!;
  const first = bytes[ENVELOPE]!;
  let transport = 0;
  if (dstPort === MRT.UDP_PORT) transport = (first & 0xf) === MRT.TYPE_ACK ? MRA_SIZE : MRH_SIZE;
  else if (dstPort === UDP_PORT.ROCEV2) transport = BTH_SIZE + (OPCODES.get(first)?.extBytes ?? 0);
  return Math.min(bytes.length, ENVELOPE + transport);
}
