// The backtrace of a faulted engine (host/debug/backtrace.ts): a NULL function pointer called
// two functions deep, and a bad load three calls deep, in firmware built with frame pointers;
// and a corrupt frame chain, which the walk must end on without hanging.

import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildFirmware, findClang } from "../host/fw/build.js";
import { runFirmware } from "../host/fw/run.js";
import { backtrace, formatBacktrace, MAX_FRAMES } from "../host/debug/backtrace.js";
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

  it("lists a recursion's frames at one place as one line with their count, and says where the walk stopped", () => {
    const at = (pc: number) => ({ pc, symbol: "depth", offset: pc - 0x4438, file: "recurse.c", line: pc === 0x443c ? 13 : 15 });
    const deep = [at(0x443c), ...Array.from({ length: MAX_FRAMES - 1 }, () => at(0x4460))];
    expect(formatBacktrace(deep)).toBe(
      "  #0 0x443c (depth+0x4, recurse.c:13)\n" +
      `  #1-#${MAX_FRAMES - 1} 0x4460 (depth+0x28, recurse.c:15) (${MAX_FRAMES - 1} frames)\n` +
      `  (the walk stops at ${MAX_FRAMES} frames)`,
    );
    // two frames at one place stay two lines; a short chain says nothing of a stop
    expect(formatBacktrace([at(0x443c), at(0x4460), at(0x4460), { pc: 0x442c }])).toBe(
      "  #0 0x443c (depth+0x4, recurse.c:13)\n  #1 0x4460 (depth+0x28, recurse.c:15)\n  #2 0x4460 (depth+0x28, recurse.c:15)\n  #3 0x442c",
    );
  });
});
