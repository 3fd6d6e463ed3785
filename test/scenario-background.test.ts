// Background traffic beside a collective (issue 29, §2): a scenario with both `traffic` and a
// `collective` runs the traffic while each size of the collective does, and reports both. The
// collective's time grows by what the traffic takes of the links they share, a figure predicted
// here from the NIC's port arbitration and the ring's pace.
import { describe, it, expect, beforeAll } from "vitest";
import { coreModule } from "../host/platform/node.js";
import { runScenario, type ScenarioResult, type ScenarioInput } from "../host/scenario/run.js";
import { formatResult } from "../host/scenario/report.js";

const MiB = 1 << 20;
const base = {
  name: "bg", seed: 1, until: "20ms", devices: { count: 4, config: { ports: 1, scaleUpPorts: 1 } }, fabric: { mode: "full" },
  collective: { op: "all-reduce", algorithm: "ring", sizes: [4 * MiB] },
} satisfies ScenarioInput;

describe("traffic beside a ring all-reduce on 4 devices, one 800 Gb/s port each", () => {
  let alone: ScenarioResult, beside: ScenarioResult;
  beforeAll(async () => {
    alone = await runScenario(coreModule(), base);
    // devices 0 → 1 and 2 → 3, 16 QP pairs each (as many as the collective's 16 engines have per
    // ring neighbour), 4 MiB WRITEs that outlast the collective
    beside = await runScenario(coreModule(), { ...base, traffic: { pattern: "pairs", messageBytes: 4 * MiB, messages: 4, flowsPerPair: 16 } });
  });

  it("slows it by the share of the links they share: about half of two of the ring's four links", () => {
    const a = alone.collective!.rows[0]!, b = beside.collective!.rows[0]!;
    expect([a.status, a.check, b.status, b.check]).toEqual(["done", "ok", "done", "ok"]);
    // The ring moves 2 (n - 1) / n x 4 MiB = 6 MiB over each of its links 0→1, 1→2, 2→3, 3→0, 62.9 us
    // at 800 Gb/s: alone it took 69.4 us (busbw 90.7 GB/s). The traffic uses links 0→1 and 2→3. A
    // port lets QPs with requests take turns, a packet each (docs/nic.md, "Ports"): 16 of the
    // collective's and 16 of the traffic's, so the collective gets half of those two links, and a
    // ring goes at the pace of its slowest link: its transfer takes twice as long, 69.4 + 62.9 =
    // 132.3 us at most. Measured: 124.4 us (1.79 x), a little less, as the collective's QPs leave
    // the port to the traffic between its steps and the traffic's get a little less than half.
    const transferPs = (6 * MiB * 8000) / 800;
    expect(b.timePs).toBeLessThanOrEqual(a.timePs + transferPs);
    expect(b.timePs).toBeGreaterThan(a.timePs + 0.75 * transferPs);
    expect(b.timePs / a.timePs).toBeCloseTo(1.79, 2);
  });

  it("reports what the traffic did while each size ran: its bytes placed at about half of the two links' rate", () => {
    const bg = beside.collective!.rows[0]!.background!;
    expect(alone.collective!.rows[0]!.background).toBeUndefined();
    // 2 x 16 flows of 4 x 4 MiB: none complete in the collective's 124 us (a flow's first 4 MiB
    // alone takes 42 us at 800 Gb/s, shared by 16 flows and the collective) but their bytes arrive
    expect(bg.messages).toEqual({ total: 128, completed: 0, failed: 0 });
    expect(bg.flows).toHaveLength(32);
    expect(bg.flows.every((f) => f.status === "INCOMPLETE" && f.goodputGbps === null)).toBe(true);
    expect(bg.placedGbps!).toBeGreaterThan(0.4 * 1600);
    expect(bg.placedGbps!).toBeLessThan(0.5 * 1600);
    expect(bg.placedGbps).toBeCloseTo((bg.placedBytes * 8000) / beside.collective!.rows[0]!.timePs, 9);
    // outstanding messages when the collective ends are no failure
    expect([beside.ended, beside.finished]).toEqual(["finished", true]);
    const table = formatResult(beside);
    expect(table).toContain("background traffic (`traffic` beside the collective, from each size's doorbells to its end):");
    expect(table).toMatch(new RegExp(`^4194304 +${bg.placedBytes} +${bg.placedGbps!.toFixed(2)} +0/128 +0 +— +— +0$`, "m"));
  });
});

describe("an open-loop workload beside a collective", () => {
  it("arrives while each size runs, from its doorbells: a row each, with its slowdown by size", async () => {
    const r = await runScenario(coreModule(), {
      ...base, fabric: { mode: "timing" }, collective: { ...base.collective, sizes: [MiB, 4 * MiB], check: false },
      traffic: { pattern: "workload", verb: "READ", workload: { sizes: { text: "10000 0.5\n100000 1" }, load: 0.3, duration: "100us" } },
    });
    const rows = r.collective!.rows;
    expect(rows.map((x) => x.status)).toEqual(["done", "done"]);
    for (const x of rows) {
      const bg = x.background!;
      // the flows that arrived while the size ran, every one a READ
      expect(bg.flows).toHaveLength(bg.messages.total);
      expect(bg.verbs).toEqual({ READ: { messages: bg.messages.total, completed: bg.messages.completed, failed: 0, bytes: bg.totalBytes } });
      expect(bg.workload!.flows).toBe(bg.messages.total);
      // what had completed by the collective's end has a slowdown; the rest is not counted
      expect(bg.workload!.slowdown.all.completed).toBe(bg.messages.completed);
      expect(bg.flows.filter((f) => f.completed === 1).every((f) => f.slowdown! >= 1)).toBe(true);
      expect(bg.flows.filter((f) => f.completed === 0).every((f) => f.slowdown === null)).toBe(true);
    }
    // the same arrivals each time, from each size's own doorbells: the shorter size saw fewer of them
    const [a, b] = rows.map((x) => x.background!.flows.map((f) => [f.src, f.dst, f.idealPs]));
    expect(a!.length).toBeLessThan(b!.length);
    expect(b!.slice(0, a!.length)).toEqual(a);
    expect(rows[1]!.background!.messages.completed).toBeGreaterThan(rows[0]!.background!.messages.completed);
  });
});
