// A cluster's window loop in the core: the fabric and the devices that live in its instance
// (one memory), run as host/fabric/runner.ts runs them, without a call into the core per device
// per window. The rules are the runner's (conservative windows no longer than the smallest link
// latency; see its header): in each window, every device that has frames due or something of
// its own to do takes its arrivals, runs to the window's end and hands the frames it sent to
// the fabric, read in place from its transmit ring; then the fabric runs to the window's end.
// Idle stretches are skipped in one jump. The order of these steps, and every number they
// produce, are the runner's: a run here and the same run through the host's endpoints give the
// same bytes (test/cluster-core.test.ts).
//
// The host is asked back (clusterRun returns ATTENTION) when a device has output for it
// (console, trace: its Device drains them, as after any step) or has failed; the window then
// goes on where it stopped at the next call.

import { Device } from "./core/device";
import { NEVER } from "./core/time";
import { copyBytes } from "./core/copy";
import { jitNewEpoch } from "./engine/jit-cache";
import { nextActivity, step, hasOutput } from "./run";
import { Ports, portsOf, txRing, rxRing, ringConsume, portAt, portPause, portsUnblock } from "./nic/ports";
import { rxPut, rxCommit } from "./nic/rx";
import { takeDue, heldBodyBytes, writeHeld, fabricRelease, fabricRunTo, fabricNextEvent, fabricFull, fabricOutbox, ingestRing, fabricEpPaused } from "./fabric/fabric";
import { zeroed } from "./fabric/memory";
import { HDR_SLOT } from "./fabric/packets";
import {
  CLUSTER_SIZE, CLUSTER_FAB, CLUSTER_N, CLUSTER_DEV, CLUSTER_ORDER, CLUSTER_NEXT, CLUSTER_PS_PER_BYTE,
  CLUSTER_STAGE_DROPS, CLUSTER_OVERHEAD, CLUSTER_NOW_PS, CLUSTER_WINDOW_PS, CLUSTER_WINDOWS, CLUSTER_STEPS,
  CLUSTER_DELIVERIES, CLUSTER_WIN_END, CLUSTER_RESUME, CLUSTER_RESUME_STEPPED,
  FAB_DEVICES, FAB_PEND_MIN, FAB_DEV_OWNED, FAB_OUTBOX, FAB_OUTBOX_BODY, FAB_PFC_ON, FAB_PORTS,
  PKT_SIZE, PKT_HDR_LEN, PKT_BODY_LEN, PKT_BODY_OFF,
} from "./generated/layouts";

/** clusterRun's answers. */
export const CLUSTER_REACHED: i32 = 0; // the time reached endPs
export const CLUSTER_IDLE: i32 = 1; // nothing can happen any more (stopWhenIdle)
export const CLUSTER_ATTENTION: i32 = 2; // a device wants the host (clusterAttention says which)

@inline function tab(cl: usize, field: u32): usize { return <usize>load<u32>(cl + field); }
@inline function f64At(cl: usize, field: u32, i: i32): f64 { return load<f64>(tab(cl, field) + (<usize>i << 3)); }
@inline function setF64(cl: usize, field: u32, i: i32, v: f64): void { store<f64>(tab(cl, field) + (<usize>i << 3), v); }
@inline function devAt(cl: usize, i: i32): Device { return changetype<Device>(<usize>load<u32>(tab(cl, CLUSTER_DEV) + (<usize>i << 2))); }
@inline function bump(cl: usize, field: u32, by: f64): void { store<f64>(cl + field, load<f64>(cl + field) + by); }

/** A cluster over fabric `fab` (its device count), windows of `windowPs`; the host then places each device (clusterSetDevice). */
export function clusterNew(fab: usize, windowPs: f64, overheadBytes: u32): usize {
  const cl = zeroed(CLUSTER_SIZE);
  const n = load<u32>(fab + FAB_DEVICES);
  store<u32>(cl + CLUSTER_FAB, <u32>fab);
  store<u32>(cl + CLUSTER_N, n);
  store<u32>(cl + CLUSTER_DEV, <u32>zeroed(<usize>n << 2));
  const order = zeroed(<usize>n << 2);
  for (let i: u32 = 0; i < n; i++) store<u32>(order + (<usize>i << 2), i);
  store<u32>(cl + CLUSTER_ORDER, <u32>order);
  store<u32>(cl + CLUSTER_NEXT, <u32>zeroed(<usize>n << 3));
  store<u32>(cl + CLUSTER_PS_PER_BYTE, <u32>zeroed(<usize>n << 3));
  store<u32>(cl + CLUSTER_STAGE_DROPS, <u32>zeroed(<usize>n << 3));
  store<u32>(cl + CLUSTER_OVERHEAD, overheadBytes);
  store<f64>(cl + CLUSTER_WINDOW_PS, windowPs);
  store<i32>(cl + CLUSTER_RESUME, -1);
  return cl;
}

/** Device `i` of the fabric is the device at `dev` (this instance), sending at `psPerByte`. */
export function clusterSetDevice(cl: usize, i: u32, dev: usize, psPerByte: f64): void {
  store<u32>(tab(cl, CLUSTER_DEV) + (<usize>i << 2), <u32>dev);
  setF64(cl, CLUSTER_PS_PER_BYTE, <i32>i, psPerByte);
}

/** When a device next acts of its own accord, as the runner keeps it (ps; Infinity: never). */
function nextOf(dev: Device): f64 {
  const t = nextActivity(dev);
  return t == NEVER ? Infinity : <f64>t;
}

/**
 * Runs windows until the time reaches `endPs` (a multiple of the window), or, with
 * `stopWhenIdle`, until nothing can happen any more. `fresh`: the host may have given devices
 * work since the last call, so each is asked again when it next acts (the runner does so at the
 * start of every run). Returns CLUSTER_REACHED, CLUSTER_IDLE or CLUSTER_ATTENTION.
 */
export function clusterRun(cl: usize, endPs: f64, stopWhenIdle: bool, fresh: bool): i32 {
  const fab = <usize>load<u32>(cl + CLUSTER_FAB), n = <i32>load<u32>(cl + CLUSTER_N);
  const W = load<f64>(cl + CLUSTER_WINDOW_PS);
  if (fresh) for (let i = 0; i < n; i++) setF64(cl, CLUSTER_NEXT, i, nextOf(devAt(cl, i)));
  // the host may have written SRAM since its last call, as before a step (engine/jit-cache.ts);
  // within the call only the engines and the NIC do, and the JIT's cache sees them do it
  for (let i = 0; i < n; i++) jitNewEpoch(devAt(cl, i));
  // a window a device interrupted goes on first
  if (load<i32>(cl + CLUSTER_RESUME) >= 0 && !finishWindow(cl, fab, n)) return CLUSTER_ATTENTION;
  while (load<f64>(cl + CLUSTER_NOW_PS) < endPs) {
    const now = load<f64>(cl + CLUSTER_NOW_PS);
    // the pauses the fabric holds the devices' ports under, from now (an XON wakes a port)
    if (load<u32>(fab + FAB_PFC_ON) != 0) {
      for (let i = 0; i < n; i++) if (syncPauses(fab, i, devAt(cl, i), <u64>now)) setF64(cl, CLUSTER_NEXT, i, nextOf(devAt(cl, i)));
    }
    let next = fabricNextEvent(fab);
    const pend = <usize>load<u32>(fab + FAB_PEND_MIN), acts = tab(cl, CLUSTER_NEXT);
    for (let i = 0; i < n; i++) {
      next = Math.min(next, load<f64>(acts + (<usize>i << 3)));
      next = Math.min(next, load<f64>(pend + (<usize>i << 3)));
    }
    if (next == Infinity && stopWhenIdle) return CLUSTER_IDLE;
    if (next >= now + W) {
      const t = Math.min(endPs, Math.max(now, Math.floor(next / W) * W));
      store<f64>(cl + CLUSTER_NOW_PS, t);
      fabricRunTo(fab, t);
      continue;
    }
    store<f64>(cl + CLUSTER_WIN_END, now + W);
    store<i32>(cl + CLUSTER_RESUME, 0);
    store<u32>(cl + CLUSTER_RESUME_STEPPED, 0);
    if (!finishWindow(cl, fab, n)) return CLUSTER_ATTENTION;
  }
  return CLUSTER_REACHED;
}

/**
 * A run split over threads (host/fabric/runner.ts, partitioned): at the start of the host's
 * run, as clusterRun's start, for this partition's devices (FAB.dev_owned; the others are not
 * in this instance). `fresh`: each is asked again when it next acts.
 */
export function clusterBegin(cl: usize, fresh: bool): void {
  const n = <i32>load<u32>(cl + CLUSTER_N), owned = <usize>load<u32>(<usize>load<u32>(cl + CLUSTER_FAB) + FAB_DEV_OWNED);
  for (let i = 0; i < n; i++) {
    if (owned != 0 && load<u8>(owned + <usize>i) == 0) continue;
    if (fresh) setF64(cl, CLUSTER_NEXT, i, nextOf(devAt(cl, i)));
    jitNewEpoch(devAt(cl, i));
  }
}

/**
 * A partition's devices' part of the window ending at `end` (a run split over threads): each
 * device of this partition (FAB.dev_owned) steps as finishWindow steps it, its frames on other
 * partitions' planes diverted; the fabric does not run (the host runs it once the partitions
 * have exchanged their frames). Returns CLUSTER_REACHED, or CLUSTER_ATTENTION when a device
 * wants the host: the next call, with the same `end`, goes on there.
 */
export function clusterDevices(cl: usize, end: f64): i32 {
  const fab = <usize>load<u32>(cl + CLUSTER_FAB), n = <i32>load<u32>(cl + CLUSTER_N);
  if (load<i32>(cl + CLUSTER_RESUME) < 0) {
    store<f64>(cl + CLUSTER_WIN_END, end);
    store<i32>(cl + CLUSTER_RESUME, 0);
    store<u32>(cl + CLUSTER_RESUME_STEPPED, 0);
  }
  if (!stepDevices(cl, fab, n, end, <usize>load<u32>(fab + FAB_DEV_OWNED))) return CLUSTER_ATTENTION;
  store<f64>(cl + CLUSTER_NOW_PS, end);
  bump(cl, CLUSTER_WINDOWS, 1);
  return CLUSTER_REACHED;
}

/**
 * The earliest time anything of this partition happens: its fabric's next event, and each of
 * its devices' next activity and next arrival (Infinity: nothing).
 */
export function clusterNextLocal(cl: usize): f64 {
  const fab = <usize>load<u32>(cl + CLUSTER_FAB), n = <i32>load<u32>(cl + CLUSTER_N);
  const owned = <usize>load<u32>(fab + FAB_DEV_OWNED);
  const pend = <usize>load<u32>(fab + FAB_PEND_MIN), acts = tab(cl, CLUSTER_NEXT);
  let next = fabricNextEvent(fab);
  for (let i = 0; i < n; i++) {
    if (owned != 0 && load<u8>(owned + <usize>i) == 0) continue;
    next = Math.min(next, load<f64>(acts + (<usize>i << 3)));
    next = Math.min(next, load<f64>(pend + (<usize>i << 3)));
  }
  return next;
}

/** The device the host is asked to look at (ATTENTION): its index in the fabric. */
export function clusterAttention(cl: usize): i32 {
  const k = load<i32>(cl + CLUSTER_RESUME);
  return k < 0 ? -1 : <i32>load<u32>(tab(cl, CLUSTER_ORDER) + (<usize>k << 2));
}

/**
 * Steps the window in progress (CLUSTER.win_end) from the device at position CLUSTER.resume of the
 * order on, then runs the fabric to its end. False when a device wants the host: CLUSTER.resume
 * then names it, and the next call goes on there.
 */
function finishWindow(cl: usize, fab: usize, n: i32): bool {
  const end = load<f64>(cl + CLUSTER_WIN_END);
  if (!stepDevices(cl, fab, n, end, 0)) return false;
  fabricRunTo(fab, end);
  store<f64>(cl + CLUSTER_NOW_PS, end);
  bump(cl, CLUSTER_WINDOWS, 1);
  return true;
}

/**
 * The devices' part of the window ending at `end`, from the device at position CLUSTER.resume
 * of the order on: each as stepDevice steps it; `owned` (a u8 per device, FAB.dev_owned), when
 * not 0, only those marked. False when a device wants the host: CLUSTER.resume then names it;
 * else CLUSTER.resume is -1.
 */
function stepDevices(cl: usize, fab: usize, n: i32, end: f64, owned: usize): bool {
  const order = tab(cl, CLUSTER_ORDER);
  for (let k = load<i32>(cl + CLUSTER_RESUME); k < n; k++) {
    const i = <i32>load<u32>(order + (<usize>k << 2));
    if (owned != 0 && load<u8>(owned + <usize>i) == 0) continue;
    store<i32>(cl + CLUSTER_RESUME, k);
    if (!stepDevice(cl, fab, i, end)) return false;
    store<u32>(cl + CLUSTER_RESUME_STEPPED, 0);
  }
  store<i32>(cl + CLUSTER_RESUME, -1);
  return true;
}

/**
 * Device `i`'s part of the window ending at `end`: its due arrivals, its run to the end, its
 * frames into the fabric. False when it stopped for the host (output to read, a failure);
 * CLUSTER.resume_stepped is then 1: the next call goes on with its run.
 */
function stepDevice(cl: usize, fab: usize, i: i32, end: f64): bool {
  const dev = devAt(cl, i), until = <u64>end;
  if (load<u32>(cl + CLUSTER_RESUME_STEPPED) == 0) {
    const due = load<f64>(<usize>load<u32>(fab + FAB_PEND_MIN) + (<usize>i << 3)) < end;
    if (!due && f64At(cl, CLUSTER_NEXT, i) >= end) return true;
    if (due) deliver(cl, fab, i, dev, end);
    bump(cl, CLUSTER_STEPS, 1);
    store<u32>(cl + CLUSTER_RESUME_STEPPED, 1);
  }
  // as Device.advance: steps until the end, the host reading its output after any step that left some
  while (dev.now < until) {
    step(dev, until, 0);
    if (dev.fatal != 0 || hasOutput(dev)) return false;
  }
  // its frames, read in place from its transmit ring
  const r = txRing(dev), sent = r.count;
  if (sent != 0) {
    ingestRing(fab, <u32>i, r.recs, r.head, sent, dev.cfg.txRingEntries, r.body, f64At(cl, CLUSTER_PS_PER_BYTE, i), load<u32>(cl + CLUSTER_OVERHEAD));
    ringConsume(r, sent);
    portsUnblock(dev, dev.now);
  }
  setF64(cl, CLUSTER_NEXT, i, nextOf(dev));
  return true;
}

/** Device `i`'s ports paused or let go as the fabric now holds their links (from `t`); true when one changed. */
function syncPauses(fab: usize, i: i32, dev: Device, t: u64): bool {
  const ports = load<u32>(fab + FAB_PORTS);
  const n = ports < dev.cfg.ports ? ports : dev.cfg.ports;
  const at = t > dev.now ? t : dev.now;
  let changed = false;
  for (let p: u32 = 0; p < n; p++) {
    const paused = fabricEpPaused(fab, i * <i32>ports + <i32>p) != 0;
    if (paused == (portAt(dev, p).paused != 0)) continue;
    portPause(dev, p, paused, at);
    changed = true;
  }
  return changed;
}

/**
 * The frames reaching device `i` before `end`, staged and handed to it as the host's
 * DevicePorts.stageRecords and commitArrivals do: a frame that does not fit the stage (records,
 * body bytes, or more header bytes than a record holds) is lost and counted. When all fit (the
 * rule), the fabric writes them straight into the stage; in timing mode, when the receive ring
 * has room for all of them, straight into the ring (what rxPut would put there).
 */
function deliver(cl: usize, fab: usize, i: i32, dev: Device, end: f64): void {
  const n = takeDue(fab, i, end);
  bump(cl, CLUSTER_DELIVERIES, <f64>n);
  const ports = portsOf(dev), cap = dev.cfg.rxRingEntries;
  const bodyCap: u32 = dev.cfg.timingMode != 0 ? 0 : dev.cfg.rxBodyBytes;
  const ring = rxRing(dev);
  if (bodyCap == 0 && !fabricFull(fab) && n <= cap && n <= ring.cap - ring.count) {
    let first = ring.head + ring.count;
    if (first >= ring.cap) first -= ring.cap;
    writeHeld(fab, ring.recs, 0, false, first, ring.cap);
    rxCommit(dev, n);
    fabricRelease(fab);
    return;
  }
  let staged: u32 = 0;
  if (n <= cap && (bodyCap == 0 ? !fabricFull(fab) : heldBodyBytes(fab) <= bodyCap)) {
    writeHeld(fab, ports.stage, ports.stageBody, false);
    staged = n;
  } else staged = stageSome(cl, fab, i, ports, n, cap, bodyCap);
  if (staged != 0) rxPut(dev, staged);
  fabricRelease(fab);
}

/** deliver's way when not every frame fits: through the fabric's outbox, one record at a time. */
function stageSome(cl: usize, fab: usize, i: i32, ports: Ports, n: u32, cap: u32, bodyCap: u32): u32 {
  const full = fabricFull(fab);
  fabricOutbox(fab, n, full ? heldBodyBytes(fab) : 0);
  const out = <usize>load<u32>(fab + FAB_OUTBOX), outBody = <usize>load<u32>(fab + FAB_OUTBOX_BODY);
  writeHeld(fab, out, outBody, false);
  let staged: u32 = 0, stagedBody: u32 = 0, lost: u32 = 0;
  for (let k: u32 = 0; k < n; k++) {
    const r = out + <usize>k * PKT_SIZE;
    const hdrLen = <u32>load<u16>(r + PKT_HDR_LEN);
    const blen = bodyCap > 0 ? load<u32>(r + PKT_BODY_LEN) : 0;
    if (staged >= cap || stagedBody + blen > bodyCap || hdrLen > HDR_SLOT) {
      lost++;
      continue;
    }
    const to = ports.stage + <usize>staged * PKT_SIZE;
    copyBytes(to, r, PKT_SIZE);
    store<u32>(to + PKT_BODY_LEN, blen);
    store<u32>(to + PKT_BODY_OFF, stagedBody);
    if (blen > 0) memory.copy(ports.stageBody + stagedBody, outBody + load<u32>(r + PKT_BODY_OFF), blen);
    staged++;
    stagedBody += blen;
  }
  if (lost != 0) setF64(cl, CLUSTER_STAGE_DROPS, i, f64At(cl, CLUSTER_STAGE_DROPS, i) + <f64>lost);
  return staged;
}
