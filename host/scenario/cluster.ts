// A scenario's fabric: its topology (single switch or leaf/spine, with the devices' port count)
// and its faults (loss, link and plane outages) applied to the fabric before the run; and the
// cluster of the scenario's devices on it, with the runner that drives them: openCluster is the
// one way a cluster is built, for a traffic pattern, a collective or a sequence of them.

import { Fabric } from "../fabric/fabric.js";
import { ClusterRunner } from "../fabric/runner.js";
import { DeviceEndpoint } from "../cluster/endpoint.js";
import { Context } from "../verbs.js";
import { leafSpine, singleSwitch, PORTS_DEFAULT, type Topology } from "../fabric/topology.js";
import { ConfigError, resolveConfig, packConfig, configDefault } from "../config.js";
import { PAYLOAD_SLOT_BYTES_DEFAULT } from "../fabric/config.js";
import { CoreInstance } from "../wasm.js";
import type { Scenario, Fault } from "./scenario.js";

/** What a scenario's topology is built from: the devices' count and config (their ports), the fabric's shape and links. */
export type TopologyOf = { devices: Pick<Scenario["devices"], "count" | "config">; fabric: Pick<Scenario["fabric"], "topology" | "hostLink" | "fabricLink"> };

/** What a scenario's fabric is built from: its topology's fields, the fabric's mode and switches, the seed and the faults. */
export type FabricOf = TopologyOf & Pick<Scenario, "fabric" | "seed" | "faults">;

/** What a cluster's memory is judged from: the device count, the fabric's shape, and whether a collective runs (firmware on the engines). */
export type ClusterSizeOf = Pick<Scenario, "collective" | "collectives"> & { devices: Pick<Scenario["devices"], "count">; fabric: Pick<Scenario["fabric"], "topology"> };

/** What the least config of a scenario's devices depends on: their config, the fabric's mode, the transport, whether a collective runs. */
export type LeastConfigOf = Pick<Scenario, "collective" | "collectives" | "transport"> & { devices: Pick<Scenario["devices"], "config">; fabric: Pick<Scenario["fabric"], "mode"> };

/** The topology of the scenario's fabric, with the devices' port count. */
export function buildTopology(sc: TopologyOf): Topology {
  const t = sc.fabric.topology;
  const ports = Number(sc.devices.config.ports ?? PORTS_DEFAULT);
  if (t.kind === "single-switch") return singleSwitch({ devices: sc.devices.count, ports, link: sc.fabric.hostLink });
  return leafSpine({
    devices: sc.devices.count, ports, planes: t.planes, spines: t.spines, devicesPerLeaf: t.devicesPerLeaf,
    hostLink: sc.fabric.hostLink, fabricLink: sc.fabric.fabricLink,
  });
}

/** Applies `faults` (the scenario's, in order) to `fabric` over `topo`; a plane or link it does not have is a ConfigError naming the fault. */
export function applyFaults(faults: readonly Fault[], fabric: Fabric, topo: Topology): void {
  faults.forEach((f, i) => {
    if (f.kind === "plane-down") {
      if (f.plane >= topo.planes) throw new ConfigError(`scenario.faults[${i}].plane`, `plane ${f.plane} does not exist (the topology has ${topo.planes})`);
      fabric.failPlane(f.plane, f.atPs, f.untilPs ?? Infinity);
      return;
    }
    const links = f.links === "all" ? topo.links.map((_, k) => k) : f.links === "fabric" ? topo.links.flatMap((l, k) => (l.tier === "fabric" ? [k] : [])) : f.links;
    for (const l of links) {
      if (!(l >= 0 && l < topo.links.length)) throw new ConfigError(`scenario.faults[${i}].links`, `link ${l} does not exist (the topology has ${topo.links.length})`);
    }
    if (f.kind === "loss") for (const l of links) fabric.setLoss(l, { random: f.random, gilbertElliott: f.gilbertElliott ?? null });
    else for (const l of links) fabric.failLink(l, f.atPs, f.untilPs ?? Infinity);
  });
}

/**
 * Memory a cluster's devices may take in one core instance with their fabric: a wasm32
 * instance holds at most 4 GiB, and the fabric's tables grow beside the devices as it runs.
 */
export const SHARED_INSTANCE_BYTES = 2 ** 31;

/**
 * Memory a run's devices and fabric may need before it is refused, unless the caller allows more
 * (RunOptions.maxMemoryBytes, `menic run --max-memory`): 16 GiB, which 1,024 devices at the
 * defaults fit (about 10 GiB, docs/fabric.md "Memory").
 */
export const MEMORY_BOUND_BYTES = 16 * 2 ** 30;

/**
 * What a device costs besides the part of its arena a run writes: its host objects; and, when
 * its engines run firmware (a collective's executor), per engine its translation tables and
 * translated code (assembly/engine/jit-cache.ts, outside the arena). And what a link of the
 * fabric costs as built (its tables in the core, its host objects). Measured: docs/fabric.md, "Memory".
 */
const HOST_BYTES_PER_DEVICE = 512 * 2 ** 10;
const RUNNING_ENGINE_BYTES = 640 * 2 ** 10;
const FABRIC_BYTES_PER_LINK = 8 * 2 ** 10;

/** The core's answers about a config (assembly/create.ts), from one small instance per module. */
const layoutCores = new WeakMap<WebAssembly.Module, { core: CoreInstance; cfg: number }>();

/** The arena a device of `config` takes and the least eventCapacity that cannot overflow, as the core lays the device out. */
export function deviceLayout(coreModule: WebAssembly.Module, config: Map<string, bigint>): { arenaBytes: number; eventBound: number } {
  let c = layoutCores.get(coreModule);
  if (!c) {
    const core = new CoreInstance(coreModule);
    c = { core, cfg: core.exports.configAlloc() >>> 0 };
    layoutCores.set(coreModule, c);
  }
  const slots = packConfig(config);
  const e = c.core.exports;
  new BigUint64Array(e.memory.buffer, c.cfg, slots.length).set(slots);
  return { arenaBytes: e.arenaBytesFor(c.cfg) >>> 0, eventBound: e.eventBoundFor(c.cfg) >>> 0 };
}

/**
 * The memory the cluster of `sc`'s devices, each configured by `config`, needs: per device its
 * arena less its host memory (a scenario never writes host memory, so its pages are never
 * given), HOST_BYTES_PER_DEVICE, and RUNNING_ENGINE_BYTES per engine when they run a
 * collective; and the fabric's links as built. Frames queued in the switches under congestion
 * come on top (up to switch.bufferBytesPerPort for each switch port).
 */
export function clusterBytes(sc: ClusterSizeOf, config: Map<string, bigint>, arenaBytes: number): { perDevice: number; total: number } {
  const n = sc.devices.count, ports = Number(config.get("ports")!), t = sc.fabric.topology;
  const links = n * ports + (t.kind === "leaf-spine" ? t.planes * Math.ceil(n / t.devicesPerLeaf) * t.spines : 0);
  const running = sc.collective || sc.collectives ? Number(config.get("engines")!) : 0;
  const perDevice = arenaBytes - Number(config.get("hostMemBytes")!) + HOST_BYTES_PER_DEVICE + running * RUNNING_ENGINE_BYTES;
  return { perDevice, total: n * perDevice + links * FABRIC_BYTES_PER_LINK };
}

/**
 * Refuses, before anything is built, a cluster of `sc`'s devices configured by `config` that
 * would need more than `maxBytes` of memory (naming devices.count and the figure), or whose
 * devices.config.eventCapacity is below what can be pending at once. `least`: `config` is the
 * least any run of `sc` gives its devices ({@link leastConfig}), so the figures are "at least".
 */
export function checkCluster(coreModule: WebAssembly.Module, sc: ClusterSizeOf, config: unknown, maxBytes = MEMORY_BOUND_BYTES, least = false): { arenaBytes: number } {
  // the least config is the user's fields and the least of the rest; a run's own config holds
  // what the run set too (hbmBytes for a collective's buffers), which the user did not write
  const cfg = resolveConfig(config, least ? "scenario.devices.config" : "config");
  const { arenaBytes, eventBound } = deviceLayout(coreModule, cfg);
  const n = sc.devices.count;
  const given = Number(cfg.get("eventCapacity")!);
  if (given !== 0 && given < eventBound)
    throw new ConfigError("scenario.devices.config.eventCapacity", `${given} is too few, the event queue can overflow: these devices can have ${least ? "at least " : ""}${eventBound} events pending at once; give ${eventBound} or more, or 0 (the default) to size it so`);
  const need = clusterBytes(sc, cfg, arenaBytes);
  if (need.total > maxBytes) {
    const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;
    throw new ConfigError("scenario.devices.count",
      `${n} devices need ${least ? "at least " : ""}${gib(need.total)} of memory (${(need.perDevice / 2 ** 20).toFixed(1)} MiB each, and the fabric), more than the ${gib(maxBytes)} a run may take ` +
      "(docs/fabric.md, \"Memory\"): give fewer devices or smaller memories, or, if the machine has the memory, allow more (menic run --max-memory <GiB>; RunOptions.maxMemoryBytes)");
  }
  return { arenaBytes };
}

/**
 * The least config any run of `sc` gives its devices: its devices.config with the fields a run
 * sets (schemas/scenario.schema.json, devices.config) at their smallest; a run gives its devices
 * more QPs, HBM and engines as its traffic or collective needs.
 */
export function leastConfig(sc: LeastConfigOf): Record<string, number> {
  return {
    // a collective's devices have 16 engines unless their config says (host/scenario/collective.ts openCluster)
    engines: sc.collective || sc.collectives ? 16 : 1, ...sc.devices.config, maxQps: 4, maxCqs: 4, hbmBytes: 2 ** 20, mrtConnections: 1,
    timingMode: sc.fabric.mode === "timing" ? 1 : 0, transport: sc.transport === "metaroce" ? 1 : 0,
    ...(sc.fabric.mode === "timing" ? { txBodyBytes: 65536, rxBodyBytes: 65536 } : {}),
  };
}

/**
 * Where a scenario's devices, configured like `config`, are built: one core instance they share
 * with their fabric when their arenas fit SHARED_INSTANCE_BYTES (their window loop then runs in
 * the core, host/fabric/runner.ts), else `coreModule` itself (an instance each; the host steps
 * them). Refuses first what checkCluster refuses.
 */
export function clusterHome(coreModule: WebAssembly.Module, sc: ClusterSizeOf, config: unknown, maxMemoryBytes?: number): WebAssembly.Module | CoreInstance {
  const { arenaBytes } = checkCluster(coreModule, sc, config, maxMemoryBytes);
  return sc.devices.count * arenaBytes <= SHARED_INSTANCE_BYTES ? new CoreInstance(coreModule) : coreModule;
}

/**
 * The scenario's fabric with its faults (in `home`: its devices' instance, or a new one),
 * `contexts`' devices as its endpoints, and the runner over them: its windows the largest
 * multiple of the devices' interleave quantum within the smallest link latency (windowFor), or
 * `windowPs` when given (a what-if: docs/fabric.md says which results may depend on it).
 */
export function buildCluster(home: WebAssembly.Module | CoreInstance, sc: FabricOf, contexts: readonly Context[], windowPs?: number): { fabric: Fabric; endpoints: DeviceEndpoint[]; runner: ClusterRunner } {
  const topo = buildTopology(sc);
  // a payload slot fits the largest frame the devices build: their MTU, and pad and ICRC with room
  // to spare (the default at the default MTU); at an MTU of 256 a switch buffer of small frames
  // held 6 x the memory in slots of 4,608 B
  const mtu = Number(sc.devices.config.mtuBytes ?? configDefault("mtuBytes"));
  const payloadSlotBytes = mtu + (PAYLOAD_SLOT_BYTES_DEFAULT - configDefault("mtuBytes"));
  const fabric = new Fabric(home, topo, { mode: sc.fabric.mode, seed: sc.seed, payloadSlotBytes, ...(sc.fabric.switch ? { switch: sc.fabric.switch } : {}) });
  applyFaults(sc.faults, fabric, topo);
  const endpoints = contexts.map((c) => new DeviceEndpoint(c.device));
  const quantumPs = contexts.length > 0 ? Number(contexts[0]!.device.config.get("interleaveQuantumPs")) : undefined;
  return { fabric, endpoints, runner: new ClusterRunner(fabric, endpoints, { quantumPs, ...(windowPs !== undefined ? { windowPs } : {}) }) };
}

/** A scenario's devices on its fabric, with the runner that drives them (what {@link openCluster} builds; RunOptions.onBuilt sees it). */
export class Cluster {
  constructor(
    /** where the devices were built: one instance shared with the fabric, or the module (an instance each) */
    readonly home: WebAssembly.Module | CoreInstance,
    /** the devices' verbs contexts, by device number */
    readonly contexts: Context[],
    /** the fabric joining their ports */
    readonly fabric: Fabric,
    /** the devices as the runner's endpoints, by device number (a capture taps them) */
    readonly endpoints: DeviceEndpoint[],
    /** the window loop that advances the devices and the fabric together */
    readonly runner: ClusterRunner,
  ) {}
}

/** How a cluster's devices are made: each one's config, the config its memory is judged by, and what is done to each once open. */
export interface DevicePlan {
  /** device d's config */
  configOf(d: number): Record<string, number>;
  /** the config of its largest device: the memory bound and the shared instance are judged by it (clusterHome) */
  sizedBy: Record<string, number>;
  /** done to each device once it is open, before the next is (load and start firmware) */
  prepare?(ctx: Context): void;
}

/**
 * The cluster of `sc`'s devices, made as `plan` says, on its fabric (buildCluster): refused first
 * as clusterHome refuses; the devices in one instance with the fabric while they fit.
 */
export async function openCluster(coreModule: WebAssembly.Module, sc: FabricOf & ClusterSizeOf, plan: DevicePlan, opts: { maxMemoryBytes?: number; windowPs?: number } = {}): Promise<Cluster> {
  const home = clusterHome(coreModule, sc, plan.sizedBy, opts.maxMemoryBytes);
  const contexts: Context[] = [];
  for (let d = 0; d < sc.devices.count; d++) {
    const ctx = await Context.open(home, plan.configOf(d));
    plan.prepare?.(ctx);
    contexts.push(ctx);
  }
  const { fabric, endpoints, runner } = buildCluster(home, sc, contexts, opts.windowPs);
  return new Cluster(home, contexts, fabric, endpoints, runner);
}
