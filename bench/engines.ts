// npm run bench -- engines
//   engines.mips.1, engines.mips.16: emulated instructions per host second running the
//     compute-bound firmware/bench/compute.elf on 1 and on 16 engines with the JIT (config
//     field jit = 1; median of 3 runs), and engines.mips.1.interp, engines.mips.16.interp: the
//     same with the interpreter, measured in the same run, alternating with the JIT's runs;
//   engines.jit.compile_ms: host milliseconds spent compiling translations in one 16-engine run
//     (the process has compiled them before, for the warm-up run: host/jit-modules.ts shares a
//     compiled module by its bytes, so this is mostly instantiating them), and
//     engines.jit.compile_ms.first: the same in the process's first JIT run, which compiles them;
//   engines.jit.insns_per_call: instructions per call into translated code in that run (an
//     engine's window is one or two calls: the block where it starts, then the loop's region);
//   engines.wfi.host_s_per_sim_s: host seconds per simulated second with 16 engines asleep in
//     wfi between 1 kHz timer ticks (firmware/bench/idle.elf).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Device } from "../host/device.js";
import { coreModule, packageRoot } from "../host/platform/node.js";
import { figure, median } from "./lib/report.js";

const root = packageRoot();
const compute = readFileSync(join(root, "firmware/bench/compute.elf"));
const idle = readFileSync(join(root, "firmware/bench/idle.elf"));

async function computeRun(engines: number, passes: number, jit = 1): Promise<{ instructions: number; hostS: number; simPs: bigint; compileMs: number; calls: number }> {
  const dev = await Device.create(coreModule(), { engines, jit });
  dev.start(dev.loadElf(compute).entry);
  for (let e = 0; e < engines; e++) dev.mailboxPush(e, passes);
  const t0 = performance.now();
  const simPs = dev.run(100_000_000_000_000n);
  const hostS = (performance.now() - t0) / 1000;
  let instructions = 0;
  for (let e = 0; e < engines; e++) {
    const r = dev.engine(e);
    if (r.state !== "exited" || r.exitCode !== 0) throw new Error(`bench: engine ${e} ended ${r.state}`);
    instructions += r.instructions;
  }
  const stats = dev.jitStats();
  return { instructions, hostS, simPs, compileMs: stats.compileMs, calls: stats.calls };
}

export async function run(): Promise<void> {
  await computeRun(16, 20, 0); // warm up V8's JIT for the core
  const first = await computeRun(16, 20, 1);
  for (const [engines, passes] of [[1, 3000], [16, 200]] as const) {
    const jit: Awaited<ReturnType<typeof computeRun>>[] = [], interp: Awaited<ReturnType<typeof computeRun>>[] = [];
    for (let k = 0; k < 3; k++) {
      jit.push(await computeRun(engines, passes, 1));
      interp.push(await computeRun(engines, passes, 0));
    }
    const mips = (r: { instructions: number; hostS: number }) => r.instructions / r.hostS / 1e6;
    if (jit.some((r, k) => r.instructions !== interp[k].instructions || r.simPs !== interp[k].simPs)) throw new Error("bench: the JIT's run differs from the interpreter's");
    figure(`engines.mips.${engines}`, median(jit.map(mips)), "MIPS", `emulated instructions per host second, compute-bound firmware on ${engines} engine${engines === 1 ? "" : "s"}, JIT on (median of 3)`, { instructions: jit[0].instructions });
    figure(`engines.mips.${engines}.interp`, median(interp.map(mips)), "MIPS", `the same with the interpreter only (jit = 0), measured alternately in the same run (median of 3)`, { instructions: interp[0].instructions });
    if (engines === 16) {
      figure("engines.jit.compile_ms", median(jit.map((r) => r.compileMs)), "ms", "host milliseconds compiling translated code in one 16-engine run (median of 3), its modules compiled before in the process (host/jit-modules.ts)", { hostS: +median(jit.map((r) => r.hostS)).toFixed(3) });
      figure("engines.jit.compile_ms.first", first.compileMs, "ms", "the same in the process's first JIT run (20 passes), which compiles them");
      figure("engines.jit.insns_per_call", jit[0].instructions / jit[0].calls, "insns", "emulated instructions per call into translated code in that run (one or two calls per engine per interleave window)", { calls: jit[0].calls });
    }
  }

  const dev = await Device.create(coreModule(), { engines: 16 });
  dev.start(dev.loadElf(idle).entry);
  const t0 = performance.now();
  const sim = dev.run(1_000_000_000_000n);
  const hostS = (performance.now() - t0) / 1000;
  const wakeups = dev.stats()["engine.wakeups"];
  if (wakeups < 16 * 999) throw new Error(`bench: idle engines woke ${wakeups} times, want ~16000`);
  figure("engines.wfi.host_s_per_sim_s", hostS / (Number(sim) / 1e12), "s/s", "host seconds per simulated second, 16 engines asleep in wfi between 1 kHz timer ticks (lower is better)", { wakeups });
}
