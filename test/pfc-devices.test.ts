// PFC pauses reach the devices (docs/fabric.md, "PFC and devices"): a paused port starts no frame
// until the XON, so what a device sends while its switch's ingress is over XOFF waits in the
// device (its QPs), not in the fabric. Before, the device kept handing frames over at line rate
// and the fabric held them: the queue at its ingress grew with the traffic, and the fuzz tier's
// case 50203 (7 devices, MTU 256, all-to-all, PFC) grew its instance from 213 MB to 1.71 GB.
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { coreModule } from "../host/platform/node.js";
import { runScenario, type BuiltRun } from "../host/scenario/run.js";
import { trafficScenario, runTierCase } from "./helpers/fuzz-tier/scenarios.js";

describe("PFC pauses reach the devices", () => {
  for (const loop of ["core", "host"] as const) {
    it(`the incast's senders stop while paused; the fabric holds no more than a window of each (window loop in the ${loop})`, async () => {
      const sc = JSON.parse(readFileSync("examples/scenarios/incast-pfc.json", "utf8"));
      let run!: BuiltRun;
      const uplinks: number[] = [];
      let most = 0;
      const observer = {
        intervalPs: 100_000,
        begin(r: BuiltRun) {
          run = r;
          r.fabric.topology.links.forEach((L, l) => { if (L.aSwitch < 0 && L.device !== 0) uplinks.push(2 * l); });
        },
        posted() {}, completed() {},
        sample() { for (const c of uplinks) most = Math.max(most, run.fabric.queueBytes(c)); },
      };
      let contexts: { device: { stats(): Record<string, number> } }[] = [];
      const r = await runScenario(coreModule(), sc, {
        observer,
        onBuilt: (b) => {
          contexts = b.contexts;
          // the host's loop: the runner steps each device from the host
          if (loop === "host") (b.runner as unknown as { loop: string }).loop = "host";
        },
      });
      expect(r.finished).toBe(true);
      expect(r.fabric.drops.buffer_full).toBe(0);
      expect(r.fabric.pfcPauses).toBeGreaterThan(0);
      // every sender obeyed pauses; the receiver was never paused
      const pauses = contexts.map((c) => c.device.stats()["port.pfc_pauses"]!);
      expect(pauses[0]).toBe(0);
      for (const p of pauses.slice(1)) expect(p).toBeGreaterThan(0);
      // what waits at a sender's ingress: frames on the wire and those sent within a window
      // (200 ns at 800 Gb/s: 20 KB), those before the XOFF reached it, and a frame or two: 66 KB
      // at most (seed 1); 7.3 MB when the devices did not hear of pauses
      expect(uplinks.length).toBe(8);
      expect(most).toBeLessThan(80 * 1024);
    });
  }

  it("the fuzz tier's case 50203 keeps its memory bounded", async () => {
    const o = await runTierCase(coreModule(), trafficScenario(50203));
    expect(o.violations).toEqual([]);
    expect(o.ended).toBe("finished");
  });
});
