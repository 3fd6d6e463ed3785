// The Node entry point of the menic library (package "menic" under the "node" and default
// conditions). Same shape as host/browser.ts: the shared API, an async `coreModule()` and
// `openDevice`; plus `runFirmware`, which reads the core from the package folder, and the
// served devices' client and relay (host/serve/), which use Node's sockets.

/**
 * The menic host API: an emulated accelerator's NIC, message engines and fabric, driven from
 * TypeScript. `import { ... } from "menic"` in Node; a browser bundler picks `menic/browser`,
 * which has the same API (the core embedded) except {@link runFirmware}.
 *
 * - **Verbs** (ibverbs' names): {@link openDevice} gives a {@link Context}; buffers come from
 *   {@link Context.allocHostMemory} and {@link Context.allocHbm}, their bytes through
 *   {@link Context.write} and {@link Context.read}; then protection domains, memory regions
 *   (with {@link AccessFlag} rights), CQs and QPs, {@link Context.postSend} of
 *   {@link SendWr} (RDMA WRITE, SEND, READ, and REDUCE with {@link SendWr.reduce}),
 *   {@link Context.postRecv}, {@link Context.pollCq}, and {@link Context.run} to advance time.
 *   Whole programs: `examples/verbs/` of the package (write.ts, send-recv.ts, read.ts, reduce.ts).
 * - **Devices and firmware**: {@link Device} (load an ELF, run the engines, save and restore),
 *   {@link runFirmware}, {@link toPerfetto} for traces.
 * - **Clusters**: {@link openCluster} puts devices on a fabric, in a scenario's words
 *   ({@link ClusterInput}); {@link Cluster.connect} connects QPs of two devices across it,
 *   {@link Cluster.run} and {@link Cluster.runUntil} advance them together, {@link Cluster.capture}
 *   and {@link Cluster.trace} write pcapng and Perfetto, {@link Cluster.bind} runs a collective's
 *   program ({@link allReduceRing} and the other compilers, {@link runReference} its expected
 *   result). Whole programs: `examples/verbs/two-devices.ts`, `examples/verbs/all-reduce.ts`.
 * - **Served devices** (Node): `menic serve` runs a device whose ports send and receive real UDP
 *   datagrams; {@link ServeClient} drives its verbs from another process over its control
 *   channel, and {@link Relay} joins two of them through a link that loses datagrams
 *   (docs/serve.md).
 * - **Scenarios**: {@link runScenario} runs devices on a fabric with traffic and faults
 *   ({@link ScenarioInput}; schemas/scenario.schema.json), {@link ClusterCapture} writes pcapng.
 * - **Inputs** are typed from their one source ({@link DeviceConfig}, {@link ScenarioInput},
 *   {@link ClusterInput}): a misspelt field fails to compile.
 *
 * Times are picoseconds of simulated time (bigint where they may pass 2^53). Bad arguments
 * throw an error naming them ({@link VerbsError}, {@link ConfigError}, {@link ElfError},
 * {@link SnapshotError}) before anything changes.
 *
 * @packageDocumentation
 */
import { Context } from "./verbs.js";
import { coreModule as loadCore } from "./platform/node.js";
import type { DeviceOptions } from "./device.js";
import type { DeviceConfig } from "./config.js";
import { Cluster, type ClusterOptions } from "./scenario/cluster.js";
import type { ClusterInput } from "./scenario/scenario.js";

export * from "./api.js";
export { runFirmware, type FwRunResult, type FwRunOptions, type FwEngineResult, type ConsoleLine } from "./fw/run.js";
export { ServeClient, ServeError, type ServeInfo, type ServeStats, type ServeMr, type ServeSent, type ServeAdvance } from "./serve/client.js";
export { Relay, type RelayOptions, type RelaySide, type RelayCounts } from "./serve/relay.js";
export type { UdpAddress } from "./serve/addresses.js";
export type { Location } from "./debug/symbolize.js";
export type { ProfileRow } from "./debug/profile.js";

/**
 * The compiled device core (`build/menic.wasm` of the package, or its debug build), compiled
 * once per process. Async, as in the browser, so code written for one runs on the other.
 */
export async function coreModule(flavor: "release" | "debug" = "release"): Promise<WebAssembly.Module> {
  return loadCore(flavor);
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
