// npm run soak (with the verbs soak) or npm run bench -- tier: the fuzz tier of test/fuzz-tier.test.ts
// and test/fuzz-answers.test.ts with a large budget. TIER_CASES (default 2,000) random traffic
// scenarios and half as many collectives under random faults from seed TIER_SEED (default 1),
// each held to the tier's invariants (test/helpers/fuzz-tier/scenarios.ts; every 4th case runs
// twice and must give the same result), then TIER_ANSWERS (default TIER_CASES / 20) cases per
// transport of two devices under forged answers (test/helpers/fuzz-tier/answers.ts). Prints cases per host second, how the runs ended, and fails listing every
// violation with the seed that replays it (FUZZ_TIER_SEED=<seed> FUZZ_TIER_CASES=1 npx vitest run
// test/fuzz-tier.test.ts).
import { coreModule } from "../host/platform/node.js";
import { trafficScenario, collectiveScenario, runTierCase } from "../test/helpers/fuzz-tier/scenarios.js";
import { answersCase } from "../test/helpers/fuzz-tier/answers.js";
import { figure } from "./lib/report.js";

export async function run(): Promise<void> {
  const first = Number(process.env.TIER_SEED ?? 1);
  const cases = Number(process.env.TIER_CASES ?? 2000);
  const module = coreModule();
  const violations: string[] = [];
  for (const [kind, make, n] of [["traffic", trafficScenario, cases], ["collective", collectiveScenario, Math.ceil(cases / 2)]] as const) {
    const ends: Record<string, number> = {};
    let posted = 0, completed = 0, lastReport = performance.now();
    const t0 = performance.now();
    for (let seed = first; seed < first + n; seed++) {
      const o = await runTierCase(module, make(seed), { determinism: seed % 4 === 0 });
      violations.push(...o.violations);
      ends[o.ended] = (ends[o.ended] ?? 0) + 1;
      posted += o.posted;
      completed += o.completed;
      if (performance.now() - lastReport > 10_000) {
        lastReport = performance.now();
        console.error(`tier: ${kind} ${seed - first + 1}/${n}, ${violations.length} violations`);
      }
    }
    const s = (performance.now() - t0) / 1000;
    figure(`tier.${kind}.cases_per_s`, n / s, "cases/s", `random ${kind} scenarios run and checked per host second`, { first, cases: n, seconds: Number(s.toFixed(1)), ends, posted, completed });
  }
  // forged answers at two devices (test/fuzz-answers.test.ts): TIER_ANSWERS cases per transport, half of
  // the MetaRoCE-like ones with ghost ACKs up to half the PSN space away
  const answers = Number(process.env.TIER_ANSWERS ?? Math.ceil(cases / 20));
  for (const transport of ["rocev2", "metaroce"] as const) {
    const t0 = performance.now();
    let posted = 0, success = 0, forged = 0;
    for (let seed = first; seed < first + answers; seed++) {
      const r = await answersCase(seed, transport, { windows: 300, forgedPerWindow: 6 }, { halfSpace: transport === "metaroce" && seed % 2 === 0 });
      violations.push(...r.violations);
      posted += r.posted;
      success += r.success;
      forged += r.forged;
    }
    const s = (performance.now() - t0) / 1000;
    figure(`tier.answers.${transport}.cases_per_s`, answers / s, "cases/s", `two devices under forged answers (${transport}) run and checked per host second`, { first, cases: answers, seconds: Number(s.toFixed(1)), posted, success, forged });
  }
  figure("tier.violations", violations.length, "violations", "invariants broken (must be 0)", {});
  if (violations.length > 0) {
    for (const v of violations) console.error(`tier: ${v}`);
    throw new Error(`tier: ${violations.length} violations (replay one: FUZZ_TIER_SEED=<seed> FUZZ_TIER_CASES=1 npx vitest run test/fuzz-tier.test.ts)`);
  }
}
