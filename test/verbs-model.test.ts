// Model-based tests of the verbs queues (review issue 6): random sequences of host verbs calls
// and time steps, checked after every step against a reference model (test/helpers/verbs-model.ts),
// and random verbs commands from several engines, checked against the ownership rules
// (test/helpers/ownership-model.ts). Fixed seeds keep CI repeatable (VERBS_SEED, VERBS_RUNS and,
// for the host property, VERBS_CHUNKS override them); a failure prints fast-check's seed and
// path and shrinks to a minimal sequence; VERBS_TALLY=1 prints what the engines' commands met.
// `npm run soak` runs the host property for 10^6 operations.

import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { coreModule } from "../host/platform/node.js";
import { hostScenario, runHostScenario } from "./helpers/verbs-harness.js";
import { enginePrograms, runOwnership, FW } from "./helpers/ownership-model.js";

const seed = (s: number) => Number(process.env.VERBS_SEED ?? s);
const runs = (n: number) => Number(process.env.VERBS_RUNS ?? n);

describe("the host verbs queues against the reference model", () => {
  it("every work request completes once, with the model's status and bytes, and nothing else changes", async () => {
    await fc.assert(
      fc.asyncProperty(hostScenario(Number(process.env.VERBS_CHUNKS ?? 40)), async (sc) => {
        await runHostScenario(coreModule(), sc);
      }),
      { seed: seed(20240607), numRuns: runs(1500), endOnFailure: false },
    );
  }, 300_000); // 1,500 scenarios: over a minute and a half on a busy machine
});

describe("verbs commands from several engines at once", () => {
  it("act only on the engine's own objects; the host's keep working", async () => {
    const tally = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(enginePrograms(FW.engines, 10), async (programs) => {
        expect(await runOwnership(coreModule(), programs, false, tally)).toEqual([]);
      }),
      { seed: seed(314159), numRuns: runs(250), endOnFailure: false },
    );
    if (process.env.VERBS_TALLY) console.log([...tally.entries()].sort().map(([k, v]) => `${k} = ${v}`).join("\n"));
  });

  // Skipped until the core answers as layouts/verbs.json documents (review issue 6 finding):
  // CREATE_CQ with a depth outside 1..65536 or a ring outside the engine's memory answers
  // NO_OBJECT (-1), where CMD_ERR documents ARGUMENT ("a bad argument: depth, address outside
  // memory"); DEALLOC_PD of an engine's own PD that a region or QP still uses answers
  // NO_OBJECT, where IN_USE ("the object is still used by another") is documented. Minimal:
  // one engine, CREATE_CQ(0x10003000 (the NIC's MMIO), 1) gives -1.
  it.skip("answer bad arguments with the documented CMD_ERR", async () => {
    await fc.assert(
      fc.asyncProperty(enginePrograms(FW.engines, 10), async (programs) => {
        expect(await runOwnership(coreModule(), programs, true)).toEqual([]);
      }),
      { seed: seed(271828), numRuns: runs(250), endOnFailure: false },
    );
  });
});
