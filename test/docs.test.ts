import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";

// The host API reference, docs/api/ (npm run docs: TypeDoc with typedoc-plugin-markdown, from
// host/index.ts and the TSDoc comments of what it exports; typedoc.json). Built again here
// with warnings as errors — an export without documentation, a broken {@link}, a type the
// reference names but does not document — and compared with the committed one.

const typedoc = join(dirname(createRequire(import.meta.url).resolve("typedoc/package.json")), "bin", "typedoc");
const out = mkdtempSync(join(tmpdir(), "menic-api-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

const files = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).map((d) => relative(dir, join(d.parentPath, d.name))).sort();

describe("the host API reference (docs/api/)", () => {
  let run: { status: number | null; stdout: string; stderr: string };
  beforeAll(() => {
    run = spawnSync(process.execPath, [typedoc, "--out", out, "--treatWarningsAsErrors", "--logLevel", "Warn"], { encoding: "utf8" });
  });

  it("builds without a warning: every export documented, every link resolved", () => {
    expect(run.stdout + run.stderr).toBe("");
    expect(run.status).toBe(0);
  });

  it("is what npm run docs writes now (regenerate: npm run docs)", () => {
    const want = files(out);
    expect(files("docs/api")).toEqual(want);
    for (const f of want) expect(readFileSync(join("docs/api", f), "utf8"), f).toBe(readFileSync(join(out, f), "utf8"));
  });

  it("covers the verbs buffers, the REDUCE request, access flags and the options", () => {
    const context = readFileSync(join(out, "classes/Context.md"), "utf8");
    for (const m of ["allocHbm", "allocHostMemory", "read", "write", "regMr", "postSend", "postRecv", "pollCq", "modifyQp"]) expect(context).toContain(`### ${m}()`);
    const sendWr = readFileSync(join(out, "interfaces/SendWr.md"), "utf8");
    const reduce = sendWr.slice(sendWr.indexOf("### reduce?"));
    for (const f of ["#### op", "#### dtype", "#### sources", "2 to 8", "LOCAL_WRITE"]) expect(reduce, f).toContain(f);
    expect(readFileSync(join(out, "type-aliases/AccessFlag.md"), "utf8")).toMatch(/`LOCAL_WRITE` lets the NIC write/);
    for (const o of ["PostSendOptions", "PostRecvOptions", "QpInit", "QpAttr", "DeviceOptions", "FwRunOptions", "RunOptions"]) expect(files(out)).toContain(`interfaces/${o}.md`);
  });
});
