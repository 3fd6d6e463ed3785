// The benchmark kernels of firmware/bench/kernels.h outside menic, from the same sources as the
// committed firmware/bench/compute.elf and coremark.elf: built by firmware/bench/hosted-main.c
// into a riscv32 Linux program that QEMU's linux-user emulator runs (bench/engines.ts), or into
// a program of the host itself (test/bench-kernels.test.ts). Neither is committed: they go under
// build/.
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { FIRMWARE_CODEGEN_FLAGS, findClang } from "../../host/fw/build.js";
import { STT_FUNC, readSections, readSymbols } from "../../host/elf.js";

export type Kernel = "compute" | "coremark" | "classic";
/** hosted-main.c's sources, relative to the package root. */
const SOURCES = ["firmware/bench/hosted-main.c", "firmware/bench/compute.c", "firmware/bench/coremark.c", "firmware/bench/classic.c"];
/** The kernels' functions, whose code must be the same in the engines' ELF and QEMU's (sameKernelCode). */
export const KERNEL_FUNCTION: Record<Kernel, string> = { compute: "compute_kernel", coremark: "coremark_kernel", classic: "classic_kernel" };

function compile(command: string[], root: string, what: string): void {
  const r = spawnSync(command[0]!, command.slice(1), { cwd: root, encoding: "utf8" });
  if (r.error) throw new Error(`${what}: cannot run ${command[0]}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${what} failed (${command.join(" ")}):\n${r.stderr.trim()}`);
}

/**
 * The kernels as a static riscv32 Linux program at `out`, for qemu-riscv32. The kernels compile
 * with the engines' flags (FIRMWARE_CODEGEN_FLAGS, -O2, as host/fw/examples.ts builds their ELFs)
 * and each is a translation unit of its own that calls nothing, so its object code is the
 * engines' own: only the link differs (its addresses, so the immediates of lui and of the
 * loads, stores and addis that complete them, which sameKernelCode allows and nothing else).
 */
export function buildLinuxKernels(root: string, out: string): void {
  const clang = findClang();
  if (clang === null) throw new Error("clang not found: install Debian's clang and lld (apt-get install clang lld)");
  mkdirSync(dirname(out), { recursive: true });
  compile([clang, ...FIRMWARE_CODEGEN_FLAGS, "-O2", "-fuse-ld=lld", "-static", "-Wl,--gc-sections", "-Wl,--build-id=none", "-o", out, ...SOURCES], root, "building the kernels for riscv32 Linux");
}

/** The kernels as a program of the host at `out`, built by its C compiler `cc` (gcc or clang), -O2. */
export function buildNativeKernels(root: string, out: string, cc: string): void {
  mkdirSync(dirname(out), { recursive: true });
  compile([cc, "-O2", "-o", out, ...SOURCES], root, "building the kernels for the host");
}

/** Runs `command` (a hosted-main.c program, behind QEMU or not): the checksum of each id in
 * 0 .. ids - 1 after `passes` passes of `kernel`, and the host seconds the process took. */
export function runHosted(command: string[], kernel: Kernel, passes: number, ids = 16): { checksums: number[]; seconds: number } {
  const t0 = performance.now();
  const r = spawnSync(command[0]!, [...command.slice(1), kernel, String(passes), String(ids)], { encoding: "utf8" });
  const seconds = (performance.now() - t0) / 1000;
  if (r.error) throw new Error(`cannot run ${command[0]}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${command.join(" ")} ${kernel} ${passes} ${ids} ended ${r.status ?? r.signal}: ${r.stderr.trim()}`);
  const lines = r.stdout.trim().split("\n");
  const checksums = lines.map((l, id) => {
    const m = /^(\d+) ([0-9a-f]{8})$/.exec(l);
    if (!m || Number(m[1]) !== id) throw new Error(`${command.join(" ")}: line ${id + 1} is not "${id} <checksum>": ${JSON.stringify(l)}`);
    return parseInt(m[2]!, 16);
  });
  if (checksums.length !== ids) throw new Error(`${command.join(" ")}: ${checksums.length} checksums, want ${ids}`);
  return { checksums, seconds };
}

/** The bytes of function `name` in an RV32 ELF image. */
function functionCode(elf: Uint8Array, name: string): Uint32Array {
  const sections = readSections(elf);
  const sym = readSymbols(sections).find((s) => s.name === name && s.type === STT_FUNC);
  if (!sym) throw new Error(`no function ${name} in the image`);
  const sec = sections[sym.shndx];
  if (!sec || sym.value < sec.addr || sym.value + sym.size > sec.addr + sec.size) throw new Error(`function ${name} is not inside its section`);
  const bytes = new Uint8Array(sec.data.subarray(sym.value - sec.addr, sym.value - sec.addr + sym.size)); // a copy: aligned, its own buffer
  return new Uint32Array(bytes.buffer, 0, bytes.length >> 2);
}

/** The bits of an RV32 instruction an address the link chose may change: the 20-bit immediate
 * of lui and auipc, and the 12-bit one of an I-type (addi, loads, jalr) or S-type (stores)
 * instruction; 0 for the rest, which must be the same bit for bit. */
function linkBits(insn: number): number {
  switch (insn & 0x7f) {
    case 0x37: case 0x17: return 0xfffff000; // lui, auipc
    case 0x13: case 0x03: case 0x67: return 0xfff00000; // op-imm, load, jalr
    case 0x23: return 0xfe000f80; // store
    default: return 0;
  }
}

/**
 * Why function `name` is not the same code in images `a` and `b` (its size, or the first
 * instruction that differs beyond an immediate the link sets), or null when it is: the same
 * instructions, so the same instructions run for the same inputs.
 */
export function sameKernelCode(a: Uint8Array, b: Uint8Array, name: string): string | null {
  const x = functionCode(a, name), y = functionCode(b, name);
  if (x.length !== y.length) return `${name} is ${x.length} instructions in one image, ${y.length} in the other`;
  for (let i = 0; i < x.length; i++) {
    const keep = ~linkBits(x[i]!) >>> 0;
    if (((x[i]! & keep) >>> 0) !== ((y[i]! & keep) >>> 0)) return `${name}+0x${(4 * i).toString(16)}: 0x${x[i]!.toString(16)} in one image, 0x${y[i]!.toString(16)} in the other`;
  }
  return null;
}

/** Where the bench and the test put the programs they build. */
export const hostedPath = (root: string, what: "linux" | "native") => join(root, "build", `bench-kernels-${what}`);
