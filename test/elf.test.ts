import { describe, it, expect } from "vitest";
import { parseElf, checkImage, ElfError } from "../host/elf.js";
import { Device } from "../host/device.js";
import { coreModule } from "../host/platform/node.js";
import { writeElf, assemble } from "./helpers/rv.js";

const code = new Uint8Array(assemble("nop\nnop").buffer);
const SRAM = 131072, HBM = 16 << 20;
const load = (elf: Uint8Array) => checkImage(parseElf(elf), SRAM, HBM);

describe("ELF loader rejects bad images with a clear error", () => {
  it("accepts a good image", () => {
    expect(() => load(writeElf(0, [{ vaddr: 0, data: code }]))).not.toThrow();
  });
  it.each([
    ["a non-ELF file", new TextEncoder().encode("#!/bin/sh\necho hello, this is not an ELF file at all......\n"), /not an ELF file/],
    ["a 64-bit ELF", writeElf(0, [{ vaddr: 0, data: code }], { cls: 2 }), /not a 32-bit ELF.*ELF64/],
    ["a non-RISC-V ELF", writeElf(0, [{ vaddr: 0, data: code }], { machine: 62 }), /not a RISC-V ELF \(e_machine 62/],
    ["a relocatable object", writeElf(0, [{ vaddr: 0, data: code }], { type: 1 }), /not an executable ELF/],
    ["overlapping segments", writeElf(0, [{ vaddr: 0, data: code }, { vaddr: 4, data: code, flags: 6 }]), /segments 0 and 1 overlap at 0x00000004/],
    ["a segment outside SRAM and HBM", writeElf(0, [{ vaddr: 0, data: code }, { vaddr: 0x40000000, data: code }]), /segment 1 \[0x40000000, 0x40000008\) is outside SRAM/],
    ["a segment running past SRAM's end", writeElf(0, [{ vaddr: SRAM - 4, data: code }]), /segment 0 \[0x0001fffc, 0x00020004\) needs 131076 bytes of SRAM, but the device has sramBytes = 131072/],
    ["an entry point outside loaded memory", writeElf(0x1000, [{ vaddr: 0, data: code }]), /entry point 0x00001000 is outside every loaded segment/],
    ["an entry point in data", writeElf(0, [{ vaddr: 0, data: code, flags: 6 }]), /not executable/],
  ])("%s", (_name, elf, message) => {
    expect(() => load(elf)).toThrow(ElfError);
    expect(() => load(elf)).toThrow(message);
  });
  it.each([
    // segment 0 is good and would land first; segment 1 is outside memory
    ["a bad segment after a good one", [{ vaddr: 0x100, data: new Uint8Array([1, 2, 3, 4]) }, { vaddr: 0x40000000, data: code }], 0, /segment 1 .* is outside SRAM/],
    // every segment fits (one in SRAM, one in HBM); only the entry point is wrong (in data)
    ["a bad entry point", [{ vaddr: 0x100, data: new Uint8Array([1, 2, 3, 4]), flags: 6 }, { vaddr: 0x80000100, data: code }], 0x100, /not executable/],
  ] as const)("loads nothing from %s", async (_name, segments, entry, message) => {
    const dev = await Device.create(coreModule(), { engines: 2, nullGuardBytes: 0 }); // images at 0
    const bad = writeElf(entry, [...segments]);
    expect(() => dev.loadElf(bad)).toThrow(ElfError);
    expect(() => dev.loadElf(bad)).toThrow(message);
    // each engine's SRAM where segment 0 would land, and HBM where segment 1 would
    const sram = (e: number) => [...new Uint8Array(dev.core.memory.buffer, dev.core.sramPtr(dev.handle, e) + 0x100, 4)];
    expect([...sram(0), ...sram(1)]).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect([...dev.readHbm(0x100, 8)]).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(dev.engine(0).state).toBe("idle");
    // the same segment in a good image lands exactly there
    dev.loadElf(writeElf(0, [{ vaddr: 0, data: code }, segments[0]]));
    expect([...sram(0), ...sram(1)]).toEqual([1, 2, 3, 4, 1, 2, 3, 4]);
  });
});
