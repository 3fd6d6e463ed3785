// The cluster runner: one window loop that advances every endpoint (device) and the fabric in
// conservative time windows. No frame crosses the fabric faster than the smallest link
// latency L, so within a window of length W ≤ L nothing a device sends can reach any device
// before the window ends: each device runs its window alone, then the frames it sent enter
// the fabric, and the fabric runs to the window's end. Every arrival inside the next window
// is then known (a frame reaching a device before t + 2W began its last hop before t + W),
// and is delivered to the device before it runs that window.
//
// Windows are also multiples of the device's interleave quantum (200 ns by default), so a
// device stepped to window ends runs exactly as it would uninterrupted (ARCHITECTURE.md,
// "The device event loop"). The window is the largest multiple of the quantum not above L;
// when L is below the quantum, it is L (correctness first; the device's runs then gain
// boundaries between grid lines, the same on every run).
//
// Results do not depend on the order endpoints are stepped in: frames enter the fabric in
// (departPs, device, port, hand-over order), arrivals are delivered sorted, and no endpoint
// sees another's state.
//
// When every endpoint is a device in the fabric's own core instance (host/scenario/cluster.ts
// builds them so) and none needs the host after each step (no tap, no time-ordered console),
// the same loop runs inside the core (assembly/cluster.ts): one call per stretch of windows,
// the frames moved by copies within one memory. The host is called back only for a device's
// output or failure. Both loops give the same results (test/cluster-core.test.ts).

import { ArrivalBatch, type TxSink } from "./batch.js";
import type { Fabric } from "./fabric.js";
import type { Partition } from "./partition.js";
import type { MenicExports } from "../wasm.js";
import { CLUSTER } from "../generated/layouts.js";
import { configDefault } from "../config.js";
import { minOf } from "../extremes.js";

/** A device the core can step in the cluster's window loop (Endpoint.inCore). */
export interface CoreDevice {
  /** its handle in the fabric's core instance */
  handle: number;
  /** picoseconds per byte at its port rate */
  psPerByte: number;
  /** bytes a frame spends on the wire beyond its own: its departure is that much earlier */
  overheadBytes: number;
}

/** A device, as the runner sees it. A real device implements it with a few calls per window. */
export interface Endpoint {
  /** Runs to exactly `tPs` (never earlier than the last time it was given). */
  stepTo(tPs: number): void;
  /** When it next does something of its own accord (≥ its time); Infinity if nothing is pending. */
  nextActivityPs(): number;
  /** Hands over every frame it began to send since the last call, one `sink.send` per frame. */
  drainTx(sink: TxSink): void;
  /**
   * Frames reaching it in the window about to run, before it runs it: each at or after its
   * time and before the window's end, sorted by (arrivalPs, srcDevice, srcPort, seq). The
   * batch points into the fabric's memory and is valid only during the call: copy what is kept.
   */
  deliver(batch: ArrivalBatch): void;
  /**
   * False when `deliver` reads only the batch's PKT records (not its columns), which the
   * fabric then does not write; true when absent.
   */
  readonly wantsColumns?: boolean;
  /** Arrivals it lost because a window's batch did not fit its receive stage (host steps only). */
  readonly stageDrops?: number;
  /**
   * The device behind it, when the core can step it in the window loop of `core` (the fabric's
   * instance): null when the host must (another instance, a tap, output read every step).
   */
  inCore?(core: MenicExports): CoreDevice | null;
  /** The core's window loop stopped at it: read its output, throw if it failed (Device.afterStep). */
  attend?(): void;
  /**
   * Its port `port`'s link into the fabric is paused by PFC (true) or free again (false), from
   * `atPs` (a window's start): a device's port then starts no frame. Absent: it does not obey.
   */
  pause?(port: number, paused: boolean, atPs: number): void;
}

/**
 * A device another thread of a run split over threads holds and steps (host/scenario/cluster.ts
 * builds only a thread's own): this thread's runner never steps it, and has nothing of it.
 */
export const ELSEWHERE: Endpoint = {
  stepTo() { throw new Error("a device of another thread of the run was stepped here"); },
  nextActivityPs: () => Infinity,
  drainTx() {},
  deliver() { throw new Error("a frame for a device of another thread of the run was delivered here"); },
};

/** The device interleave quantum (layouts/config.json interleaveQuantumPs default). */
export const QUANTUM_PS_DEFAULT = configDefault("interleaveQuantumPs");

/** The window rule: the largest multiple of `quantumPs` not above `minLatencyPs`, or minLatencyPs when that is smaller. */
export function windowFor(minLatencyPs: number, quantumPs = QUANTUM_PS_DEFAULT): number {
  if (!(minLatencyPs > 0)) throw new RangeError(`the smallest link latency must be positive, got ${minLatencyPs}`);
  return minLatencyPs >= quantumPs ? quantumPs * Math.floor(minLatencyPs / quantumPs) : minLatencyPs;
}

export interface RunnerOptions {
  /** the devices' interleave quantum, ps */
  quantumPs?: number;
  /** an explicit window (≤ the smallest link latency) instead of windowFor's */
  windowPs?: number;
  /** the order endpoints are stepped in each window (a permutation; results do not depend on it) */
  stepOrder?: readonly number[];
  /**
   * Where the window loop runs: "core" (default) inside the core when every endpoint is a
   * device of the fabric's instance the core can step (Endpoint.inCore), else on the host;
   * "host" always on the host (the same results, slower: for comparing the two).
   */
  loop?: "core" | "host";
  /**
   * This thread's part of a run split over threads (partition.ts): it steps only its devices
   * and runs only its planes, meeting the other threads at every window. PFC must be off.
   */
  partition?: Partition;
}

export interface RunnerStats {
  windowPs: number;
  nowPs: number;
  /** windows run (idle stretches skipped in one jump count as none) */
  windows: number;
  /** endpoint steps (an endpoint with nothing to do in a window is not stepped) */
  steps: number;
  deliveries: number;
}

export class ClusterRunner {
  readonly windowPs: number;
  nowPs = 0;
  private readonly order: Int32Array;
  private readonly sinks: TxSink[];
  private readonly nextAct: Float64Array;
  private readonly batch = new ArrivalBatch();
  private windows = 0;
  private steps = 0;
  private deliveries = 0;
  /** the core's cluster (assembly/cluster.ts) once the loop has run there; 0 before */
  private cl = 0;
  private readonly loop: "core" | "host";
  /** per endpoint and port: 1 while the fabric holds that port paused, as last told (host loop) */
  private paused: Uint8Array | undefined;
  /** stage drops other threads of a split run counted (absorbStageDrops) */
  private absorbedDrops = 0;
  /** this thread's part of a run split over threads, or null */
  readonly partition: Partition | null;
  /** a split run's devices: 1 for those this thread steps, whose endpoints are not ELSEWHERE */
  private readonly owned: Uint8Array | null = null;
  /** a split run's fabric has been told its part (at its first run) */
  private parted = false;

  constructor(readonly fabric: Fabric, readonly endpoints: readonly Endpoint[], o: RunnerOptions = {}) {
    if (endpoints.length !== fabric.devices) throw new RangeError(`the fabric has ${fabric.devices} devices, got ${endpoints.length} endpoints`);
    const minLat = minOf(fabric.topology.links.map((l) => l.latencyPs));
    if (o.windowPs !== undefined && !(o.windowPs > 0 && o.windowPs <= minLat))
      throw new RangeError(`windowPs must be in (0, ${minLat}] (the smallest link latency), got ${o.windowPs}`);
    this.windowPs = o.windowPs ?? windowFor(minLat, o.quantumPs);
    const order = o.stepOrder ?? endpoints.map((_, i) => i);
    if (order.length !== endpoints.length || new Set(order).size !== order.length || order.some((i) => !(i >= 0 && i < endpoints.length)))
      throw new RangeError("stepOrder must be a permutation of the endpoints");
    this.order = Int32Array.from(order);
    this.sinks = endpoints.map((_, i) => fabric.sink(i));
    this.nextAct = new Float64Array(endpoints.length);
    this.nowPs = fabric.nowPs;
    if (o.loop !== undefined && o.loop !== "core" && o.loop !== "host") throw new RangeError(`loop must be "core" or "host", got ${String(o.loop)}`);
    this.loop = o.loop ?? "core";
    this.partition = o.partition ?? null;
    if (this.partition) {
      if (fabric.pfc) throw new RangeError("a run split over threads needs PFC off: a pause crosses from one plane's thread to its devices' within a window");
      if (this.partition.count > fabric.topology.planes) throw new RangeError(`a run splits over at most its planes' number of threads (${fabric.topology.planes}), got ${this.partition.count}`);
      const part = this.partition, n = endpoints.length;
      this.owned = Uint8Array.from({ length: n }, (_, d) => (part.deviceThread(d, n) === part.index ? 1 : 0));
      endpoints.forEach((ep, d) => {
        if ((ep === ELSEWHERE) === (this.owned![d] === 1)) throw new RangeError(`endpoint ${d}: ${ep === ELSEWHERE ? "this thread runs it, but holds none" : "another thread runs it"}`);
      });
    }
  }

  /**
   * Runs windows until the time reaches `tPs` (rounded up to a window end). Endpoints are
   * asked when they next act at the start (the host may have given them work since).
   */
  runTo(tPs: number): void {
    this.run(Math.ceil(tPs / this.windowPs) * this.windowPs, false);
  }

  /**
   * Runs until nothing can happen any more (no endpoint activity, no frame in the fabric) or
   * the time reaches `limitPs`; true when it stopped because all was idle.
   */
  runUntilIdle(limitPs = Infinity): boolean {
    return this.run(limitPs === Infinity ? Infinity : Math.ceil(limitPs / this.windowPs) * this.windowPs, true);
  }

  private run(endPs: number, stopWhenIdle: boolean): boolean {
    const inCore = this.loop === "core" ? this.coreDevices() : null;
    if (this.partition) return this.runSplit(inCore, this.partition, endPs, stopWhenIdle);
    if (inCore) return this.runInCore(inCore, endPs, stopWhenIdle);
    const W = this.windowPs, fabric = this.fabric, eps = this.endpoints, n = eps.length;
    for (let i = 0; i < n; i++) this.nextAct[i] = eps[i].nextActivityPs();
    while (this.nowPs < endPs) {
      // the pauses the fabric holds the endpoints' ports under, from now (an XON wakes a port)
      if (fabric.pfc) this.syncPauses();
      // the next time anything happens; skip idle windows in one jump
      let next = fabric.nextEventPs();
      for (let i = 0; i < n; i++) next = Math.min(next, this.nextAct[i], fabric.nextArrivalPs(i));
      if (next === Infinity && stopWhenIdle) return true;
      if (next >= this.nowPs + W) {
        this.nowPs = Math.min(endPs, Math.max(this.nowPs, Math.floor(next / W) * W));
        fabric.runTo(this.nowPs);
        continue;
      }
      const end = this.nowPs + W;
      this.stepEndpoints(end, null);
      fabric.runTo(end);
      this.nowPs = end;
      this.windows++;
    }
    return false;
  }

  /** Tells each endpoint whose port's pause changed (Endpoint.pause), as assembly/cluster.ts syncPauses does in the core. */
  private syncPauses(): void {
    const fabric = this.fabric, ports = fabric.ports;
    this.paused ??= new Uint8Array(this.endpoints.length * ports);
    for (let i = 0; i < this.endpoints.length; i++) {
      const ep = this.endpoints[i]!;
      if (!ep.pause) continue;
      let changed = false;
      for (let p = 0; p < ports; p++) {
        const now = fabric.portPaused(i, p) ? 1 : 0;
        if (this.paused[i * ports + p] === now) continue;
        this.paused[i * ports + p] = now;
        ep.pause(p, now === 1, this.nowPs);
        changed = true;
      }
      if (changed) this.nextAct[i] = ep.nextActivityPs();
    }
  }

  /**
   * Every endpoint as a device the core can step, or null when one cannot be; in a run split
   * over threads every one of this thread's (the others' are null).
   */
  private coreDevices(): (CoreDevice | null)[] | null {
    const out: (CoreDevice | null)[] = [];
    for (const [i, ep] of this.endpoints.entries()) {
      if (this.owned && !this.owned[i]) { out.push(null); continue; }
      const d = ep.inCore?.(this.fabric.core);
      if (!d) return null;
      out.push(d);
    }
    return out;
  }

  /** run(), the window loop in the core (assembly/cluster.ts clusterRun). */
  private runInCore(devices: (CoreDevice | null)[], endPs: number, stopWhenIdle: boolean): boolean {
    const core = this.fabric.core;
    this.fabric.flush();
    this.coreCluster(devices);
    // the host's loop may have run since the core's last stretch
    new DataView(core.memory.buffer).setFloat64(this.cl + CLUSTER.now_ps, this.nowPs, true);
    let fresh = 1;
    for (;;) {
      const r = core.clusterRun(this.cl, endPs, stopWhenIdle ? 1 : 0, fresh);
      fresh = 0;
      this.nowPs = new DataView(core.memory.buffer).getFloat64(this.cl + CLUSTER.now_ps, true);
      if (r !== 2) return r === 1;
      this.endpoints[core.clusterAttention(this.cl)]!.attend?.();
    }
  }

  /**
   * run() as this thread's part of a run split over threads: the window loop of run(), its
   * own devices stepped (in the core, clusterDevices, when they live in the fabric's instance;
   * else here, as run() steps them), its fabric run here, and two meetings a window (one for a
   * jump over idle time): after the devices (the frames they sent on other threads' planes),
   * and after the fabric (frames on the wire to other threads' devices, and when each thread
   * next acts). Every thread takes the same windows and jumps.
   */
  private runSplit(devices: (CoreDevice | null)[] | null, part: Partition, endPs: number, stopWhenIdle: boolean): boolean {
    const fabric = this.fabric, core = fabric.core, W = this.windowPs, n = this.endpoints.length;
    fabric.flush();
    const owned = this.owned!;
    if (!this.parted) {
      const t = fabric.topology;
      fabric.partition(Uint8Array.from(t.portPlane, (pl) => ((pl < 0 ? 0 : part.planeThread(pl, t.planes)) === part.index ? 1 : 0)), owned);
      this.parted = true;
    }
    if (devices) {
      this.coreCluster(devices);
      // the host may have given the devices work since the last stretch
      core.clusterBegin(this.cl, 1);
    } else for (let i = 0; i < n; i++) if (owned[i]) this.nextAct[i] = this.endpoints[i]!.nextActivityPs();
    let next = this.meetAfterFabric(part, devices !== null);
    while (this.nowPs < endPs) {
      if (next === Infinity && stopWhenIdle) return true;
      if (next >= this.nowPs + W) {
        this.nowPs = Math.min(endPs, Math.max(this.nowPs, Math.floor(next / W) * W));
        fabric.runTo(this.nowPs);
        next = this.meetAfterFabric(part, devices !== null);
        continue;
      }
      const end = this.nowPs + W;
      if (devices) while (core.clusterDevices(this.cl, end) === 2) this.endpoints[core.clusterAttention(this.cl)]!.attend?.();
      else {
        this.stepEndpoints(end, owned);
        this.windows++;
      }
      // the frames sent on other threads' planes, for them; theirs on this thread's, here
      const out = fabric.diverted();
      const handed = part.exchange([out.n], [out.recs, out.bodies]);
      fabric.clearDiverted();
      handed.forEach((h, k) => { if (k !== part.index) fabric.ingestDiverted(h.nums[0]!, h.sections[0]!, h.sections[1]!); });
      fabric.runTo(end);
      this.nowPs = end;
      next = this.meetAfterFabric(part, devices !== null);
    }
    return false;
  }

  /**
   * The endpoints' part of the window ending at `end` on the host, in the step order: each with
   * arrivals due or something of its own to do takes its arrivals, runs to the end and hands
   * over its frames. `owned`: only those marked (a run split over threads), else every one.
   */
  private stepEndpoints(end: number, owned: Uint8Array | null): void {
    const fabric = this.fabric, eps = this.endpoints;
    for (let k = 0; k < eps.length; k++) {
      const i = this.order[k]!;
      if (owned && !owned[i]) continue;
      const due = fabric.nextArrivalPs(i) < end;
      if (!due && this.nextAct[i]! >= end) continue;
      const ep = eps[i]!;
      if (due) {
        this.deliveries += fabric.takeArrivals(i, end, this.batch, ep.wantsColumns ?? true);
        ep.deliver(this.batch);
        fabric.releaseDelivered();
      }
      ep.stepTo(end);
      ep.drainTx(this.sinks[i]!);
      this.nextAct[i] = ep.nextActivityPs();
      this.steps++;
    }
  }

  /**
   * The meeting after the fabrics ran to the time now: each thread hands over the frames on
   * the wire to the others' devices and takes theirs to its own; returns when the whole run
   * next acts (the earliest of every thread's). `inCore`: its devices step in the core.
   */
  private meetAfterFabric(part: Partition, inCore: boolean): number {
    const fabric = this.fabric, core = fabric.core;
    const moved = fabric.moveOut();
    let local = moved.min;
    if (inCore) {
      new DataView(core.memory.buffer).setFloat64(this.cl + CLUSTER.now_ps, this.nowPs, true);
      local = Math.min(local, core.clusterNextLocal(this.cl));
    } else {
      local = Math.min(local, fabric.nextEventPs());
      for (let i = 0; i < this.endpoints.length; i++) if (this.owned![i]) local = Math.min(local, this.nextAct[i]!, fabric.nextArrivalPs(i));
    }
    const handed = part.exchange([local, moved.n], [moved.recs, moved.bodies]);
    let next = Infinity;
    handed.forEach((h, k) => {
      next = Math.min(next, h.nums[0]!);
      if (k !== part.index) fabric.adopt(h.nums[1]!, h.sections[0]!, h.sections[1]!);
    });
    return next;
  }

  /**
   * The core's cluster for `devices` (assembly/cluster.ts), made at the first run in the core; a
   * null device is another thread's (the core never looks at it: FAB.dev_owned).
   */
  private coreCluster(devices: (CoreDevice | null)[]): void {
    const core = this.fabric.core;
    if (this.cl === 0) {
      const overhead = devices.find((d) => d !== null)?.overheadBytes ?? 0;
      const cl = core.clusterNew(this.fabric.fab, this.windowPs, overhead) >>> 0;
      devices.forEach((d, i) => {
        if (!d) return;
        if (d.overheadBytes !== overhead) throw new RangeError(`endpoint ${i}: every device's frame overhead must be the same`);
        core.clusterSetDevice(cl, i, d.handle, d.psPerByte);
      });
      const dv = new DataView(core.memory.buffer);
      const order = dv.getUint32(cl + CLUSTER.order, true);
      this.order.forEach((i, k) => dv.setUint32(order + 4 * k, i, true));
      this.cl = cl;
    }
  }

  /** True when the window loop ran in the core (every endpoint a device of the fabric's instance; RunnerOptions.loop). */
  get inCore(): boolean {
    return this.cl !== 0;
  }

  /** Arrivals lost because they did not fit a device's receive stage, all endpoints. */
  stageDrops(): number {
    let n = this.absorbedDrops;
    for (const ep of this.endpoints) n += ep.stageDrops ?? 0;
    if (this.cl !== 0) {
      const dv = new DataView(this.fabric.core.memory.buffer), at = dv.getUint32(this.cl + CLUSTER.stage_drops, true);
      for (let i = 0; i < this.endpoints.length; i++) n += dv.getFloat64(at + 8 * i, true);
    }
    return n;
  }

  /** @internal Adds another thread's stageDrops (a run split over threads: its devices'). */
  absorbStageDrops(n: number): void {
    this.absorbedDrops += n;
  }

  stats(): RunnerStats {
    let { windows, steps, deliveries } = this;
    if (this.cl !== 0) {
      const dv = new DataView(this.fabric.core.memory.buffer);
      windows += dv.getFloat64(this.cl + CLUSTER.windows, true);
      steps += dv.getFloat64(this.cl + CLUSTER.steps, true);
      deliveries += dv.getFloat64(this.cl + CLUSTER.deliveries, true);
    }
    return { windowPs: this.windowPs, nowPs: this.nowPs, windows, steps, deliveries };
  }
}
