// The browser entry point (package "menic" under the "browser" condition, or "menic/browser"):
// the core is embedded in the bundle, so a page needs one file. Same shape as host/index.ts.
import coreWasm from "../build/menic.wasm";
import type { DeviceOptions } from "./device.js";
import type { DeviceConfig } from "./config.js";
import { Cluster, type ClusterOptions } from "./scenario/cluster.js";
import type { ClusterInput } from "./scenario/scenario.js";
import { Context } from "./verbs.js";

export * from "./api.js";

let compiled: Promise<WebAssembly.Module> | undefined;

/** The compiled device core, embedded in this bundle and compiled once per page or worker. */
export function coreModule(): Promise<WebAssembly.Module> {
  return (compiled ??= WebAssembly.compile(coreWasm as Uint8Array<ArrayBuffer>));
}

/** ibv_open_device: a new device with its verbs context (`.device` is the device itself). */
export async function openDevice(config: DeviceConfig = {}, options: DeviceOptions = {}): Promise<Context> {
  return Context.open(await coreModule(), config, options);
}

/**
 * Devices on one fabric, from the scenario's words for them ({@link ClusterInput}: devices,
 * transport, fabric, seed, faults): a verbs context per device, QPs connected across the fabric,
 * time run for all of them together (README "A cluster from code").
 */
export async function openCluster(input: ClusterInput, options: ClusterOptions = {}): Promise<Cluster> {
  return Cluster.open(await coreModule(), input, options);
}
