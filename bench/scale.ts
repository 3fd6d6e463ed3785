// npm run bench -- scale: 16,384 devices (issue 31 §2 and §5). The fabric bench's devices (8
// ports, one per plane) in a permutation of 64 KiB WRITEs over RoCEv2, 8 flows a pair, timing
// mode, on two fabrics of 8 planes: a three-tier Clos (leaves of 16 devices, pods of 16 leaves and
// 16 spines, 16 super-spines per group: 64 pods, 1:1) and a two-tier leaf/spine (leaves of 16, 16
// spines). Each run is a process of its own (its resident memory its own), alternating 2, 3, 2, 3:
//   scale.devices16384.<fabric>.hops_per_s   packet-hops per host second of the run (median of 2)
//   scale.devices16384.three_tier.cost_ratio CPU time per packet-hop, three tiers over two (goal:
//                                            at most 1.2)
//   scale.devices16384.<fabric>.peak_rss_mib the process's peak resident memory (goal: < 4 GiB)
//   scale.devices16384.partition.<by><P>.frames_per_window
//                                            frames that would cross between P partitions per
//                                            window of the three-tier run, partitioned by pod
//                                            (a pod's devices, leaves and spines together; super-
//                                            spine z of group g in partition (g x 16 + z) mod P) or
//                                            by plane (planes in P blocks, device d in partition
//                                            d mod P): what one run across machines would carry
//                                            (docs/scale.md, "One run across machines")
// With 1 MiB flows (the fabric bench's) the three-tier run holds 6.8 M frames at once at 4,096
// devices, 27 M at 16,384: more than one wasm32 instance addresses. That is not run here.
import { coreModule } from "../host/platform/node.js";
import { runScenario } from "../host/scenario/run.js";
import type { Cluster } from "../host/scenario/cluster.js";
import { scenario } from "./fabric.js";
import { figure, median } from "./lib/report.js";
import { inChild } from "./lib/child.js";

const DEVICES = 16384;
const PARTS = [2, 4, 8, 16];
type Tiers = 2 | 3;

interface Measured {
  ended: string;
  hops: number;
  runS: number;
  cpuS: number;
  peakRssMiB: number;
  windows: number;
  windowPs: number;
  endPs: number;
  /** per P: frames crossing by pod, by plane (null: more partitions than planes) */
  partitions: { P: number; byPod: number; byPlane: number | null }[];
}

/** The scenario of a run on `tiers` tiers. */
function input(tiers: Tiers) {
  const sc = scenario(DEVICES, "timing", 1, "rocev2");
  sc.name = `scale-${DEVICES}-${tiers}-tier`;
  sc.traffic!.messageBytes = 65536;
  if (tiers === 3) sc.fabric!.topology = { kind: "three-tier", planes: 8, devicesPerLeaf: 16, leavesPerPod: 16, spinesPerPod: 16, superSpines: 16 };
  return sc;
}

/** Frames each partitioning would carry across, from the run's per-link counters. */
function partitions(cl: Cluster): Measured["partitions"] {
  const t = cl.fabric.topology, links = cl.fabric.stats().links, sw = t.switches;
  return PARTS.map((P) => {
    const podPart = (pod: number) => Math.floor((pod * P) / t.pods);
    const swPart = (s: number) => (sw[s].role === "super-spine" ? sw[s].index % P : podPart(sw[s].pod));
    const planePart = (pl: number) => Math.floor((pl * P) / t.planes);
    let byPod = 0, byPlane = 0;
    t.links.forEach((L, i) => {
      const f = links[i].ab.packets + links[i].ba.packets;
      if (L.tier === "host") {
        if (planePart(L.plane) !== L.device % P) byPlane += f;
      } else if (swPart(L.aSwitch) !== swPart(L.bSwitch)) byPod += f;
    });
    return { P, byPod, byPlane: P <= t.planes ? byPlane : null };
  });
}

/** One run, in this process (the child's side). */
export async function child(tiers: Tiers): Promise<void> {
  let cl: Cluster | undefined, t0 = 0;
  let c0 = process.cpuUsage();
  const r = await runScenario(coreModule(), input(tiers), {
    maxMemoryBytes: 2 ** 40,
    onBuilt: (c) => { cl = c; },
    onStart: () => { t0 = performance.now(); c0 = process.cpuUsage(); },
  });
  const runS = (performance.now() - t0) / 1000, cpu = process.cpuUsage(c0);
  const peakRssMiB = process.resourceUsage().maxRSS / 1024;
  const rs = cl!.runner.stats();
  const m: Measured = {
    ended: r.ended, hops: cl!.fabric.totals().hops, runS, cpuS: (cpu.user + cpu.system) / 1e6, peakRssMiB,
    windows: rs.windows, windowPs: rs.windowPs, endPs: r.endPs, partitions: tiers === 3 ? partitions(cl!) : [],
  };
  console.log(JSON.stringify(m));
}

function spawnRun(tiers: Tiers): Measured {
  const m = inChild<Measured>(import.meta.url, tiers).out;
  if (m.ended !== "finished") throw new Error(`bench scale: the ${tiers}-tier run ${m.ended}`);
  return m;
}

export async function run(): Promise<void> {
  const runs: Record<Tiers, Measured[]> = { 2: [], 3: [] };
  for (let k = 0; k < 2; k++) for (const tiers of [2, 3] as const) runs[tiers].push(spawnRun(tiers));
  for (const tiers of [2, 3] as const) {
    const ms = runs[tiers];
    if (ms[0].hops !== ms[1].hops) throw new Error(`bench scale: two ${tiers}-tier runs made ${ms[0].hops} and ${ms[1].hops} hops`);
    const name = tiers === 3 ? "three_tier" : "leaf_spine";
    figure(`scale.devices${DEVICES}.${name}.hops_per_s`, median(ms.map((m) => m.hops / m.runS)), "hops/s",
      `packet-hops per host second, ${DEVICES} devices on ${tiers === 3 ? "a three-tier Clos (64 pods)" : "a leaf/spine"} of 8 planes, a permutation of 64 KiB WRITEs (8 flows a pair), timing mode (median of 2, each in a process of its own)`,
      { hops: ms[0].hops, runsS: ms.map((m) => +m.runS.toFixed(1)), simulatedUs: ms[0].endPs / 1e6, windows: ms[0].windows });
    figure(`scale.devices${DEVICES}.${name}.peak_rss_mib`, Math.max(...ms.map((m) => m.peakRssMiB)), "MiB", "the run's process: peak resident memory (goal: under 4 GiB)", { runs: ms.map((m) => Math.round(m.peakRssMiB)) });
  }
  const perHop = (ms: Measured[]) => median(ms.map((m) => m.cpuS / m.hops));
  figure(`scale.devices${DEVICES}.three_tier.cost_ratio`, perHop(runs[3]) / perHop(runs[2]), "x", "CPU time per packet-hop on three tiers over that on two, the same devices and traffic (goal: at most 1.2)",
    { ns_per_hop: { three: +(perHop(runs[3]) * 1e9).toFixed(0), two: +(perHop(runs[2]) * 1e9).toFixed(0) } });
  const three = runs[3][0];
  for (const p of three.partitions) {
    figure(`scale.devices${DEVICES}.partition.pod${p.P}.frames_per_window`, p.byPod / three.windows, "frames", `frames crossing between ${p.P} partitions by pod, per ${three.windowPs / 1000} ns window of the three-tier run`, { frames: p.byPod, windows: three.windows });
    if (p.byPlane !== null)
      figure(`scale.devices${DEVICES}.partition.plane${p.P}.frames_per_window`, p.byPlane / three.windows, "frames", `frames crossing between ${p.P} partitions by plane, per window`, { frames: p.byPlane, windows: three.windows });
  }
  figure(`scale.devices${DEVICES}.three_tier.windows_per_s`, median(runs[3].map((m) => m.windows / m.runS)), "windows/s", "windows the three-tier run made per host second (one thread)", {});
}
