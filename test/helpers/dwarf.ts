// The source files a -g firmware image's DWARF line table names (host/debug/dwarf-line.ts).
import { readSections } from "../../host/elf.js";
import { readLineTable } from "../../host/debug/dwarf-line.js";

/** The file names of `elf`'s line table, each once, sorted: as gdb would look them up. */
export function lineTableFiles(elf: Uint8Array): string[] {
  const sec = (name: string) => readSections(elf).find((s) => s.name === name)?.data;
  const rows = readLineTable(sec(".debug_line")!, { str: sec(".debug_str"), lineStr: sec(".debug_line_str") });
  return [...new Set(rows.map((r) => r.file))].sort();
}
