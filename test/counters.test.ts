// Device.statValues reads the named counters as Device.stats gives them, and sumStats adds them
// up over devices (what a scenario's results report): on two devices that did different work.
import { describe, it, expect } from "vitest";
import { Context } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";
import { sumStats } from "../host/scenario/counters.js";
import { STAT_NAMES } from "../host/generated/layouts.js";

/** A device that ran `writes` loopback WRITEs and posted one with a bad key (a completion with an error). */
async function worked(writes: number) {
  const ctx = await Context.open(coreModule(), { engines: 1, hbmBytes: 1 << 20, hostMemBytes: 1 << 20 });
  const pd = ctx.allocPd(), cq = ctx.createCq(64);
  const a = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 16, maxRecvWr: 1 });
  for (const s of ["INIT", "RTR", "RTS"] as const) ctx.modifyQp(a, { state: s, ...(s === "RTR" ? { destQpNum: a.qpn } : {}) });
  const buf = ctx.allocHbm(4096), mr = ctx.regMr(pd, buf, 4096, ["LOCAL_WRITE", "REMOTE_WRITE"]);
  const wrs = Array.from({ length: writes }, (_, k) => ({ wrId: k, opcode: "RDMA_WRITE" as const, signaled: true, localAddr: buf, length: 64, lkey: mr.lkey, remoteAddr: buf + 2048, rkey: mr.rkey }));
  ctx.postSend(a, [...wrs, { ...wrs[0]!, wrId: 99, rkey: (mr.rkey ^ 0x40) >>> 0 }]);
  ctx.run(ctx.nowPs + 100_000_000n);
  expect(ctx.pollCq(cq, 64).length).toBe(writes + 1);
  return ctx.device;
}

describe("device counters for results", () => {
  it("statValues gives the named counters of stats(), in the order asked; sumStats adds them over devices", async () => {
    const [one, two] = [await worked(3), await worked(7)];
    const names = ["nic.errors", "nic.wqes", "hbm.bytes.nic", "sched.events", "roce.retransmits"] as const;
    const s1 = one.stats(), s2 = two.stats();
    expect(s1["nic.wqes"]).toBe(4);
    expect(s2["nic.wqes"]).toBe(8);
    expect(one.statValues(names)).toEqual(names.map((n) => s1[n]));
    expect(two.statValues(names)).toEqual(names.map((n) => s2[n]));
    // every counter, in the core's order, also the last
    expect(two.statValues(STAT_NAMES)).toEqual(STAT_NAMES.map((n) => s2[n]));
    const sum = sumStats([one, two], names);
    expect(sum).toEqual(Object.fromEntries(names.map((n) => [n, s1[n]! + s2[n]!])));
    expect(sum["nic.wqes"]).toBe(12);
    expect(sum["nic.errors"]).toBeGreaterThan(0);
    expect(sumStats([], names)["nic.wqes"]).toBe(0);
  });

  it("an unknown counter name is a RangeError naming it", async () => {
    const dev = await worked(1);
    expect(() => dev.statValues(["nic.wqes", "nic.wqe"])).toThrow(new RangeError('statValues: no statistic named "nic.wqe" (docs/memory-map.md lists them)'));
    expect(() => sumStats([dev], ["roce.retransmit"])).toThrow(/no statistic named "roce.retransmit"/);
  });
});
