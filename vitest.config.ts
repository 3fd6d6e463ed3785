import { defineConfig } from "vitest/config";

/** What every tier shares (vitest.unit.config.ts runs a part of the same tests). */
export const shared = {
  // no wall-clock limit a loaded machine can reach (issue 28): a test waits on events, and
  // these only catch a hang, inside the CI run's 30 minutes
  testTimeout: 1_200_000,
  hookTimeout: 1_200_000,
  pool: "forks" as const,
};

export default defineConfig({
  test: {
    ...shared,
    include: ["test/**/*.test.ts"],
    // both cores (vitest leaves one free by default: on 2 cores the files ran one at a time)
    maxWorkers: 2,
    // the JSON report lets .ci/run print a plain "N passed, N failed" closing line
    reporters: ["default", "json"],
    outputFile: { json: "build/test-results.json" },
  },
});
