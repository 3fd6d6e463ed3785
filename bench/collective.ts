// npm run bench -- collective: an 8-device ring all-reduce of 64 MiB per device (f32 sum), run by
// the engines' graph executor with 16 engines each, over the MetaRoCE-like transport on one
// switch, full mode (every byte moves):
//   collective.allreduce8.sim_s       simulated time from the doorbell to the last final signal
//   collective.allreduce8.wall_s      host time of the run, from the doorbells (building the devices,
//                                     binding the graphs and writing the inputs not counted)
//   collective.allreduce8.slowdown    wall / simulated
//   collective.allreduce8.share.<engines|transport|fabric>   where the host time went
//   collective.allreduce8.rocev2.busbw_GBps           bus bandwidth of a 16 MiB one over RoCEv2, spread over
//                                     every scale-up port (collective spreadPorts, docs/graph.md "Ports")
//   collective.allreduce8.rocev2.unspread_busbw_GBps  the same with one queue pair per engine and peer on
//                                     port (QPN + destination QPN) mod 10 (spreadPorts false, as before)
//   collective.allreduce8.rocev2.gain                 the first over the second
//   collective.allreduce8.rocev2.port_imbalance       the busiest scale-up port's bytes over the mean, spread
// The shares: `fabric` is the time inside the fabric and the hand-over between it and the devices
// (frames out of a device's rings into the fabric, events, arrivals into a device's stage:
// measured around those calls); the devices' step is the rest. Of that,
// `engines` is the engines' instructions at the interpreter's speed measured in the same
// process just before (compute-bound firmware, 16 engines), and `transport` what remains of the
// devices' time: the NIC, the transport, HBM and DMA, the event loop. What the three leave is the
// runner's own loop and the host polling the devices' mailboxes.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Device } from "../host/device.js";
import { coreModule, packageRoot } from "../host/platform/node.js";
import { runScenario, type ScenarioInput } from "../host/scenario/run.js";
import type { Fabric } from "../host/fabric/fabric.js";
import type { DeviceEndpoint } from "../host/cluster/endpoint.js";
import type { Context } from "../host/verbs.js";
import type { ClusterRunner } from "../host/fabric/runner.js";
import { figure } from "./lib/report.js";

const MIB = 1 << 20;

/** Host seconds per engine instruction, compute-bound, 16 engines (as bench engines measures it). */
async function secondsPerInstruction(): Promise<number> {
  const dev = await Device.create(coreModule(), { engines: 16 });
  dev.start(dev.loadElf(readFileSync(join(packageRoot(), "firmware/bench/compute.elf"))).entry);
  for (let e = 0; e < 16; e++) dev.mailboxPush(e, 100);
  const t0 = performance.now();
  dev.run(100_000_000_000_000n);
  const s = (performance.now() - t0) / 1000;
  let n = 0;
  for (let e = 0; e < 16; e++) n += dev.engine(e).instructions;
  return s / n;
}

export async function run(): Promise<void> {
  await secondsPerInstruction(); // warm up
  const perInstr = await secondsPerInstruction();
  const scenario: ScenarioInput = {
    name: "bench-allreduce8", seed: 1, until: "1s", transport: "metaroce",
    devices: { count: 8 }, fabric: { topology: { kind: "single-switch" } },
    collective: { op: "all-reduce", algorithm: "ring", sizes: [64 * MIB], dtype: "f32", redop: "sum", engines: 16, check: false },
  };
  let fabricS = 0, stepS = 0, t0 = 0;
  let contexts: Context[] = [];
  let runner: ClusterRunner | undefined;
  const timed = <T extends object>(o: T, names: (keyof T)[], add: (s: number) => void) => {
    for (const k of names) {
      const f = (o[k] as (...a: unknown[]) => unknown).bind(o);
      (o as Record<keyof T, unknown>)[k] = (...a: unknown[]) => {
        const s = performance.now();
        try { return f(...a); } finally { add((performance.now() - s) / 1000); }
      };
    }
  };
  const r = await runScenario(coreModule(), scenario, {
    onBuilt: (c) => {
      contexts = c.contexts;
      runner = c.runner;
      timed(c.fabric as Fabric, ["runTo", "takeArrivals", "releaseDelivered"], (s) => (fabricS += s));
      for (const ep of c.endpoints as DeviceEndpoint[]) {
        timed(ep, ["stepTo"], (s) => (stepS += s));
        // the hand-over both ways (frames out of a device's rings into the fabric, arrivals into its stage)
        timed(ep, ["drainTx", "deliver"], (s) => (fabricS += s));
      }
    },
    // from the doorbells on: compiling, binding and writing the inputs are not the run
    onStart: () => {
      fabricS = stepS = 0;
      t0 = performance.now();
    },
  });
  const wallS = (performance.now() - t0) / 1000;
  const row = r.collective!.rows[0]!;
  if (row.status !== "done") throw new Error(`bench collective: the all-reduce ended ${row.status} ${row.error ?? ""}`);
  const simS = row.timePs / 1e12;
  let instructions = 0;
  for (const ctx of contexts) for (let e = 0; e < 16; e++) instructions += ctx.device.engine(e).instructions;
  // the shares are measured around the host's calls to each device and the fabric: a run whose
  // window loop ran in the core (its devices in the fabric's instance) makes none of those calls
  if (runner!.inCore) throw new Error("bench collective: the window loop ran in the core, where the shares cannot be measured by the host");
  const enginesS = Math.min(stepS, instructions * perInstr);
  figure("collective.allreduce8.sim_s", simS, "s", "simulated time of an 8-device ring all-reduce of 64 MiB f32 per device (engines' executor, MetaRoCE-like, full mode), doorbell to last signal", { busbwGBps: +row.busbwGBps!.toFixed(2), engineUtil: +row.engineUtil.toFixed(3) });
  figure("collective.allreduce8.wall_s", wallS, "s", "host time of that run, from the doorbells on", { instructions });
  figure("collective.allreduce8.slowdown", wallS / simS, "x", "host time over simulated time");
  figure("collective.allreduce8.share.engines", enginesS / wallS, "of host time", "share of host time the engines' instructions took (at the interpreter's compute-bound speed)", { nsPerInstruction: +(perInstr * 1e9).toFixed(2) });
  figure("collective.allreduce8.share.transport", (stepS - enginesS) / wallS, "of host time", "share the rest of the devices' step took: NIC, transport, HBM, DMA, event loop");
  figure("collective.allreduce8.share.fabric", fabricS / wallS, "of host time", "share the fabric and the hand-over of frames to and from the devices took");
  await rocev2Ports();
}

/** The 8-device ring all-reduce of 16 MiB over RoCEv2, spread over the scale-up ports and not. */
async function rocev2Ports(): Promise<void> {
  const runOne = async (spreadPorts: boolean) => {
    const r = await runScenario(coreModule(), {
      name: "bench-allreduce8-rocev2", seed: 1, until: "1s", transport: "rocev2",
      devices: { count: 8 }, fabric: { topology: { kind: "single-switch" } },
      collective: { op: "all-reduce", algorithm: "ring", sizes: [16 * MIB], dtype: "f32", redop: "sum", engines: 16, check: false, spreadPorts },
    });
    const row = r.collective!.rows[0]!;
    if (row.status !== "done") throw new Error(`bench collective: the RoCEv2 all-reduce ended ${row.status} ${row.error ?? ""}`);
    return { row, busbw: row.busbwGBps!, portBytes: r.collective!.portBytes! }; // done: it has a bandwidth
  };
  const spread = await runOne(true), unspread = await runOne(false);
  const group = spread.portBytes.slice(0, 10); // the scale-up group: scaleUpPorts 10 by default
  const mean = group.reduce((a, b) => a + b, 0) / group.length;
  figure("collective.allreduce8.rocev2.busbw_GBps", spread.busbw, "GB/s", "bus bandwidth of an 8-device ring all-reduce of 16 MiB f32 over RoCEv2, spread over the 10 scale-up ports", { timeUs: +(spread.row.timePs / 1e6).toFixed(2), engineUtil: +spread.row.engineUtil.toFixed(3) });
  figure("collective.allreduce8.rocev2.unspread_busbw_GBps", unspread.busbw, "GB/s", "the same with one queue pair per engine and peer, its port from the QP numbers (spreadPorts false)", { timeUs: +(unspread.row.timePs / 1e6).toFixed(2), portsUsed: unspread.portBytes.filter((b) => b > 0).length });
  figure("collective.allreduce8.rocev2.gain", spread.busbw / unspread.busbw, "x", "bus bandwidth spread over unspread");
  figure("collective.allreduce8.rocev2.port_imbalance", Math.max(...group) / mean, "x", "the busiest scale-up port's bytes over the mean, spread (1: even)");
}
