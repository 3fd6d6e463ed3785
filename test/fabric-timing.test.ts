import { coreModule } from "../host/platform/node.js";
import { describe, it, expect } from "vitest";
import { leafSpine, singleSwitch, hostLink, fabricLink, windowFor, ClusterRunner, Fabric, type Endpoint, type ArrivalBatch, type TxSink } from "../host/fabric/index.js";
import { cluster, serPs, frameLen } from "./helpers/fabric.js";

// Time through the fabric, derived by hand from rates and latencies: serialisation is
// (wireLen + 24 B of FCS, preamble and gap) × 8 bits at the link rate; a switch has a frame
// when its last bit is in and forwards it after the switch latency (default 400 ns).

const SW_LAT = 400_000;

describe("one frame across leaf, spine, leaf", () => {
  it("arrives at the nanosecond the rates and latencies give", () => {
    const topo = leafSpine({ devices: 4, ports: 1, planes: 1, devicesPerLeaf: 2, spines: 2, hostLink: { gbps: 800, latencyPs: 200_000 }, fabricLink: { gbps: 400, latencyPs: 600_000 } });
    const { fabric, endpoints, runner } = cluster(topo, (d) => (d === 0 ? [{ port: 0, dstDevice: 2, bytes: 1000, udpSrcPort: 0xc000 }] : []), { log: true });
    expect(runner.runUntilIdle()).toBe(true);
    const w = frameLen(1000); // 1058
    // 2 host hops at 800 Gb/s: 10.82 ns each; 2 fabric hops at 400 Gb/s: 21.64 ns each;
    // latencies 2 × 200 ns + 2 × 600 ns; three switches × 400 ns: 2,864.920 ns
    const expected = 2 * serPs(w, 800) + 2 * serPs(w, 400) + 2 * 200_000 + 2 * 600_000 + 3 * SW_LAT;
    expect(expected).toBe(2_864_920);
    expect(endpoints[2].log).toEqual([{ arrivalPs: expected, srcDevice: 0, srcPort: 0, port: 0, seq: 0, wireLen: w, ecn: 2, udpSrcPort: 0xc000 }]);
    const s = fabric.stats();
    expect(s.hops).toBe(4);
    const used = s.links.filter((l) => l.ab.packets + l.ba.packets > 0).map((l) => [l.name, l.ab.packets, l.ba.packets] as const);
    expect(used.length).toBe(4);
    expect(used[0]).toEqual(["dev0.port0-p0.leaf0", 1, 0]);
    expect(used[1]).toEqual(["dev2.port0-p0.leaf1", 0, 1]);
    // one spine carried it up and down
    expect(used[2][0].split("-")[1]).toBe(used[3][0].split("-")[1]);
    expect(topo.links[fabricLink(topo, 0, 0, 0)].name).toBe("p0.leaf0-p0.spine0");
    expect(topo.links[hostLink(topo, 2, 0)].name).toBe("dev2.port0-p0.leaf1");
  });
});

describe("two flows into one output port", () => {
  // Devices 0 and 1 each send K frames of 1058 B back to back at 800 Gb/s (10.82 ns each) to
  // device 2 on one switch. Their frames reach the output queue together, every 10.82 ns from
  // a0 = 10.82 ns + 200 ns + 400 ns; the port drains one per 10.82 ns. Arrivals at a
  // picosecond are taken before a transmitter finishing then, device 0 before device 1. So at
  // a_k the queue (frames waiting, the one on the wire not counted) holds (k + 2) frames after
  // the arrivals, and one fewer once the next starts: it peaks at (K + 1) frames at the last
  // arrivals, and the port sends all 2K frames back to back from a0.
  const K = 10, W = frameLen(1000), SER = serPs(W, 800), A0 = SER + 200_000 + SW_LAT;
  const flows = (d: number) => (d < 2 ? [{ port: 0, dstDevice: 2, bytes: K * 1000, mtu: 1000, udpSrcPort: 100 + d }] : []);

  it("share it: the queue grows as computed and the frames leave back to back, alternating", () => {
    const topo = singleSwitch({ devices: 3, ports: 1 });
    const { fabric, endpoints, runner } = cluster(topo, flows, { log: true });
    runner.runUntilIdle();
    const log = endpoints[2].log;
    expect(log.length).toBe(2 * K);
    expect(log.map((a) => a.arrivalPs)).toEqual(Array.from({ length: 2 * K }, (_, j) => A0 + (j + 1) * SER + 200_000));
    expect(log.map((a) => a.srcDevice)).toEqual(Array.from({ length: 2 * K }, (_, j) => j & 1));
    const out = fabric.stats().links[hostLink(topo, 2, 0)].ba;
    expect(out.queuePeakBytes).toBe((K + 1) * W);
    expect(fabric.stats().switches[0].queuePeakBytes).toBe((K + 1) * W);
    expect(fabric.stats().drops.buffer_full).toBe(0);
  });

  it("drop at the tail when the shared buffer is full: exactly K - 4 of device 1's frames", () => {
    // buffer 5 frames: the queue reaches 5 frames at a_4 with device 0's frame; from then on
    // device 1's frame finds 5 frames waiting each time and is dropped (frames 4 .. K - 1)
    const topo = singleSwitch({ devices: 3, ports: 1 });
    const { fabric, endpoints, runner } = cluster(topo, flows, { fabric: { switch: { bufferBytesPerPort: (5 * W) / 3 } }, log: true });
    runner.runUntilIdle();
    const s = fabric.stats();
    expect(s.drops).toMatchObject({ buffer_full: K - 4, port_cap: 0 });
    expect(s.switches[0].drops.buffer_full).toBe(K - 4);
    expect(s.links[hostLink(topo, 2, 0)].ba.drops.buffer_full).toBe(K - 4);
    expect(s.switches[0].bufferPeakBytes).toBe(5 * W);
    expect(endpoints[2].log.filter((a) => a.srcDevice === 1).map((a) => a.seq)).toEqual([0, 1, 2, 3]);
    expect(endpoints[2].receivedFrames).toBe(K + 4);
  });

  it("drop at the tail when the port's cap is reached: exactly K - 2 with a cap of 3 frames", () => {
    const topo = singleSwitch({ devices: 3, ports: 1 });
    const { fabric, endpoints, runner } = cluster(topo, flows, { fabric: { switch: { portCapBytes: 3 * W } } });
    runner.runUntilIdle();
    expect(fabric.stats().drops).toMatchObject({ buffer_full: 0, port_cap: K - 2 });
    expect(fabric.stats().links[hostLink(topo, 2, 0)].ba.queuePeakBytes).toBe(3 * W);
    expect(endpoints[2].receivedFrames).toBe(K + 2);
  });
});

/** An endpoint that checks the runner's promises: arrivals inside the window about to run, steps on window ends. */
class Probe implements Endpoint {
  now = 0;
  steps: number[] = [];
  violations: string[] = [];
  constructor(readonly device: number, readonly inner: Endpoint) {}
  stepTo(t: number): void {
    if (t < this.now) this.violations.push(`stepped back from ${this.now} to ${t}`);
    for (const a of this.delivered) if (a >= t) this.violations.push(`arrival at ${a} delivered for a step to ${t}`);
    this.delivered = [];
    this.steps.push(t);
    this.now = t;
    this.inner.stepTo(t);
  }
  nextActivityPs(): number {
    return this.inner.nextActivityPs();
  }
  drainTx(sink: TxSink): void {
    this.inner.drainTx(sink);
  }
  deliver(b: ArrivalBatch): void {
    for (let i = 0; i < b.n; i++) if (b.arrivalPs[i] < this.now) this.violations.push(`arrival at ${b.arrivalPs[i]} delivered at ${this.now}`);
    this.delivered = Array.from(b.arrivalPs.subarray(0, b.n));
    this.inner.deliver(b);
  }
  private delivered: number[] = [];
}

describe("the runner's windows", () => {
  it("are the largest multiple of the 200 ns quantum within the smallest link latency, or that latency", () => {
    expect(windowFor(200_000)).toBe(200_000);
    expect(windowFor(650_000)).toBe(600_000);
    expect(windowFor(150_000)).toBe(150_000);
    expect(windowFor(1_000_000, 300_000)).toBe(900_000);
    const topo = leafSpine({ devices: 2, ports: 1, planes: 1, leaves: 1, spines: 1, hostLink: { latencyPs: 450_000 }, fabricLink: { latencyPs: 1_000_000 } });
    expect(new ClusterRunner(new Fabric(coreModule(), topo), [0, 1].map(() => idle())).windowPs).toBe(400_000);
    expect(() => new ClusterRunner(new Fabric(coreModule(), topo), [0, 1].map(() => idle()), { windowPs: 500_000 })).toThrow(/windowPs/);
  });

  it("step endpoints only to window ends and deliver every arrival before the endpoint runs past it", () => {
    const topo = leafSpine({ devices: 8, ports: 2, planes: 2, devicesPerLeaf: 2, spines: 2 });
    const flows = (d: number) => [0, 1].map((p) => ({ port: p, dstDevice: (d + 3) % 8, bytes: 40_000 + d * 1000, mtu: 1000 + 37 * d, udpSrcPort: d * 2 + p, startPs: d * 13_370 }));
    const { fabric, endpoints } = cluster(topo, flows);
    const probes = endpoints.map((e, d) => new Probe(d, e));
    const runner = new ClusterRunner(fabric, probes);
    expect(runner.windowPs).toBe(200_000);
    expect(runner.runUntilIdle()).toBe(true);
    expect(probes.flatMap((p) => p.violations)).toEqual([]);
    expect(probes.flatMap((p) => p.steps).every((t) => t % 200_000 === 0)).toBe(true);
    const sent = endpoints.reduce((a, e) => a + e.sentFrames, 0);
    expect(endpoints.reduce((a, e) => a + e.receivedFrames, 0)).toBe(sent);
    // idle endpoints are not stepped: device d sends for about (bytes / rate) and then only receives
    expect(runner.stats().steps).toBeLessThan(8 * runner.stats().windows);
  });
});

function idle(): Endpoint {
  return { stepTo() {}, nextActivityPs: () => Infinity, drainTx() {}, deliver() {} };
}

describe("payload modes", () => {
  /** Sends `n` frames of `len` payload bytes, byte j of frame i = (i + j) & 255, at 1 ns intervals. */
  class Patterned implements Endpoint {
    now = 0;
    sent = 0;
    got: { seq: number; hdr: number[]; payload: number[] }[] = [];
    constructor(readonly n: number, readonly len: number, readonly frames: Uint8Array[]) {}
    stepTo(t: number) { this.now = t; }
    nextActivityPs() { return this.sent < this.n ? this.sent * 100_000 : Infinity; }
    drainTx(sink: TxSink) {
      for (; this.sent < this.n && this.sent * 100_000 < this.now; this.sent++) {
        const f = this.frames[this.sent];
        if (this.sent & 1) {
          // odd frames from an odd offset: headers not word-aligned
          const u = new Uint8Array(f.length + 1);
          u.set(f, 1);
          sink.send(0, this.sent * 100_000, f.length, u, 1, 54, 55, f.length - 54);
        } else sink.send(0, this.sent * 100_000, f.length, f, 0, 54, 54, f.length - 54);
      }
    }
    deliver(b: ArrivalBatch) {
      for (let i = 0; i < b.n; i++)
        this.got.push({ seq: b.seq[i], hdr: Array.from(b.hdr.subarray(b.hdrOff[i], b.hdrOff[i] + b.hdrLen[i])), payload: Array.from(b.payload.subarray(b.payloadOff[i], b.payloadOff[i] + b.payloadLen[i])) });
    }
  }

  it("full: payload bytes travel with the frame and arrive intact (more frames in flight than the first payload slab holds)", async () => {
    const { buildFrame } = await import("../host/wire/rocev2.js");
    const { portAddress } = await import("../host/fabric/topology.js");
    const frames = Array.from({ length: 300 }, (_, i) => buildFrame({ opcode: 0x07, destQp: 5, psn: i, ipSrc: portAddress(0, 0), ipDst: portAddress(1, 0), payload: Uint8Array.from({ length: 2048 }, (_, j) => (i + j) & 255) }));
    for (const mode of ["full", "timing"] as const) {
      const topo = singleSwitch({ devices: 2, ports: 1, link: { latencyPs: 40_000_000 } });
      const tx = new Patterned(300, 2048, frames), rx = new Patterned(0, 0, []);
      new ClusterRunner(new Fabric(coreModule(), topo, { mode }), [tx, rx]).runUntilIdle();
      expect(rx.got.map((g) => g.seq)).toEqual(Array.from({ length: 300 }, (_, i) => i));
      for (const g of rx.got) {
        expect(g.hdr).toEqual(Array.from(frames[g.seq].subarray(0, 54)));
        expect(g.payload).toEqual(mode === "full" ? Array.from(frames[g.seq].subarray(54)) : []);
      }
    }
  });
});

describe("a device's arrivals on many ports", () => {
  // Device 0 sends 3 frames on each of its 64 ports to device 1 over one switch: every port's
  // frames reach device 1 at the same instants, so each instant's 64 arrivals are taken in
  // (source device, source port) order, and port by port in sequence.
  it("are taken in (arrival, source port, sequence) order, 64 ports at once", () => {
    const P = 64, K = 3;
    const topo = singleSwitch({ devices: 2, ports: P });
    const { endpoints, runner } = cluster(topo, (d) => (d === 0 ? Array.from({ length: P }, (_, port) => ({ port, dstDevice: 1, bytes: K * 1000, mtu: 1000, udpSrcPort: 0xc000 + port })) : []), { log: true });
    runner.runUntilIdle();
    const log = endpoints[1].log;
    expect(log.length).toBe(P * K);
    const times = [...new Set(log.map((a) => a.arrivalPs))];
    expect(times.length).toBe(K);
    expect(log.map((a) => [a.arrivalPs, a.srcPort, a.port, a.seq])).toEqual(
      Array.from({ length: P * K }, (_, j) => [times[Math.floor(j / P)], j % P, j % P, Math.floor(j / P)]));
  });
});
