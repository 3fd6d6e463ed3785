/**
 * The example firmware the repository ships prebuilt (firmware/examples/*.elf), so that
 * running the emulator needs no clang. test/firmware-build.test.ts rebuilds them and fails if
 * a committed ELF differs from what the sources give; `npm run fw:examples` regenerates them.
 */
import { join } from "node:path";
import { buildFirmware } from "./build.js";

export interface Example {
  name: string;
  /** Sources, relative to the repository root. */
  sources: string[];
  /** The committed ELF, relative to the repository root. */
  out: string;
  /** Built with -g (DWARF line table), for the examples of symbolised faults. */
  debug?: boolean;
  /** Computes with float or double: building it needs the soft-float runtime (host/fw/build.ts findSoftFloat). */
  softFloat?: boolean;
  defines?: Record<string, string>;
}

export const EXAMPLES: readonly Example[] = [
  { name: "hello", sources: ["firmware/examples/hello.c"], out: "firmware/examples/hello.elf" },
  { name: "psum", sources: ["firmware/examples/psum.c"], out: "firmware/examples/psum.elf" },
  { name: "fault", sources: ["firmware/examples/fault.c"], out: "firmware/examples/fault.elf" },
  { name: "nic", sources: ["firmware/examples/nic.c"], out: "firmware/examples/nic.elf" },
  { name: "pingpong", sources: ["firmware/examples/pingpong.c"], out: "firmware/examples/pingpong.elf" },
  // float and double through the soft-float runtime
  { name: "float", sources: ["firmware/examples/float.c"], out: "firmware/examples/float.elf", softFloat: true },
  // symbolised faults: a NULL dereference and a stack overflow, with -g
  { name: "list", sources: ["firmware/examples/list.c"], out: "firmware/examples/list.elf", debug: true },
  { name: "recurse", sources: ["firmware/examples/recurse.c"], out: "firmware/examples/recurse.elf", debug: true },
  // the SDK's unit tests (menic fw test firmware/tests/unit), and the same with two tests that fail on purpose
  { name: "unit-sdk", sources: ["firmware/tests/unit/sdk.c"], out: "firmware/tests/unit/sdk.elf", debug: true },
  { name: "unit-demo-fail", sources: ["firmware/tests/unit/sdk.c"], out: "firmware/tests/demo-fail/sdk-fail.elf", debug: true, defines: { MENIC_TEST_DEMO_FAIL: "1" } },
  // the graph executor: every engine of a device running a collective's graph (docs/graph.md)
  { name: "graph-executor", sources: ["firmware/graph/executor.c"], out: "firmware/graph/executor.elf" },
  // benchmark firmware (npm run bench -- engines); compute and coremark are kernels
  // (firmware/bench/kernels.h) that the bench also builds for QEMU, with another main
  { name: "compute", sources: ["firmware/bench/menic-main.c", "firmware/bench/compute.c"], out: "firmware/bench/compute.elf", defines: { KERNEL: "compute_kernel" } },
  { name: "coremark", sources: ["firmware/bench/menic-main.c", "firmware/bench/coremark.c"], out: "firmware/bench/coremark.elf", defines: { KERNEL: "coremark_kernel" } },
  { name: "classic", sources: ["firmware/bench/menic-main.c", "firmware/bench/classic.c"], out: "firmware/bench/classic.elf", defines: { KERNEL: "classic_kernel" } },
  { name: "idle", sources: ["firmware/bench/idle.c"], out: "firmware/bench/idle.elf" },
  { name: "doorbell", sources: ["firmware/bench/doorbell.c"], out: "firmware/bench/doorbell.elf" },
];

/** Build every example at -O2 (as committed) from the repository at `root`, writing the ELFs
 * under `outDir` (default: `root`, i.e. over the committed ones). Returns the paths written. */
export function buildExamples(root: string, outDir: string = root): string[] {
  return EXAMPLES.map((ex) => {
    const out = join(outDir, ex.out);
    buildFirmware({ sources: ex.sources, out, optLevel: "2", debug: ex.debug, defines: ex.defines, cwd: root });
    return out;
  });
}
