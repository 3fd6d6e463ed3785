// The DWARF line-number program (.debug_line), versions 2 to 5: the table from code address to
// source file and line that a -g build carries (DWARF 5 section 6.2; DWARF 4 section 6.2 for the
// older header). Only what symbolising a pc needs: rows of (address, file, line), no columns,
// no view numbers. A malformed table is a DwarfError saying where; it never reads out of bounds.

export class DwarfError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DwarfError";
  }
}

export interface LineRow {
  address: number;
  file: string;
  line: number;
  /** The first address after the sequence this row belongs to (rows cover [address, next row or end)). */
  sequenceEnd: number;
}

/** A bounds-checked little-endian reader over one section. */
class Reader {
  private readonly dv: DataView;
  constructor(readonly bytes: Uint8Array, public at: number, private readonly what: string) {
    this.dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  need(n: number): void {
    if (this.at + n > this.bytes.length) throw new DwarfError(`${this.what}: truncated at offset ${this.at} (wanted ${n} more bytes of ${this.bytes.length})`);
  }
  u8(): number { this.need(1); return this.dv.getUint8(this.at++); }
  i8(): number { this.need(1); return this.dv.getInt8(this.at++); }
  u16(): number { this.need(2); const v = this.dv.getUint16(this.at, true); this.at += 2; return v; }
  u32(): number { this.need(4); const v = this.dv.getUint32(this.at, true); this.at += 4; return v; }
  u64(): number {
    const lo = this.u32(), hi = this.u32();
    if (hi !== 0) throw new DwarfError(`${this.what}: a 64-bit value at offset ${this.at - 8} does not fit a 32-bit target`);
    return lo;
  }
  uleb(): number {
    let v = 0, shift = 0;
    for (;;) {
      const b = this.u8();
      if (shift < 35) v += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if ((b & 0x80) === 0) return v;
    }
  }
  sleb(): number {
    let v = 0, shift = 0, b: number;
    do {
      b = this.u8();
      if (shift < 35) v += (b & 0x7f) * 2 ** shift;
      shift += 7;
    } while (b & 0x80);
    if (shift < 35 && b & 0x40) v -= 2 ** shift;
    return v;
  }
  cstr(): string {
    let end = this.at;
    while (end < this.bytes.length && this.bytes[end] !== 0) end++;
    if (end >= this.bytes.length) throw new DwarfError(`${this.what}: unterminated string at offset ${this.at}`);
    const s = new TextDecoder().decode(this.bytes.subarray(this.at, end));
    this.at = end + 1;
    return s;
  }
  skip(n: number): void { this.need(n); this.at += n; }
}

/** A string at `offset` of .debug_str or .debug_line_str. */
function strAt(table: Uint8Array | undefined, offset: number, name: string): string {
  if (!table) throw new DwarfError(`a line table refers to ${name}, which the image does not have`);
  return new Reader(table, offset, name).cstr();
}

// forms that can describe line-table entries (DWARF 5 section 7.5.6)
const DW_FORM_block = 0x09, DW_FORM_block1 = 0x0a, DW_FORM_data1 = 0x0b, DW_FORM_data2 = 0x05, DW_FORM_data4 = 0x06,
  DW_FORM_data8 = 0x07, DW_FORM_data16 = 0x1e, DW_FORM_string = 0x08, DW_FORM_strp = 0x0e, DW_FORM_line_strp = 0x1f,
  DW_FORM_udata = 0x0f;
const DW_LNCT_path = 1, DW_LNCT_directory_index = 2;

interface Strings { str?: Uint8Array; lineStr?: Uint8Array }

/** One attribute value of a v5 entry: a string or a number (blocks and 16-byte data are skipped: 0). */
function formValue(r: Reader, form: number, offset64: boolean, s: Strings): string | number {
  switch (form) {
    case DW_FORM_string: return r.cstr();
    case DW_FORM_strp: return strAt(s.str, offset64 ? r.u64() : r.u32(), ".debug_str");
    case DW_FORM_line_strp: return strAt(s.lineStr, offset64 ? r.u64() : r.u32(), ".debug_line_str");
    case DW_FORM_udata: return r.uleb();
    case DW_FORM_data1: return r.u8();
    case DW_FORM_data2: return r.u16();
    case DW_FORM_data4: return r.u32();
    case DW_FORM_data8: return r.u64();
    case DW_FORM_data16: r.skip(16); return 0;
    case DW_FORM_block: r.skip(r.uleb()); return 0;
    case DW_FORM_block1: r.skip(r.u8()); return 0;
    default: throw new DwarfError(`.debug_line: unsupported form 0x${form.toString(16)} in an entry format at offset ${r.at}`);
  }
}

/** v5 directory or file entries: each is a list of (content type, value). */
function entriesV5(r: Reader, offset64: boolean, s: Strings): { path: string; dir: number }[] {
  const formatCount = r.u8();
  const format: [number, number][] = [];
  for (let i = 0; i < formatCount; i++) format.push([r.uleb(), r.uleb()]);
  const count = r.uleb();
  const out: { path: string; dir: number }[] = [];
  for (let i = 0; i < count; i++) {
    let path = "", dir = 0;
    for (const [type, form] of format) {
      const v = formValue(r, form, offset64, s);
      if (type === DW_LNCT_path) path = String(v);
      else if (type === DW_LNCT_directory_index) dir = Number(v);
    }
    out.push({ path, dir });
  }
  return out;
}

/** dir/path, without a leading "./" (a -g build maps the package root to "."). */
const join = (dir: string, path: string) =>
  (path.startsWith("/") || dir === "" ? path : `${dir.replace(/\/$/, "")}/${path}`).replace(/^(\.\/)+/, "");

/** Reads every line-number program in .debug_line into rows sorted by address. */
export function readLineTable(debugLine: Uint8Array, strings: Strings = {}): LineRow[] {
  const rows: LineRow[] = [];
  let unit = 0;
  while (unit < debugLine.length) {
    const r = new Reader(debugLine, unit, ".debug_line");
    let length = r.u32();
    const offset64 = length === 0xffffffff;
    if (offset64) length = r.u64();
    const end = r.at + length;
    if (end > debugLine.length) throw new DwarfError(`.debug_line: the unit at offset ${unit} claims ${length} bytes, past the section's end`);
    const version = r.u16();
    if (version < 2 || version > 5) throw new DwarfError(`.debug_line: unit at offset ${unit} has version ${version} (2 to 5 are read)`);
    if (version >= 5) {
      const addressSize = r.u8();
      if (addressSize !== 4) throw new DwarfError(`.debug_line: unit at offset ${unit} has ${addressSize}-byte addresses (engines are RV32)`);
      r.u8(); // segment selector size
    }
    const headerLength = offset64 ? r.u64() : r.u32();
    const program = r.at + headerLength;
    const minInst = r.u8();
    if (version >= 4) r.u8(); // maximum operations per instruction: 1 on RISC-V
    r.u8(); // default_is_stmt: every row counts here
    const lineBase = r.i8();
    const lineRange = r.u8();
    const opcodeBase = r.u8();
    if (lineRange === 0) throw new DwarfError(`.debug_line: unit at offset ${unit} has line_range 0`);
    const opLengths: number[] = [];
    for (let i = 1; i < opcodeBase; i++) opLengths.push(r.u8());
    let files: string[];
    if (version >= 5) {
      const dirs = entriesV5(r, offset64, strings).map((d) => d.path);
      files = entriesV5(r, offset64, strings).map((f) => join(dirs[f.dir] ?? "", f.path));
    } else {
      const dirs = [""];
      for (let d = r.cstr(); d !== ""; d = r.cstr()) dirs.push(d);
      files = [""]; // v2-4 files are numbered from 1
      for (let f = r.cstr(); f !== ""; f = r.cstr()) {
        const dir = r.uleb(); r.uleb(); r.uleb();
        files.push(join(dirs[dir] ?? "", f));
      }
    }
    if (program > end) throw new DwarfError(`.debug_line: unit at offset ${unit} has a header longer than the unit`);
    r.at = program;
    runProgram(r, end, { minInst, lineBase, lineRange, opcodeBase, opLengths, files }, rows);
    unit = end;
  }
  return rows.sort((a, b) => a.address - b.address);
}

interface Header {
  minInst: number; lineBase: number; lineRange: number; opcodeBase: number; opLengths: number[];
  files: string[];
}

/** Runs one line-number program (DWARF 5 section 6.2.5) up to `end`, appending its rows. */
function runProgram(r: Reader, end: number, h: Header, rows: LineRow[]): void {
  let address = 0, file = 1, line = 1;
  let sequence: LineRow[] = [];
  const fileName = (n: number) => h.files[n] ?? `<file ${n}>`;
  const emit = () => sequence.push({ address, file: fileName(file), line, sequenceEnd: 0 });
  const reset = () => { address = 0; file = 1; line = 1; }; // the file register starts at 1 in every version (6.2.2)
  while (r.at < end) {
    const op = r.u8();
    if (op >= h.opcodeBase) { // special opcode
      const adj = op - h.opcodeBase;
      address += h.minInst * Math.floor(adj / h.lineRange);
      line += h.lineBase + (adj % h.lineRange);
      emit();
      continue;
    }
    switch (op) {
      case 0: { // extended
        const len = r.uleb();
        const next = r.at + len;
        if (len === 0 || next > end) throw new DwarfError(`.debug_line: extended opcode at offset ${r.at} runs past its unit`);
        const sub = r.u8();
        if (sub === 1) { // end_sequence: the address is one past the sequence's last byte
          for (const row of sequence) row.sequenceEnd = address;
          // lld relocates the code address of a section it garbage-collected to 0 (or -1): such
          // a sequence describes no code. (So a line table for code linked at 0 is not read; the
          // SDK links code above the NULL guard.)
          if (sequence.length && sequence[0]!.address !== 0 && sequence[0]!.address !== 0xffffffff) rows.push(...sequence);
          sequence = [];
          reset();
        } else if (sub === 2) {
          address = len - 1 === 4 ? r.u32() : len - 1 === 8 ? r.u64() : (() => { throw new DwarfError(`.debug_line: set_address with ${len - 1} bytes`); })();
        }
        r.at = next; // define_file, set_discriminator and vendor opcodes are skipped
        break;
      }
      case 1: emit(); break; // copy
      case 2: address += h.minInst * r.uleb(); break; // advance_pc
      case 3: line += r.sleb(); break; // advance_line
      case 4: file = r.uleb(); break; // set_file
      case 5: r.uleb(); break; // set_column
      case 6: case 7: case 10: case 11: break; // negate_stmt, set_basic_block, prologue_end, epilogue_begin
      case 8: address += h.minInst * Math.floor((255 - h.opcodeBase) / h.lineRange); break; // const_add_pc
      case 9: address += r.u16(); break; // fixed_advance_pc
      default: for (let i = 0; i < (h.opLengths[op - 1] ?? 0); i++) r.uleb(); // set_isa and unknown standard opcodes
    }
  }
  if (sequence.length) throw new DwarfError(`.debug_line: a sequence ends without end_sequence at offset ${end}`);
}

/** The row covering `pc` (the last row at or below it, inside its sequence), or null. */
export function lineFor(rows: readonly LineRow[], pc: number): LineRow | null {
  let lo = 0, hi = rows.length - 1, best = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (rows[mid]!.address <= pc) { best = mid; lo = mid + 1; } else hi = mid - 1;
  }
  // rows at one address from several sequences sort together: take one whose sequence holds pc
  for (let i = best; i >= 0 && rows[i]!.address === rows[best]!.address; i--) if (pc < rows[i]!.sequenceEnd) return rows[i]!;
  return null;
}
