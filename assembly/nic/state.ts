// The NIC block's own state: its verbs tables, the doorbells in flight, the packet records its
// halves exchange, the reduction blocks' busy flags, the requests waiting for a flow slot, and
// the rates derived from the config. Sized from the config and laid out by layout.ts.

import { Device } from "../core/device";

@unmanaged export class Nic {
  pds: usize; // per PD a u32: 0 when free, else its owner + 1 (verbs.ts)
  mrs: usize;
  cqs: usize;
  qps: usize;
  qpRanges: usize; // per QP its ready ranges (queues.ts)
  qpWqes: usize; // per QP the copy of the request it executes
  qpOut: usize; // per QP its outstanding RoCEv2 messages (outstanding.ts)
  blocks: usize; // per engine: its reduction block is busy
  reduceSrcs: usize; // 8 u32: wasm addresses of a reduction's sources
  packets: usize; // the outgoing and answer packet records (packet.ts)
  dbqs: usize; // engines + 1 DbQueue headers: doorbells in flight per ringer (doorbells.ts)
  engExpress: usize; // per engine: the express window being written
  flowWaiters: u32; // requests waiting for a free slot of the HBM flow table (Qp.waitFlow)
  flowWaitNext: u32; // the QP woken last: waiters are woken round robin from the next
  nicDmaBytesPerPs: f64; // nicDmaGbps
  reduceBytesPerPs: f64; // reduceBytesPerCycle at the engine clock
  scaleUpPorts: u32; // the split now: ports 0 .. scaleUpPorts - 1 are the scale-up group (port-groups.ts; cfg.scaleUpPorts at creation)
}

@inline export function nicOf(dev: Device): Nic { return changetype<Nic>(dev.nic); }

