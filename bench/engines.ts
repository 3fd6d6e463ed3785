// npm run bench -- engines
//   engines.mips.1, engines.mips.16: emulated instructions per host second running the
//     compute-bound firmware/bench/compute.elf on 1 and on 16 engines with the JIT (config
//     field jit = 1; median of 3 runs, 5 with QEMU), and engines.mips.1.interp, engines.mips.16.interp: the
//     same with the interpreter, measured in the same run, alternating with the JIT's runs;
//   engines.mips.16.coremark, engines.mips.16.coremark.interp: the same for CoreMark-like work
//     (firmware/bench/coremark.elf: list walks and a sort, small matrices, a state machine, CRCs);
//   engines.mips.16.classic, engines.mips.16.classic.interp: the same for four classic programs
//     the JIT was not measured with while it was written (firmware/bench/classic.elf: a sieve, a
//     matrix product, an insertion sort, an FNV hash), a check on the two kernels above;
//   engines.qemu.compute, engines.qemu.coremark, engines.qemu.classic: the 16-engine JIT rate over QEMU's (linux-user
//     qemu-riscv32, TCG) on the same kernel code, run for the 16 engines' ids in turn (bench/lib/kernels.ts;
//     QEMU's rate net of its start-up: the instructions of `passes` passes less those of none,
//     over the difference of the two processes' host times), each pair right after one of menic's
//     5 runs, the figure the median of the 5 ratios (a busy host slows both sides of one alike); each
//     engine's checksum from QEMU must be menic's. Skipped, saying why, without qemu-riscv32 or clang;
//   engines.qemu.compute.cold, engines.qemu.coremark.cold, engines.qemu.classic.cold: the same
//     ratio for a kernel's first run in a new process, as `menic fw run` gives it (its
//     translations made, compiled and optimised by V8 as it runs), at COLD_PASSES (runs of 2-4 G
//     instructions, as long as CoreMark's own), each run followed by QEMU's pair; the median of 3;
//   engines.jit.compile_ms: host milliseconds spent compiling translations in one 16-engine run
//     (the process has compiled them before, for the warm-up run: host/jit-modules.ts shares a
//     compiled module by its bytes, so this is mostly instantiating them), and
//     engines.jit.compile_ms.first: the same in the process's first JIT run, which compiles them;
//   engines.jit.insns_per_call: instructions per call into translated code in that run (with
//     run-ahead, docs/engine.md, a call runs on past many interleave windows);
//   engines.jit.speedup.<example>: host time of a run of firmware/examples/<example>.elf (16 engines,
//     to the end of every engine; the device's creation not counted) with the interpreter over
//     that with the JIT, the process's translations compiled before (median of 5, alternating);
//     every example but fault and list, which trap at their first steps;
//   engines.jit.speedup.executor: the same for a collective run by the graph executor (an
//     all-reduce of 1 MiB on 8 devices, 16 engines each), from its doorbells to its last signal;
//   engines.wfi.host_s_per_sim_s: host seconds per simulated second with 16 engines asleep in
//     wfi between 1 kHz timer ticks (firmware/bench/idle.elf).
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Device } from "../host/device.js";
import { coreModule, packageRoot } from "../host/platform/node.js";
import { EXAMPLES } from "../host/fw/examples.js";
import { runScenario } from "../host/scenario/run.js";
import type { Context } from "../host/verbs.js";
import { figure, median, skipped } from "./lib/report.js";
import { KERNEL_FUNCTION, buildLinuxKernels, hostedPath, runHosted, sameKernelCode, type Kernel } from "./lib/kernels.js";

const root = packageRoot();
const elfOf = (path: string) => readFileSync(join(root, path));
const KERNEL_ELF: Record<Kernel, Buffer> = { compute: elfOf("firmware/bench/compute.elf"), coremark: elfOf("firmware/bench/coremark.elf"), classic: elfOf("firmware/bench/classic.elf") };
const idle = elfOf("firmware/bench/idle.elf");
/**
 * Passes of the 16-engine runs: each run at least 0.3 s of the JIT (~12,000 instructions a pass
 * and engine for compute, ~15,000 for coremark, ~128,000 for classic; at 1,000 passes
 * CoreMark-like's runs had come down to 0.12 s, and their medians moved by a fifth from run to
 * run).
 */
const PASSES_16: Record<Kernel, number> = { compute: 3000, coremark: 3000, classic: 600 };
const QEMU = "qemu-riscv32";
/**
 * Passes of a cold run (`coldRun`): 16 engines running about as many instructions as CoreMark's
 * own run (2.4 G for 16 of its iterations runs): 1.9 G for compute, 2.3 G for CoreMark-like,
 * 4.1 G for classic.
 */
const COLD_PASSES: Record<Kernel, number> = { compute: 10000, coremark: 10000, classic: 2000 };
/** Set in a cold run's process (`kernel:passes`): it runs that and prints its KernelRun. */
const COLD_ENV = "MENIC_BENCH_COLD";

interface KernelRun { instructions: number; hostS: number; simPs: bigint; compileMs: number; calls: number; checksums: number[] }

async function kernelRun(kernel: Kernel, engines: number, passes: number, jit = 1): Promise<KernelRun> {
  const dev = await Device.create(coreModule(), { engines, jit });
  dev.start(dev.loadElf(KERNEL_ELF[kernel]).entry);
  for (let e = 0; e < engines; e++) dev.mailboxPush(e, passes);
  const t0 = performance.now();
  const simPs = dev.run(100_000_000_000_000n);
  const hostS = (performance.now() - t0) / 1000;
  let instructions = 0;
  const checksums: number[] = [];
  for (let e = 0; e < engines; e++) {
    const r = dev.engine(e);
    if (r.state !== "exited" || r.exitCode !== 0) throw new Error(`bench: ${kernel} engine ${e} ended ${r.state}`);
    instructions += r.instructions;
    checksums.push(dev.mailboxPop(e)!);
  }
  const stats = dev.jitStats();
  return { instructions, hostS, simPs, compileMs: stats.compileMs, calls: stats.calls, checksums };
}

/** `kernel` on 16 engines for `passes` passes in a new process of this bench: its first run there. */
function coldRun(kernel: Kernel, passes: number): KernelRun {
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url)], { env: { ...process.env, [COLD_ENV]: `${kernel}:${passes}` }, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`bench: a cold run of ${kernel} ended ${r.status ?? r.signal}: ${r.stderr.trim()}`);
  const o = JSON.parse(r.stdout) as KernelRun & { simPs: string };
  return { ...o, simPs: BigInt(o.simPs) };
}

/**
 * The first runs of `kernel` in new processes (`coldRun`), each followed by QEMU's pair: the
 * engines.qemu.<kernel>.cold figure. `none`: the kernel's run of no passes (its start-up).
 */
function coldFigure(kernel: Kernel, none: KernelRun, qemu: { program: string } | { reason: string }): void {
  const name = `engines.qemu.${kernel}.cold`, passes = COLD_PASSES[kernel];
  if ("reason" in qemu) return skipped(name, qemu.reason);
  const ours: number[] = [], theirs: number[] = [];
  for (let k = 0; k < 3; k++) {
    const run = coldRun(kernel, passes);
    ours.push(mips(run));
    theirs.push(qemuMipsAfter(qemu.program, kernel, passes, run, none));
  }
  const ratios = ours.map((m, k) => m / theirs[k]!);
  figure(name, median(ratios), "x QEMU", `engines.qemu.${kernel} for the kernel's first run in a new process (${passes} passes: its translations made and compiled as it runs, as menic fw run gives it), median of 3 ratios, each over the QEMU run after it`, { mips: ours.map((x) => Math.round(x)), qemuMips: theirs.map((x) => Math.round(x)), passes, ratios: ratios.map((x) => +x.toFixed(2)) });
}

/**
 * QEMU's rate on `kernel` for `passes` passes of each engine's id in turn, net of its start-up: a run of
 * them and one of none right after `run` (menic's, those passes) and `none` (menic's run of
 * none), whose instructions and checksums it must match.
 */
function qemuMipsAfter(program: string, kernel: Kernel, passes: number, run: KernelRun, none: KernelRun): number {
  const ids = run.checksums.length; // (an engine's each)
  const full = runHosted([QEMU, program], kernel, passes, ids), start = runHosted([QEMU, program], kernel, 0, ids);
  for (const [q, m] of [[full, run], [start, none]] as const) {
    if (q.checksums.some((c, e) => c !== m.checksums[e])) throw new Error(`bench: ${kernel}'s checksums under QEMU (${q.checksums.map((c) => c.toString(16)).join(" ")}) are not the engines' (${m.checksums.map((c) => c.toString(16)).join(" ")})`);
  }
  if (!(full.seconds > start.seconds)) throw new Error(`bench: QEMU's run of ${passes} passes took no longer than its start-up (${full.seconds} s, ${start.seconds} s)`);
  return (run.instructions - none.instructions) / (full.seconds - start.seconds) / 1e6;
}

/** The kernels built for QEMU, or why QEMU's figures are skipped. */
function qemuKernels(): { program: string } | { reason: string } {
  const v = spawnSync(QEMU, ["--version"], { encoding: "utf8" });
  if (v.error) return { reason: `${QEMU} not found: install QEMU's user-mode emulators (apt-get install qemu-user)` };
  const program = hostedPath(root, "linux");
  try {
    buildLinuxKernels(root, program);
  } catch (e) {
    return { reason: (e as Error).message.split("\n")[0]! };
  }
  // the same instructions: each kernel's code in QEMU's program is the engines' own
  for (const k of Object.keys(KERNEL_FUNCTION) as Kernel[]) {
    const differs = sameKernelCode(KERNEL_ELF[k], readFileSync(program), KERNEL_FUNCTION[k]);
    if (differs !== null) throw new Error(`bench: the ${k} kernel built for QEMU is not the engines' code (firmware/bench/${k}.elf stale? npm run fw:examples): ${differs}`);
  }
  return { program };
}

const mips = (r: { instructions: number; hostS: number }) => r.instructions / r.hostS / 1e6;

/**
 * `kernel` on `engines` engines, `passes` passes: 3 JIT runs alternating with 3 interpreted
 * ones or, when `qemu` has a program, 5 JIT runs each followed by one of QEMU's pairs (passes,
 * and none: its start-up), the first 3 also by an interpreted run; throws if a run's
 * instructions, simulated time or checksums differ from another's.
 */
async function measure(kernel: Kernel, engines: number, passes: number, qemu: { program: string } | { reason: string } | null) {
  const jit: KernelRun[] = [], interp: KernelRun[] = [], qemuMips: number[] = [];
  const none = qemu && "program" in qemu ? await kernelRun(kernel, engines, 0) : null;
  for (let k = 0; k < (none ? 5 : 3); k++) {
    jit.push(await kernelRun(kernel, engines, passes, 1));
    if (k < 3) interp.push(await kernelRun(kernel, engines, passes, 0));
    if (none && qemu && "program" in qemu) qemuMips.push(qemuMipsAfter(qemu.program, kernel, passes, jit[0]!, none));
  }
  const same = (a: KernelRun, b: KernelRun) => a.instructions === b.instructions && a.simPs === b.simPs && a.checksums.every((c, e) => c === b.checksums[e]);
  if ([...jit, ...interp].some((r) => !same(r, jit[0]!))) throw new Error(`bench: ${kernel}'s runs differ (JIT and interpreter, or from run to run)`);
  return { jit, interp, qemuMips, none };
}

function qemuFigure(kernel: Kernel, jit: KernelRun[], qemuMips: number[], qemu: { program: string } | { reason: string }, passes: number): void {
  const name = `engines.qemu.${kernel}`;
  if ("reason" in qemu) return skipped(name, qemu.reason);
  // each JIT run against the QEMU pair right after it (a busy host slows both alike), the median ratio
  const ratios = jit.map((r, k) => mips(r) / qemuMips[k]!);
  figure(name, median(ratios), "x QEMU", `menic's 16-engine JIT rate over QEMU linux-user's (qemu-riscv32, net of start-up) on the same ${kernel} kernel code, 16 ids in turn, same checksums (median of 5 ratios, each a JIT run's over the QEMU run after it)`, { mips: +median(jit.map(mips)).toFixed(1), qemuMips: +median(qemuMips).toFixed(1), passes, ratios: ratios.map((x) => +x.toFixed(2)) });
}

/** Host seconds of dev.run for each example with jit on and off (median of 5), same simulated results asserted. */
async function exampleSpeedups(): Promise<void> {
  const examples = EXAMPLES.filter((x) => x.out.startsWith("firmware/examples/") && x.name !== "fault" && x.name !== "list");
  for (const ex of examples) {
    const elf = elfOf(ex.out);
    const once = async (jit: number) => {
      const dev = await Device.create(coreModule(), { jit });
      dev.start(dev.loadElf(elf).entry);
      const t0 = performance.now();
      const simPs = dev.run(1_000_000_000_000n);
      const hostS = (performance.now() - t0) / 1000;
      const engines = Array.from({ length: dev.engines }, (_, e) => ({ ...dev.engine(e), console: dev.console(e) }));
      if (!dev.allStopped()) throw new Error(`bench: example ${ex.name} did not end within 1 s`);
      return { hostS, compileMs: dev.jitStats().compileMs, calls: dev.jitStats().calls, result: JSON.stringify({ simPs: String(simPs), engines, stats: dev.stats() }) };
    };
    await once(1); // translations compiled once per process (host/jit-modules.ts)
    const { on, off, result } = await alternate(5, once, `example ${ex.name}`);
    const instructions = (JSON.parse(result) as { engines: { instructions: number }[] }).engines.reduce((n, e) => n + e.instructions, 0);
    figure(`engines.jit.speedup.${ex.name}`, median(off.map((r) => r.hostS)) / median(on.map((r) => r.hostS)), "x", `host time of a run of firmware/examples/${ex.name}.elf (16 engines, to its end) interpreted over with the JIT (medians of 5; device creation not counted)`, {
      jitMs: +(median(on.map((r) => r.hostS)) * 1e3).toFixed(2), compileMs: +median(on.map((r) => r.compileMs)).toFixed(2), instructions, calls: on[0]!.calls,
    });
  }
}

/** Host seconds of a collective the graph executor runs, jit on and off (median of 5), same simulated results and instructions asserted. */
async function executorSpeedup(): Promise<void> {
  const once = async (jit: number) => {
    let t0 = 0, t1 = 0;
    let contexts: Context[] = [];
    const r = await runScenario(coreModule(), {
      name: "bench-executor", seed: 1, until: "1s", transport: "metaroce",
      devices: { count: EXECUTOR_DEVICES, config: { jit } }, fabric: { topology: { kind: "single-switch" } },
      collective: { op: "all-reduce", algorithm: "ring", sizes: [EXECUTOR_BYTES], dtype: "f32", redop: "sum", engines: 16, check: true },
    }, {
      onBuilt: (c) => { contexts = c.contexts; },
      onStart: () => { t0 = performance.now(); },
      onProgress: () => { t1 = performance.now(); }, // the last: the run's end, before the result's check
    });
    const row = r.collective!.rows[0]!;
    if (row.status !== "done" || row.check !== "ok") throw new Error(`bench: the executor's all-reduce ended ${row.status}, check ${row.check}`);
    const instructions = contexts.reduce((n, c) => n + Array.from({ length: 16 }, (_, e) => c.device.engine(e).instructions).reduce((a, b) => a + b, 0), 0);
    const compileMs = contexts.reduce((n, c) => n + c.device.jitStats().compileMs, 0);
    return { hostS: (t1 - t0) / 1000, compileMs, result: JSON.stringify({ row, instructions }) };
  };
  await once(1);
  const { on, off, result } = await alternate(5, once, "the executor's all-reduce");
  figure("engines.jit.speedup.executor", median(off.map((r) => r.hostS)) / median(on.map((r) => r.hostS)), "x", `host time of a ${EXECUTOR_BYTES >> 10} KiB f32 ring all-reduce on ${EXECUTOR_DEVICES} devices by the graph executor (16 engines each), doorbells to last signal, interpreted over with the JIT (medians of 5)`, {
    jitS: +median(on.map((r) => r.hostS)).toFixed(3), compileMs: +median(on.map((r) => r.compileMs)).toFixed(2), simUs: +((JSON.parse(result) as { row: { timePs: number } }).row.timePs / 1e6).toFixed(2),
  });
}
const EXECUTOR_DEVICES = 8, EXECUTOR_BYTES = 1 << 20;

/** `runs` runs of `once` with the JIT, each followed by one with the interpreter; throws unless
 * every run's `result` (what it simulated) is the same. */
async function alternate<R extends { result: string }>(runs: number, once: (jit: number) => Promise<R>, what: string): Promise<{ on: R[]; off: R[]; result: string }> {
  const on: R[] = [], off: R[] = [];
  let result = "";
  for (let k = 0; k < runs; k++) {
    for (const [jit, list] of [[1, on], [0, off]] as const) {
      const r = await once(jit);
      if (result !== "" && r.result !== result) throw new Error(`bench: ${what} runs differently with jit = ${jit}`);
      result = r.result;
      list.push(r);
    }
  }
  return { on, off, result };
}

export async function run(): Promise<void> {
  await kernelRun("compute", 16, 20, 0); // warm up V8's JIT for the core
  const first = await kernelRun("compute", 16, 20, 1);
  const qemu = qemuKernels();
  for (const [engines, passes] of [[1, 3000], [16, PASSES_16.compute]] as const) {
    const { jit, interp, qemuMips, none } = await measure("compute", engines, passes, engines === 16 ? qemu : null);
    figure(`engines.mips.${engines}`, median(jit.map(mips)), "MIPS", `emulated instructions per host second, compute-bound firmware on ${engines} engine${engines === 1 ? "" : "s"}, JIT on (median of 3 runs, 5 when QEMU is measured too)`, { instructions: jit[0]!.instructions });
    figure(`engines.mips.${engines}.interp`, median(interp.map(mips)), "MIPS", `the same with the interpreter only (jit = 0), measured alternately in the same run (median of 3)`, { instructions: interp[0]!.instructions });
    if (engines === 16) {
      figure("engines.jit.compile_ms", median(jit.map((r) => r.compileMs)), "ms", "host milliseconds compiling translated code in one 16-engine run (median of its runs), its modules compiled before in the process (host/jit-modules.ts)", { hostS: +median(jit.map((r) => r.hostS)).toFixed(3) });
      figure("engines.jit.compile_ms.first", first.compileMs, "ms", "the same in the process's first JIT run (20 passes), which compiles them");
      figure("engines.jit.insns_per_call", jit[0]!.instructions / jit[0]!.calls, "insns", "emulated instructions per call into translated code in that run (with run-ahead, a call runs many interleave windows)", { calls: jit[0]!.calls });
      qemuFigure("compute", jit, qemuMips, qemu, passes);
      if (none) coldFigure("compute", none, qemu);
    }
  }
  for (const [kernel, what] of [["coremark", "CoreMark-like firmware (lists, matrices, a state machine, CRCs)"], ["classic", "four classic programs the JIT was not measured with while written (a sieve, a matrix product, an insertion sort, FNV)"]] as const) {
    const passes = PASSES_16[kernel];
    await kernelRun(kernel, 16, 20, 1); // its translations compiled before the measured runs
    const { jit, interp, qemuMips, none } = await measure(kernel, 16, passes, qemu);
    figure(`engines.mips.16.${kernel}`, median(jit.map(mips)), "MIPS", `emulated instructions per host second, ${what} on 16 engines, JIT on (median of 5 runs, 3 without QEMU)`, { instructions: jit[0]!.instructions, hostS: +median(jit.map((r) => r.hostS)).toFixed(3) });
    figure(`engines.mips.16.${kernel}.interp`, median(interp.map(mips)), "MIPS", "the same with the interpreter only, measured alternately in the same run (median of 3)");
    qemuFigure(kernel, jit, qemuMips, qemu, passes);
    if (none) coldFigure(kernel, none, qemu);
  }
  await exampleSpeedups();
  await executorSpeedup();

  const dev = await Device.create(coreModule(), { engines: 16 });
  dev.start(dev.loadElf(idle).entry);
  const t0 = performance.now();
  const sim = dev.run(1_000_000_000_000n);
  const hostS = (performance.now() - t0) / 1000;
  const wakeups = dev.stats()["engine.wakeups"];
  if (wakeups < 16 * 999) throw new Error(`bench: idle engines woke ${wakeups} times, want ~16000`);
  figure("engines.wfi.host_s_per_sim_s", hostS / (Number(sim) / 1e12), "s/s", "host seconds per simulated second, 16 engines asleep in wfi between 1 kHz timer ticks (lower is better)", { wakeups });
}

// a cold run's process (coldRun): the bundle run as a script, with COLD_ENV set
if (process.env[COLD_ENV] && import.meta.url === pathToFileURL(process.argv[1]!).href) {
  const [kernel, passes] = process.env[COLD_ENV]!.split(":");
  const r = await kernelRun(kernel as Kernel, 16, Number(passes));
  process.stdout.write(JSON.stringify({ ...r, simPs: String(r.simPs) }));
}
