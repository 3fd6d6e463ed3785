// Differential fuzz of the translator: random RV32IMA + Zicsr programs (test/helpers/jit-fuzz.ts:
// branches, loads and stores of every width, atomics, CSRs, traps, self-modifying code with and
// without fence.i, MMIO) run by the interpreter in windows only and by the translator translating
// code where it first lands (jitHot 1), running ahead of its windows, must end alike: registers, SRAM, HBM, cycles, instructions, traps,
// console, statistics. A divergence names the seed, the first differing field, where the runs
// first part, and how to replay it.
//
// JIT_FUZZ_PROGRAMS programs from seed JIT_FUZZ_SEED (default 1). A program costs 25-45 ms of
// one host core on a loaded 2-core machine, most of it compiling its ~250 translations (10^4
// took 432 s there), so the default is 1,000; CI runs 10^4 (.ci/run sets JIT_FUZZ_PROGRAMS) and
// npm run soak 10^6 (bench/jit-fuzz.ts).
import { describe, expect, it } from "vitest";
import { coreModule } from "../host/platform/node.js";
import { FuzzRig, fuzzProgram } from "./helpers/jit-fuzz.js";

const PROGRAMS = Number(process.env.JIT_FUZZ_PROGRAMS ?? 1000);
const SEED = Number(process.env.JIT_FUZZ_SEED ?? 1);

describe("the translator against the interpreter on random programs", () => {
  it(`${PROGRAMS} programs from seed ${SEED} end alike, their code translated where it first lands`, async () => {
    const rig = new FuzzRig(coreModule());
    for (let seed = SEED; seed < SEED + PROGRAMS; seed++) await rig.run(seed);
    // the programs did what they are drawn to do (per program, measured: ~57 traps, ~250
    // translations, ~3,000 instructions run translated): both engines exit, by the program's
    // end or its handler's trap limit, trapping on the way, and their code ran translated
    const t = rig.tally;
    expect(t.programs).toBe(PROGRAMS);
    expect(t.exits).toBeGreaterThan(1.95 * PROGRAMS);
    expect(t.traps).toBeGreaterThan(20 * PROGRAMS);
    expect(t.translated).toBeGreaterThan(100 * PROGRAMS);
    expect(t.translatedInstructions).toBeGreaterThan(1500 * PROGRAMS);
    // and ran ahead of their windows (the translator's device; the interpreter's runs windows only)
    console.log(`jit fuzz: ${t.aheadInstructions} instructions run ahead in ${PROGRAMS} programs`);
    expect(t.aheadInstructions).toBeGreaterThan(0);
  }, 3_600_000);

  it("a program is its seed's: the same words every time, another seed's differ", () => {
    expect(fuzzProgram(7)).toEqual(fuzzProgram(7));
    expect(fuzzProgram(7)).not.toEqual(fuzzProgram(8));
  });
});
