import { describe, it, expect } from "vitest";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { renderFidelity, spreadOf, verdictOf, type FidelitySheet } from "../bench/lib/fidelity-render.js";
import { CLAIMS, SEEDS, SMALL_SEEDS, claimsFile, readBatch } from "../bench/lib/fidelity-claims.js";
import { sha256 } from "../bench/fidelity.js";

// docs/fidelity.md, the seeds' claims as menic measures them, is written by `npm run fidelity`
// (bench/fidelity.ts) with docs/fidelity.json, from which it is rendered. Running the claims
// takes minutes, so this test runs none of them: it checks that the page is what its JSON
// renders to, and that the JSON was made by the core this run built (build/menic.wasm) and by
// the claims table as it is now (bench/lib/fidelity-claims.ts), so that a change in the model's
// behaviour or in what is measured leaves the page stale until it is made again. The wasm
// build is byte-reproducible (built twice, and in another directory: the same sha256), so its
// hash names the core's behaviour.

const sheet = JSON.parse(readFileSync("docs/fidelity.json", "utf8")) as FidelitySheet;
const STALE = "run npm run fidelity";

describe("docs/fidelity.md (npm run fidelity)", () => {
  it("is what docs/fidelity.json renders to", () => {
    expect(readFileSync("docs/fidelity.md", "utf8"), `docs/fidelity.md is not docs/fidelity.json rendered: ${STALE} (or, after a change to bench/lib/fidelity-render.ts alone, npm run fidelity -- --render)`).toBe(renderFidelity(sheet));
  });

  it("was measured on the core this build made", () => {
    expect(sheet.hashes.core, `build/menic.wasm changed since docs/fidelity.json was measured: ${STALE}`).toBe(sha256(readFileSync("build/menic.wasm")));
  });

  it("was measured with the claims table as it is", () => {
    expect(sheet.hashes.claims, `bench/lib/fidelity-claims.ts changed since docs/fidelity.json was measured: ${STALE}`).toBe(sha256(readFileSync(claimsFile())));
  });

  it("is a full run: every claim of the table on each of its seeds, not --quick", () => {
    expect(sheet.quick).toBe(false);
    expect(sheet.claims.map((c) => c.id)).toEqual(CLAIMS.map((c) => c.id));
    for (const [k, c] of sheet.claims.entries()) expect(c.perSeed.map((p) => p.seed), c.id).toEqual(CLAIMS[k]!.seeds ?? [null]);
    expect(sheet.loss.seeds).toEqual(SMALL_SEEDS);
    expect(sheet.loss.rows.length * sheet.loss.rates.length).toBe(16); // 2 transports x 2 models x 4 rates
  });

  it("saw no frame arrive in a device's past in any of its scenario runs", () => {
    const scenarios = sheet.runs.filter((r) => r.spec.kind === "scenario");
    expect(scenarios.length).toBeGreaterThan(100);
    expect(scenarios.filter((r) => r.metrics.lateArrivals !== 0).map((r) => r.spec)).toEqual([]);
  });

  it("gives each claim the spread and verdict its figures make", () => {
    for (const c of sheet.claims) {
      const values = c.perSeed.map((p) => p.value);
      expect(c.spread, c.id).toEqual(spreadOf(values));
      expect(c.verdict, c.id).toBe(verdictOf(values, c.bound, c.explained));
    }
  });
});

describe("the fidelity sheet's rules", () => {
  it("runs on seeds no unit test names", () => {
    const files = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
      d.isDirectory() ? files(join(dir, d.name)) : d.name.endsWith(".ts") && d.name !== "fidelity.test.ts" ? [join(dir, d.name)] : []);
    const text = files("test").map((f) => readFileSync(f, "utf8")).join("\n");
    const seeds = [...new Set([...SEEDS, ...SMALL_SEEDS, ...SMALL_SEEDS.flatMap((s) => readBatch(s, false))])];
    expect(seeds.filter((s) => new RegExp(`(?<![\\d.])${s}(?![\\d.])`).test(text))).toEqual([]);
  });

  it("judges a claim met only when every seed is within its bound; never reached counts as outside", () => {
    expect(verdictOf([1.96, 2.01], { min: 1.95 })).toBe("met");
    expect(verdictOf([1.96, 1.94], { min: 1.95 })).toBe("not met");
    expect(verdictOf([1.96, 1.94], { min: 1.95 }, "a reason")).toBe("explained");
    expect(verdictOf([3, null], { max: 10 })).toBe("not met");
    expect(spreadOf([3, null, 1, 2])).toEqual({ min: 1, median: 2.5, max: null });
    expect(spreadOf([3, null, 1])).toEqual({ min: 1, median: 3, max: null });
  });
});
