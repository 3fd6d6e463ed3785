import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { runScenario } from "../host/scenario/run.js";
import { resolveScenario } from "../host/scenario/scenario.js";
import { ConfigError } from "../host/config.js";
import { coreModule } from "../host/platform/node.js";
import type { Device } from "../host/device.js";

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
    expect(lossy.totalGoodputGbps).toBeLessThan(0.6 * clean.totalGoodputGbps);
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
});
