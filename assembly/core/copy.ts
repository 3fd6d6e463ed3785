// Copies of a few bytes: a frame's headers, a PKT record, a work request. memory.copy leaves
// wasm for a C call in V8 (memory_copy_wrapper, then memmove), which for a 96-byte header
// costs several times the copy itself; these copy inline, 16 bytes at a time (SIMD), and hand
// longer copies (payloads) to memory.copy, which is faster for those. The two areas must not
// overlap.

/** Copies `n` bytes from `src` to `dst` (areas that do not overlap). */
export function copyBytes(dst: usize, src: usize, n: usize): void {
  if (n > 256) {
    memory.copy(dst, src, n);
    return;
  }
  if (n >= 16) {
    let k: usize = 0;
    for (; k + 16 <= n; k += 16) v128.store(dst + k, v128.load(src + k));
    // the last bytes: one more 16-byte copy ending at n (overlapping what is already copied)
    if (k < n) v128.store(dst + n - 16, v128.load(src + n - 16));
    return;
  }
  if (n >= 8) {
    store<u64>(dst, load<u64>(src));
    store<u64>(dst + n - 8, load<u64>(src + n - 8));
    return;
  }
  if (n >= 4) {
    store<u32>(dst, load<u32>(src));
    store<u32>(dst + n - 4, load<u32>(src + n - 4));
    return;
  }
  for (let k: usize = 0; k < n; k++) store<u8>(dst + k, load<u8>(src + k));
}
