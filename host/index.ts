// The Node entry point of the menic library (package "menic" under the "node" and default
// conditions). Same shape as host/browser.ts: the shared API, an async `coreModule()` and
// `openDevice`; plus `runFirmware`, which reads the core from the package folder.
import { Context } from "./verbs.js";
import { coreModule as loadCore } from "./platform/node.js";
import type { DeviceOptions } from "./device.js";

export * from "./api.js";
export { runFirmware, type FwRunResult, type FwRunOptions, type FwEngineResult } from "./fw/run.js";

/**
 * The compiled device core (`build/menic.wasm` of the package, or its debug build), compiled
 * once per process. Async, as in the browser, so code written for one runs on the other.
 */
export async function coreModule(flavor: "release" | "debug" = "release"): Promise<WebAssembly.Module> {
  return loadCore(flavor);
}

/** ibv_open_device: a new device with its verbs context (`.device` is the device itself). */
export async function openDevice(config: unknown = {}, options: DeviceOptions = {}): Promise<Context> {
  return Context.open(await coreModule(), config, options);
}
