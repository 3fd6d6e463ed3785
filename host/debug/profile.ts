// Per-function cycle profile from the core's per-address table (config `profile`,
// assembly/engine/profile.ts) and the image's symbols: self cycles, instructions and calls of
// each function, summed over engines, and the table `menic fw run --profile` prints.

import type { Symbolizer } from "./symbolize.js";
import { PROFILE_ENTRY_BYTES } from "../generated/layouts.js";

/** One engine's profile table as the core keeps it: per SRAM word, cycles u64, instructions u32, calls u32. */
export { PROFILE_ENTRY_BYTES };

/** One function's share of a profiled run (`runFirmware` with `profile`). */
export interface ProfileRow {
  /** The function, or `0x<address>` for code no symbol covers. */
  function: string;
  /** Cycles spent in the function's own instructions (not in its callees). */
  cycles: number;
  /** Instructions of its own it ran. */
  instructions: number;
  /** Calls into the function's first instruction. */
  calls: number;
  /** cycles / all profiled cycles. */
  share: number;
}

/** Folds per-address tables (one per engine) into functions, most cycles first. */
export function profileByFunction(tables: readonly Uint8Array[], symbols: Symbolizer): ProfileRow[] {
  const rows = new Map<string, ProfileRow>();
  let total = 0;
  for (const t of tables) {
    const dv = new DataView(t.buffer, t.byteOffset, t.byteLength);
    for (let at = 0; at + PROFILE_ENTRY_BYTES <= t.length; at += PROFILE_ENTRY_BYTES) {
      const cycles = Number(dv.getBigUint64(at, true)), instructions = dv.getUint32(at + 8, true), calls = dv.getUint32(at + 12, true);
      if (cycles === 0 && calls === 0) continue;
      const pc = (at / PROFILE_ENTRY_BYTES) * 4;
      const f = symbols.functionAt(pc);
      const name = f?.name ?? `0x${pc.toString(16)}`;
      const row = rows.get(name) ?? { function: name, cycles: 0, instructions: 0, calls: 0, share: 0 };
      row.cycles += cycles;
      row.instructions += instructions;
      if (!f || f.start === pc) row.calls += calls;
      rows.set(name, row);
      total += cycles;
    }
  }
  const out = [...rows.values()].sort((a, b) => b.cycles - a.cycles || (a.function < b.function ? -1 : 1));
  for (const r of out) r.share = total ? r.cycles / total : 0;
  return out;
}

/** The table: function, cycles, share, instructions, calls, cycles per instruction. */
export function formatProfile(rows: readonly ProfileRow[], limit = 25): string {
  const shown = rows.slice(0, limit);
  const head = ["function", "cycles", "share", "instructions", "calls", "CPI"];
  const cells = shown.map((r) => [r.function, String(r.cycles), `${(r.share * 100).toFixed(1)}%`, String(r.instructions), String(r.calls), r.instructions ? (r.cycles / r.instructions).toFixed(2) : "-"]);
  const w = head.map((h, k) => Math.max(h.length, ...cells.map((c) => c[k]!.length)));
  const line = (c: string[]) => c.map((x, k) => (k === 0 ? x.padEnd(w[k]!) : x.padStart(w[k]!))).join("  ");
  const more = rows.length > limit ? `\n(${rows.length - limit} more functions; --json has all)` : "";
  return [line(head), ...cells.map(line)].join("\n") + more + "\n";
}
