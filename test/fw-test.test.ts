// `menic fw test` (host/fw/test.ts) and the SDK's menic/test.h: the SDK's own unit tests pass in
// CI; a failing assertion and a fault are reported with file and line, as TAP and as JUnit XML.
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseTestConsole, toTap, toJunit, type FwTestSuite } from "../host/fw/test.js";
import type { FwEngineResult } from "../host/fw/run.js";

const menic = (...args: string[]) => spawnSync("node", ["bin/menic.js", ...args], { encoding: "utf8" });
const tmp = mkdtempSync(join(tmpdir(), "menic-fwtest-"));
const SRC = "firmware/tests/unit/sdk.c";
const lineOf = (marker: string) => readFileSync(SRC, "utf8").split("\n").findIndex((l) => l.includes(marker)) + 1;
const PASSING = ["snprintf_formats", "snprintf_truncates", "memmove_overlaps", "divides_64_bit"];

describe("menic fw test", () => {
  it("runs the SDK's unit tests: TAP with one passing point each, exit 0", () => {
    const r = menic("fw", "test", "firmware/tests/unit");
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(["TAP version 13", "1..4", ...PASSING.map((n, i) => `ok ${i + 1} - firmware/tests/unit/sdk.elf: ${n}`), ""].join("\n"));
  });

  it("reports a failed assertion with its values and line, and a fault with its location; exit 1", () => {
    const xmlPath = join(tmp, "junit.xml");
    const r = menic("fw", "test", "firmware/tests/demo-fail/sdk-fail.elf", "--junit", xmlPath);
    expect(r.status).toBe(1);
    const name = "firmware/tests/demo-fail/sdk-fail.elf";
    const assertion = `${SRC}:${lineOf("MENIC_ASSERT_EQ(1 + 1, 3)")}: 1 + 1 == 3: got 2, want 3`;
    const fault = new RegExp(`^the engine faulted: NULL pointer dereference \\(load from 0x0, inside the NULL guard \\[0, 0x400\\)\\) at pc 0x[0-9a-f]+ \\(menic_test_fn_demo_faults\\+0x[0-9a-f]+, sdk\\.c:${lineOf("MENIC_ASSERT_EQ(*p, 0)")}\\)$`);
    const lines = r.stdout.split("\n");
    expect(lines.slice(0, 6)).toEqual(["TAP version 13", "1..6", ...PASSING.map((n, i) => `ok ${i + 1} - ${name}: ${n}`)]);
    expect(lines.slice(6, 17)).toEqual([
      `not ok 5 - ${name}: demo_fails`, "  ---", "  severity: fail", "  messages:", `    - ${JSON.stringify(assertion)}`, "  ...",
      `not ok 6 - ${name}: demo_faults`, "  ---", "  severity: error", "  messages:", expect.stringMatching(/^    - "/),
    ]);
    expect(JSON.parse(lines[16]!.slice(6))).toMatch(fault);
    const xml = readFileSync(xmlPath, "utf8");
    expect(xml).toContain(`<testsuites name="menic fw test" tests="6" failures="1" errors="1">`);
    expect(xml).toContain(`<testcase classname="${name}" name="divides_64_bit"/>`);
    expect(xml).toContain(`<testcase classname="${name}" name="demo_fails">\n      <failure message="${assertion}">${assertion}</failure>\n    </testcase>`);
    expect(xml).toMatch(/<testcase classname="[^"]+" name="demo_faults">\n {6}<error message="the engine faulted: NULL pointer dereference \(load from 0x0, inside the NULL guard \[0, 0x400\)\) at pc /);
  });

  it("refuses a directory without images and a missing path, with usage", () => {
    expect(menic("fw", "test", "firmware/sdk").stderr).toContain("no .elf files in firmware/sdk");
    expect(menic("fw", "test").status).toBe(2);
  });
});

describe("reading the console protocol", () => {
  const exited = (code: number): FwEngineResult => ({ id: 0, state: "exited", exitCode: code, pc: 0x4400, mcause: null, mtval: null, instructions: 1, cycles: 1, sleepPs: 0, console: "", consoleLines: [], consoleDropped: 0 });
  const running: FwEngineResult = { ...exited(0), state: "running", exitCode: null, where: { pc: 0x4410, symbol: "spin", offset: 0x10 } };
  const con = (...l: string[]) => l.map((x) => `menic-test: ${x}`).join("\n") + "\n";

  it("a test that exits the engine is an error; the tests after it are not run", () => {
    const s = parseTestConsole("t.elf", "hello\n" + con("plan 3", "test 1 a", "test 2 b", "test 3 c", "begin 1 a", "end 1 pass", "begin 2 b"), exited(7), 0);
    expect(s.cases).toEqual([
      { name: "a", status: "pass", messages: [] },
      { name: "b", status: "error", messages: ["the engine exited with code 7"] },
      { name: "c", status: "error", messages: ["not run: the engine exited with code 7 in b"] },
    ]);
    expect(s.error).toBeUndefined();
  });

  it("a test still running at the time limit says where the engine is", () => {
    const s = parseTestConsole("t.elf", con("plan 1", "test 1 a", "begin 1 a"), running, 0);
    expect(s.cases[0]!.messages).toEqual(["the engine was still running at the time limit, at pc 0x4410 (spin+0x10)"]);
  });

  it("an image that prints no plan is a suite error, reported as one failing point", () => {
    const s = parseTestConsole("plain.elf", "hello from engine 0 of 1\n", exited(0), 0);
    expect(s.error).toBe('no tests: the image printed no "menic-test: plan" (does main return menic_test_run()?); engine exited with code 0');
    expect(toTap([s])).toBe(`TAP version 13\n1..1\nnot ok 1 - plain.elf\n  ---\n  message: ${JSON.stringify(s.error)}\n  ...\n`);
  });

  it("JUnit escapes what XML must not hold raw", () => {
    const s: FwTestSuite = { name: "a&b.elf", timePs: 2_500_000, cases: [{ name: "x<y", status: "fail", messages: ['said "no" & \'why\''] }] };
    expect(toJunit([s])).toBe([
      '<?xml version="1.0" encoding="UTF-8"?>',
      '<testsuites name="menic fw test" tests="1" failures="1" errors="0">',
      '  <testsuite name="a&amp;b.elf" tests="1" failures="1" errors="0" time="0.000002500">',
      '    <testcase classname="a&amp;b.elf" name="x&lt;y">',
      "      <failure message=\"said &quot;no&quot; &amp; &apos;why&apos;\">said &quot;no&quot; &amp; &apos;why&apos;</failure>",
      "    </testcase>",
      "  </testsuite>",
      "</testsuites>",
      "",
    ].join("\n"));
  });
});
