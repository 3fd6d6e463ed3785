import { defineConfig } from "vitest/config";
import { shared } from "./vitest.config.js";

// `npm run test:unit`: the inner loop's tier (issue 28), under a minute on 2 cores. It leaves
// out what runs a whole shipped scenario or sweep, the fuzz and model tiers, and what needs a
// tool from outside npm (tshark, gdb-multiarch, clang, chromium, npm pack); `npm test` runs
// everything, and is what CI runs.
export const SLOW_OR_EXTERNAL = [
  // whole scenarios, sweeps, goldens, the CLI running them
  "test/golden.test.ts", "test/scenario.test.ts", "test/scenario-!(schema).test.ts", "test/collective-clean.test.ts",
  "test/compute-interference.test.ts", "test/fabric-windows.test.ts", "test/browser-bundle.test.ts",
  "test/cli.test.ts", "test/cli-run.test.ts", "test/jit.test.ts",
  // the fuzz and model tiers
  "test/fuzz-tier.test.ts", "test/fuzz-answers.test.ts", "test/roce-fuzz.test.ts", "test/metaroce-fuzz.test.ts", "test/verbs-model.test.ts", "test/verbs-input.test.ts", "test/jit-fuzz.test.ts",
  // tools from outside npm
  "test/*tshark*.test.ts", "test/*-capture.test.ts", "test/firmware-build.test.ts", "test/fw-debug.test.ts", "test/gdb-*.test.ts", "test/isa.test.ts",
  "test/web-page.test.ts", "test/package.test.ts",
];

export default defineConfig({
  // both cores: nothing here holds much memory (vitest leaves one core free by default)
  test: { ...shared, include: ["test/**/*.test.ts"], exclude: SLOW_OR_EXTERNAL, maxWorkers: 2 },
});
