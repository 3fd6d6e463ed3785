// maxOf and minOf (host/extremes.ts) against a big scenario's lists, where Math.max(...xs)
// overflows the stack: the fabric bench's permutation on 16,384 devices has 131,072 flows.
import { describe, it, expect } from "vitest";
import { maxOf, minOf } from "../host/extremes.js";
import { resolveScenario } from "../host/scenario/scenario.js";
import { planTraffic } from "../host/scenario/workload.js";
import { trafficSizes } from "../host/scenario/traffic-run.js";
import { scenario } from "../bench/fabric.js";

describe("the largest and smallest of many", () => {
  it("maxOf and minOf: 300,000 values; the floor and ceiling; an empty list", () => {
    const xs = Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 300_007);
    expect(maxOf(xs)).toBe(300_006);
    expect(minOf(xs)).toBe(0);
    expect(maxOf([3, 5], 9)).toBe(9);
    expect(minOf([3, 5], 1)).toBe(1);
    expect(maxOf([])).toBe(-Infinity);
    expect(minOf([], 4)).toBe(4);
  });

  it("a 16,384-device permutation's traffic is planned and sized (131,072 flows)", () => {
    const sc = resolveScenario(scenario(16384, "timing", 1, "rocev2"));
    const plan = planTraffic(sc);
    expect(plan.flows.length).toBe(131_072);
    const sizes = trafficSizes(16384, plan);
    expect(maxOf(sizes.qpsPerDevice)).toBe(16); // 8 flows out, 8 in
    expect(plan.maxBytes).toBe(1 << 20);
  });
});
