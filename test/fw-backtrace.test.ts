// The backtrace of a faulted engine (host/debug/backtrace.ts): a NULL function pointer called
// two functions deep, and a bad load three calls deep, in firmware built with frame pointers;
// and a corrupt frame chain, which the walk must end on without hanging.

import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildFirmware, findClang } from "../host/fw/build.js";
import { runFirmware } from "../host/fw/run.js";
import { backtrace, MAX_FRAMES } from "../host/debug/backtrace.js";
import { Symbolizer } from "../host/debug/symbolize.js";

const clang = findClang();
const withClang = (name: string, fn: () => Promise<void>) => (clang === null ? it.skip(`${name} [skipped: clang not found (apt-get install clang lld)]`, fn) : it(name, fn));
const tmp = mkdtempSync(join(tmpdir(), "menic-bt-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// `+ n` after each call keeps it a call (not a tail call), so every caller has a frame
const SOURCE = `#include <menic.h>
typedef int (*fn_t)(int);
volatile fn_t hook = 0;
__attribute__((noinline)) int inner(int x) { return hook(x) + 1; }
__attribute__((noinline)) int outer(int x) { return inner(x + 1) + 2; }
int *volatile bad = (int *)0x0f000000;
__attribute__((noinline)) int load3(int x) { return *bad + x; }
__attribute__((noinline)) int load2(int x) { return load3(x * 3) + 1; }
__attribute__((noinline)) int load1(int x) { return load2(x + 1) + 1; }
int main(void) { return (MODE == 0 ? outer(1) : load1(2)) + 3; }
`;

async function faultChain(mode: number): Promise<(string | undefined)[]> {
  const src = join(tmp, "bt.c");
  writeFileSync(src, SOURCE);
  const { elf } = buildFirmware({ sources: [src], out: join(tmp, `bt${mode}.elf`), debug: true, defines: { MODE: String(mode) }, extra: ["-fno-omit-frame-pointer"], cwd: tmp });
  const r = await runFirmware(elf, { config: { engines: 1 } });
  expect(r.engines[0]!.state).toBe("faulted");
  return r.engines[0]!.backtrace!.map((f) => f.symbol);
}

describe("the backtrace of a fault", () => {
  withClang("names the caller of a NULL function pointer (from ra) and the chain above it", async () => {
    expect(await faultChain(0)).toEqual([undefined, "inner", "outer", "main", "_start"]);
  });

  withClang("walks a bad load three calls deep", async () => {
    expect(await faultChain(1)).toEqual(["load3", "load2", "load1", "main", "_start"]);
  });

  it("ends on a corrupt chain: a loop, a frame outside SRAM, a chain deeper than the bound", () => {
    const mem = new Map<number, number>();
    const src = { pc: 0x5000, ra: 0, nullGuardBytes: 0x400, sramBytes: 0x20000, word: (a: number) => mem.get(a) ?? 0 };
    // fp pointing at itself: one frame read, then the chain does not go up
    mem.set(0x1000 - 4, 0x6004); mem.set(0x1000 - 8, 0x1000);
    expect(backtrace({ ...src, fp: 0x1000 }, Symbolizer.none).map((f) => f.pc)).toEqual([0x5000, 0x6000]);
    // a caller's fp outside SRAM is not read
    mem.set(0x1000 - 8, 0x7fffffff);
    expect(backtrace({ ...src, fp: 0x1000 }, Symbolizer.none).map((f) => f.pc)).toEqual([0x5000, 0x6000]);
    expect(backtrace({ ...src, fp: 0x30000 }, Symbolizer.none).map((f) => f.pc)).toEqual([0x5000]);
    // 200 well-formed frames: cut at MAX_FRAMES
    for (let k = 0; k < 200; k++) { mem.set(0x2000 + 16 * k - 4, 0x6004 + 4 * k); mem.set(0x2000 + 16 * k - 8, 0x2000 + 16 * (k + 1)); }
    expect(backtrace({ ...src, fp: 0x2000 }, Symbolizer.none).length).toBe(MAX_FRAMES);
  });
});
