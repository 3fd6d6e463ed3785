// SRAM pages as run-ahead (ahead.ts) and the JIT's store check (jit.ts, exec.ts) see them: a
// byte per page per engine, 0 for a page a store needs nothing more for.

/** SRAM bytes per page (log2). */
export const AHEAD_PAGE_SHIFT: u32 = 8;
/** A page's byte: some word of it holds translated code (jit-cache.ts keeps which, word by word). */
export const PAGE_CODE: u32 = 1;
/** A page's byte: its engine runs ahead and has not saved the page yet (ahead.ts). */
export const PAGE_JOURNAL: u32 = 2;
