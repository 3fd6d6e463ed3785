import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { runScenario } from "../host/scenario/run.js";
import { resolveScenario } from "../host/scenario/scenario.js";
import { ConfigError } from "../host/config.js";
import { coreModule } from "../host/platform/node.js";
import type { Device } from "../host/device.js";
import type { Fabric } from "../host/fabric/fabric.js";
import type { BuiltRun, RunObserver } from "../host/scenario/run.js";

/** Records every flow's placed bytes and DCQCN rate every `intervalPs`. */
class Sampler implements RunObserver {
  samples: { t: number; placed: number[]; rate: number[] }[] = [];
  private run!: BuiltRun;
  constructor(readonly intervalPs: number) {}
  begin(run: BuiltRun) { this.run = run; }
  posted() {}
  completed() {}
  sample(t: number) { this.samples.push({ t, placed: this.run.flows.map((f) => f.placedBytes()), rate: this.run.flows.map((f) => f.rateGbps()) }); }
  /** each flow's goodput from sample time a to b, Gb/s */
  goodput(a: number, b: number): number[] {
    const at = (t: number) => this.samples.find((s) => s.t >= t)!;
    const x = at(a), y = at(b);
    return x.placed.map((p, k) => ((y.placed[k]! - p) * 8000) / (y.t - x.t));
  }
}

const load = (name: string) => JSON.parse(readFileSync(`examples/scenarios/${name}.json`, "utf8"));

describe("scenario validation", () => {
  it.each([
    [{ devices: { count: 2 }, traffic: { pattern: "pairs" }, fabirc: {} }, /^scenario\.fabirc: unknown field/],
    [{ devices: { count: 0 }, traffic: { pattern: "pairs" } }, /^scenario\.devices\.count: must be an integer in \[1, 65536\], got 0/],
    [{ devices: { count: 2 }, traffic: { pattern: "ring" } }, /^scenario\.traffic\.pattern: must be one of pairs, permutation, incast, all-to-all/],
    [{ devices: { count: 2 }, traffic: { pattern: "pairs" }, faults: [{ kind: "loss", random: 1.5 }] }, /^scenario\.faults\[0\]\.random: must be in \[0, 1\)/],
    [{ devices: { count: 2 }, traffic: { pattern: "pairs" }, until: "soon" }, /^scenario\.until: must be a time/],
  ])("refuses %j with the field's path", (input, message) => {
    expect(() => resolveScenario(input)).toThrow(ConfigError);
    expect(() => resolveScenario(input)).toThrow(message);
  });
});

describe("RoCEv2 goodput against random loss (examples/scenarios/roce-loss.json)", () => {
  it("collapses as the seeds say: go-back-N keeps at most 0.6 of line rate at 1% loss, and gives up by 10%", async () => {
    const at = async (loss: number) => {
      const s = load("roce-loss");
      s.faults[0].random = loss;
      return runScenario(coreModule(), s);
    };
    const clean = await at(0), lossy = await at(0.01), ruined = await at(0.1);
    expect(clean.finished).toBe(true);
    expect(clean.retransmits).toBe(0);
    expect(clean.fabric.drops.random_loss).toBe(0);
    expect(lossy.finished).toBe(true);
    expect(lossy.fabric.drops.random_loss).toBeGreaterThan(0);
    expect(lossy.retransmits).toBeGreaterThan(0);
    expect(lossy.totalGoodputGbps).toBeLessThan(0.6 * 800);
    expect(lossy.totalGoodputGbps).toBeLessThan(0.6 * clean.totalGoodputGbps!);
    expect(ruined.finished).toBe(false);
    expect(ruined.flows[0]!.status).toBe("RETRY_EXC_ERR");
    // the same scenario and seed give the same result
    expect(JSON.stringify(await at(0.01))).toBe(JSON.stringify(lossy));
  });
});

describe("two flows converging (examples/scenarios/dcqcn-converge.json)", () => {
  it("DCQCN answers the receiver port's queue with CNPs and rate cuts, and the queue marks far less", async () => {
    const run = async (dcqcn: number) => {
      const s = load("dcqcn-converge");
      s.devices.config.dcqcn = dcqcn;
      let devices: Device[] = [];
      const r = await runScenario(coreModule(), s, { onBuilt: (c) => { devices = c.contexts.map((x) => x.device); } });
      const total = (k: string) => devices.reduce((n, d) => n + d.stats()[k]!, 0);
      return { r, cnps: total("roce.cnps_sent"), cuts: total("roce.rate_cuts") };
    };
    const off = await run(0), on = await run(1);
    expect(off.r.finished && on.r.finished).toBe(true);
    expect(off.cnps).toBe(0);
    expect(on.cnps).toBeGreaterThan(0);
    expect(on.cuts).toBe(on.cnps); // every CNP reaches its sender and cuts it
    expect(off.r.fabric.ecnMarks).toBeGreaterThan(0);
    expect(on.r.fabric.ecnMarks).toBeLessThan(off.r.fabric.ecnMarks / 2);
    // CNPs are rate-limited: at most one per QP per 50 us of the run, per sender
    expect(on.cnps).toBeLessThanOrEqual(2 * Math.ceil(on.r.endPs / 50_000_000));
  });

  it("the first flow has the port alone, and once the second joins they share it fairly", async () => {
    const probe = new Sampler(5_000_000);
    const r = await runScenario(coreModule(), load("dcqcn-converge"), { observer: probe });
    expect(r.finished).toBe(true);
    const firstDone = r.flows[0]!.durationPs; // flow 0 starts at 0
    expect(firstDone).toBeGreaterThan(200_000_000);
    // alone (before 50 us): the first at line rate, the second nothing
    const [alone0, alone1] = probe.goodput(5_000_000, 45_000_000);
    expect(alone0).toBeGreaterThan(0.95 * 800);
    expect(alone1).toBe(0);
    // together, in every 20 us from 30 us after the join until the first finishes: within 5 % of each other
    let windows = 0;
    for (let t = 80_000_000; t + 20_000_000 < firstDone; t += 20_000_000, windows++) {
      const [a, b] = probe.goodput(t, t + 20_000_000);
      expect(Math.abs(a! - b!) / (a! + b!), `${t / 1e6} us: ${a} vs ${b} Gb/s`).toBeLessThan(0.05);
      expect(a! + b!).toBeGreaterThan(0.3 * 800);
    }
    expect(windows).toBeGreaterThanOrEqual(8);
    // and DCQCN cut them to the same rate
    const late = probe.samples.find((s) => s.t >= firstDone - 20_000_000)!;
    expect(late.rate[0]).toBe(late.rate[1]);
    expect(late.rate[0]).toBeLessThan(800);
  });
});

describe("8-to-1 incast (examples/scenarios/incast-pfc.json, incast-dcqcn.json)", () => {
  const run = async (name: string) => {
    let fabric!: Fabric;
    const r = await runScenario(coreModule(), load(name), { onBuilt: (c) => { fabric = c.fabric; } });
    const st = fabric.stats();
    const toReceiver = st.links.find((l) => l.name === "dev0.port0-sw0")!.ba; // the switch's queue to device 0
    return { r, toReceiver };
  };

  it("PFC loses nothing, keeps the receiver's port full and its queue short, and shares it evenly", async () => {
    const { r, toReceiver } = await run("incast-pfc");
    expect(r.finished).toBe(true);
    expect(r.fabric.pfcPauses).toBeGreaterThan(0);
    expect(Object.values(r.fabric.drops).every((n) => n === 0)).toBe(true);
    expect(r.retransmits).toBe(0);
    // the port the 8 senders converge on runs at >= 95 % of line rate for the whole transfer
    expect(r.totalGoodputGbps).toBeGreaterThan(0.95 * 800);
    // every sender within 5 % of an eighth of it
    for (const f of r.flows) expect(Math.abs(f.goodputGbps! - r.totalGoodputGbps! / 8)).toBeLessThan(0.05 * r.totalGoodputGbps! / 8);
    // the queue is bounded by the senders' XOFF thresholds (128 KiB each) plus what each still
    // sends while its pause travels: 800 Gb/s over the cable both ways and the switch's latency
    // (200 + 200 + 400 ns = 80 KB) and two 4 KiB frames; far from the 8 MiB each sender holds
    const perSender = 131_072 + 800 * (200 + 200 + 400) / 8 + 2 * 4200;
    expect(toReceiver.queuePeakBytes).toBeLessThan(8 * perSender);
    expect(toReceiver.queuePeakBytes).toBeGreaterThan(8 * 131_072 * 0.9);
  });

  it("DCQCN alone: no pause, every sender cut by CNPs to the same rate, but the queue grows into the shared buffer first", async () => {
    const pfc = await run("incast-pfc");
    const { r, toReceiver } = await run("incast-dcqcn");
    expect(r.finished).toBe(true);
    expect(r.fabric.pfcPauses).toBe(0);
    expect(r.cnpsSent).toBeGreaterThanOrEqual(8 * 2);
    for (const f of r.flows) expect(Math.abs(f.goodputGbps! - r.totalGoodputGbps! / 8)).toBeLessThan(0.05 * r.totalGoodputGbps! / 8);
    // a CNP at most every 50 us lets the queue pass 10 MB before the cuts catch up (PFC: under 1.8 MB)
    expect(toReceiver.queuePeakBytes).toBeGreaterThan(10_000_000);
    expect(toReceiver.queuePeakBytes).toBeGreaterThan(10 * pfc.toReceiver.queuePeakBytes);
    // and the paper's 40 Gb/s additive increase leaves the 800 Gb/s port mostly idle afterwards
    expect(r.totalGoodputGbps).toBeLessThan(0.5 * pfc.r.totalGoodputGbps!);
  });
});

describe("several flows per pair", () => {
  it("spread a pair's flows over every port of the group: flow k takes port (src + dst + k) mod size at both ends", async () => {
    // 4 flows from device 0 to device 1 over 4 ports: QP numbers both ends hand out in step differ
    // by a constant, so the NIC's own default ((qpn + destQpn) mod 4) would put them on 2 ports
    let fabric: Fabric | undefined;
    const r = await runScenario(coreModule(), {
      devices: { count: 2, config: { engines: 1, sramBytes: 4096, ports: 4, scaleUpPorts: 4 } },
      fabric: { mode: "timing", topology: { kind: "leaf-spine", planes: 4, spines: 1, devicesPerLeaf: 2 } },
      traffic: { pattern: "pairs", messageBytes: 16384, messages: 1, flowsPerPair: 4 },
    }, { onBuilt: (c) => { fabric = c.fabric; } });
    expect(r.finished).toBe(true);
    // device 0's uplinks, one per port: every one carries one flow's 4 data frames (16 KiB in 4 KiB packets)
    const up = fabric!.stats().links.filter((l) => l.name.startsWith("dev0.port")).map((l) => l.ab.packets);
    expect(up).toEqual([4, 4, 4, 4]);
  });
});

describe("RunOptions.onStart", () => {
  it("is called once, with the message size, when the set-up is done and before the first window", async () => {
    let fabric: Fabric | undefined;
    const starts: { size: number; hops: number; nowPs: number }[] = [];
    let runner: { nowPs: number } | undefined;
    const r = await runScenario(coreModule(), {
      devices: { count: 2, config: { engines: 1, sramBytes: 4096, ports: 1, scaleUpPorts: 1 } },
      fabric: { mode: "timing", topology: { kind: "leaf-spine", planes: 1, spines: 1, devicesPerLeaf: 2 } },
      traffic: { pattern: "pairs", messageBytes: 16384, messages: 2 },
    }, {
      onBuilt: (c) => { fabric = c.fabric; runner = c.runner; },
      onStart: (size) => starts.push({ size, hops: fabric!.stats().hops, nowPs: runner!.nowPs }),
    });
    expect(r.finished).toBe(true);
    // nothing has moved when it is called (no window run, no frame sent); the frames cross after it
    expect(starts).toEqual([{ size: 16384, hops: 0, nowPs: 0 }]);
    expect(fabric!.stats().hops).toBeGreaterThan(0);
  });
});
