// The Node entry point of the menic library.
export { Device, SnapshotError, type EngineReport, type TraceRecord, type DeviceOptions } from "./device.js";
export { ConfigError, resolveConfig } from "./config.js";
export { ElfError, parseElf, checkImage } from "./elf.js";
export { runFirmware, type FwRunResult, type FwRunOptions } from "./fw/run.js";
export { coreModule } from "./platform/node.js";
export { toPerfetto } from "./trace/perfetto.js";
export { Context, VerbsError, encodeWqe, type Pd, type Mr, type Cq, type Qp, type SendWr, type RecvWr, type Wc } from "./verbs.js";
export { runScenario, type ScenarioResult, type FlowResult, type RunOptions, type RunEnd } from "./scenario/run.js";
export { resolveScenario, type Scenario } from "./scenario/scenario.js";
export { formatResult } from "./scenario/report.js";
export { ClusterCapture } from "./cluster/capture.js";
export { PcapngWriter } from "./wire/pcapng.js";

import { Context } from "./verbs.js";
import { coreModule as nodeCore } from "./platform/node.js";
import type { DeviceOptions } from "./device.js";
/** ibv_open_device: a new device with the verbs context on it. */
export function openDevice(config: unknown = {}, options: DeviceOptions = {}): Promise<Context> {
  return Context.open(nodeCore(), config, options);
}
