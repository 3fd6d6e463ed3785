import { describe, it, expect } from "vitest";
import { leafSpine, hostLink, fabricLink, type SyntheticFlow } from "../host/fabric/index.js";
import { cluster } from "./helpers/fabric.js";

// Same seed, same results: every statistic and every arrival (time, source, sequence, port),
// whatever order the runner steps the devices in and whatever its window. A scenario with
// congestion, ECN, random and bursty loss and a failing link, so that the order in which
// frames meet at a picosecond, and every random draw, matter.

const DEVICES = 16;
const topo = leafSpine({ devices: DEVICES, ports: 2, planes: 2, devicesPerLeaf: 4, spines: 2 });

function scenario(seed: number, o: { stepOrder?: number[]; windowPs?: number; eager?: boolean; bufferBytesPerPort?: number } = {}) {
  const flows = (d: number): SyntheticFlow[] => [0, 1].flatMap((p) => [
    { port: p, dstDevice: (d * 5 + 3) % DEVICES, bytes: 200_000, mtu: 4096, udpSrcPort: 100 * d + p, paths: 4 },
    { port: p, dstDevice: (d + 1) % DEVICES, bytes: 60_000 + 1000 * d, mtu: 1500, udpSrcPort: 7000 + d, startPs: 1_000_000 + d * 777 },
  ]);
  // PFC that never pauses: frames enter the fabric by events at their departure, as they
  // must when a pause may hold the port (without PFC they go on the wire when handed over)
  const pfc = o.eager ? { enabled: true, xoffBytes: 1e12, xonBytes: 1e12 } : {};
  // device 5 hands frames over twice as fast as its links send them: they wait at its ports
  const c = cluster(topo, flows, { log: true, gbps: (d) => (d === 5 ? 1600 : 800), fabric: { seed, switch: { ecn: { kminBytes: 20_000, kmaxBytes: 200_000, pmax: 0.1 }, pfc, bufferBytesPerPort: o.bufferBytesPerPort, portCapBytes: o.bufferBytesPerPort ? 60_000 : Infinity } }, runner: { stepOrder: o.stepOrder, windowPs: o.windowPs } });
  c.fabric.setLoss(hostLink(topo, 3, 0), { random: 0.05 });
  c.fabric.setLoss(fabricLink(topo, 1, 2, 1), { gilbertElliott: { pGoodToBad: 0.02, pBadToGood: 0.3 } });
  c.fabric.failLink(fabricLink(topo, 0, 1, 0), 3_000_000, 6_000_000);
  // and one of its links fails while frames wait there, twice
  c.fabric.failLink(hostLink(topo, 5, 1), 1_234_567, 1_500_000);
  c.fabric.failLink(hostLink(topo, 5, 1), 2_000_000, 2_000_001);
  c.runner.runUntilIdle();
  return {
    stats: c.fabric.stats(),
    arrivals: c.endpoints.map((e) => e.log.map((a) => `${a.arrivalPs}/${a.srcDevice}.${a.srcPort}#${a.seq}@${a.port}:${a.ecn}`).join(" ")),
    digests: c.endpoints.map((e) => e.digest),
  };
}

describe("determinism", () => {
  const base = scenario(1);

  it("exercises what it should: congestion, marks, every kind of loss", () => {
    expect(base.stats.ecnMarks).toBeGreaterThan(0);
    expect(base.stats.drops.random_loss).toBeGreaterThan(0);
    expect(base.stats.drops.ge_loss).toBeGreaterThan(0);
    expect(base.stats.drops.link_down).toBeGreaterThan(0);
    expect(Math.max(...base.stats.switches.map((s) => s.queuePeakBytes))).toBeGreaterThan(50_000);
    // frames waited at device 5's ports, and some were flushed by its link's failures
    const port = base.stats.links[hostLink(topo, 5, 1)].ab;
    expect(port.queuePeakBytes).toBeGreaterThan(50_000);
    expect(port.drops.link_down).toBeGreaterThan(10);
  });

  it("gives identical statistics and arrivals for the same seed", () => {
    const again = scenario(1);
    expect(again.stats).toEqual(base.stats);
    expect(again.arrivals).toEqual(base.arrivals);
  });

  it("does not depend on the order devices are stepped in", () => {
    const reversed = scenario(1, { stepOrder: Array.from({ length: DEVICES }, (_, i) => DEVICES - 1 - i) });
    expect(reversed.stats).toEqual(base.stats);
    expect(reversed.arrivals).toEqual(base.arrivals);
    const shuffled = scenario(1, { stepOrder: Array.from({ length: DEVICES }, (_, i) => (i * 7) % DEVICES) });
    expect(shuffled.digests).toEqual(base.digests);
  });

  it("does not depend on the runner's window (only the pool's and the event queue's peaks do)", () => {
    const fine = scenario(1, { windowPs: 100_000 });
    // the run ends at the end of a window
    const strip = (s: typeof base.stats) => ({ ...s, packetsPeak: 0, eventsPeak: 0, nowPs: 0 });
    expect(strip(fine.stats)).toEqual(strip(base.stats));
    expect(fine.arrivals).toEqual(base.arrivals);
  });

  it("is the same whether frames enter by an event at their departure (PFC on) or when handed over", () => {
    const eager = scenario(1, { eager: true });
    // events and the peaks of pool and event queue are the engine's own; the rest is the model
    const strip = (s: typeof base.stats) => ({ ...s, packetsPeak: 0, eventsPeak: 0, events: 0 });
    expect(strip(eager.stats)).toEqual(strip(base.stats));
    expect(eager.arrivals).toEqual(base.arrivals);
    // an entry event per frame, and a transmitter-finished event per frame that waited at a port
    expect(eager.stats.events - base.stats.events).toBeGreaterThan(eager.stats.injected);
    // and with buffers small enough to drop at the tail
    const small = scenario(1, { bufferBytesPerPort: 12_000 }), smallEager = scenario(1, { bufferBytesPerPort: 12_000, eager: true });
    expect(small.stats.drops.buffer_full).toBeGreaterThan(50);
    expect(small.stats.drops.port_cap).toBeGreaterThan(20);
    expect(strip(smallEager.stats)).toEqual(strip(small.stats));
    expect(smallEager.arrivals).toEqual(small.arrivals);
  });

  it("changes with the seed", () => {
    const other = scenario(2);
    expect(other.digests).not.toEqual(base.digests);
    expect(other.arrivals).not.toEqual(base.arrivals);
  });
});
