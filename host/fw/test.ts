// `menic fw test`: runs firmware unit tests written with the SDK's menic/test.h and reports
// them as TAP (version 13) or JUnit XML for CI. The firmware prints one line per event
// (`menic-test: plan|test|begin|fail|end|done ...`, firmware/include/menic/test.h); this module
// reads those lines from engine 0's console and, when the engine faulted or stopped early,
// says which test it was in and where (symbolised, host/debug/).

import { runFirmware, type FwRunOptions, type FwEngineResult } from "./run.js";
import { formatLocation } from "../debug/symbolize.js";

export type TestStatus = "pass" | "fail" | "error";

export interface FwTestCase {
  name: string;
  status: TestStatus;
  /** Assertion failures (`file:line: message`), or what ended the run (fault, exit, time limit). */
  messages: string[];
}

export interface FwTestSuite {
  /** The image's name (its path as given). */
  name: string;
  cases: FwTestCase[];
  /** Simulated time of the whole run, ps. */
  timePs: number;
  /** A problem with the run itself (no plan printed, a fault outside a test), if any. */
  error?: string;
}

const PREFIX = "menic-test: ";

/** Reads the console protocol of one run; `engine` says how the run ended. */
export function parseTestConsole(name: string, consoleText: string, engine: FwEngineResult, timePs: number): FwTestSuite {
  const cases: FwTestCase[] = [];
  let running: FwTestCase | null = null;
  let done = false, planned = -1;
  for (const raw of consoleText.split("\n")) {
    if (!raw.startsWith(PREFIX)) continue;
    const line = raw.slice(PREFIX.length);
    const m = /^(plan|test|begin|fail|end|done) (\d+)(?: (.*))?$/.exec(line);
    if (!m) continue;
    const [, what, num, rest = ""] = m;
    const i = Number(num) - 1;
    switch (what) {
      case "plan": planned = i + 1; break;
      case "test": cases[i] = { name: rest, status: "error", messages: [] }; break;
      case "begin": running = cases[i] ?? (cases[i] = { name: rest, status: "error", messages: [] }); break;
      case "fail": cases[i]?.messages.push(rest); break;
      case "end": if (cases[i]) cases[i]!.status = rest === "pass" ? "pass" : "fail"; running = null; break;
      case "done": done = true; break;
    }
  }
  const suite: FwTestSuite = { name, cases: cases.filter(Boolean), timePs };
  if (planned < 0) {
    suite.error = `no tests: the image printed no "menic-test: plan" (does main return menic_test_run()?); engine ${describeEnd(engine)}`;
    return suite;
  }
  if (!done) {
    const why = describeEnd(engine);
    if (running) running.messages.push(`the engine ${why}`);
    else suite.error = `the engine ${why} outside a test`;
    for (const c of suite.cases) if (c !== running && c.status === "error" && c.messages.length === 0) c.messages.push(`not run: the engine ${why}${running ? ` in ${running.name}` : ""}`);
  }
  return suite;
}

function describeEnd(e: FwEngineResult): string {
  if (e.state === "faulted") return `faulted: ${e.fault} at pc ${formatLocation(e.where!)}`;
  if (e.state === "exited") return `exited with code ${e.exitCode}`;
  return `was still ${e.state} at the time limit${e.where ? `, at pc ${formatLocation(e.where)}` : ""}`;
}

/** Runs one test image on engine 0 of a one-engine device (unless the config says otherwise). */
export async function runFirmwareTests(name: string, elf: Uint8Array, opts: FwRunOptions = {}): Promise<FwTestSuite> {
  const r = await runFirmware(elf, { ...opts, config: { engines: 1, ...opts.config } });
  const e = r.engines[0]!;
  return parseTestConsole(name, e.console, e, r.timePs);
}

export const failed = (s: FwTestSuite) => s.error !== undefined || s.cases.some((c) => c.status !== "pass");

const yamlString = (s: string) => JSON.stringify(s); // a JSON string is a YAML double-quoted scalar

/** TAP version 13 (testanything.org): one test point per case, failures with a YAML block. */
export function toTap(suites: readonly FwTestSuite[]): string {
  const points: string[] = [];
  let n = 0;
  for (const s of suites) {
    if (s.error !== undefined) {
      points.push(`not ok ${++n} - ${s.name}`, "  ---", `  message: ${yamlString(s.error)}`, "  ...");
    }
    for (const c of s.cases) {
      points.push(`${c.status === "pass" ? "ok" : "not ok"} ${++n} - ${s.name}: ${c.name}`);
      if (c.status !== "pass") {
        points.push("  ---", `  severity: ${c.status === "fail" ? "fail" : "error"}`, "  messages:");
        for (const m of c.messages) points.push(`    - ${yamlString(m)}`);
        points.push("  ...");
      }
    }
  }
  return ["TAP version 13", `1..${n}`, ...points, ""].join("\n");
}

const xml = (s: string) => s.replace(/[<>&"']/g, (ch) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&apos;" })[ch]!);

/** JUnit XML as CI servers read it (testsuites > testsuite > testcase, failure and error elements). */
export function toJunit(suites: readonly FwTestSuite[]): string {
  const out = ['<?xml version="1.0" encoding="UTF-8"?>'];
  const count = (s: FwTestSuite, st: TestStatus) => s.cases.filter((c) => c.status === st).length;
  const all = suites.reduce((a, s) => a + s.cases.length + (s.error ? 1 : 0), 0);
  const failures = suites.reduce((a, s) => a + count(s, "fail"), 0);
  const errors = suites.reduce((a, s) => a + count(s, "error") + (s.error ? 1 : 0), 0);
  out.push(`<testsuites name="menic fw test" tests="${all}" failures="${failures}" errors="${errors}">`);
  for (const s of suites) {
    const seconds = (s.timePs / 1e12).toFixed(9);
    out.push(`  <testsuite name="${xml(s.name)}" tests="${s.cases.length + (s.error ? 1 : 0)}" failures="${count(s, "fail")}" errors="${count(s, "error") + (s.error ? 1 : 0)}" time="${seconds}">`);
    if (s.error !== undefined) out.push(`    <testcase classname="${xml(s.name)}" name="(run)">`, `      <error message="${xml(s.error)}"/>`, "    </testcase>");
    for (const c of s.cases) {
      const head = `    <testcase classname="${xml(s.name)}" name="${xml(c.name)}"`;
      if (c.status === "pass") { out.push(`${head}/>`); continue; }
      const tag = c.status === "fail" ? "failure" : "error";
      out.push(`${head}>`, `      <${tag} message="${xml(c.messages[0] ?? c.status)}">${xml(c.messages.join("\n"))}</${tag}>`, "    </testcase>");
    }
    out.push("  </testsuite>");
  }
  out.push("</testsuites>", "");
  return out.join("\n");
}
