import { describe, it, expect } from "vitest";
import { toPerfetto } from "../host/trace/perfetto.js";
import type { TraceRecord } from "../host/device.js";

describe("Perfetto trace", () => {
  it("draws engine states and NIC requests as spans on their own tracks", () => {
    const r = (timePs: bigint, point: string, engine: number, arg: number): TraceRecord => ({ timePs, point, engine, arg });
    const t = toPerfetto([
      r(0n, "engine.start", 0, 0),
      r(2_000_000n, "engine.sleep", 0, 0x40),
      r(3_000_000n, "nic.wqe_start", 0xffff, 5),
      r(3_500_000n, "nic.wqe_done", 0xffff, (5 << 8) | 0),
      r(4_000_000n, "nic.wqe_start", 0xffff, 5),
      r(4_250_000n, "nic.wqe_done", 0xffff, (5 << 8) | 10),
      r(5_000_000n, "engine.wake", 0, 0x800),
      r(6_000_000n, "engine.exit", 0, 0),
    ], 1, 6_000_000n);
    const spans = t.traceEvents.filter((e) => e.ph === "X").map((e) => [e.pid, e.tid, e.name, e.ts, e.dur]);
    expect(spans).toEqual([
      [1, 5, "request", 3, 0.5],
      [1, 5, "request (status 10)", 4, 0.25],
      [0, 0, "running", 0, 2],
      [0, 0, "wfi", 2, 3],
      [0, 0, "running", 5, 1],
    ]);
    expect(t.traceEvents.filter((e) => e.ph === "M").map((e) => e.args?.name)).toEqual(["menic device", "engine 0", "NIC", "QP 5"]);
  });
});
