// The Node entry point of the menic library.
export { Device, type EngineReport, type TraceRecord, type DeviceOptions } from "./device.js";
export { ConfigError, resolveConfig } from "./config.js";
export { ElfError, parseElf, checkImage } from "./elf.js";
export { runFirmware, type FwRunResult, type FwRunOptions } from "./fw/run.js";
export { coreModule } from "./platform/node.js";
export { toPerfetto } from "./trace/perfetto.js";
