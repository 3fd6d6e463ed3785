// The JIT's compiled modules, shared by content across core instances (host/jit-modules.ts):
// the same bytes give the module compiled before, other bytes their own; the cache is bounded;
// and a second device running the same firmware compiles nothing new, with the same results.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { Device } from "../host/device.js";
import { coreModule } from "../host/platform/node.js";
import { jitModule, jitModulesKept, jitModulesCompiled, JIT_MODULES_KEPT } from "../host/jit-modules.js";

/** A module exporting f() = k: every k has bytes of the same length, differing in the constant. */
function constModule(k: number): Uint8Array<ArrayBuffer> {
  const sleb = [0x80 | (k & 0x7f), 0x80 | ((k >> 7) & 0x7f), 0x80 | ((k >> 14) & 0x7f), 0x80 | ((k >> 21) & 0x7f), (k >> 28) & 0x07]; // 5-byte LEB128 (k < 2^31)
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    1, 5, 1, 0x60, 0, 1, 0x7f, // type () -> i32
    3, 2, 1, 0, // function 0 of type 0
    7, 5, 1, 1, 0x66, 0, 0, // export "f"
    10, 10, 1, 8, 0, 0x41, ...sleb, 0x0b, // body: i32.const k
  ]);
}

const f = (m: WebAssembly.Module) => (new WebAssembly.Instance(m).exports.f as () => number)();

describe("the JIT's compiled modules are shared by their bytes", () => {
  it("the same bytes give the module compiled before; other bytes of the same length their own", () => {
    const a = jitModule(constModule(1_000_001)), b = jitModule(constModule(1_000_002));
    expect(f(a)).toBe(1_000_001);
    expect(f(b)).toBe(1_000_002);
    expect(jitModule(constModule(1_000_001))).toBe(a);
    expect(jitModule(constModule(1_000_002))).toBe(b);
  });

  it("keeps at most JIT_MODULES_KEPT: the least recently used goes first", () => {
    const first = jitModule(constModule(2_000_000)), used = jitModule(constModule(2_000_001));
    for (let k = 2; k < JIT_MODULES_KEPT + 8; k++) {
      jitModule(constModule(2_000_000 + k));
      if (k % 64 === 0) expect(jitModule(constModule(2_000_001))).toBe(used); // used now and then: kept
    }
    expect(jitModulesKept()).toBe(JIT_MODULES_KEPT);
    expect(jitModule(constModule(2_000_001))).toBe(used);
    const again = jitModule(constModule(2_000_000)); // dropped: compiled again
    expect(again).not.toBe(first);
    expect(f(again)).toBe(2_000_000);
  });

  it("a second device running the same firmware compiles nothing new and ends alike", async () => {
    const elf = new Uint8Array(readFileSync(new URL("../firmware/bench/compute.elf", import.meta.url)));
    const run = async () => {
      const dev = await Device.create(coreModule(), { engines: 4, jit: 1, jitBlocks: 64 }); // (a configuration no other test uses)
      dev.start(dev.loadElf(elf).entry);
      for (let e = 0; e < 4; e++) dev.mailboxPush(e, 10);
      dev.run(10_000_000_000n);
      return { answers: [0, 1, 2, 3].map((e) => dev.mailboxPop(e)), engines: [0, 1, 2, 3].map((e) => dev.engine(e)), stats: dev.jitStats() };
    };
    const before = jitModulesCompiled();
    const a = await run();
    const afterFirst = jitModulesCompiled();
    const b = await run();
    expect(a.stats.translated).toBeGreaterThan(0);
    expect(afterFirst - before).toBe(a.stats.translated);
    expect(jitModulesCompiled()).toBe(afterFirst); // every translation of the second device found compiled
    expect(b.stats.translated).toBe(a.stats.translated);
    expect({ answers: b.answers, engines: b.engines }).toEqual({ answers: a.answers, engines: a.engines });
  });
});
