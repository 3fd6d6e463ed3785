// npm run build's incremental steps (scripts/build-stamp.mjs), on a step of its own in a temp
// folder: it runs again when an input's content changes (a file of an input folder, one the tool
// said it read, a build script, a tool's version), when an output is gone or not the bytes it
// wrote, after a failure, and with --force; touching a file without changing it changes nothing.
import { describe, it, expect, beforeEach, afterAll } from "vitest";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync, existsSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
// @ts-expect-error: a plain ES module of the build scripts, no declarations
import { BuildStamp, filesUnder } from "../scripts/build-stamp.mjs";

interface Stamp {
  step(name: string, spec: { inputs: string[]; versions?: Record<string, string>; run: () => Promise<{ outputs: string[]; read?: string[] }> }): Promise<boolean>;
}

const top = mkdtempSync(join(tmpdir(), "menic-stamp-"));
afterAll(() => rmSync(top, { recursive: true, force: true }));
let root = "";
let n = 0;
const write = (path: string, text: string) => {
  mkdirSync(join(root, path, ".."), { recursive: true });
  writeFileSync(join(root, path), text);
};
const read = (path: string) => readFileSync(join(root, path), "utf8");

beforeEach(() => {
  root = join(top, `case-${n++}`);
  write("src/a.txt", "a");
  write("src/b.txt", "b");
  write("lib/dep.txt", "dep");
  write("scripts/build.mjs", "// v1");
});

let runs = 0;
/** The step under test: out/all.txt is src/'s files and lib/dep.txt (which it "reads" as esbuild would say). */
async function build(opts: { force?: boolean; tool?: string; fail?: boolean } = {}): Promise<boolean> {
  const stamp: Stamp = new BuildStamp(root, "build/stamp.json", { force: opts.force, common: ["scripts/build.mjs"], versions: { node: "v20" } });
  return stamp.step("concat", {
    inputs: ["src"],
    versions: { tool: opts.tool ?? "1.0" },
    run: async () => {
      runs++;
      if (opts.fail) throw new Error("the tool failed");
      write("out/all.txt", filesUnder(root, ["src", "lib/dep.txt"]).map(read).join(""));
      return { outputs: ["out"], read: ["lib/dep.txt"] };
    },
  });
}

describe("BuildStamp: a step runs only when it must", () => {
  it("runs the first time, then not while nothing changed", async () => {
    runs = 0;
    expect(await build()).toBe(true);
    expect(read("out/all.txt")).toBe("depab"); // lib/dep.txt, src/a.txt, src/b.txt
    expect(await build()).toBe(false);
    expect(await build()).toBe(false);
    expect(runs).toBe(1);
    expect(JSON.parse(read("build/stamp.json")).concat.read).toEqual(["lib/dep.txt"]);
  });

  it("does not run when a file is touched but not changed", async () => {
    await build();
    runs = 0;
    const later = new Date(Date.now() + 60_000);
    for (const f of ["src/a.txt", "lib/dep.txt", "scripts/build.mjs", "out/all.txt"]) utimesSync(join(root, f), later, later);
    expect(await build()).toBe(false);
    expect(runs).toBe(0);
  });

  it.each([
    ["a source's content changes", () => write("src/a.txt", "A")],
    ["a file is added to an input folder", () => write("src/c.txt", "c")],
    ["a file of an input folder is removed", () => rmSync(join(root, "src/b.txt"))],
    ["a file the tool read, outside the input folders, changes", () => write("lib/dep.txt", "DEP")],
    ["a file every step reads (the build script) changes", () => write("scripts/build.mjs", "// v2")],
    ["an output is deleted", () => rmSync(join(root, "out/all.txt"))],
    ["an output is not the bytes the step wrote", () => write("out/all.txt", "stale")],
  ])("runs again when %s", async (_what, change) => {
    await build();
    runs = 0;
    change();
    expect(await build()).toBe(true);
    expect(runs).toBe(1);
    expect(read("out/all.txt")).toBe(filesUnder(root, ["src", "lib/dep.txt"]).map(read).join(""));
    expect(await build()).toBe(false); // and is up to date again
    expect(runs).toBe(1);
  });

  it("runs again when a tool's version changes, and with force", async () => {
    await build();
    runs = 0;
    expect(await build({ tool: "1.1" })).toBe(true);
    expect(await build({ tool: "1.1", force: true })).toBe(true);
    expect(await build({ tool: "1.1" })).toBe(false);
    expect(runs).toBe(2);
  });

  it("runs again after a step that failed, even with the same inputs", async () => {
    await build();
    write("src/a.txt", "A");
    await expect(build({ fail: true })).rejects.toThrow("the tool failed");
    runs = 0;
    write("src/a.txt", "a"); // back to the inputs of the last success: the failure still counts
    expect(await build()).toBe(true);
    expect(runs).toBe(1);
  });

  it("builds everything without a record or with an unreadable one", async () => {
    await build();
    runs = 0;
    write("build/stamp.json", "{ not json");
    expect(await build()).toBe(true);
    rmSync(join(root, "build"), { recursive: true });
    expect(await build()).toBe(true);
    expect(runs).toBe(2);
    expect(existsSync(join(root, "build/stamp.json"))).toBe(true);
  });
});

describe("scripts/build.mjs", () => {
  it("refuses an unknown argument with exit 2", () => {
    const r = spawnSync(process.execPath, ["scripts/build.mjs", "--froce"], { encoding: "utf8" });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe("build: unknown argument --froce (--force: run every step)\n");
  });
});
