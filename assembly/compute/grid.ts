// The matmul grid: the device's compute units (SM-like) running one matmul-like load, so that
// what communication costs compute can be measured in simulated time (docs/compute.md). The
// load is a tile loop: every tile is `tileBytes` read and written through HBM (one HBM flow,
// mem/hbm.ts, weighing one requester per unit taking part) and `tileFlops` of arithmetic at
// the units' rate, computeTflops x active / computeUnits. Two tile buffers: the next tile
// loads while the current one computes, so a tile step takes max(load, compute), and HBM
// contention costs the load only what the compute does not hide. Units can be taken away
// (reserved) and given back at any time, as a GPU's communication kernels take SMs: the tile
// computing slows from then on, and the load in flight asks for less of HBM.
// It owns no memory bytes (the tiles are traffic, not data) and reads no clock: the host
// starts it and says when units are taken; everything else follows from device events.

import { Device, statAdd } from "../core/device";
import { STAT_HBM_FLOW_FULL } from "../generated/layouts";
import { schedule, unschedule, EventKind } from "../core/sched";
import { NEVER } from "../core/time";
import { hbmOf, hbmStart, hbmRetune, hbmWaitSlot, FlowClass } from "../mem/hbm";

/** Tiles a unit can hold at once: one computing, one loading. */
const BUFFERS: u32 = 2;

@unmanaged export class Grid {
  tiles: u32; // tiles of the load; 0: no load started
  loadsStarted: u32; // tiles whose load has begun
  loaded: u32; // tiles loaded and waiting for the units
  done: u32; // tiles computed
  loading: u32; // 1 while a tile's load flow is in flight
  computing: u32; // 1 while a tile computes
  reserved: u32; // units taken away (by communication kernels)
  gen: u32; // the ComputeDone event's generation: a stale one is ignored
  tileBytes: u64;
  tileFlops: f64;
  workLeft: f64; // flops of the tile computing, as of workAt
  workAt: u64;
  startPs: u64; // when the load started
  doneAt: u64; // when its last tile was computed, or NEVER
  computePs: u64; // time the units spent computing (a tile in hand), for the host's report
  stallPs: u64; // time they waited for a load with nothing to compute
}

@inline export function gridOf(dev: Device): Grid { return changetype<Grid>(dev.grid); }

/** Arena bytes of the grid's state. */
export function gridBytes(): usize { return offsetof<Grid>(); }

/** Lays the grid's state out at `base` (zeroed). */
export function gridInit(dev: Device, base: usize): void {
  dev.grid = base;
  gridOf(dev).doneAt = NEVER;
}

/** Units computing now. */
@inline function active(dev: Device): u32 { return dev.cfg.computeUnits - gridOf(dev).reserved; }

/** Flops per ps of the units computing now (TFLOP/s = flop/ps). */
@inline function flopsPerPs(dev: Device): f64 {
  return <f64>dev.cfg.computeTflops * <f64>active(dev) / <f64>dev.cfg.computeUnits;
}

/** The HBM peak of a tile load: the whole grid can take all of HBM, each unit its share of it. */
@inline function loadPeak(dev: Device): f64 {
  return hbmOf(dev).hbmBytesPerPs * <f64>active(dev) / <f64>dev.cfg.computeUnits;
}

/**
 * Starts a load of `tiles` tiles of `tileBytes` HBM bytes and `tileFlops` flops at time `t`.
 * False (nothing started) while a load runs, or for an empty one.
 */
export function gridStart(dev: Device, t: u64, tiles: u32, tileBytes: u64, tileFlops: f64): bool {
  const g = gridOf(dev);
  if (g.tiles != 0 && g.done < g.tiles) return false;
  if (tiles == 0 || tileBytes == 0 || !(tileFlops > 0)) return false;
  g.tiles = tiles;
  g.tileBytes = tileBytes;
  g.tileFlops = tileFlops;
  g.loadsStarted = 0;
  g.loaded = 0;
  g.done = 0;
  g.computing = 0;
  g.loading = 0;
  g.startPs = t;
  g.workAt = t;
  g.doneAt = NEVER;
  g.computePs = 0;
  g.stallPs = 0;
  nextLoad(dev, t);
  return true;
}

/** Starts the next tile's load when one is left, none is in flight and a buffer is free. */
function nextLoad(dev: Device, t: u64): void {
  const g = gridOf(dev);
  if (g.loading != 0 || g.loadsStarted >= g.tiles || g.loaded + g.computing >= BUFFERS) return;
  // a full flow table (FLOW_SLOTS flows: hundreds of QPs streaming at once) holds the load
  // back, counted, until a flow ends (ComputeRetry)
  if (!hbmStart(dev, t, g.tileBytes, loadPeak(dev), FlowClass.Compute, EventKind.ComputeLoaded, 0, 0, <f64>active(dev))) {
    statAdd(dev, STAT_HBM_FLOW_FULL, 1);
    hbmWaitSlot(dev, EventKind.ComputeRetry);
    return;
  }
  g.loading = 1;
  g.loadsStarted++;
}

/** Starts computing the next loaded tile when the units are free. */
function nextCompute(dev: Device, t: u64): void {
  const g = gridOf(dev);
  if (g.computing != 0 || g.loaded == 0) return;
  g.loaded--;
  g.computing = 1;
  g.workLeft = g.tileFlops;
  g.workAt = t;
  armDone(dev, t);
}

/** (Re)schedules the end of the tile computing from `t`, at the units' current rate. */
function armDone(dev: Device, t: u64): void {
  const g = gridOf(dev);
  g.gen++;
  unschedule(dev, EventKind.ComputeDone, 0);
  schedule(dev, t + <u64>Math.ceil(g.workLeft / flopsPerPs(dev)), EventKind.ComputeDone, 0, g.gen);
}

/** Brings the tile computing up to `t` at the rate it has had since workAt. */
function progress(dev: Device, t: u64): void {
  const g = gridOf(dev);
  if (g.computing != 0 && t > g.workAt) {
    g.workLeft = max(0, g.workLeft - flopsPerPs(dev) * <f64>(t - g.workAt));
    g.computePs += t - g.workAt;
  } else if (g.computing == 0 && g.done < g.tiles && t > g.workAt) {
    g.stallPs += t - g.workAt;
  }
  g.workAt = t;
}

/** The ComputeRetry event: a flow has ended, so the load refused a slot can start. */
export function gridRetry(dev: Device, t: u64): void {
  nextLoad(dev, t);
}

/** The ComputeLoaded event: a tile's HBM flow has moved its bytes. */
export function gridLoaded(dev: Device, t: u64): void {
  const g = gridOf(dev);
  progress(dev, t);
  g.loading = 0;
  g.loaded++;
  nextCompute(dev, t);
  nextLoad(dev, t);
}

/** The ComputeDone event (generation `gen`): the tile computing is done. */
export function gridComputed(dev: Device, t: u64, gen: u32): void {
  const g = gridOf(dev);
  if (gen != g.gen || g.computing == 0) return;
  progress(dev, t);
  g.computing = 0;
  g.done++;
  if (g.done == g.tiles) { g.doneAt = t; return; }
  nextCompute(dev, t);
  nextLoad(dev, t);
}

/**
 * Takes `units` of the grid's units away from the load from time `t` (0 gives them all back):
 * the tile computing goes on at the rate of the rest, the load in flight asks HBM for less.
 * The caller keeps units below computeUnits.
 */
export function gridReserve(dev: Device, t: u64, units: u32): void {
  const g = gridOf(dev);
  progress(dev, t);
  g.reserved = units;
  if (g.computing != 0) armDone(dev, t);
  if (g.loading != 0) hbmRetune(dev, t, EventKind.ComputeLoaded, loadPeak(dev), <f64>active(dev));
}
