// npm run bench -- engines
//   engines.mips.1, engines.mips.16: emulated instructions per host second running the
//     compute-bound firmware/bench/compute.elf on 1 and on 16 engines (median of 3 runs);
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

async function computeRun(engines: number, passes: number): Promise<{ instructions: number; hostS: number; simPs: bigint }> {
  const dev = await Device.create(coreModule(), { engines });
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
  return { instructions, hostS, simPs };
}

export async function run(): Promise<void> {
  await computeRun(16, 20); // warm up the JIT
  for (const [engines, passes] of [[1, 3000], [16, 200]] as const) {
    const runs = [];
    for (let k = 0; k < 3; k++) runs.push(await computeRun(engines, passes));
    const mips = median(runs.map((r) => r.instructions / r.hostS / 1e6));
    figure(`engines.mips.${engines}`, mips, "MIPS", `emulated instructions per host second, compute-bound firmware on ${engines} engine${engines === 1 ? "" : "s"} (median of 3)`, { instructions: runs[0].instructions });
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
