// The compiled modules of the engines' JIT (assembly/engine/jit.ts), shared by content across
// every core instance in the process. A translation's bytes fully say what it does (the core's
// addresses it uses are constants in them), so two devices that translate the same code at the
// same addresses (engines running one image in devices of one configuration: a cluster, a test
// suite, the bench's repeated runs) get one WebAssembly.Module, compiled once: each new instance
// of it runs the engine's optimised code at once instead of compiling it again and running the
// baseline compiler's code until the engine re-optimises it (V8 tiers a module's functions up
// per module, after they have run a while). Bounded: the least recently used module goes first.

/** Modules kept at most (each a few KiB of bytes and tens of KiB of machine code). */
export const JIT_MODULES_KEPT = 512;

const kept = new Map<string, { bytes: Uint8Array<ArrayBuffer>; module: WebAssembly.Module }[]>();
let count = 0;
let compiled = 0;

/** FNV-1a over the bytes and their length: the bucket; the bytes themselves decide. */
function keyOf(bytes: Uint8Array): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 16777619);
  return `${bytes.length}:${h >>> 0}`;
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The compiled module of a translation's bytes (`bytes` is kept: pass a copy): the one compiled
 * earlier from the same bytes, else a new one (throws as `new WebAssembly.Module` does).
 */
export function jitModule(bytes: Uint8Array<ArrayBuffer>): WebAssembly.Module {
  const key = keyOf(bytes);
  const bucket = kept.get(key);
  const hit = bucket?.find((e) => same(e.bytes, bytes));
  if (hit) {
    kept.delete(key); // most recently used last
    kept.set(key, bucket!);
    return hit.module;
  }
  const module = new WebAssembly.Module(bytes);
  compiled++;
  if (count >= JIT_MODULES_KEPT) {
    const [oldest, entries] = kept.entries().next().value as [string, unknown[]];
    kept.delete(oldest);
    count -= entries.length;
  }
  const entries = kept.get(key) ?? [];
  entries.push({ bytes, module });
  kept.delete(key);
  kept.set(key, entries);
  count++;
  return module;
}

/** Modules kept now, and compiled since the process started (for tests). */
export function jitModulesKept(): number {
  return count;
}

export function jitModulesCompiled(): number {
  return compiled;
}

/** Forgets every module kept (for tests: the next translation of any code is compiled again). */
export function jitModulesClear(): void {
  kept.clear();
  count = 0;
}
