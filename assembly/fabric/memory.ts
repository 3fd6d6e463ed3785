// Memory for the fabric's tables. The fabric lives in a core instance of its own, whose heap
// only it uses (the stub runtime never frees): a table that must grow is copied into a new
// block twice its size, and the old block is left behind. Growth doubles, so what is left
// behind is at most what is in use.

/** A zeroed block of `bytes`. */
export function zeroed(bytes: usize): usize {
  const p = heap.alloc(bytes > 0 ? bytes : 8);
  memory.fill(p, 0, bytes);
  return p;
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
