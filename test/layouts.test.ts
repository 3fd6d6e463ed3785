import { describe, it, expect } from "vitest";
import { execFileSync } from "node:child_process";

describe("generated layouts", () => {
  it("are what scripts/gen-layouts.mjs writes from layouts/*.json now (regenerate: npm run gen)", () => {
    let out = "";
    try {
      execFileSync("node", ["scripts/gen-layouts.mjs", "--check"], { encoding: "utf8", stdio: "pipe" });
    } catch (e) {
      out = String((e as { stderr?: string }).stderr);
    }
    expect(out).toBe("");
  });
});
