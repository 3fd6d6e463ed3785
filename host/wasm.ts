// The typed view of the device's wasm exports (assembly/index.ts). u32 values arrive as signed
// JS numbers and u64 as BigInt; the wrappers in device.ts convert them.
import { jitModule } from "./jit-modules.js";

export interface MenicExports {
  memory: WebAssembly.Memory;
  /** the core's function table: the JIT's translated blocks are added to it (assembly/engine/jit.ts) */
  table: WebAssembly.Table;
  layoutHash(): number;
  configAlloc(): number;
  scratchAlloc(bytes: number): number;
  create(cfg: number): number;
  arenaBytesFor(cfg: number): number;
  eventBoundFor(cfg: number): number;
  step(dev: number, untilPs: bigint, flags: number): bigint;
  nextActivityPs(dev: number): bigint;
  /** port `port` paused (1) by its link partner's PFC, or free again (0), from `atPs` */
  portPaused(dev: number, port: number, paused: number, atPs: bigint): void;
  fatal(dev: number): number;
  now(dev: number): bigint;
  arenaBase(dev: number): number;
  arenaBytes(dev: number): number;
  sramPtr(dev: number, i: number): number;
  hbmPtr(dev: number): number;
  statsPtr(dev: number): number;
  statCount(): number;
  startEngine(dev: number, i: number, pc: number): void;
  engineState(dev: number, i: number): number;
  enginePc(dev: number, i: number): number;
  engineExitCode(dev: number, i: number): number;
  engineMcause(dev: number, i: number): number;
  engineMtval(dev: number, i: number): number;
  engineInstret(dev: number, i: number): bigint;
  engineCycles(dev: number, i: number): bigint;
  engineSleepPs(dev: number, i: number): bigint;
  engineReg(dev: number, i: number, r: number): number;
  engineCsr(dev: number, i: number, csr: number): bigint;
  /** the class layouts/isa.json gives instruction word `ir` (0: illegal; assembly/generated/isa.ts InsnClass) */
  insnClassOf(ir: number): number;
  profilePtr(dev: number, i: number): number;
  debugAttach(dev: number, on: number): void;
  debugBreak(dev: number, addr: number, set: number): number;
  debugWatch(dev: number, addr: number, len: number, kind: number, set: number): number;
  debugStep(dev: number, i: number): void;
  debugOnly(dev: number, mask: bigint): void;
  debugResume(dev: number): void;
  debugStopReason(dev: number): number;
  debugStopEngine(dev: number): number;
  debugStopAddr(dev: number): number;
  engineSetReg(dev: number, i: number, r: number, v: number): void;
  engineSetPc(dev: number, i: number, pc: number): void;
  consoleRead(dev: number, i: number, dst: number, max: number): number;
  consoleLinesRead(dev: number, i: number, dst: number, max: number): number;
  consoleOpenLinePs(dev: number, i: number): bigint;
  /** true when a console or the trace ring holds something to read */
  hasOutput(dev: number): number;
  traceRead(dev: number, dst: number, max: number): number;
  mboxPush(dev: number, i: number, word: number, atPs: bigint): number;
  mboxPop(dev: number, i: number): bigint;
  rngSample(scratch: number, seed: bigint, stream: bigint, index: number): bigint;
  rngNextOf(dev: number, block: number): bigint;
  reduceKernel(dst: number, srcs: number, k: number, bytes: number, op: number, dtype: number): void;
  memcopy(dst: number, src: number, n: number): void;
  hostPtr(dev: number): number;
  dmaAddr(dev: number, addr: bigint, len: bigint): number;
  pdAlloc(dev: number): number;
  pdFree(dev: number, pd: number): number;
  mrReg(dev: number, pd: number, base: bigint, length: bigint, access: number): number;
  mrDereg(dev: number, lkey: number): number;
  cqCreate(dev: number, base: bigint, depth: number, owner: number): number;
  cqDestroy(dev: number, cqn: number): number;
  cqUpdateCi(dev: number, cqn: number, ci16: number): void;
  cqProduced(dev: number, cqn: number): number;
  cqOverrun(dev: number, cqn: number): number;
  qpCreate(dev: number, pd: number, sendCq: number, recvCq: number, sqBase: bigint, sqDepth: number, rqBase: bigint, rqDepth: number, owner: number, sigAll: number): number;
  qpModify(dev: number, qpn: number, state: number, destQpn: number, destDevice: number, portGroup: number, lane: number): number;
  qpDestroy(dev: number, qpn: number): number;
  qpState(dev: number, qpn: number): number;
  qpRateMbps(dev: number, qpn: number): number;
  qpTxBytes(dev: number, qpn: number): number;
  qpRxBytes(dev: number, qpn: number): number;
  mrtPathCount(dev: number): number;
  mrtPathRead(dev: number, g: number, dst: number): number;
  portSplit(dev: number): number;
  portSplitBlocker(dev: number, up: number): bigint;
  portSplitSet(dev: number, up: number): number;
  qpSqDone(dev: number, qpn: number): number;
  qpRqDone(dev: number, qpn: number): number;
  hostDoorbellRoom(dev: number): number;
  hostSqDoorbell(dev: number, qpn: number, pi16: number, atPs: bigint): number;
  hostRqDoorbell(dev: number, qpn: number, pi16: number, atPs: bigint): number;
  hostExpress(dev: number, wqe: number, atPs: bigint): number;
  setComputeLoad(dev: number, gbps: number): void;
  hbmServed(dev: number, cls: number): number;
  computeStart(dev: number, tiles: number, tileBytes: bigint, tileFlops: number): number;
  computeReserve(dev: number, units: number): number;
  computeState(dev: number, field: number): bigint;
  txRecords(dev: number): number;
  txBodies(dev: number): number;
  txHead(dev: number): number;
  txCount(dev: number): number;
  txConsume(dev: number, n: number): void;
  rxStage(dev: number): number;
  rxStageBodies(dev: number): number;
  rxPut(dev: number, n: number): number;
  jitStats(dev: number, dst: number): void;
  configSetJit(dev: number, on: number): void;
  // the fabric (assembly/fabric/fabric.ts; host/fabric/fabric.ts drives it)
  fabricNew(): number;
  fabricInit(fab: number, packets: number, events: number, horizonPs: number): void;
  fabricInbox(fab: number, records: number, bodyBytes: number): number;
  fabricIngest(fab: number, device: number, n: number, psPerByte: number, txOverhead: number): number;
  fabricNextEvent(fab: number): number;
  fabricRunTo(fab: number, endPs: number): void;
  fabricTake(fab: number, device: number, endPs: number, columns: number): number;
  fabricRelease(fab: number): void;
  /** 1 while device port `ep`'s link into the fabric is paused (PFC) */
  fabricEpPaused(fab: number, ep: number): number;
  fabricOutages(fab: number, link: number, n: number): number;
  fabricSchedule(fab: number, link: number, kind: number, atPs: number): void;
  fabricRebuildGroups(fab: number, plane: number): void;
  fabricCatchUp(fab: number, channel: number, tPs: number): void;
  // the fabric's parts, for tests
  fabricReadFrame(fab: number, at: number, len: number): number;
  fabricMarkCe(at: number): void;
  fabricDraw(fab: number, stream: number): number;
  fabricEcmpPick(hash: number, seed: number, count: number): number;
  fabricHashTuple(src: number, dst: number, sport: number, dport: number, proto: number): number;
  fabricEventPush(fab: number, timePs: number, key: number, ev: number): void;
  fabricEventPop(fab: number, limitPs: number): number;
  // a cluster: the fabric and the devices of its instance, their window loop (assembly/cluster.ts)
  clusterNew(fab: number, windowPs: number, overheadBytes: number): number;
  clusterSetDevice(cl: number, device: number, dev: number, psPerByte: number): void;
  /** 0: the time reached endPs; 1: idle (stopWhenIdle); 2: a device wants the host (clusterAttention) */
  clusterRun(cl: number, endPs: number, stopWhenIdle: number, fresh: number): number;
  clusterAttention(cl: number): number;
}

/** Every export but `memory` and `table`: the core's functions. */
export type ExportName = Exclude<keyof MenicExports, "memory" | "table">;
/** A wasm value type as the host sees it: an i64 is a BigInt, an i32 or f64 a number. */
type WasmType<T> = T extends bigint ? "i64" : T extends number ? "i32" | "f64" : never;
/** [parameter types, result type] of an export, held to its MenicExports signature by the compiler. */
type Signature<F> = F extends (...args: infer P) => infer R
  ? readonly [{ readonly [I in keyof P]: WasmType<P[I]> }, R extends void ? "void" : WasmType<R>]
  : never;

/**
 * The exports at run time, with their wasm types. The compiler holds this table to MenicExports
 * (one entry per member, as many parameters, i64 exactly where a BigInt crosses);
 * test/wasm-exports.test.ts holds it to the built module.
 */
export const EXPORT_SIGNATURES: { readonly [K in ExportName]: Signature<MenicExports[K]> } = {
  layoutHash: [[], "i32"],
  configAlloc: [[], "i32"],
  scratchAlloc: [["i32"], "i32"],
  create: [["i32"], "i32"],
  arenaBytesFor: [["i32"], "i32"],
  eventBoundFor: [["i32"], "i32"],
  step: [["i32", "i64", "i32"], "i64"],
  nextActivityPs: [["i32"], "i64"],
  portPaused: [["i32", "i32", "i32", "i64"], "void"],
  fatal: [["i32"], "i32"],
  now: [["i32"], "i64"],
  arenaBase: [["i32"], "i32"],
  arenaBytes: [["i32"], "i32"],
  sramPtr: [["i32", "i32"], "i32"],
  hbmPtr: [["i32"], "i32"],
  statsPtr: [["i32"], "i32"],
  statCount: [[], "i32"],
  startEngine: [["i32", "i32", "i32"], "void"],
  engineState: [["i32", "i32"], "i32"],
  enginePc: [["i32", "i32"], "i32"],
  engineExitCode: [["i32", "i32"], "i32"],
  engineMcause: [["i32", "i32"], "i32"],
  engineMtval: [["i32", "i32"], "i32"],
  engineInstret: [["i32", "i32"], "i64"],
  engineCycles: [["i32", "i32"], "i64"],
  engineSleepPs: [["i32", "i32"], "i64"],
  engineReg: [["i32", "i32", "i32"], "i32"],
  engineCsr: [["i32", "i32", "i32"], "i64"],
  insnClassOf: [["i32"], "i32"],
  profilePtr: [["i32", "i32"], "i32"],
  debugAttach: [["i32", "i32"], "void"],
  debugBreak: [["i32", "i32", "i32"], "i32"],
  debugWatch: [["i32", "i32", "i32", "i32", "i32"], "i32"],
  debugStep: [["i32", "i32"], "void"],
  debugOnly: [["i32", "i64"], "void"],
  debugResume: [["i32"], "void"],
  debugStopReason: [["i32"], "i32"],
  debugStopEngine: [["i32"], "i32"],
  debugStopAddr: [["i32"], "i32"],
  engineSetReg: [["i32", "i32", "i32", "i32"], "void"],
  engineSetPc: [["i32", "i32", "i32"], "void"],
  consoleRead: [["i32", "i32", "i32", "i32"], "i32"],
  consoleLinesRead: [["i32", "i32", "i32", "i32"], "i32"],
  consoleOpenLinePs: [["i32", "i32"], "i64"],
  hasOutput: [["i32"], "i32"],
  traceRead: [["i32", "i32", "i32"], "i32"],
  mboxPush: [["i32", "i32", "i32", "i64"], "i32"],
  mboxPop: [["i32", "i32"], "i64"],
  rngSample: [["i32", "i64", "i64", "i32"], "i64"],
  rngNextOf: [["i32", "i32"], "i64"],
  reduceKernel: [["i32", "i32", "i32", "i32", "i32", "i32"], "void"],
  memcopy: [["i32", "i32", "i32"], "void"],
  hostPtr: [["i32"], "i32"],
  dmaAddr: [["i32", "i64", "i64"], "i32"],
  pdAlloc: [["i32"], "i32"],
  pdFree: [["i32", "i32"], "i32"],
  mrReg: [["i32", "i32", "i64", "i64", "i32"], "i32"],
  mrDereg: [["i32", "i32"], "i32"],
  cqCreate: [["i32", "i64", "i32", "i32"], "i32"],
  cqDestroy: [["i32", "i32"], "i32"],
  cqUpdateCi: [["i32", "i32", "i32"], "void"],
  cqProduced: [["i32", "i32"], "i32"],
  cqOverrun: [["i32", "i32"], "i32"],
  qpCreate: [["i32", "i32", "i32", "i32", "i64", "i32", "i64", "i32", "i32", "i32"], "i32"],
  qpModify: [["i32", "i32", "i32", "i32", "i32", "i32", "i32"], "i32"],
  qpDestroy: [["i32", "i32"], "i32"],
  qpState: [["i32", "i32"], "i32"],
  qpRateMbps: [["i32", "i32"], "f64"],
  qpTxBytes: [["i32", "i32"], "f64"],
  qpRxBytes: [["i32", "i32"], "f64"],
  mrtPathCount: [["i32"], "i32"],
  mrtPathRead: [["i32", "i32", "i32"], "i32"],
  portSplit: [["i32"], "i32"],
  portSplitBlocker: [["i32", "i32"], "i64"],
  portSplitSet: [["i32", "i32"], "i32"],
  qpSqDone: [["i32", "i32"], "i32"],
  qpRqDone: [["i32", "i32"], "i32"],
  hostDoorbellRoom: [["i32"], "i32"],
  hostSqDoorbell: [["i32", "i32", "i32", "i64"], "i32"],
  hostRqDoorbell: [["i32", "i32", "i32", "i64"], "i32"],
  hostExpress: [["i32", "i32", "i64"], "i32"],
  setComputeLoad: [["i32", "f64"], "void"],
  hbmServed: [["i32", "i32"], "f64"],
  computeStart: [["i32", "i32", "i64", "f64"], "i32"],
  computeReserve: [["i32", "i32"], "i32"],
  computeState: [["i32", "i32"], "i64"],
  txRecords: [["i32"], "i32"],
  txBodies: [["i32"], "i32"],
  txHead: [["i32"], "i32"],
  txCount: [["i32"], "i32"],
  txConsume: [["i32", "i32"], "void"],
  rxStage: [["i32"], "i32"],
  rxStageBodies: [["i32"], "i32"],
  rxPut: [["i32", "i32"], "i32"],
  jitStats: [["i32", "i32"], "void"],
  configSetJit: [["i32", "i32"], "void"],
  fabricNew: [[], "i32"],
  fabricInit: [["i32", "i32", "i32", "f64"], "void"],
  fabricInbox: [["i32", "i32", "i32"], "i32"],
  fabricIngest: [["i32", "i32", "i32", "f64", "i32"], "i32"],
  fabricNextEvent: [["i32"], "f64"],
  fabricRunTo: [["i32", "f64"], "void"],
  fabricTake: [["i32", "i32", "f64", "i32"], "i32"],
  fabricRelease: [["i32"], "void"],
  fabricEpPaused: [["i32", "i32"], "i32"],
  fabricOutages: [["i32", "i32", "i32"], "i32"],
  fabricSchedule: [["i32", "i32", "i32", "f64"], "void"],
  fabricRebuildGroups: [["i32", "i32"], "void"],
  fabricCatchUp: [["i32", "i32", "f64"], "void"],
  fabricReadFrame: [["i32", "i32", "i32"], "i32"],
  fabricMarkCe: [["i32"], "void"],
  fabricDraw: [["i32", "i32"], "i32"],
  fabricEcmpPick: [["i32", "i32", "i32"], "i32"],
  fabricHashTuple: [["i32", "i32", "i32", "i32", "i32"], "i32"],
  fabricEventPush: [["i32", "f64", "f64", "i32"], "void"],
  fabricEventPop: [["i32", "f64"], "i32"],
  clusterNew: [["i32", "f64", "i32"], "i32"],
  clusterSetDevice: [["i32", "i32", "i32", "f64"], "void"],
  clusterRun: [["i32", "f64", "i32", "i32"], "i32"],
  clusterAttention: [["i32"], "i32"],
};

/** Host time spent compiling the JIT's translations, per core instance (see jitCompileMs). */
const compileMs = new WeakMap<WebAssembly.Memory, number>();

/** Milliseconds of host time the core whose memory is `memory` has spent compiling translated blocks. */
export function jitCompileMs(memory: WebAssembly.Memory): number {
  return compileMs.get(memory) ?? 0;
}

/**
 * Instantiates the device core. It imports `env.abort` (never called: no asserts in release)
 * and `env.jitCompile`: the engines' JIT (config field `jit`) hands over a translated block as
 * the bytes of a small wasm module over the core's memory, exporting one function `f`; it is
 * compiled here (synchronously: `new WebAssembly.Module` from bytes, in Node and in a worker;
 * a page's Content-Security-Policy must allow 'wasm-unsafe-eval', as it must for the core) and
 * put into the core's function table, at index `slot` or a new one (slot -1); -1 when it cannot
 * be compiled here (a page's main thread refuses modules over 4 KiB): that code is interpreted.
 */
export async function instantiateCore(module: WebAssembly.Module): Promise<MenicExports> {
  const { imports, bind } = coreImports();
  return bind((await WebAssembly.instantiate(module, imports)).exports);
}

/**
 * instantiateCore, synchronously: for a fabric (host/fabric/fabric.ts), whose constructor
 * builds it at once. A browser's main thread may refuse it for a module this size: build
 * fabrics in a worker there (the page does).
 */
export function instantiateCoreSync(module: WebAssembly.Module): MenicExports {
  const { imports, bind } = coreImports();
  return bind(new WebAssembly.Instance(module, imports).exports);
}

/**
 * One instance of the core that several devices and a fabric share (one memory). A cluster
 * whose devices live in its fabric's instance runs its window loop inside the core
 * (assembly/cluster.ts) instead of stepping each device with calls of its own. A wasm32
 * instance holds at most 4 GiB: host/scenario/cluster.ts decides what shares one. It is
 * instantiated synchronously, as a fabric's is: a browser's main thread may refuse that for a
 * module this size, so build clusters in a worker there (the page does).
 */
export class CoreInstance {
  /** @internal the instance's exports */
  readonly exports: MenicExports;
  constructor(
    /** the compiled core it is an instance of */
    readonly module: WebAssembly.Module,
  ) {
    this.exports = instantiateCoreSync(module);
  }
}

/** The core's imports, and how to bind them to the instance they are given to. */
function coreImports(): { imports: WebAssembly.Imports; bind: (e: WebAssembly.Exports) => MenicExports } {
  let exports: MenicExports | undefined;
  const imports = {
    env: {
      abort(_msg: number, _file: number, line: number, col: number): never {
        throw new Error(`menic core aborted at ${line}:${col}`);
      },
      jitCompile(ptr: number, len: number, slot: number): number {
        const core = exports!;
        const t0 = performance.now();
        const bytes = new Uint8Array(core.memory.buffer, ptr >>> 0, len >>> 0).slice();
        let f: WebAssembly.ExportValue;
        try {
          f = new WebAssembly.Instance(jitModule(bytes), { env: { memory: core.memory } }).exports.f;
        } catch {
          // a browser's main thread compiles at most 4 KiB synchronously: that code stays interpreted
          return -1;
        }
        const table = core.table;
        const at = slot === -1 ? table.grow(1) : slot;
        table.set(at, f);
        compileMs.set(core.memory, (compileMs.get(core.memory) ?? 0) + performance.now() - t0);
        return at;
      },
    },
  };
  return { imports, bind: (e) => (exports = e as unknown as MenicExports) };
}
