// Where a frame's headers end, as a receiving port reads them: a device's receive ring holds a
// frame as its headers (a PKT record's header room) and its body apart (layouts/device.json
// PKT), so bytes from outside menic (a datagram a served device takes, a conformance tester's
// frame) are split here as a NIC's parser would: Ethernet, IPv4 and UDP, then the transport
// header its UDP port and first bytes name (RoCEv2's BTH and the extended headers its opcode
// has; the MetaRoCE-like Mrh or Mra).

import * as H from "../generated/headers.js";
import { ETH_SIZE, IPV4_SIZE, UDP_SIZE, BTH_SIZE, MRH_SIZE, MRA_SIZE, MRC_SIZE, ICRC_SIZE, MRT, UDP_PORT, OPCODES } from "../generated/headers.js";

const ENVELOPE = ETH_SIZE + IPV4_SIZE + UDP_SIZE;

/**
 * Bytes of the transport's headers at the start of `payload`, a datagram to transport port
 * `udpPort` (4791 or 4792): BTH and the extension headers its opcode calls for (the
 * generated OPCODES table), or the MetaRoCE-like DATA/PROBE header (Mrh) or ACK (Mra). Null when
 * the payload cannot hold them and the trailer, or names an opcode or type the device does not
 * know, or the port is neither.
 */
export function transportHeaderBytes(udpPort: number, payload: Uint8Array): number | null {
  if (payload.length === 0) return null;
  const v = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  let hdr: number, trailer: number;
  if (udpPort === UDP_PORT.ROCEV2) {
    if (payload.length < BTH_SIZE) return null;
    const info = OPCODES.get(H.getBthOpcode(v, 0));
    if (!info) return null;
    hdr = BTH_SIZE + info.extBytes;
    trailer = ICRC_SIZE;
  } else if (udpPort === MRT.UDP_PORT) {
    const type = H.getMrhType(v, 0);
    if (type === MRT.TYPE_ACK) hdr = MRA_SIZE;
    else if (type === MRT.TYPE_DATA || type === MRT.TYPE_PROBE) hdr = MRH_SIZE;
    else return null;
    trailer = MRC_SIZE;
  } else return null;
  return payload.length < hdr + trailer ? null : hdr;
}

/**
 * Bytes of the headers of the frame `bytes` (Ethernet header on), at most its length. A frame
 * whose transport header cannot be found (too short, an unknown opcode or type, another UDP
 * port) is split after a DATA header's room, or at its end: the device finds it malformed
 * either way, as it would the same bytes off a wire.
 */
export function frameHeaderBytes(bytes: Uint8Array): number {
  if (bytes.length <= ENVELOPE) return bytes.length;
  const dstPort = (bytes[ETH_SIZE + IPV4_SIZE + 2]! << 8) | bytes[ETH_SIZE + IPV4_SIZE + 3]!;
  return ENVELOPE + (transportHeaderBytes(dstPort, bytes.subarray(ENVELOPE)) ?? Math.min(bytes.length - ENVELOPE, MRH_SIZE));
}
