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
    expect(menic("fw", "run", notElf)).toMatchObject({ status: 2, stderr: "menic: not an ELF file (bad magic)\n" });
    expect(menic("fw", "run", "firmware/examples/hello.elf", "--set", "engines=99").stderr).toBe(
      "menic: config.engines: must be in [1, 64], got 99\n");
    expect(menic("fw", "run", "firmware/examples/hello.elf", "--set", "bogus=1").stderr).toMatch(/^menic: config\.bogus: unknown field/);
    expect(menic("fw", "run", "firmware/examples/hello.elf", "--until", "soon").stderr).toMatch(/not a time: "soon"/);
    expect(menic("frobnicate").status).toBe(2);
  });
});

describe("menic: help, version, usage errors", () => {
  const commands = [[], ["fw"], ["run"], ["fw", "run"], ["fw", "build"], ["fw", "test"]];

  it("--help of every command exits 0 on stdout, stating each option's default", () => {
    for (const c of commands) {
      const r = menic(...c, "--help");
      expect(r.status, c.join(" ")).toBe(0);
      expect(r.stderr).toBe("");
      expect(r.stdout).toMatch(new RegExp(`^usage: menic ${c.length ? c.join(" ") + " " : ""}`));
      const options = r.stdout.split("\n").filter((l) => /^ {2}(-\w, |\s{4})--/.test(l));
      if (c.length === 0 || (c.length === 1 && c[0] === "fw")) expect(options).toEqual([]); // lists of commands
      else {
        expect(options.length).toBeGreaterThan(2);
        for (const l of options.filter((l) => !l.includes("--help"))) expect(l, `${c.join(" ")}: ${l}`).toMatch(/\[(default: .+|required)\]$/);
      }
    }
    expect(menic("fw", "run", "--help").stdout).toContain("--until <time>         simulated-time limit: the run stops at exactly this time [default: 1s]\n");
    expect(menic("help", "fw", "run").stdout).toBe(menic("fw", "run", "--help").stdout);
    expect(menic("-h").stdout).toBe(menic("--help").stdout);
  });

  it("--version prints the package's version", () => {
    const version = JSON.parse(readFileSync("package.json", "utf8")).version;
    expect(menic("--version")).toEqual({ status: 0, stdout: `menic ${version}\n`, stderr: "" });
  });

  it("exits 2 for every usage error, naming the option, with nothing on stdout", () => {
    const hint = (c: string) => `\n(menic ${c}--help says how to use it)\n`;
    const cases: [string[], string][] = [
      [["frobnicate"], "menic: unknown command: frobnicate (run or fw; menic --help lists them)" + hint("")],
      [["fw", "walk"], "menic: unknown command: fw walk (fw build, fw test or fw run)" + hint("fw ")],
      [["fw", "run", "firmware/examples/hello.elf", "--bogus"], "menic: unknown option --bogus" + hint("fw run ")],
      [["fw", "run", "firmware/examples/hello.elf", "-x"], "menic: unknown option -x" + hint("fw run ")],
      [["fw", "run", "firmware/examples/hello.elf", "--until"], "menic: --until needs a value <time>" + hint("fw run ")],
      [["fw", "run", "firmware/examples/hello.elf", "--until", "--json"], "menic: --until needs a value <time> (got --json; write --until=--json if that is the value)" + hint("fw run ")],
      [["fw", "run", "firmware/examples/hello.elf", "--until", "10"], "menic: --until 10: a time needs a unit: ps, ns, us, ms or s (e.g. 10ns)" + hint("fw run ")],
      [["fw", "run", "firmware/examples/hello.elf", "--until", "soon"], 'menic: --until soon: not a time: "soon" (use e.g. 10ms, 2.5us, 750ns, 1s)' + hint("fw run ")],
      [["fw", "run", "firmware/examples/hello.elf", "--engines", "abc"], "menic: --engines abc: not a whole number" + hint("fw run ")],
      [["fw", "run", "firmware/examples/hello.elf", "--engines", "65"], "menic: --engines 65: must be in [1, 64]" + hint("fw run ")],
      [["fw", "run", "firmware/examples/hello.elf", "--json=yes"], "menic: --json takes no value, got --json=yes" + hint("fw run ")],
      [["fw", "run", "firmware/examples/hello.elf", "--until", "1ms", "--until", "2ms"], "menic: --until given twice" + hint("fw run ")],
      [["fw", "run"], "menic: fw run needs exactly one ELF image" + hint("fw run ")],
      [["fw", "run", join(tmp, "missing.elf")], `menic: ${join(tmp, "missing.elf")}: ENOENT: no such file or directory, open '${join(tmp, "missing.elf")}'`],
      [["fw", "test", "firmware/tests/unit", "--until", "5"], "menic: --until 5: a time needs a unit: ps, ns, us, ms or s (e.g. 5ns)" + hint("fw test ")],
      [["fw", "build", "x.c"], "menic: fw build needs -o <out.elf>" + hint("fw build ")],
      [["run", "examples/scenarios/roce-pair.json", "--until", "20"], "menic: --until 20: a time needs a unit: ps, ns, us, ms or s (e.g. 20ns)" + hint("run ")],
      [["run", "examples/scenarios/roce-pair.json", "--trace-interval", "1us"], "menic: --trace-interval needs --trace" + hint("run ")],
    ];
    for (const [args, stderr] of cases) {
      const r = menic(...args);
      expect(r, args.join(" ")).toEqual({ status: 2, stdout: "", stderr: stderr.endsWith("\n") ? stderr : stderr + "\n" });
    }
    // no command at all: the help, on stderr
    expect(menic()).toMatchObject({ status: 2, stdout: "", stderr: menic("--help").stdout });
  });

  it("checks output paths before running: a missing directory, a directory", () => {
    const missing = join(tmp, "nope", "t.json");
    expect(menic("fw", "run", "firmware/examples/hello.elf", "--trace", missing)).toEqual({
      status: 2, stdout: "", stderr: `menic: --trace ${missing}: directory ${join(tmp, "nope")} does not exist\n(menic fw run --help says how to use it)\n` });
    expect(menic("fw", "test", "firmware/tests/unit", "--junit", tmp)).toEqual({
      status: 2, stdout: "", stderr: `menic: --junit ${tmp}: is a directory\n(menic fw test --help says how to use it)\n` });
    expect(menic("fw", "build", "x.c", "-o", join(tmp, "a", "b.elf")).stderr).toBe(
      `menic: -o ${join(tmp, "a", "b.elf")}: directory ${join(tmp, "a")} does not exist\n(menic fw build --help says how to use it)\n`);
  });
});

describe("menic --until", () => {
  it("fw run stops at exactly the time given, on or off the interleave grid", () => {
    for (const [until, ps] of [["10ns", 10_000], ["1234567ps", 1_234_567], ["2.5us", 2_500_000]] as const) {
      const out = JSON.parse(menic("fw", "run", "firmware/examples/psum.elf", "--until", until, "--json").stdout);
      expect(out.timePs, until).toBe(ps);
    }
  });

  it("run reaches the limit at the end of the runner's window, and says it rounded", () => {
    const j = JSON.parse(menic("run", "examples/scenarios/roce-pair.json", "--until", "10ns", "--json").stdout);
    expect([j.untilPs, j.endPs, j.ended]).toEqual([10_000, 200_000, "time-limit"]); // 200 ns windows (the interleave quantum)
    expect(menic("run", "examples/scenarios/roce-pair.json", "--until", "10ns").stdout.split("\n")[0]).toBe(
      "roce-pair (seed 1): ran out of time at 200.000 ns of simulated time (limit 10.000 ns, rounded up to the end of the runner's window)");
    expect(menic("run", "examples/scenarios/roce-pair.json", "--until", "400ns").stdout.split("\n")[0]).toBe(
      "roce-pair (seed 1): ran out of time at 400.000 ns of simulated time (limit 400.000 ns)");
  });
});
