import { describe, it, expect, beforeAll } from "vitest";
import { coreModule } from "../host/platform/node.js";
import { Cluster } from "../host/scenario/cluster.js";
import { ConfigError } from "../host/config.js";
import { VerbsError, type Context, type Cq, type Qp, type Pd, type Wc } from "../host/verbs.js";
import { allReduceRing, graphDeviceConfig, runReference } from "../host/graph/index.js";
import { parseFrame } from "../host/wire/rocev2.js";
import { OP } from "../host/generated/headers.js";
import { readPcapng } from "./helpers/pcapng-read.js";
import type { ClusterInput } from "../host/scenario/scenario.js";

// The cluster API (host/scenario/cluster.ts Cluster, the library's openCluster): devices on a
// fabric opened from the scenario's words, QPs connected across it, time run for all together,
// memory read back, and pcapng and Perfetto files of what crossed the fabric. Each test checks
// bytes or numbers a wrong implementation would miss: where a WRITE lands and what is around it,
// exactly what a READ brings back, the time a run reaches, the frames a capture holds.

const open = (input: ClusterInput, options = {}) => Cluster.open(coreModule(), input, options);
const pattern = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed * 17 + (i >> 8)) & 0xff);

interface Pair { cluster: Cluster; a: Context; b: Context; pdA: Pd; pdB: Pd; cqA: Cq; cqB: Cq; qpA: Qp; qpB: Qp }

/** Two devices of `input`, a QP each, connected across the fabric. */
async function pair(input: ClusterInput): Promise<Pair> {
  const cluster = await open(input);
  const [a, b] = [cluster.context(0), cluster.context(1)];
  const pdA = a.allocPd(), pdB = b.allocPd(), cqA = a.createCq(32), cqB = b.createCq(32);
  const qpA = a.createQp(pdA, { sendCq: cqA, recvCq: cqA, maxSendWr: 8, maxRecvWr: 8 });
  const qpB = b.createQp(pdB, { sendCq: cqB, recvCq: cqB, maxSendWr: 8, maxRecvWr: 8 });
  cluster.connect({ device: 0, qp: qpA }, { device: 1, qp: qpB });
  return { cluster, a, b, pdA, pdB, cqA, cqB, qpA, qpB };
}

/** Runs until `n` completions on `cq` (1 ms at most); the run's end and the completions. */
function completions(cluster: Cluster, ctx: Context, cq: Cq, n: number): Wc[] {
  const wcs: Wc[] = [];
  expect(cluster.runUntil(() => (wcs.push(...ctx.pollCq(cq)), wcs.length >= n), cluster.nowPs + 1_000_000_000n)).toBe("done");
  return wcs;
}

describe("a cluster from code: verbs between two devices across the fabric", () => {
  for (const [transport, fabric] of [["rocev2", { topology: { kind: "single-switch" } }], ["metaroce", { topology: { kind: "leaf-spine", planes: 2, spines: 2 } }]] as const) {
    describe(`${transport}, ${fabric.topology.kind}`, () => {
      let p: Pair;
      beforeAll(async () => { p = await pair({ devices: { count: 2, config: { ports: 2, scaleUpPorts: 2 } }, transport, fabric }); });

      it("opens the devices with the scenario's words: their numbers, the transport, the seed", () => {
        expect(p.cluster.size).toBe(2);
        expect(p.cluster.transport).toBe(transport);
        expect([0, 1].map((d) => [p.cluster.context(d).device.config.get("deviceId"), p.cluster.context(d).device.config.get("transport"), p.cluster.context(d).device.config.get("seed"), p.cluster.context(d).device.config.get("engines")]))
          .toEqual([[0n, transport === "metaroce" ? 1n : 0n, 1n, 1n], [1n, transport === "metaroce" ? 1n : 0n, 1n, 1n]]);
      });

      it("an RDMA WRITE lands at the remote address, and nowhere else", () => {
        const { cluster, a, b, pdA, pdB, cqA, qpA } = p;
        const n = 40_000, room = 256;
        const src = a.allocHbm(n), region = b.allocHbm(n + 2 * room);
        b.write(region, new Uint8Array(n + 2 * room).fill(0xee));
        const dst = region + room;
        const mrA = a.regMr(pdA, src, n, ["LOCAL_WRITE"]), mrB = b.regMr(pdB, region, n + 2 * room, ["LOCAL_WRITE", "REMOTE_WRITE"]);
        const data = pattern(n, 1);
        a.write(src, data);
        a.postSend(qpA, [{ wrId: 7, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: n, lkey: mrA.lkey, remoteAddr: dst, rkey: mrB.rkey }]);
        const [wc] = completions(cluster, a, cqA, 1);
        expect([wc!.wrId, wc!.status, wc!.byteLen]).toEqual([7n, "SUCCESS", n]);
        const after = b.read(region, n + 2 * room);
        expect(Buffer.from(after.subarray(room, room + n)).equals(Buffer.from(data))).toBe(true);
        expect([...after.subarray(0, room), ...after.subarray(room + n)].every((x) => x === 0xee)).toBe(true);
        // it crossed the fabric: the frames the switch delivered carried at least the bytes
        expect(cluster.fabric.totals().delivered).toBeGreaterThanOrEqual(Math.ceil(n / 4096));
      });

      it("a SEND lands in the receive buffer the other device posted, with its immediate", () => {
        const { cluster, a, b, pdA, pdB, cqA, cqB, qpA, qpB } = p;
        const msg = pattern(3000, 2), src = a.allocHostMemory(msg.length), buf = b.allocHbm(4096);
        const mrA = a.regMr(pdA, src, msg.length, ["LOCAL_WRITE"]), mrB = b.regMr(pdB, buf, 4096, ["LOCAL_WRITE"]);
        a.write(src, msg);
        b.postRecv(qpB, [{ wrId: 30, localAddr: buf, length: 4096, lkey: mrB.lkey }]);
        a.postSend(qpA, [{ wrId: 31, opcode: "SEND_WITH_IMM", imm: 0x1234abcd, signaled: true, localAddr: src, length: msg.length, lkey: mrA.lkey }]);
        const [r] = completions(cluster, b, cqB, 1);
        completions(cluster, a, cqA, 1);
        expect([r!.wrId, r!.status, r!.opcode, r!.byteLen, r!.imm]).toEqual([30n, "SUCCESS", "RECV", msg.length, 0x1234abcd]);
        expect(Buffer.from(b.read(buf, msg.length)).equals(Buffer.from(msg))).toBe(true);
      });

      it("an RDMA READ brings back exactly the remote bytes", () => {
        const { cluster, a, b, pdA, pdB, cqA, qpA } = p;
        const n = 20_000, remote = b.allocHbm(n + 64), local = a.allocHostMemory(n + 64);
        const want = pattern(n + 64, 3);
        b.write(remote, want);
        a.write(local, new Uint8Array(n + 64).fill(0x5a));
        const mrB = b.regMr(pdB, remote, n + 64, ["REMOTE_READ"]), mrA = a.regMr(pdA, local, n + 64, ["LOCAL_WRITE"]);
        // from 16 bytes into the remote buffer, n bytes
        a.postSend(qpA, [{ wrId: 40, opcode: "RDMA_READ", signaled: true, localAddr: local, length: n, lkey: mrA.lkey, remoteAddr: remote + 16, rkey: mrB.rkey }]);
        const [wc] = completions(cluster, a, cqA, 1);
        expect([wc!.status, wc!.byteLen]).toEqual(["SUCCESS", n]);
        const got = a.read(local, n + 64);
        expect(Buffer.from(got.subarray(0, n)).equals(Buffer.from(want.subarray(16, 16 + n)))).toBe(true);
        expect(got.subarray(n).every((x) => x === 0x5a)).toBe(true);
      });
    });
  }
});

describe("a cluster's time", () => {
  it("runs to the time asked on the window grid, to the window's end inside one, with every device there", async () => {
    const cluster = await open({ devices: { count: 3 } });
    const W = BigInt(cluster.windowPs);
    expect(W).toBe(200_000n); // 200 ns links, the devices' 200 ns interleave quantum
    expect(cluster.run(7n * W)).toBe(7n * W);
    expect(cluster.run(10n * W + 1n)).toBe(11n * W);
    expect(cluster.run(3n * W)).toBe(11n * W); // never back
    expect([0, 1, 2].map((d) => cluster.context(d).nowPs)).toEqual([11n * W, 11n * W, 11n * W]);
  });

  it("runUntil says idle when nothing is left to happen, time-limit when the limit comes first", async () => {
    const cluster = await open({ devices: { count: 2 } });
    expect(cluster.runUntil(() => false, 1_000_000_000n)).toBe("idle");
    const p = await pair({ devices: { count: 2 } });
    const src = p.a.allocHbm(1 << 20), dst = p.b.allocHbm(1 << 20);
    const mrA = p.a.regMr(p.pdA, src, 1 << 20, ["LOCAL_WRITE"]), mrB = p.b.regMr(p.pdB, dst, 1 << 20, ["REMOTE_WRITE"]);
    p.a.postSend(p.qpA, [{ wrId: 1, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: 1 << 20, lkey: mrA.lkey, remoteAddr: dst, rkey: mrB.rkey }]);
    // 1 MiB at 800 Gb/s takes over 10 us: at 2 us it is still going
    expect(p.cluster.runUntil(() => p.a.pollCq(p.cqA).length > 0, 2_000_000n)).toBe("time-limit");
    expect(p.cluster.nowPs).toBe(2_000_000n);
  });

  it("refuses to run a device a context ran ahead of its cluster", async () => {
    const cluster = await open({ devices: { count: 2 } });
    cluster.context(1).run(5_000_000n);
    expect(() => cluster.run(1_000_000n)).toThrow(/^device 1 is at 5000000 ps, ahead of its cluster \(0 ps\): advance a cluster's devices with Cluster.run, not Context.run$/);
  });
});

describe("a cluster's input is checked in the scenario's words", () => {
  it.each([
    [{ devices: { count: 2 }, fabric: { mdoe: "timing" } }, /^cluster\.fabric\.mdoe: unknown field \(did you mean mode\? known: mode, topology/],
    [{ devices: { count: 2 }, transport: "roce" }, /^cluster\.transport: must be one of rocev2, metaroce, got "roce"$/],
    [{ devices: { count: 2, config: { deviceId: 3 } } }, /^cluster\.devices\.config\.deviceId: is set by the cluster, not by devices\.config$/],
    [{ devices: { count: 2, config: { enignes: 2 } } }, /^cluster\.devices\.config\.enignes: unknown field/],
    [{ devices: { count: 2 }, faults: [{ kind: "link-down", at: "2us", until: "1us" }] }, /^cluster\.faults\[0\]\.until: must come after at \(2(\.0+)? ?us\), got 1(\.0+)? ?us$/],
    [{ devices: { count: 2 }, traffic: { pattern: "pairs" } }, /^cluster\.traffic: unknown field \(known: seed, devices, transport, fabric, faults\)$/],
  ])("%j", async (input, message) => {
    await expect(open(input as ClusterInput)).rejects.toThrow(ConfigError);
    await expect(open(input as ClusterInput)).rejects.toThrow(message);
  });

  it("a fault applies to the fabric: 5% loss on every link, the WRITE retransmitted and its bytes whole", async () => {
    const p = await pair({ devices: { count: 2 }, seed: 7, faults: [{ kind: "loss", links: "all", random: 0.05 }] });
    const n = 256 << 10, src = p.a.allocHbm(n), dst = p.b.allocHbm(n), data = pattern(n, 5);
    p.a.write(src, data);
    const mrA = p.a.regMr(p.pdA, src, n, ["LOCAL_WRITE"]), mrB = p.b.regMr(p.pdB, dst, n, ["REMOTE_WRITE"]);
    p.a.postSend(p.qpA, [{ wrId: 1, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: n, lkey: mrA.lkey, remoteAddr: dst, rkey: mrB.rkey }]);
    const wcs: Wc[] = [];
    expect(p.cluster.runUntil(() => (wcs.push(...p.a.pollCq(p.cqA)), wcs.length > 0), 100_000_000_000n)).toBe("done");
    expect(wcs[0]!.status).toBe("SUCCESS");
    expect(p.cluster.fabric.totals().drops.random_loss).toBeGreaterThan(0);
    expect(p.a.device.stats()["roce.retransmits"]).toBeGreaterThan(0);
    expect(Buffer.from(p.b.read(dst, n)).equals(Buffer.from(data))).toBe(true);
  });

  it("connect refuses a QP that is not in RESET, and changes neither", async () => {
    const p = await pair({ devices: { count: 2 } });
    const qpB2 = p.b.createQp(p.pdB, { sendCq: p.cqB, recvCq: p.cqB, maxSendWr: 1, maxRecvWr: 1 });
    expect(() => p.cluster.connect({ device: 0, qp: p.qpA }, { device: 1, qp: qpB2 })).toThrow(new VerbsError("connect: a.qp: QP 0 of device 0 is in RTS, not RESET"));
    expect(p.b.qpState(qpB2)).toBe("RESET");
    expect(() => p.cluster.connect({ device: 2, qp: p.qpA }, { device: 1, qp: qpB2 })).toThrow(/^connect: a\.device must be a device number from 0 to 1, got 2$/);
    // a bad option shows only at RTR: both QPs go back to RESET
    const qpA2 = p.a.createQp(p.pdA, { sendCq: p.cqA, recvCq: p.cqA, maxSendWr: 1, maxRecvWr: 1 });
    expect(() => p.cluster.connect({ device: 0, qp: qpA2 }, { device: 1, qp: qpB2 }, { portLane: -1 })).toThrow(/^modifyQp: QP 1: attr\.portLane must be an integer/);
    expect([p.a.qpState(qpA2), p.b.qpState(qpB2)]).toEqual(["RESET", "RESET"]);
    p.cluster.connect({ device: 0, qp: qpA2 }, { device: 1, qp: qpB2 });
    expect([p.a.qpState(qpA2), p.b.qpState(qpB2)]).toEqual(["RTS", "RTS"]);
  });
});

describe("a cluster's captures", () => {
  it("a pcapng of a WRITE holds every frame, in and out, its data frames carrying the bytes to the remote address", async () => {
    const p = await pair({ devices: { count: 2 } });
    const chunks: Uint8Array[] = [];
    const capture = p.cluster.capture((c) => chunks.push(c));
    const n = 5 * 4096 + 100, src = p.a.allocHbm(n), dst = p.b.allocHbm(n), data = pattern(n, 9);
    p.a.write(src, data);
    const mrA = p.a.regMr(p.pdA, src, n, ["LOCAL_WRITE"]), mrB = p.b.regMr(p.pdB, dst, n, ["REMOTE_WRITE"]);
    p.a.postSend(p.qpA, [{ wrId: 1, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: n, lkey: mrA.lkey, remoteAddr: dst, rkey: mrB.rkey }]);
    completions(p.cluster, p.a, p.cqA, 1);
    p.cluster.close();
    const file = readPcapng(Buffer.concat(chunks));
    const frames = file.packets.map((k) => ({ ...k, f: parseFrame(k.data) }));
    expect(frames.every((x) => x.f.ok)).toBe(true);
    const fab = p.cluster.fabric.stats();
    expect(file.packets.length).toBe(capture.written);
    expect(frames.filter((x) => x.flags === 2).length).toBe(fab.injected); // out: every frame sent
    expect(frames.filter((x) => x.flags === 1).length).toBe(p.cluster.fabric.totals().delivered); // in: every frame delivered
    // device 0's data frames: 6 (5 x 4096 + 100 at an MTU of 4096), FIRST, MIDDLE x 4, LAST, the first with the RETH to dst
    const data0 = frames.filter((x) => x.flags === 2 && file.interfaces[x.iface]!.name!.startsWith("dev0.") && x.f.ok && x.f.frame.payload.length > 0);
    expect(data0.map((x) => x.f.ok && x.f.frame.opcode)).toEqual([OP.RC_WRITE_FIRST, OP.RC_WRITE_MIDDLE, OP.RC_WRITE_MIDDLE, OP.RC_WRITE_MIDDLE, OP.RC_WRITE_MIDDLE, OP.RC_WRITE_LAST]);
    const first = data0[0]!.f;
    expect(first.ok && [first.frame.reth!.va, first.frame.reth!.dmaLength]).toEqual([BigInt(dst), n]);
    expect(Buffer.concat(data0.map((x) => (x.f.ok ? x.f.frame.payload : new Uint8Array()))).equals(Buffer.from(data))).toBe(true);
  });

  it("a Perfetto trace samples each direction of a connected pair and the switch queues on the trace interval", async () => {
    const p = await pair({ devices: { count: 2 } });
    const chunks: Uint8Array[] = [];
    const trace = p.cluster.trace((c) => chunks.push(c), { intervalPs: 1_000_000 });
    const n = 1 << 20, src = p.a.allocHbm(n), dst = p.b.allocHbm(n);
    const mrA = p.a.regMr(p.pdA, src, n, ["LOCAL_WRITE"]), mrB = p.b.regMr(p.pdB, dst, n, ["REMOTE_WRITE"]);
    p.a.postSend(p.qpA, [{ wrId: 1, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: n, lkey: mrA.lkey, remoteAddr: dst, rkey: mrB.rkey }]);
    completions(p.cluster, p.a, p.cqA, 1);
    trace.close();
    const events = JSON.parse(Buffer.concat(chunks).toString("utf8")).traceEvents as { name: string; ph: string; ts: number; pid: number; args: { value?: number } }[];
    expect(events.length).toBe(trace.events);
    const goodput = events.filter((e) => e.ph === "C" && e.name === "flow 0 goodput Gb/s");
    // every sample on the 1 us grid; over the run, the goodput's integral is the 1 MiB placed
    expect(goodput.every((e) => Number.isInteger(e.ts))).toBe(true);
    const bytes = goodput.reduce((s, e, k) => s + ((e.args.value ?? 0) * 1e6 * ((goodput[k + 1]?.ts ?? e.ts + 1) - e.ts)) / 8000, 0);
    expect(Math.round(bytes)).toBe(n);
    expect(events.some((e) => e.ph === "C" && e.name === "flow 1 sending Gb/s")).toBe(true); // the other direction: its ACKs carry no payload
    expect(events.some((e) => e.ph === "C" && e.name.startsWith("queue ") && (e.args.value ?? 0) > 0)).toBe(false); // one flow at line rate queues nothing
  });
});

describe("a collective from code", () => {
  it("a ring all-reduce on 3 devices whose engines run the executor gives the reference's bytes on every device", async () => {
    const program = allReduceRing({ devices: 3, engines: 2, bytes: 3 * 4096, dtype: "i32", redop: "sum" });
    const cluster = await open({ devices: { count: 3, config: graphDeviceConfig(program) } }, { executor: true });
    const booted = cluster.nowPs;
    expect(booted).toBeGreaterThan(0n);
    const run = cluster.bind(program);
    const inputs = [0, 1, 2].map((d) => new Uint8Array(Int32Array.from({ length: 3 * 1024 }, (_, i) => (i + 1) * (d + 1) - 7 * d).buffer));
    inputs.forEach((x, d) => run.write(d, "in", x));
    run.start();
    expect(cluster.runUntil(() => run.poll().state !== "running", booted + 1_000_000_000n)).toBe("done");
    expect(run.poll()).toEqual({ state: "done", devices: 3 });
    const ref = runReference(program, (rank, b) => (b === "in" ? inputs[rank] : undefined));
    for (let d = 0; d < 3; d++) expect(Buffer.from(run.read(d, "out")).equals(Buffer.from(ref.buffers[d]!.get("out")!)), `device ${d}`).toBe(true);
    // sum over d of (i + 1)(d + 1) - 7d: 6 (i + 1) - 21
    expect(Array.from(new Int32Array(run.read(1, "out").buffer, 0, 3))).toEqual([-15, -9, -3]);
  });

  it("bind refuses a cluster whose engines do not run the executor", async () => {
    const program = allReduceRing({ devices: 2, engines: 1, bytes: 1024, dtype: "f32", redop: "sum" });
    const cluster = await open({ devices: { count: 2, config: graphDeviceConfig(program) } });
    expect(() => cluster.bind(program)).toThrow(/^bind: the devices' engines do not run the graph executor: open the cluster with \{ executor: true \}$/);
  });
});
