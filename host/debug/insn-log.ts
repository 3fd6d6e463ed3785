// The instruction log (`menic fw run --log insn[=<engines>]`): the core's records
// (assembly/engine/debug.ts, executeLogged) as lines, one per instruction an engine retired or
// trapped on, in the order the device ran them: engine, pc, the instruction word, its
// disassembly, and the register it wrote with the new value (as `spike -l --log-commits` and
// `qemu -d in_asm,cpu` show them), or the trap it took.

import { disassemble, decodeInsn, ABI_NAMES } from "./disasm.js";

/** One logged instruction. */
export interface InsnRecord {
  /** the engine that ran it */
  engine: number;
  /** its address */
  pc: number;
  /** the instruction word */
  insn: number;
  /** retired, or trapped (mcause in `value`) */
  trapped: boolean;
  /** the register it names as its destination (its bits 7..11; 0 when it writes none) */
  rd: number;
  /** rd's new value (retired), or mcause (trapped) */
  value: number;
}

/** Bytes of a core record: pc u32, instruction u32, value u32, engine u16, rd u8, flags u8 (1 retired, 2 trapped). */
export const INSN_RECORD_BYTES = 16;

/** The default of `--log-limit`: lines of log before it stops (and says so). */
export const DEFAULT_LOG_LIMIT = 100_000;
/** The largest `--log-limit`: the log's buffer is 16 bytes a line in the core's memory (160 MB). */
export const MAX_LOG_LIMIT = 10_000_000;

/** Decodes `n` core records from `bytes`. */
export function readInsnRecords(bytes: Uint8Array, n: number): InsnRecord[] {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: InsnRecord[] = [];
  for (let at = 0; at < n * INSN_RECORD_BYTES; at += INSN_RECORD_BYTES) {
    out.push({
      pc: dv.getUint32(at, true), insn: dv.getUint32(at + 4, true), value: dv.getUint32(at + 8, true),
      engine: dv.getUint16(at + 12, true), rd: dv.getUint8(at + 14), trapped: dv.getUint8(at + 15) === 2,
    });
  }
  return out;
}

const hex8 = (n: number): string => "0x" + (n >>> 0).toString(16).padStart(8, "0");

/** A record as a line: `e0 0x00004000 (0x00001137) lui sp, 0x1              sp 0x00001000`. */
export function formatInsn(r: InsnRecord): string {
  const head = `e${r.engine} ${hex8(r.pc)} (${hex8(r.insn)}) ${disassemble(r.insn, r.pc)}`;
  let effect = "";
  if (r.trapped) effect = `trap mcause ${r.value}`;
  else if (r.rd !== 0 && decodeInsn(r.insn)?.writesRd) effect = `${ABI_NAMES[r.rd]} ${hex8(r.value)}`;
  return effect ? `${head.padEnd(56)} ${effect}` : head;
}
