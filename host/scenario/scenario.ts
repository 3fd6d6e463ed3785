// A scenario as plain data: devices, fabric, traffic and faults, with every field's default.
// schemas/scenario.schema.json says what a scenario may hold (with a description and default for
// every field); resolveScenario checks a parsed JSON value against it with the validator
// scripts/gen-schema.mjs generates from it (ajv standalone code: no ajv at run time), fills the
// defaults, and turns it into a Scenario. An unknown or invalid field is refused with its path
// (a ConfigError), like the device config.

import { ConfigError, resolveConfig } from "../config.js";
import type { LinkSpec } from "../fabric/topology.js";
import type { GilbertElliott } from "../fabric/fabric.js";
import { resolveFabricConfig, type FabricOptions, type SwitchOptions } from "../fabric/config.js";
import { parseTime, formatTime } from "../units.js";
import { validate, validateCluster, schema } from "../generated/scenario-validate.js";
import type { TimeInput, LinkInput } from "../generated/scenario-input.js";
import { schemaError } from "./schema-errors.js";
import { parseMscclXml, checkMsccl, mscclSizeUnit, MSCCL_COLLECTIVES } from "../graph/msccl.js";
import { GraphError, DTYPE_BYTES } from "../graph/types.js";
import { resolveVerbs, resolveWorkload, type TrafficVerb, type VerbMix, type WorkloadSpec } from "./workload.js";

/** One flow of a traffic pattern: a QP pair from device `src` to device `dst`. */
export interface Flow {
  /** The sending device. */
  src: number;
  /** The receiving device. */
  dst: number;
  /**
   * With several flows per pair, the port of its group each end uses: flow k of the pair takes
   * lane src + dst + k (the NIC takes it modulo the group's size), so that a pair's flows fill
   * every port. Without it the NIC's default, (qpn + destQpn) mod size, applies: QP numbers both
   * ends hand out in step differ by a constant, so a pair's flows would use every other port.
   */
  lane?: number;
}

/** Which links a fault hits: `"all"`, `"fabric"` (leaf-spine links only) or link numbers (host links first, in (device, port) order, then fabric links). */
export type LinkSelection = number[] | "all" | "fabric";

/** Per-frame loss on links, both directions: independent and/or bursty. */
export interface LossFault {
  /** The kind of fault. */
  kind: "loss";
  /** The links that lose frames. */
  links: LinkSelection;
  /** Independent loss probability per frame. */
  random: number;
  /** Bursty loss (a two-state Gilbert-Elliott channel). */
  gilbertElliott?: GilbertElliott;
}

/** Links fail at `atPs` and recover at `untilPs` (never, if absent); frames on or for them are lost. */
export interface LinkDownFault {
  /** The kind of fault. */
  kind: "link-down";
  /** The links that fail. */
  links: LinkSelection;
  /** When they fail, ps. */
  atPs: number;
  /** When they recover, ps (default: never). */
  untilPs?: number;
}

/** Every link of one plane fails at `atPs` and recovers at `untilPs` (never, if absent). */
export interface PlaneDownFault {
  /** The kind of fault. */
  kind: "plane-down";
  /** The plane, below the topology's planes. */
  plane: number;
  /** When it fails, ps. */
  atPs: number;
  /** When it recovers, ps (default: never). */
  untilPs?: number;
  /** A plane fault names no links. */
  links?: undefined;
}

/** Loss and failures, applied in order ({@link Scenario.faults}). */
export type Fault = LossFault | LinkDownFault | PlaneDownFault;

/** Every port of every device on one switch. */
export interface SingleSwitch {
  /** The kind of topology. */
  kind: "single-switch";
}

/** Leaf/spine (Clos), every leaf linked to every spine of its plane; port p of a device is on plane p % planes. */
export interface LeafSpine {
  /** The kind of topology. */
  kind: "leaf-spine";
  /** Independent leaf/spine networks, 1 to 8. */
  planes: number;
  /** Spines per plane. */
  spines: number;
  /** Devices under each leaf. */
  devicesPerLeaf: number;
}

/**
 * Leaf/spine/super-spine (a three-tier Clos), per plane: pods of leaves and spines, every leaf
 * linked to every spine of its pod; spine j of every pod linked to every super-spine of group j.
 */
export interface ThreeTier {
  /** The kind of topology. */
  kind: "three-tier";
  /** Independent networks, 1 to 8. */
  planes: number;
  /** Devices under each leaf. */
  devicesPerLeaf: number;
  /** Leaves in each pod. */
  leavesPerPod: number;
  /** Spines in each pod. */
  spinesPerPod: number;
  /** Super-spines in each group (one group per spine index). */
  superSpines: number;
  /** Pods per plane. */
  pods: number;
}

/** A k-ary fat tree per plane: the three-tier Clos of k-port switches (k/2 devices per leaf, k/2 leaves and spines per pod, (k/2)² super-spines), as many pods as the devices fill. */
export interface FatTree {
  /** The kind of topology. */
  kind: "fat-tree";
  /** Independent networks, 1 to 8. */
  planes: number;
  /** The switches' radix, even. */
  k: number;
}

/** How a scenario's ports connect: every port on one switch, a multi-plane two-tier leaf/spine, or three tiers. */
export type Topology = SingleSwitch | LeafSpine | ThreeTier | FatTree;

/**
 * A scenario as {@link resolveScenario} returns it: checked against
 * schemas/scenario.schema.json (whose descriptions say more about every field), defaults filled
 * in, times in ps. What {@link runScenario} runs.
 */
export interface Scenario {
  /** A short name, repeated in the results. */
  name: string;
  /** The seed every random stream derives from (devices, fabric, the permutation pattern). */
  seed: number;
  /** simulated time the run may take at most, ps */
  untilPs: number;
  /** The devices, all alike, numbered 0 to count - 1. */
  devices: {
    /** How many. */
    count: number;
    /** Device config fields (docs/memory-map.md), the same for every device. */
    config: Record<string, number>;
    /** The MetaRoCE-like transport's congestion controller. */
    congestionControl: "dctcp" | "nscc";
  };
  /** The transport every QP between two devices runs: wire-exact RoCEv2 with DCQCN, or the MetaRoCE-like transport. */
  transport: "rocev2" | "metaroce";
  /** The Ethernet fabric joining the devices' ports (docs/fabric.md). */
  fabric: {
    /** `full`: payload bytes travel and land in memory; `timing`: headers and lengths only. */
    mode: "full" | "timing";
    /** How ports connect. */
    topology: Topology;
    /** Links between a device port and its switch (and every link of a single switch). */
    hostLink?: Partial<LinkSpec>;
    /** Links between leaves and spines. */
    fabricLink?: Partial<LinkSpec>;
    /** Links between spines and super-spines (three tiers). */
    superLink?: Partial<LinkSpec>;
    /** Every switch's parameters. */
    switch?: SwitchOptions;
  };
  /** Who sends to whom: QP pairs (flows) in a pattern, each posting `messages` messages of `messageBytes` at `startPs`; or an open-loop workload. */
  traffic: {
    /** `pairs`: device 2k to 2k + 1; `permutation`: a derangement drawn from the seed; `incast`: devices 1..incastSenders to device 0; `all-to-all`: every device to every other; `workload`: an open-loop workload (`workload`). */
    pattern: "pairs" | "permutation" | "incast" | "all-to-all" | "workload";
    /** The messages' verbs by weight (`verb` given: that one at weight 1; neither: WRITE). */
    verbs: VerbMix;
    /** Receives posted at each flow's receiver before it starts; absent: one per message that consumes one (SEND, WRITE_WITH_IMM). */
    receives?: number;
    /** pattern `workload`: flows arriving as a Poisson process at a target load, sizes from a CDF (docs/workloads.md). */
    workload?: WorkloadSpec;
    /** Bytes per message. */
    messageBytes: number;
    /** Messages per flow. */
    messages: number;
    /** QP pairs per (source, destination) of the pattern. With more than one, flow k of a pair uses port src + dst + k of the group (modulo its size), so that a pair's flows fill every port. */
    flowsPerPair: number;
    /** `incast`: how many devices send to device 0. */
    incastSenders: number;
    /** The port group the QPs use. */
    portGroup: "SCALE_UP" | "SCALE_OUT";
    /** When the first flow's messages are posted, ps. */
    startPs: number;
    /** flow k starts at startPs + k × staggerPs */
    staggerPs: number;
  };
  /** A collective the engines run instead of the traffic (the traffic is then its defaults, unused), or with it ({@link Scenario.background}). */
  collective?: CollectiveSpec;
  /** The scenario gave both traffic and a collective: the traffic runs beside each size of the collective, from its doorbells. */
  background?: boolean;
  /** Collectives the engines run one after another on the same devices, instead of the traffic; a `scaleUpPorts` re-splits the ports before its collective. */
  collectives?: CollectiveSpec[];
  /** Loss and failures, applied in order. */
  faults: Fault[];
}

/** A collective run by the engines (schemas/scenario.schema.json `collective`). */
export interface CollectiveSpec {
  /** The collective. */
  op: "all-reduce" | "reduce-scatter" | "all-gather" | "broadcast" | "all-to-all";
  /** all-reduce: `ring`, `halving-doubling` (devices a power of two) or `tree` (a double binary tree); the others have one each. */
  algorithm: "ring" | "halving-doubling" | "tree";
  /** Bytes per device of each run, one run per size (all-reduce and broadcast: the vector; reduce-scatter: each result; all-gather: each input; all-to-all: each block). */
  sizes: number[];
  /** Element type. */
  dtype: "f32" | "f16" | "bf16" | "i32";
  /** Reduction (all-reduce, reduce-scatter). */
  redop: "sum" | "max" | "min" | "prod";
  /** Engines per device that run it. */
  engines: number;
  /** broadcast: the device whose data every device ends with. */
  root: number;
  /** The port group its queue pairs use. */
  portGroup: "SCALE_UP" | "SCALE_OUT";
  /** RoCEv2: stripe it over every port of its group (false: one queue pair per engine and peer, its port from the QP numbers). */
  spreadPorts: boolean;
  /** Before it runs, re-split every device's ports: this many scale-up, the rest scale-out (absent: the split stays). */
  scaleUpPorts?: number;
  /** Compare every device's result with the reference executor's, bit for bit (full mode). */
  check: boolean;
  /** A matmul-like load run alongside each size, its slowdown reported (docs/compute.md). */
  interference?: InterferenceSpec;
  /** Your own algorithm instead of the compiler's, imported for each size (docs/graph.md, "Importing MSCCL algorithms"). */
  graph?: GraphSpec;
}

/**
 * A collective's graph given by the scenario ({@link CollectiveSpec.graph}): an MSCCL XML
 * algorithm, as text, or as a file that `menic run` reads relative to the scenario file
 * ({@link inlineGraphFiles} does that for a program: {@link resolveScenario} takes only text).
 */
export interface GraphSpec {
  /** The format: MSCCL's XML algorithm format. */
  format: "msccl-xml";
  /** The file, relative to the scenario file; replaced by its text before the scenario is resolved. */
  file?: string;
  /** The XML. */
  text?: string;
}

/** A matmul-like load on every device's compute grid alongside a collective (schemas/scenario.schema.json `collective.interference`, docs/compute.md). */
export interface InterferenceSpec {
  /** `engines`: the collective runs on the message engines and competes for HBM only; `gpu-style`: communication kernels also hold `commUnits` compute units while it runs. */
  mode: "engines" | "gpu-style";
  /** Tiles in the load's loop. */
  tiles: number;
  /** HBM bytes each tile reads and writes. */
  tileBytes: number;
  /** Flops per HBM byte. */
  intensity: number;
  /** gpu-style: compute units the communication kernels hold (below the device's computeUnits). */
  commUnits: number;
}

// what a user writes, typed from the schema (scripts/gen-schema.mjs)
export type { ScenarioInput, ClusterInput, FabricInput, CollectiveInput, FaultInput, LinkInput, LinksInput, TimeInput } from "../generated/scenario-input.js";

/** The traffic of a scenario that has a collective instead (nothing reads it). */
const NO_TRAFFIC: NonNullable<FilledScenario["traffic"]> = { pattern: "pairs", messageBytes: 1, messages: 1, flowsPerPair: 1, portGroup: "SCALE_UP", start: 0, stagger: 0 };


/** A fabric once the schema has filled its defaults. */
interface FilledFabric {
  mode: "full" | "timing";
  topology:
    | { kind: "single-switch" }
    | { kind: "leaf-spine"; planes: number; spines: number; devicesPerLeaf?: number }
    | { kind: "three-tier"; planes: number; devicesPerLeaf?: number; leavesPerPod: number; spinesPerPod: number; superSpines: number; pods?: number }
    | FatTree;
  hostLink: LinkInput;
  fabricLink: LinkInput;
  superLink: LinkInput;
  switch: Omit<NonNullable<FabricOptions["switch"]>, "latencyPs"> & { latency: TimeInput };
}
/** A fault once the schema has filled its defaults. */
type FilledFault =
  | { kind: "loss"; links: number[] | "all" | "fabric"; random: number; gilbertElliott?: GilbertElliott }
  | { kind: "link-down"; links: number[] | "all" | "fabric"; at: TimeInput; until?: TimeInput }
  | { kind: "plane-down"; plane: number; at: TimeInput; until?: TimeInput };

/** A scenario once the schema has passed it and filled its defaults (schemas/scenario.schema.json). */
interface FilledScenario {
  name: string;
  seed: number;
  until: TimeInput;
  devices: { count: number; config: Record<string, number>; congestionControl: "dctcp" | "nscc" };
  transport: "rocev2" | "metaroce";
  fabric: FilledFabric;
  traffic?: Omit<Scenario["traffic"], "startPs" | "staggerPs" | "incastSenders" | "verbs" | "workload"> & {
    incastSenders?: number; start: TimeInput; stagger: TimeInput; verb?: TrafficVerb; verbs?: VerbMix; workload?: Parameters<typeof resolveWorkload>[0];
  };
  collective?: CollectiveSpec;
  collectives?: CollectiveSpec[];
  faults: FilledFault[];
}

/** Checks a parsed scenario against the schema and fills its defaults; throws ConfigError naming the first bad field. */
export function resolveScenario(input: unknown, path = "scenario"): Scenario {
  const s = structuredClone(input); // the validator writes the defaults into what it checks
  if (!validate(s)) throw schemaError(validate.errors![0]!, path, schema);
  const o = s as FilledScenario;
  // what the schema cannot say: a time finer than 1 ps, the device config's own fields and
  // ranges, and the switch thresholds that depend on each other
  const count = o.devices.count;
  const given = (["traffic", "collective", "collectives"] as const).filter((k) => o[k] !== undefined);
  if (given.length === 0) throw new ConfigError(path, "needs traffic (QP pairs writing in a pattern), collective (a collective the engines run) or collectives (several, one after another)");
  // traffic beside one collective is background traffic; with anything else, one of them runs
  if (given.length > 1 && given.join() !== "traffic,collective")
    throw new ConfigError(path, given.join() === "traffic,collectives" ? "has both traffic and collectives: traffic runs beside one collective (as background traffic), not beside a sequence of them" : `has both ${given[0]} and ${given[1]}: a scenario runs one of them`);
  // every flow goes from one device to another: with one device a pattern has none (or, a
  // permutation, one to itself)
  if (o.traffic && count < 2) throw new ConfigError(`${path}.traffic.pattern`, `${o.traffic.pattern} needs at least 2 devices, and devices.count is ${count}`);
  // what a pattern would otherwise quietly leave out: the last device of an odd count, senders
  // that are not there
  if (o.traffic?.pattern === "pairs" && count % 2 !== 0)
    throw new ConfigError(`${path}.traffic.pattern`, `pairs sends from device 2k to device 2k + 1, and devices.count is ${count}: device ${count - 1} would have no partner (give an even count, or another pattern)`);
  if (o.traffic?.pattern === "incast" && o.traffic.incastSenders !== undefined && o.traffic.incastSenders > count - 1)
    throw new ConfigError(`${path}.traffic.incastSenders`, `${o.traffic.incastSenders} senders, but device 0 has ${count - 1} other device${count === 2 ? "" : "s"} to receive from (devices.count ${count}): at most ${count - 1}`);
  // (timingMode as the run sets it from fabric.mode, for the fields that depend on it)
  const cfg = resolveConfig({ engines: 1, ...o.devices.config, timingMode: o.fabric.mode === "timing" ? 1 : 0 }, `${path}.devices.config`);
  if (cfg.get("hbmBacking") === 0n && (o.collective || (o.collectives?.length ?? 0) > 0))
    throw new ConfigError(`${path}.devices.config.hbmBacking`, "0 (HBM without bytes) leaves a collective's engines no memory for their queues, buffers and graph: leave it 1");
  const ports = Number(cfg.get("ports"));
  const list = o.collective ? [{ c: o.collective, at: `${path}.collective` }] : (o.collectives ?? []).map((c, i) => ({ c, at: `${path}.collectives[${i}]` }));
  // the split each collective runs under: the config's, then each scaleUpPorts in turn; a group
  // that a collective uses must have ports then, and keep them while its queue pairs stay connected
  let up = Math.min(ports, Number(cfg.get("scaleUpPorts")));
  const used: { group: CollectiveSpec["portGroup"]; at: string }[] = [];
  for (const { c, at } of list) {
    if (c.op === "broadcast" && c.root >= count) throw new ConfigError(`${at}.root`, `device ${c.root} is not one of the ${count} devices`);
    if (c.algorithm === "tree" && c.op !== "all-reduce") throw new ConfigError(`${at}.algorithm`, "tree is an all-reduce algorithm");
    if (c.algorithm === "halving-doubling" && (c.op !== "all-reduce" || (count & (count - 1)) !== 0)) throw new ConfigError(`${at}.algorithm`, "halving-doubling is an all-reduce for a power-of-two number of devices");
    if (c.scaleUpPorts !== undefined) {
      if (c.scaleUpPorts > ports) throw new ConfigError(`${at}.scaleUpPorts`, `${c.scaleUpPorts} scale-up ports, but the devices have ${ports} (devices.config.ports)`);
      up = c.scaleUpPorts;
    }
    used.push({ group: c.portGroup, at });
    for (const u of used) {
      if ((u.group === "SCALE_UP" ? up : ports - up) > 0) continue;
      const why = u.at === at ? "" : ` (${u.at} uses it, and its queue pairs stay connected)`;
      throw new ConfigError(`${at}.${c.scaleUpPorts !== undefined ? "scaleUpPorts" : "portGroup"}`, `leaves the ${u.group === "SCALE_UP" ? "scale-up" : "scale-out"} group with no ports: ${up} of the ${ports} ports are scale-up${why}`);
    }
  }
  // the traffic's group (beside a collective, under the split the collective runs under)
  if (o.traffic && (o.traffic.portGroup === "SCALE_UP" ? up : ports - up) === 0)
    throw new ConfigError(`${path}.traffic.portGroup`, `${o.traffic.portGroup} has no ports: ${up} of the ${ports} ports are scale-up (devices.config.scaleUpPorts and devices.config.ports)`);
  for (const { c, at } of list) {
    const e = DTYPE_BYTES[c.dtype];
    c.sizes.forEach((bytes, i) => {
      if (bytes % e !== 0) throw new ConfigError(`${at}.sizes[${i}]`, `${bytes} bytes is not a whole number of ${c.dtype} elements (${e} bytes each)`);
    });
  }
  const units = Number(cfg.get("computeUnits"));
  for (const { c, at } of list) {
    if (c.interference?.mode === "gpu-style" && c.interference.commUnits >= units)
      throw new ConfigError(`${at}.interference.commUnits`, `${c.interference.commUnits} leaves the load none of the devices' ${units} compute units (devices.config.computeUnits)`);
  }
  for (const { c, at } of list) if (c.graph) checkGraph(c, count, at);
  const fabric = resolveFabric(o.fabric, count, `${path}.fabric`);
  const { start, stagger, verb, verbs, workload, ...traffic } = o.traffic ?? NO_TRAFFIC;
  if ((traffic.pattern === "workload") !== (workload !== undefined))
    throw new ConfigError(`${path}.traffic.${workload === undefined ? "workload" : "pattern"}`, workload === undefined ? "pattern workload needs a workload (its sizes, load, and flows or duration)" : `a workload needs pattern "workload", got ${JSON.stringify(traffic.pattern)}`);
  return {
    name: o.name,
    seed: o.seed,
    untilPs: time(o.until, `${path}.until`),
    devices: { count, config: o.devices.config, congestionControl: o.devices.congestionControl },
    transport: o.transport,
    fabric,
    ...(o.collective ? { collective: o.collective } : {}),
    ...(o.collectives ? { collectives: o.collectives } : {}),
    ...(o.collective && o.traffic ? { background: true } : {}),
    traffic: {
      ...traffic, incastSenders: traffic.incastSenders ?? Math.max(1, count - 1), startPs: time(start, `${path}.traffic.start`), staggerPs: time(stagger, `${path}.traffic.stagger`),
      verbs: resolveVerbs({ ...(verb !== undefined ? { verb } : {}), ...(verbs !== undefined ? { verbs } : {}) }, `${path}.traffic`),
      ...(workload ? { workload: resolveWorkload(workload, `${path}.traffic.workload`) } : {}),
    },
    faults: resolveFaults(o.faults, `${path}.faults`),
  };
}

/**
 * What a cluster opened from code is ({@link resolveCluster}): a scenario's devices, transport,
 * fabric, seed and faults, checked and with their defaults, as a {@link Scenario} has them.
 */
export type ClusterSpec = Pick<Scenario, "seed" | "devices" | "transport" | "fabric" | "faults">;

/**
 * Checks what a program opens as a cluster (schemas/scenario.schema.json `$defs/cluster`: the
 * scenario's fields, by reference) and fills its defaults, as {@link resolveScenario} does a
 * scenario's: the same field means the same thing and is refused the same way, a ConfigError
 * naming it under `path`.
 */
export function resolveCluster(input: unknown, path = "cluster"): ClusterSpec {
  const s = structuredClone(input); // the validator writes the defaults into what it checks
  if (!validateCluster(s)) throw schemaError(validateCluster.errors![0]!, path, schema);
  const o = s as Pick<FilledScenario, "seed" | "devices" | "transport" | "fabric" | "faults">;
  const count = o.devices.count;
  resolveConfig({ engines: 1, ...o.devices.config }, `${path}.devices.config`);
  return {
    seed: o.seed,
    devices: { count, config: o.devices.config, congestionControl: o.devices.congestionControl },
    transport: o.transport,
    fabric: resolveFabric(o.fabric, count, `${path}.fabric`),
    faults: resolveFaults(o.faults, `${path}.faults`),
  };
}

/** A time as the schema allows it, in ps; one finer than 1 ps is a ConfigError at `at`. */
function time(v: TimeInput, at: string): number {
  if (typeof v === "number") return v;
  try { return Number(parseTime(v)); } catch (e) { throw new ConfigError(at, (e as Error).message); }
}

/** A link's rate and latency in ps, the latency in the range host/fabric/topology.ts holds a link to. */
function resolveLink(l: LinkInput, at: string): Partial<LinkSpec> {
  if (l.latency === undefined) return l.gbps !== undefined ? { gbps: l.gbps } : {};
  const latencyPs = time(l.latency, `${at}.latency`);
  if (latencyPs < 1 || latencyPs > 1e12) throw new ConfigError(`${at}.latency`, `must be from 1 ps to 1 s, got ${formatTime(latencyPs)}`);
  return { ...(l.gbps !== undefined ? { gbps: l.gbps } : {}), latencyPs };
}

/** The fabric of `count` devices, checked past the schema (times, links, switch thresholds that depend on each other), at `path`. */
function resolveFabric(f: FilledFabric, count: number, path: string): Scenario["fabric"] {
  const { latency, ...sw } = f.switch;
  const switchOpts: FabricOptions["switch"] = { ...sw, latencyPs: time(latency, `${path}.switch.latency`) };
  prefixed(path, () => resolveFabricConfig({ switch: switchOpts }));
  const topo = f.topology;
  return {
    mode: f.mode,
    topology: resolveTopology(topo, count, `${path}.topology`),
    hostLink: resolveLink(f.hostLink, `${path}.hostLink`),
    fabricLink: resolveLink(f.fabricLink, `${path}.fabricLink`),
    superLink: resolveLink(f.superLink, `${path}.superLink`),
    switch: switchOpts,
  };
}

/** The topology of `count` devices with its defaults: devices per leaf (the count, at most 16); a three-tier's pods (as many as the devices fill, checked); a fat tree's k large enough. */
function resolveTopology(t: FilledFabric["topology"], count: number, path: string): Topology {
  if (t.kind === "single-switch" || t.kind === "fat-tree") {
    if (t.kind === "fat-tree") {
      if (t.k % 2 !== 0) throw new ConfigError(`${path}.k`, `must be even, got ${t.k}`);
      if (count > (t.k * t.k * t.k) / 4) throw new ConfigError(`${path}.k`, `a ${t.k}-ary fat tree holds at most k³/4 = ${(t.k * t.k * t.k) / 4} devices, the scenario has ${count}`);
    }
    return t;
  }
  const devicesPerLeaf = t.devicesPerLeaf ?? Math.min(count, 16);
  if (t.kind === "leaf-spine") return { ...t, devicesPerLeaf };
  const needed = Math.ceil(Math.ceil(count / devicesPerLeaf) / t.leavesPerPod);
  if (t.pods !== undefined && t.pods < needed)
    throw new ConfigError(`${path}.pods`, `${t.pods} pods of ${t.leavesPerPod} leaves of ${devicesPerLeaf} devices hold ${t.pods * t.leavesPerPod * devicesPerLeaf}, the scenario has ${count} devices: at least ${needed}`);
  return { ...t, devicesPerLeaf, pods: t.pods ?? needed };
}

/** The faults with their times in ps, each outage ending after it starts, at `path`. */
function resolveFaults(faults: readonly FilledFault[], path: string): Fault[] {
  return faults.map((f, i): Fault => {
    const at = `${path}[${i}]`;
    if (f.kind === "loss") return f;
    const when = { atPs: time(f.at, `${at}.at`), ...(f.until !== undefined ? { untilPs: time(f.until, `${at}.until`) } : {}) };
    if (when.untilPs !== undefined && when.untilPs <= when.atPs)
      throw new ConfigError(`${at}.until`, `must come after at (${formatTime(when.atPs)}), got ${formatTime(when.untilPs)}`);
    return f.kind === "link-down" ? { kind: f.kind, links: f.links, ...when } : { kind: f.kind, plane: f.plane, ...when };
  });
}

/**
 * Replaces every collective's `graph.file` in a scenario (parsed JSON, not yet resolved) by the
 * file's text, read with `read` (the CLI reads relative to the scenario file). Returns a copy;
 * what `read` throws is thrown as a ConfigError naming the field.
 */
export function inlineGraphFiles(input: unknown, read: (file: string) => string): unknown {
  const s = structuredClone(input) as { collective?: unknown; collectives?: unknown };
  if (typeof s !== "object" || s === null) return s;
  const inline = (c: unknown, at: string) => {
    const g = (c as { graph?: Record<string, unknown> } | null)?.graph;
    if (typeof g !== "object" || g === null || typeof g.file !== "string") return;
    try {
      g.text = read(g.file);
    } catch (e) {
      throw new ConfigError(`${at}.graph.file`, `${g.file}: ${(e as Error).message}`);
    }
    delete g.file;
  };
  inline(s.collective, "scenario.collective");
  if (Array.isArray(s.collectives)) s.collectives.forEach((c, i) => inline(c, `scenario.collectives[${i}]`));
  return s;
}

/** A collective's graph (of the collective at `collectiveAt`): text (not a file left unread) that parses, for this op, these devices, engines and sizes. */
function checkGraph(c: CollectiveSpec, devices: number, collectiveAt: string): void {
  const g = c.graph!, at = `${collectiveAt}.graph`;
  if (g.file !== undefined) throw new ConfigError(`${at}.file`, `${JSON.stringify(g.file)} is not read here: menic run reads it relative to the scenario file; through the API give the XML as text, or call inlineGraphFiles first`);
  if (g.text === undefined || g.text.trim() === "") throw new ConfigError(at, "needs file or text (the MSCCL XML)");
  let a;
  try {
    a = parseMscclXml(g.text);
  } catch (e) {
    if (e instanceof GraphError) throw new ConfigError(`${at}.text`, e.message);
    throw e;
  }
  if (MSCCL_COLLECTIVES[a.coll] !== c.op) throw new ConfigError(`${at}.text`, `the algorithm "${a.name}" is an ${a.coll} (coll="${a.coll}"), the collective a${c.op === "all-reduce" || c.op === "all-gather" || c.op === "all-to-all" ? "n" : ""} ${c.op}`);
  if (a.ngpus !== devices) throw new ConfigError(`${at}.text`, `the algorithm "${a.name}" is for ${a.ngpus} gpus (ngpus="${a.ngpus}"), the scenario has ${devices} devices`);
  // a size the algorithm cannot cut into its chunks is the size's fault, not the algorithm's
  const unit = mscclSizeUnit(a, c.dtype);
  c.sizes.forEach((bytes, i) => {
    if (bytes % unit !== 0)
      throw new ConfigError(`${collectiveAt}.sizes[${i}]`, `${bytes} bytes is not a multiple of ${unit}, what the algorithm "${a.name}" of graph.text needs (nchunksperloop="${a.nchunksperloop}" chunks of whole ${c.dtype} elements${a.coll === "allreduce" ? "" : `, of ${a.ngpus} x the size`})`);
  });
  c.sizes.forEach((bytes, i) => {
    try {
      checkMsccl(a, { bytes, dtype: c.dtype, engines: c.engines });
    } catch (e) {
      if (e instanceof GraphError) throw new ConfigError(`${at}.text`, `at sizes[${i}] (${bytes} bytes): ${e.message}`);
      throw e;
    }
  });
}

/** Runs `check`, giving a ConfigError it throws the path `prefix` (its own path, if any, after a dot). */
function prefixed(prefix: string, check: () => void): void {
  try {
    check();
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    throw new ConfigError(e.path ? `${prefix}.${e.path}` : prefix, e.message.slice(e.path.length + 2));
  }
}
