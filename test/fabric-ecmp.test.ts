import { describe, it, expect } from "vitest";
import { leafSpine, fabricLink, hostLink, type SyntheticFlow } from "../host/fabric/index.js";
import { cluster } from "./helpers/fabric.js";

// Routing: a leaf sends a frame down to the port whose address it owns, else up to one of
// its spines chosen by the 5-tuple hash with the leaf's seed; a spine sends it down to the
// leaf owning the address. Planes share nothing.

const SPINES = 8;

/** Frames per spine that leaf 0 of plane 0 sent up. */
function perSpine(topo: ReturnType<typeof leafSpine>, stats: ReturnType<ReturnType<typeof cluster>["fabric"]["stats"]>): number[] {
  return Array.from({ length: SPINES }, (_, j) => stats.links[fabricLink(topo, 0, 0, j)].ab.packets);
}

describe("ECMP over the spines", () => {
  const topo = leafSpine({ devices: 2, ports: 1, planes: 1, devicesPerLeaf: 1, spines: SPINES });

  it("spreads 4,000 one-frame flows (UDP source ports 0..3999) evenly over 8 spines (χ², 7 degrees of freedom)", () => {
    const flows = (d: number): SyntheticFlow[] => (d === 0 ? Array.from({ length: 4000 }, (_, i) => ({ port: 0, dstDevice: 1, bytes: 1000, udpSrcPort: i })) : []);
    const { fabric, endpoints, runner } = cluster(topo, flows);
    runner.runUntilIdle();
    expect(endpoints[1].receivedFrames).toBe(4000);
    const n = perSpine(topo, fabric.stats());
    expect(n.reduce((a, b) => a + b, 0)).toBe(4000);
    const chi2 = n.reduce((a, c) => a + (c - 500) ** 2 / 500, 0);
    // upper 0.1 % point of χ² with 7 degrees of freedom (NIST/SEMATECH table): 24.32
    expect(chi2).toBeLessThan(24.32);
    // every spine sends what it got down to leaf 1
    const s = fabric.stats();
    expect(Array.from({ length: SPINES }, (_, j) => s.links[fabricLink(topo, 0, 1, j)].ba.packets)).toEqual(n);
  });

  it("keeps one tuple on one path, and the per-switch seed picks which", () => {
    const spineOf = (seed: number, udp: number) => {
      const { fabric, runner } = cluster(topo, (d) => (d === 0 ? [{ port: 0, dstDevice: 1, bytes: 50_000, mtu: 1000, udpSrcPort: udp }] : []), { fabric: { seed } });
      runner.runUntilIdle();
      const n = perSpine(topo, fabric.stats());
      expect(n.filter((x) => x > 0)).toEqual([50]);
      return n.indexOf(50);
    };
    const a = [0, 1, 2, 3, 4, 5].map((udp) => spineOf(1, udp));
    expect([0, 1, 2, 3, 4, 5].map((udp) => spineOf(1, udp))).toEqual(a);
    expect([0, 1, 2, 3, 4, 5].map((udp) => spineOf(2, udp))).not.toEqual(a);
  });
});

describe("addresses the fabric cannot reach", () => {
  it("are dropped as 'no_route': another plane's port, an address outside 10/8, an unconnected port", () => {
    // port 0 on plane 0, port 1 on plane 1, port 2 not connected
    const topo = leafSpine({ devices: 2, ports: 3, planes: 2, portPlane: [0, 1, -1], devicesPerLeaf: 1, spines: 1 });
    expect(hostLink(topo, 0, 2)).toBe(-1);
    const flows = (d: number): SyntheticFlow[] => (d === 0 ? [
      { port: 0, dstDevice: 1, dstPort: 1, bytes: 1000, udpSrcPort: 1 }, // plane 0 to a plane-1 address
      { port: 0, dstDevice: 1, dstPort: 0, bytes: 1000, udpSrcPort: 2 }, // reachable
      { port: 0, dstDevice: 7, dstPort: 0, bytes: 1000, udpSrcPort: 3 }, // no such device
      { port: 2, dstDevice: 1, dstPort: 0, bytes: 1000, udpSrcPort: 4 }, // from an unconnected port
    ] : []);
    const { fabric, endpoints, runner } = cluster(topo, flows);
    runner.runUntilIdle();
    expect(endpoints[1].receivedFrames).toBe(1);
    const s = fabric.stats();
    expect(s.drops.no_route).toBe(3);
    // two dropped at plane 0's leaf (counted on the channel they came in by), one at entry
    expect(s.switches.find((x) => x.name === "p0.leaf0")!.drops.no_route).toBe(2);
    expect(s.links[hostLink(topo, 0, 0)].ab.drops.no_route).toBe(2);
  });
});
