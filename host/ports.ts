// A device's ports seen from the host: the frames it sent, read out of its transmit ring, and
// the frames that reach it, staged into its receive ring. A few calls into the core per window,
// no object per frame: the host reads and writes PKT records (layouts/device.json) in place.

import type { Device } from "./device.js";
import { PKT } from "./generated/layouts.js";
import { putPktDescriptor } from "./pkt.js";

/** Where one sent frame is, valid until the next `drain`: its record, and its body (full mode) in `mem`. */
export interface TxFrameRef {
  mem: Uint8Array;
  /** the frame's last bit left the port at this time (ps; exact below 2^53 ps, about 2.5 hours) */
  timePs: number;
  port: number;
  wireLen: number;
  seq: number;
  /** headers: mem[hdrAt, hdrAt + hdrLen) */
  hdrAt: number;
  hdrLen: number;
  /** full mode: the rest of the frame (payload, pad, ICRC): mem[bodyAt, bodyAt + bodyLen) */
  bodyAt: number;
  bodyLen: number;
}

/** A copy of a sent frame's bytes, Ethernet header to trailer (full mode: its headers, then its body). */
export function frameCopy(f: TxFrameRef): Uint8Array {
  const out = new Uint8Array(f.hdrLen + f.bodyLen);
  out.set(f.mem.subarray(f.hdrAt, f.hdrAt + f.hdrLen));
  out.set(f.mem.subarray(f.bodyAt, f.bodyAt + f.bodyLen), f.hdrLen);
  return out;
}

export class DevicePorts {
  private readonly recs: number;
  private readonly bodies: number;
  private readonly stage: number;
  private readonly stageBodies: number;
  private readonly txCap: number;
  private readonly rxCap: number;
  private readonly rxBodyCap: number;
  private staged = 0;
  private stagedBody = 0;
  private readonly ref: TxFrameRef = { mem: new Uint8Array(0), timePs: 0, port: 0, wireLen: 0, seq: 0, hdrAt: 0, hdrLen: 0, bodyAt: 0, bodyLen: 0 };

  constructor(readonly device: Device) {
    const c = device.core, h = device.handle;
    // addresses arrive as signed i32: an instance past 2 GiB (a cluster's shared one) has them above 2^31
    this.recs = c.txRecords(h) >>> 0;
    this.bodies = c.txBodies(h) >>> 0;
    this.stage = c.rxStage(h) >>> 0;
    this.stageBodies = c.rxStageBodies(h) >>> 0;
    this.txCap = Number(device.config.get("txRingEntries"));
    this.rxCap = Number(device.config.get("rxRingEntries"));
    this.rxBodyCap = device.config.get("timingMode") === 1n ? 0 : Number(device.config.get("rxBodyBytes"));
    // records are read and written a 32-bit word at a time (copyHeader)
    if (this.stage % 4 !== 0 || PKT.hdr % 4 !== 0 || PKT.SIZE % 4 !== 0) throw new Error(`ports: the receive stage (${this.stage}) and PKT records must be 4-byte aligned`);
  }

  private u8 = new Uint8Array(0);
  private u32 = new Uint32Array(0);
  private dv = new DataView(new ArrayBuffer(0));
  /** the buffer the last staged records came from (stageRecords) */
  private fromView: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(0));
  /** the buffer the last staged headers came from, as 32-bit words */
  private srcBuf: ArrayBufferLike = new ArrayBuffer(0);
  private srcWords: Uint32Array<ArrayBufferLike> = new Uint32Array(0);

  /**
   * Views of wasm memory, made again only when it has grown. Growing detaches the old buffer,
   * which leaves the old views empty: testing their length is enough, and much cheaper than
   * asking the Memory object for its buffer on every frame.
   */
  private views(): void {
    if (this.u8.length !== 0) return;
    const buf = this.device.core.memory.buffer;
    this.u8 = new Uint8Array(buf);
    this.u32 = new Uint32Array(buf);
    this.dv = new DataView(buf);
  }

  /** Hands every frame the device has sent since the last call to `each`, oldest first, then frees their room. Returns how many. */
  drain(each: (f: TxFrameRef) => void): number {
    const n = this.frames(each);
    if (n > 0) this.device.core.txConsume(this.device.handle, n);
    return n;
  }

  /** Hands every frame the device has sent and not yet drained to `each`, oldest first; keeps them. Returns how many. */
  frames(each: (f: TxFrameRef) => void): number {
    const c = this.device.core, h = this.device.handle;
    const n = c.txCount(h);
    if (n === 0) return 0;
    const head = c.txHead(h);
    this.views();
    const dv = this.dv;
    const f = this.ref;
    f.mem = this.u8;
    for (let k = 0; k < n; k++) {
      const at = this.recs + ((head + k) % this.txCap) * PKT.SIZE;
      f.timePs = dv.getUint32(at + PKT.time_ps, true) + dv.getUint32(at + PKT.time_ps + 4, true) * 2 ** 32;
      f.wireLen = dv.getUint32(at + PKT.wire_len, true);
      f.port = dv.getUint16(at + PKT.port, true);
      f.hdrLen = dv.getUint16(at + PKT.hdr_len, true);
      f.bodyLen = dv.getUint32(at + PKT.body_len, true);
      f.bodyAt = this.bodies + dv.getUint32(at + PKT.body_off, true);
      f.seq = dv.getUint32(at + PKT.seq, true);
      f.hdrAt = at + PKT.hdr;
      each(f);
    }
    return n;
  }

  /**
   * Hands every frame the device has sent since the last call to `each` as its transmit ring
   * (one call: the ring's records at `recsAt` in `mem`, `n` of them from entry `head` of
   * `entries`, bodies at `bodiesAt` + body_off), then frees their room. Returns how many.
   */
  drainRing(each: (mem: Uint8Array, recsAt: number, head: number, n: number, entries: number, bodiesAt: number) => void): number {
    const c = this.device.core, h = this.device.handle;
    const n = c.txCount(h);
    if (n === 0) return 0;
    this.views();
    each(this.u8, this.recs, c.txHead(h), n, this.txCap, this.bodies);
    c.txConsume(h, n);
    return n;
  }

  /** Room left in this window's batch of arrivals: frames, and body bytes. */
  get stageRoom(): { frames: number; bodyBytes: number } {
    return { frames: this.rxCap - this.staged, bodyBytes: this.rxBodyCap - this.stagedBody };
  }

  /**
   * Stages one arrival: its last bit reaches `port` at `timePs` (whole ps); headers from
   * hdr[hdrOff, hdrOff + hdrLen), the body (full mode) from body[bodyOff, bodyOff + bodyLen).
   * Arrivals are staged in the order they arrive. False when the batch is full (the frame is
   * lost: count it as a drop).
   */
  stageArrival(timePs: number, port: number, wireLen: number, srcDevice: number, seq: number,
    hdr: Uint8Array, hdrOff: number, hdrLen: number, body?: Uint8Array, bodyOff = 0, bodyLen = 0): boolean {
    const full = this.rxBodyCap > 0;
    const blen = full ? bodyLen : 0;
    if (this.staged >= this.rxCap || this.stagedBody + blen > this.rxBodyCap || hdrLen > PKT.SIZE - PKT.hdr) return false;
    this.views();
    const mem = this.u8, dv = this.dv;
    const at = this.stage + this.staged * PKT.SIZE;
    putPktDescriptor(dv, at, timePs, wireLen, port, hdrLen, blen, this.stagedBody, seq, srcDevice);
    this.copyHeader(hdr, hdrOff, hdrLen, at + PKT.hdr);
    if (blen > 0 && body) mem.set(body.subarray(bodyOff, bodyOff + blen), this.stageBodies + this.stagedBody);
    this.staged++;
    this.stagedBody += blen;
    return true;
  }

  /**
   * Copies hdr[hdrOff, hdrOff + hdrLen) to wasm memory at `to` (4-aligned): a word at a time
   * when the source is aligned too (the fabric's header slots are), then the last bytes. A
   * subarray and set would allocate a view per frame and cost more than the copy.
   */
  private copyHeader(hdr: Uint8Array, hdrOff: number, hdrLen: number, to: number): void {
    const from = hdr.byteOffset + hdrOff, words = hdrLen >> 2, mem = this.u8;
    let k = 0;
    if ((from & 3) === 0) {
      if (hdr.buffer !== this.srcBuf) {
        this.srcBuf = hdr.buffer;
        this.srcWords = new Uint32Array(hdr.buffer, 0, hdr.buffer.byteLength >> 2);
      }
      const src = this.srcWords, dst = this.u32, s = from >> 2, d = to >> 2;
      for (; k < words; k++) dst[d + k] = src[s + k]!;
      k <<= 2;
    }
    for (; k < hdrLen; k++) mem[to + k] = hdr[hdrOff + k]!;
  }

  /**
   * Stages `n` arrivals given as PKT records in receive form at `mem[at, at + n * PKT.SIZE)`,
   * bodies (full mode) at `bodiesAt` + body_off, as stageArrival would one by one: a record
   * that does not fit (the batch full, or more header bytes than a record holds) is lost.
   * Returns how many were lost. When all fit, records and bodies move in one copy each.
   */
  stageRecords(mem: Uint8Array, at: number, n: number, bodiesAt: number): number {
    if (n === 0) return 0;
    if (this.fromView.buffer !== mem.buffer) this.fromView = new DataView(mem.buffer);
    const src = this.fromView, base = mem.byteOffset;
    const full = this.rxBodyCap > 0;
    let body = 0, fits = this.staged + n <= this.rxCap && this.stagedBody === 0;
    for (let k = 0; k < n && fits; k++) {
      const r = base + at + k * PKT.SIZE, blen = src.getUint32(r + PKT.body_len, true);
      if ((!full && blen !== 0) || src.getUint16(r + PKT.hdr_len, true) > PKT.SIZE - PKT.hdr) fits = false;
      body += blen;
    }
    this.views();
    if (fits && body <= this.rxBodyCap) {
      this.u8.set(mem.subarray(at, at + n * PKT.SIZE), this.stage + this.staged * PKT.SIZE);
      if (body > 0) this.u8.set(mem.subarray(bodiesAt, bodiesAt + body), this.stageBodies);
      this.staged += n;
      this.stagedBody = body;
      return 0;
    }
    let lost = 0;
    for (let k = 0; k < n; k++) {
      const r = at + k * PKT.SIZE, hdrLen = src.getUint16(base + r + PKT.hdr_len, true);
      const blen = full ? src.getUint32(base + r + PKT.body_len, true) : 0;
      if (this.staged >= this.rxCap || this.stagedBody + blen > this.rxBodyCap || hdrLen > PKT.SIZE - PKT.hdr) {
        lost++;
        continue;
      }
      const to = this.stage + this.staged * PKT.SIZE, from = bodiesAt + src.getUint32(base + r + PKT.body_off, true);
      this.u8.set(mem.subarray(r, r + PKT.SIZE), to);
      this.dv.setUint32(to + PKT.body_len, blen, true);
      this.dv.setUint32(to + PKT.body_off, this.stagedBody, true);
      if (blen > 0) this.u8.set(mem.subarray(from, from + blen), this.stageBodies + this.stagedBody);
      this.staged++;
      this.stagedBody += blen;
    }
    return lost;
  }

  /** Hands the staged arrivals to the device; returns how many it took (the rest found its ring full and are counted there). */
  commitArrivals(): number {
    const n = this.staged;
    this.staged = 0;
    this.stagedBody = 0;
    return n === 0 ? 0 : this.device.core.rxPut(this.device.handle, n);
  }
}
