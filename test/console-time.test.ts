// Console lines carry the simulated time their first byte was printed (the core keeps a ring
// of line times beside each console ring: assembly/engine/console.ts), and can be printed in
// time order across engines (`menic fw run --console merged`; DeviceOptions.consoleOrder).
import { describe, it, expect } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Device } from "../host/device.js";
import { coreModule } from "../host/platform/node.js";
import { programElf } from "./helpers/rv.js";

const CONSOLE = 0x10000000, EXIT = 0x10000004, FLAG = 0x80000000;
const print = (s: string) => [...s].map((c) => `li t1, ${c.charCodeAt(0)}\nsb t1, 0(t0)`).join("\n");
const exit = `li t0, ${EXIT}\nsw zero, 0(t0)`;

// 1 GHz (a cycle is 1 ns) and one cycle for every instruction these programs use, so the times
// below can be counted by hand.
const ONE_CYCLE = { engines: 2, engineClockKhz: 1_000_000, cpiCsr: 1, cpiBranchTaken: 1, cpiLoadHbm: 1, cpiStoreHbm: 1, cpiMmio: 1, cpiJump: 1 };

// Engine 1 prints a request and raises a flag in HBM; engine 0 waits for the flag and prints
// the reply. Both lines are drained after the same step, so per-engine grouping prints the
// reply (engine 0) first.
const requestReply = programElf(`
  csrr a0, mhartid
  li t0, ${CONSOLE}
  li t2, ${FLAG}
  bne a0, zero, requester
waiter:
  lw t1, 0(t2)
  beq t1, zero, waiter
  ${print("reply\n")}
  j done
requester:
  ${print("request\n")}
  li t1, 1
  sw t1, 0(t2)
done:
  ${exit}
`);
// engine 1: csrr 1 + li 2 + li 2 + bne (taken) 1 + li 2 = 8 cycles before its first sb.
const REQUEST_PS = 8_000;
// engine 0 polls (lw 1 + beq 1) from cycle 6; the first 100 ns window (interleaveQuantumPs)
// ends before engine 1 has run, so engine 0 sees the flag with the lw at cycle 100; then
// beq (not taken) 1 + li 2: its first sb is at cycle 104.
const REPLY_PS = 104_000;

const tmp = mkdtempSync(join(tmpdir(), "menic-console-"));
const elfPath = join(tmp, "request-reply.elf");
writeFileSync(elfPath, requestReply);
const sets = Object.entries({ ...ONE_CYCLE, interleaveQuantumPs: 100_000 }).flatMap(([k, v]) => ["--set", `${k}=${v}`]);
const menic = (...args: string[]) => spawnSync("node", ["bin/menic.js", "fw", "run", elfPath, ...sets, ...args], { encoding: "utf8" });

describe("console lines in simulated-time order", () => {
  it("per-engine grouping prints the reply first; --console merged prints the request first, with its time", () => {
    const grouped = menic();
    expect(grouped.status).toBe(0);
    expect(grouped.stdout.split("\n").slice(0, 2)).toEqual(["[e00] reply", "[e01] request"]);
    const merged = menic("--console", "merged");
    expect(merged.status).toBe(0);
    expect(merged.stdout.split("\n").slice(0, 2)).toEqual(["[    8.000 ns e01] request", "[  104.000 ns e00] reply"]);
  });

  it("--json carries each line's time", () => {
    const r = menic("--json");
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.engines[0].consoleLines).toEqual([{ timePs: REPLY_PS, text: "reply" }]);
    expect(out.engines[1].consoleLines).toEqual([{ timePs: REQUEST_PS, text: "request" }]);
  });

  it("refuses an unknown --console", () => {
    const r = menic("--console", "sorted");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--console sorted: must be one of engine, merged");
  });

  it("holds a line back while another engine has a line begun earlier and not yet ended", async () => {
    // engine 0 prints "a" at once, then "b\n" ~300 ns later; engine 1 prints "x\n" in between.
    const elf = programElf(`
      csrr a0, mhartid
      li t0, ${CONSOLE}
      bne a0, zero, other
      ${print("a")}
      li t2, 150
    wait:
      addi t2, t2, -1
      bne t2, zero, wait
      ${print("b\n")}
      j done
    other:
      li t2, 20
    pause:
      addi t2, t2, -1
      bne t2, zero, pause
      ${print("x\n")}
    done:
      ${exit}
    `);
    const seen: [number, string, bigint][] = [];
    const dev = await Device.create(coreModule(), { ...ONE_CYCLE, interleaveQuantumPs: 10_000 }, {
      consoleOrder: "time", onConsoleLine: (e, line, t) => seen.push([e, line, t]),
    });
    dev.start(dev.loadElf(elf).entry);
    dev.run(100_000n); // drained here: engine 0's "a" (no newline yet) and engine 1's whole line
    expect(dev.consoleLines(1)).toEqual([{ timePs: 48_000n, text: "x" }]);
    expect(seen).toEqual([]); // "x" began after "a", whose line is still open
    // a device restored from here knows engine 0's line began at 6 ns (the core keeps it)
    const restored = await Device.restore(coreModule(), dev.save());
    restored.run(1_000_000n);
    expect(restored.consoleLines(0)).toEqual([{ timePs: 6_000n, text: "b" }]);
    dev.run(1_000_000n);
    dev.flushConsole();
    // engine 0: csrr 1 + li 2 + bne 1 + li 2 = its "a" at 6 ns; engine 1: csrr 1 + li 2 + bne 1 + li 2 + 20 x (addi 1 + bne 1) + li 2 = 48 ns
    expect(seen).toEqual([[0, "ab", 6_000n], [1, "x", 48_000n]]);
  });

  it("drops a line that finds the line-time ring full, and keeps every other line with its own time", async () => {
    // consoleRingBytes 256: 32 line times; 40 one-byte lines in one window, no drain in between
    const elf = programElf(`
      li t0, ${CONSOLE}
      li t2, 40
      li t1, 10
    again:
      sb t1, 0(t0)
      addi t2, t2, -1
      bne t2, zero, again
      ${exit}
    `);
    const dev = await Device.create(coreModule(), { ...ONE_CYCLE, engines: 1, consoleRingBytes: 256, interleaveQuantumPs: 1_000_000 });
    dev.start(dev.loadElf(elf).entry);
    dev.run(10_000_000n);
    const lines = dev.consoleLines(0);
    expect(lines).toHaveLength(32);
    expect(dev.stats()["console.dropped"]).toBe(8);
    // li 2 + li 2 + li 2: the first sb at 6 ns, then one every 3 cycles (sb, addi, bne)
    expect(lines.map((l) => l.timePs)).toEqual(Array.from({ length: 32 }, (_, k) => BigInt(6_000 + 3_000 * k)));
  });
});
