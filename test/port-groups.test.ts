// Re-splitting the ports between the scale-up and scale-out groups at run time (issue 9;
// assembly/nic/port-groups.ts, metaroce/spread.ts, host/port-groups.ts): after a re-split every
// frame leaves on the new group's ports, the time follows the number of ports, the bytes land
// as sent, a re-split with work in flight is refused naming the QP, and a bad split names the field.
import { describe, it, expect } from "vitest";
import { Context, type Qp } from "../host/verbs.js";
import { Device } from "../host/device.js";
import { coreModule } from "../host/platform/node.js";
import { DeviceEndpoint } from "../host/cluster/endpoint.js";
import { Fabric } from "../host/fabric/fabric.js";
import { ClusterRunner } from "../host/fabric/runner.js";
import { singleSwitch } from "../host/fabric/topology.js";
import { ConfigError } from "../host/config.js";
import { PortSplitError } from "../host/port-groups.js";

const PORTS = 8;
const FLOWS = 6; // QP pairs: QP i of device 0 writes to QP i of device 1, port (2i) mod count of the group
const BYTES = 1024 * 1024;
const pattern = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed * 7) & 0xff);

/**
 * Two devices of 8 ports on one switch, 7 of them scale-up (the scale-out group is port 7 alone),
 * FLOWS QP pairs on the scale-out group (or `group`), pair i with port lane `lanes[i]` if given.
 */
async function pair(transport: 0 | 1, group: "SCALE_UP" | "SCALE_OUT" = "SCALE_OUT", lanes?: number[]) {
  const config = { engines: 1, ports: PORTS, scaleUpPorts: 7, hbmBytes: 16 << 20, transport, mrtPaths: 6 };
  const ctxs = await Promise.all([0, 1].map((d) => Context.open(coreModule(), { ...config, deviceId: d })));
  const topo = singleSwitch({ devices: 2, ports: PORTS });
  const fabric = new Fabric(coreModule(), topo, { mode: "full", seed: 3 });
  const runner = new ClusterRunner(fabric, ctxs.map((c) => new DeviceEndpoint(c.device)));
  const ends = ctxs.map((ctx) => {
    const pd = ctx.allocPd(), cq = ctx.createCq(64);
    const qps = Array.from({ length: FLOWS }, () => ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 8, maxRecvWr: 8 }));
    const src = ctx.allocHbm(FLOWS * BYTES), dst = ctx.allocHbm(FLOWS * BYTES);
    return { ctx, cq, qps, src, dst, smr: ctx.regMr(pd, src, FLOWS * BYTES), dmr: ctx.regMr(pd, dst, FLOWS * BYTES, ["REMOTE_WRITE"]) };
  });
  ends.forEach((e, d) => e.qps.forEach((qp, i) => {
    e.ctx.modifyQp(qp, { state: "INIT" });
    e.ctx.modifyQp(qp, { state: "RTR", destQpNum: ends[1 - d]!.qps[i]!.qpn, destDevice: 1 - d, portGroup: group, portLane: lanes?.[i] });
    e.ctx.modifyQp(qp, { state: "RTS" });
  }));
  /** Frames each port of device d has sent into the fabric so far. */
  const portFrames = (d: number) => Array.from({ length: PORTS }, (_, p) => fabric.stats().links[topo.links.findIndex((l) => l.device === d && l.port === p)]!.ab.packets);
  /** Device 0 writes FLOWS x BYTES (seed `round`) to device 1 and runs until every write completed: the time it took, ps. */
  const writeAll = (round: number) => {
    const [a, b] = ends as [typeof ends[0], typeof ends[0]];
    a.ctx.write(a.src, pattern(FLOWS * BYTES, round));
    a.qps.forEach((qp: Qp, i) => a.ctx.postSend(qp, [{
      wrId: i, opcode: "RDMA_WRITE", signaled: true, localAddr: a.src + i * BYTES, length: BYTES, lkey: a.smr.lkey, remoteAddr: b.dst + i * BYTES, rkey: b.dmr.rkey,
    }]));
    const t0 = runner.nowPs;
    let done = 0;
    while (done < FLOWS && runner.nowPs - t0 < 1e9) {
      runner.runTo(runner.nowPs + 100_000);
      done += a.ctx.pollCq(a.cq, 64).filter((w) => w.status === "SUCCESS").length;
    }
    expect(done).toBe(FLOWS);
    return runner.nowPs - t0;
  };
  /** Runs until no device has anything left that would stop a re-split to `up`. */
  const drain = (up: number) => {
    const t0 = runner.nowPs;
    while (ctxs.some((c) => c.device.portGroupsBlocker(up)) && runner.nowPs - t0 < 1e8) runner.runTo(runner.nowPs + 100_000);
  };
  return { ctxs, ends, runner, portFrames, writeAll, drain };
}

const sub = (a: number[], b: number[]) => a.map((x, i) => x - b[i]!);
/** Byte for byte (vitest's toEqual walks big arrays slowly). */
const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && Buffer.compare(a, b) === 0;

describe("a RoCEv2 QP's port lane", () => {
  it("puts QP pair i on port lane i of its group, and after a re-split on lane i mod the group's new size", async () => {
    // without lanes, pair i (QP numbers i and i) would be on port 2i mod 7: 0, 2, 4, 6, 1, 3
    const t = await pair(0, "SCALE_UP", [0, 1, 2, 3, 4, 5]);
    const data = BYTES / 4096; // data frames of one flow
    let before = t.portFrames(0);
    t.writeAll(1);
    const first = sub(t.portFrames(0), before);
    for (let p = 0; p < 6; p++) expect(first[p]).toBeGreaterThanOrEqual(data);
    expect([first[6], first[7]]).toEqual([0, 0]);
    // 4 scale-up ports: lanes 0..5 on ports 0, 1, 2, 3, 0, 1
    t.drain(4);
    for (const c of t.ctxs) c.device.setPortGroups({ scaleUpPorts: 4 });
    before = t.portFrames(0);
    t.writeAll(2);
    expect(same(t.ends[1]!.ctx.read(t.ends[1]!.dst, FLOWS * BYTES), pattern(FLOWS * BYTES, 2))).toBe(true);
    const second = sub(t.portFrames(0), before);
    for (const p of [0, 1]) expect(second[p]).toBeGreaterThanOrEqual(2 * data);
    for (const p of [2, 3]) {
      expect(second[p]).toBeGreaterThanOrEqual(data);
      expect(second[p]).toBeLessThan(2 * data);
    }
    expect(second.slice(4)).toEqual([0, 0, 0, 0]);
  });

  it("refuses a lane that is not a whole number below PORT_LANE_AUTO, naming it", async () => {
    const ctx = await Context.open(coreModule(), { engines: 1 });
    const qp = ctx.createQp(ctx.allocPd(), { sendCq: ctx.createCq(4), recvCq: ctx.createCq(4), maxSendWr: 1, maxRecvWr: 1 });
    ctx.modifyQp(qp, { state: "INIT" });
    for (const lane of [-1, 1.5, 0xffffffff]) {
      expect(() => ctx.modifyQp(qp, { state: "RTR", destQpNum: 5, destDevice: 1, portLane: lane })).toThrow(/attr\.portLane must be an integer 0\.\.4294967294/);
    }
    expect(ctx.qpState(qp)).toBe("INIT");
  });
});

describe.each([["rocev2", 0], ["metaroce", 1]] as const)("re-splitting the ports at run time, %s", (name, transport) => {
  it("moves the scale-out traffic from port 7 alone to ports 5..7: frames only there, about 3x the rate, the bytes as sent", async () => {
    const t = await pair(transport);
    expect(t.ctxs[0]!.device.portGroups()).toEqual({ scaleUpPorts: 7, scaleOutPorts: 1 });
    const before0 = t.portFrames(0), before1 = t.portFrames(1);
    const slow = t.writeAll(1);
    expect(same(t.ends[1]!.ctx.read(t.ends[1]!.dst, FLOWS * BYTES), pattern(FLOWS * BYTES, 1))).toBe(true);
    const first = sub(t.portFrames(0), before0);
    // every data frame on port 7 (BYTES / 4096 per flow at least), none elsewhere; the ACKs back on device 1's port 7 alone
    expect(first.slice(0, 7)).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(first[7]).toBeGreaterThanOrEqual((FLOWS * BYTES) / 4096);
    expect(sub(t.portFrames(1), before1).slice(0, 7)).toEqual([0, 0, 0, 0, 0, 0, 0]);

    t.drain(5);
    for (const c of t.ctxs) c.device.setPortGroups({ scaleUpPorts: 5 });
    expect(t.ctxs[1]!.device.portGroups()).toEqual({ scaleUpPorts: 5, scaleOutPorts: 3 });
    const mid0 = t.portFrames(0), mid1 = t.portFrames(1);
    const fast = t.writeAll(2);
    expect(same(t.ends[1]!.ctx.read(t.ends[1]!.dst, FLOWS * BYTES), pattern(FLOWS * BYTES, 2))).toBe(true);
    const second = sub(t.portFrames(0), mid0);
    expect(second.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
    expect(sub(t.portFrames(1), mid1).slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
    // the three ports share the data evenly: RoCEv2 QP i on port 5 + 2i mod 3 (2 QPs each), MetaRoCE-like 6 paths over 3 ports (2 each)
    const data = (FLOWS * BYTES) / 4096;
    for (const p of [5, 6, 7]) {
      expect(second[p]).toBeGreaterThanOrEqual(data / 3);
      expect(second[p]).toBeLessThan(data / 3 + data / 8);
    }
    // 3 ports instead of 1: the same bytes in well under half the time (a third, less the fixed
    // costs: doorbells, the first HBM reads, the last ACK; the MetaRoCE-like paths' windows start over)
    const ratio = slow / fast;
    expect(ratio).toBeGreaterThan(2.5);
    expect(ratio).toBeLessThan(3.05);
    console.log(`${name}: ${FLOWS} x ${BYTES} B on 1 port ${slow} ps, on 3 ports ${fast} ps (x${ratio.toFixed(2)}); frames per port ${first.join("/")} then ${second.join("/")}`);
  });

  it("refuses a re-split while a write is in flight, naming the QP, and changes nothing; drained, it goes through", async () => {
    const t = await pair(transport);
    const [a, b] = t.ends as [typeof t.ends[0], typeof t.ends[0]];
    a.ctx.postSend(a.qps[3]!, [{ wrId: 9, opcode: "RDMA_WRITE", signaled: true, localAddr: a.src, length: BYTES, lkey: a.smr.lkey, remoteAddr: b.dst, rkey: b.dmr.rkey }]);
    // the doorbell is still crossing PCIe: already send work
    expect(a.ctx.device.portGroupsBlocker(5)).toMatchObject({ reason: "send", qpn: a.qps[3]!.qpn, peer: 1 });
    t.runner.runTo(t.runner.nowPs + 1_000_000);
    let err: unknown;
    try { a.ctx.device.setPortGroups({ scaleUpPorts: 5 }); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(PortSplitError);
    expect((err as PortSplitError).message).toMatch(new RegExp(`QP ${a.qps[3]!.qpn} \\(to device 1\\) has send work`));
    expect(a.ctx.device.portGroups().scaleUpPorts).toBe(7);
    // the split it has already moves nothing: no refusal
    expect(a.ctx.device.portGroupsBlocker(7)).toBeNull();
    a.ctx.device.setPortGroups({ scaleUpPorts: 7 });
    // while the write crosses, the receiving end is busy too: a message half placed or an answer
    // owed (RoCEv2), packets to acknowledge on the connection's paths (MetaRoCE-like)
    const seen = new Set<string>();
    for (let k = 0; k < 40; k++) {
      t.runner.runTo(t.runner.nowPs + 100_000);
      seen.add(b.ctx.device.portGroupsBlocker(5)?.reason ?? "none");
    }
    expect(seen.has(transport === 0 ? "answer" : "paths")).toBe(true);
    t.drain(5);
    expect(a.ctx.pollCq(a.cq, 8).map((w) => w.status)).toEqual(["SUCCESS"]);
    expect(b.ctx.device.portGroupsBlocker(5)).toBeNull();
    for (const c of t.ctxs) c.device.setPortGroups({ scaleUpPorts: 5 });
    expect(a.ctx.device.portGroups().scaleUpPorts).toBe(5);
  });

  it("refuses a split that leaves a connected QP's group with no ports, and a bad split names the field", async () => {
    const t = await pair(transport);
    const dev = t.ctxs[0]!.device;
    expect(dev.portGroupsBlocker(PORTS)).toMatchObject({ reason: "empty-group", qpn: t.ends[0]!.qps[0]!.qpn });
    expect(() => dev.setPortGroups({ scaleUpPorts: PORTS })).toThrow(/QP 0 \(to device 1\) is bound to a port group that 8 scale-up ports would leave with no ports/);
    const bad = (g: unknown, re: RegExp) => {
      let err: unknown;
      try { dev.setPortGroups(g as { scaleUpPorts: number }); } catch (e) { err = e; }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(re);
    };
    bad({ scaleUpPorts: 9 }, /^setPortGroups\.scaleUpPorts: must be a whole number of ports from 0 to 8 \(the device's ports\), got 9$/);
    bad({ scaleUpPorts: 2.5 }, /^setPortGroups\.scaleUpPorts: .* got 2\.5$/);
    bad({ scaleUpPorts: -1 }, /^setPortGroups\.scaleUpPorts: /);
    bad({ scaleUpPorts: "4" }, /^setPortGroups\.scaleUpPorts: .* got "4"$/);
    bad({ scaleOutPorts: 4 }, /^setPortGroups\.scaleOutPorts: is not a field/);
    bad(null, /^setPortGroups: takes \{ scaleUpPorts \}/);
    expect(dev.portGroups()).toEqual({ scaleUpPorts: 7, scaleOutPorts: 1 });
  });

  it("keeps the split across save and restore", async () => {
    const t = await pair(transport);
    for (const c of t.ctxs) c.device.setPortGroups({ scaleUpPorts: 2 });
    const again = await Device.restore(coreModule(), t.ctxs[0]!.device.save());
    expect(again.portGroups()).toEqual({ scaleUpPorts: 2, scaleOutPorts: 6 });
    expect(again.config.get("scaleUpPorts")).toBe(7n); // the config keeps what the device was created with
  });
});
