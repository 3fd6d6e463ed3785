// ISA conformance: runs firmware/tests/isa/isa.elf (RV32IMA + Zicsr, every trap cause, the
// timer interrupt, counters, atomics across engines) and checks that every engine passed
// every case of the program. The contract the program tests is docs/engine.md; see
// firmware/tests/isa/README.md for what each case number covers.
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { checkImage, parseElf } from "../host/elf.js";
import { findClang } from "../host/fw/build.js";

const ISA_DIR = fileURLToPath(new URL("../firmware/tests/isa/", import.meta.url));
const ELF_PATH = join(ISA_DIR, "isa.elf");

/** Cases in isa.elf. Kept here as well as in the ELF so that a program that lost cases
 * (a macro that stopped emitting, a group no longer called) fails; update it together
 * with the program. */
const EXPECTED_CASES = 584;
/** Synchronous traps and timer interrupts each engine takes when all cases pass. */
const SYNC_TRAPS_PER_ENGINE = 85;
const INTERRUPTS_PER_ENGINE = 3;
/** Simulated time budget: the program needs about 1.1 ms on 16 engines, 2.5 ms on 64. */
const UNTIL_PS = 20e9;
/** Engine clock period at the default engineClockKhz (docs/memory-map.md), in ps. */
const CYCLE_PS = 1e9 / 1_370_000;
/** The committed isa.elf was built by build.sh with this compiler. */
const CLANG_MAJOR = 14;

const clang = findClang();
const clangMajor = clang === null ? null : Number(/clang version (\d+)\./.exec(spawnSync(clang, ["--version"], { encoding: "utf8" }).stdout ?? "")?.[1]);
const NO_REBUILD =
  clang === null
    ? "skipped: clang not found (apt-get install clang lld)"
    : clangMajor !== CLANG_MAJOR
      ? `skipped: isa.elf was built with clang ${CLANG_MAJOR}, this is clang ${clangMajor}`
      : null;

type RunFirmware = typeof import("../host/fw/run.js").runFirmware;
type RunResult = Awaited<ReturnType<RunFirmware>>;
type EngineResult = RunResult["engines"][number];
type RunConfig = { engines: number; interleaveQuantumPs?: number; nullGuardBytes: number };

/** Device configurations the program runs on: the default 16 engines, the degenerate single
 * engine, the largest device (two words of engine bits in case 2104), and an odd count (an
 * engine without LR/SC partner) with a very fine interleaving. Default config otherwise:
 * the program checks the default CPI table. */
const RUNS: { name: string; config: RunConfig }[] = [
  // the program keeps its handler state at 0 (firmware/tests/isa/link.ld): no NULL guard
  { name: "16 engines", config: { engines: 16, nullGuardBytes: 0 } },
  { name: "1 engine", config: { engines: 1, nullGuardBytes: 0 } },
  { name: "64 engines", config: { engines: 64, nullGuardBytes: 0 } },
  { name: "7 engines, 1 ns interleave quantum", config: { engines: 7, interleaveQuantumPs: 1000, nullGuardBytes: 0 } },
];

async function runIsa(config: RunConfig): Promise<RunResult> {
  // Imported here rather than at the top so that the ELF checks below run on their own.
  const { runFirmware } = await import("../host/fw/run.js");
  return runFirmware(new Uint8Array(readFileSync(ELF_PATH)), { config, untilPs: UNTIL_PS });
}

/** The words of the ELF32 section `name` (little endian), or null. */
function elfSectionWords(elf: Uint8Array, name: string): number[] | null {
  const v = new DataView(elf.buffer, elf.byteOffset, elf.byteLength);
  const shoff = v.getUint32(0x20, true);
  const shentsize = v.getUint16(0x2e, true);
  const shnum = v.getUint16(0x30, true);
  const shstrndx = v.getUint16(0x32, true);
  const strOff = v.getUint32(shoff + shstrndx * shentsize + 0x10, true);
  for (let i = 0; i < shnum; i++) {
    const sh = shoff + i * shentsize;
    let p = strOff + v.getUint32(sh, true);
    let s = "";
    while (elf[p] !== 0) s += String.fromCharCode(elf[p++]);
    if (s !== name) continue;
    const off = v.getUint32(sh + 0x10, true);
    const size = v.getUint32(sh + 0x14, true);
    const words: number[] = [];
    for (let o = 0; o < size; o += 4) words.push(v.getUint32(off + o, true));
    return words;
  }
  return null;
}

function caseNumbers(): number[] {
  const words = elfSectionWords(new Uint8Array(readFileSync(ELF_PATH)), ".isa_cases");
  if (words === null) throw new Error("isa.elf has no .isa_cases section");
  return words;
}

/** Everything wrong with one engine's run, as readable lines (empty when it passed). */
function engineProblems(e: EngineResult, engines: number, cases: number[]): string[] {
  const problems: string[] = [];
  const tag = `engine ${e.id}:`;
  if (e.state !== "exited" || e.exitCode !== 0) {
    problems.push(
      `${tag} state ${e.state}, exit code ${e.exitCode}, pc 0x${e.pc.toString(16)}, ` +
        `mcause ${e.mcause}, mtval ${e.mtval === null ? null : "0x" + e.mtval.toString(16)}`,
    );
  }
  const lines = e.console.split("\n").filter((l) => l.length > 0);
  if (lines[0] !== `isa: engine ${e.id} of ${engines}`) problems.push(`${tag} first line ${JSON.stringify(lines[0])}`);
  if (lines[1] !== `isa: cases ${cases.length}`) problems.push(`${tag} second line ${JSON.stringify(lines[1])}`);
  const ok = new Map<number, number>();
  for (const line of lines) {
    if (line.startsWith("FAIL") || line.startsWith("isa: PANIC") || line.startsWith("isa: unexpected")) {
      problems.push(`${tag} ${line}`);
    }
    const m = /^ok (\d+)$/.exec(line);
    if (m) ok.set(Number(m[1]), (ok.get(Number(m[1])) ?? 0) + 1);
  }
  const missing = cases.filter((n) => !ok.has(n));
  if (missing.length > 0) problems.push(`${tag} no "ok" for cases ${missing.join(" ")}`);
  const known = new Set(cases);
  const extra = [...ok.keys()].filter((n) => !known.has(n));
  if (extra.length > 0) problems.push(`${tag} "ok" for unknown cases ${extra.join(" ")}`);
  const twice = [...ok.entries()].filter(([, c]) => c > 1).map(([n]) => n);
  if (twice.length > 0) problems.push(`${tag} "ok" more than once for cases ${twice.join(" ")}`);
  const summary = `isa: ${cases.length}/${cases.length} passed`;
  if (lines[lines.length - 1] !== summary) {
    problems.push(`${tag} last line ${JSON.stringify(lines[lines.length - 1])}, want ${JSON.stringify(summary)}`);
  }
  return problems;
}

describe("isa.elf", () => {
  it("lists each case number once in .isa_cases", () => {
    const cases = caseNumbers();
    expect(cases.length).toBe(EXPECTED_CASES);
    expect(new Set(cases).size).toBe(cases.length);
  });

  it("is an RV32 image the loader accepts: code and data in SRAM, shared words in HBM", () => {
    const img = parseElf(new Uint8Array(readFileSync(ELF_PATH)));
    expect(() => checkImage(img, 128 * 1024, 16 << 20)).not.toThrow();
    expect(img.segments.map((seg) => seg.vaddr)).toEqual([0, 0x80000000]);
  });

  const rebuild = "is what build.sh builds, byte for byte";
  (NO_REBUILD === null ? it : it.skip)(NO_REBUILD === null ? rebuild : `${rebuild} [${NO_REBUILD}]`, () => {
    const dir = mkdtempSync(join(tmpdir(), "menic-isa-"));
    try {
      const out = join(dir, "isa.elf");
      const build = spawnSync("sh", [join(ISA_DIR, "build.sh"), out], { encoding: "utf8", env: { ...process.env, CLANG: clang ?? "clang" } });
      expect(build.stderr + build.stdout).toBe("");
      expect(build.status).toBe(0);
      expect(Buffer.compare(readFileSync(out), readFileSync(ELF_PATH)), "isa.elf differs from a fresh build: run firmware/tests/isa/build.sh").toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.each(RUNS)("isa.elf on $name", ({ config }) => {
  const engines = config.engines;
  let result: RunResult | undefined;
  const run = async (): Promise<RunResult> => (result ??= await runIsa(config));

  it("passes every case on every engine", async () => {
    const r = await run();
    const cases = caseNumbers();
    expect(r.engines.map((e) => e.id)).toEqual([...Array(engines).keys()]);
    expect(r.engines.flatMap((e) => engineProblems(e, engines, cases))).toEqual([]);
    expect(r.ok).toBe(true);
  });

  it("counts the traps, interrupts and sleeps of the program", async () => {
    const r = await run();
    expect(r.stats["engine.faults"]).toBe(0);
    expect(r.stats["engine.traps"]).toBe(SYNC_TRAPS_PER_ENGINE * engines);
    expect(r.stats["engine.interrupts"]).toBe(INTERRUPTS_PER_ENGINE * engines);
    // SC failures: at least cases 1202 and 1203 (twice) on each engine
    expect(r.stats["amo.sc_fail"]).toBeGreaterThanOrEqual(3 * engines);
    // 2120 breaks one reservation per pair of engines
    expect(r.stats["amo.resv_broken"]).toBeGreaterThanOrEqual(Math.floor(engines / 2));
    // cases 2003, 2004 and 2005 each sleep in wfi for nearly TIMER_DELTA = 2000 cycles
    for (const e of r.engines) {
      expect(e.sleepPs, `engine ${e.id}`).toBeGreaterThanOrEqual(3 * 1500 * CYCLE_PS);
    }
  });
});
