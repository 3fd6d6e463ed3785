// The device record: the one plain-data root every block reaches its state from, and the
// device-wide services every block uses (configuration slots, statistics, the trace ring).
// It holds no instruction or protocol logic, and imports no block: the arena is laid out by
// create.ts, engines execute in engine/, the event queue is core/sched.ts.

import { Config, FATAL_EVENT_OVERFLOW, STAT_TRACE_DROPPED, TRACE_RECORD_SIZE, TRACE_RECORD_TIME_PS, TRACE_RECORD_POINT, TRACE_RECORD_ENGINE, TRACE_RECORD_ARG } from "../generated/layouts";

export const EVENT_BYTES: usize = 32;

export const TRACE_BYTES: usize = TRACE_RECORD_SIZE;

@unmanaged export class Device {
  arenaBase: usize;
  arenaBytes: usize;
  cfg: Config; // the configuration, copied in (part of the saved state)

  now: u64; // device time (ps); always the end of the last window run
  seq: u64; // tie-break for events at the same time: insertion order
  fatal: u32; // FATAL_*: the device failed and runs no more (the host reports it)

  stats: usize; // STAT_COUNT u64 counters
  rng: usize; // the device's random streams, one per block (core/rng.ts rngOf)

  events: usize; // binary min-heap of EVENT_BYTES records (sched.ts)
  evCount: u32;
  evCap: u32;

  trace: usize; // ring of TRACE_BYTES records
  trHead: u32;
  trCount: u32;
  trCap: u32;

  // each block's own state, laid out by create.ts from the block's sizing function; core/
  // knows them only as addresses (engine/engines.ts engOf, mem/dma.ts memOf, mem/hbm.ts
  // hbmOf, mem/pcie.ts pcieOf, nic/state.ts nicOf, engine/debug.ts debugOf, compute/grid.ts gridOf)
  eng: usize;
  mem: usize;
  hbmModel: usize;
  pcie: usize;
  nic: usize;
  ports: usize; // nic/ports.ts portsOf
  mrt: usize; // metaroce/state.ts mrtOf (0 on a device running RoCEv2)
  debug: usize; // engine/debug.ts debugOf: a debugger's breakpoints, watchpoints and stop
  grid: usize; // compute/grid.ts gridOf: the matmul grid's load
}

export { Config, FATAL_EVENT_OVERFLOW };

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
