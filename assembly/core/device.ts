// The device record: the one plain-data root every block reaches its state from, and the
// device-wide services every block uses (configuration slots, statistics, the trace ring).
// It holds no instruction or protocol logic, and imports no block: the arena is laid out by
// create.ts, engines execute in engine/, the event queue is core/sched.ts.

import { STAT_TRACE_DROPPED, TRACE_RECORD_SIZE, TRACE_RECORD_TIME_PS, TRACE_RECORD_POINT, TRACE_RECORD_ENGINE, TRACE_RECORD_ARG } from "../generated/layouts";

export const EVENT_BYTES: usize = 32;
export const TRACE_BYTES: usize = TRACE_RECORD_SIZE;

@unmanaged export class Device {
  arenaBase: usize;
  arenaBytes: usize;
  cfg: usize; // a copy of the config slots, part of the saved state

  now: u64; // device time (ps); always the end of the last window run
  seq: u64; // tie-break for events at the same time: insertion order
  khz: u64; // engine clock
  quantum: u64; // interleave window (ps)

  engines: u32;
  sramBytes: u32;
  hbmBytes: u32;
  resvCount: u32; // engines holding an LR reservation

  harts: usize; // `engines` Hart structs, HART_STRIDE apart
  regs: usize;
  hbm: usize;
  stats: usize; // STAT_COUNT u64 counters
  rng: usize; // the device's random stream (Rng)

  events: usize; // binary min-heap of EVENT_BYTES records
  evCount: u32;
  evCap: u32;

  trace: usize; // ring of TRACE_BYTES records
  trHead: u32;
  trCount: u32;
  trCap: u32;


  // NIC, verbs tables, PCIe and HBM (nic.ts, verbs.ts, pcie.ts, hbm.ts)
  host: usize; // host memory reached over PCIe
  hostBytes: u32;
  maxPds: u32;
  maxMrs: u32;
  maxCqs: u32;
  maxQps: u32;
  pds: usize; // per PD a u32: 0 when free, else its owner + 1 (verbs.ts)
  mrs: usize;
  cqs: usize;
  qps: usize;
  qpRanges: usize;
  qpWqes: usize;
  blocks: usize; // per engine: its reduction block is busy
  reduceSrcs: usize; // 8 u32: wasm addresses of a reduction's sources
  packets: usize; // the NIC's outgoing and answer packet records (nic/packet.ts)
  dbqs: usize; // engines + 1 DbQueue headers: doorbells in flight per ringer (doorbells.ts)
  engExpress: usize; // per engine: the express window being written
  flows: usize;
  flowCap: u32;
  flowWaiters: u32; // requests waiting for a free slot of the flow table (Qp.waitFlow)
  flowWaitNext: u32; // the QP woken last: waiters are woken round robin from the next
  hbmTickAt: u64; // time of the pending HbmTick, or NEVER
  hbmAt: u64;
  hbmServed: usize; // f64 per flow class
  hbmBytesPerPs: f64;
  nicDmaBytesPerPs: f64;
  reduceBytesPerPs: f64;
  pcieGbps: u64;
  pcieDownBusy: u64;
  pcieUpBusy: u64;
  pcieWriteLatencyPs: u64;
  pcieReadLatencyPs: u64;
  nicDoorbellLatencyPs: u64;
  nicWqeLatencyPs: u64;
  nicCommandPs: u64;
  nicSramLatencyPs: u64;
  hbmLatencyPs: u64;
  reduceSetupPs: u64;
  rnrTimerPs: u64;
  transportTimeoutPs: u64;
  rnrRetries: u32;
  transportRetries: u32;

  // the CPI table, copied from the config for the interpreter
  cpiAlu: u32;
  cpiMul: u32;
  cpiDiv: u32;
  cpiBranchTaken: u32;
  cpiJump: u32;
  cpiLoadSram: u32;
  cpiStoreSram: u32;
  cpiLoadHbm: u32;
  cpiLoadHbmNow: u32; // cpiLoadHbm under the current HBM load (hbm.ts)
  cpiStoreHbm: u32;
  cpiAmoHbm: u32;
  cpiAmoHbmNow: u32;
  hbmQueuing: f64; // hbmQueuingPct / 100
  cpiMmio: u32;
  cpiExpress: u32;
  cpiCsr: u32;
  cpiTrap: u32;
}

@inline export function cfgGet(cfg: usize, slot: u32): u64 {
  return load<u64>(cfg + (<usize>slot << 3));
}

@inline export function statAdd(dev: Device, id: u32, n: u64): void {
  const p = dev.stats + (<usize>id << 3);
  store<u64>(p, load<u64>(p) + n);
}

/** Appends a trace record; a full ring drops the record and counts it (the host drains it). */
export function tracePoint(dev: Device, t: u64, point: u16, engine: u32, arg: u32): void {
  if (dev.trCount >= dev.trCap) {
    statAdd(dev, STAT_TRACE_DROPPED, 1);
    return;
  }
  let slot = dev.trHead + dev.trCount;
  if (slot >= dev.trCap) slot -= dev.trCap;
  const p = dev.trace + <usize>slot * TRACE_BYTES;
  store<u64>(p, t, TRACE_RECORD_TIME_PS);
  store<u16>(p, point, TRACE_RECORD_POINT);
  store<u16>(p, <u16>engine, TRACE_RECORD_ENGINE);
  store<u32>(p, arg, TRACE_RECORD_ARG);
  dev.trCount++;
}
