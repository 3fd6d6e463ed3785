// Test results as CI reads them: suites of cases, each passed, failed, in error or skipped (a case
// the target cannot be given, and why), written as
// TAP version 13 or as JUnit XML. `menic fw test` (host/fw/test.ts) and `menic conform`
// (host/conform/) report through it.

export type TestStatus = "pass" | "fail" | "error" | "skip";

export interface TestCase {
  name: string;
  status: TestStatus;
  /** Why it did not pass: assertion failures (`file:line: message`), what ended the run (fault, exit, time limit), a conformance step's mismatch; why it was skipped. */
  messages: string[];
}

export interface TestSuite {
  /** What was tested: a test image's path as given, a conformance suite's transport. */
  name: string;
  cases: TestCase[];
  /** Simulated time of the whole run, ps. */
  timePs: number;
  /** A problem with the run itself (no plan printed, a fault outside a test, a target that could not be reached), if any. */
  error?: string;
}

/** Whether a suite did not pass: a case failed or in error, or the run itself (a skipped case is neither). */
export const failed = (s: TestSuite) => s.error !== undefined || s.cases.some((c) => c.status === "fail" || c.status === "error");

const yamlString = (s: string) => JSON.stringify(s); // a JSON string is a YAML double-quoted scalar

/** TAP version 13 (testanything.org): one test point per case, failures with a YAML block, a skipped case `ok ... # SKIP why`. */
export function toTap(suites: readonly TestSuite[]): string {
  const points: string[] = [];
  let n = 0;
  for (const s of suites) {
    if (s.error !== undefined) {
      points.push(`not ok ${++n} - ${s.name}`, "  ---", `  message: ${yamlString(s.error)}`, "  ...");
    }
    for (const c of s.cases) {
      if (c.status === "skip") {
        points.push(`ok ${++n} - ${s.name}: ${c.name} # SKIP ${(c.messages[0] ?? "").replace(/[\r\n]+/g, " ")}`);
        continue;
      }
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

/** JUnit XML as CI servers read it (testsuites > testsuite > testcase, failure, error and skipped elements). */
export function toJunit(suites: readonly TestSuite[], title = "menic fw test"): string {
  const out = ['<?xml version="1.0" encoding="UTF-8"?>'];
  const count = (s: TestSuite, st: TestStatus) => s.cases.filter((c) => c.status === st).length;
  const all = suites.reduce((a, s) => a + s.cases.length + (s.error ? 1 : 0), 0);
  const failures = suites.reduce((a, s) => a + count(s, "fail"), 0);
  const errors = suites.reduce((a, s) => a + count(s, "error") + (s.error ? 1 : 0), 0);
  const skipped = suites.reduce((a, s) => a + count(s, "skip"), 0);
  // skipped="n" only where a case was skipped: JUnit's readers take its absence as 0
  const skips = (n: number) => (n ? ` skipped="${n}"` : "");
  out.push(`<testsuites name="${xml(title)}" tests="${all}" failures="${failures}" errors="${errors}"${skips(skipped)}>`);
  for (const s of suites) {
    const seconds = (s.timePs / 1e12).toFixed(9);
    out.push(`  <testsuite name="${xml(s.name)}" tests="${s.cases.length + (s.error ? 1 : 0)}" failures="${count(s, "fail")}" errors="${count(s, "error") + (s.error ? 1 : 0)}"${skips(count(s, "skip"))} time="${seconds}">`);
    if (s.error !== undefined) out.push(`    <testcase classname="${xml(s.name)}" name="(run)">`, `      <error message="${xml(s.error)}"/>`, "    </testcase>");
    for (const c of s.cases) {
      const head = `    <testcase classname="${xml(s.name)}" name="${xml(c.name)}"`;
      if (c.status === "pass") { out.push(`${head}/>`); continue; }
      if (c.status === "skip") { out.push(`${head}>`, `      <skipped message="${xml(c.messages[0] ?? "")}"/>`, "    </testcase>"); continue; }
      const tag = c.status === "fail" ? "failure" : "error";
      out.push(`${head}>`, `      <${tag} message="${xml(c.messages[0] ?? c.status)}">${xml(c.messages.join("\n"))}</${tag}>`, "    </testcase>");
    }
    out.push("  </testsuite>");
  }
  out.push("</testsuites>", "");
  return out.join("\n");
}
