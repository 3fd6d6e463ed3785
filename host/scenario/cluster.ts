// A scenario's fabric: its topology (single switch, leaf/spine or three tiers, with the devices' port count)
// and its faults (loss, link and plane outages) applied to the fabric before the run; and the
// cluster of the scenario's devices on it, with the runner that drives them: Cluster.build is the
// one way a cluster is built, for a traffic pattern, a collective, a sequence of them, or a
// program (Cluster.open, the library's openCluster: the cluster API, README "A cluster from code").
// No Node APIs: it runs in a browser tab as well.

import { Fabric } from "../fabric/fabric.js";
import { ClusterRunner, ELSEWHERE, type Endpoint } from "../fabric/runner.js";
import type { Partition } from "../fabric/partition.js";
import { DeviceEndpoint } from "../cluster/endpoint.js";
import { Context, VerbsError, type Qp, type PortGroup } from "../verbs.js";
import { leafSpine, singleSwitch, threeTier, fatTreeCounts, PORTS_DEFAULT, type Topology } from "../fabric/topology.js";
import { ConfigError, resolveConfig, packConfig, configDefault } from "../config.js";
import { PAYLOAD_SLOT_BYTES_DEFAULT } from "../fabric/config.js";
import { CoreInstance } from "../wasm.js";
import { resolveCluster, type Scenario, type Fault, type ClusterInput, type ClusterSpec, type ThreeTier, type FatTree, type Topology as ScenarioTopology } from "./scenario.js";
import { ClusterCapture } from "../cluster/capture.js";
import { PcapngWriter } from "../wire/pcapng.js";
import { ScenarioTracer } from "./trace.js";
import { bindProgram, executorsReady, GraphRun, type BindOptions } from "../graph/runtime.js";
import type { GraphProgram } from "../graph/types.js";
import { executorElf } from "../generated/executor-elf.js";

/** What a scenario's topology is built from: the devices' count and config (their ports), the fabric's shape and links. */
export type TopologyOf = { devices: Pick<Scenario["devices"], "count" | "config">; fabric: Pick<Scenario["fabric"], "topology" | "hostLink" | "fabricLink" | "superLink"> };

/** What a scenario's fabric is built from: its topology's fields, the fabric's mode and switches, the seed and the faults. */
export type FabricOf = TopologyOf & Pick<Scenario, "fabric" | "seed" | "faults">;

/** What a cluster's memory is judged from: the device count, the fabric's shape, and whether a collective runs (firmware on the engines: `executor`, a program's cluster that runs the graph executor). */
export type ClusterSizeOf = Pick<Scenario, "collective" | "collectives"> & { devices: Pick<Scenario["devices"], "count">; fabric: Pick<Scenario["fabric"], "topology">; executor?: boolean };

/** What the least config of a scenario's devices depends on: their config, the fabric's mode, the transport, whether a collective runs. */
export type LeastConfigOf = Pick<Scenario, "collective" | "collectives" | "transport"> & { devices: Pick<Scenario["devices"], "config">; fabric: Pick<Scenario["fabric"], "mode"> };

/** The topology of the scenario's fabric, with the devices' port count. */
export function buildTopology(sc: TopologyOf): Topology {
  const t = sc.fabric.topology;
  const ports = Number(sc.devices.config.ports ?? PORTS_DEFAULT);
  if (t.kind === "single-switch") return singleSwitch({ devices: sc.devices.count, ports, link: sc.fabric.hostLink });
  const links = { hostLink: sc.fabric.hostLink, fabricLink: sc.fabric.fabricLink };
  if (t.kind === "leaf-spine") return leafSpine({ devices: sc.devices.count, ports, planes: t.planes, spines: t.spines, devicesPerLeaf: t.devicesPerLeaf, ...links });
  return threeTier({ devices: sc.devices.count, ports, ...closOf(t, sc.devices.count), ...links, superLink: sc.fabric.superLink });
}

/** A three-tier topology's (a fat tree's) counts, for `count` devices. */
function closOf(t: ThreeTier | FatTree, count: number): Omit<ThreeTier, "kind"> {
  if (t.kind === "three-tier") return t;
  const c = fatTreeCounts(t.k);
  return { planes: t.planes, ...c, pods: Math.ceil(count / (c.devicesPerLeaf * c.leavesPerPod)) };
}

/** The links between two switches of a scenario topology over `count` devices. */
function switchLinks(t: ScenarioTopology, count: number): number {
  if (t.kind === "single-switch") return 0;
  if (t.kind === "leaf-spine") return t.planes * Math.ceil(count / t.devicesPerLeaf) * t.spines;
  const c = closOf(t, count);
  return c.planes * c.pods * c.spinesPerPod * (c.leavesPerPod + c.superSpines);
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
 * defaults fit (about 8 GiB, docs/fabric.md "Memory").
 */
export const MEMORY_BOUND_BYTES = 16 * 2 ** 30;

/**
 * What a device costs besides the part of its arena a run writes: its host objects; and, when
 * its engines run firmware (a collective's executor), per engine its translation tables and
 * translated code (assembly/engine/jit-cache.ts, outside the arena). And what a link of the
 * fabric costs as built (its tables in the core, its host objects). Measured (docs/fabric.md,
 * "Memory"): 13.7 KiB of host objects a device, its links' included, and 1.2 KiB a link
 * resident (236 bytes of it host objects); the figures keep a margin over both.
 */
const HOST_BYTES_PER_DEVICE = 64 * 2 ** 10;
const RUNNING_ENGINE_BYTES = 640 * 2 ** 10;
const FABRIC_BYTES_PER_LINK = 2 * 2 ** 10;

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
  const links = n * ports + switchLinks(t, n);
  const running = sc.collective || sc.collectives || sc.executor ? Number(config.get("engines")!) : 0;
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
 * The least host memory a traffic scenario's device gets unless its config says: one 64 KiB
 * page. Each device gets what its CQ's and QPs' rings take (host/scenario/traffic-run.ts
 * trafficSizes); the default 16 MiB went almost untouched in every arena, and 128 devices of 19
 * MiB did not fit one shared instance: each was built in an instance of its own (1.7 s for the
 * fabric bench's 128).
 */
export const TRAFFIC_HOST_MEM_BYTES = 2 ** 16;

/**
 * The least config any run of `sc` gives its devices: its devices.config with the fields a run
 * sets (schemas/scenario.schema.json, devices.config) at their smallest; a run gives its devices
 * more QPs, HBM and engines as its traffic or collective needs.
 */
export function leastConfig(sc: LeastConfigOf): Record<string, number> {
  const collective = sc.collective || sc.collectives;
  return {
    // a collective's devices have 16 engines unless their config says (host/scenario/collective.ts openCluster)
    engines: collective ? 16 : 1, ...(collective ? {} : { hostMemBytes: TRAFFIC_HOST_MEM_BYTES, hostDoorbellQueue: 16 }),
    // a traffic's devices in timing mode have HBM without bytes (host/scenario/traffic.ts)
    ...(sc.fabric.mode === "timing" && !collective ? { hbmBacking: 0 } : {}),
    ...sc.devices.config, maxQps: 4, maxCqs: 4, hbmBytes: 2 ** 20, mrtConnections: 1,
    timingMode: sc.fabric.mode === "timing" ? 1 : 0, transport: sc.transport === "metaroce" ? 1 : 0,
    ...(sc.fabric.mode === "timing" ? { txBodyBytes: 65536, rxBodyBytes: 65536 } : {}),
  };
}

/** Where a cluster's fabric and devices are built (clusterHomes). */
export interface ClusterHomes {
  /** the fabric's: the one instance every device shares with it, or the compiled core (an instance of its own) */
  fabric: WebAssembly.Module | CoreInstance;
  /** device `d`'s: an instance it shares with other devices, or the compiled core (an instance of its own) */
  device(d: number): WebAssembly.Module | CoreInstance;
  /** the instances the devices are built in */
  instances: number;
}

/**
 * Where a scenario's devices, configured like `config`, are built. When all their arenas fit
 * SHARED_INSTANCE_BYTES, in one core instance they share with their fabric (their window loop
 * then runs in the core, host/fabric/runner.ts). Otherwise in groups of consecutive devices,
 * as few as fit SHARED_INSTANCE_BYTES each and as even as can be, the fabric in an instance of
 * its own, and the host steps them: 4,096 of the fabric bench's devices, an instance each, took
 * 29 s to build (each instance growing its memory, each growth a garbage collection in V8). A
 * device whose arena alone is over half of it gets an instance of its own. Refuses first what
 * checkCluster refuses (for the whole cluster). `built`: the devices built here (a thread of a
 * run split over threads builds only its own), numbered 0 to built - 1 for `device`.
 */
export function clusterHomes(coreModule: WebAssembly.Module, sc: ClusterSizeOf, config: unknown, maxMemoryBytes?: number, sharedBytes = SHARED_INSTANCE_BYTES, built = sc.devices.count): ClusterHomes {
  const { arenaBytes } = checkCluster(coreModule, sc, config, maxMemoryBytes);
  const n = built;
  if (n * arenaBytes <= sharedBytes) {
    // grown as its devices are built: one instance grows a few times, and reserving its memory
    // at once (as for groups, below) saved no set-up time at 1,024 devices but left V8 fewer
    // occasions to collect garbage: 21 MB more JS heap at the run's peak
    const one = new CoreInstance(coreModule);
    return { fabric: one, device: () => one, instances: 1 };
  }
  const fit = Math.floor(sharedBytes / arenaBytes);
  if (fit < 2) return { fabric: coreModule, device: () => coreModule, instances: n };
  // device d is in group floor(d * groups / n): sizes differ by one at most. Each instance's
  // memory is grown for its devices at once (grown as they were built, V8 collected garbage at
  // every growth: set-up of 16,384 devices took 12.0-12.9 s of CPU, reserved 9.5-9.8 s), and
  // every instance is made before any device (V8 collects garbage for each new instance's
  // memory, cheaper while the heap holds no devices yet: 16,384 devices set up in 7.7-7.9 s,
  // against 8.3 s with each made as its first device was built)
  const groups = Math.ceil(n / fit), size = Math.ceil(n / groups) * arenaBytes;
  const made = Array.from({ length: groups }, () => new CoreInstance(coreModule, size));
  return { fabric: coreModule, device: (d) => made[Math.floor((d * groups) / n)]!, instances: groups };
}

/**
 * The scenario's fabric with its faults (in `home`: its devices' instance, or a new one),
 * `contexts`' devices as its endpoints, and the runner over them: its windows the largest
 * multiple of the devices' interleave quantum within the smallest link latency (windowFor), or
 * `windowPs` when given (a what-if: docs/fabric.md says which results may depend on it). With
 * a `partition`, `contexts` holds this thread's devices only (the others' entries are empty,
 * and so are their endpoints': the runner has them as ELSEWHERE).
 */
export function buildCluster(home: WebAssembly.Module | CoreInstance, sc: FabricOf, contexts: readonly Context[], windowPs?: number, partition?: Partition): { fabric: Fabric; endpoints: DeviceEndpoint[]; runner: ClusterRunner } {
  const topo = buildTopology(sc);
  // a payload slot fits the largest frame the devices build: their MTU, and pad and ICRC with room
  // to spare (the default at the default MTU); at an MTU of 256 a switch buffer of small frames
  // held 6 x the memory in slots of 4,608 B
  const mtu = Number(sc.devices.config.mtuBytes ?? configDefault("mtuBytes"));
  const payloadSlotBytes = mtu + (PAYLOAD_SLOT_BYTES_DEFAULT - configDefault("mtuBytes"));
  const fabric = new Fabric(home, topo, { mode: sc.fabric.mode, seed: sc.seed, payloadSlotBytes, ...(sc.fabric.switch ? { switch: sc.fabric.switch } : {}) });
  applyFaults(sc.faults, fabric, topo);
  const endpoints = contexts.map((c) => new DeviceEndpoint(c.device));
  const first = contexts.find((c) => c !== undefined);
  const quantumPs = first ? Number(first.device.config.get("interleaveQuantumPs")) : undefined;
  const stepped = Array.from(endpoints, (e): Endpoint => e ?? ELSEWHERE);
  return { fabric, endpoints, runner: new ClusterRunner(fabric, stepped, { quantumPs, ...(windowPs !== undefined ? { windowPs } : {}), ...(partition ? { partition } : {}) }) };
}

/** How a cluster's devices are made: each one's config, the config its memory is judged by, and what is done to each once open. */
export interface DevicePlan {
  /** device d's config */
  configOf(d: number): Record<string, number>;
  /** the config of its largest device: the memory bound and the shared instance are judged by it (clusterHomes) */
  sizedBy: Record<string, number>;
  /** done to each device once it is open, before the next is (load and start firmware) */
  prepare?(ctx: Context): void;
}

/** What a scenario's words set in device `d`'s config: its number, the seed, timing mode (fabric.mode), the transport and the MetaRoCE-like congestion controller (devices.congestionControl). */
export function configFromWords(sc: Pick<Scenario, "seed" | "transport"> & { devices: Pick<Scenario["devices"], "congestionControl">; fabric: Pick<Scenario["fabric"], "mode"> }, d: number): Record<string, number> {
  return {
    deviceId: d, seed: sc.seed, timingMode: sc.fabric.mode === "timing" ? 1 : 0,
    transport: sc.transport === "metaroce" ? 1 : 0, mrtCc: sc.devices.congestionControl === "nscc" ? 1 : 0,
  };
}

/** Loads the graph executor (firmware/graph/executor.c, the firmware collectives run on) into `ctx`'s device and starts its engines. */
export function startExecutor(ctx: Context, elf = executorElf()): void {
  ctx.device.start(ctx.device.loadElf(elf).entry);
}

/** How {@link openCluster} builds a cluster. */
export interface ClusterOptions {
  /**
   * Each device's engines run the graph executor, the firmware collectives run on (docs/graph.md),
   * booted as the cluster opens (its time is then where they sleep, waiting for a doorbell):
   * {@link Cluster.bind} gives them a program. Default false: the engines run nothing.
   */
  executor?: boolean;
  /**
   * The memory the devices and fabric may need: a cluster that needs more is refused before it
   * is built, with a ConfigError naming devices.count (default 16 GiB; docs/fabric.md, "Memory").
   */
  maxMemoryBytes?: number;
  /**
   * The window the cluster runs in, ps, instead of the largest multiple of the devices'
   * interleave quantum within the smallest link latency: at most that latency (docs/fabric.md,
   * "Windows").
   */
  windowPs?: number;
}

/** One end of a queue pair connection ({@link Cluster.connect}): a QP and the device it was made on. */
export interface QpEnd {
  /** The device's number (0 to count - 1). */
  device: number;
  /** A QP made by that device's context, in the RESET state. */
  qp: Qp;
}

/** How {@link Cluster.connect} connects two QPs. */
export interface ConnectOptions {
  /** The port group both ends send on. Default `SCALE_UP`. */
  portGroup?: PortGroup;
  /** The port of the group both ends send on, as an index taken modulo the group's size (QpAttr.portLane). Default: the NIC's, (QP number + destination QP number) mod the group's size. */
  portLane?: number;
}

/** How {@link Cluster.runUntil} ended: its condition held, the time limit came first, or nothing was left to happen (no device event, no frame in the fabric) with the condition still false. */
export type ClusterRunEnd = "done" | "time-limit" | "idle";

/** How {@link Cluster.trace} samples and how big its file may grow. */
export interface ClusterTraceOptions {
  /** How often the counters are sampled, ps of simulated time: at least 1 ns, rounded up to a multiple of the cluster's window (it stops there). Default 1 µs. */
  intervalPs?: number;
  /** The file's size bound in bytes (at least 1024): past it the file ends, whole, with a note of the simulated time it stopped at. Default 256 MiB; Infinity for none. */
  maxBytes?: number;
}

/** A Perfetto trace of a cluster as it runs ({@link Cluster.trace}). */
export interface ClusterTrace {
  /** Events written so far. */
  readonly events: number;
  /** The simulated time (ps) where the file's size bound cut it short; null while it has room. */
  readonly truncatedAtPs: number | null;
  /** Ends the file (the cluster stops sampling it). */
  close(): void;
}

/** The boot of the graph executor, at most (it takes a few microseconds). */
const EXECUTOR_BOOT_PS = 10_000_000_000;

/**
 * Devices on one fabric, run together in simulated time (the cluster API: README "A cluster from
 * code"). {@link openCluster} opens one from a {@link ClusterInput} — the scenario's words for the
 * devices, transport, fabric, seed and faults; each device has a verbs {@link Context}
 * ({@link Cluster.context}), {@link Cluster.connect} connects QPs of two devices across the
 * fabric, {@link Cluster.run} and {@link Cluster.runUntil} advance every device and the fabric
 * together, and {@link Cluster.capture} and {@link Cluster.trace} record pcapng and Perfetto
 * files. A scenario run builds its cluster the same way ({@link RunOptions.onBuilt} sees it).
 *
 * Advance a cluster's time with its own run, never with a context's: a device run alone would
 * send frames into the fabric's past. Work posted on a context starts at the cluster's time.
 */
export class Cluster {
  /** the transport its QPs between devices run */
  readonly transport: "rocev2" | "metaroce";
  /** the QP pairs {@link connect} connected, in order (a trace's flows) */
  private readonly pairs: { a: QpEnd; b: QpEnd }[] = [];
  private pcap: ClusterCapture | null = null;
  private tracer: ScenarioTracer | null = null;
  /** the trace's sampling interval (a multiple of the window) and its next sample, ps */
  private sampleEveryPs = 0;
  private nextSamplePs = Infinity;
  /** the engines run the graph executor (ClusterOptions.executor) */
  private executor = false;

  /** @internal Cluster.build makes it; a program opens one with {@link openCluster}. */
  constructor(
    /** Where the fabric was built: one core instance every device shares with it, or the compiled core (an instance of its own; the devices are in others: `instances`). */
    readonly home: WebAssembly.Module | CoreInstance,
    /** The devices' verbs contexts, by device number (a thread of a run split over threads holds only its own: the others' entries are empty). */
    readonly contexts: Context[],
    /** The fabric joining their ports (docs/fabric.md). */
    readonly fabric: Fabric,
    /** The devices as the runner's endpoints, by device number (a capture taps them; empty where `contexts` is). */
    readonly endpoints: DeviceEndpoint[],
    /** The window loop that advances the devices and the fabric together. */
    readonly runner: ClusterRunner,
    /** The core instances the devices are in: 1 when they share the fabric's (`home`), else their groups' or their own. */
    readonly instances = 1,
  ) {
    this.transport = contexts.find((c) => c !== undefined)?.device.config.get("transport") === 1n ? "metaroce" : "rocev2";
  }

  /**
   * @internal
   * The one way a cluster is built: `sc`'s devices, made as `plan` says, on its fabric
   * (buildCluster); refused first as clusterHomes refuses; the devices in one instance with the
   * fabric while they fit. A thread of a run split over threads (`opts.partition`) builds its
   * own devices only: `contexts` then has the others' entries empty.
   */
  static async build(coreModule: WebAssembly.Module, sc: FabricOf & ClusterSizeOf, plan: DevicePlan, opts: { maxMemoryBytes?: number; windowPs?: number; sharedInstanceBytes?: number; partition?: Partition } = {}): Promise<Cluster> {
    const n = sc.devices.count, part = opts.partition;
    const here = Array.from({ length: n }, (_, d) => d).filter((d) => !part || part.deviceThread(d, n) === part.index);
    const homes = clusterHomes(coreModule, sc, plan.sizedBy, opts.maxMemoryBytes, opts.sharedInstanceBytes, here.length);
    const contexts = new Array<Context>(n);
    for (const [k, d] of here.entries()) {
      const ctx = await Context.open(homes.device(k), plan.configOf(d));
      plan.prepare?.(ctx);
      contexts[d] = ctx;
    }
    const { fabric, endpoints, runner } = buildCluster(homes.fabric, sc, contexts, opts.windowPs, opts.partition);
    return new Cluster(homes.fabric, contexts, fabric, endpoints, runner, homes.instances);
  }

  /**
   * A cluster from `input` (what {@link openCluster} does with the package's core).
   * @param coreModule the compiled core (`await coreModule()`)
   * @param input the devices, transport, fabric, seed and faults, in the scenario's words;
   *   checked first, a ConfigError naming a bad field (`cluster.fabric.mode: ...`)
   * @param options the graph executor on the engines, a memory bound, the window
   */
  static async open(coreModule: WebAssembly.Module, input: ClusterInput, options: ClusterOptions = {}): Promise<Cluster> {
    const sc: ClusterSpec & { executor?: boolean } = { ...resolveCluster(input), executor: options.executor === true };
    const timing = sc.fabric.mode === "timing";
    // what the scenario sets from its words; in timing mode frames carry no payload, so the
    // devices' frame bodies are small unless the program says
    const configOf = (d: number) => ({ engines: 1, ...(timing ? { txBodyBytes: 65536, rxBodyBytes: 65536 } : {}), ...sc.devices.config, ...configFromWords(sc, d) });
    const elf = sc.executor ? executorElf() : null;
    const cluster = await Cluster.build(coreModule, sc, { configOf, sizedBy: configOf(0), ...(elf ? { prepare: (ctx: Context) => startExecutor(ctx, elf) } : {}) }, options);
    if (elf && cluster.bootExecutors(EXECUTOR_BOOT_PS) !== "done")
      throw new Error(`the graph executor did not boot within ${EXECUTOR_BOOT_PS / 1e9} ms on every device`);
    cluster.executor = elf !== null;
    return cluster;
  }

  /** @internal Runs until every device's engines have booted the graph executor and sleep, waiting for a doorbell, or until `untilPs`. */
  bootExecutors(untilPs: number): ClusterRunEnd {
    const runner = this.runner;
    while (!executorsReady(this.contexts)) {
      if (runner.nowPs >= untilPs) return "time-limit";
      runner.runTo(runner.nowPs + 10_000_000);
    }
    return "done";
  }

  /** How many devices. */
  get size(): number {
    return this.contexts.length;
  }

  /** Device `d`'s verbs context: its memory, protection domains, CQs, QPs, posts and polls. */
  context(d: number): Context {
    return this.contexts[this.deviceIndex(d, "context: d")]!;
  }

  /** The cluster's time, ps: every device's clock is there between two runs. */
  get nowPs(): bigint {
    return BigInt(this.runner.nowPs);
  }

  /**
   * The length of the cluster's windows, ps: it stops only at their ends, so that no frame can
   * reach a device inside the window it is running (docs/fabric.md, "Windows").
   */
  get windowPs(): number {
    return this.runner.windowPs;
  }

  /**
   * Connects QP `a.qp` of device `a.device` to QP `b.qp` of device `b.device`: each moves through
   * INIT, RTR (its destination the other: its QP number and device, so that its frames go to the
   * other device's port address across the fabric) and RTS, both on `options.portGroup` and lane.
   * Both QPs must be in RESET; nothing changes when an argument is bad (a VerbsError or RangeError).
   */
  connect(a: QpEnd, b: QpEnd, options: ConnectOptions = {}): void {
    const ends = [a, b].map((e, i) => {
      const what = `connect: ${i === 0 ? "a" : "b"}`;
      if (typeof e !== "object" || e === null) throw new VerbsError(`${what} must be { device, qp }, got ${String(e)}`);
      const ctx = this.contexts[this.deviceIndex(e.device, `${what}.device`)]!;
      const state = ctx.qpState(e.qp);
      if (state !== "RESET") throw new VerbsError(`${what}.qp: QP ${e.qp.qpn} of device ${e.device} is in ${state}, not RESET`);
      return { ctx, e };
    });
    if (a.device === b.device && a.qp === b.qp) throw new VerbsError("connect: a and b are the same QP");
    const { portGroup, portLane } = options;
    try {
      for (const state of ["INIT", "RTR", "RTS"] as const) {
        for (const [k, { ctx, e }] of ends.entries()) {
          const peer = ends[1 - k]!.e;
          if (state === "RTR") ctx.modifyQp(e.qp, { state, destQpNum: peer.qp.qpn, destDevice: peer.device, ...(portGroup !== undefined ? { portGroup } : {}), ...(portLane !== undefined ? { portLane } : {}) });
          else ctx.modifyQp(e.qp, { state });
        }
      }
    } catch (err) {
      // a bad option (a port group with no ports, a lane out of range) is found at RTR: both back
      // to RESET, where they were, with nothing posted
      for (const { ctx, e } of ends) ctx.modifyQp(e.qp, { state: "RESET" });
      throw err;
    }
    this.pairs.push({ a: { ...a }, b: { ...b } });
  }

  /**
   * Runs every device and the fabric to `untilPs` or, when that is inside a window, to the end
   * of that window ({@link windowPs}); returns the time reached. Devices with nothing to do are
   * brought to that time too, so that work posted next starts there.
   */
  run(untilPs: bigint): bigint {
    this.advance(this.timeArg(untilPs, "run: untilPs"), false);
    return this.nowPs;
  }

  /**
   * Runs in steps of `stepPs` (at least a window) until `done()` is true, checked before the first
   * step and after each (poll CQs or a collective there), until `limitPs`, or until nothing is left
   * to happen (no device event, no frame in the fabric); says which.
   */
  runUntil(done: () => boolean, limitPs: bigint, stepPs = 1_000_000n): ClusterRunEnd {
    if (typeof done !== "function") throw new RangeError(`runUntil: done must be a function, got ${typeof done}`);
    const limit = this.timeArg(limitPs, "runUntil: limitPs"), step = Math.max(this.windowPs, this.timeArg(stepPs, "runUntil: stepPs"));
    for (;;) {
      if (done()) return "done";
      if (this.runner.nowPs >= limit) return "time-limit";
      if (this.advance(Math.min(limit, this.runner.nowPs + step), true)) return done() ? "done" : "idle";
    }
  }

  /**
   * Binds a collective's program to the devices (device d runs rank d), whose engines run the
   * graph executor ({@link ClusterOptions.executor}; their config must have what
   * {@link graphDeviceConfig} says the program needs): its buffers, queue pairs (connected across
   * the fabric) and graph. Write its inputs with {@link GraphRun.write}, ring its doorbells with
   * {@link GraphRun.start}, run the cluster until {@link GraphRun.poll} says it is done, and read
   * what it made with {@link GraphRun.read}. Waits first for the engines to finish a run before
   * (at most a millisecond).
   */
  bind(program: GraphProgram, options: BindOptions = {}): GraphRun {
    if (!this.executor) throw new RangeError("bind: the devices' engines do not run the graph executor: open the cluster with { executor: true }");
    if (this.runUntil(() => executorsReady(this.contexts), this.nowPs + 1_000_000_000n) !== "done")
      throw new RangeError("bind: the engines are still running the program before");
    return bindProgram(this.contexts, program, options);
  }

  /**
   * A pcapng capture of every frame each device port sends and receives from now on, written to
   * `sink` in time order as the cluster runs (one interface per port, `dev<d>.port<p>`; host/cluster/capture.ts).
   * {@link close} writes the rest. One capture per cluster.
   */
  capture(sink: (chunk: Uint8Array) => void): ClusterCapture {
    if (this.pcap) throw new RangeError("capture: the cluster already has a capture");
    this.pcap = new ClusterCapture(new PcapngWriter(sink, "menic"));
    this.pcap.attach(this.endpoints);
    return this.pcap;
  }

  /**
   * A Perfetto trace (Chrome trace-event JSON, which ui.perfetto.dev opens) written to `sink` as
   * the cluster runs: per QP pair connected so far ({@link connect}), each direction's sending
   * rate, goodput and (RoCEv2) DCQCN rate, every switch output queue, and the MetaRoCE-like
   * paths, sampled every `options.intervalPs` (1 µs by default; the cluster stops there); as
   * `menic run --trace` writes a traffic scenario's. {@link close} ends the file. One trace per cluster.
   */
  trace(sink: (chunk: Uint8Array) => void, options: ClusterTraceOptions = {}): ClusterTrace {
    if (this.tracer) throw new RangeError("trace: the cluster already has a trace");
    const tracer = new ScenarioTracer(sink, options);
    const W = this.windowPs, ends = this.pairs.flatMap(({ a, b }) => [[a, b], [b, a]] as const);
    tracer.begin({
      fabric: this.fabric, devices: this.contexts.map((c) => c.device), transport: this.transport, messagesPerFlow: 1, stageDrops: () => this.runner.stageDrops(),
      flows: ends.map(([src, dst]) => {
        const s = this.contexts[src.device]!, r = this.contexts[dst.device]!;
        return { src: src.device, dst: dst.device, messageBytes: 0, rateGbps: () => s.qpRateGbps(src.qp), sentBytes: () => s.qpBytes(src.qp).tx, placedBytes: () => r.qpBytes(dst.qp).rx };
      }),
    });
    this.tracer = tracer;
    // samples on the window grid, where the cluster can stop
    this.sampleEveryPs = Math.ceil(tracer.intervalPs / W) * W;
    this.nextSamplePs = (Math.floor(this.runner.nowPs / this.sampleEveryPs) + 1) * this.sampleEveryPs;
    const self = this;
    return {
      get events() { return tracer.writer.events; },
      get truncatedAtPs() { return tracer.writer.truncatedAtPs; },
      close() { self.closeTrace(); },
    };
  }

  /** Writes every frame the capture holds and ends the trace file: what was recorded is whole. The cluster can still run, unrecorded. */
  close(): void {
    this.pcap?.flush();
    for (const ep of this.endpoints) ep.tap = null;
    this.pcap = null;
    this.closeTrace();
  }

  private closeTrace(): void {
    this.tracer?.sample(this.runner.nowPs);
    this.tracer?.close();
    this.tracer = null;
    this.nextSamplePs = Infinity;
  }

  /**
   * Runs to `endPs` (to the window end at or after it), or with `stopWhenIdle` until nothing is
   * left to happen; stops at each trace sample and flushes the capture on the way; brings every
   * device to the time reached. True when it stopped because all was idle.
   */
  private advance(endPs: number, stopWhenIdle: boolean): boolean {
    const runner = this.runner;
    this.contexts.forEach((ctx, d) => {
      if (ctx.nowPs > BigInt(runner.nowPs))
        throw new RangeError(`device ${d} is at ${ctx.nowPs} ps, ahead of its cluster (${runner.nowPs} ps): advance a cluster's devices with Cluster.run, not Context.run`);
    });
    let idle = false;
    while (runner.nowPs < endPs && !idle) {
      const stop = Math.min(endPs, this.nextSamplePs);
      if (stopWhenIdle) idle = runner.runUntilIdle(stop);
      else runner.runTo(stop);
      this.pcap?.flush(runner.nowPs);
      if (this.tracer && runner.nowPs >= this.nextSamplePs) {
        this.tracer.sample(runner.nowPs);
        this.nextSamplePs = (Math.floor(runner.nowPs / this.sampleEveryPs) + 1) * this.sampleEveryPs;
      }
    }
    // the runner leaves a device with nothing to do where it last acted: bring it to the
    // cluster's time (nothing happens to it on the way), so that what is posted next starts there
    const now = BigInt(runner.nowPs);
    for (const ctx of this.contexts) if (ctx.nowPs < now) ctx.run(now);
    return idle;
  }

  /** `v` as ps: a bigint from 0 to 2^53 (the cluster's clock is a double). */
  private timeArg(v: unknown, what: string): number {
    if (typeof v !== "bigint" || v < 0n || v > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError(`${what} must be a bigint of ps from 0 to 2^53, got ${typeof v === "bigint" ? `${v}n` : String(v)}`);
    return Number(v);
  }

  /** `d` as a device number, else a RangeError naming `what`. */
  private deviceIndex(d: unknown, what: string): number {
    if (!(Number.isInteger(d) && (d as number) >= 0 && (d as number) < this.contexts.length)) throw new RangeError(`${what} must be a device number from 0 to ${this.contexts.length - 1}, got ${String(d)}`);
    return d as number;
  }
}
