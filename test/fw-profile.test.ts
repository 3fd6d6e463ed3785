// The cycle profiler (config profile, assembly/engine/profile.ts, host/debug/profile.ts): a
// profiled run computes exactly what an unprofiled one does, and charges every cycle to the
// function whose instruction spent it; calls are counted and become Perfetto spans.
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { readFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runFirmware } from "../host/fw/run.js";
import { programElf, CODE_BASE } from "./helpers/rv.js";
import { Device } from "../host/device.js";
import { coreModule } from "../host/platform/node.js";
import { profileByFunction, formatProfile, PROFILE_ENTRY_BYTES } from "../host/debug/profile.js";
import { Symbolizer } from "../host/debug/symbolize.js";
import { toPerfetto, FUNCTION_TRACK } from "../host/trace/perfetto.js";

const psum = new Uint8Array(readFileSync("firmware/examples/psum.elf"));

describe("the cycle profile", () => {
  it("changes nothing the program computes: same console, instructions, cycles, time and stats", async () => {
    const plain = await runFirmware(psum, { config: { engines: 4 } });
    const prof = await runFirmware(psum, { config: { engines: 4 }, profile: true });
    expect(prof.engines).toEqual(plain.engines);
    expect(prof.timePs).toBe(plain.timePs);
    expect(prof.stats).toEqual(plain.stats);
  });

  it("charges every cycle and instruction to exactly one function, summing to the engines' counts", async () => {
    const r = await runFirmware(psum, { config: { engines: 4 }, profile: true });
    const cycles = r.engines.reduce((a, e) => a + e.cycles, 0), instructions = r.engines.reduce((a, e) => a + e.instructions, 0);
    // an engine's cycle count starts at its start time's cycle (0 here) and includes only executed cycles (no wfi)
    expect(r.profile!.reduce((a, p) => a + p.cycles, 0)).toBe(cycles);
    expect(r.profile!.reduce((a, p) => a + p.instructions, 0)).toBe(instructions);
    expect(r.profile![0]!.function).toBe("main");
    expect(r.profile!.find((p) => p.function === "printf")!.calls).toBe(1); // engine 0 prints once
    expect(r.profile!.reduce((a, p) => a + p.share, 0)).toBeCloseTo(1, 12);
  });

  it("counts each instruction class by the CPI table: a loop of known cost", async () => {
    // 100 x (addi, mul, bne taken) with cpiAlu 1, cpiMul 3, taken branch 3; the last bne falls through (1)
    const src = "li t0, 100\nli t1, 1\nloop:\naddi t0, t0, -1\nmul t1, t1, t1\nbne t0, zero, loop\nli t2, 0x10000004\nsw zero, 0(t2)";
    const dev = await Device.create(coreModule(), { engines: 1, profile: 1 });
    dev.start(dev.loadElf(programElf(src)).entry);
    dev.run(1_000_000_000n);
    const t = dev.profileTable(0)!;
    const dv = new DataView(t.buffer);
    const at = (pc: number) => ({ cycles: Number(dv.getBigUint64(((pc - 0) / 4) * PROFILE_ENTRY_BYTES, true)), n: dv.getUint32(((pc - 0) / 4) * PROFILE_ENTRY_BYTES + 8, true) });
    const loop = CODE_BASE + 16; // after two li (two words each)
    expect(at(loop)).toEqual({ cycles: 100, n: 100 });
    expect(at(loop + 4)).toEqual({ cycles: 300, n: 100 });
    expect(at(loop + 8)).toEqual({ cycles: 99 * 3 + 1, n: 100 });
  });

  it("a device without profile has no table", async () => {
    const dev = await Device.create(coreModule(), { engines: 1 });
    expect(dev.profileTable(0)).toBeNull();
  });

  it("prints the table and writes nested function spans into the Perfetto trace", () => {
    const dir = mkdtempSync(join(tmpdir(), "menic-prof-"));
    const trace = join(dir, "t.json");
    const r = spawnSync("node", ["bin/menic.js", "fw", "run", "firmware/examples/psum.elf", "--engines", "2", "--profile", "--trace", trace], { encoding: "utf8" });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/profile: self cycles per function, all engines\nfunction\s+cycles\s+share\s+instructions\s+calls\s+CPI\nmain\s+\d+\s+\d+\.\d%/);
    const ev = JSON.parse(readFileSync(trace, "utf8")).traceEvents as { name: string; ph: string; tid: number; ts: number }[];
    const fns = ev.filter((e) => e.tid === FUNCTION_TRACK && (e.ph === "B" || e.ph === "E"));
    // begins and ends balance and never go below zero: properly nested
    let depth = 0;
    for (const e of fns) { depth += e.ph === "B" ? 1 : -1; expect(depth).toBeGreaterThanOrEqual(0); }
    expect(depth).toBe(0);
    expect(fns.filter((e) => e.ph === "B").map((e) => e.name).slice(0, 3)).toEqual(["_start", "main", expect.any(String)]);
    expect(fns.some((e) => e.name === "printf")).toBe(true);
  });

  it("folds by symbol: code outside every function is listed by address", () => {
    const t = new Uint8Array(PROFILE_ENTRY_BYTES * 4);
    const dv = new DataView(t.buffer);
    dv.setBigUint64(PROFILE_ENTRY_BYTES * 2, 30n, true); dv.setUint32(PROFILE_ENTRY_BYTES * 2 + 8, 10, true);
    dv.setBigUint64(PROFILE_ENTRY_BYTES * 3, 10n, true); dv.setUint32(PROFILE_ENTRY_BYTES * 3 + 8, 5, true);
    const rows = profileByFunction([t, t], Symbolizer.none);
    expect(rows).toEqual([
      { function: "0x8", cycles: 60, instructions: 20, calls: 0, share: 0.75 },
      { function: "0xc", cycles: 20, instructions: 10, calls: 0, share: 0.25 },
    ]);
    expect(formatProfile(rows)).toBe("function  cycles  share  instructions  calls   CPI\n0x8           60  75.0%            20      0  3.00\n0xc           20  25.0%            10      0  2.00\n");
    expect(toPerfetto([], 1, 0n, () => "x").traceEvents.filter((e) => e.tid === FUNCTION_TRACK)).toHaveLength(1); // its name only
  });
});
