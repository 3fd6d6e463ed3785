// One firmware run, platform-free: a device with one ELF in every engine, run to the end or a
// time limit and reported. `menic fw run` (host/fw/run.ts adds where Node finds the core) runs
// it at once or in slices; the page (web/worker.ts) steps a FirmwareSession in slices of
// simulated time on the interleave grid, showing each as it goes. Slices on the grid give the
// same run as one uninterrupted step (ARCHITECTURE.md, "The device event loop").

import { Device, type EngineReport, type TraceRecord } from "../device.js";
import { Symbolizer, type Location } from "../debug/symbolize.js";
import { explainFault } from "../debug/fault.js";
import { backtrace } from "../debug/backtrace.js";
import { ConfigError } from "../config.js";
import { profileByFunction, type ProfileRow } from "../debug/profile.js";
import { formatInsn, DEFAULT_LOG_LIMIT } from "../debug/insn-log.js";

/** How a firmware run (`runFirmware`, `menic fw run`) builds the device and runs it. */
export interface FwRunOptions {
  /** Device config fields (docs/memory-map.md); the defaults for the rest (16 engines). */
  config?: Record<string, number | bigint | string>;
  /** Simulated-time limit in ps (default 1 s). */
  untilPs?: number | bigint;
  /** Keep the core's trace records (`FwRunResult.trace`, for `toPerfetto`). */
  collectTrace?: boolean;
  /** Each console line as drained, with the simulated time (ps) its first byte was printed. */
  onConsoleLine?: (engine: number, line: string, timePs: bigint) => void;
  /** The order onConsoleLine sees lines in: "engine" (default: per engine, per drain) or "time" (DeviceOptions). */
  consoleOrder?: "engine" | "time";
  /** Which build of the core: `release` (default) or `debug` (assertions on). */
  core?: "release" | "debug";
  /** Profile cycles per function (config profile = 1; host/debug/profile.ts): `FwRunResult.profile`. */
  profile?: boolean;
  /**
   * Log each instruction of these engines (all when `engines` is absent) as a line (host/debug/insn-log.ts),
   * up to `limit` lines (default 100000): `FwRunResult.insnLog`. Engines are then interpreted, one
   * instruction per call, with the same results.
   */
  insnLog?: {
    /** the engines logged (all when absent) */
    engines?: number[];
    /** the most lines kept (default 100000) */
    limit?: number;
  };
  /** Called between slices of the run with the time reached and the instructions all engines have run. */
  onProgress?: (nowPs: bigint, instructions: number) => void;
  /**
   * Awaited between slices of the run: when it gives true the run stops where it is
   * (`FwRunResult.stopped`). The run yields to the caller's event loop only here.
   */
  shouldStop?: () => boolean | Promise<boolean>;
}

/** One engine at the end of a firmware run: its report, console and, when it did not exit, where it is. */
/** A line an engine printed, and the simulated time its first byte was printed. */
export interface ConsoleLine {
  /** when its first byte was printed, ps (a bigint from Device.consoleLines) */
  timePs: number;
  /** the line, without its newline */
  text: string;
}

export interface FwEngineResult extends EngineReport {
  /** What the engine printed, up to the device's console cap (1 MiB by default). */
  console: string;
  /** `console` as lines, each with the simulated time (ps) its first byte was printed. */
  consoleLines: ConsoleLine[];
  /** Console bytes printed beyond the cap: not in `console` (onConsoleLine saw them). */
  consoleDropped: number;
  /** Where a faulted, running or sleeping engine is: its pc with function and (for -g images) file and line. */
  where?: Location;
  /** What a fault means (NULL pointer dereference, stack overflow on engine N, or the cause's name). */
  fault?: string;
  /** A faulted engine's call chain, innermost first: #0 the pc, then each caller at its call (host/debug/backtrace.ts). */
  backtrace?: Location[];
}

/** What a firmware run did (`runFirmware`; `menic fw run --json` prints it). */
export interface FwRunResult {
  /** The device time at the end, ps: when the last engine stopped, or the limit. */
  timePs: number;
  /** True when every engine exited with code 0. */
  ok: boolean;
  /** Every engine, by index. */
  engines: FwEngineResult[];
  /** The device's statistics ({@link Device.stats}). */
  stats: Record<string, number>;
  /** With `collectTrace`: the trace records. */
  trace?: TraceRecord[];
  /** With `profile`: self cycles per function, summed over engines, most first. */
  profile?: ProfileRow[];
  /** With `insnLog`: the log's lines, and the instructions it saw in all (more than the lines when the limit stopped it). */
  insnLog?: {
    /** one line per instruction logged, in the order they ran (`--log insn`'s lines) */
    lines: string[];
    /** the instructions of the logged engines that ran, those past the limit included */
    total: number;
    /** the most lines it keeps (`--log-limit`) */
    limit: number;
  };
  /** True when `shouldStop` ended the run early (absent otherwise). */
  stopped?: true;
}

export const DEFAULT_UNTIL_PS = 1_000_000_000_000n;

/**
 * Loads one RV32 ELF image into every engine of a new device (Node: the package's core), starts
 * them all at its entry and runs until every engine has exited or faulted, or until the limit.
 * A bad image throws ElfError, a bad config ConfigError, before anything runs.
 */
export async function runFirmwareOn(module: WebAssembly.Module, elf: Uint8Array, opts: FwRunOptions = {}): Promise<FwRunResult> {
  const dev = await startFirmwareOn(module, elf, opts);
  const untilPs = BigInt(opts.untilPs ?? DEFAULT_UNTIL_PS);
  const { t, stopped } = opts.onProgress || opts.shouldStop ? await runInSlices(dev, untilPs, opts) : { t: dev.run(untilPs), stopped: false };
  const r = finishFirmware(dev, elf, t, opts);
  if (stopped) r.stopped = true;
  return r;
}

/** A device as `opts` configures it, with `elf` loaded into every engine and the engines started. */
export async function startFirmwareOn(module: WebAssembly.Module, elf: Uint8Array, opts: FwRunOptions): Promise<Device> {
  const config = opts.profile ? { ...opts.config, profile: 1 } : opts.config ?? {};
  const dev = await Device.create(module, config, {
    collectTrace: opts.collectTrace,
    onConsoleLine: opts.onConsoleLine,
    consoleOrder: opts.consoleOrder,
  });
  const img = dev.loadElf(elf);
  if (opts.insnLog) {
    const beyond = opts.insnLog.engines?.find((e) => !(Number.isInteger(e) && e >= 0 && e < dev.engines));
    if (beyond !== undefined) throw new ConfigError("--log insn", `engine ${beyond} is not one of the device's engines 0-${dev.engines - 1}`);
    dev.startInsnLog(opts.insnLog.engines ?? Array.from({ length: dev.engines }, (_, i) => i), opts.insnLog.limit ?? DEFAULT_LOG_LIMIT);
  }
  dev.start(img.entry);
  return dev;
}

/** The result of a run of `elf` that ended at `t`: the report, with the profile when asked. */
export function finishFirmware(dev: Device, elf: Uint8Array, t: bigint, opts: FwRunOptions): FwRunResult {
  dev.flushConsole();
  const symbols = Symbolizer.fromElf(elf);
  const r = report(dev, t, symbols);
  if (opts.insnLog) {
    const { records, total } = dev.insnLog();
    r.insnLog = { lines: records.map(formatInsn), total, limit: opts.insnLog.limit ?? DEFAULT_LOG_LIMIT };
  }
  if (opts.profile) r.profile = profileByFunction(Array.from({ length: dev.engines }, (_, i) => dev.profileTable(i)!), symbols);
  return r;
}

/** Host time a slice of a sliced run aims at: the caller sees progress and Ctrl-C this often. */
const SLICE_WALL_MS = 50;

/**
 * `dev.run(untilPs)` cut into slices that end on multiples of the interleave quantum, which
 * leaves the run identical to an uninterrupted one (ARCHITECTURE.md, time model), with the
 * caller asked between slices whether to stop. A slice's length follows the host time the
 * last one took, so where the cuts fall depends on the host, and nothing else does.
 */
async function runInSlices(dev: Device, untilPs: bigint, opts: FwRunOptions): Promise<{ t: bigint; stopped: boolean }> {
  const quantumPs = dev.config.get("interleaveQuantumPs")!;
  let quanta = 16;
  let t = dev.nowPs;
  while (t < untilPs && !dev.allStopped()) {
    if (opts.shouldStop && (await opts.shouldStop())) return { t, stopped: true };
    const end = (t / quantumPs + BigInt(quanta)) * quantumPs;
    const w0 = performance.now();
    t = dev.run(end < untilPs ? end : untilPs);
    const ms = performance.now() - w0;
    quanta = Math.max(1, Math.min(quanta * 4, Math.round((quanta * SLICE_WALL_MS) / Math.max(ms, 1))));
    if (opts.onProgress) {
      let instructions = 0;
      for (let i = 0; i < dev.engines; i++) instructions += dev.engine(i).instructions;
      opts.onProgress(t, instructions);
    }
  }
  return { t, stopped: false };
}

/** A firmware run the caller advances step by step (the page's worker: web/slices.ts). */
export class FirmwareSession {
  /** The simulated time reached. */
  nowPs = 0n;

  private constructor(
    readonly device: Device,
    readonly untilPs: bigint,
    private readonly elf: Uint8Array,
    private readonly opts: FwRunOptions,
  ) {}

  /** A device with `elf` loaded into every engine and started; throws ConfigError or ElfError on bad input. */
  static async open(module: WebAssembly.Module, elf: Uint8Array, opts: FwRunOptions = {}): Promise<FirmwareSession> {
    return new FirmwareSession(await startFirmwareOn(module, elf, opts), BigInt(opts.untilPs ?? DEFAULT_UNTIL_PS), elf, opts);
  }

  /** True once every engine has stopped or the time limit is reached. */
  get done(): boolean {
    return this.nowPs >= this.untilPs || this.device.allStopped();
  }

  /**
   * Runs to `untilPs` (capped at the run's limit), or less if every engine stops first. Stops
   * on multiples of the config's interleaveQuantumPs keep the run equal to an uninterrupted one.
   */
  runTo(untilPs: bigint): bigint {
    this.nowPs = this.device.run(untilPs < this.untilPs ? untilPs : this.untilPs);
    return this.nowPs;
  }

  /** The report of the run so far (every console line handed out first). */
  finish(): FwRunResult {
    return finishFirmware(this.device, this.elf, this.nowPs, this.opts);
  }
}

/** The result of a run so far: each engine's state, and where the ones that did not finish are. */
export function report(dev: Device, t: bigint, symbols: Symbolizer = Symbolizer.none): FwRunResult {
  const engines: FwEngineResult[] = [];
  for (let i = 0; i < dev.engines; i++) {
    const e: FwEngineResult = {
      ...dev.engine(i), console: dev.console(i),
      consoleLines: dev.consoleLines(i).map((l) => ({ timePs: Number(l.timePs), text: l.text })), consoleDropped: dev.consoleDropped(i),
    };
    if (e.state === "faulted" || e.state === "running" || e.state === "sleeping") e.where = symbols.locate(e.pc);
    if (e.state === "faulted") {
      e.fault = explainFault({ engine: i, mcause: e.mcause!, mtval: e.mtval!, sp: dev.reg(i, 2), nullGuardBytes: dev.nullGuardBytes });
      e.backtrace = backtrace({
        pc: e.pc, ra: dev.reg(i, 1), fp: dev.reg(i, 8), word: (a) => dev.sramWord(i, a), nullGuardBytes: dev.nullGuardBytes, sramBytes: dev.sramBytes,
      }, symbols);
    }
    engines.push(e);
  }
  return {
    timePs: Number(t),
    ok: engines.every((e) => e.state === "exited" && e.exitCode === 0),
    engines,
    stats: dev.stats(),
    trace: dev.traceRecords.length ? dev.traceRecords : undefined,
  };
}
