// What crosses between the fabric and an endpoint (a device): frames going in through a
// TxSink, one call per frame, bytes copied from wherever the endpoint keeps them (a view of
// wasm memory and an offset: no object per frame); and arrivals coming out as one reusable
// ArrivalBatch per delivery, columns of typed arrays that point into the fabric's own header
// and payload slabs (no copy: the endpoint copies what it keeps, once, into its own memory).

import { grown } from "./packets.js";

/** Where an endpoint hands the frames it sent. */
export interface TxSink {
  /**
   * One frame of `wireLen` bytes (Ethernet header to ICRC, no FCS) that the endpoint began to
   * send from `port` at `departPs` (its first bit on the wire; the endpoint serialises at its
   * port rate with the fabric's frameOverheadBytes per frame, and a port's frames come in
   * departure order). Its headers are `bytes[hdrOff, hdrOff + hdrLen)` (hdrLen ≤
   * HDR_SLOT_BYTES, at least Ethernet + IPv4 (+ UDP)); in `full` mode the rest of the frame is
   * `bytes[payloadOff, payloadOff + payloadLen)`.
   */
  send(port: number, departPs: number, wireLen: number, bytes: Uint8Array, hdrOff: number, hdrLen: number, payloadOff?: number, payloadLen?: number): void;
}

/**
 * The frames that reach one device in one window, sorted by (arrivalPs, srcDevice, srcPort,
 * seq): entry i arrived (its last bit) at `arrivalPs[i]` on the device's port `port[i]`; it
 * is frame number `seq[i]` of port `srcPort[i]` of device `srcDevice[i]`; its headers are
 * `hdr[hdrOff[i], hdrOff[i] + hdrLen[i])` and (full mode) its payload
 * `payload[payloadOff[i], payloadOff[i] + payloadLen[i])`. Valid only during `deliver`.
 */
export class ArrivalBatch {
  device = -1;
  n = 0;
  arrivalPs = new Float64Array(0);
  port = new Uint16Array(0);
  srcDevice = new Int32Array(0);
  srcPort = new Uint16Array(0);
  seq = new Float64Array(0);
  wireLen = new Uint32Array(0);
  /** the fabric's header slab; entry i's header at hdrOff[i] (a multiple of 128, HDR_SLOT_BYTES) */
  hdr = new Uint8Array(0);
  hdrOff = new Uint32Array(0);
  hdrLen = new Uint8Array(0);
  /** the fabric's payload slab (full mode) */
  payload = new Uint8Array(0);
  payloadOff = new Uint32Array(0);
  payloadLen = new Uint32Array(0);

  constructor(initial = 256) {
    this.reserve(initial);
  }

  /** Room for `n` entries (grows, keeping what is there). */
  reserve(n: number): void {
    if (n <= this.arrivalPs.length) return;
    const m = Math.max(n, 2 * this.arrivalPs.length);
    this.arrivalPs = grown(this.arrivalPs, m);
    this.port = grown(this.port, m);
    this.srcDevice = grown(this.srcDevice, m);
    this.srcPort = grown(this.srcPort, m);
    this.seq = grown(this.seq, m);
    this.wireLen = grown(this.wireLen, m);
    this.hdrOff = grown(this.hdrOff, m);
    this.hdrLen = grown(this.hdrLen, m);
    this.payloadOff = grown(this.payloadOff, m);
    this.payloadLen = grown(this.payloadLen, m);
  }
}
