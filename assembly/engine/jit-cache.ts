// The translation cache of the engines' JIT (config field `jit`; the translator is jit.ts): per
// device, which SRAM word of which engine starts a translated block, how hot the untranslated
// ones are, the block records, and which SRAM pages hold translated code. It is a cache, never
// state: it lives outside the device's arena (a snapshot holds none of it; a device restored
// into a new instance starts with an empty cache), in a small registry keyed by the device.
//
// Keeping translations true to SRAM. Between two calls into the core the host may write any
// SRAM byte (loading an image, a debugger, a view of a DMA buffer): every step begins a new
// epoch, and a block is checked word by word against SRAM on its first use in an epoch. During
// a step, SRAM changes only by the engine's own stores (the interpreter tells the cache after
// a store into a page holding translated code; translated code leaves to the interpreter
// before such a store) and by the NIC's DMA (mem/dma.ts asks here before it hands out an SRAM
// address). Either drops every translation of that engine: self-modifying code is rare, and
// hot code comes back after `hot` more runs.

import { Device } from "../core/device";
import { AHEAD_PAGE_SHIFT, PAGE_CODE } from "./pages";

/** A translated block's record. */
@unmanaged export class Block {
  /** the host's function table index of its wasm function */
  table: u32;
  /** blocks in the translation (their pc, length and words are kept at `words` for checking) */
  n: u32;
  /** 1: the one block where a window started, not a region (see executeJit) */
  single: u32;
  /** what it was translated from: (pc, n) per block, then their words (JIT_RECORD_BYTES, made with the record's first translation and kept for the slot's next) */
  words: usize;
  /** where its indirect jumps have gone out of it (JIT_TARGETS at most, kept at `words` + JIT_TARGETS_AT): a new translation of its entry takes them in */
  targets: u32;
  /** how many of `targets` it was translated with */
  targetsIn: u32;
  /** indirect jumps out of it since it was made */
  jumpsOut: u32;
  /** translations of its entry before it (made again with more targets), JIT_GENERATIONS at most */
  generation: u32;
  /** the heads of its loops it may be entered at besides its entry (JIT_ENTRIES at most, their pcs kept at `words` + JIT_ENTRIES_AT) */
  entries: u32;
  /** calls into it, counted up to JIT_JUDGE_CALLS */
  calls: u32;
  /** instructions those calls retired */
  retired: u64;
  /** 1: judged not worth calling (see JIT_SLOW_INSNS): the engines that land on it interpret there */
  slow: u32;
}

export const BLOCK_BYTES: usize = offsetof<Block>();
/** Instructions per translation (region of blocks, jit.ts) at most. */
export const JIT_MAX_INSNS: u32 = 512;
/**
 * Blocks per translation at most (jit.ts keeps a region's edges in 64-bit masks: 64 at most).
 * CoreMark-like, 16 engines, alternating runs: 1,783 MIPS at 32, 1,893 at 40, 2,086 at 48,
 * 1,883 at 56, 1,656 at 64; compute the same at 32 and 48.
 */
export const JIT_REGION_BLOCKS: i32 = 48;
/**
 * Targets of indirect jumps (a JALR that is not a return into the region: a switch's jump table,
 * a call through a pointer) kept per translation. Such a jump to a block of its region is a
 * branch; to anywhere else it leaves the region, and the dispatcher notes where (jitNoteTarget)
 * so that the entry's next translation takes the place in (CoreMark-like's state machine left
 * its region at every character, through its switch's table).
 */
export const JIT_TARGETS: u32 = 8;
/** Where a record's targets lie in its words. */
export const JIT_TARGETS_AT: usize = <usize>JIT_REGION_BLOCKS * 8 + <usize>JIT_MAX_INSNS * 4;
/** Indirect jumps out of a translation, with a target it lacks, that have it made again. */
export const JIT_RETRANSLATE_JUMPS: u32 = 32;
/** Translations of one entry at most (each with more targets): a place whose targets keep changing stops there. */
export const JIT_GENERATIONS: u32 = 4;
/**
 * Loop heads of a translation it may be entered at besides its entry (jit.ts `entries`): a
 * kernel's hot places, each translated as a region of its own, were ~32 KB of wasm each and
 * nearly all the kernel in every one (classic: 8 of them).
 */
export const JIT_ENTRIES: u32 = 16;
/**
 * Calls into a translation after which it is judged, and the instructions a call must retire on
 * average to be kept. A call costs the host the region's registers loaded and stored, and code
 * that leaves at once costs more translated than interpreted: the collective executor's loop
 * that writes a work request to the NIC's doorbell window (an MMIO store each turn, left to the
 * interpreter) retired 1.0-3.5 instructions a call, and its 8-device all-reduce ran 1.3-1.6
 * times as long with the JIT as without. Not judged when code translates at its first landing
 * (jitSetHot 1: the tests that hold the translator to the interpreter want it all translated).
 */
export const JIT_JUDGE_CALLS: u32 = 256;
export const JIT_SLOW_INSNS: u64 = 4;
/** Where a record's entries lie in its words. */
export const JIT_ENTRIES_AT: usize = JIT_TARGETS_AT + <usize>JIT_TARGETS * 4;
/** Bytes kept per translation: (pc, n) per block, then the words (to check it against SRAM), then its targets and entries. */
export const JIT_RECORD_BYTES: usize = JIT_ENTRIES_AT + <usize>JIT_ENTRIES * 4;
/**
 * Runs of an untranslated block start (a jump or branch target) before it is translated, unless
 * the host says otherwise (jitSetHot: 1 translates code where it first lands, as the tests that
 * hold the translator to the interpreter do). As late as a byte counts: a translation costs the
 * host 0.05-1 ms to make, and a collective's firmware runs most of its code a few hundred times
 * (an 8-device all-reduce's first run in a new process: 190-217 ms at 48 against 117-133 ms
 * interpreted; 132-145 ms at 255; long compute runs as fast either way).
 */
export const JIT_HOT: u32 = 255;
/** The most jitSetHot takes: the landings are counted in a byte per SRAM word. */
export const JIT_HOT_MAX: u32 = 255;
/**
 * SRAM bytes per code page (log2): the grain of "does this store hit translated code". A word:
 * firmware keeps data next to code (a 256-byte page held both in the compute benchmark, and
 * every store to that data dropped the engine's translations).
 */
export const JIT_PAGE_SHIFT: u32 = 2;
/** blockOf: no block starts here (yet). */
export const NO_BLOCK: i32 = -1;
/** blockOf: the instruction here cannot start a block (the interpreter runs it). */
export const NOT_TRANSLATABLE: i32 = -2;

@unmanaged export class JitCache {
  dev: usize;
  engines: u32;
  words: u32; // SRAM words per engine
  cap: u32; // block records (cfg.jitBlocks)
  count: u32; // records in use
  epoch: u32;
  // for translated code (jit.ts address), set with the records (jit.ts translate)
  eng: usize; // the device's engines block (engOf)
  hbm: usize; // where its HBM lies in wasm memory
  pagesBias: usize; // codePages less the first engine's SRAM address >> JIT_PAGE_SHIFT: a store's code-page byte is at pagesBias + (its address >> JIT_PAGE_SHIFT)
  chunks: usize; // per engine, per JIT_CHUNK_WORDS of SRAM: 0, or its part of the map (mapSlotMade), made at the first landing there
  codePages: usize; // u8 per code page per engine: 1 while a translation reads that page
  pageFlags: usize; // u8 per run-ahead page (ahead.ts) per engine: PAGE_CODE while a code page in it is 1, PAGE_JOURNAL while it is to be saved
  ahead: u32; // an engine runs ahead (ahead.ts): translated code leaves before an HBM access
  blocks: usize; // cap Block records
  tables: usize; // u32 per record slot: its function table index (kept across flushes), or NO_TABLE
  checked: usize; // u32 per engine per record: the epoch in which it was last checked against that engine's SRAM
  buf: usize; // the module being emitted
  hot: u32; // landings on a block start that translate it (JIT_HOT unless jitSetHot)
  // counters (host/device.ts reads them as stats)
  translated: u32;
  flushes: u32;
  invalidations: u32;
  compileFailures: u32; // translations the host could not compile (their code is interpreted)
  emittedBytes: u64;
  calls: u64; // calls into translations
  jumpsOut: u64; // ... that left by a jump out of their region (EXIT_JUMP)
  sideExits: u64; // ... that left an instruction to the interpreter (EXIT_INTERP)
  retired: u64; // instructions retired in translated code
}

export const NO_TABLE: u32 = 0xffffffff;
/**
 * Bytes of the emit buffer. A region's module is up to ~300 bytes per instruction (a store with
 * its checks, and the window's exits before it): JIT_MAX_INSNS of them fit, with room. A module
 * that does not is not made (jit.ts translate: its code is interpreted, counted as a failure to
 * compile); 256 instructions in 64 KiB had no such guard, and 512 overran it.
 */
export const JIT_BUF_BYTES: u32 = 262144;

// The registry: up to 64 devices per instance. A cluster's devices may share one instance
// (host/scenario/cluster.ts): past the 64th, a device's engines are interpreted (jitCacheOf
// returns 0), which changes their speed on the host and nothing they do.
const MAX_DEVICES: i32 = 64;
const registry = new StaticArray<usize>(MAX_DEVICES);
let registered: i32 = 0;
let lastDev: usize = 0;
let lastCache: usize = 0;

/** Device `dev`'s cache, made on first use; 0 when the registry is full (the engines are then interpreted). */
export function jitCacheOf(dev: Device): JitCache {
  const found = jitCacheIfAny(dev);
  if (changetype<usize>(found) != 0 || registered == MAX_DEVICES) return found;
  const c = changetype<JitCache>(heap.alloc(offsetof<JitCache>()));
  memory.fill(changetype<usize>(c), 0, offsetof<JitCache>());
  c.dev = changetype<usize>(dev);
  c.engines = dev.cfg.engines;
  c.words = dev.cfg.sramBytes >> 2;
  c.cap = dev.cfg.jitBlocks;
  const dir = <usize>c.engines * chunksPerEngine(c) * 4;
  c.chunks = heap.alloc(dir);
  memory.fill(c.chunks, 0, dir);
  const flags = <usize>c.engines * <usize>(dev.cfg.sramBytes >> AHEAD_PAGE_SHIFT);
  c.pageFlags = heap.alloc(flags);
  memory.fill(c.pageFlags, 0, flags);
  c.epoch = 1;
  c.hot = JIT_HOT;
  unchecked(registry[registered++] = changetype<usize>(c));
  lastDev = c.dev;
  lastCache = changetype<usize>(c);
  return c;
}

/**
 * Translates a block start at its `landings`-th landing (1..JIT_HOT_MAX) from now on. A speed
 * setting of the cache, never state (results are the same whatever it is): false, and nothing
 * set, when `dev` runs interpreted (config jit 0, or the registry is full).
 */
export function jitSetHot(dev: Device, landings: u32): bool {
  if (dev.cfg.jit == 0 || landings < 1 || landings > JIT_HOT_MAX) return false;
  const c = jitCacheOf(dev);
  if (changetype<usize>(c) == 0) return false;
  c.hot = landings;
  return true;
}

/**
 * The records, their words, the code pages and the emit buffer, made before the first
 * translation (a device whose engines translate nothing, a short run, never touches them:
 * code pages alone are a byte per SRAM word of every engine).
 */
export function jitRecordsMade(c: JitCache): void {
  if (c.codePages != 0) return;
  const pages = <usize>c.engines * (<usize>c.words >> (JIT_PAGE_SHIFT - 2));
  c.codePages = heap.alloc(pages);
  memory.fill(c.codePages, 0, pages);
  c.blocks = heap.alloc(<usize>c.cap * BLOCK_BYTES);
  memory.fill(c.blocks, 0, <usize>c.cap * BLOCK_BYTES); // (a record's words are made with it: Block.words 0 until then)
  c.tables = heap.alloc(<usize>c.cap * 4);
  memory.fill(c.tables, 0xff, <usize>c.cap * 4);
  c.checked = heap.alloc(<usize>c.engines * <usize>c.cap * 4);
  memory.fill(c.checked, 0, <usize>c.engines * <usize>c.cap * 4);
  c.buf = heap.alloc(<usize>JIT_BUF_BYTES);
}

/** The cache of `dev` when its engines run with the JIT (config jit 1) and it has one already, else 0. */
export function jitCacheIfOn(dev: Device): JitCache {
  return dev.cfg.jit != 0 ? jitCacheIfAny(dev) : changetype<JitCache>(0);
}

/** The cache of `dev` if it has one already (0 otherwise): for the hooks, which must not make one. */
export function jitCacheIfAny(dev: Device): JitCache {
  const d = changetype<usize>(dev);
  if (d == lastDev) return changetype<JitCache>(lastCache);
  for (let i = 0; i < registered; i++) {
    const c = unchecked(registry[i]);
    if (changetype<JitCache>(c).dev == d) { lastDev = d; lastCache = c; return changetype<JitCache>(c); }
  }
  return changetype<JitCache>(0);
}

// The map from an engine's SRAM words to what starts there, in chunks of JIT_CHUNK_WORDS words,
// each made at the first landing in it: a flat map of every word of every engine (2.5 MiB for 16
// engines of 128 KiB) cost about 2.5 ms to fill when a device's first engine ran, more than a
// short firmware run took to interpret. A chunk: i32 per word (a block id, NO_BLOCK or
// NOT_TRANSLATABLE), then u8 per word (runs of an untranslated block start: its heat).

/** SRAM words per chunk of the map (log2). */
const JIT_CHUNK_SHIFT: u32 = 10;
const JIT_CHUNK_WORDS: usize = <usize>1 << JIT_CHUNK_SHIFT;
const CHUNK_BYTES: usize = JIT_CHUNK_WORDS * 5;

@inline function chunksPerEngine(c: JitCache): usize {
  return (<usize>c.words + JIT_CHUNK_WORDS - 1) >> JIT_CHUNK_SHIFT;
}

function clearChunk(chunk: usize): void {
  memory.fill(chunk, 0xff, JIT_CHUNK_WORDS * 4); // NO_BLOCK
  memory.fill(chunk + JIT_CHUNK_WORDS * 4, 0, JIT_CHUNK_WORDS);
}

/** Where the address of the chunk holding engine `engine`'s map entry for SRAM word `word` is kept (0 there: not made). */
@inline function chunkRef(c: JitCache, engine: u32, word: u32): usize {
  return c.chunks + (<usize>engine * chunksPerEngine(c) + <usize>(word >> JIT_CHUNK_SHIFT)) * 4;
}

/** Where engine `engine`'s map entry for SRAM word `word` is, or 0 (NO_BLOCK, heat 0) while its chunk is not made. */
@inline export function mapSlot(c: JitCache, engine: u32, word: u32): usize {
  const chunk = <usize>load<u32>(chunkRef(c, engine, word));
  return chunk == 0 ? 0 : chunk + (<usize>(word & (<u32>JIT_CHUNK_WORDS - 1)) << 2);
}

/** mapSlot, making the chunk when there is none. */
export function mapSlotMade(c: JitCache, engine: u32, word: u32): usize {
  const at = chunkRef(c, engine, word);
  let chunk = <usize>load<u32>(at);
  if (chunk == 0) {
    chunk = heap.alloc(CHUNK_BYTES);
    clearChunk(chunk);
    store<u32>(at, <u32>chunk);
  }
  return chunk + (<usize>(word & (<u32>JIT_CHUNK_WORDS - 1)) << 2);
}

/**
 * The interpreter, run by the JIT's dispatcher, landed at `pc` after a taken jump or branch:
 * whether the dispatcher should have it (a translation starts there, or this landing makes the
 * place hot), else counts the landing and the interpreter runs on (a return to the dispatcher
 * at every landing cost about as much as interpreting the code between them).
 */
export function jitWantsLanding(c: JitCache, engine: u32, pc: u32): bool {
  if ((pc >> 2) >= c.words) return true;
  const slot = mapSlotMade(c, engine, pc >> 2);
  const id = load<i32>(slot);
  if (id >= 0) return true;
  if (id != NO_BLOCK) return false; // not translatable: the interpreter's
  return landingsReach(heatOf(slot, pc >> 2), c.hot); // if so the dispatcher counts this landing and translates
}

/**
 * Whether one more landing (or window start) on the heat byte at `hp` reaches `threshold`; if
 * not, it is counted. (The caller that translates on true sets the byte to 0.)
 */
@inline export function landingsReach(hp: usize, threshold: u32): bool {
  const n = <u32>load<u8>(hp) + 1;
  if (n >= threshold) return true;
  store<u8>(hp, <u8>n);
  return false;
}

/** The heat byte of word `word`'s map entry at `slot` (from mapSlot, not 0). */
@inline export function heatOf(slot: usize, word: u32): usize {
  const i = <usize>(word & (<u32>JIT_CHUNK_WORDS - 1));
  return slot - i * 4 + JIT_CHUNK_WORDS * 4 + i;
}

/**
 * Translation `b` jumped out at `pc` through a JALR: notes `pc` among its targets; true when
 * its entry is due to be translated again with them (JIT_RETRANSLATE_JUMPS such jumps since it
 * was made, a target it was not made with, an earlier generation than the last).
 */
export function jitNoteTarget(b: Block, pc: u32): bool {
  const at = b.words + JIT_TARGETS_AT;
  let known = false;
  for (let i: u32 = 0; i < b.targets; i++) if (load<u32>(at + <usize>i * 4) == pc) { known = true; break; }
  if (!known && b.targets < JIT_TARGETS) { store<u32>(at + <usize>b.targets * 4, pc); b.targets++; }
  b.jumpsOut++;
  return b.jumpsOut >= JIT_RETRANSLATE_JUMPS && b.targets > b.targetsIn && b.generation + 1 < JIT_GENERATIONS;
}

@inline export function blockAt(c: JitCache, id: i32): Block {
  return changetype<Block>(c.blocks + <usize>id * BLOCK_BYTES);
}

/** Where the epoch in which record `id` was last checked against engine `engine`'s SRAM is kept. */
@inline export function checkedAt(c: JitCache, engine: u32, id: i32): usize {
  return c.checked + (<usize>engine * <usize>c.cap + <usize>id) * 4;
}

/** Engine `engine`'s code-page bytes (one per 2^JIT_PAGE_SHIFT bytes of SRAM). */
@inline export function codePagesOf(c: JitCache, engine: u32): usize {
  return c.codePages + <usize>engine * (<usize>c.words >> (JIT_PAGE_SHIFT - 2));
}

/** A new epoch: the host may have written SRAM since the last step. */
export function jitNewEpoch(dev: Device): void {
  const c = jitCacheIfOn(dev);
  if (changetype<usize>(c) != 0) c.epoch++;
}

/** Forgets engine `engine`'s map: every chunk it has back to NO_BLOCK, heat 0. */
function clearMap(c: JitCache, engine: u32): void {
  const n = chunksPerEngine(c);
  const dir = c.chunks + <usize>engine * n * 4;
  for (let i: usize = 0; i < n; i++) {
    const chunk = <usize>load<u32>(dir + i * 4);
    if (chunk != 0) clearChunk(chunk);
  }
}

/** Run-ahead pages per engine (ahead.ts). */
@inline function flagPages(c: JitCache): usize { return (<usize>c.words << 2) >> AHEAD_PAGE_SHIFT; }

/** Engine `engine`'s run-ahead page bytes (ahead.ts): PAGE_CODE marks a page holding a word of translated code. */
@inline export function pageFlagsOf(c: JitCache, engine: u32): usize {
  return c.pageFlags + <usize>engine * flagPages(c);
}

/** Engine `engine`'s pages hold no translated code any more (PAGE_JOURNAL stays as it is). */
function clearCodeFlags(c: JitCache, engine: u32): void {
  const p = pageFlagsOf(c, engine), n = flagPages(c);
  for (let i: usize = 0; i < n; i++) store<u8>(p + i, <u8>(<u32>load<u8>(p + i) & ~PAGE_CODE));
}

/** Drops every translation of engine `engine` (its SRAM changed under translated code). */
export function jitInvalidate(c: JitCache, engine: u32): void {
  clearMap(c, engine);
  if (c.codePages != 0) memory.fill(codePagesOf(c, engine), 0, <usize>c.words >> (JIT_PAGE_SHIFT - 2));
  clearCodeFlags(c, engine);
  c.invalidations++;
}

/** Drops every translation of every engine: the record slots are reused (with their table indices). */
export function jitFlush(c: JitCache): void {
  for (let e: u32 = 0; e < c.engines; e++) { clearMap(c, e); clearCodeFlags(c, e); }
  if (c.codePages != 0) memory.fill(c.codePages, 0, <usize>c.engines * (<usize>c.words >> (JIT_PAGE_SHIFT - 2)));
  c.count = 0;
  c.flushes++;
}

/** Engine `engine`'s SRAM bytes [off, off + len) may be written by the NIC: translations reading them go. */
export function jitSramWrite(dev: Device, engine: u32, off: u32, len: u32): void {
  const c = jitCacheIfOn(dev);
  if (changetype<usize>(c) == 0 || c.codePages == 0 || len == 0) return;
  const pages = codePagesOf(c, engine);
  const last = (off + len - 1) >> JIT_PAGE_SHIFT;
  for (let p = off >> JIT_PAGE_SHIFT; p <= last; p++) {
    if (load<u8>(pages + <usize>p) != 0) { jitInvalidate(c, engine); return; }
  }
}

/** Engine `engine`'s code-page bytes in cache `c` (0: none), or 0 while it has translated nothing (the interpreter's store check). */
export function jitCodePages(c: JitCache, engine: u32): usize {
  return changetype<usize>(c) == 0 || c.codePages == 0 ? 0 : codePagesOf(c, engine);
}

/** Engine `engine` stored to its SRAM at `addr` (outside the interpreter's own loop: AMOs). */
export function jitStored(dev: Device, engine: u32, addr: u32): void {
  const c = jitCacheIfOn(dev);
  if (changetype<usize>(c) != 0 && c.codePages != 0 && load<u8>(codePagesOf(c, engine) + <usize>(addr >> JIT_PAGE_SHIFT)) != 0) jitInvalidate(c, engine);
}
