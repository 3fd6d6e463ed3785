// What every result reports of why packets went again and of each port (issue 27, point 2):
// retransmissions by cause, and frames and bytes per port, for traffic and collectives alike;
// a collective's goodput and completion times. Each figure is checked against another the
// model counts on its own (the fabric's deliveries and drops, the collective's own algbw), not
// against the formula that makes it. WAS: no causes, no ports for traffic, and a collective
// reporting totalGoodputGbps 0 and fctPs 0.
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { coreModule } from "../host/platform/node.js";
import { runScenario } from "../host/scenario/run.js";

const scenario = (name: string) => JSON.parse(readFileSync(`examples/scenarios/${name}.json`, "utf8"));
const sum = (a: readonly number[]) => a.reduce((x, y) => x + y, 0);

describe("retransmissions by cause, frames per port", () => {
  it("RoCEv2 at 1 % loss: the causes add up to the retransmissions, and every frame a port sent was delivered or dropped", async () => {
    const r = await runScenario(coreModule(), { ...scenario("roce-loss"), seed: 7 });
    const c = r.retransmitCauses;
    expect(r.retransmits).toBeGreaterThan(0);
    expect(c.lossDetected + c.timeout + c.rnr).toBe(r.retransmits);
    expect(c.lossDetected).toBeGreaterThan(0);
    expect([c.resync, c.probes]).toEqual([0, 0]); // MetaRoCE-like only
    expect(c.duplicatesAtReceiver).toBe(r.deviceDrops["roce.rx_duplicate"]);
    expect(sum(r.ports.frames)).toBe(r.fabric.delivered + sum(Object.values(r.fabric.drops)));
    expect(sum(r.ports.bytes)).toBeGreaterThan(16 * 1048576);
  });

  it("MetaRoCE-like at 1 % loss: SACK holes and RTOs as the transport counted them, and frames per port on all 8 paths' ports", async () => {
    const r = await runScenario(coreModule(), { ...scenario("metaroce-loss"), sweep: undefined, transport: "metaroce", faults: [{ kind: "loss", links: "all", random: 0.01 }], seed: 7 });
    const c = r.retransmitCauses;
    expect([c.lossDetected, c.timeout, c.resync, c.probes]).toEqual([r.metaroce!.losses_sack, r.metaroce!.losses_rto, 0, r.metaroce!.tx_probes]);
    expect(c.lossDetected).toBeGreaterThan(0);
    expect(sum(r.ports.frames)).toBe(r.fabric.delivered + sum(Object.values(r.fabric.drops)));
  });

  it("a collective: its goodput is its algbw, its completion times its rows', its ports what its report counted", async () => {
    const r = await runScenario(coreModule(), {
      name: "counts", seed: 90005, until: "50ms", transport: "metaroce", devices: { count: 4 }, fabric: { topology: { kind: "single-switch" } },
      collective: { op: "all-reduce", algorithm: "ring", sizes: [65536, 1048576] },
    });
    const rows = r.collective!.rows;
    expect(rows.map((x) => x.status)).toEqual(["done", "done"]);
    const busy = sum(rows.map((x) => x.timePs));
    // algbw is bytes per second over each row's time: their time-weighted mean, in Gb/s
    expect(r.totalGoodputGbps).toBeCloseTo(sum(rows.map((x) => x.algbwGBps! * 8 * x.timePs)) / busy, 6);
    expect(r.fctPs).toEqual({ p50: Math.min(...rows.map((x) => x.timePs)), p99: Math.max(...rows.map((x) => x.timePs)), max: Math.max(...rows.map((x) => x.timePs)) });
    expect(r.ports).toEqual({ frames: r.collective!.portFrames, bytes: r.collective!.portBytes });
    expect(sum(r.ports.frames)).toBe(r.fabric.delivered + sum(Object.values(r.fabric.drops)));
    expect(r.retransmitCauses).toEqual({ lossDetected: 0, timeout: 0, rnr: 0, resync: 0, probes: 0, duplicatesAtReceiver: 0 });
  });
});
