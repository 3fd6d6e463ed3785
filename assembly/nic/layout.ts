// Lays out the NIC block's state (state.ts) in the arena: sizes from the config, then each
// table and queue in turn.

import { Device, Config } from "../core/device";
import { Nic } from "./state";
import { MR_STRIDE, CQ_STRIDE, QP_STRIDE, QP_RANGE_BYTES, Cq, Qp, NOT_ARMED, OWNER_HOST } from "./verbs";
import { DbQueue, DBQ_STRIDE, dbqBytes, dbqInit } from "./doorbells";
import { PACKET_STRIDE } from "./packet";
import { outBytes } from "./outstanding";
import { WQE_SIZE } from "../generated/layouts";

@inline function align16(n: usize): usize { return (n + 15) & ~(<usize>15); }

/** Arena bytes of the NIC block for config `c`. */
export function nicBytes(c: Config): usize {
  const n = <usize>c.engines;
  return align16(offsetof<Nic>()) + align16(<usize>c.maxPds * 4) + align16(<usize>c.maxMrs * MR_STRIDE)
    + align16(<usize>c.maxCqs * CQ_STRIDE) + align16(<usize>c.maxQps * QP_STRIDE) + align16(<usize>c.maxQps * QP_RANGE_BYTES)
    + <usize>c.maxQps * <usize>WQE_SIZE + outBytes(c.maxQps) + align16(n * 4) + 32 + 2 * PACKET_STRIDE + (n + 1) * DBQ_STRIDE
    + n * dbqBytes(<usize>c.engineDoorbellQueue) + dbqBytes(<usize>c.hostDoorbellQueue) + n * <usize>WQE_SIZE;
}

/** Lays the block out at `base` (16-byte aligned, nicBytes long, zeroed). */
export function nicInit(dev: Device, base: usize): void {
  const c = dev.cfg;
  const n = <usize>c.engines;
  const s = changetype<Nic>(base);
  dev.nic = base;
  let off = base + align16(offsetof<Nic>());
  s.pds = off; off += align16(<usize>c.maxPds * 4);
  s.mrs = off; off += align16(<usize>c.maxMrs * MR_STRIDE);
  s.cqs = off; off += align16(<usize>c.maxCqs * CQ_STRIDE);
  s.qps = off; off += align16(<usize>c.maxQps * QP_STRIDE);
  s.qpRanges = off; off += align16(<usize>c.maxQps * QP_RANGE_BYTES);
  s.qpWqes = off; off += <usize>c.maxQps * <usize>WQE_SIZE;
  s.qpOut = off; off += outBytes(c.maxQps);
  s.blocks = off; off += align16(n * 4);
  s.reduceSrcs = off; off += 32;
  s.packets = off; off += 2 * PACKET_STRIDE;
  s.dbqs = off; off += (n + 1) * DBQ_STRIDE;
  const engDb = <usize>c.engineDoorbellQueue;
  for (let i: u32 = 0; i < c.engines; i++) {
    dbqInit(changetype<DbQueue>(s.dbqs + <usize>i * DBQ_STRIDE), off, <u32>engDb, i);
    off += dbqBytes(engDb);
  }
  dbqInit(changetype<DbQueue>(s.dbqs + n * DBQ_STRIDE), off, c.hostDoorbellQueue, OWNER_HOST);
  off += dbqBytes(<usize>c.hostDoorbellQueue);
  s.engExpress = off;
  // rates: Gb/s is 1e9 bits per 1e12 ps, i.e. gbps / 8000 bytes per ps
  s.nicDmaBytesPerPs = <f64>c.nicDmaGbps / 8000;
  // reduceBytesPerCycle at the engine clock: B/cycle x kHz x 1e3 cycles/s / 1e12 ps/s
  s.reduceBytesPerPs = <f64>c.reduceBytesPerCycle * <f64>c.engineClockKhz / 1e9;
  // a split beyond the ports leaves the scale-out group empty
  s.scaleUpPorts = c.scaleUpPorts < c.ports ? c.scaleUpPorts : c.ports;
  for (let i: u32 = 0; i < c.maxCqs; i++) changetype<Cq>(s.cqs + <usize>i * CQ_STRIDE).armEngine = NOT_ARMED;
  for (let i: u32 = 0; i < c.maxQps; i++) changetype<Qp>(s.qps + <usize>i * QP_STRIDE).waitBlock = NOT_ARMED;
}
