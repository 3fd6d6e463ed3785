// Golden outputs: every firmware example as `menic fw run --json` prints it, every
// shipped scenario as `menic run --json` prints it, the doorbell scenario and
// examples/save-restore.ts, recomputed and compared with test/golden/*.json.
// A deterministic change in behaviour shows here; when it is intended, `npm run golden`
// rewrites the files and the diff is reviewed and committed with the change.

import { describe, it, expect } from "vitest";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { CASES, GOLDEN_DIR, goldenFile, goldenText } from "./helpers/golden.js";

const HINT = "run npm run golden and review the diff (git diff test/golden)";

describe("golden outputs (test/golden/)", () => {
  it("has one file per case and no other", () => {
    const files = readdirSync(GOLDEN_DIR).filter((f) => f.endsWith(".json")).sort();
    expect(files, `the golden files are not the cases' (test/helpers/golden.ts): ${HINT}`).toEqual(CASES.map((c) => `${c.name}.json`).sort());
  });

  it.each(CASES.map((c) => [c.name, c] as const))("%s", async (name, c) => {
    const file = goldenFile(name);
    expect(existsSync(file), `test/golden/${name}.json is missing: ${HINT}`).toBe(true);
    const text = await goldenText(c);
    // compared as objects, so that a mismatch prints the fields that differ
    expect(JSON.parse(text), `${name} no longer gives test/golden/${name}.json: if the change is intended, ${HINT}`).toEqual(JSON.parse(readFileSync(file, "utf8")));
    expect(text, `test/golden/${name}.json is not as npm run golden writes it: ${HINT}`).toBe(readFileSync(file, "utf8"));
  }); // the largest scenarios (metaroce-planes, allreduce-64) take near two minutes on a busy machine: the global timeout only catches a hang
});
