// Instantiating the device core. Its exports' typed view, MenicExports and EXPORT_SIGNATURES, is
// generated from assembly/index.ts into host/generated/exports.ts (scripts/gen-exports.mjs, `npm
// run gen`) and re-exported here; u32 values arrive as signed JS numbers and u64 as BigInt, and
// the wrappers in device.ts convert them.
import { jitModule } from "./jit-modules.js";
import type { MenicExports } from "./generated/exports.js";

export { EXPORT_SIGNATURES, type ExportName, type MenicExports } from "./generated/exports.js";

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
    /**
     * Memory to grow it by at once, for the devices about to be built in it: grown a device at a
     * time, V8 collected garbage for the external memory it added (at 16,384 devices, a quarter
     * of set-up's CPU time). Pages never written take no memory.
     */
    reserveBytes = 0,
  ) {
    this.exports = instantiateCoreSync(module);
    if (reserveBytes > 0) this.exports.memory.grow(Math.ceil(reserveBytes / 65536));
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
