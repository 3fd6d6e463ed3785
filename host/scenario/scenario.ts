// A scenario as plain data: devices, fabric, traffic and faults, with every field's default.
// schemas/scenario.schema.json says what a scenario may hold (with a description and default for
// every field); resolveScenario checks a parsed JSON value against it with the validator
// scripts/gen-schema.mjs generates from it (ajv standalone code: no ajv at run time), fills the
// defaults, and turns it into a Scenario. An unknown or invalid field is refused with its path
// (a ConfigError), like the device config.

import { ConfigError, resolveConfig } from "../config.js";
import type { LinkSpec } from "../fabric/topology.js";
import type { GilbertElliott } from "../fabric/fabric.js";
import { resolveFabricConfig, type FabricOptions } from "../fabric/config.js";
import { parseTime } from "../units.js";
import { validate, schema } from "../generated/scenario-validate.js";
import { schemaError } from "./schema-errors.js";

export interface Flow { src: number; dst: number }

export type Fault =
  | { kind: "loss"; links: number[] | "all" | "fabric"; random: number; gilbertElliott?: GilbertElliott }
  | { kind: "link-down"; links: number[] | "all" | "fabric"; atPs: number; untilPs?: number }
  | { kind: "plane-down"; plane: number; atPs: number; untilPs?: number; links?: undefined };

export interface Scenario {
  name: string;
  seed: number;
  /** simulated time the run may take at most, ps */
  untilPs: number;
  devices: { count: number; config: Record<string, number>; congestionControl: "dctcp" | "nscc" };
  transport: "rocev2" | "metaroce";
  fabric: {
    mode: "full" | "timing";
    topology: { kind: "single-switch" } | { kind: "leaf-spine"; planes: number; spines: number; devicesPerLeaf: number };
    hostLink?: Partial<LinkSpec>;
    fabricLink?: Partial<LinkSpec>;
    switch?: FabricOptions["switch"];
  };
  traffic: {
    pattern: "pairs" | "permutation" | "incast" | "all-to-all";
    messageBytes: number;
    messages: number;
    flowsPerPair: number;
    incastSenders: number;
    portGroup: "SCALE_UP" | "SCALE_OUT";
    startPs: number;
    /** flow k starts at startPs + k × staggerPs */
    staggerPs: number;
  };
  /** a collective the engines run instead of the traffic (the traffic is then its defaults, unused) */
  collective?: CollectiveSpec;
  faults: Fault[];
}

/** A collective run by the engines (schemas/scenario.schema.json `collective`). */
export interface CollectiveSpec {
  op: "all-reduce" | "reduce-scatter" | "all-gather" | "broadcast" | "all-to-all";
  algorithm: "ring" | "halving-doubling";
  sizes: number[];
  dtype: "f32" | "f16" | "bf16" | "i32";
  redop: "sum" | "max" | "min" | "prod";
  engines: number;
  root: number;
  portGroup: "SCALE_UP" | "SCALE_OUT";
  check: boolean;
}

/** The traffic of a scenario that has a collective instead (nothing reads it). */
const NO_TRAFFIC: NonNullable<ScenarioInput["traffic"]> = { pattern: "pairs", messageBytes: 1, messages: 1, flowsPerPair: 1, portGroup: "SCALE_UP", start: 0, stagger: 0 };


/** A time as the schema allows it: "10us", "2.5 ms", or whole ps. */
type TimeInput = string | number;
interface LinkInput { gbps?: number; latency?: TimeInput }
type FaultInput =
  | { kind: "loss"; links: number[] | "all" | "fabric"; random: number; gilbertElliott?: GilbertElliott }
  | { kind: "link-down"; links: number[] | "all" | "fabric"; at: TimeInput; until?: TimeInput }
  | { kind: "plane-down"; plane: number; at: TimeInput; until?: TimeInput };

/** A scenario once the schema has passed it and filled its defaults (schemas/scenario.schema.json). */
interface ScenarioInput {
  name: string;
  seed: number;
  until: TimeInput;
  devices: { count: number; config: Record<string, number>; congestionControl: "dctcp" | "nscc" };
  transport: "rocev2" | "metaroce";
  fabric: {
    mode: "full" | "timing";
    topology: { kind: "single-switch" } | { kind: "leaf-spine"; planes: number; spines: number; devicesPerLeaf?: number };
    hostLink: LinkInput;
    fabricLink: LinkInput;
    switch: Omit<NonNullable<FabricOptions["switch"]>, "latencyPs"> & { latency: TimeInput };
  };
  traffic?: Omit<Scenario["traffic"], "startPs" | "staggerPs" | "incastSenders"> & { incastSenders?: number; start: TimeInput; stagger: TimeInput };
  collective?: CollectiveSpec;
  faults: FaultInput[];
}

/** Checks a parsed scenario against the schema and fills its defaults; throws ConfigError naming the first bad field. */
export function resolveScenario(input: unknown, path = "scenario"): Scenario {
  const s = structuredClone(input); // the validator writes the defaults into what it checks
  if (!validate(s)) throw schemaError(validate.errors![0]!, path, schema);
  const o = s as ScenarioInput;
  // what the schema cannot say: a time finer than 1 ps, the device config's own fields and
  // ranges, and the switch thresholds that depend on each other
  const time = (v: TimeInput, at: string): number => {
    if (typeof v === "number") return v;
    try { return Number(parseTime(v)); } catch (e) { throw new ConfigError(at, (e as Error).message); }
  };
  const count = o.devices.count;
  if (!o.traffic && !o.collective) throw new ConfigError(path, "needs traffic (QP pairs writing in a pattern) or collective (a collective the engines run)");
  if (o.traffic && o.collective) throw new ConfigError(path, "has both traffic and collective: a scenario runs one of them");
  const c = o.collective;
  if (c?.op === "broadcast" && c.root >= count) throw new ConfigError(`${path}.collective.root`, `device ${c.root} is not one of the ${count} devices`);
  if (c?.algorithm === "halving-doubling" && (c.op !== "all-reduce" || (count & (count - 1)) !== 0)) throw new ConfigError(`${path}.collective.algorithm`, "halving-doubling is an all-reduce for a power-of-two number of devices");
  resolveConfig({ engines: 1, ...o.devices.config }, `${path}.devices.config`);
  const link = (l: LinkInput, at: string): Partial<LinkSpec> => ({
    ...(l.gbps !== undefined ? { gbps: l.gbps } : {}),
    ...(l.latency !== undefined ? { latencyPs: time(l.latency, `${at}.latency`) } : {}),
  });
  const { latency, ...sw } = o.fabric.switch;
  const switchOpts: FabricOptions["switch"] = { ...sw, latencyPs: time(latency, `${path}.fabric.switch.latency`) };
  prefixed(`${path}.fabric`, () => resolveFabricConfig({ switch: switchOpts }));
  const topo = o.fabric.topology;
  const { start, stagger, ...traffic } = o.traffic ?? NO_TRAFFIC;
  return {
    name: o.name,
    seed: o.seed,
    untilPs: time(o.until, `${path}.until`),
    devices: { count, config: o.devices.config, congestionControl: o.devices.congestionControl },
    transport: o.transport,
    fabric: {
      mode: o.fabric.mode,
      topology: topo.kind === "single-switch" ? topo : { ...topo, devicesPerLeaf: topo.devicesPerLeaf ?? Math.min(count, 16) },
      hostLink: link(o.fabric.hostLink, `${path}.fabric.hostLink`),
      fabricLink: link(o.fabric.fabricLink, `${path}.fabric.fabricLink`),
      switch: switchOpts,
    },
    ...(o.collective ? { collective: o.collective } : {}),
    traffic: { ...traffic, incastSenders: traffic.incastSenders ?? Math.max(1, count - 1), startPs: time(start, `${path}.traffic.start`), staggerPs: time(stagger, `${path}.traffic.stagger`) },
    faults: o.faults.map((f, i): Fault => {
      const at = `${path}.faults[${i}]`;
      if (f.kind === "loss") return f;
      const when = { atPs: time(f.at, `${at}.at`), ...(f.until !== undefined ? { untilPs: time(f.until, `${at}.until`) } : {}) };
      return f.kind === "link-down" ? { kind: f.kind, links: f.links, ...when } : { kind: f.kind, plane: f.plane, ...when };
    }),
  };
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
