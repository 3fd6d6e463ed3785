// A synthetic endpoint: a device stand-in that sends RoCEv2-shaped frames (RDMA WRITE middle
// packets, real Ethernet / IPv4 / UDP / BTH headers from host/wire) for a list of flows, paced
// at its port rate, and counts what it receives. For fabric tests and benchmarks without
// devices; no transport: nothing is acknowledged or retransmitted.

import { buildFrame } from "../wire/rocev2.js";
import { OP, IPV4_ECN, IPV4_OFFSET, UDP_OFFSET, ETH_SIZE, IPV4_SIZE, UDP_SIZE, BTH_SIZE } from "../generated/headers.js";
import { portAddress } from "./topology.js";
import type { ArrivalBatch, TxSink } from "./batch.js";
import type { Endpoint } from "./runner.js";

const HDR_LEN = ETH_SIZE + IPV4_SIZE + UDP_SIZE + BTH_SIZE;
const UDP_AT = ETH_SIZE + IPV4_SIZE + UDP_OFFSET.srcPort;

export interface SyntheticFlow {
  /** the sending port of this device */
  port: number;
  dstDevice: number;
  /** the destination's port (default: the same port number) */
  dstPort?: number;
  bytes: number;
  /** payload bytes per frame (default 4096) */
  mtu?: number;
  /** the UDP source port: the flow's ECMP entropy */
  udpSrcPort: number;
  /** spray frames round robin over this many paths: UDP source ports udpSrcPort + 0 .. paths - 1 (default 1) */
  paths?: number;
  /** not before (default 0) */
  startPs?: number;
  /** IPv4 ECN codepoint (default ECT(0)) */
  ecn?: number;
  /** pace below the port rate (default: the port rate) */
  gbps?: number;
}

export interface SyntheticOptions {
  device: number;
  ports: number;
  flows: readonly SyntheticFlow[];
  /** port rate, Gb/s (default 800) */
  gbps?: number;
  /** the fabric's frameOverheadBytes (default 24) */
  overheadBytes?: number;
  /** hand over payload bytes too (the fabric's `full` mode) */
  full?: boolean;
  /** read each arrival's headers: count CE marks in ceFrames */
  inspect?: boolean;
  /** keep every arrival in `log` (headers read too) */
  log?: boolean;
}

/** One received frame, as logged. */
export interface SyntheticArrival {
  arrivalPs: number;
  srcDevice: number;
  srcPort: number;
  port: number;
  seq: number;
  wireLen: number;
  ecn: number;
  udpSrcPort: number;
}

/** One FNV-1a step over a 32-bit word of `x` (its low 32 bits as an integer). */
const fnv = (h: number, x: number): number => Math.imul(h ^ (x >>> 0), 0x01000193) >>> 0;

interface FlowState {
  spec: SyntheticFlow;
  /** the frames: all of a full-size one and of the tail, or only their headers (timing mode) */
  full: Uint8Array;
  fullLen: number;
  tail: Uint8Array | null;
  tailLen: number;
  frames: number;
  sent: number;
  nextPs: number;
  /** ps per frame at the flow's pace, full frames and the tail */
  gapFull: number;
  gapTail: number;
}

export class SyntheticEndpoint implements Endpoint {
  nowPs = 0;
  receivedFrames = 0;
  receivedBytes = 0;
  ceFrames = 0;
  lastArrivalPs = 0;
  /** FNV-1a-style digest of every arrival (time, source device and port, sequence, port) in delivery order */
  digest = 0x811c9dc5;
  readonly log: SyntheticArrival[] = [];
  sentFrames = 0;
  private readonly perPort: FlowState[][];
  private readonly portFree: Float64Array;
  private readonly gbps: number;
  private readonly overhead: number;

  constructor(readonly o: SyntheticOptions) {
    this.gbps = o.gbps ?? 800;
    this.overhead = o.overheadBytes ?? 24;
    this.portFree = new Float64Array(o.ports);
    this.perPort = Array.from({ length: o.ports }, () => []);
    for (const f of o.flows) {
      if (!(f.bytes >= 1)) throw new RangeError(`a synthetic flow needs bytes ≥ 1, got ${f.bytes}`);
      const mtu = f.mtu ?? 4096;
      const frame = (payload: number) => buildFrame({
        opcode: OP.RC_WRITE_MIDDLE, destQp: 1, psn: 0,
        ipSrc: portAddress(o.device, f.port), ipDst: portAddress(f.dstDevice, f.dstPort ?? f.port),
        udpSrcPort: f.udpSrcPort, ecn: f.ecn ?? IPV4_ECN.ECT0, payload: new Uint8Array(payload),
      });
      const full = frame(Math.min(mtu, f.bytes)), rest = f.bytes % mtu;
      const tail = f.bytes > mtu && rest !== 0 ? frame(rest) : null;
      const gap = (b: Uint8Array | null) => (b ? this.serPs(b.length, f.gbps ?? this.gbps) : 0);
      const keep = (b: Uint8Array | null) => (b && !o.full ? b.slice(0, HDR_LEN) : b);
      this.perPort[f.port].push({
        spec: f, full: keep(full)!, fullLen: full.length, tail: keep(tail), tailLen: tail?.length ?? 0, frames: Math.max(1, Math.ceil(f.bytes / mtu)), sent: 0, nextPs: f.startPs ?? 0,
        gapFull: gap(full), gapTail: gap(tail),
      });
    }
    // every frame in one buffer, as a device's memory would be
    const all = this.perPort.flat();
    const padded = (n: number) => (n + 7) & ~7; // word-aligned, as a device's rings are
    const slab = new Uint8Array(all.reduce((n, f) => n + padded(f.full.length) + padded(f.tail?.length ?? 0), 0));
    let at = 0;
    const move = (b: Uint8Array) => {
      slab.set(b, at);
      const view = slab.subarray(at, at + b.length);
      at += padded(b.length);
      return view;
    };
    for (const f of all) {
      f.full = move(f.full);
      if (f.tail) f.tail = move(f.tail);
    }
  }

  private serPs(wireLen: number, gbps: number): number {
    return Math.ceil(((wireLen + this.overhead) * 8000) / gbps);
  }

  stepTo(tPs: number): void {
    this.nowPs = tPs;
  }

  nextActivityPs(): number {
    let t = Infinity;
    for (let p = 0; p < this.perPort.length; p++) {
      const f = this.perPort[p][0];
      if (f) t = Math.min(t, Math.max(f.nextPs, this.portFree[p]));
    }
    return t;
  }

  /** Every frame whose departure falls before the time it was stepped to. */
  drainTx(sink: TxSink): void {
    for (let p = 0; p < this.perPort.length; p++) {
      const q = this.perPort[p];
      while (q.length > 0) {
        const f = q[0];
        const depart = Math.max(f.nextPs, this.portFree[p]);
        if (depart >= this.nowPs) break;
        const last = f.sent === f.frames - 1;
        const useTail = last && f.tail !== null;
        const bytes = useTail ? f.tail! : f.full, wireLen = useTail ? f.tailLen : f.fullLen;
        const paths = f.spec.paths ?? 1;
        if (paths > 1) {
          // the UDP checksum is 0 (not computed) and the IPv4 checksum does not cover UDP
          const udp = (f.spec.udpSrcPort + (f.sent % paths)) & 0xffff;
          bytes[UDP_AT] = udp >> 8;
          bytes[UDP_AT + 1] = udp & 0xff;
        }
        sink.send(p, depart, wireLen, bytes, 0, HDR_LEN, HDR_LEN, this.o.full ? wireLen - HDR_LEN : 0);
        this.sentFrames++;
        this.portFree[p] = depart + this.serPs(wireLen, this.gbps);
        f.nextPs = depart + (useTail ? f.gapTail : f.gapFull);
        if (++f.sent === f.frames) q.shift();
      }
    }
  }

  deliver(b: ArrivalBatch): void {
    for (let i = 0; i < b.n; i++) {
      this.receivedFrames++;
      this.receivedBytes += b.wireLen[i];
      this.lastArrivalPs = b.arrivalPs[i];
      this.digest = fnv(fnv(fnv(fnv(fnv(fnv(this.digest, b.arrivalPs[i] % 4294967296), b.arrivalPs[i] / 4294967296), b.srcDevice[i]), b.srcPort[i]), b.seq[i]), b.port[i]);
      if (!this.o.inspect && !this.o.log) continue;
      const at = b.hdrOff[i], udp = at + UDP_AT;
      const ecn = b.hdr[at + ETH_SIZE + IPV4_OFFSET.ecn] & 3;
      if (ecn === IPV4_ECN.CE) this.ceFrames++;
      if (this.o.log)
        this.log.push({
          arrivalPs: b.arrivalPs[i], srcDevice: b.srcDevice[i], srcPort: b.srcPort[i], port: b.port[i], seq: b.seq[i],
          wireLen: b.wireLen[i], ecn, udpSrcPort: (b.hdr[udp] << 8) | b.hdr[udp + 1],
        });
    }
  }
}
