// A scenario's `collectives` (issue 9): collectives one after another on the same devices with
// the ports re-split between them (host/scenario/sequence.ts). The shipped example's claims —
// each collective's frames leave only on its group's ports, the all-to-all after the re-split
// (6 scale-out ports instead of 2) takes about half the time, every result bit for bit the
// reference's — and the errors a sequence that cannot run gets, naming the field.
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { coreModule } from "../host/platform/node.js";
import { runScenario } from "../host/scenario/run.js";
import { resolveScenario } from "../host/scenario/scenario.js";
import { formatResult } from "../host/scenario/report.js";
import { goldenRun } from "./helpers/golden.js";

const shipped = JSON.parse(readFileSync("examples/scenarios/resplit-collectives.json", "utf8"));

/** The ports that sent no frame and the ones that did. */
const used = (frames: number[]) => frames.flatMap((n, p) => (n > 0 ? [p] : []));

describe("a sequence of collectives with the ports re-split between them", () => {
  it("the shipped example: frames only on each collective's group, the all-to-all on 6 scale-out ports in about half the time it took on 2, every result checked", () => {
    // what `menic run --json` printed for it (test/golden.test.ts holds it to the code)
    const r = goldenRun("resplit-collectives");
    expect(r.ended).toBe("finished");
    const [a2a, ar, again] = r.collectives!;
    expect(r.collectives!.map((c) => [c.op, c.portGroup, c.scaleUpPorts, c.rows.map((x) => [x.status, x.check])])).toEqual([
      ["all-to-all", "SCALE_OUT", 6, [["done", "ok"]]], ["all-reduce", "SCALE_UP", 6, [["done", "ok"]]], ["all-to-all", "SCALE_OUT", 2, [["done", "ok"]]],
    ]);
    expect(used(a2a!.portFrames!)).toEqual([6, 7]);
    expect(used(ar!.portFrames!)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(used(again!.portFrames!)).toEqual([2, 3, 4, 5, 6, 7]);
    // the same data frames (4 devices x 3 peers x 1 MiB in 4 KiB packets), and their ACKs, spread
    // over three times the ports: the busiest carries well under half what one of the two did
    const sum = (x: number[]) => x.reduce((a, b) => a + b, 0);
    for (const c of [a2a, again]) expect(sum(c!.portFrames!)).toBeGreaterThan((4 * 3 * 1048576) / 4096);
    expect(Math.max(...again!.portFrames!)).toBeLessThan(0.4 * Math.max(...a2a!.portFrames!));
    // bandwidth follows the ports: on 2 ports each device sends at 65-100% of their 200 GB/s (135
    // GB/s: each connection's first data waits a round trip for its grant, docs/protocol.md); on
    // 6 in at most 55% of that time
    const tx = (c: typeof a2a) => (c!.rows[0]!.bytes * 3) / 4 / (c!.rows[0]!.timePs / 1e12) / 1e9; // GB/s each device sends
    expect(tx(a2a)).toBeGreaterThan(130);
    expect(tx(a2a)).toBeLessThan(200);
    expect(again!.rows[0]!.timePs).toBeLessThan(0.55 * a2a!.rows[0]!.timePs);
    // the re-split happened once the all-reduce was over, before the last all-to-all started
    expect(a2a!.resplitPs).toBeUndefined();
    expect(again!.resplitPs).toBeGreaterThan(a2a!.rows[0]!.timePs + ar!.rows[0]!.timePs);
    const text = formatResult(r);
    expect(text).toMatch(/port group SCALE_OUT: ports 2\.\.7 of 8 \(2 scale-up, re-split at [\d.]+ us\); frames sent per port 0 0 [1-9]/);
    expect(text).toMatch(/\(limit 20\.000 ms for the whole sequence\)/);
  });

  it("over RoCEv2 too: each collective's queue pairs on its group's ports, every result checked", async () => {
    const sc = { ...shipped, transport: "rocev2", collectives: shipped.collectives.map((c: object) => ({ ...c, sizes: [65536] })) };
    const r = await runScenario(coreModule(), sc);
    expect(r.ended).toBe("finished");
    expect(r.collectives!.map((c) => c.rows[0]!.check)).toEqual(["ok", "ok", "ok"]);
    const groups = [[6, 7], [0, 1, 2, 3, 4, 5], [2, 3, 4, 5, 6, 7]];
    r.collectives!.forEach((c, i) => {
      expect(used(c.portFrames!).length).toBeGreaterThan(0);
      for (const p of used(c.portFrames!)) expect(groups[i]).toContain(p);
    });
  });

  it("refuses a sequence that cannot run, naming the field", () => {
    const base = { name: "x", devices: { count: 2, config: { ports: 8, scaleUpPorts: 6 } } };
    const a2a = (extra: object = {}) => ({ op: "all-to-all", sizes: [4096], ...extra });
    const bad = (s: object, re: RegExp) => expect(() => resolveScenario(s)).toThrow(re);
    bad({ ...base, collectives: [a2a(), a2a({ scaleUpPorts: 9 })] }, /^scenario\.collectives\[1\]\.scaleUpPorts: 9 scale-up ports, but the devices have 8 \(devices\.config\.ports\)$/);
    bad({ ...base, collectives: [a2a({ scaleUpPorts: 8, portGroup: "SCALE_OUT" })] }, /^scenario\.collectives\[0\]\.scaleUpPorts: leaves the scale-out group with no ports: 8 of the 8 ports are scale-up$/);
    bad({ ...base, devices: { count: 2, config: { ports: 8, scaleUpPorts: 8 } }, collectives: [a2a({ portGroup: "SCALE_OUT" })] }, /^scenario\.collectives\[0\]\.portGroup: leaves the scale-out group with no ports/);
    bad({ ...base, collectives: [a2a({ portGroup: "SCALE_OUT" }), a2a({ scaleUpPorts: 8 })] },
      /^scenario\.collectives\[1\]\.scaleUpPorts: leaves the scale-out group with no ports: 8 of the 8 ports are scale-up \(scenario\.collectives\[0\] uses it, and its queue pairs stay connected\)$/);
    bad({ ...base, collectives: [a2a({ scaleUpPorts: -1 })] }, /^scenario\.collectives\[0\]\.scaleUpPorts: /);
    bad({ ...base, collectives: [a2a({ ports: 2 })] }, /^scenario\.collectives\[0\]\.ports: unknown/);
    bad({ ...base, collectives: [] }, /^scenario\.collectives: /);
    bad({ ...base, collectives: [a2a()], collective: a2a() }, /^scenario: has both collective and collectives: a scenario runs one of them$/);
    bad({ ...base, collectives: [a2a(), { op: "broadcast", root: 2 }] }, /^scenario\.collectives\[1\]\.root: device 2 is not one of the 2 devices$/);
    // a split kept within what the groups in use need passes
    expect(resolveScenario({ ...base, collectives: [a2a({ portGroup: "SCALE_OUT" }), a2a({ scaleUpPorts: 0, portGroup: "SCALE_OUT" })] }).collectives!.map((c) => c.scaleUpPorts)).toEqual([undefined, 0]);
  });
});
