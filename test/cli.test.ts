import { describe, it, expect } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const menic = (...args: string[]) => {
  const r = spawnSync("node", ["bin/menic.js", ...args], { encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};
const tmp = mkdtempSync(join(tmpdir(), "menic-cli-"));

describe("menic fw run", () => {
  it("runs hello on 16 engines and prints one JSON object with --json", () => {
    const r = menic("fw", "run", "firmware/examples/hello.elf", "--json");
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.engines).toHaveLength(16);
    out.engines.forEach((e: { id: number; console: string; state: string; exitCode: number }) => {
      expect(e.state).toBe("exited");
      expect(e.exitCode).toBe(0);
      expect(e.console).toBe(`hello from engine ${e.id} of 16\n`);
    });
  });

  it("prints console lines and a summary table without --json", () => {
    const r = menic("fw", "run", "firmware/examples/hello.elf", "--engines", "2");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("[e01] hello from engine 1 of 2\n");
    expect(r.stdout).toMatch(/engine\s+state\s+exit \/ fault \/ pc\s+instructions\s+cycles\s+asleep/);
    expect(r.stdout).toContain("2/2 engines exited 0");
  });

  it("exits non-zero and names the fault when an engine faults", () => {
    const r = menic("fw", "run", "firmware/examples/fault.elf", "--engines", "2", "--json");
    expect(r.status).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.engines[0]).toMatchObject({ state: "faulted", mcause: 5, mtval: 0x0f000000 });
    const text = menic("fw", "run", "firmware/examples/fault.elf", "--engines", "1");
    expect(text.stdout).toMatch(/faulted\s+load access fault at pc 0x[0-9a-f]+ \(main\+0x[0-9a-f]+\), mtval 0xf000000/);
  });

  it("stops at --until and exits non-zero while engines still run", () => {
    const r = menic("fw", "run", "firmware/examples/psum.elf", "--until", "2us", "--json");
    expect(r.status).toBe(1);
    const out = JSON.parse(r.stdout);
    expect(out.timePs).toBe(2_000_000);
    expect(out.engines.every((e: { state: string }) => e.state === "running")).toBe(true);
  });

  it("writes a Perfetto trace with one track per engine", () => {
    const file = join(tmp, "t.json");
    const r = menic("fw", "run", "firmware/examples/psum.elf", "--engines", "4", "--trace", file, "--json");
    expect(r.status).toBe(0);
    const t = JSON.parse(readFileSync(file, "utf8"));
    const names = t.traceEvents.filter((e: { name: string }) => e.name === "thread_name").map((e: { args: { name: string } }) => e.args.name);
    expect(names).toEqual(["engine 0", "engine 1", "engine 2", "engine 3"]);
    const exits = t.traceEvents.filter((e: { name: string; ph: string }) => e.ph === "i" && e.name === "exit 0");
    expect(exits).toHaveLength(4);
    const running = t.traceEvents.filter((e: { name: string; tid: number }) => e.name === "running" && e.tid === 0);
    const total = running.reduce((s: number, e: { dur: number }) => s + e.dur, 0);
    const out = JSON.parse(r.stdout);
    // engine 0 runs from 0 to its exit store, which is traced when it issues (before its 8
    // MMIO cycles): the spans cover the other cycles at 1.37 GHz, to the picosecond
    expect(total * 1e6).toBeCloseTo(((out.engines[0].cycles - 8) * 1e6) / 1370, -1);
  });

  it("rejects bad input with a clear message", () => {
    const notElf = join(tmp, "x.elf");
    writeFileSync(notElf, "hello");
    expect(menic("fw", "run", notElf)).toMatchObject({ status: 1, stderr: "menic: not an ELF file (bad magic)\n" });
    expect(menic("fw", "run", "firmware/examples/hello.elf", "--set", "engines=99").stderr).toBe(
      "menic: config.engines: must be in [1, 64], got 99\n");
    expect(menic("fw", "run", "firmware/examples/hello.elf", "--set", "bogus=1").stderr).toMatch(/^menic: config\.bogus: unknown field/);
    expect(menic("fw", "run", "firmware/examples/hello.elf", "--until", "soon").stderr).toMatch(/not a time: "soon"/);
    expect(menic("frobnicate").status).toBe(2);
  });
});
