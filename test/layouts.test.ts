import { describe, it, expect } from "vitest";
import { execFileSync } from "node:child_process";

/** What `script --check` reports on stderr: nothing when its generated files are current. */
function stale(script: string): string {
  try {
    execFileSync("node", [script, "--check"], { encoding: "utf8", stdio: "pipe" });
  } catch (e) {
    return String((e as { stderr?: string }).stderr);
  }
  return "";
}

describe("generated layouts", () => {
  it("are what scripts/gen-layouts.mjs writes from layouts/*.json now (regenerate: npm run gen)", () => {
    expect(stale("scripts/gen-layouts.mjs")).toBe("");
  });

  it("the decode table's views are what scripts/gen-isa.mjs writes from layouts/isa.json now (regenerate: npm run gen)", () => {
    expect(stale("scripts/gen-isa.mjs")).toBe("");
  });

  it("the host's view of the core's exports is what scripts/gen-exports.mjs writes from assembly/index.ts now (regenerate: npm run gen)", () => {
    expect(stale("scripts/gen-exports.mjs")).toBe("");
  });
});
