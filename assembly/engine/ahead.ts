// Run-ahead: an engine runs past its window's end while it touches nothing but its own
// registers and SRAM, so that compute-bound code pays for a window once every many windows.
//
// Why it is exact. Within a window an engine runs alone (run.ts); what it does with its
// registers and its private SRAM depends on nothing else, so it can be run early, windows
// before its turn, with the same result. What could tell the difference:
// - what it does that is not private (an MMIO or HBM access, an AMO, a SYSTEM instruction, a
//   trap): the engine *parks* before it, and runs it at its turn (run.ts runEngine);
// - an interrupt it would take: it runs ahead only while no interrupt another block raises can
//   be taken (mstatus.MIE clear, or mie's MSIP and MEIP), and no further than its timer's
//   compare when that one can;
// - the NIC reading or writing its SRAM (all of it goes through mem/dma.ts dmaPtr) while it is
//   ahead: the engine is *settled* first, put back where the windows would have it at that
//   moment. A checkpoint of its registers, pc and counters is taken where it goes ahead, and each
//   SRAM page it stores to is saved before its first store (the journal), so settling restores
//   them and runs the engine again, in the interpreter, from the checkpoint to that point: the
//   same private instructions, so the same state;
// - the host, between steps: every step ends with no engine ahead (aheadSettleAll).
// Nothing here is state: between steps it is all empty, so a snapshot never holds any of it,
// and one device is in a step at a time, so the checkpoints and journal are the instance's, for
// the device stepping (aheadDev).
//
// The journal's trigger is a byte per SRAM page per engine: PAGE_JOURNAL, set on every page of
// an engine when it goes ahead and cleared at the page's first store (which saves it), and
// PAGE_CODE, set while some word of the page holds translated code (jit-cache.ts keeps the
// word-exact map): a store to a page whose byte is 0, the common case, checks nothing more, in
// the interpreter as in translated code.

import { Device } from "../core/device";
import { Hart, EngineState, MSTATUS_MIE, MIP_MSIP, MIP_MEIP, NO_RESERVATION } from "./hart";
import { hartAt } from "./engines";
import { AHEAD_PAGE_SHIFT, PAGE_JOURNAL } from "./pages";
import { interruptToTake } from "./trap";
import { jitCacheIfOn, jitCodePages, jitInvalidate, pageFlagsOf, JIT_PAGE_SHIFT } from "./jit-cache";
import { cyclesCeil, NEVER } from "../core/time";

const PAGE_BYTES: usize = <usize>1 << AHEAD_PAGE_SHIFT;
/** Pages an engine may save in one run-ahead; at the next it parks. */
const AHEAD_PAGES: u32 = 128;

/** Pages of an engine's SRAM. */
@inline export function pagesPerEngine(dev: Device): u32 { return dev.cfg.sramBytes >> AHEAD_PAGE_SHIFT; }

// An engine's checkpoint: where it went ahead, and the pages it has saved since.
@unmanaged class Slot {
  active: u32; // ahead: the checkpoint holds
  parked: u32; // its run ahead stopped before an instruction that is not private
  count: u32; // pages saved
  pc: u32;
  cycle: u64;
  instret: u64;
  end: u64; // the cycle its run ahead was bounded by
}
const SLOT_HEAD: usize = (offsetof<Slot>() + 15) & ~(<usize>15);
const SLOT_BYTES: usize = SLOT_HEAD + 128 + <usize>AHEAD_PAGES * 4; // then the registers, then the saved pages' numbers

let slots: usize = 0;
let journal: usize = 0; // AHEAD_PAGES pages per engine
let slotCap: u32 = 0; // engines the two have room for
let fallback: usize = 0; // page bytes of a device without a JIT cache
let fallbackBytes: usize = 0;
let aheadDev: usize = 0; // the device the active slots belong to
let activeCount: u32 = 0;

/** True while an engine runs ahead: the interpreter parks at anything that is not private. */
export let aheadOn: bool = false;
/** The run ahead has parked (set by the interpreter). */
export let aheadParked: bool = false;

// where the windows have the engines (for a settle): during engine `winEngine`'s turn in a window
// whose engines run to `winLimit`, those before it are there, those after it where the window began
const NO_ENGINE: u32 = 0xffffffff;
let winEngine: u32 = NO_ENGINE;
let winLimit: u64 = 0;

// counters, for the host (a speed figure, not a result)
let goneAhead: u64 = 0;
let settles: u64 = 0;
let aheadInsns: u64 = 0;

@inline function slotAt(e: u32): Slot { return changetype<Slot>(slots + <usize>e * SLOT_BYTES); }
/** Where slot `s` keeps the registers. */
@inline function savedRegs(s: Slot): usize { return changetype<usize>(s) + SLOT_HEAD; }
/** Where slot `s` keeps the number of the `i`-th page it saved. */
@inline function savedPageNo(s: Slot, i: u32): usize { return changetype<usize>(s) + SLOT_HEAD + 128 + <usize>i * 4; }
/** Where engine `e`'s `i`-th saved page is. */
@inline function savedPage(e: u32, i: u32): usize { return journal + (<usize>e * <usize>AHEAD_PAGES + <usize>i) * PAGE_BYTES; }

function ensureRoom(engines: u32): void {
  if (engines <= slotCap) return;
  slots = heap.alloc(<usize>engines * SLOT_BYTES);
  memory.fill(slots, 0, <usize>engines * SLOT_BYTES);
  journal = heap.alloc(<usize>engines * <usize>AHEAD_PAGES * PAGE_BYTES);
  slotCap = engines;
}

/** Engine `e`'s page bytes: in the device's JIT cache when it has one (translated code reads them there), else the instance's. */
export function pageFlags(dev: Device, e: u32): usize {
  const per = <usize>pagesPerEngine(dev);
  const c = jitCacheIfOn(dev);
  if (changetype<usize>(c) != 0) return pageFlagsOf(c, e);
  // (every byte is 0 but while an engine is ahead, and nothing is ahead between steps: devices share it)
  const bytes = <usize>dev.cfg.engines * per;
  if (bytes > fallbackBytes) { fallback = heap.alloc(bytes); fallbackBytes = bytes; memory.fill(fallback, 0, bytes); }
  return fallback + <usize>e * per;
}

/** Sets (`on`) or clears PAGE_JOURNAL on every page of engine `e`. */
function journalBits(dev: Device, e: u32, on: bool): void {
  const p = pageFlags(dev, e), n = <usize>pagesPerEngine(dev); // a multiple of 4 (sramBytes: of 4 KiB)
  const bit = i8x16.splat(<i8>PAGE_JOURNAL);
  let i: usize = 0;
  for (; i + 16 <= n; i += 16) {
    const v = v128.load(p + i);
    v128.store(p + i, on ? v128.or(v, bit) : v128.andnot(v, bit));
  }
  for (; i < n; i++) {
    const v = <u32>load<u8>(p + i);
    store<u8>(p + i, <u8>(on ? v | PAGE_JOURNAL : v & ~PAGE_JOURNAL));
  }
}

/** The interpreter parks the engine running ahead (before an instruction that is not private). */
export function aheadPark(): void { aheadParked = true; }

/** Runs ahead from now (`on`) or no longer: the interpreter and translated code park at what is not private. */
export function aheadMode(dev: Device, on: bool): void {
  aheadOn = on;
  aheadParked = false;
  const c = jitCacheIfOn(dev);
  if (changetype<usize>(c) != 0) c.ahead = <u32>on;
}

/** Is engine `e` of `dev` ahead? */
@inline export function aheadActive(dev: Device, e: u32): bool {
  return activeCount != 0 && aheadDev == changetype<usize>(dev) && slotAt(e).active != 0;
}

let enabled: bool = true;

/** Run-ahead on (the default) or off for every device of this instance: a speed setting, results are the same. */
export function aheadSetEnabled(on: bool): void { enabled = on; }

/** Engine `h` may run ahead of its window: what could change its course is off (see the head). */
export function aheadMayRun(h: Hart): bool {
  if (!enabled || h.state != EngineState.Running || h.resvAddr != NO_RESERVATION || interruptToTake(h) != 0) return false;
  return (h.mstatus & MSTATUS_MIE) == 0 || (h.mie & (MIP_MSIP | MIP_MEIP)) == 0;
}

/** Engine `h` goes ahead from where it is, bounded by cycle `end`: its checkpoint, and every page marked to save. */
export function aheadStart(dev: Device, h: Hart, end: u64): void {
  ensureRoom(dev.cfg.engines);
  if (activeCount == 0) aheadDev = changetype<usize>(dev);
  const s = slotAt(h.id);
  s.active = 1;
  s.parked = 0;
  s.count = 0;
  s.pc = h.pc;
  s.cycle = h.cycle;
  s.instret = h.instret;
  s.end = end;
  memory.copy(savedRegs(s), h.regs, 128);
  activeCount++;
  journalBits(dev, h.id, true);
  goneAhead++;
}

/** Its run ahead is over (`parked`: before an instruction that is not private); it goes on being ahead until its turn. */
export function aheadStopped(dev: Device, h: Hart, parked: bool): void {
  const s = slotAt(h.id);
  aheadInsns += h.instret - s.instret;
  if (h.cycle == s.cycle) { aheadCommit(dev, h); return; } // it did not move: nothing to keep
  s.parked = <u32>parked;
}

/**
 * Engine `h` stores into SRAM page `page` for the first time since it went ahead: the page is
 * saved. False when its journal is full (the engine then parks before the store).
 */
export function aheadJournal(dev: Device, h: Hart, page: u32): bool {
  const s = slotAt(h.id);
  if (s.count == AHEAD_PAGES) return false;
  const i = s.count++;
  store<u32>(savedPageNo(s, i), page);
  memory.copy(savedPage(h.id, i), h.sram + (<usize>page << AHEAD_PAGE_SHIFT), PAGE_BYTES);
  const f = pageFlags(dev, h.id) + <usize>page;
  store<u8>(f, <u8>(<u32>load<u8>(f) & ~PAGE_JOURNAL));
  return true;
}

/** Engine `h` is where the windows would have it: its checkpoint and saved pages go. */
export function aheadCommit(dev: Device, h: Hart): void {
  const s = slotAt(h.id);
  s.active = 0;
  activeCount--;
  journalBits(dev, h.id, false);
}

/**
 * Puts engine `h` back where the windows would have it with every engine run to cycle `target`
 * (at or before where it is): its checkpoint and saved pages restored, then run again in the
 * interpreter to there.
 */
export function aheadSettle(dev: Device, h: Hart, target: u64): void {
  const s = slotAt(h.id);
  const c = jitCacheIfOn(dev);
  const codes = changetype<usize>(c) != 0 ? jitCodePages(c, h.id) : 0;
  let rewritesCode = false;
  for (let i: u32 = 0; i < s.count; i++) {
    const page = load<u32>(savedPageNo(s, i));
    const at = h.sram + (<usize>page << AHEAD_PAGE_SHIFT), saved = savedPage(h.id, i);
    if (codes != 0 && !rewritesCode) rewritesCode = codeDiffers(codes, page, at, saved);
    memory.copy(at, saved, PAGE_BYTES);
  }
  memory.copy(h.regs, savedRegs(s), 128);
  h.pc = s.pc;
  h.cycle = s.cycle;
  h.instret = s.instret;
  aheadCommit(dev, h);
  // its stores ahead rewrote code that is translated now (self-modifying code): the translations go
  if (rewritesCode) jitInvalidate(c, h.id);
  replay(dev, h, target);
  settles++;
}

/** Does putting `saved` back over SRAM page `page` (at `at`) change a word of translated code (`codes`: the engine's code-page bytes)? */
function codeDiffers(codes: usize, page: u32, at: usize, saved: usize): bool {
  const first = <usize>page << (AHEAD_PAGE_SHIFT - JIT_PAGE_SHIFT);
  for (let w: usize = 0; w < PAGE_BYTES >> 2; w++) {
    if (load<u8>(codes + first + (w << 2 >> JIT_PAGE_SHIFT)) != 0 && load<u32>(at + (w << 2)) != load<u32>(saved + (w << 2))) return true;
  }
  return false;
}

/**
 * How a settle runs an engine again (run.ts gives it: the interpreter, to `target`; a hook, as
 * the interpreter is above the DMA code that settles).
 */
let replay: (dev: Device, h: Hart, target: u64) => void = (dev: Device, h: Hart, target: u64): void => { unreachable(); };

/** Sets the settle's way to run an engine again (run.ts, once). */
export function aheadReplayWith(f: (dev: Device, h: Hart, target: u64) => void): void { replay = f; }

/** The windows' progress, for settles: engine `engine` runs its turn of a window to `limit` (NO_ENGINE: between windows). */
@inline export function aheadWindow(engine: u32, limit: u64): void {
  winEngine = engine;
  winLimit = limit;
}

export const AHEAD_NO_ENGINE: u32 = NO_ENGINE;

/** The NIC is about to reach engine `e`'s SRAM: an engine ahead is settled first, to where the windows have it now. */
export function aheadTouch(dev: Device, e: u32): void {
  if (!aheadActive(dev, e)) return;
  const target = winEngine != NO_ENGINE && e < winEngine ? winLimit : cyclesCeil(dev.now, dev.cfg.engineClockKhz);
  aheadSettle(dev, hartAt(dev, e), target);
}

/**
 * The earliest clock of `dev`'s running engines when every one of them is ahead (a window
 * ending at or before it runs none of them), else 0.
 */
export function aheadDue(dev: Device): u64 {
  if (activeCount == 0 || aheadDev != changetype<usize>(dev)) return 0;
  let due: u64 = NEVER;
  for (let e: u32 = 0; e < dev.cfg.engines; e++) {
    const h = hartAt(dev, e);
    if (h.state != EngineState.Running) continue;
    if (slotAt(e).active == 0) return 0;
    if (h.cycle < due) due = h.cycle;
  }
  return due == NEVER ? 0 : due;
}

/** At the end of a step: no engine stays ahead of the device's time (the host may look at them, or step another device). */
export function aheadSettleAll(dev: Device): void {
  if (activeCount == 0 || aheadDev != changetype<usize>(dev)) return;
  const target = cyclesCeil(dev.now, dev.cfg.engineClockKhz);
  for (let e: u32 = 0; e < dev.cfg.engines; e++) {
    const s = slotAt(e);
    if (s.active == 0) continue;
    const h = hartAt(dev, e);
    // its run stopped at the bound, which is the device's time: where the windows have it
    if (s.parked == 0 && s.end == target) aheadCommit(dev, h);
    else aheadSettle(dev, h, target);
  }
}

/** The counters into `dst` (3 u64): runs ahead (engines gone ahead), their instructions retired ahead, settles (engines put back and run again). */
export function aheadStatsTo(dst: usize): void {
  store<u64>(dst, goneAhead);
  store<u64>(dst, aheadInsns, 8);
  store<u64>(dst, settles, 16);
}
