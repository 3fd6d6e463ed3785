// One emulated accelerator, driven from the host: owns a wasm instance of the core, loads
// images, advances time, drains the rings the core fills (console, trace), and saves/restores
// the whole device state as bytes. Platform-neutral: the wasm module is handed in.

import { instantiateCore, jitCompileMs, CoreInstance, type MenicExports } from "./wasm.js";
import { resolveConfig, packConfig, arenaTooLarge, instanceFull, hbmDataBytes, type DeviceConfig } from "./config.js";
import { parseElf, checkImage, placeSegment, type ElfImage } from "./elf.js";
import { EngineConsole, TimeOrderedLines } from "./console.js";
import { PROFILE_ENTRY_BYTES } from "./debug/profile.js";
import { INSN_RECORD_BYTES, MAX_LOG_LIMIT, readInsnRecords, type InsnRecord } from "./debug/insn-log.js";
import { writeSnapshot, readSnapshot, SnapshotError } from "./snapshot.js";
import { checkSplit, decodeBlocker, PortSplitError, type PortGroups, type PortSplitBlocker } from "./port-groups.js";
import { REGIONS, STAT_NAMES, TRACE_POINTS, LAYOUT_HASH, ENGINE_STATE, FLOW_CLASS, TRACE_RECORD, FATAL, STEP, MRT_PATH, PATH_STATE } from "./generated/layouts.js";

export { SnapshotError } from "./snapshot.js";

/**
 * What a message engine is doing: `idle` (never started), `running`, `sleeping` (in `wfi`,
 * until an interrupt), `exited` (wrote its exit code) or `faulted` (took a trap with no handler).
 */
export type EngineStateName = Lowercase<keyof typeof ENGINE_STATE>;

/** One path of a MetaRoCE-like connection now (layouts/device.json MRT_PATH; docs/protocol.md). */
export interface MetarocePath {
  /** the connection's index on this device */
  conn: number;
  /** the device at the other end */
  peer: number;
  /** the path's index within its connection */
  path: number;
  /** the port of this device it leaves by */
  port: number;
  /** active, suspect (after a timeout) or failed (probed until it answers) */
  state: Lowercase<keyof typeof PATH_STATE>;
  /** congestion window, bytes */
  cwndBytes: number;
  /** bytes sent on it and not yet acknowledged */
  inflightBytes: number;
  /** smoothed RTT, ps (0: no sample yet) */
  srttPs: number;
  /** retransmission timeout now, ps */
  rtoPs: number;
  /** the receiver's rate hint for this path, Gb/s (0: none yet) */
  hintGbps: number;
  /** retransmission timeouts it has taken */
  rtos: number;
  /** how many times it has been brought back after failing (its packets carry it) */
  epoch: number;
}
/** A statistic's index in the core's table, by name (layouts/stats.json). */
const STAT_INDEX = new Map(STAT_NAMES.map((name, i) => [name, i]));
const PATH_STATE_NAMES = Object.fromEntries(Object.entries(PATH_STATE).map(([k, v]) => [v, k.toLowerCase()])) as Record<number, MetarocePath["state"]>;
const STATE_NAMES = Object.fromEntries(Object.entries(ENGINE_STATE).map(([k, v]) => [v, k.toLowerCase()])) as Record<number, EngineStateName>;

/** One message engine as it is now ({@link Device.engine}). */
export interface EngineReport {
  /** Its index, 0..engines-1. */
  id: number;
  /** What it is doing. */
  state: EngineStateName;
  /** The code it exited with (`exited` only; else null). */
  exitCode: number | null;
  /** Its program counter. */
  pc: number;
  /** The trap cause of its fault (`faulted` only; else null): RISC-V mcause. */
  mcause: number | null;
  /** The faulting address or instruction (`faulted` only; else null): RISC-V mtval. */
  mtval: number | null;
  /** Instructions it has retired. */
  instructions: number;
  /** Engine clock cycles it has spent, asleep included (its mcycle). */
  cycles: number;
  /** Simulated time it has spent asleep in `wfi`, ps. */
  sleepPs: number;
}

/** One trace point the core recorded ({@link DeviceOptions.collectTrace}; layouts/device.json TRACE_POINTS). */
export interface TraceRecord {
  /** When, ps of device time. */
  timePs: bigint;
  /** Which point: `engine.start`, `engine.sleep`, `engine.wake`, `engine.trap`, `engine.mret`, `engine.exit`, `engine.fault`, `engine.call`, `engine.ret`, `nic.doorbell`, `nic.wqe_start`, `nic.wqe_done` or `nic.cqe`. */
  point: string;
  /** The engine it concerns (for NIC points, the QP's owner). */
  engine: number;
  /** The point's argument: an exit code, a trap cause, a pc, a QP number (see layouts/device.json). */
  arg: number;
}

/** HBM bytes served so far to each class of traffic ({@link Device.hbmServed}). */
export interface HbmServed {
  /** NIC DMA: request sources and destinations in HBM. */
  nic: number;
  /** The reduction blocks: REDUCE sources and destinations. */
  reduce: number;
  /** Compute: the constant-demand generator ({@link Device.setComputeLoad}) and the matmul grid's tile loads ({@link Device.startMatmul}). */
  compute: number;
}

/** A matmul-like load for the device's compute grid ({@link Device.startMatmul}, docs/compute.md). */
export interface MatmulLoad {
  /** Tiles in the loop. */
  tiles: number;
  /** HBM bytes each tile reads and writes. */
  tileBytes: number;
  /** Arithmetic intensity: flops per HBM byte (a tile computes tileBytes x intensity flops). */
  intensity: number;
}

/** Where the compute grid's load is ({@link Device.matmul}); times in ps. */
export interface MatmulState {
  /** Tiles of the load (0: none started). */
  tiles: number;
  /** Tiles computed. */
  tilesDone: number;
  /** When it started. */
  startPs: number;
  /** When its last tile was computed, or null while it runs. */
  endPs: number | null;
  /** Time the units spent computing. */
  computePs: number;
  /** Time they waited for a tile's load with nothing to compute. */
  stallPs: number;
}

/** Device.restore's options: a device's, and the engines' execution mode to continue in. */
export interface RestoreOptions extends DeviceOptions {
  /** 0: interpret, 1: translate hot code (config field `jit`); default: as the snapshot was taken */
  jit?: number;
}

/** What the engines' JIT (config field `jit`) has done on a device: Device.jitStats(). */
export interface JitStats {
  /** regions of hot code translated into wasm functions */
  translated: number;
  /** times the translation cache was full and emptied */
  flushes: number;
  /** times an engine's translations were dropped because its SRAM changed under them */
  invalidations: number;
  /** wasm bytes generated */
  bytes: number;
  /** translations the host could not compile (a page's main thread compiles at most 4 KiB synchronously), or too large for the core's emit buffer: that code is interpreted */
  compileFailures: number;
  /** host milliseconds spent compiling them (all devices of this core instance) */
  compileMs: number;
  /** calls into translated code (each runs until it jumps out of its region, leaves an instruction to the interpreter, or the window ends) */
  calls: number;
  /** calls that ended with a jump out of the region (the run loop looks for the translation there) */
  jumpsOut: number;
  /** calls that left an instruction to the interpreter (MMIO, a misaligned or faulting access, a store into translated code, ...) */
  sideExits: number;
  /** instructions retired in translated code (the rest of the engines' `minstret` the interpreter retired) */
  instructions: number;
}

/** How a {@link Device} (or a verbs Context) treats what the core reports. */
export interface DeviceOptions {
  /** Keep trace records (drained from the core after every step) in `traceRecords`. */
  collectTrace?: boolean;
  /**
   * Called with each complete console line of an engine and the simulated time (ps) its first
   * byte was printed: every line, however much the device keeps for `console(i)`; a line over
   * 64 Ki characters arrives in pieces (each with the line's time).
   */
  onConsoleLine?: (engine: number, line: string, timePs: bigint) => void;
  /**
   * The order onConsoleLine sees lines in: "engine" (default) as drained after each step, all
   * of engine 0's, then engine 1's, ...; "time" in simulated-time order across engines (ties:
   * engine, then order printed), each line given once nothing still to come can precede it.
   */
  consoleOrder?: "engine" | "time";
  /**
   * Console bytes kept per engine for `console(i)` (default 1 MiB); later bytes are dropped
   * and counted (`consoleDropped(i)`), so a firmware print loop cannot exhaust host memory.
   */
  consoleKeepBytes?: number;
  /**
   * With config `jit` 1: the landings on a block start (a jump or branch target, or where a
   * window starts) that translate it, 1 to 255; default 255. 1 translates code where it first
   * lands, so every block that runs runs translated (the tests that hold the translator to the
   * interpreter use it). A speed setting, not a config field: results are the same whatever it
   * is, and a snapshot does not hold it.
   */
  jitHot?: number;
  /**
   * Engines run ahead of their window while what they run touches only their own registers and
   * SRAM (default true; docs/engine.md, "Run-ahead"). A speed setting, not a config field:
   * results are the same either way. It holds for every device of the core instance (a cluster's
   * devices share one).
   */
  runAhead?: boolean;
}

/** What run-ahead has done in a device's core instance (all its devices): Device.aheadStats(). */
export interface AheadStats {
  /** times an engine went on past its window's end */
  runs: number;
  /** instructions the engines retired ahead of their windows */
  instructions: number;
  /** times an engine ahead was put back and run again, because the NIC reached its SRAM */
  settles: number;
}

const SCRATCH_BYTES = 64 * 1024;
const CONSOLE_KEEP_BYTES = 1024 * 1024;

/** Throws a RangeError naming the argument unless `v` is an integer in [lo, hi]. */
function checkInt(name: string, v: number, lo: number, hi: number): number {
  if (!Number.isInteger(v) || v < lo || v > hi) throw new RangeError(`${name} must be an integer in [${lo}, ${hi}], got ${v}`);
  return v;
}

/** The core's "nothing will ever happen": u64 max. */
const NEVER_PS = (1n << 64n) - 1n;

/** A line an engine printed (Device.consoleLines). */
export interface DeviceConsoleLine {
  /** when its first byte was printed, ps */
  timePs: bigint;
  /** the line, without its newline */
  text: string;
}

/** What each FATAL reason means, for DeviceFailedError's message. */
const FATAL_TEXT: Record<string, string> = {
  EVENT_OVERFLOW: "its event queue overflowed (an event was lost; sched.overflow counts it)",
  MRT_RECORD_OVERWRITE: "a MetaRoCE-like path was to send into the record slot of a packet still in flight (a bug in the transport: that packet's loss would have gone unseen)",
};

/** The device failed inside the core and runs no more (FATAL in layouts/device.json). */
export class DeviceFailedError extends Error {
  constructor(
    /** The core's reason (FATAL): 1 the event queue overflowed; 2 a MetaRoCE-like path was to overwrite the record of a packet in flight. */
    readonly code: number,
    /** When, ps of device time. */
    readonly atPs: bigint,
  ) {
    const why = Object.entries(FATAL).find(([, v]) => v === code)?.[0] ?? `code ${code}`;
    super(`the device failed at ${atPs} ps: ${FATAL_TEXT[why] ?? why}`);
    this.name = "DeviceFailedError";
  }
}

/**
 * One emulated accelerator: its message engines, NIC, memories and their clock, in a wasm
 * instance of the core. Load an image ({@link loadElf}), {@link start} the engines and
 * {@link run}; read what they did ({@link engine}, {@link console}, {@link stats}); save the
 * whole state as bytes and restore it ({@link save}, {@link Device.restore}). Verbs: a
 * `Context` on it ({@link Context.of}, or `openDevice`).
 */
export class Device {
  /** Message engines (config `engines`). */
  readonly engines: number;
  /** SRAM bytes of each engine (config `sramBytes`). */
  readonly sramBytes: number;
  /** HBM bytes (config `hbmBytes`): its addresses. */
  readonly hbmBytes: number;
  /** HBM bytes that hold data: `hbmBytes`, or none when config `hbmBacking` is 0 (timing mode: addresses without bytes). */
  readonly hbmDataBytes: number;
  /** Bytes at address 0 of every engine that fault when touched, to catch NULL pointers (config `nullGuardBytes`). */
  readonly nullGuardBytes: number;
  /** The trace records drained so far, with {@link DeviceOptions.collectTrace}. */
  readonly traceRecords: TraceRecord[] = [];
  private readonly consoles: EngineConsole[] = [];
  /** With consoleOrder "time": the lines drained and not yet given to onConsoleLine. */
  private readonly ordered: TimeOrderedLines | null = null;
  private u8!: Uint8Array;
  private insnLogBuf = 0; // startInsnLog's buffer in the core's memory
  private insnLogCap = 0;

  private constructor(
    /** @internal the core's exports, for the verbs layer (host/verbs.ts) */
    readonly core: MenicExports,
    /** @internal this device's handle in the core */
    readonly handle: number,
    private readonly scratch: number,
    /** Every config field's value, defaults filled in (docs/memory-map.md). */
    readonly config: Map<string, bigint>,
    private readonly options: DeviceOptions,
  ) {
    this.engines = Number(config.get("engines"));
    this.sramBytes = Number(config.get("sramBytes"));
    this.hbmBytes = Number(config.get("hbmBytes"));
    this.hbmDataBytes = Number(hbmDataBytes(config));
    this.nullGuardBytes = Number(config.get("nullGuardBytes"));
    const keep = checkInt("consoleKeepBytes", options.consoleKeepBytes ?? CONSOLE_KEEP_BYTES, 0, 2 ** 31);
    const onLine = options.onConsoleLine;
    if (options.consoleOrder !== undefined && options.consoleOrder !== "engine" && options.consoleOrder !== "time")
      throw new RangeError(`consoleOrder must be "engine" or "time", got ${String(options.consoleOrder)}`);
    const ordered = onLine && options.consoleOrder === "time" ? new TimeOrderedLines((l) => onLine(l.engine, l.text, l.timePs)) : null;
    this.ordered = ordered;
    for (let i = 0; i < this.engines; i++) {
      const toReader = ordered ? (text: string, timePs: bigint) => ordered.add({ engine: i, timePs, text })
        : onLine && ((text: string, timePs: bigint) => onLine(i, text, timePs));
      this.consoles.push(new EngineConsole(keep, toReader));
    }
    this.refreshView();
  }

  /**
   * Creates a device from the core's compiled module and a (partial) config; throws ConfigError.
   * Given a {@link CoreInstance} instead of a module, the device is built in that instance,
   * beside the others there (a cluster's devices and its fabric: host/scenario/cluster.ts);
   * throws RangeError, building nothing, when the instance's 4 GiB have no room left for it.
   */
  static async create(module: WebAssembly.Module | CoreInstance, config: DeviceConfig = {}, options: DeviceOptions = {}): Promise<Device> {
    return Device.open(module, resolveConfig(config), options);
  }

  private static async open(module: WebAssembly.Module | CoreInstance, cfg: Map<string, bigint>, options: DeviceOptions): Promise<Device> {
    const core = module instanceof CoreInstance ? module.exports : await instantiateCore(module);
    if (core.layoutHash() >>> 0 !== LAYOUT_HASH)
      throw new Error(`the device core was built from other layouts (0x${(core.layoutHash() >>> 0).toString(16)}, host has 0x${LAYOUT_HASH.toString(16)}): run npm run build`);
    const slots = packConfig(cfg);
    const cfgPtr = core.configAlloc() >>> 0;
    new BigUint64Array(core.memory.buffer, cfgPtr, slots.length).set(slots);
    const handle = core.create(cfgPtr);
    // the core refuses a device larger than its heap's largest block, or one its instance's
    // 4 GiB cannot hold beside the devices already in it (a CoreInstance shared by many)
    if (handle === 0) throw core.createRefusal() === 2 ? instanceFull(core.memory, core.arenaBytesFor(cfgPtr) >>> 0) : arenaTooLarge(cfg);
    const scratch = core.scratchAlloc(SCRATCH_BYTES) >>> 0;
    const dev = new Device(core, handle, scratch, cfg, options);
    dev.applyJitHot();
    return dev;
  }

  /** Hands options.jitHot to the JIT's cache (again after Device.restore switched `jit` on). */
  private applyJitHot(): void {
    const hot = this.options.jitHot;
    if (hot !== undefined) this.core.jitSetHot(this.handle, checkInt("jitHot", hot, 1, 255));
    if (this.options.runAhead !== undefined) this.core.aheadEnable(this.options.runAhead ? 1 : 0);
  }

  /** Views of wasm memory go stale when it grows; every access goes through a fresh one. */
  private refreshView(): Uint8Array {
    if (!this.u8 || this.u8.buffer !== this.core.memory.buffer) this.u8 = new Uint8Array(this.core.memory.buffer);
    return this.u8;
  }

  /** The device time, ps. */
  get nowPs(): bigint {
    return this.core.now(this.handle);
  }

  /** Parses, checks and loads an ELF image; throws ElfError before touching memory if it is bad. */
  loadElf(bytes: Uint8Array): ElfImage {
    const img = parseElf(bytes);
    checkImage(img, this.sramBytes, this.hbmDataBytes, this.nullGuardBytes);
    this.loadImage(img);
    return img;
  }

  /** Loads SRAM segments into every engine's SRAM and HBM segments once into HBM. */
  loadImage(img: ElfImage): void {
    const mem = this.refreshView();
    img.segments.forEach((s, i) => {
      const where = placeSegment(s, this.sramBytes, this.hbmDataBytes, i);
      const targets =
        where === "sram"
          ? Array.from({ length: this.engines }, (_, e) => (this.core.sramPtr(this.handle, e) >>> 0) + (s.vaddr - REGIONS.SRAM.base))
          : [(this.core.hbmPtr(this.handle) >>> 0) + (s.vaddr - REGIONS.HBM.base)];
      for (const at of targets) {
        mem.fill(0, at, at + s.memsz);
        mem.set(s.data, at);
      }
    });
  }

  /** Starts engines [0, count) at `entry` (an engine faults by itself on a bad address). */
  start(entry: number, count = this.engines): void {
    checkInt("entry", entry, 0, 0xffffffff);
    checkInt("count", count, 0, this.engines);
    for (let i = 0; i < count; i++) this.core.startEngine(this.handle, i, entry);
    this.drain();
  }

  /** The core does not check engine indices: one past the table is another record's memory. */
  private engineIndex(i: number): number {
    return checkInt("engine", i, 0, this.engines - 1);
  }

  /**
   * One call into the core: time advances to exactly `untilPs` (earlier only when a ring wants
   * draining, or with STEP.STOP_WHEN_QUIESCENT once nothing can ever happen again), then the
   * rings are drained. Throws DeviceFailedError if the device failed.
   */
  step(untilPs: bigint, flags = 0): bigint {
    const t = this.core.step(this.handle, untilPs, flags);
    this.afterStep();
    return t;
  }

  /**
   * @internal What follows every step into the core: the rings drained, and DeviceFailedError
   * if the device failed. The cluster's window loop in the core asks for it when a device it
   * stepped has output or has failed (host/fabric/runner.ts).
   */
  afterStep(): void {
    this.drain();
    const why = this.core.fatal(this.handle);
    if (why !== FATAL.NONE) throw new DeviceFailedError(why, this.nowPs);
  }

  /** @internal True when the host must look at the device after every step, output or not (a time-ordered console). */
  get readsEveryStep(): boolean {
    return this.ordered !== null;
  }

  /**
   * @internal Port `port`'s link partner paused it by PFC (true: it starts no frame) or let it go
   * (false), from `atPs`: the cluster runner tells it so from the fabric (docs/fabric.md, "PFC and devices").
   */
  portPaused(port: number, paused: boolean, atPs: number): void {
    this.core.portPaused(this.handle, port, paused ? 1 : 0, BigInt(Math.ceil(atPs)));
  }

  /** When something next happens in the device (ps): now while an engine runs; null when nothing ever will. */
  get nextActivityPs(): bigint | null {
    const t = BigInt.asUintN(64, this.core.nextActivityPs(this.handle));
    return t === NEVER_PS ? null : t;
  }

  /** Runs until `untilPs` or until no engine is running or asleep and nothing else is pending. Returns the device time. */
  run(untilPs: bigint): bigint {
    let t = this.nowPs;
    while (t < untilPs && !this.allStopped()) t = this.step(untilPs, STEP.STOP_WHEN_QUIESCENT);
    return t;
  }

  /** Advances time to exactly `untilPs` whatever the engines do (NIC work runs without them). Returns the device time. */
  advance(untilPs: bigint): bigint {
    let t = this.nowPs;
    while (t < untilPs) t = this.step(untilPs);
    return t;
  }

  /** True when no engine is running or asleep (each is idle, exited or faulted). */
  allStopped(): boolean {
    for (let i = 0; i < this.engines; i++) {
      const s = this.core.engineState(this.handle, i);
      if (s === ENGINE_STATE.RUNNING || s === ENGINE_STATE.SLEEPING) return false;
    }
    return true;
  }

  /** Engine `i` as it is now; a RangeError for an index outside 0..engines-1. */
  engine(i: number): EngineReport {
    this.engineIndex(i);
    const c = this.core, h = this.handle;
    const state = STATE_NAMES[c.engineState(h, i)];
    return {
      id: i,
      state,
      exitCode: state === "exited" ? c.engineExitCode(h, i) >>> 0 : null,
      pc: c.enginePc(h, i) >>> 0,
      mcause: state === "faulted" ? c.engineMcause(h, i) >>> 0 : null,
      mtval: state === "faulted" ? c.engineMtval(h, i) >>> 0 : null,
      instructions: Number(c.engineInstret(h, i)),
      cycles: Number(c.engineCycles(h, i)),
      sleepPs: Number(c.engineSleepPs(h, i)),
    };
  }

  /** Integer register `x<r>` (0..31) of engine `engine`, as an unsigned 32-bit value. */
  reg(engine: number, r: number): number {
    return this.core.engineReg(this.handle, this.engineIndex(engine), checkInt("r", r, 0, 31)) >>> 0;
  }

  /** The aligned 32-bit word at SRAM address `addr` of engine `engine` (as the host sees it: the NULL guard too), or undefined outside SRAM or misaligned. */
  sramWord(engine: number, addr: number): number | undefined {
    addr >>>= 0;
    if (addr % 4 !== 0 || addr > this.sramBytes - 4) return undefined;
    const at = (this.core.sramPtr(this.handle, this.engineIndex(engine)) >>> 0) + addr;
    return new DataView(this.refreshView().buffer).getUint32(at, true);
  }

  /** CSR `csr` of engine `engine` as the engine would read it; null for a CSR the engine does not have. */
  csr(engine: number, csr: number): number | null {
    const v = this.core.engineCsr(this.handle, this.engineIndex(engine), checkInt("csr", csr, 0, 0xfff));
    return v < 0n ? null : Number(v);
  }

  /** A copy of engine `i`'s profile table (config `profile`: host/debug/profile.ts), or null when profiling is off. */
  profileTable(i: number): Uint8Array | null {
    const at = this.core.profilePtr(this.handle, this.engineIndex(i)) >>> 0;
    if (at === 0) return null;
    return this.refreshView().slice(at, at + (this.sramBytes / 4) * PROFILE_ENTRY_BYTES);
  }

  /**
   * Logs every instruction the engines in `engines` retire or trap on from now on, up to `limit`
   * records (host/debug/insn-log.ts); past it they are only counted. Engines then run one
   * instruction per call into the interpreter (as with the profiler), with the same results.
   */
  startInsnLog(engines: readonly number[], limit: number): void {
    checkInt("limit", limit, 1, MAX_LOG_LIMIT);
    let mask = 0n;
    for (const e of engines) mask |= 1n << BigInt(this.engineIndex(e));
    this.insnLogBuf = this.core.scratchAlloc(limit * INSN_RECORD_BYTES) >>> 0;
    this.insnLogCap = limit;
    this.core.insnLog(this.handle, this.insnLogBuf, limit, mask);
  }

  /** The instructions logged since startInsnLog (at most its limit), and how many there were in all. */
  insnLog(): {
    /** the instructions logged, in the order they ran (at most the limit) */
    records: InsnRecord[];
    /** the instructions of the logged engines that ran, those past the limit included */
    total: number;
  } {
    const total = Number(this.core.insnLogCount(this.handle));
    const n = Math.min(total, this.insnLogCap);
    return { records: readInsnRecords(this.refreshView().subarray(this.insnLogBuf, this.insnLogBuf + n * INSN_RECORD_BYTES), n), total };
  }

  /** What engine `i` has printed so far, up to `consoleKeepBytes` (the rest: `consoleDropped`). */
  console(i: number): string {
    return this.consoles[this.engineIndex(i)].text();
  }

  /**
   * The kept console text of engine `i` as lines: each one's text (without its newline) and
   * `timePs`, the simulated time (ps) its first byte was printed.
   */
  consoleLines(i: number): DeviceConsoleLine[] {
    return this.consoles[this.engineIndex(i)].lines();
  }

  /** Console bytes of engine `i` printed after `consoleKeepBytes` were kept, and not kept. */
  consoleDropped(i: number): number {
    return this.consoles[this.engineIndex(i)].dropped;
  }

  /** Every statistic the core counts, by name (`nic.wqe_done`, `hbm.flow_full`, ...: docs/memory-map.md lists them). */
  stats(): Record<string, number> {
    const n = this.core.statCount();
    const v = new BigUint64Array(this.core.memory.buffer, this.core.statsPtr(this.handle) >>> 0, n);
    const out: Record<string, number> = {};
    STAT_NAMES.forEach((name, i) => (out[name] = Number(v[i])));
    return out;
  }

  /**
   * The statistics `names` only, in their order, as {@link stats} gives them: for a caller that
   * wants a few counters of many devices (a scenario's results). An unknown name is a RangeError.
   */
  statValues(names: readonly string[]): number[] {
    const v = new BigUint64Array(this.core.memory.buffer, this.core.statsPtr(this.handle) >>> 0, this.core.statCount());
    return names.map((name) => {
      const i = STAT_INDEX.get(name);
      if (i === undefined) throw new RangeError(`statValues: no statistic named ${JSON.stringify(name)} (docs/memory-map.md lists them)`);
      return Number(v[i]);
    });
  }

  /** The paths of the device's MetaRoCE-like connections as they are now (none on a RoCEv2 device). */
  metarocePaths(): MetarocePath[] {
    const c = this.core, n = c.mrtPathCount(this.handle);
    const out: MetarocePath[] = [];
    // mrtPathRead writes each path's record at the scratch (memory does not grow in between)
    const v = new DataView(c.memory.buffer, this.scratch, MRT_PATH.SIZE);
    for (let g = 0; g < n; g++) {
      c.mrtPathRead(this.handle, g, this.scratch);
      out.push({
        conn: v.getUint32(MRT_PATH.conn, true), peer: v.getUint32(MRT_PATH.peer, true), path: v.getUint32(MRT_PATH.path, true),
        port: v.getUint32(MRT_PATH.port, true), state: PATH_STATE_NAMES[v.getUint32(MRT_PATH.state, true)]!, cwndBytes: v.getFloat64(MRT_PATH.cwnd, true),
        inflightBytes: v.getUint32(MRT_PATH.inflight, true), srttPs: v.getFloat64(MRT_PATH.srtt, true), rtoPs: Number(v.getBigUint64(MRT_PATH.rto_ps, true)),
        hintGbps: v.getFloat64(MRT_PATH.hint_gbps, true), rtos: v.getUint32(MRT_PATH.rtos, true), epoch: v.getUint32(MRT_PATH.epoch, true),
      });
    }
    return out;
  }

  /** The split of the ports now: it starts as the config's `scaleUpPorts` and changes with {@link setPortGroups}. */
  portGroups(): PortGroups {
    const ports = Number(this.config.get("ports")), up = this.core.portSplit(this.handle);
    return { scaleUpPorts: up, scaleOutPorts: ports - up };
  }

  /**
   * What stops a re-split to `scaleUpPorts` (default: the split now) at this moment: the first
   * connected QP or MetaRoCE-like connection that is not quiescent, or whose group it would leave
   * with no ports; null when nothing does. A host drains before a re-split by running until it
   * is null.
   */
  portGroupsBlocker(scaleUpPorts?: number): PortSplitBlocker | null {
    const up = scaleUpPorts === undefined ? this.core.portSplit(this.handle) : checkSplit({ scaleUpPorts }, Number(this.config.get("ports")));
    return decodeBlocker(this.core.portSplitBlocker(this.handle, up), up);
  }

  /**
   * Re-splits the ports at the device's time ({@link nowPs}; run it to the time wanted first,
   * between collectives): ports 0 .. scaleUpPorts - 1 become the scale-up group, the rest the
   * scale-out group. From then on every QP connected to another device sends on its group's new
   * ports (port (qpn + destQpn) mod the group's size, as at RTR; DCQCN back at line rate), and
   * every MetaRoCE-like connection's paths are spread again over its group's new ports, starting
   * over there as new paths do (window, RTT, rate hint, state; PSNs kept). Both ends of a pair
   * compute their port alike, so re-split every device of a communicator at the same time.
   * The split the device has already changes nothing (and is never refused). Any other is
   * allowed only while every connected QP and connection is quiescent: otherwise a
   * {@link PortSplitError} says which is not ({@link portGroupsBlocker}) and nothing changes.
   * A bad split throws a ConfigError naming `setPortGroups.scaleUpPorts`.
   */
  setPortGroups(groups: { scaleUpPorts: number }): void {
    const up = checkSplit(groups, Number(this.config.get("ports")));
    const r = this.core.portSplitSet(this.handle, up);
    if (r === 0) return;
    const blocker = decodeBlocker(this.core.portSplitBlocker(this.handle, up), up);
    if (blocker) throw new PortSplitError(blocker, this.nowPs);
    throw new Error(`setPortGroups: the core refused scaleUpPorts ${up} (${r})`);
  }

  /**
   * Writes `word` to engine `engine`'s mailbox, arriving at `atPs` (default now; words for later
   * arrive in the order given). False when the engine's FIFO, with the words still on their
   * way, is full. A time before now is refused with a RangeError.
   */
  mailboxPush(engine: number, word: number, atPs?: bigint): boolean {
    return this.core.mboxPush(this.handle, this.engineIndex(engine), word >>> 0, this.inputTime("mailboxPush", atPs)) !== 0;
  }

  /** The time of a host input: now by default; never before now. */
  inputTime(call: string, atPs: bigint | undefined): bigint {
    const now = this.nowPs;
    if (atPs === undefined) return now;
    if (typeof atPs !== "bigint" || atPs < now) throw new RangeError(`${call}: atPs must be a bigint time (ps) at or after now (${now}), got ${String(atPs)}`);
    return atPs;
  }

  /** The next word engine `engine` pushed to the host through its mailbox (MBOX.OUT_DATA), or null when there is none. */
  mailboxPop(engine: number): number | null {
    const v = this.core.mboxPop(this.handle, this.engineIndex(engine));
    return v < 0n ? null : Number(v);
  }

  /**
   * The compute-load generator: HBM traffic of the accelerator's compute (matmul operands),
   * in Gb/s, competing with NIC DMA and reductions for HBM (docs/nic.md). 0 stops it.
   */
  setComputeLoad(gbps: number): void {
    if (!(gbps >= 0)) throw new Error(`compute load must be >= 0 Gb/s, got ${gbps}`);
    this.core.setComputeLoad(this.handle, gbps);
  }

  /**
   * Starts a matmul-like load on the compute grid now (docs/compute.md): a loop of tiles, each
   * reading and writing `tileBytes` of HBM and computing `tileBytes x intensity` flops, the
   * next tile loading while one computes. Throws while a load runs.
   */
  startMatmul(load: MatmulLoad): void {
    checkInt("tiles", load.tiles, 1, 0xffffffff);
    checkInt("tileBytes", load.tileBytes, 1, Number.MAX_SAFE_INTEGER);
    if (!(load.intensity > 0 && Number.isFinite(load.intensity))) throw new RangeError(`intensity must be a positive number of flops per byte, got ${load.intensity}`);
    if (!this.core.computeStart(this.handle, load.tiles, BigInt(load.tileBytes), load.tileBytes * load.intensity))
      throw new Error("the compute grid is running a load already: wait for its end (matmul().endPs)");
  }

  /** Takes `units` of the compute grid's units away from its load from now, as communication kernels take SMs (0 gives them back). */
  reserveComputeUnits(units: number): void {
    const all = Number(this.config.get("computeUnits"));
    checkInt("units", units, 0, all - 1);
    this.core.computeReserve(this.handle, units);
  }

  /** The compute grid's load: tiles done, when it started and ended, time computing and stalled. */
  matmul(): MatmulState {
    // the core's u64 arrives as a signed i64: read it back unsigned
    const f = (k: number) => BigInt.asUintN(64, this.core.computeState(this.handle, k));
    const end = f(3);
    return {
      tiles: Number(f(0)), tilesDone: Number(f(1)), startPs: Number(f(2)),
      endPs: end === NEVER_PS ? null : Number(end), computePs: Number(f(4)), stallPs: Number(f(5)),
    };
  }

  /** HBM bytes served so far to NIC DMA, reductions and the compute load. */
  hbmServed(): HbmServed {
    const c = this.core, h = this.handle;
    return { nic: c.hbmServed(h, FLOW_CLASS.NIC), reduce: c.hbmServed(h, FLOW_CLASS.REDUCE), compute: c.hbmServed(h, FLOW_CLASS.COMPUTE) };
  }

  /** Bytes of HBM, for hosts and tests (a copy). */
  readHbm(offset: number, length: number): Uint8Array {
    checkInt("length", length, 0, this.hbmDataBytes - checkInt("offset", offset, 0, this.hbmDataBytes));
    const at = (this.core.hbmPtr(this.handle) >>> 0) + offset;
    return this.refreshView().slice(at, at + length);
  }

  private drain(): void {
    const c = this.core, h = this.handle;
    // most steps print nothing: one call says so (the time-ordered console releases lines even then)
    if (!this.ordered && !c.hasOutput(h)) return;
    let mem = this.refreshView();
    for (let i = 0; i < this.engines; i++) {
      // the line times first: the rings are drained whole, so the bytes read next begin exactly these lines
      const times: bigint[] = [];
      for (;;) {
        const n = c.consoleLinesRead(h, i, this.scratch, SCRATCH_BYTES / 8);
        if (n === 0) break;
        times.push(...new BigUint64Array(c.memory.buffer, this.scratch, n));
      }
      let t = 0;
      for (;;) {
        const n = c.consoleRead(h, i, this.scratch, SCRATCH_BYTES);
        if (n === 0) break;
        mem = this.refreshView();
        t = this.consoles[i].write(mem.subarray(this.scratch, this.scratch + n), times, t);
      }
      if (t !== times.length) throw new Error(`engine ${i}'s console: the core gave ${times.length} line times for ${t} lines begun`);
    }
    if (this.ordered) {
      let horizon = this.nowPs;
      for (const con of this.consoles) {
        const open = con.openLineSincePs;
        if (open !== null && open < horizon) horizon = open;
      }
      this.ordered.release(horizon);
    }
    for (;;) {
      const n = c.traceRead(h, this.scratch, SCRATCH_BYTES / TRACE_RECORD.SIZE);
      if (n === 0) break;
      if (!this.options.collectTrace) continue;
      const dv = new DataView(c.memory.buffer, this.scratch, n * TRACE_RECORD.SIZE);
      for (let at = 0; at < n * TRACE_RECORD.SIZE; at += TRACE_RECORD.SIZE) {
        this.traceRecords.push({
          timePs: dv.getBigUint64(at + TRACE_RECORD.time_ps, true),
          point: TRACE_POINTS[dv.getUint16(at + TRACE_RECORD.point, true)] ?? "unknown",
          engine: dv.getUint16(at + TRACE_RECORD.engine, true),
          arg: dv.getUint32(at + TRACE_RECORD.arg, true),
        });
      }
    }
  }

  /** Flushes console text that did not end with a newline to onConsoleLine. */
  flushConsole(): void {
    for (const c of this.consoles) c.flush();
    this.ordered?.release(null);
  }

  /** What the engines' JIT has done (all zero with config field `jit` 0). */
  jitStats(): JitStats {
    this.core.jitStats(this.handle, this.scratch);
    const v = new BigUint64Array(this.core.memory.buffer, this.scratch, 9);
    return {
      translated: Number(v[0]), flushes: Number(v[1]), invalidations: Number(v[2]), bytes: Number(v[3]), compileFailures: Number(v[4]), compileMs: jitCompileMs(this.core.memory),
      calls: Number(v[5]), jumpsOut: Number(v[6]), sideExits: Number(v[7]), instructions: Number(v[8]),
    };
  }

  /** What run-ahead has done in this device's core instance, all its devices together (docs/engine.md, "Run-ahead"). */
  aheadStats(): AheadStats {
    this.core.aheadStats(this.scratch);
    const v = new BigUint64Array(this.core.memory.buffer, this.scratch, 3);
    return { runs: Number(v[0]), instructions: Number(v[1]), settles: Number(v[2]) };
  }

  /** Whether engine `engine` now runs the instruction at SRAM address `pc` in translated code (config `jit` 1): a translation it runs was made from that word. */
  jitTranslatedAt(engine: number, pc: number): boolean {
    return this.core.jitTranslatedAt(this.handle, engine, pc >>> 0) !== 0;
  }

  /**
   * The whole device state as bytes: a header, the config, and the device arena (engines,
   * memories, event queue, rings, statistics). Host-side console text is not part of it, nor
   * are the JIT's translations (a cache).
   */
  save(): Uint8Array {
    this.drain();
    const base = this.core.arenaBase(this.handle) >>> 0, size = this.core.arenaBytes(this.handle) >>> 0;
    return writeSnapshot(packConfig(this.config), base, this.refreshView().subarray(base, base + size));
  }

  /**
   * A new device in exactly the state `save()` captured. A damaged or foreign snapshot throws
   * SnapshotError (or ConfigError for config values this build refuses) before anything runs.
   */
  static async restore(module: WebAssembly.Module, snapshot: Uint8Array, options: RestoreOptions = {}): Promise<Device> {
    const snap = readSnapshot(snapshot);
    const config = { ...snap.config };
    if (options.jit !== undefined) config.jit = BigInt(checkInt("jit", options.jit, 0, 1));
    const dev = await Device.open(module, resolveConfig(config, "snapshot.config"), options);
    const base = dev.core.arenaBase(dev.handle) >>> 0, size = dev.core.arenaBytes(dev.handle) >>> 0;
    if (base !== snap.arenaBase || size !== snap.arena.length)
      throw new SnapshotError(
        `arena layout mismatch: ${snap.arena.length} bytes at 0x${snap.arenaBase.toString(16)}, ` +
        `this build lays the device out in ${size} bytes at 0x${base.toString(16)}` +
        // the same size elsewhere: most likely a device built beside others in a shared instance
        (size === snap.arena.length
          ? " (a device that shared a CoreInstance with others, other than the first built there, cannot be restored into an instance of its own)"
          : ""));
    dev.refreshView().set(snap.arena, base);
    dev.core.insnLog(dev.handle, 0, 0, 0n); // the saving device's instruction log is not this one's
    // the arena holds the config it was saved with; the JIT's translations are a cache, not state
    if (options.jit !== undefined) { dev.core.configSetJit(dev.handle, options.jit); dev.applyJitHot(); }
    // an engine may have been mid-line: its next bytes continue a line that began before
    for (let i = 0; i < dev.engines; i++) {
      const t = BigInt.asUintN(64, dev.core.consoleOpenLinePs(dev.handle, i));
      if (t !== NEVER_PS) dev.consoles[i]!.continueLine(t);
    }
    return dev;
  }
}
