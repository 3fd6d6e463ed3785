// The public API both entry points share (host/index.ts for Node, host/browser.ts for browser
// bundlers): everything here runs unchanged on either platform. Each entry adds only how it
// finds the compiled core (`coreModule`, async in both) and what needs Node (`runFirmware`).
export { Device, DeviceFailedError, SnapshotError, type EngineReport, type EngineStateName, type TraceRecord, type DeviceOptions } from "./device.js";
export { ConfigError, resolveConfig, type DeviceConfig } from "./config.js";
export { ElfError, parseElf, checkImage, type ElfImage, type Segment } from "./elf.js";
export { toPerfetto, type TraceEvent } from "./trace/perfetto.js";
export {
  Context, VerbsError, encodeWqe,
  type Pd, type Mr, type Cq, type Qp, type QpInit, type SendWr, type RecvWr, type Wc, type Opcode, type QpStateName,
} from "./verbs.js";
export { runScenario, type ScenarioResult, type FlowResult, type RunOptions, type RunEnd } from "./scenario/run.js";
export { resolveScenario, type Scenario, type Flow, type Fault } from "./scenario/scenario.js";
export { formatResult } from "./scenario/report.js";
export { ClusterCapture } from "./cluster/capture.js";
export { PcapngWriter, type Direction, type InterfaceOptions } from "./wire/pcapng.js";
export { parseTime, formatTime } from "./units.js";
