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
import { hostScenario, runHostScenario, type HostScenario, type KeySpec, type WrSpec } from "./helpers/verbs-harness.js";
import { enginePrograms, runOwnership, FW } from "./helpers/ownership-model.js";

const fit: KeySpec = { fit: true, pick: 0, off: 0, bad: 0, otherRole: false };
const write = (len: number): WrSpec => ({ op: "RDMA_WRITE", signaled: true, local: fit, remote: fit, len });
const send = (len: number): WrSpec => ({ op: "SEND", signaled: true, local: fit, remote: fit, len });
const seed = (s: number) => Number(process.env.VERBS_SEED ?? s);
const runs = (n: number) => Number(process.env.VERBS_RUNS ?? n);

// Counterexamples the property found, kept as fixed cases (fast-check's seed and path are tied
// to the arbitraries; these are not).
const pinned: [string, HostScenario][] = [
  // seed 105253: a WRITE in flight, its QP moved to ERR, a WRITE and a receive posted with
  // their doorbells still crossing PCIe, then destroyQp: the send queue completed 2 before 1
  ["ERR with a request in flight, then destroy: the send queue completes in posting order", {
    depths: [{ sq: 2, rq: 2 }, { sq: 4, rq: 3 }, { sq: 2, rq: 2 }, { sq: 2, rq: 2 }, { sq: 2, rq: 2 }, { sq: 2, rq: 2 }],
    hostDoorbellQueue: 2,
    ops: [
      { t: "post", qp: 1, wrs: [write(1)], express: false },
      { t: "advance", ps: 1_500_000 },
      { t: "modify", qp: 1, to: "ERR", dest: 0 },
      { t: "post", qp: 7, wrs: [write(1)], express: false },
      { t: "recv", qp: 1, wrs: [{ local: fit, len: 96 }] },
      { t: "post", qp: 1, wrs: [write(1)], express: false },
      { t: "destroy", qp: 1 },
    ],
  }],
  // seed 105253 again once that was fixed: an unsignaled WRITE done unobserved, then one whose
  // key fails in flight when its QP is destroyed: it keeps its LOC_PROT_ERR
  ["destroy with a failed request in flight behind an unobserved one: it keeps its status", {
    depths: Array.from({ length: 6 }, () => ({ sq: 2, rq: 2 })),
    hostDoorbellQueue: 2,
    ops: [
      { t: "post", qp: 7, wrs: [{ ...write(1), signaled: false, local: { ...fit, pick: 10 }, remote: { ...fit, pick: 4 } }, { ...write(44), local: { ...fit, off: 213 } }], express: true },
      { t: "post", qp: 0, wrs: [{ ...write(1), remote: { ...fit, fit: false } }], express: false },
      { t: "advance", ps: 1_500_000 },
      { t: "modify", qp: 0, to: "ERR", dest: 0 },
      { t: "destroy", qp: 1 },
    ],
  }],
  // VERBS_SEED 91517: QP 0 SENDs to QP 1, whose one receive its first SEND takes; its second
  // finds none (RNR) while QP 1 is still ready, then QP 1 fails (its WRITE to a QP in ERR), all
  // inside one step; when QP 0 goes to ERR the SEND completes with the RNR it found, a status
  // neither world at the step's ends gives (the model now also checks the world between them)
  ["a SEND that found its target's receives taken inside a step, the target failing after: it keeps RNR_RETRY_EXC_ERR", {
    depths: [{ sq: 3, rq: 2 }, { sq: 3, rq: 2 }, { sq: 4, rq: 2 }, { sq: 2, rq: 2 }, { sq: 2, rq: 2 }, { sq: 2, rq: 2 }],
    hostDoorbellQueue: 8192,
    ops: [
      { t: "post", qp: 1, wrs: [{ ...write(1), remote: { ...fit, bad: 1 } }], express: false },
      { t: "modify", qp: 1, to: "ERR", dest: 0 },
      { t: "quiet" },
      { t: "post", qp: 0, wrs: [{ ...send(1), signaled: false }], express: true },
      { t: "reconnect", qp: 0, dest: 2 },
      { t: "post", qp: 2, wrs: [{ ...write(1), local: { ...fit, off: 128 }, remote: { ...fit, fit: false, bad: 1 } }], express: false },
      { t: "modify", qp: 2, to: "ERR", dest: 0 },
      { t: "recv", qp: 1, wrs: [{ local: { ...fit, pick: 1, off: 128 }, len: 96 }] },
      { t: "post", qp: 0, wrs: [send(1)], express: true },
      { t: "post", qp: 5, wrs: [send(1)], express: false },
      { t: "post", qp: 5, wrs: [{ ...write(1), local: { ...fit, otherRole: true } }], express: false },
      { t: "modify", qp: 5, to: "ERR", dest: 0 },
      { t: "recv", qp: 1, wrs: [{ local: fit, len: 96 }, { local: fit, len: 96 }] },
      { t: "post", qp: 0, wrs: [send(1)], express: true },
      { t: "post", qp: 5, wrs: [{ ...send(1), local: { ...fit, bad: 1 } }], express: false },
      { t: "advance", ps: 1_500_000 },
      { t: "advance", ps: 700_000 },
      { t: "post", qp: 1, wrs: [write(1)], express: true },
      { t: "advance", ps: 300_000 },
      { t: "post", qp: 0, wrs: [write(1)], express: false },
      { t: "advance", ps: 1_500_000 },
      { t: "modify", qp: 0, to: "ERR", dest: 0 },
    ],
  }],
  // VERBS_SEED 7770789: QPs 2 and 3 each SEND to the other, one receive each. QP 3's second
  // SEND finds none and goes on RNR; QP 2's unsignaled SEND takes QP 3's one receive and its
  // second finds none either, while QP 3 is still ready. QP 3 runs out of RNR retries first
  // and fails, then QP 2's last RNR NAK counted: both end RNR_RETRY_EXC_ERR in one step,
  // though in every order of the model's transitions one of them meets its target in ERR
  ["two QPs SENDing to each other run out of receives and RNR retries together: both RNR_RETRY_EXC_ERR", {
    depths: [{ sq: 2, rq: 2 }, { sq: 2, rq: 2 }, { sq: 2, rq: 2 }, { sq: 4, rq: 2 }, { sq: 2, rq: 2 }, { sq: 2, rq: 2 }],
    hostDoorbellQueue: 8192,
    ops: [
      { t: "recv", qp: 2, wrs: [{ local: fit, len: 96 }] },
      { t: "recv", qp: 3, wrs: [{ local: fit, len: 1 }] },
      { t: "post", qp: 3, wrs: [{ ...send(1), op: "SEND_WITH_IMM" }, { ...send(1), remote: { ...fit, pick: 1 } }], express: true },
      { t: "dereg", mr: 0, lastTarget: true },
      { t: "post", qp: 2, wrs: [{ ...send(1), op: "SEND_WITH_IMM", signaled: false }, { ...send(1), remote: { ...fit, off: 128 } }], express: true },
    ],
  }],
];

describe("the host verbs queues against the reference model", () => {
  it.each(pinned)("%s", async (_, sc) => {
    await runHostScenario(coreModule(), sc);
  });

  it("every work request completes once, with the model's status and bytes, and nothing else changes", async () => {
    await fc.assert(
      fc.asyncProperty(hostScenario(Number(process.env.VERBS_CHUNKS ?? 40)), async (sc) => {
        await runHostScenario(coreModule(), sc);
      }),
      { seed: seed(20240607), numRuns: runs(1500), endOnFailure: false },
    );
  }, Math.max(300_000, runs(1500) * 250)); // 1,500 scenarios: over a minute and a half on a busy machine; more runs, more time
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
