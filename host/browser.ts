// The browser entry point: the core is embedded in the bundle, so a page needs one file.
import coreWasm from "../build/menic.wasm";
import type { DeviceOptions } from "./device.js";
import { Context } from "./verbs.js";

export { Device, SnapshotError, type EngineReport, type TraceRecord, type DeviceOptions } from "./device.js";
export { ConfigError } from "./config.js";
export { ElfError } from "./elf.js";
export { toPerfetto } from "./trace/perfetto.js";
export { Context, VerbsError } from "./verbs.js";
export { runScenario, type ScenarioResult, type FlowResult, type RunOptions, type RunEnd } from "./scenario/run.js";
export { resolveScenario, type Scenario } from "./scenario/scenario.js";
export { formatResult } from "./scenario/report.js";
export { ClusterCapture } from "./cluster/capture.js";
export { PcapngWriter } from "./wire/pcapng.js";

let compiled: Promise<WebAssembly.Module> | undefined;

/** The compiled core, compiled once per page. */
export function coreModule(): Promise<WebAssembly.Module> {
  return (compiled ??= WebAssembly.compile(coreWasm as Uint8Array<ArrayBuffer>));
}

/** ibv_open_device: a new device with its verbs context (`.device` is the device itself). */
export async function openDevice(config: unknown = {}, options: DeviceOptions = {}): Promise<Context> {
  return Context.open(await coreModule(), config, options);
}
