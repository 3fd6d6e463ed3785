// `menic fw test`: runs firmware unit tests written with the SDK's menic/test.h and reports
// them as TAP (version 13) or JUnit XML for CI. The firmware prints one line per event
// (`menic-test: plan|test|begin|fail|end|done ...`, firmware/include/menic/test.h); this module
// reads those lines from engine 0's console and, when the engine faulted or stopped early,
// says which test it was in and where (symbolised, host/debug/).

import { runFirmware, type FwRunOptions, type FwEngineResult } from "./run.js";
import { formatLocation } from "../debug/symbolize.js";
import { failed, toTap, toJunit, type TestSuite, type TestCase } from "../test-report.js";

/** A test image's run as a suite of test results (host/test-report.ts writes it as TAP or JUnit). */
export type FwTestSuite = TestSuite;
export type FwTestCase = TestCase;

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

export { failed, toTap, toJunit };
