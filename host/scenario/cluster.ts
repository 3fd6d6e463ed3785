// A scenario's fabric: its topology (single switch or leaf/spine, with the devices' port count)
// and its faults (loss, link and plane outages) applied to the fabric before the run; and the
// cluster of the scenario's devices on it, with the runner that drives them.

import { Fabric } from "../fabric/fabric.js";
import { ClusterRunner } from "../fabric/runner.js";
import { DeviceEndpoint } from "../cluster/endpoint.js";
import type { Context } from "../verbs.js";
import { leafSpine, singleSwitch, type Topology } from "../fabric/topology.js";
import { ConfigError, resolveConfig, memoryBytes } from "../config.js";
import { CoreInstance } from "../wasm.js";
import type { Scenario } from "./scenario.js";

/** The topology of the scenario's fabric, with the devices' port count. */
export function buildTopology(sc: Scenario): Topology {
  const t = sc.fabric.topology;
  const ports = Number(sc.devices.config.ports ?? 12);
  if (t.kind === "single-switch") return singleSwitch({ devices: sc.devices.count, ports, link: sc.fabric.hostLink });
  return leafSpine({
    devices: sc.devices.count, ports, planes: t.planes, spines: t.spines, devicesPerLeaf: t.devicesPerLeaf,
    hostLink: sc.fabric.hostLink, fabricLink: sc.fabric.fabricLink,
  });
}

export function applyFaults(sc: Scenario, fabric: Fabric, topo: Topology): void {
  sc.faults.forEach((f, i) => {
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
/** A device's arena beyond its memories (rings, tables, trace; ~2.4 MiB at the defaults), as counted against that. */
const TABLE_BYTES = 4 * 2 ** 20;

/**
 * Where a scenario's `devices` devices, configured like `config`, are built: one core instance
 * they share with their fabric when their arenas fit SHARED_INSTANCE_BYTES (their window loop
 * then runs in the core, host/fabric/runner.ts), else `coreModule` itself (an instance each;
 * the host steps them).
 */
export function clusterHome(coreModule: WebAssembly.Module, devices: number, config: unknown): WebAssembly.Module | CoreInstance {
  const perDevice = Number(memoryBytes(resolveConfig(config))) + TABLE_BYTES;
  return devices * perDevice <= SHARED_INSTANCE_BYTES ? new CoreInstance(coreModule) : coreModule;
}

/**
 * The scenario's fabric with its faults (in `home`: its devices' instance, or a new one),
 * `contexts`' devices as its endpoints, and the runner over them: its windows the largest
 * multiple of the devices' interleave quantum within the smallest link latency (windowFor), or
 * `windowPs` when given (a what-if: docs/fabric.md says which results may depend on it).
 */
export function buildCluster(home: WebAssembly.Module | CoreInstance, sc: Scenario, contexts: readonly Context[], windowPs?: number): { fabric: Fabric; endpoints: DeviceEndpoint[]; runner: ClusterRunner } {
  const topo = buildTopology(sc);
  const fabric = new Fabric(home, topo, { mode: sc.fabric.mode, seed: sc.seed, ...(sc.fabric.switch ? { switch: sc.fabric.switch } : {}) });
  applyFaults(sc, fabric, topo);
  const endpoints = contexts.map((c) => new DeviceEndpoint(c.device));
  const quantumPs = contexts.length > 0 ? Number(contexts[0]!.device.config.get("interleaveQuantumPs")) : undefined;
  return { fabric, endpoints, runner: new ClusterRunner(fabric, endpoints, { quantumPs, ...(windowPs !== undefined ? { windowPs } : {}) }) };
}
