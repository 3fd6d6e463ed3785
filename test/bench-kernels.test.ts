// The kernels of `npm run bench -- engines` (firmware/bench/kernels.h) compute on the engines what
// the same C computes on the host: the committed compute.elf, coremark.elf and classic.elf, run on 16
// engines for a few passes, send back per engine (hart id) the checksum the kernels built
// natively with the host's C compiler print for that id. So an ELF left stale after a change to
// its kernel, or a kernel whose result depends on the platform, fails here. And the kernels as
// bench/lib/kernels.ts builds them for QEMU have the engines' code, instruction for instruction
// (what makes the bench's instruction counts QEMU's too), and, where qemu-riscv32 is installed,
// the same checksums under it, a pass running as many instructions as QEMU counts.
import { afterAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Device } from "../host/device.js";
import { coreModule } from "../host/platform/node.js";
import { findClang, sdkRoot } from "../host/fw/build.js";
import { readSections, readSymbols } from "../host/elf.js";
import { KERNEL_FUNCTION, buildLinuxKernels, buildNativeKernels, runHosted, sameKernelCode, type Kernel } from "../bench/lib/kernels.js";

const root = sdkRoot();
const tmp = mkdtempSync(join(tmpdir(), "menic-kernels-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const runs = (cmd: string, ...args: string[]) => spawnSync(cmd, args, { stdio: "ignore" }).status === 0;
/** The host's C compiler: cc, gcc or clang, the first that answers. */
const cc = ["cc", "gcc", "clang"].find((c) => runs(c, "--version")) ?? null;
const clang = findClang();
const qemu = runs("qemu-riscv32", "--version");
const KERNELS: Kernel[] = ["compute", "coremark", "classic"];
const PASSES: Record<Kernel, number> = { compute: 2, coremark: 3, classic: 2 };
const elf = (k: Kernel) => new Uint8Array(readFileSync(join(root, "firmware", "bench", `${k}.elf`)));

/** `kernel`'s committed ELF on `engines` engines, `passes` passes each: each engine's checksum, and the instructions of all. */
async function onEngines(kernel: Kernel, passes: number, engines = 16): Promise<{ checksums: number[]; instructions: number }> {
  const dev = await Device.create(coreModule(), { engines });
  dev.start(dev.loadElf(elf(kernel)).entry);
  for (let e = 0; e < engines; e++) dev.mailboxPush(e, passes);
  dev.run(10_000_000_000n);
  let instructions = 0;
  const checksums = Array.from({ length: engines }, (_, e) => {
    expect(dev.engine(e)).toMatchObject({ state: "exited", exitCode: 0 });
    instructions += dev.engine(e).instructions;
    return dev.mailboxPop(e)!;
  });
  return { checksums, instructions };
}

/** The instructions QEMU runs for `program kernel passes ids`: one translation block per
 * instruction (-singlestep; QEMU 8.1 on also calls it -one-insn-per-tb), each execution logged
 * (-d exec, nochain: every block's, chained or not), one "Trace" line each. */
function qemuInstructions(program: string, kernel: Kernel, passes: number, ids: number): number {
  const log = join(tmp, "exec.log");
  const r = spawnSync("qemu-riscv32", ["-singlestep", "-d", "exec,nochain", "-D", log, program, kernel, String(passes), String(ids)], { stdio: "ignore" });
  expect(r.status).toBe(0);
  return readFileSync(log, "latin1").split("\n").filter((l) => l.startsWith("Trace ")).length;
}

describe("the bench's kernels", () => {
  it.skipIf(cc === null)("each engine's checksum is what the kernel built for the host computes for its hart id", async () => {
    const native = join(tmp, "native");
    buildNativeKernels(root, native, cc!);
    for (const k of KERNELS) {
      const engines = (await onEngines(k, PASSES[k])).checksums;
      expect(engines, `${k}: firmware/bench/${k}.elf against the host's build of the same sources (stale ELF? npm run fw:examples)`).toEqual(runHosted([native], k, PASSES[k]).checksums);
      expect(new Set(engines).size, `${k}: every hart id its own checksum`).toBe(16);
    }
    // no pass, no work: the checksums differ from those of a pass
    expect(runHosted([native], "coremark", 0, 2).checksums).not.toEqual(runHosted([native], "coremark", 1, 2).checksums);
  });

  it.skipIf(clang === null)("built for riscv32 Linux, each kernel is the engines' code but for the addresses the link sets", () => {
    const linux = join(tmp, "linux");
    buildLinuxKernels(root, linux);
    const program = new Uint8Array(readFileSync(linux));
    for (const k of KERNELS) expect(sameKernelCode(elf(k), program, KERNEL_FUNCTION[k])).toBeNull();
    // a register changed in the first instruction (its rd) is a difference
    const changed = elf("coremark");
    changed[findFunction(changed, "coremark_kernel")] ^= 0x80;
    expect(sameKernelCode(changed, program, "coremark_kernel")).toMatch(/^coremark_kernel\+0x0: /);
  });

  it.skipIf(clang === null || !qemu)("under qemu-riscv32, each id's checksum is its engine's, and a pass as many instructions", async () => {
    const linux = join(tmp, "linux-qemu");
    buildLinuxKernels(root, linux);
    for (const k of KERNELS) {
      expect(runHosted(["qemu-riscv32", linux], k, PASSES[k]).checksums).toEqual((await onEngines(k, PASSES[k])).checksums);
      // the instructions of one pass on ids 0 and 1 (what the bench's rates divide), counted by each
      const menic = (await onEngines(k, 1, 2)).instructions - (await onEngines(k, 0, 2)).instructions;
      expect(qemuInstructions(linux, k, 1, 2) - qemuInstructions(linux, k, 0, 2), k).toBe(menic);
      expect(menic).toBeGreaterThan(20_000);
    }
  });
});

/** The file offset of function `name` in ELF `bytes`. */
function findFunction(bytes: Uint8Array, name: string): number {
  const sections = readSections(bytes);
  const sym = readSymbols(sections).find((x) => x.name === name)!;
  const sec = sections[sym.shndx]!;
  return sec.offset + sym.value - sec.addr;
}
