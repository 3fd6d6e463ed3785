// A PKT record's descriptor (layouts/device.json), written by the host: a frame staged into a
// device's receive ring (host/ports.ts) or handed to the fabric's inbox (host/fabric/fabric.ts).

import { PKT } from "./generated/layouts.js";

/** Writes the descriptor of the PKT record at `at` in `dv` (little-endian, times as u64 ps). */
export function putPktDescriptor(dv: DataView, at: number, timePs: number, wireLen: number, port: number, hdrLen: number, bodyLen: number, bodyOff: number, seq: number, srcDevice: number): void {
  dv.setUint32(at + PKT.time_ps, timePs % 2 ** 32, true);
  dv.setUint32(at + PKT.time_ps + 4, Math.floor(timePs / 2 ** 32), true);
  dv.setUint32(at + PKT.wire_len, wireLen, true);
  dv.setUint16(at + PKT.port, port, true);
  dv.setUint16(at + PKT.hdr_len, hdrLen, true);
  dv.setUint32(at + PKT.body_len, bodyLen, true);
  dv.setUint32(at + PKT.body_off, bodyOff, true);
  dv.setUint32(at + PKT.seq, seq >>> 0, true);
  dv.setUint32(at + PKT.src_device, srcDevice >>> 0, true);
}
