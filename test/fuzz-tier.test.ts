// The fuzz tier in CI (issue 26, "Keep finding them"), with a small budget: random traffic
// scenarios and collectives under random faults (test/helpers/fuzz-tier/scenarios.ts), every run
// held to the tier's invariants: refused naming a field or run to an end that is not a stall, a
// report that holds together (no SUCCESS without every message done, no bandwidth without a
// completion, a done collective equal to the reference bit for bit), memory bounded, the same
// input the same result. `npm run soak -- tier` runs thousands; FUZZ_TIER_SEED=n (the first
// seed) and FUZZ_TIER_CASES=n explore others here. The forged-answer generator at two devices is
// test/fuzz-answers.test.ts.
import { describe, it, expect } from "vitest";
import { coreModule } from "../host/platform/node.js";
import { runScenario, type ScenarioResult, type ScenarioInput } from "../host/scenario/run.js";
import { formatResult } from "../host/scenario/report.js";
import { trafficScenario, collectiveScenario, runTierCase, resultViolations, forcedEnd } from "./helpers/fuzz-tier/scenarios.js";

const FIRST = Number(process.env.FUZZ_TIER_SEED ?? 1);
const CASES = Number(process.env.FUZZ_TIER_CASES ?? 0);

async function tier(kind: "traffic" | "collective", cases: number) {
  const make = kind === "traffic" ? trafficScenario : collectiveScenario;
  const violations: string[] = [], ends = new Map<string, number>();
  let posted = 0, completed = 0, unforced = 0;
  for (let seed = FIRST; seed < FIRST + cases; seed++) {
    const o = await runTierCase(coreModule(), make(seed), { determinism: seed % 4 === 0 });
    violations.push(...o.violations);
    ends.set(o.ended, (ends.get(o.ended) ?? 0) + 1);
    posted += o.posted;
    completed += o.completed;
    // a case made to end a way ends that way (cut short: or refused for something else in it)
    const forced = forcedEnd(kind, seed);
    if (forced === "refused" && o.ended !== "refused") violations.push(`${kind} ${seed}: made to be refused, ended ${o.ended}`);
    if (forced === "time-limit" && o.ended !== "time-limit" && o.ended !== "refused") violations.push(`${kind} ${seed}: cut short, ended ${o.ended}`);
    if (!forced) unforced++;
  }
  return { violations, ends, posted, completed, unforced };
}

describe("the fuzz tier (CI budget)", () => {
  it("random traffic scenarios: every invariant holds", async () => {
    const r = await tier("traffic", CASES || 48);
    expect(r.violations).toEqual([]);
    // the generator reaches the outcomes it is for: runs that finish (most of those not made to
    // end otherwise), refusals, runs cut short. Of the 42 not made to end, 26 to 29 finish from
    // seeds 1, 1000, 30000 and 61237 (the others ask the impossible: pairs of an odd count, a
    // stagger past the time limit, go-back-N under 5 % loss), so the bound is a half: it was two
    // thirds, which only seed 1 met
    if (!CASES) expect([r.ends.get("finished")! > r.unforced / 2, r.ends.get("refused")! > 0, r.ends.get("time-limit")! > 0]).toEqual([true, true, true]);
    expect(r.completed).toBeGreaterThan(r.posted / 2);
  });

  it("random collectives under random faults: every invariant holds", async () => {
    const r = await tier("collective", CASES || 24);
    expect(r.violations).toEqual([]);
    // most of those not cut short finish (faults end others: 3 in 5 of them, as 12 of 20 before);
    // each cut short ends at its limit or is refused (tier checks it), and some end at the limit
    if (!CASES) expect([r.ends.get("finished")! > (3 * r.unforced) / 5, r.ends.get("time-limit")! > 0]).toEqual([true, true]);
  });

  // the checks can fail: results doctored the ways the bugs this tier is for would make them
  it("the checker flags SUCCESS without every message, goodput without a completion, a stall, a bandwidth for a size not done", async () => {
    const traffic = await runScenario(coreModule(), trafficScenario(2) as ScenarioInput);
    expect(resultViolations("t", traffic)).toEqual([]);
    const doctored = (f: (r: ScenarioResult) => void) => { const r = structuredClone(traffic); f(r); return resultViolations("t", r); };
    expect([traffic.ended, traffic.flows[0]!.goodputGbps! > 0]).toEqual(["finished", true]);
    expect(doctored((r) => { r.messages.completed -= r.flows[0]!.completed; r.flows[0]!.completed = 0; })).toEqual([
      expect.stringMatching(/^t: flow 0: 0\/\d+ done, 0 failed, status SUCCESS$/), expect.stringMatching(/^t: flow 0: goodput .* with no message done$/), expect.stringMatching(/^t: finished with \d+ of \d+ done$/),
    ]);
    expect(doctored((r) => { r.ended = "stalled"; })).toEqual([expect.stringMatching(/^t: stalled at/)]);
    // a late arrival is a violation here, and a warning in the report (issue 27: a causality break)
    expect(traffic.lateArrivals).toBe(0);
    expect(doctored((r) => { r.lateArrivals = 3; })).toEqual(["t: 3 frames reached a device in its past (port.rx_late)"]);
    expect(formatResult(traffic)).not.toMatch(/WARNING/);
    expect(formatResult({ ...traffic, lateArrivals: 3 })).toMatch(/^WARNING: 3 frames reached a device after its clock had passed their arrival \(port\.rx_late\)/m);
    const coll = await runScenario(coreModule(), collectiveScenario(1) as ScenarioInput);
    expect(coll.collective!.rows[0]!.status).toBe("done");
    const row = structuredClone(coll);
    row.collective!.rows[0]!.status = "failed";
    row.collective!.rows[0]!.error = "ranks[0].nodes[1] (send on engine 0): RETRY_EXC_ERR";
    row.ended = "failed";
    expect(resultViolations("c", row)).toEqual([expect.stringMatching(/^c: size 0: \d+(\.\d+)? GB\/s for a size not done$/)]);
  });
});
