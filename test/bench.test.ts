import { describe, it, expect } from "vitest";
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";

// scripts/bench.mjs: JSON lines by default, a table that says what each figure means with
// --pretty (or on a terminal), the same figures either way; the suites it lists are bench/*.ts
// (bench/lib/ holds what they share). The doorbell suite is the quick one (simulated figures:
// the same on every run).

const bench = (...args: string[]) => spawnSync("node", ["scripts/bench.mjs", ...args], { encoding: "utf8" });
const hasScript = spawnSync("script", ["--version"], { stdio: "ignore" }).status === 0;

describe("npm run bench", () => {
  it("prints JSON lines {bench, value, unit} by default, as before", () => {
    const r = bench("doorbell");
    expect(r.status).toBe(0);
    const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.map((l) => l.bench)).toEqual(["doorbell.host.classic.ns", "doorbell.host.express.ns", "doorbell.host.saving.ns", "doorbell.engine.classic.ns", "doorbell.engine.express.ns"]);
    for (const l of lines) expect(Object.keys(l)).toEqual(["bench", "value", "unit"]);
    expect(lines[2].value).toBeCloseTo(lines[0].value - lines[1].value, 2);
  });

  it("--pretty prints the same figures as a table that says what each means", () => {
    const json = bench("doorbell").stdout.trim().split("\n").map((l) => JSON.parse(l));
    const r = bench("doorbell", "--pretty");
    expect(r.status).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("doorbell:");
    expect(lines[1]).toMatch(/^figure +value {2}what it means$/);
    const rows = lines.slice(2).map((l) => /^(\S+) +([\d,.]+) (\S+) {2}(.+)$/.exec(l)!);
    expect(rows.map((m) => [m[1], Number(m[2]!.replace(/,/g, "")), m[3]])).toEqual(json.map((j) => [j.bench, Number(j.value.toFixed(3)), j.unit]));
    expect(rows[0]![4]).toBe("simulated latency of one 8-byte WRITE posted by the host: WQE in a host ring, doorbell over PCIe, until its completion is visible");
    for (const m of rows) expect(m[4]!.length).toBeGreaterThan(20);
  });

  it.skipIf(!hasScript)("prints the table when stdout is a terminal, JSON with --json there", () => {
    const onTty = (cmd: string) => spawnSync("script", ["-qec", cmd, "/dev/null"], { encoding: "utf8" }).stdout.replace(/\r/g, "");
    expect(onTty("node scripts/bench.mjs doorbell")).toMatch(/^doorbell:\nfigure +value {2}what it means\ndoorbell\.host\.classic\.ns +/);
    expect(JSON.parse(onTty("node scripts/bench.mjs doorbell --json").split("\n")[0]!).bench).toBe("doorbell.host.classic.ns");
  });

  it("lists the suites, which are bench/*.ts and not their shared report module; refuses others with exit 2", () => {
    const suites = readdirSync("bench").filter((f) => f.endsWith(".ts")).map((f) => f.slice(0, -3));
    expect(suites).not.toContain("report");
    const r = bench();
    expect(r.status).toBe(2);
    expect(r.stderr.split("\n")[0]).toBe(`usage: npm run bench -- <suite> ... [--pretty | --json]   (suites: ${suites.join(", ")})`);
    expect(bench("report")).toMatchObject({ status: 2, stderr: `bench: unknown suite report (suites: ${suites.join(", ")})\n` });
    expect(bench("doorbell", "--fancy")).toMatchObject({ status: 2, stderr: expect.stringMatching(/^bench: unknown option --fancy\n/) });
  });
});
