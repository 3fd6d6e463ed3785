// A packet capture of a cluster run: every frame each device port sends and receives, as real
// Ethernet frames in pcapng (host/wire/pcapng.ts). One interface per device port, named
// dev<d>.port<p>; a frame appears where it leaves (direction out, at the time its last bit left)
// and where it arrives (direction in, at the time its last bit arrived), so a frame the fabric
// lost appears only once, and a frame a switch marked CE arrives marked. In timing mode the
// devices send headers only: the file keeps them, with the frame's length on the wire.
//
// Frames reach the capture through each endpoint's tap (host/cluster/endpoint.ts), one device
// and one window at a time; flush(beforePs) writes, in time order, every frame seen before
// `beforePs` — the cluster's time after a run step, since no later step can show an earlier
// frame — so the capture holds at most one run step of frames. No Node APIs: the writer's sink
// decides where the bytes go.

import { PcapngWriter } from "../wire/pcapng.js";
import { portAddress, formatIpv4 } from "../fabric/topology.js";
import type { ArrivalBatch } from "../fabric/batch.js";
import type { DeviceEndpoint } from "./endpoint.js";

const OUT = 0, IN = 1;

/**
 * A packet capture of a scenario run (`menic run --pcap`): every frame at every device port, in
 * and out, as Ethernet frames, one interface per port (`dev<d>.port<p>`), written in time
 * order through a {@link PcapngWriter}. Attach it in {@link RunOptions.onBuilt}, flush it as the
 * run goes (`onProgress`) and at the end.
 */
export class ClusterCapture {
  /** frames written so far */
  written = 0;
  // the frames seen and not yet written: columns, bytes in one growing buffer
  private time: number[] = [];
  private iface: number[] = [];
  private dir: number[] = [];
  private at: number[] = [];
  private len: number[] = [];
  private wireLen: number[] = [];
  private bytes = new Uint8Array(1 << 16);
  private used = 0;

  constructor(private readonly writer: PcapngWriter) {}

  /** Adds an interface per port of every endpoint and taps them (endpoint d is device d). */
  attach(endpoints: readonly DeviceEndpoint[]): void {
    endpoints.forEach((ep, d) => {
      const cfg = ep.device.config;
      const ports = Number(cfg.get("ports")), speedBps = cfg.get("portGbps")! * 1_000_000_000n;
      const ids = Array.from({ length: ports }, (_, p) =>
        this.writer.addInterface(`dev${d}.port${p}`, { description: `device ${d} port ${p}, ${formatIpv4(portAddress(d, p))}`, speedBps }));
      ep.tap = {
        sent: (port, timePs, wireLen, bytes, hdrOff, hdrLen, bodyOff, bodyLen) => {
          const k = this.add(ids[port]!, OUT, timePs, wireLen, hdrLen + bodyLen);
          this.bytes.set(bytes.subarray(hdrOff, hdrOff + hdrLen), k);
          this.bytes.set(bytes.subarray(bodyOff, bodyOff + bodyLen), k + hdrLen);
        },
        delivered: (b: ArrivalBatch) => {
          for (let i = 0; i < b.n; i++) {
            const hl = b.hdrLen[i]!, pl = b.payloadLen[i]!;
            // the endpoint stages an arrival at the whole picosecond at or after it: so does the capture
            const k = this.add(ids[b.port[i]!]!, IN, Math.ceil(b.arrivalPs[i]!), b.wireLen[i]!, hl + pl);
            this.bytes.set(b.hdr.subarray(b.hdrOff[i]!, b.hdrOff[i]! + hl), k);
            this.bytes.set(b.payload.subarray(b.payloadOff[i]!, b.payloadOff[i]! + pl), k + hl);
          }
        },
      };
    });
  }

  /** Records a frame of `len` captured bytes; returns where its bytes go. */
  private add(iface: number, dir: number, timePs: number, wireLen: number, len: number): number {
    if (this.used + len > this.bytes.length) {
      const grown = new Uint8Array(Math.max(2 * this.bytes.length, this.used + len));
      grown.set(this.bytes.subarray(0, this.used));
      this.bytes = grown;
    }
    const k = this.used;
    this.time.push(timePs); this.iface.push(iface); this.dir.push(dir); this.at.push(k); this.len.push(len); this.wireLen.push(wireLen);
    this.used += len;
    return k;
  }

  /**
   * Writes every frame seen before `beforePs` in order of time (then interface, then out before
   * in, then the order seen) and keeps the rest; Infinity writes all.
   */
  flush(beforePs = Infinity): void {
    const n = this.time.length;
    const due: number[] = [], kept: number[] = [];
    for (let k = 0; k < n; k++) (this.time[k]! < beforePs ? due : kept).push(k);
    due.sort((a, b) => this.time[a]! - this.time[b]! || this.iface[a]! - this.iface[b]! || this.dir[a]! - this.dir[b]! || a - b);
    for (const k of due) {
      const frame = this.bytes.subarray(this.at[k]!, this.at[k]! + this.len[k]!);
      this.writer.writePacket(this.iface[k]!, BigInt(this.time[k]!), frame, this.wireLen[k]!, this.dir[k] === OUT ? "out" : "in");
    }
    this.written += due.length;
    // keep the frames not yet due, their bytes moved to the front
    let used = 0;
    const cols = [this.time, this.iface, this.dir, this.at, this.len, this.wireLen];
    kept.forEach((k, j) => {
      this.bytes.copyWithin(used, this.at[k]!, this.at[k]! + this.len[k]!);
      for (const c of cols) c[j] = c[k]!;
      this.at[j] = used;
      used += this.len[k]!;
    });
    for (const c of cols) c.length = kept.length;
    this.used = used;
    if (beforePs === Infinity) this.writer.flush();
  }
}
