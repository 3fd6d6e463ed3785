// ELF32 loader for engine images: parse (program headers and entry point only: that is all a
// loader needs, System V gABI ch. 4 and 5) and check the image against the engine memory map.
// Every problem is an ElfError naming it; nothing is loaded from a bad image.

import { REGIONS } from "./generated/layouts.js";

export class ElfError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ElfError";
  }
}

export interface Segment {
  vaddr: number;
  memsz: number;
  data: Uint8Array; // filesz bytes; the rest of memsz is zero
  flags: number; // PF_X = 1, PF_W = 2, PF_R = 4
}

export interface ElfImage {
  entry: number;
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
  if (s.vaddr >= REGIONS.HBM.base && end <= REGIONS.HBM.base + hbmBytes) return "hbm";
  throw new ElfError(
    `segment ${index} [${hex(s.vaddr)}, ${hex(end)}) is outside SRAM [${hex(REGIONS.SRAM.base)}, ${hex(REGIONS.SRAM.base + sramBytes)}) ` +
      `and HBM [${hex(REGIONS.HBM.base)}, ${hex(REGIONS.HBM.base + hbmBytes)})`,
  );
}

/** Checks an image against a device's memory sizes: segments in SRAM or HBM, no overlap, entry in code. */
export function checkImage(img: ElfImage, sramBytes: number, hbmBytes: number): void {
  img.segments.forEach((s, i) => placeSegment(s, sramBytes, hbmBytes, i));
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
