// The call chain of a faulted engine, from its frame pointers (docs/engine.md, "Guards"):
// clang's RISC-V frame with -fno-omit-frame-pointer has s0 (fp) = the frame's top (the caller's
// sp), the return address at fp-4 and the caller's fp at fp-8 (`menic fw build -g` adds the
// flag). A fault at the first instruction of a call (a NULL function pointer, at pc 0) or in a
// function that set up no frame has its caller only in ra: that is the first caller when it
// lies in another function. The walk is bounded so a corrupt stack cannot hang or mislead it
// far: at most MAX_FRAMES frames, every fp inside mapped SRAM above the NULL guard, each
// strictly above the last (the stack grows down, so callers' frames lie higher).

import { formatLocation, type Location, type Symbolizer } from "./symbolize.js";

/** Frames a backtrace lists at most (a deeper chain is cut there). */
export const MAX_FRAMES = 64;

/** What the walk reads of a faulted engine. */
export interface FrameSource {
  pc: number;
  ra: number;
  fp: number;
  /** The aligned word at an SRAM address, undefined outside SRAM. */
  word(addr: number): number | undefined;
  /** Frames lie in [nullGuardBytes, sramBytes): SRAM above the NULL guard. */
  nullGuardBytes: number;
  sramBytes: number;
}

/**
 * Frame #0 is pc; each caller is given by its call instruction (the return address - 4), so
 * its line is the call's. Stops at a return address of 0 (crt0's entry has none), or where a
 * frame is not a frame.
 */
export function backtrace(src: FrameSource, symbols: Symbolizer): Location[] {
  const frames: Location[] = [symbols.locate(src.pc)];
  const fnOf = (pc: number) => symbols.functionAt(pc)?.name;
  const callOf = (ret: number) => (ret >>> 0) - 4;
  const inStack = (a: number) => a >= src.nullGuardBytes + 8 && a <= src.sramBytes && a % 4 === 0;
  let fp = src.fp >>> 0;
  const saved = inStack(fp) ? src.word(fp - 4) : undefined;
  // ra names the caller when the faulting function has not saved it in a frame of its own yet
  const ra = src.ra >>> 0;
  if (ra >= 4 && ra !== saved && (fnOf(src.pc) === undefined || fnOf(callOf(ra)) !== fnOf(src.pc))) frames.push(symbols.locate(callOf(ra)));
  while (frames.length < MAX_FRAMES && inStack(fp)) {
    const ret = src.word(fp - 4), prev = src.word(fp - 8);
    if (ret === undefined || prev === undefined || ret < 4) break;
    frames.push(symbols.locate(callOf(ret)));
    if (prev <= fp) break; // a caller's frame lies above: anything else is not a frame chain
    fp = prev;
  }
  return frames;
}

/**
 * A call chain, a frame a line; a run of frames at the same place (a recursion) is one line
 * with its count, and a chain as long as the walk goes (MAX_FRAMES) says it was cut.
 */
export function formatBacktrace(frames: Location[]): string {
  const lines: string[] = [];
  for (let k = 0; k < frames.length; ) {
    const at = formatLocation(frames[k]!);
    let end = k + 1;
    while (end < frames.length && frames[end]!.pc === frames[k]!.pc) end++;
    lines.push(end - k > 2 ? `  #${k}-#${end - 1} ${at} (${end - k} frames)` : `  #${k} ${at}`);
    if (end - k === 2) lines.push(`  #${k + 1} ${at}`);
    k = end;
  }
  if (frames.length >= MAX_FRAMES) lines.push(`  (the walk stops at ${MAX_FRAMES} frames)`);
  return lines.join("\n");
}
