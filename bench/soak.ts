// npm run soak: the host verbs model check of test/verbs-model.test.ts (random verbs calls and
// time steps, every completion explained by the reference model) for SOAK_OPS operations
// (default 10^6) from seed SOAK_SEED (default 1), in sequences of up to SOAK_CHUNKS runs of
// operations (default 200). Not part of npm test. Prints operations per
// second, completions checked and the seed; a failure prints fast-check's seed, path and the
// shrunk sequence, and how to replay it in the test.
import fc from "fast-check";
import { coreModule } from "../host/platform/node.js";
import { hostScenario, HostHarness } from "../test/helpers/verbs-harness.js";
import { figure } from "./lib/report.js";

/** Scenarios per fast-check run: the seed of batch b is SOAK_SEED + b. */
const BATCH = 500;
/** Longer sequences than the test's (it takes VERBS_CHUNKS to replay one): fewer devices to create, longer histories. */
const MAX_CHUNKS = Number(process.env.SOAK_CHUNKS ?? 200);

export async function run(): Promise<void> {
  const seed = Number(process.env.SOAK_SEED ?? 1);
  const target = Number(process.env.SOAK_OPS ?? 1_000_000);
  const module = coreModule();
  let ops = 0, completions = 0, scenarios = 0, maxNodes = 0, lastReport = 0;
  const t0 = performance.now();
  for (let batch = 0; ops < target; batch++) {
    let index = 0;
    try {
      await fc.assert(
        fc.asyncProperty(hostScenario(MAX_CHUNKS), async (sc) => {
          index++;
          const r = (await HostHarness.open(module, sc)).run();
          ops += r.ops;
          completions += r.completions;
          maxNodes = Math.max(maxNodes, r.maxNodes);
          scenarios++;
        }),
        { seed: seed + batch, numRuns: BATCH },
      );
    } catch (e) {
      console.error(`soak: failed in batch ${batch} (fast-check seed ${seed + batch}), scenario ${index}, after ${ops} operations`);
      console.error(`soak: replay and shrink it with VERBS_SEED=${seed + batch} VERBS_RUNS=${index} VERBS_CHUNKS=${MAX_CHUNKS} npx vitest run test/verbs-model.test.ts -t "reference model"`);
      throw e;
    }
    if (performance.now() - lastReport > 10_000) {
      lastReport = performance.now();
      console.error(`soak: ${ops} operations, ${completions} completions, ${((ops / (lastReport - t0)) * 1000).toFixed(0)} ops/s`);
    }
  }
  const s = (performance.now() - t0) / 1000;
  figure("soak.ops_per_s", ops / s, "ops/s", "random verbs operations and time steps checked against the reference model per host second", { seed, ops, scenarios, seconds: Number(s.toFixed(1)) });
  figure("soak.completions", completions, "completions", "completions the model explained (every one must be)", { seed, maxSearchNodes: maxNodes });
}
