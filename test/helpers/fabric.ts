// Fabric tests' common setup: a fabric, one synthetic endpoint per device, a runner.
import { coreModule } from "../../host/platform/node.js";
import { Fabric, ClusterRunner, SyntheticEndpoint, type Topology, type SyntheticFlow, type FabricOptions, type RunnerOptions } from "../../host/fabric/index.js";

export interface ClusterOptions {
  fabric?: FabricOptions;
  runner?: RunnerOptions;
  /** log every arrival at every endpoint */
  log?: boolean;
  /** read arrivals' headers (CE counts) */
  inspect?: boolean;
  /** port rate of the synthetic endpoints (default: the topology's host link rate); per device if a function */
  gbps?: number | ((d: number) => number);
}

/** A cluster of synthetic endpoints, device d sending flows[d]. */
export function cluster(topo: Topology, flows: (d: number) => SyntheticFlow[], o: ClusterOptions = {}) {
  const fabric = new Fabric(coreModule(), topo, o.fabric);
  const hostGbps = topo.links.find((l) => l.tier === "host")!.gbps;
  const endpoints = Array.from({ length: topo.devices }, (_, d) => new SyntheticEndpoint({
    device: d, ports: topo.ports, flows: flows(d), gbps: (typeof o.gbps === "function" ? o.gbps(d) : o.gbps) ?? hostGbps, log: o.log, inspect: o.inspect,
    overheadBytes: fabric.config.frameOverheadBytes, full: fabric.config.mode === "full",
  }));
  const runner = new ClusterRunner(fabric, endpoints, o.runner);
  return { fabric, endpoints, runner };
}

/** Serialisation time of a frame of `wireLen` bytes with 24 bytes of overhead at `gbps`, in ps (by hand: bits / (Gb/s) = ns). */
export const serPs = (wireLen: number, gbps: number) => Math.ceil(((wireLen + 24) * 8 * 1000) / gbps);

/** Wire length of a synthetic frame with `payload` bytes: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + payload + pad + ICRC 4. */
export const frameLen = (payload: number) => 54 + payload + ((4 - (payload & 3)) & 3) + 4;
