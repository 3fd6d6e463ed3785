// `menic fw run --gdb` driven by the real client: Debian's gdb-multiarch in batch mode (CI
// installs it: .ci/run) debugging psum built with -g -O0 on 4 engines. Skipped, saying so, when
// gdb-multiarch is not installed.
import { describe, expect, it, beforeAll } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildFirmware } from "../host/fw/build.js";

const GDB = "gdb-multiarch";
const haveGdb = spawnSync(GDB, ["--version"]).status === 0;
if (!haveGdb) console.warn(`test/gdb-multiarch.test.ts: skipped: ${GDB} is not installed (apt-get install gdb-multiarch)`);

const ENGINES = 4;
const N = 16384; // psum.c's element count
/** The sum of i^2 over slice k of n, as psum.c's engines compute it. */
function sliceSum(k: number, n: number): bigint {
  let s = 0n;
  for (let i = Math.floor((N * k) / n); i < Math.floor((N * (k + 1)) / n); i++) s += BigInt(i) * BigInt(i);
  return s;
}
const TOTAL = (BigInt(N - 1) * BigInt(N) * BigInt(2 * N - 1)) / 6n;

let elf = "";

/** Starts `menic fw run elf --gdb 0 --json` on 4 engines; resolves the port it printed and its end. */
async function startStub(): Promise<{ port: number; end: Promise<{ code: number; out: string; err: string }> }> {
  const proc = spawn("node", ["bin/menic.js", "fw", "run", elf, "--engines", String(ENGINES), "--json", "--gdb", "0"], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  proc.stdout.on("data", (b) => (out += b));
  const end = new Promise<{ code: number; out: string; err: string }>((resolve) => proc.on("exit", (c) => resolve({ code: c ?? -1, out, err })));
  const port = await new Promise<number>((resolve, reject) => {
    proc.stderr.on("data", (b) => {
      err += b;
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(err);
      if (m) resolve(Number(m[1]));
    });
    void end.then(() => reject(new Error(`menic fw run --gdb ended before listening: ${err}`)));
  });
  return { port, end };
}

/** gdb-multiarch -batch with `commands` after connecting to `port`; its stdout and stderr together. */
function gdb(port: number, commands: string[]): Promise<string> {
  const args = ["-batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off", "-ex", `target remote :${port}`];
  for (const c of commands) args.push("-ex", c);
  args.push(elf);
  return new Promise((resolve) => {
    const p = spawn(GDB, args, { stdio: ["ignore", "pipe", "pipe"] });
    let text = "";
    p.stdout.on("data", (b) => (text += b));
    p.stderr.on("data", (b) => (text += b));
    p.on("exit", () => resolve(text));
  });
}

describe.skipIf(!haveGdb)("gdb-multiarch against menic fw run --gdb", () => {
  beforeAll(() => {
    elf = join(mkdtempSync(join(tmpdir(), "menic-gdb-")), "psum.elf");
    buildFirmware({ sources: ["firmware/examples/psum.c"], out: elf, optLevel: "0", debug: true });
  });

  it("breaks by name, reads registers and variables, steps, watches, switches engines, and the run ends as without gdb", async () => {
    const plain = spawnSync("node", ["bin/menic.js", "fw", "run", elf, "--engines", String(ENGINES), "--json"], { encoding: "utf8" });
    const want = JSON.parse(plain.stdout);
    const { port, end } = await startStub();
    const text = await gdb(port, [
      "info threads",
      "break add_total",
      "continue",
      "print v",
      "print/x $a0",
      "print $pc",
      "stepi",
      "print $pc",
      "next",
      "up",
      "print me",
      "print k",
      "watch total_lo",
      "continue",
      "delete",
      "thread 3",
      "print $mhartid",
      "info registers sp",
      "continue",
    ]);
    const r = await end;
    // the engines are threads, all at _start
    expect(text).toMatch(/\* 1 +Thread 1 \(engine 0 running\) +_start \(\)/);
    expect(text).toMatch(/ 4 +Thread 4 \(engine 3 running\)/);
    // the first engine to reach add_total: engine 3, which sums slice 0 (the smallest numbers)
    const v = sliceSum(0, ENGINES);
    expect(text).toContain(`Thread 4 hit Breakpoint 1, add_total (v=${v}) at ./firmware/examples/psum.c:54`);
    expect(text).toContain(`$1 = ${v}`);
    expect(text).toContain(`$2 = 0x${(v & 0xffffffffn).toString(16)}`); // v's low word, still in a0
    const pc = /\$3 = \(void \(\*\)\(\)\) 0x([0-9a-f]+) <add_total\+(\d+)>/.exec(text)!;
    expect(pc).not.toBeNull();
    expect(text).toContain(`$4 = (void (*)()) 0x${(parseInt(pc[1]!, 16) + 4).toString(16)} <add_total+${Number(pc[2]) + 4}>`); // stepi: one instruction
    expect(text).toMatch(/\n55\t  uint32_t old = __atomic_fetch_add\(&total_lo, lo, __ATOMIC_RELAXED\);/); // next: line 55
    expect(text).toMatch(/#1  0x[0-9a-f]+ in main \(\) at \.\/firmware\/examples\/psum\.c:76/);
    expect(text).toContain("$5 = 3"); // me: engine 3
    expect(text).toContain("$6 = 0"); // k: its slice
    // the watchpoint triggers on the amoadd of the engine it stopped in: total_lo was 0
    expect(text).toContain("Hardware watchpoint 2: total_lo");
    expect(text).toMatch(new RegExp(`Old value = 0\\s+New value = ${Number(v & 0xffffffffn)}`));
    expect(text).toContain("[Switching to thread 3 (Thread 3)]");
    expect(text).toContain("$7 = 2"); // engine 2's mhartid
    expect(text).toMatch(/sp +0x[0-9a-f]+/);
    expect(text).toContain("[Inferior 1 (Remote target) exited normally]");
    expect(text).not.toMatch(/internal-error|Remote connection closed|Cannot access memory/);
    // and the program computed exactly what it computes without a debugger
    expect(r.code).toBe(0);
    const { gdb: session, ...result } = JSON.parse(r.out);
    expect(session).toEqual({ end: "exited", errors: { badChecksum: 0, overlong: 0, garbage: 0, dropped: 0 } });
    expect(result).toEqual(want);
  });

  it("writes a variable and memory: the program computes with what was written", async () => {
    const { port, end } = await startStub();
    const text = await gdb(port, [
      "break add_total",
      "continue",
      "set var v = 1000",
      "print v",
      "set var *(unsigned int *)&total_hi = 7",
      "print total_hi",
      "x/2xw &total_hi",
      "delete",
      "continue",
    ]);
    const r = await end;
    expect(text).toContain("$1 = 1000");
    expect(text).toContain("$2 = 7");
    expect(text).toMatch(/0x80000000 <total_hi>:\s+0x00000007\s+0x00000000/);
    // engine 3 added 1000 instead of its slice's sum, and total_hi started at 7
    const total = TOTAL - sliceSum(0, ENGINES) + 1000n + (7n << 32n);
    expect(text).toContain("[Inferior 1 (Remote target) exited with code 01]");
    expect(r.code).toBe(1);
    const json = JSON.parse(r.out);
    expect(json.engines[0].console).toContain(`total ${total}, expected ${TOTAL}: WRONG`);
  });
});
