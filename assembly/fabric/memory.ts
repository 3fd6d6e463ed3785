// Memory for the fabric's tables. The fabric lives in a core instance of its own, whose heap
// only it uses (the stub runtime never frees): a table that must grow is copied into a new
// block twice its size, and the old block is left behind. Growth doubles, so what is left
// behind is at most what is in use.

/**
 * A zeroed block of `bytes`, untouched: the bump allocator (runtime "stub") hands out memory no
 * block was ever given before, which wasm zeroes when it grows, and the core frees nothing
 * (assembly/create.ts; test/architecture.test.ts holds the core to no heap.free). Filling it, as
 * this did, wrote every page of every table: at 16,384 devices, 1.5 s of a fabric's 3 s to
 * build, and 200 MB resident of tables most of whose entries a run never writes (a channel's
 * drop counters, its Gilbert-Elliott state).
 */
export function zeroed(bytes: usize): usize {
  return heap.alloc(bytes > 0 ? bytes : 8);
}

/** A zeroed block of `bytes` holding the first `used` bytes of `old`. */
export function grow(old: usize, used: usize, bytes: usize): usize {
  const p = zeroed(bytes);
  memory.copy(p, old, used);
  return p;
}

/** A block of `n` i32, each -1. */
export function nones(n: u32): usize {
  const p = heap.alloc(<usize>(n > 0 ? n : 1) << 2);
  memory.fill(p, 0xff, <usize>n << 2);
  return p;
}
