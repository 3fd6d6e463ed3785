// HBM bandwidth sharing. Every bulk user of HBM — NIC DMA streams, reduction blocks, the
// compute-load generator — is a *flow* with bytes to move and a peak rate of its own. The
// bandwidth (hbmGbps) is shared max-min fairly among the active flows (water-filling: no flow
// gets more than its peak; what a capped flow leaves is split among the others), weighted: a
// flow of weight w counts as w requesters (the matmul grid's tile loads weigh one per compute
// unit taking part, compute/grid.ts; every other flow weighs 1). Rates change
// only when a flow starts or ends; then every flow is advanced to that time, rates are
// recomputed and one event is scheduled for the next flow to finish. Engines' own loads and
// stores move a few bytes per ~100 ns each, far below 0.1 % of HBM: they take no share, but
// their latency (cpiLoadHbm, cpiAmoHbm) stretches with the utilisation u the flows make,
// x (1 + hbmQueuingPct/100 x u / (1 - u)), u capped at 0.9.

import { engOf } from "../engine/engines";
import { Device, statAdd } from "../core/device";
import { schedule, unschedule, EventKind } from "../core/sched";
import { NEVER } from "../core/time";
import { STAT_HBM_BYTES_NIC, STAT_HBM_BYTES_REDUCE, FLOW_CLASS_NIC, FLOW_CLASS_REDUCE, FLOW_CLASS_COMPUTE } from "../generated/layouts";

export const enum FlowClass {
  Nic = FLOW_CLASS_NIC,
  Reduce = FLOW_CLASS_REDUCE,
  Compute = FLOW_CLASS_COMPUTE,
}
export const FLOW_CLASSES: u32 = FLOW_CLASS_COMPUTE + 1;
/** Concurrent HBM streams: every QP's request, every reduction block, the compute load. */
export const FLOW_SLOTS: u32 = 512;

@unmanaged export class Flow {
  remaining: f64; // bytes; Infinity for the compute-load generator
  peak: f64; // bytes per ps
  rate: f64; // bytes per ps, as last shared
  total: u64; // bytes asked for (statistics)
  weight: f64; // requesters this flow stands for (1 but for the matmul grid's loads)
  active: u32;
  cls: u32;
  doneKind: u32; // event scheduled when the flow ends
  doneA: u32;
  doneB: u32;
}

export const FLOW_BYTES: usize = (offsetof<Flow>() + 7) & ~(<usize>7);

/** The HBM model's state: the flow table, the bytes served per class, the pending tick. */
@unmanaged export class Hbm {
  flows: usize; // flowCap Flow records, FLOW_BYTES apart
  flowCap: u32;
  flowHi: u32; // every active flow's slot is below it (claim takes the lowest free slot)
  hbmTickAt: u64; // time of the pending HbmTick, or NEVER
  hbmAt: u64; // time the flows were last advanced to
  hbmServed: usize; // f64 per flow class
  hbmBytesPerPs: f64; // hbmGbps
  hbmQueuing: f64; // hbmQueuingPct / 100
  slotWaitKind: u32; // an event to schedule when a flow ends, for a user refused a slot (0: none)
}

@inline export function hbmOf(dev: Device): Hbm { return changetype<Hbm>(dev.hbmModel); }

/** Arena bytes of the HBM model's state. */
export function hbmModelBytes(): usize {
  return ((offsetof<Hbm>() + 15) & ~(<usize>15)) + <usize>FLOW_SLOTS * FLOW_BYTES + <usize>FLOW_CLASSES * 8;
}

/** Lays the HBM model's state out at `base` (16-byte aligned, zeroed). */
export function hbmModelInit(dev: Device, base: usize): void {
  const m = changetype<Hbm>(base);
  dev.hbmModel = base;
  m.flows = base + ((offsetof<Hbm>() + 15) & ~(<usize>15));
  m.flowCap = FLOW_SLOTS;
  m.hbmServed = m.flows + <usize>FLOW_SLOTS * FLOW_BYTES;
  m.hbmTickAt = NEVER;
  m.hbmBytesPerPs = <f64>dev.cfg.hbmGbps / 8000;
  m.hbmQueuing = <f64>dev.cfg.hbmQueuingPct / 100;
}

@inline export function flowAt(dev: Device, i: u32): Flow {
  return changetype<Flow>(hbmOf(dev).flows + <usize>i * FLOW_BYTES);
}

/** Moves every active flow forward to `t` at its current rate. */
function advance(dev: Device, t: u64): void {
  if (t <= hbmOf(dev).hbmAt) return;
  const dt = <f64>(t - hbmOf(dev).hbmAt);
  for (let i: u32 = 0; i < hbmOf(dev).flowHi; i++) {
    const f = flowAt(dev, i);
    if (!f.active) continue;
    const moved = f.rate * dt;
    f.remaining -= moved;
    const p = hbmOf(dev).hbmServed + (<usize>f.cls << 3);
    store<f64>(p, load<f64>(p) + moved);
  }
  hbmOf(dev).hbmAt = t;
}

/** Water-filling max-min fair shares, then one event at the next completion. */
function reshare(dev: Device, t: u64): void {
  let capacity = hbmOf(dev).hbmBytesPerPs;
  let unassigned: u32 = 0;
  let weights: f64 = 0; // of the flows not yet assigned
  for (let i: u32 = 0; i < hbmOf(dev).flowHi; i++) {
    const f = flowAt(dev, i);
    if (f.active) { f.rate = -1; unassigned++; weights += f.weight; }
  }
  while (unassigned > 0) {
    const share = capacity / weights; // per unit of weight
    let capped: u32 = 0;
    for (let i: u32 = 0; i < hbmOf(dev).flowHi; i++) {
      const f = flowAt(dev, i);
      if (f.active && f.rate < 0 && f.peak <= share * f.weight) {
        f.rate = f.peak;
        capacity -= f.peak;
        weights -= f.weight;
        unassigned--;
        capped++;
      }
    }
    if (capped == 0) {
      for (let i: u32 = 0; i < hbmOf(dev).flowHi; i++) {
        const f = flowAt(dev, i);
        if (f.active && f.rate < 0) f.rate = share * f.weight;
      }
      break;
    }
  }
  // engines' own accesses queue behind the streams: stretch their latency with utilisation
  let used: f64 = 0;
  for (let i: u32 = 0; i < hbmOf(dev).flowHi; i++) {
    const f = flowAt(dev, i);
    if (f.active) used += f.rate;
  }
  const u = min(used / hbmOf(dev).hbmBytesPerPs, 0.9);
  const stretch = 1 + hbmOf(dev).hbmQueuing * u / (1 - u);
  engOf(dev).cpiLoadHbmNow = <u32>Math.round(<f64>dev.cfg.cpiLoadHbm * stretch);
  engOf(dev).cpiAmoHbmNow = <u32>Math.round(<f64>dev.cfg.cpiAmoHbm * stretch);
  let next = f64.MAX_VALUE;
  for (let i: u32 = 0; i < hbmOf(dev).flowHi; i++) {
    const f = flowAt(dev, i);
    if (f.active && f.remaining != Infinity && f.rate > 0) {
      const dt = f.remaining / f.rate;
      if (dt < next) next = dt;
    }
  }
  // one tick pending at most: moved when the next completion moves
  const at = next != f64.MAX_VALUE ? t + <u64>Math.ceil(next > 0 ? next : 0) : NEVER;
  if (hbmOf(dev).hbmTickAt == at) return;
  if (hbmOf(dev).hbmTickAt != NEVER) unschedule(dev, EventKind.HbmTick, 0);
  hbmOf(dev).hbmTickAt = at != NEVER && schedule(dev, at, EventKind.HbmTick, 0, 0) ? at : NEVER;
}

/** Moves flowHi down past the slots that flows have left at the top. */
function lowerHi(dev: Device): void {
  let hi = hbmOf(dev).flowHi;
  while (hi > 0 && !flowAt(dev, hi - 1).active) hi--;
  hbmOf(dev).flowHi = hi;
}

/** Takes a free slot of the flow table for a new flow; false when the table is full. */
function claim(dev: Device, remaining: f64, total: u64, peak: f64, weight: f64, cls: u32, doneKind: u32, a: u32, b: u32): bool {
  for (let i: u32 = 0; i < hbmOf(dev).flowCap; i++) {
    const f = flowAt(dev, i);
    if (f.active) continue;
    f.active = 1;
    if (i >= hbmOf(dev).flowHi) hbmOf(dev).flowHi = i + 1;
    f.remaining = remaining;
    f.total = total;
    f.peak = peak;
    f.weight = weight;
    f.cls = cls;
    f.doneKind = doneKind;
    f.doneA = a;
    f.doneB = b;
    return true;
  }
  return false;
}

/**
 * Starts a flow of `bytes` at up to `peakBytesPerPs`, counting as `weight` requesters in the
 * sharing; when it has moved them, an event (doneKind, a, b) fires. Returns false when the
 * flow table is full (the caller counts it).
 */
export function hbmStart(dev: Device, t: u64, bytes: u64, peakBytesPerPs: f64, cls: u32, doneKind: u32, a: u32, b: u32, weight: f64 = 1): bool {
  advance(dev, t);
  if (!claim(dev, <f64>bytes, bytes, peakBytesPerPs, weight, cls, doneKind, a, b)) return false;
  reshare(dev, t);
  return true;
}

/**
 * Changes the peak and weight of the active flows whose completion event is `doneKind` (the
 * matmul grid's load when units are taken or given back), from time `t`.
 */
export function hbmRetune(dev: Device, t: u64, doneKind: u32, peakBytesPerPs: f64, weight: f64): void {
  advance(dev, t);
  for (let i: u32 = 0; i < hbmOf(dev).flowHi; i++) {
    const f = flowAt(dev, i);
    if (f.active && f.doneKind == doneKind) { f.peak = peakBytesPerPs; f.weight = weight; }
  }
  reshare(dev, t);
}

/** Asks for event `kind` (a, b = 0) when the next flow ends: a slot is free then (the NIC's requests wait their own way). */
export function hbmWaitSlot(dev: Device, kind: u32): void {
  hbmOf(dev).slotWaitKind = kind;
}

/** The HbmTick event: ends the flows that have finished and reshares. */
export function hbmTick(dev: Device, t: u64): void {
  hbmOf(dev).hbmTickAt = NEVER;
  advance(dev, t);
  for (let i: u32 = 0; i < hbmOf(dev).flowHi; i++) {
    const f = flowAt(dev, i);
    // a flow is done when less than a thousandth of a byte is left (f64 rounding)
    if (f.active && f.remaining < 1e-3) {
      f.active = 0;
      if (hbmOf(dev).slotWaitKind != 0) {
        schedule(dev, t, hbmOf(dev).slotWaitKind, 0, 0);
        hbmOf(dev).slotWaitKind = 0;
      }
      if (f.cls == FlowClass.Nic) statAdd(dev, STAT_HBM_BYTES_NIC, f.total);
      else if (f.cls == FlowClass.Reduce) statAdd(dev, STAT_HBM_BYTES_REDUCE, f.total);
      schedule(dev, t, f.doneKind, f.doneA, f.doneB);
    }
  }
  lowerHi(dev);
  reshare(dev, t);
}

/** Sets the compute-load generator's demand (bytes/ps; 0 stops it). */
export function hbmSetCompute(dev: Device, t: u64, bytesPerPs: f64): void {
  advance(dev, t);
  for (let i: u32 = 0; i < hbmOf(dev).flowHi; i++) {
    const f = flowAt(dev, i);
    if (f.active && f.cls == FlowClass.Compute && f.remaining == Infinity) f.active = 0;
  }
  lowerHi(dev);
  // never ends, so no completion event
  if (bytesPerPs > 0) claim(dev, Infinity, 0, bytesPerPs, 1, FlowClass.Compute, 0, 0, 0);
  reshare(dev, t);
}

/** Bytes HBM has served to flows of class `cls` up to time `t` (reads only: no state changes). */
export function hbmServed(dev: Device, t: u64, cls: u32): f64 {
  let served = load<f64>(hbmOf(dev).hbmServed + (<usize>cls << 3));
  if (t <= hbmOf(dev).hbmAt) return served;
  const dt = <f64>(t - hbmOf(dev).hbmAt);
  for (let i: u32 = 0; i < hbmOf(dev).flowHi; i++) {
    const f = flowAt(dev, i);
    if (f.active && f.cls == cls) served += f.rate * dt;
  }
  return served;
}
