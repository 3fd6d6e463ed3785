// The core's memory stops a page short of 4 GiB (asconfig.json maximumMemory: 65,535 pages).
// AssemblyScript's stub allocator computes its memory's end as pages << 16 in 32 bits: at
// 65,536 pages that is 0, so every allocation after the memory reached 4 GiB asked to grow,
// could not, and trapped ("unreachable"). A 64-device cluster whose heap doubled onto exactly
// 4 GiB (examples/scenarios/allreduce-64.json, after a change that moved the heap by kilobytes)
// stopped at its next allocation. Growing costs no resident memory: the pages are never touched.

import { describe, it, expect } from "vitest";
import { instantiateCore } from "../host/wasm.js";
import { coreModule } from "../host/platform/node.js";

const PAGE = 65536;

describe("the core's memory", () => {
  it("grows to 65,535 pages and no further, and still allocates there", async () => {
    const core = await instantiateCore(coreModule());
    const pages = core.memory.buffer.byteLength / PAGE;
    expect(() => core.memory.grow(65536 - pages)).toThrow(RangeError);
    core.memory.grow(65535 - pages);
    expect(core.memory.buffer.byteLength).toBe(65535 * PAGE);
    // the allocator hands out a block where it was, below the top, rather than trapping
    const a = core.scratchAlloc(4096) >>> 0, b = core.scratchAlloc(4096) >>> 0;
    expect(b - a).toBeGreaterThanOrEqual(4096);
    expect(b + 4096).toBeLessThanOrEqual(65535 * PAGE);
  });
});
