// Names for engine addresses, from an image's symbol table and (for a -g build) its DWARF line
// table: `pc 0x460 (main+0x28, list.c:17)`. Also says what a fault means when the guards
// explain it (NULL dereference, stack overflow: docs/engine.md, "Guards").
// Platform-neutral: used by `menic fw run`, the profiler and the GDB stub.

import { readSections, readSymbols, STT_FUNC, STT_OBJECT, type ElfSymbol } from "../elf.js";
import { readLineTable, lineFor, type LineRow } from "./dwarf-line.js";

/** Where a pc is in an image: its function and offset, and for a -g build its file and line. */
export interface Location {
  /** The address. */
  pc: number;
  /** The function (or object) holding pc, and pc's offset in it; absent when no symbol covers pc. */
  symbol?: string;
  /** pc's offset in `symbol`. */
  offset?: number;
  /** From the line table of a -g build. */
  file?: string;
  /** The line in `file`. */
  line?: number;
}

export interface FunctionRange {
  name: string;
  start: number;
  /** One past the last byte (the next symbol's start when the symbol has no size). */
  end: number;
}

const hex = (n: number) => "0x" + (n >>> 0).toString(16);
const basename = (p: string) => p.slice(p.lastIndexOf("/") + 1);

export class Symbolizer {
  /** Functions sorted by start address, non-overlapping. */
  readonly functions: readonly FunctionRange[];
  private readonly objects: readonly FunctionRange[];
  private readonly lines: readonly LineRow[];
  /** Why the line table (or symbol table) could not be read, if it could not: symbols still work without lines. */
  readonly warning?: string;

  /** An empty symbolizer (an image without symbols): every location is just its pc. */
  static readonly none = new Symbolizer([], []);

  private constructor(symbols: readonly ElfSymbol[], lines: readonly LineRow[], warning?: string) {
    this.functions = ranges(symbols.filter((s) => s.type === STT_FUNC));
    this.objects = ranges(symbols.filter((s) => s.type === STT_OBJECT));
    this.lines = lines;
    this.warning = warning;
  }

  /** Reads what an ELF image (already accepted by parseElf) holds for symbolising; never throws on a damaged table. */
  static fromElf(bytes: Uint8Array): Symbolizer {
    let symbols: ElfSymbol[] = [];
    let lines: LineRow[] = [];
    let warning: string | undefined;
    try {
      const sections = readSections(bytes);
      symbols = readSymbols(sections);
      const sec = (name: string) => sections.find((s) => s.name === name)?.data;
      const debugLine = sec(".debug_line");
      if (debugLine) lines = readLineTable(debugLine, { str: sec(".debug_str"), lineStr: sec(".debug_line_str") });
    } catch (e) {
      warning = `symbols: ${(e as Error).message}`;
    }
    return new Symbolizer(symbols, lines, warning);
  }

  /** True when the image has a line table (built with -g). */
  get hasLines(): boolean {
    return this.lines.length > 0;
  }

  /** The function holding `pc`, or undefined. */
  functionAt(pc: number): FunctionRange | undefined {
    return find(this.functions, pc);
  }

  /** A symbol (function or data object) by name. */
  lookup(name: string): FunctionRange | undefined {
    return this.functions.find((f) => f.name === name) ?? this.objects.find((o) => o.name === name);
  }

  locate(pc: number): Location {
    pc >>>= 0;
    const loc: Location = { pc };
    const f = find(this.functions, pc) ?? find(this.objects, pc);
    if (f) { loc.symbol = f.name; loc.offset = pc - f.start; }
    const row = lineFor(this.lines, pc);
    if (row) { loc.file = row.file; loc.line = row.line; }
    return loc;
  }

  /** `0x460 (main+0x28, list.c:17)`; just `0x460` when nothing is known. */
  format(pc: number): string {
    return formatLocation(this.locate(pc));
  }
}

export function formatLocation(loc: Location): string {
  const parts: string[] = [];
  if (loc.symbol !== undefined) parts.push(loc.offset ? `${loc.symbol}+${hex(loc.offset)}` : loc.symbol);
  if (loc.file !== undefined) parts.push(`${basename(loc.file)}:${loc.line}`);
  return parts.length ? `${hex(loc.pc)} (${parts.join(", ")})` : hex(loc.pc);
}

function ranges(symbols: readonly ElfSymbol[]): FunctionRange[] {
  const sorted = symbols.filter((s) => s.name !== "" && s.shndx !== 0).sort((a, b) => a.value - b.value || b.size - a.size);
  const out: FunctionRange[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const s = sorted[i]!;
    if (out.length && out[out.length - 1]!.start === s.value) continue; // an alias: the first (largest) wins
    const next = sorted.slice(i + 1).find((t) => t.value > s.value)?.value ?? 0xffffffff;
    out.push({ name: s.name, start: s.value, end: s.size > 0 ? s.value + s.size : next });
  }
  return out;
}

function find(list: readonly FunctionRange[], pc: number): FunctionRange | undefined {
  let lo = 0, hi = list.length - 1, best = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]!.start <= pc) { best = mid; lo = mid + 1; } else hi = mid - 1;
  }
  const f = best >= 0 ? list[best] : undefined;
  return f && pc < f.end ? f : undefined;
}
