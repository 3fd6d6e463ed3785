// ELF32 loader for engine images: parse (program headers and entry point: what a loader needs,
// System V gABI ch. 4 and 5; section headers and the symbol table, for debuggers) and check the
// image against the engine memory map.
// Every problem is an ElfError naming it; nothing is loaded from a bad image.

import { REGIONS } from "./generated/layouts.js";

/** An ELF file is not a loadable RV32 executable, or does not fit the device: the message says what and where. */
export class ElfError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ElfError";
  }
}

/** One loadable segment (PT_LOAD) of an image. */
export interface Segment {
  /** Where it loads: an engine's SRAM address (every engine gets a copy) or an HBM address. */
  vaddr: number;
  /** Its size in memory, bytes. */
  memsz: number;
  /** Its file bytes (filesz of them); the rest of memsz is zero. */
  data: Uint8Array;
  /** ELF p_flags: PF_X = 1, PF_W = 2, PF_R = 4. */
  flags: number;
}

/** The loadable part of an ELF file ({@link parseElf}). */
export interface ElfImage {
  /** The entry point, where {@link Device.start} starts the engines. */
  entry: number;
  /** The PT_LOAD segments, in file order. */
  segments: Segment[];
}

const EM_RISCV = 243;
const PT_LOAD = 1;
const PF_X = 1;

/** Parses the loadable part of an ELF file; throws ElfError on anything that is not a RV32 executable. */
export function parseElf(bytes: Uint8Array): ElfImage {
  if (bytes.length < 52 || bytes[0] !== 0x7f || bytes[1] !== 0x45 || bytes[2] !== 0x4c || bytes[3] !== 0x46)
    throw new ElfError("not an ELF file (bad magic)");
  if (bytes[4] !== 1) throw new ElfError(`not a 32-bit ELF (EI_CLASS ${bytes[4]}${bytes[4] === 2 ? ", ELF64" : ""}): engines are RV32`);
  if (bytes[5] !== 1) throw new ElfError("not a little-endian ELF (EI_DATA must be 1)");
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const type = dv.getUint16(16, true), machine = dv.getUint16(18, true);
  if (machine !== EM_RISCV) throw new ElfError(`not a RISC-V ELF (e_machine ${machine}, want ${EM_RISCV})`);
  if (type !== 2) throw new ElfError(`not an executable ELF (e_type ${type}, want 2 = ET_EXEC)`);
  const entry = dv.getUint32(24, true);
  const phoff = dv.getUint32(28, true), phentsize = dv.getUint16(42, true), phnum = dv.getUint16(44, true);
  if (phnum === 0) throw new ElfError("no program headers");
  if (phentsize < 32 || phoff + phnum * phentsize > bytes.length) throw new ElfError("program header table is truncated");
  const segments: Segment[] = [];
  for (let i = 0; i < phnum; i++) {
    const o = phoff + i * phentsize;
    if (dv.getUint32(o, true) !== PT_LOAD) continue;
    const offset = dv.getUint32(o + 4, true), vaddr = dv.getUint32(o + 8, true);
    const filesz = dv.getUint32(o + 16, true), memsz = dv.getUint32(o + 20, true), flags = dv.getUint32(o + 24, true);
    if (memsz === 0) continue;
    if (filesz > memsz) throw new ElfError(`segment ${i}: p_filesz ${filesz} > p_memsz ${memsz}`);
    if (offset + filesz > bytes.length) throw new ElfError(`segment ${i}: file data beyond the end of the file`);
    segments.push({ vaddr, memsz, data: bytes.subarray(offset, offset + filesz), flags });
  }
  if (segments.length === 0) throw new ElfError("no loadable segments");
  return { entry, segments };
}

const hex = (n: number) => "0x" + (n >>> 0).toString(16).padStart(8, "0");

/** Which memory a segment lands in, or an ElfError if it does not fit one. */
export function placeSegment(s: Segment, sramBytes: number, hbmBytes: number, index: number): "sram" | "hbm" {
  const end = s.vaddr + s.memsz;
  if (s.vaddr >= REGIONS.SRAM.base && end <= REGIONS.SRAM.base + sramBytes) return "sram";
  if (s.vaddr >= REGIONS.SRAM.base && end <= REGIONS.SRAM.base + REGIONS.SRAM.window)
    throw new ElfError(
      `segment ${index} [${hex(s.vaddr)}, ${hex(end)}) needs ${end - REGIONS.SRAM.base} bytes of SRAM, ` +
        `but the device has sramBytes = ${sramBytes}: give it more (--set sramBytes=${Math.ceil((end - REGIONS.SRAM.base) / 4096) * 4096}) or make the image smaller`,
    );
  if (s.vaddr >= REGIONS.HBM.base && end <= REGIONS.HBM.base + hbmBytes) return "hbm";
  throw new ElfError(
    `segment ${index} [${hex(s.vaddr)}, ${hex(end)}) is outside SRAM [${hex(REGIONS.SRAM.base)}, ${hex(REGIONS.SRAM.base + sramBytes)}) ` +
      `and HBM [${hex(REGIONS.HBM.base)}, ${hex(REGIONS.HBM.base + hbmBytes)})`,
  );
}

/**
 * Checks an image against a device's memory: segments in SRAM or HBM (saying both sizes when
 * SRAM is too small) and clear of the NULL guard, no overlap, entry in code.
 */
export function checkImage(img: ElfImage, sramBytes: number, hbmBytes: number, nullGuardBytes = 0): void {
  img.segments.forEach((s, i) => {
    placeSegment(s, sramBytes, hbmBytes, i);
    if (s.vaddr < REGIONS.SRAM.base + nullGuardBytes)
      throw new ElfError(
        `segment ${i} [${hex(s.vaddr)}, ${hex(s.vaddr + s.memsz)}) starts inside the NULL guard [0, ${hex(nullGuardBytes)}) ` +
          `(config nullGuardBytes = ${nullGuardBytes}): link it above the guard, as the SDK's link.ld does, or run with --set nullGuardBytes=0`,
      );
  });

  const sorted = [...img.segments].map((s, i) => ({ s, i })).sort((a, b) => a.s.vaddr - b.s.vaddr);
  for (let k = 1; k < sorted.length; k++) {
    const a = sorted[k - 1], b = sorted[k];
    if (a.s.vaddr + a.s.memsz > b.s.vaddr)
      throw new ElfError(`segments ${a.i} and ${b.i} overlap at ${hex(b.s.vaddr)}`);
  }
  const home = img.segments.find((s) => img.entry >= s.vaddr && img.entry < s.vaddr + s.memsz);
  if (!home) throw new ElfError(`entry point ${hex(img.entry)} is outside every loaded segment`);
  if (!(home.flags & PF_X)) throw new ElfError(`entry point ${hex(img.entry)} is in a segment that is not executable`);
  if (img.entry >= REGIONS.HBM.base) throw new ElfError(`entry point ${hex(img.entry)} is in HBM: engines fetch only from SRAM`);
  if (img.entry & 3) throw new ElfError(`entry point ${hex(img.entry)} is not 4-byte aligned`);
}

export interface ElfSection {
  name: string;
  type: number;
  addr: number;
  offset: number;
  size: number;
  /** sh_link: for .symtab, the index of its string table. */
  link: number;
  /** The section's bytes (empty for SHT_NOBITS). */
  data: Uint8Array;
}

export interface ElfSymbol {
  name: string;
  value: number;
  size: number;
  /** STT_*: 0 none, 1 object, 2 func, 3 section, 4 file. */
  type: number;
  /** STB_*: 0 local, 1 global, 2 weak. */
  bind: number;
  /** Section index; 0xfff1 (SHN_ABS) for linker-defined absolute symbols. */
  shndx: number;
}

export const STT_OBJECT = 1;
export const STT_FUNC = 2;
const SHT_SYMTAB = 2;
const SHT_NOBITS = 8;
const SH_SIZE = 40;
const SYM_SIZE = 16;

function cString(bytes: Uint8Array, at: number, what: string): string {
  if (at >= bytes.length) throw new ElfError(`${what}: string offset ${at} is beyond its table (${bytes.length} bytes)`);
  let end = at;
  while (end < bytes.length && bytes[end] !== 0) end++;
  return new TextDecoder().decode(bytes.subarray(at, end));
}

/** The section headers of an ELF32 little-endian file (already accepted by parseElf); [] when it has none. */
export function readSections(bytes: Uint8Array): ElfSection[] {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const shoff = dv.getUint32(32, true), shentsize = dv.getUint16(46, true), shnum = dv.getUint16(48, true), shstrndx = dv.getUint16(50, true);
  if (shoff === 0 || shnum === 0) return [];
  if (shentsize < SH_SIZE || shoff + shnum * shentsize > bytes.length) throw new ElfError("section header table is truncated");
  const raw = Array.from({ length: shnum }, (_, i) => {
    const o = shoff + i * shentsize;
    const type = dv.getUint32(o + 4, true), offset = dv.getUint32(o + 16, true), size = dv.getUint32(o + 20, true);
    if (type !== SHT_NOBITS && offset + size > bytes.length) throw new ElfError(`section ${i}: data beyond the end of the file`);
    return { nameAt: dv.getUint32(o, true), type, addr: dv.getUint32(o + 12, true), offset, size, link: dv.getUint32(o + 24, true), data: type === SHT_NOBITS ? new Uint8Array(0) : bytes.subarray(offset, offset + size) };
  });
  if (shstrndx >= shnum) throw new ElfError(`section name table index ${shstrndx} is out of range (${shnum} sections)`);
  const names = raw[shstrndx]!.data;
  return raw.map((s, i) => ({ name: s.nameAt === 0 ? "" : cString(names, s.nameAt, `section ${i} name`), type: s.type, addr: s.addr, offset: s.offset, size: s.size, link: s.link, data: s.data }));
}

/** Every symbol of .symtab (its strings from the section it links to); [] for a stripped image. */
export function readSymbols(sections: readonly ElfSection[]): ElfSymbol[] {
  const symtab = sections.find((s) => s.type === SHT_SYMTAB);
  if (!symtab) return [];
  const strtab = sections[symtab.link];
  if (!strtab) throw new ElfError(`.symtab links to section ${symtab.link}, which does not exist`);
  const dv = new DataView(symtab.data.buffer, symtab.data.byteOffset, symtab.data.byteLength);
  const out: ElfSymbol[] = [];
  for (let o = SYM_SIZE; o + SYM_SIZE <= symtab.data.length; o += SYM_SIZE) { // entry 0 is the null symbol
    const info = dv.getUint8(o + 12);
    out.push({
      name: cString(strtab.data, dv.getUint32(o, true), `symbol ${o / SYM_SIZE} name`),
      value: dv.getUint32(o + 4, true),
      size: dv.getUint32(o + 8, true),
      type: info & 0xf,
      bind: info >> 4,
      shndx: dv.getUint16(o + 14, true),
    });
  }
  return out;
}
