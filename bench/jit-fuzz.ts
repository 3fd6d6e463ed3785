// npm run soak (with the verbs soak and the fuzz tier) or npm run bench -- jit-fuzz: the
// differential fuzz of test/jit-fuzz.test.ts with a large budget. JIT_FUZZ_PROGRAMS (default
// 10^6) random RV32IMA + Zicsr programs from seed JIT_FUZZ_SEED (default 1), each run by the
// interpreter and by the translator translating code where it first lands (jitHot 1), must end
// alike (test/helpers/jit-fuzz.ts). Prints programs per host second and what they did; the first
// divergence stops it with the seed, the first differing field, when the runs part, and the
// command that replays it. 10^6 programs take 7-12 host hours on a loaded 2-core machine (25-45 ms
// each, most of it compiling translations).
import { coreModule } from "../host/platform/node.js";
import { FuzzRig } from "../test/helpers/jit-fuzz.js";
import { figure } from "./lib/report.js";

export async function run(): Promise<void> {
  const first = Number(process.env.JIT_FUZZ_SEED ?? 1);
  const programs = Number(process.env.JIT_FUZZ_PROGRAMS ?? 1_000_000);
  const rig = new FuzzRig(coreModule());
  const t0 = performance.now();
  let lastReport = t0;
  for (let seed = first; seed < first + programs; seed++) {
    await rig.run(seed);
    if (performance.now() - lastReport > 30_000) {
      lastReport = performance.now();
      console.error(`jit-fuzz: ${seed - first + 1}/${programs} programs alike`);
    }
  }
  const s = (performance.now() - t0) / 1000;
  const t = rig.tally;
  figure("jit_fuzz.programs_per_s", programs / s, "programs/s", "random programs run by the interpreter and the translator (jitHot 1) and found to end alike, per host second", {
    first, programs, seconds: Number(s.toFixed(1)), traps: t.traps, exits: t.exits, translated: t.translated, translatedInstructions: t.translatedInstructions,
  });
}
