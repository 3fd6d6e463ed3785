// The firmware engineer's view of a bug (issue 11): the NULL guard, the stack that overflows
// into it, faults named by function and source line (ELF symbols, DWARF line table), the
// loader's size check and the `fw build` flags.
import { afterAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Device } from "../host/device.js";
import { coreModule } from "../host/platform/node.js";
import { runFirmware } from "../host/fw/run.js";
import { findClang, buildFirmware } from "../host/fw/build.js";
import { parseElf, readSections, readSymbols, ElfError } from "../host/elf.js";
import { Symbolizer } from "../host/debug/symbolize.js";
import { readLineTable, DwarfError } from "../host/debug/dwarf-line.js";
import { programElf, writeElf, assemble, CODE_BASE } from "./helpers/rv.js";

const clang = findClang();
const withClang = (name: string, fn: () => void) => (clang === null ? it.skip(`${name} [skipped: clang not found]`, fn) : it(name, fn));
const tmp = mkdtempSync(join(tmpdir(), "menic-fwdbg-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const example = (name: string) => new Uint8Array(readFileSync(`firmware/examples/${name}.elf`));
/** The line of `file` holding `marker`: the truth the line table must agree with. */
const lineOf = (file: string, marker: string) => readFileSync(file, "utf8").split("\n").findIndex((l) => l.includes(marker)) + 1;

async function runOne(src: string, config: Record<string, number> = {}) {
  const r = await runFirmware(programElf(src), { config: { engines: 1, ...config } });
  return r.engines[0]!;
}

describe("the NULL guard", () => {
  it("a store to 0 traps (store access fault, mtval 0) instead of overwriting memory", async () => {
    const e = await runOne("li t0, 42\nsw t0, 0(zero)\nli t1, 0x10000004\nsw zero, 0(t1)");
    expect(e).toMatchObject({ state: "faulted", mcause: 7, mtval: 0, pc: CODE_BASE + 8 });
    expect(e.fault).toBe("NULL pointer dereference (store to 0x0, inside the NULL guard [0, 0x400))");
  });

  it("covers [0, nullGuardBytes) exactly: the last guarded word traps, the first word above it is SRAM", async () => {
    const last = await runOne("lw a0, 0x3fc(zero)");
    expect(last).toMatchObject({ state: "faulted", mcause: 5, mtval: 0x3fc });
    const above = await runOne("li t0, 0x10000004\nlw a0, 0x400(zero)\nsw a0, 0(t0)"); // exits with its own first word
    expect(above).toMatchObject({ state: "exited", exitCode: assemble("li t0, 0x10000004", CODE_BASE)[0] });
    const high = assemble("lw a0, 0x7fc(zero)", 0x1000);
    const bigger = await runFirmware(writeElf(0x1000, [{ vaddr: 0x1000, data: new Uint8Array(high.buffer) }]), { config: { engines: 1, nullGuardBytes: 4096 } });
    expect(bigger.engines[0]).toMatchObject({ state: "faulted", mcause: 5, mtval: 0x7fc });
  });

  it("a jump to NULL faults at the fetch: mepc and mtval 0, the jump retired", async () => {
    const e = await runOne("nop\njalr ra, 0(zero)");
    expect(e).toMatchObject({ state: "faulted", mcause: 1, mtval: 0, pc: 0, instructions: 2 });
    expect(e.fault).toMatch(/^call through a NULL function pointer \(fetch at 0x0/);
  });

  it("AMOs and LR/SC are guarded too", async () => {
    expect(await runOne("li t1, 1\namoadd.w t0, t1, (zero)")).toMatchObject({ state: "faulted", mcause: 7, mtval: 0 });
    expect(await runOne("lr.w t0, (zero)")).toMatchObject({ state: "faulted", mcause: 5, mtval: 0 });
  });

  it("nullGuardBytes = 0 maps all of SRAM again (for images linked at 0)", async () => {
    const code = assemble("li t0, 42\nsw t0, 0x100(zero)\nlw a0, 0x100(zero)\nli t1, 0x10000004\nsw a0, 0(t1)");
    const r = await runFirmware(writeElf(0, [{ vaddr: 0, data: new Uint8Array(code.buffer) }]), { config: { engines: 1, nullGuardBytes: 0 } });
    expect(r.engines[0]).toMatchObject({ state: "exited", exitCode: 42 });
  });

  it("the loader refuses a segment inside the guard, naming the field", async () => {
    const dev = await Device.create(coreModule(), { engines: 1 });
    const code = new Uint8Array(assemble("nop").buffer);
    expect(() => dev.loadElf(writeElf(0, [{ vaddr: 0, data: code }]))).toThrow(
      "segment 0 [0x00000000, 0x00000004) starts inside the NULL guard [0, 0x00000400) (config nullGuardBytes = 1024)",
    );
  });

  it("refuses a guard that leaves no SRAM", async () => {
    await expect(Device.create(coreModule(), { sramBytes: 4096, nullGuardBytes: 4096 })).rejects.toThrow(/nullGuardBytes: must be less than sramBytes \(4096\)/);
  });
});

describe("the stack below the image", () => {
  it("a runaway recursion traps as a stack overflow at its first access below the stack, named by line", async () => {
    const r = await runFirmware(example("recurse"), { config: { engines: 2 } });
    for (const e of r.engines) {
      expect(e.state).toBe("faulted");
      expect(e.mcause).toBe(7);
      expect(e.fault).toMatch(new RegExp(`^stack overflow on engine ${e.id} \\(store to 0x3fc with sp 0x3f0, below the stack's bottom 0x400\\)$`));
      expect(e.where).toMatchObject({ symbol: "depth", file: "firmware/examples/recurse.c", line: lineOf("firmware/examples/recurse.c", "faults here") });
    }
  });

  it("sp below the bottom makes a fault near sp an overflow; with sp in the stack, or no stack (sp 0), it is a NULL dereference", async () => {
    expect((await runOne("li sp, 0x3f0\nsw ra, 12(sp)")).fault).toBe("stack overflow on engine 0 (store to 0x3fc with sp 0x3f0, below the stack's bottom 0x400)");
    expect((await runOne("li sp, 0x4000\nsw ra, 12(zero)")).fault).toBe("NULL pointer dereference (store to 0xc, inside the NULL guard [0, 0x400))");
  });

  it("a frame larger than the guard wraps below 0 and still traps as an overflow", async () => {
    // sp at the stack's bottom, then a 4 KiB frame: the store lands at 0xfffff400, unmapped
    const e = await runOne("li sp, 0x400\nli t0, -4096\nadd sp, sp, t0\nsw ra, 0(sp)");
    expect(e).toMatchObject({ state: "faulted", mcause: 7, mtval: 0xfffff400 });
    expect(e.fault).toBe("stack overflow on engine 0 (store to 0xfffff400 with sp 0xfffff400, below the stack's bottom 0x400)");
  });
});

describe("symbolised faults", () => {
  it("a NULL load in a list walk names the function, file and line of the bug (committed -g example)", async () => {
    const r = await runFirmware(example("list"), { config: { engines: 1 } });
    const e = r.engines[0]!;
    expect(e).toMatchObject({ state: "faulted", mcause: 5, mtval: 0 });
    expect(e.fault).toBe("NULL pointer dereference (load from 0x0, inside the NULL guard [0, 0x400))");
    const sym = Symbolizer.fromElf(example("list"));
    const sum = sym.lookup("sum")!;
    expect(e.where).toEqual({ pc: e.pc, symbol: "sum", offset: e.pc - sum.start, file: "firmware/examples/list.c", line: lineOf("firmware/examples/list.c", "faults here") });
    expect(sym.format(e.pc)).toBe(`0x${e.pc.toString(16)} (sum+0x${(e.pc - sum.start).toString(16)}, list.c:${e.where!.line})`);
  });

  it("an image without -g still names the function; a running engine is located too", async () => {
    const r = await runFirmware(example("fault"), { config: { engines: 1 } });
    expect(r.engines[0]!.where).toMatchObject({ symbol: "main" });
    expect(r.engines[0]!.where!.file).toBeUndefined();
    const hello = await runFirmware(example("hello"), { config: { engines: 1 }, untilPs: 300_000n });
    expect(hello.engines[0]!.state).toBe("running");
    const f = Symbolizer.fromElf(example("hello")).functionAt(hello.engines[0]!.pc)!;
    expect(hello.engines[0]!.where).toEqual({ pc: hello.engines[0]!.pc, symbol: f.name, offset: hello.engines[0]!.pc - f.start });
  });

  it("function ranges agree with the symbol table's sizes", () => {
    const elf = example("list");
    const funcs = readSymbols(readSections(elf)).filter((s) => s.type === 2 && s.size > 0);
    const sym = Symbolizer.fromElf(elf);
    expect(funcs.length).toBeGreaterThan(5);
    for (const f of funcs) {
      expect(sym.functionAt(f.value)?.name).toBe(f.name);
      expect(sym.functionAt(f.value + f.size - 4)?.name).toBe(f.name);
    }
    expect(sym.functionAt(0x100)).toBeUndefined();
  });

  const dwarfdump = spawnSync("llvm-dwarfdump", ["--version"]).status === 0;
  (dwarfdump ? it : it.skip)("the line table reads as llvm-dwarfdump reads it, row for row", () => {
    const out = spawnSync("llvm-dwarfdump", ["--debug-line", "firmware/examples/list.elf"], { encoding: "utf8" }).stdout;
    const sec = (name: string) => readSections(example("list")).find((s) => s.name === name)?.data;
    const rows = readLineTable(sec(".debug_line")!, { str: sec(".debug_str"), lineStr: sec(".debug_line_str") });
    // llvm-dwarfdump's rows: "0x<addr> <line> <col> <file> ..." (end_sequence rows excluded); dead sequences sit at 0
    const theirs = [...out.matchAll(/^0x([0-9a-f]{16})\s+(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+(?!.*end_sequence)/gm)]
      .map((m) => ({ address: parseInt(m[1]!, 16), line: Number(m[2]) }))
      .filter((r) => r.address >= 0x400);
    expect(theirs.length).toBeGreaterThan(50);
    expect(rows.map((r) => ({ address: r.address, line: r.line }))).toEqual(
      [...theirs].sort((a, b) => a.address - b.address),
    );
  });

  it("a damaged line table is a DwarfError saying where, and the symbolizer keeps function names", () => {
    const elf = example("list");
    const sections = readSections(elf);
    const line = sections.find((s) => s.name === ".debug_line")!;
    expect(() => readLineTable(line.data.subarray(0, 30))).toThrow(DwarfError);
    expect(() => readLineTable(line.data.subarray(0, 30))).toThrow(/\.debug_line: .*(truncated|past the section's end)/);
    const bad = elf.slice();
    bad.fill(0xff, line.offset + 4, line.offset + 6); // version 0xffff
    const sym = Symbolizer.fromElf(bad);
    expect(sym.warning).toMatch(/version 65535/);
    expect(sym.hasLines).toBe(false);
    expect(sym.lookup("sum")).toBeDefined();
    expect(() => readSections(elf.subarray(0, 200))).toThrow(ElfError);
  });
});

describe("the loader's size check", () => {
  it("refuses an image larger than the configured SRAM, saying both sizes", async () => {
    const dev = await Device.create(coreModule(), { engines: 1, sramBytes: 65536 });
    const elf = writeElf(CODE_BASE, [{ vaddr: CODE_BASE, data: new Uint8Array(assemble("nop").buffer), memsz: 0x20c00 }]);
    expect(() => dev.loadElf(elf)).toThrow(
      "segment 0 [0x00000400, 0x00021000) needs 135168 bytes of SRAM, but the device has sramBytes = 65536: give it more (--set sramBytes=135168) or make the image smaller",
    );
  });

  it("an SDK image runs in any SRAM that holds it: the stack is below the image, not at the top of a linked size", async () => {
    const img = parseElf(example("hello"));
    const end = Math.max(...img.segments.filter((s) => s.vaddr < 0x80000000).map((s) => s.vaddr + s.memsz));
    const fits = Math.ceil(end / 4096) * 4096;
    const r = await runFirmware(example("hello"), { config: { engines: 1, sramBytes: fits } });
    expect(r.engines[0]).toMatchObject({ state: "exited", exitCode: 0 });
    if (fits > 4096) await expect(runFirmware(example("hello"), { config: { engines: 1, sramBytes: fits - 4096 } })).rejects.toThrow(/needs \d+ bytes of SRAM, but the device has sramBytes = \d+/);
  });
});

describe("menic fw build flags", () => {
  const menic = (...args: string[]) => spawnSync("node", ["bin/menic.js", ...args], { encoding: "utf8" });

  withClang("passes -g, -D, -I, -O and the flags after -- to clang", () => {
    const inc = join(tmp, "inc");
    mkdirSync(inc, { recursive: true });
    writeFileSync(join(inc, "answer.h"), "#define BASE 30\n");
    writeFileSync(join(tmp, "flags.c"), '#include <menic.h>\n#include "answer.h"\nint main(void) { return BASE + FOO + BAR + PLAIN; }\n');
    const out = join(tmp, "flags.elf");
    const b = menic("fw", "build", join(tmp, "flags.c"), "-o", out, "-g", "-DFOO=7", "-D", "PLAIN", "-I", inc, "-O1", "--", "-DBAR=4");
    expect(b.stderr).toContain(`wrote ${out}`);
    expect(b.status).toBe(0);
    const elf = new Uint8Array(readFileSync(out));
    expect(readSections(elf).some((s) => s.name === ".debug_line")).toBe(true);
    const run = menic("fw", "run", out, "--engines", "1", "--json");
    expect(JSON.parse(run.stdout).engines[0]).toMatchObject({ state: "exited", exitCode: 30 + 7 + 4 + 1 });
    // without -g: no DWARF
    const plain = buildFirmware({ sources: [join(tmp, "flags.c")], out: join(tmp, "plain.elf"), includes: [inc], defines: { FOO: "1", BAR: "1", PLAIN: "1" } });
    expect(readSections(plain.elf).some((s) => s.name.startsWith(".debug"))).toBe(false);
    expect(plain.command).toContain("-O2");
    expect(plain.command).not.toContain("-g");
  });

  withClang("a -g build is byte-reproducible", () => {
    const a = buildFirmware({ sources: ["firmware/examples/list.c"], out: join(tmp, "a.elf"), debug: true }).elf;
    const b = buildFirmware({ sources: ["firmware/examples/list.c"], out: join(tmp, "b", "b.elf"), debug: true }).elf;
    expect(Buffer.compare(Buffer.from(a), Buffer.from(b))).toBe(0);
  });

  it("refuses a bad -O, a bad -D and an unknown option with usage", () => {
    expect(menic("fw", "build", "x.c", "-o", "x.elf", "-O", "9").stderr).toContain("menic: -O 9: must be one of 0, 1, 2, 3, s, z, g\n");
    expect(menic("fw", "build", "x.c", "-o", "x.elf", "-D", "1BAD").stderr).toContain("-D wants NAME or NAME=VALUE, got 1BAD");
    const r = menic("fw", "build", "x.c", "-o", "x.elf", "--frobnicate");
    expect(r.status).toBe(2);
    expect(r.stderr).toBe("menic: unknown option --frobnicate\n(menic fw build --help says how to use it)\n");
  });

  it("--json of fw run carries the location and the explanation", () => {
    const r = menic("fw", "run", "firmware/examples/list.elf", "--engines", "1", "--json");
    expect(r.status).toBe(1);
    const e = JSON.parse(r.stdout).engines[0];
    expect(e.where).toMatchObject({ symbol: "sum", file: "firmware/examples/list.c", line: lineOf("firmware/examples/list.c", "faults here") });
    expect(e.fault).toMatch(/^NULL pointer dereference/);
    const text = menic("fw", "run", "firmware/examples/list.elf", "--engines", "1");
    expect(text.stdout).toMatch(new RegExp(`NULL pointer dereference \\(load from 0x0, inside the NULL guard \\[0, 0x400\\)\\) at pc 0x[0-9a-f]+ \\(sum\\+0x[0-9a-f]+, list\\.c:${lineOf("firmware/examples/list.c", "faults here")}\\)`));
  });
});
