// What crosses between the fabric and an endpoint (a device): frames going in through a
// TxSink (one call per frame, bytes copied from wherever the endpoint keeps them; or a device's
// transmit ring in one block of PKT records), and arrivals coming out as one reusable
// ArrivalBatch per delivery: columns, and the same frames as PKT records in receive-ring form,
// all views of the fabric's memory in the core (no copy: the endpoint copies what it keeps,
// once, into its own memory).

import { FAB } from "../generated/layouts.js";

/** Where an endpoint hands the frames it sent. */
export interface TxSink {
  /**
   * One frame of `wireLen` bytes (Ethernet header to ICRC, no FCS) that the endpoint began to
   * send from `port` at `departPs` (its first bit on the wire, whole picoseconds; the endpoint
   * serialises at its port rate with the fabric's frameOverheadBytes per frame, and a port's
   * frames come in departure order). Its headers are `bytes[hdrOff, hdrOff + hdrLen)` (hdrLen
   * ≤ 96, a PKT record's header room; at least Ethernet + IPv4 (+ UDP)); in `full` mode the
   * rest of the frame is `bytes[payloadOff, payloadOff + payloadLen)`.
   */
  send(port: number, departPs: number, wireLen: number, bytes: Uint8Array, hdrOff: number, hdrLen: number, payloadOff?: number, payloadLen?: number): void;
  /**
   * `n` frames as PKT records of a transmit ring (Fabric.sendRecords): `ringEntries` records
   * at `recsAt` in `mem`, from entry `head`; each stamped with when its last bit left, so it
   * departed (wire_len + txOverheadBytes) bytes at `psPerByte` earlier; full-mode bodies at
   * `bodiesAt` + body_off.
   */
  sendRecords(mem: Uint8Array, recsAt: number, head: number, n: number, ringEntries: number, psPerByte: number, txOverheadBytes: number, bodiesAt: number): void;
}

/**
 * The frames that reach one device in one window, sorted by (arrivalPs, srcDevice, srcPort,
 * seq): entry i arrived (its last bit) at `arrivalPs[i]` on the device's port `port[i]`; it
 * is frame number `seq[i]` of port `srcPort[i]` of device `srcDevice[i]`; its headers are
 * `hdr[hdrOff[i], hdrOff[i] + hdrLen[i])` and (full mode) its payload
 * `payload[payloadOff[i], payloadOff[i] + payloadLen[i])`. The same frames are PKT records
 * (layouts/device.json, receive form: body_off counts from `bodiesAt`) at
 * `mem[recordsAt, recordsAt + n * PKT.SIZE)`. Valid only during `deliver`.
 */
export class ArrivalBatch {
  device = -1;
  n = 0;
  arrivalPs = new Float64Array(0);
  port = new Uint32Array(0);
  srcDevice = new Uint32Array(0);
  srcPort = new Uint32Array(0);
  seq = new Float64Array(0);
  wireLen = new Uint32Array(0);
  /** the fabric's memory, where the header slots are: entry i's header at hdrOff[i] */
  hdr = new Uint8Array(0);
  hdrOff = new Uint32Array(0);
  hdrLen = new Uint32Array(0);
  /** the fabric's payload slab (full mode) */
  payload = new Uint8Array(0);
  payloadOff = new Uint32Array(0);
  payloadLen = new Uint32Array(0);
  /** the fabric's memory: the PKT records at recordsAt, their bodies from bodiesAt */
  mem = new Uint8Array(0);
  recordsAt = 0;
  bodiesAt = 0;

  /** where the columns were made (the outbox, the header and payload slabs, the capacity), to make them again only when the fabric moved them */
  private made = [-1, -1, -1];

  /** @internal Points the batch at the fabric's last delivery of `n` frames (Fabric.takeArrivals); `dv` views the fabric's memory. */
  bind(dv: DataView<ArrayBuffer>, fab: number, n: number, full: boolean): void {
    this.n = n;
    const at = (f: number) => dv.getUint32(fab + f, true);
    this.recordsAt = at(FAB.outbox);
    this.bodiesAt = at(FAB.outbox_body);
    const cap = at(FAB.outbox_cap), buffer = dv.buffer, m = this.made;
    if (m[0] === this.recordsAt && m[1] === at(FAB.pay) && m[2] === cap && this.mem.buffer === buffer) return;
    this.made = [this.recordsAt, at(FAB.pay), cap];
    this.mem = new Uint8Array(buffer);
    this.arrivalPs = new Float64Array(buffer, at(FAB.b_arrival), cap);
    this.seq = new Float64Array(buffer, at(FAB.b_seq), cap);
    const u32 = (f: number) => new Uint32Array(buffer, at(f), cap);
    this.port = u32(FAB.b_port);
    this.srcDevice = u32(FAB.b_src_device);
    this.srcPort = u32(FAB.b_src_port);
    this.wireLen = u32(FAB.b_wire_len);
    this.hdrOff = u32(FAB.b_hdr_off);
    this.hdrLen = u32(FAB.b_hdr_len);
    this.payloadOff = u32(FAB.b_payload_off);
    this.payloadLen = u32(FAB.b_payload_len);
    this.hdr = this.mem;
    this.payload = full && at(FAB.pay) !== 0 ? new Uint8Array(buffer, at(FAB.pay)) : new Uint8Array(0);
  }
}
