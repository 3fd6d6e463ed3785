// The typed view of the device's wasm exports (assembly/index.ts). u32 values arrive as signed
// JS numbers and u64 as BigInt; the wrappers in device.ts convert them.

export interface MenicExports {
  memory: WebAssembly.Memory;
  layoutHash(): number;
  configAlloc(): number;
  scratchAlloc(bytes: number): number;
  create(cfg: number): number;
  step(dev: number, untilPs: bigint): bigint;
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
  consoleRead(dev: number, i: number, dst: number, max: number): number;
  traceRead(dev: number, dst: number, max: number): number;
  mboxPush(dev: number, i: number, word: number): number;
  mboxPop(dev: number, i: number): bigint;
  rngSample(scratch: number, seed: bigint, stream: bigint, index: number): bigint;
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
  qpModify(dev: number, qpn: number, state: number, destQpn: number): number;
  qpDestroy(dev: number, qpn: number): number;
  qpState(dev: number, qpn: number): number;
  qpSqDone(dev: number, qpn: number): number;
  qpRqDone(dev: number, qpn: number): number;
  hostDoorbellRoom(dev: number): number;
  hostSqDoorbell(dev: number, qpn: number, pi16: number): number;
  hostRqDoorbell(dev: number, qpn: number, pi16: number): number;
  hostExpress(dev: number, wqe: number): number;
  setComputeLoad(dev: number, gbps: number): void;
  hbmServed(dev: number, cls: number): number;
}

/** Instantiates the device core. The core imports only `env.abort` (never called: no asserts in release). */
export async function instantiateCore(module: WebAssembly.Module): Promise<MenicExports> {
  const imports = {
    env: {
      abort(_msg: number, _file: number, line: number, col: number): never {
        throw new Error(`menic core aborted at ${line}:${col}`);
      },
    },
  };
  const instance = await WebAssembly.instantiate(module, imports);
  return instance.exports as unknown as MenicExports;
}
