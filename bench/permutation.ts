// npm run bench -- permutation: the 128-host permutation issue 31 compared with htsim (the packet
// simulator of the Ultra Ethernet and EQDS studies): 128 devices of one port each on an 8-ary fat
// tree (4 pods: htsim's FatTreeTopology for 128 hosts), every device sending one flow of 8 or 16
// MiB to another (a permutation drawn from the seed), links at 400 or 800 Gb/s, timing mode, over
// each transport. Each run is a process of its own, timed as a whole: what a user waits for,
// building the devices included. For each:
//   permutation128.<transport>.<MiB>MiB.<Gb/s>G.hops_per_cpu_s   packet-hops per CPU-second of
//                                                                the whole process (every thread)
// with, beside it, the run's own share of that CPU time (from its first window to its result).
// htsim is not on this machine (neither Debian nor npm has it): its figure for the same
// permutation comes from whoever runs both (docs/scale.md, "Against htsim").
import { coreModule } from "../host/platform/node.js";
import { runScenario, type ScenarioInput } from "../host/scenario/run.js";
import type { Cluster } from "../host/scenario/cluster.js";
import { figure } from "./lib/report.js";
import { inChild } from "./lib/child.js";

type Transport = "rocev2" | "metaroce";
interface Case { transport: Transport; mib: number; gbps: number }
interface Measured { ended: string; hops: number; cpuS: number; runCpuS: number; wallS: number }

function input(c: Case): ScenarioInput {
  const link = { gbps: c.gbps };
  return {
    name: `permutation128-${c.transport}-${c.mib}MiB-${c.gbps}G`, seed: 1, until: "100ms", transport: c.transport,
    devices: { count: 128, config: { engines: 1, sramBytes: 4096, ports: 1, scaleUpPorts: 1 } },
    fabric: { mode: "timing", topology: { kind: "fat-tree", k: 8, planes: 1 }, hostLink: link, fabricLink: link, superLink: link },
    traffic: { pattern: "permutation", messageBytes: c.mib * 2 ** 20, messages: 1 },
  };
}

/** One run, in this process (the child's side): its CPU time from the process's start. */
export async function child(c: Case): Promise<void> {
  let cl: Cluster | undefined, c0 = process.cpuUsage();
  const r = await runScenario(coreModule(), input(c), { onBuilt: (b) => { cl = b; }, onStart: () => { c0 = process.cpuUsage(); } });
  const all = process.cpuUsage(), run = process.cpuUsage(c0);
  const m: Omit<Measured, "wallS"> = { ended: r.ended, hops: cl!.fabric.totals().hops, cpuS: (all.user + all.system) / 1e6, runCpuS: (run.user + run.system) / 1e6 };
  console.log(JSON.stringify(m));
}

function spawnRun(c: Case): Measured {
  const { out, wallS } = inChild<Omit<Measured, "wallS">>(import.meta.url, c);
  if (out.ended !== "finished") throw new Error(`bench permutation: ${JSON.stringify(c)} ${out.ended}`);
  return { ...out, wallS };
}

export async function run(): Promise<void> {
  for (const transport of ["rocev2", "metaroce"] as const)
    for (const mib of [8, 16])
      for (const gbps of [400, 800]) {
        const m = spawnRun({ transport, mib, gbps });
        figure(`permutation128.${transport}.${mib}MiB.${gbps}G.hops_per_cpu_s`, m.hops / m.cpuS, "hops/CPU-s",
          `packet-hops per CPU-second of the whole process: 128 devices on an 8-ary fat tree, a permutation of ${mib} MiB flows at ${gbps} Gb/s over ${transport}, timing mode`,
          { hops: m.hops, cpuS: +m.cpuS.toFixed(2), runShare: +(m.runCpuS / m.cpuS).toFixed(2), runHopsPerCpuS: Math.round(m.hops / m.runCpuS), wallS: +m.wallS.toFixed(2) });
      }
}
