// A scenario as plain data: devices, fabric, traffic and faults, with every field's default.
// resolveScenario checks a parsed JSON value and fills the defaults; an unknown or invalid
// field is refused with its path (a ConfigError), like the device config.

import { ConfigError } from "../config.js";
import type { LinkSpec } from "../fabric/topology.js";
import type { GilbertElliott } from "../fabric/fabric.js";
import type { FabricOptions } from "../fabric/config.js";
import { parseTime } from "../units.js";

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
  devices: { count: number; config: Record<string, number> };
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
  };
  faults: Fault[];
}

type Obj = Record<string, unknown>;

function obj(v: unknown, path: string): Obj {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new ConfigError(path, `must be an object, got ${JSON.stringify(v)}`);
  return v as Obj;
}

function known(o: Obj, path: string, keys: string[]): void {
  for (const k of Object.keys(o)) if (!keys.includes(k)) throw new ConfigError(`${path}.${k}`, `unknown field (known: ${keys.join(", ")})`);
}

function int(v: unknown, path: string, lo: number, hi: number, dflt?: number): number {
  if (v === undefined && dflt !== undefined) return dflt;
  if (typeof v !== "number" || !Number.isInteger(v) || v < lo || v > hi) throw new ConfigError(path, `must be an integer in [${lo}, ${hi}], got ${JSON.stringify(v)}`);
  return v;
}

function prob(v: unknown, path: string): number {
  if (typeof v !== "number" || !(v >= 0 && v < 1)) throw new ConfigError(path, `must be in [0, 1), got ${JSON.stringify(v)}`);
  return v;
}

function time(v: unknown, path: string, dflt?: number): number {
  if (v === undefined && dflt !== undefined) return dflt;
  if (typeof v === "number" && Number.isInteger(v) && v >= 0) return v;
  if (typeof v === "string") {
    try { return Number(parseTime(v)); } catch { /* the message below says what is wanted */ }
  }
  throw new ConfigError(path, `must be a time like "10us" or a whole number of ps, got ${JSON.stringify(v)}`);
}

function oneOf<T extends string>(v: unknown, path: string, options: readonly T[], dflt?: T): T {
  if (v === undefined && dflt !== undefined) return dflt;
  if (typeof v !== "string" || !options.includes(v as T)) throw new ConfigError(path, `must be one of ${options.join(", ")}, got ${JSON.stringify(v)}`);
  return v as T;
}

function link(v: unknown, path: string): Partial<LinkSpec> | undefined {
  if (v === undefined) return undefined;
  const o = obj(v, path);
  known(o, path, ["gbps", "latencyPs", "latency"]);
  return {
    ...(o.gbps !== undefined ? { gbps: int(o.gbps, `${path}.gbps`, 1, 100_000) } : {}),
    ...(o.latencyPs !== undefined || o.latency !== undefined ? { latencyPs: time(o.latencyPs ?? o.latency, `${path}.latency`) } : {}),
  };
}

function links(v: unknown, path: string): number[] | "all" | "fabric" {
  if (v === undefined || v === "all") return "all";
  if (v === "fabric") return "fabric";
  if (!Array.isArray(v)) throw new ConfigError(path, `must be "all", "fabric" or a list of link numbers, got ${JSON.stringify(v)}`);
  return v.map((x, i) => int(x, `${path}[${i}]`, 0, 1 << 30));
}

/** Checks a parsed scenario and fills its defaults; throws ConfigError naming the first bad field. */
export function resolveScenario(input: unknown, path = "scenario"): Scenario {
  const o = obj(input, path);
  known(o, path, ["$schema", "name", "description", "seed", "until", "devices", "fabric", "traffic", "faults"]);
  const dev = obj(o.devices, `${path}.devices`);
  known(dev, `${path}.devices`, ["count", "config"]);
  const config = dev.config === undefined ? {} : obj(dev.config, `${path}.devices.config`);
  for (const [k, v] of Object.entries(config)) if (typeof v !== "number") throw new ConfigError(`${path}.devices.config.${k}`, `must be a number, got ${JSON.stringify(v)}`);
  const fab = obj(o.fabric ?? {}, `${path}.fabric`);
  known(fab, `${path}.fabric`, ["mode", "topology", "hostLink", "fabricLink", "switch"]);
  const topo = obj(fab.topology ?? { kind: "single-switch" }, `${path}.fabric.topology`);
  const kind = oneOf(topo.kind, `${path}.fabric.topology.kind`, ["single-switch", "leaf-spine"] as const);
  known(topo, `${path}.fabric.topology`, kind === "single-switch" ? ["kind"] : ["kind", "planes", "spines", "devicesPerLeaf"]);
  const tr = obj(o.traffic, `${path}.traffic`);
  known(tr, `${path}.traffic`, ["pattern", "messageBytes", "messages", "flowsPerPair", "incastSenders", "portGroup", "start"]);
  const faults = o.faults === undefined ? [] : o.faults;
  if (!Array.isArray(faults)) throw new ConfigError(`${path}.faults`, "must be a list");
  const count = int(dev.count, `${path}.devices.count`, 1, 65536);
  return {
    name: typeof o.name === "string" ? o.name : "scenario",
    seed: int(o.seed, `${path}.seed`, 0, 2 ** 32 - 1, 1),
    untilPs: time(o.until, `${path}.until`, 1_000_000_000_000),
    devices: { count, config: config as Record<string, number> },
    fabric: {
      mode: oneOf(fab.mode, `${path}.fabric.mode`, ["full", "timing"] as const, "full"),
      topology: kind === "single-switch" ? { kind } : {
        kind, planes: int(topo.planes, `${path}.fabric.topology.planes`, 1, 8, 1), spines: int(topo.spines, `${path}.fabric.topology.spines`, 1, 4096, 1),
        devicesPerLeaf: int(topo.devicesPerLeaf, `${path}.fabric.topology.devicesPerLeaf`, 1, 65536, Math.min(count, 16)),
      },
      hostLink: link(fab.hostLink, `${path}.fabric.hostLink`),
      fabricLink: link(fab.fabricLink, `${path}.fabric.fabricLink`),
      switch: fab.switch === undefined ? undefined : (obj(fab.switch, `${path}.fabric.switch`) as FabricOptions["switch"]),
    },
    traffic: {
      pattern: oneOf(tr.pattern, `${path}.traffic.pattern`, ["pairs", "permutation", "incast", "all-to-all"] as const),
      messageBytes: int(tr.messageBytes, `${path}.traffic.messageBytes`, 1, 1 << 30, 1 << 20),
      messages: int(tr.messages, `${path}.traffic.messages`, 1, 4096, 1),
      flowsPerPair: int(tr.flowsPerPair, `${path}.traffic.flowsPerPair`, 1, 256, 1),
      incastSenders: int(tr.incastSenders, `${path}.traffic.incastSenders`, 1, 65535, Math.max(1, count - 1)),
      portGroup: oneOf(tr.portGroup, `${path}.traffic.portGroup`, ["SCALE_UP", "SCALE_OUT"] as const, "SCALE_UP"),
      startPs: time(tr.start, `${path}.traffic.start`, 0),
    },
    faults: faults.map((f, i): Fault => {
      const at = `${path}.faults[${i}]`;
      const fo = obj(f, at);
      const k = oneOf(fo.kind, `${at}.kind`, ["loss", "link-down", "plane-down"] as const);
      if (k === "loss") {
        known(fo, at, ["kind", "links", "random", "gilbertElliott"]);
        const ge = fo.gilbertElliott === undefined ? undefined : obj(fo.gilbertElliott, `${at}.gilbertElliott`);
        if (ge) known(ge, `${at}.gilbertElliott`, ["pGoodToBad", "pBadToGood", "lossGood", "lossBad"]);
        return {
          kind: k, links: links(fo.links, `${at}.links`), random: fo.random === undefined ? 0 : prob(fo.random, `${at}.random`),
          ...(ge ? { gilbertElliott: {
            pGoodToBad: prob(ge.pGoodToBad, `${at}.gilbertElliott.pGoodToBad`), pBadToGood: prob(ge.pBadToGood, `${at}.gilbertElliott.pBadToGood`),
            ...(ge.lossGood !== undefined ? { lossGood: prob(ge.lossGood, `${at}.gilbertElliott.lossGood`) } : {}),
            ...(ge.lossBad !== undefined ? { lossBad: Number(ge.lossBad) } : {}),
          } } : {}),
        };
      }
      if (k === "link-down") {
        known(fo, at, ["kind", "links", "at", "until"]);
        return { kind: k, links: links(fo.links, `${at}.links`), atPs: time(fo.at, `${at}.at`), ...(fo.until !== undefined ? { untilPs: time(fo.until, `${at}.until`) } : {}) };
      }
      known(fo, at, ["kind", "plane", "at", "until"]);
      return { kind: k, plane: int(fo.plane, `${at}.plane`, 0, 7), atPs: time(fo.at, `${at}.at`), ...(fo.until !== undefined ? { untilPs: time(fo.until, `${at}.until`) } : {}) };
    }),
  };
}
