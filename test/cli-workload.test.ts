// `menic run` on an open-loop workload (issue 29, §2): its size file read relative to the
// scenario, a malformed or missing one refused at its line with the field's path (exit 2), and
// the slowdown table the shipped example prints, against its JSON.
import { describe, it, expect, afterAll } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { goldenRun } from "./helpers/golden.js";

const menic = (...args: string[]) => {
  const r = spawnSync("node", ["bin/menic.js", ...args], { encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};
const tmp = mkdtempSync(join(tmpdir(), "menic-cli-workload-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("menic run: a workload's size file", () => {
  const scenario = join(tmp, "wl.json");
  writeFileSync(scenario, JSON.stringify({ devices: { count: 2 }, traffic: { pattern: "workload", workload: { sizes: { file: "sizes/my.cdf" }, flows: 3 } } }));

  it("is refused at its line, with the field's path, exit 2", () => {
    rmSync(join(tmp, "sizes"), { recursive: true, force: true });
    expect(menic("run", scenario)).toEqual({ status: 2, stdout: "", stderr: "menic: scenario.traffic.workload.sizes.file: sizes/my.cdf: no such file\n" });
    mkdirSync(join(tmp, "sizes"));
    writeFileSync(join(tmp, "sizes", "my.cdf"), "# mine\n100 0.2\n\n50 1\n");
    expect(menic("run", scenario, "--json")).toEqual({ status: 2, stdout: "", stderr: "menic: scenario.traffic.workload.sizes.file: sizes/my.cdf:4: sizes must increase from line to line: 50 after 100\n" });
    writeFileSync(join(tmp, "sizes", "my.cdf"), "100 20\n200 100\n");
    expect(menic("run", scenario).stderr).toBe("menic: scenario.traffic.workload.sizes.file: sizes/my.cdf:1: the fraction must be from 0 to 1, got 20 (a percentage? write it as a fraction: 0.2)\n");
  });

  it("is read relative to the scenario file, and runs", () => {
    writeFileSync(join(tmp, "sizes", "my.cdf"), "1000 0.5\n8000 1\n");
    const out = menic("run", scenario, "--json");
    expect(out.status).toBe(0);
    const r = JSON.parse(out.stdout);
    expect([r.ended, r.flows.length, r.workload.sizes, r.workload.meanFlowBytes]).toEqual(["finished", 3, "sizes/my.cdf", 0.5 * 1000 + 0.5 * 4500]);
    expect(r.flows.every((f: { bytes: number }) => f.bytes >= 1000 && f.bytes <= 8000)).toBe(true);
  });
});

describe("menic run examples/scenarios/websearch-load50.json", () => {
  it("prints the FCT slowdown by flow size, p50 and p99, as its JSON has them", () => {
    const out = menic("run", "examples/scenarios/websearch-load50.json");
    expect(out.status).toBe(0);
    const w = goldenRun("websearch-load50").workload!;
    expect(w.flows).toBe(1000);
    expect(out.stdout).toContain(`open-loop workload: 1000 flows, sizes ../workloads/websearch.cdf (mean 1.71 MB), load 0.5 of 800 Gb/s per device\n`);
    const labels = ["<= 10 KB", "10 KB - 100 KB", "100 KB - 1 MB", "1 MB - 10 MB", "> 10 MB", "all"];
    [...w.slowdown.buckets, w.slowdown.all].forEach((b, i) => {
      const row = new RegExp(`^${labels[i]} +${b.flows} +${b.completed} +${b.p50!.toFixed(2)} +${b.p99!.toFixed(2)}$`, "m");
      expect(out.stdout).toMatch(row);
    });
    // every flow completed, and the buckets hold them all
    expect(w.slowdown.buckets.reduce((a, b) => a + b.flows, 0)).toBe(1000);
    expect(w.slowdown.all.completed).toBe(1000);
  });
});
