// `menic fw run`: load one ELF into every engine of a device, run to the end or a time limit,
// and report each engine. Used by the CLI, the GDB stub's run (host/fw/gdb.ts), the tests and
// the benchmarks. The run itself is platform-free (host/fw/session.ts, which the page's worker
// uses too); this adds where Node finds the core.

import type { Device } from "../device.js";
import { coreModule } from "../platform/node.js";
import { runFirmwareOn, startFirmwareOn, type FwRunOptions, type FwRunResult } from "./session.js";

export { report, finishFirmware, DEFAULT_UNTIL_PS, type FwRunOptions, type FwRunResult, type FwEngineResult, type ConsoleLine } from "./session.js";

/**
 * Loads one RV32 ELF image into every engine of a new device (Node: the package's core), starts
 * them all at its entry and runs until every engine has exited or faulted, or until the limit.
 * A bad image throws ElfError, a bad config ConfigError, before anything runs.
 */
export async function runFirmware(elf: Uint8Array, opts: FwRunOptions = {}): Promise<FwRunResult> {
  return runFirmwareOn(coreModule(opts.core), elf, opts);
}

/** A device as `opts` configures it, with `elf` loaded into every engine and the engines started. */
export async function startFirmware(elf: Uint8Array, opts: FwRunOptions): Promise<Device> {
  return startFirmwareOn(coreModule(opts.core), elf, opts);
}
