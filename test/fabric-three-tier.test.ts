import { describe, it, expect } from "vitest";
import { fatTree, threeTier, leafSpine, hostLink, fabricLink, superLink, superSpineId, type SyntheticFlow, type Topology } from "../host/fabric/index.js";
import { cluster, serPs, frameLen } from "./helpers/fabric.js";

// Three tiers: pods of leaves and spines, and a group of super-spines per spine index. A frame
// goes up to the lowest tier that reaches its destination and down again; ECMP picks among the
// next hops that still reach it, so a failure above a spine steers its pod's leaves away from
// that spine for the pods it no longer reaches, and only for those.

type Stats = ReturnType<ReturnType<typeof cluster>["fabric"]["stats"]>;

describe("the shape of a fat tree", () => {
  it("k = 4 holds 16 devices in 4 pods: 8 leaves, 8 spines, 4 super-spines, 48 links", () => {
    const t = fatTree({ devices: 16, ports: 1, planes: 1, k: 4 });
    expect([t.pods, t.leavesPerPod, t.spinesPerPod, t.superSpinesPerGroup]).toEqual([4, 2, 2, 2]);
    expect(t.switches.map((s) => s.role).join(",")).toBe(["leaf", "spine", "super-spine"].map((r, i) => Array(i === 2 ? 4 : 8).fill(r).join(",")).join(","));
    expect(t.links.length).toBe(48);
    expect(t.links.filter((l) => l.tier === "fabric").length).toBe(32);
    // device 5 is under leaf 2 of the plane: leaf 0 of pod 1
    expect(t.links[hostLink(t, 5, 0)].name).toBe("dev5.port0-p0.pod1.leaf0");
    expect(t.links[fabricLink(t, 0, 3, 1)].name).toBe("p0.pod1.leaf1-p0.pod1.spine1");
    // spine 1 of pod 1 is spine 3 of the plane; it links to group 1's two super-spines
    expect(t.links[superLink(t, 0, 3, 0)].name).toBe("p0.pod1.spine1-p0.super1.0");
    expect(t.switches[superSpineId(t, 0, 1, 1)].name).toBe("p0.super1.1");
    // every switch has k ports in use but the leaves' and spines' of the last pods when devices run short
    const ports = new Map<number, number>();
    for (const l of t.links) for (const s of [l.aSwitch, l.bSwitch]) if (s >= 0) ports.set(s, (ports.get(s) ?? 0) + 1);
    expect([...ports.values()].every((n) => n === 4)).toBe(true);
  });

  it("refuses more devices than k³/4 and an odd k", () => {
    expect(() => fatTree({ devices: 17, ports: 1, planes: 1, k: 4 })).toThrow("devices: a 4-ary fat tree holds at most k³/4 = 16 devices, got 17");
    expect(() => fatTree({ devices: 2, ports: 1, planes: 1, k: 5 })).toThrow("k: must be even, got 5");
    expect(() => threeTier({ devices: 64, ports: 1, planes: 1, devicesPerLeaf: 4, leavesPerPod: 4, spinesPerPod: 2, superSpines: 2, pods: 3 })).toThrow("pods: must be an integer in [4, 4096], got 3");
  });
});

describe("a frame's path", () => {
  // one frame each, at 800 Gb/s everywhere; host links 200 ns, leaf-spine 600 ns, spine-super 1.1 µs, switches 400 ns
  const t = fatTree({ devices: 16, ports: 1, planes: 1, k: 4 });
  const W = frameLen(1000), SER = serPs(W, 800);
  const arrival = (dst: number) => {
    const { fabric, endpoints, runner } = cluster(t, (d) => (d === 0 ? [{ port: 0, dstDevice: dst, bytes: 1000, udpSrcPort: 7 }] : []), { log: true });
    runner.runUntilIdle();
    return { at: endpoints[dst].log.map((a) => a.arrivalPs), hops: fabric.stats().hops };
  };

  it("under the same leaf: 2 links, 1 switch", () => {
    expect(arrival(1)).toEqual({ at: [2 * SER + 2 * 200_000 + 400_000], hops: 2 });
  });
  it("in the same pod: up to a spine and down, 4 links, 3 switches", () => {
    expect(arrival(2)).toEqual({ at: [4 * SER + 2 * 200_000 + 2 * 600_000 + 3 * 400_000], hops: 4 });
  });
  it("in another pod: up to a super-spine and down, 6 links, 5 switches", () => {
    expect(arrival(13)).toEqual({ at: [6 * SER + 2 * 200_000 + 2 * 600_000 + 2 * 1_100_000 + 5 * 400_000], hops: 6 });
  });
});

describe("ECMP over three tiers", () => {
  // k = 8: 4 devices per leaf, 4 leaves and 4 spines per pod, 4 super-spines per group; 16
  // paths from a leaf to another pod. 8 devices: one pod, leaves 0 and 1.
  const t = fatTree({ devices: 8, ports: 1, planes: 1, k: 8 });
  const up = (s: Stats, spine: number) => Array.from({ length: 4 }, (_, z) => s.links[superLink(t, 0, spine, z)].ab.packets);

  it("spreads 8,000 one-frame flows evenly over the 16 super-spines (χ², 15 degrees of freedom)", () => {
    // 32 devices: pod 0 holds 0..15, pod 1 16..31
    const t2 = fatTree({ devices: 32, ports: 1, planes: 1, k: 8 });
    const { fabric, endpoints, runner } = cluster(t2, (d) => (d === 0 ? Array.from({ length: 8000 }, (_, i) => ({ port: 0, dstDevice: 16, bytes: 1000, udpSrcPort: i })) : []));
    runner.runUntilIdle();
    expect(endpoints[16].receivedFrames).toBe(8000);
    const s = fabric.stats();
    const n = Array.from({ length: 4 }, (_, j) => Array.from({ length: 4 }, (_, z) => s.links[superLink(t2, 0, j, z)].ab.packets)).flat();
    expect(n.reduce((a, b) => a + b, 0)).toBe(8000);
    const chi2 = n.reduce((a, c) => a + (c - 500) ** 2 / 500, 0);
    // upper 0.1 % point of χ² with 15 degrees of freedom (NIST/SEMATECH table): 37.70
    expect(chi2).toBeLessThan(37.7);
    // each super-spine sends down to pod 1's spine of its group what it got from pod 0's (pod 1 is spines 4..7 of the plane)
    const down = Array.from({ length: 4 }, (_, j) => Array.from({ length: 4 }, (_, z) => s.links[superLink(t2, 0, 4 + j, z)].ba.packets)).flat();
    expect(down).toEqual(n);
    // a channel's counters alone, as stats() gives them
    expect(s.links.flatMap((l) => [l.ab, l.ba]).map((c, i) => fabric.channelSent(i))).toEqual(s.links.flatMap((l) => [l.ab, l.ba]).map((c) => ({ packets: c.packets, bytes: c.bytes })));
    expect(() => fabric.channelSent(2 * s.links.length)).toThrow(`no channel ${2 * s.links.length} in the fabric (it has ${2 * s.links.length})`);
  });

  it("keeps frames between pods off the super-spines when they stay in a pod", () => {
    const { fabric, endpoints, runner } = cluster(t, (d) => (d === 0 ? Array.from({ length: 400 }, (_, i) => ({ port: 0, dstDevice: 4, bytes: 1000, udpSrcPort: i })) : []));
    runner.runUntilIdle();
    expect(endpoints[4].receivedFrames).toBe(400);
    const s = fabric.stats();
    expect([0, 1, 2, 3].flatMap((j) => up(s, j)).reduce((a, b) => a + b, 0)).toBe(0);
    expect(s.hops).toBe(4 * 400);
  });
});

describe("failures above a spine", () => {
  // k = 4, 16 devices: spine j of every pod links to super-spines j.0 and j.1
  const t = fatTree({ devices: 16, ports: 1, planes: 1, k: 4 });
  const FLOWS = 2000;
  const run = (topo: Topology, dsts: number[], fail: number[]) => {
    const flows = (d: number): SyntheticFlow[] => (d === 0 ? Array.from({ length: FLOWS }, (_, i) => ({ port: 0, dstDevice: dsts[i % dsts.length], bytes: 1000, udpSrcPort: i, startPs: 1_000_000 })) : []);
    const c = cluster(topo, flows);
    for (const l of fail) c.fabric.failLink(l, 0);
    c.runner.runUntilIdle();
    return { s: c.fabric.stats(), got: dsts.map((d) => c.endpoints[d].receivedFrames) };
  };
  const toSpine = (s: Stats, j: number) => s.links[fabricLink(t, 0, 0, j)].ab.packets;

  it("pod 1's spine 0 cut off from its super-spines: pod 0's leaf sends pod 1's frames by spine 1 only, its own pod's by both", () => {
    const cut = [superLink(t, 0, 2, 0), superLink(t, 0, 2, 1)]; // pod 1's spine 0 is spine 2 of the plane
    const far = run(t, [4], cut);
    expect(far.got).toEqual([FLOWS]);
    expect(far.s.drops.no_route + far.s.drops.link_down).toBe(0);
    expect([toSpine(far.s, 0), toSpine(far.s, 1)]).toEqual([0, FLOWS]);
    const near = run(t, [2], cut);
    expect(near.got).toEqual([FLOWS]);
    expect(toSpine(near.s, 0)).toBeGreaterThan(FLOWS / 2 - 150);
    expect(toSpine(near.s, 0)).toBeLessThan(FLOWS / 2 + 150);
    // and to pod 2, which spine 0 still reaches, both spines again
    const other = run(t, [8], cut);
    expect(other.got).toEqual([FLOWS]);
    expect(Math.min(toSpine(other.s, 0), toSpine(other.s, 1))).toBeGreaterThan(FLOWS / 2 - 150);
  });

  it("one super-spine link down: the spine sends everything by the other super-spine of its group", () => {
    const s = run(t, [4], [superLink(t, 0, 0, 0)]).s;
    const a = s.links[superLink(t, 0, 0, 0)].ab.packets, b = s.links[superLink(t, 0, 0, 1)].ab.packets;
    expect([a, b]).toEqual([0, toSpine(s, 0)]);
    expect(toSpine(s, 0)).toBeGreaterThan(FLOWS / 2 - 150);
    expect(s.drops.no_route + s.drops.link_down).toBe(0);
  });

  it("every link above pod 1 down: frames for it are dropped at pod 0's leaf as no_route", () => {
    const s = run(t, [4], [superLink(t, 0, 2, 0), superLink(t, 0, 2, 1), superLink(t, 0, 3, 0), superLink(t, 0, 3, 1)]).s;
    expect(s.drops.no_route).toBe(FLOWS);
    expect(s.switches.find((x) => x.name === "p0.pod0.leaf0")!.drops.no_route).toBe(FLOWS);
  });
});

describe("oversubscription", () => {
  // 32 devices in 2 pods of 2 leaves of 8 devices; each device of pod 0 sends 400 KB to its
  // peer in pod 1, sprayed over 64 paths. With 8 spines per pod (and 8 super-spines per group)
  // the leaves are not oversubscribed; with 4, 2:1, and the transfer takes twice as long.
  const finish = (spines: number, supers: number) => {
    const t = threeTier({ devices: 32, ports: 1, planes: 1, devicesPerLeaf: 8, leavesPerPod: 2, spinesPerPod: spines, superSpines: supers });
    const flows = (d: number): SyntheticFlow[] => (d < 16 ? [{ port: 0, dstDevice: d + 16, bytes: 400_000, mtu: 4000, udpSrcPort: 100 * d, paths: 64 }] : []);
    const { fabric, endpoints, runner } = cluster(t, flows, { log: true });
    runner.runUntilIdle();
    expect(fabric.stats().drops.buffer_full + fabric.stats().drops.no_route).toBe(0);
    // from the first frame's arrival to the last's: the transfer, without the path's latency
    const rx = endpoints.slice(16);
    return Math.max(...rx.map((e) => e.log[e.log.length - 1].arrivalPs)) - Math.min(...rx.map((e) => e.log[0].arrivalPs));
  };

  it("2:1 at the leaves takes twice as long as 1:1", () => {
    const full = finish(8, 8), half = finish(4, 8);
    // 100 frames of 4,000 bytes at 800 Gb/s are 4.08 µs of serialisation: 1:1 takes at most a
    // quarter more (sprayed frames still meet in the spines' queues); measured 4.78 and 9.10 µs
    expect(full).toBeLessThan(1.25 * 100 * serPs(frameLen(4000), 800));
    expect(half / full).toBeGreaterThan(1.6);
    expect(half / full).toBeLessThan(2.2);
  });

  it("2:1 at the spines (4 leaves' worth down, 2 super-spines up) too", () => {
    // with leaves of 8 devices and 8 spines, the spine has 2 leaves down; 1 super-spine per group halves what goes up
    const full = finish(8, 2), half = finish(8, 1); // measured 4.98 and 8.94 µs
    expect(half / full).toBeGreaterThan(1.6);
    expect(half / full).toBeLessThan(2.2);
  });
});

describe("two tiers are the three-tier code with one pod", () => {
  it("a leaf/spine routes as before: 4 hops between leaves, ECMP over its spines", () => {
    const t = leafSpine({ devices: 2, ports: 1, planes: 1, devicesPerLeaf: 1, spines: 4 });
    expect([t.pods, t.superSpinesPerGroup, t.superLinkOf.length]).toEqual([1, 0, 0]);
    const { fabric, runner } = cluster(t, (d) => (d === 0 ? Array.from({ length: 400 }, (_, i) => ({ port: 0, dstDevice: 1, bytes: 1000, udpSrcPort: i })) : []));
    runner.runUntilIdle();
    const s = fabric.stats();
    expect(s.hops).toBe(1600);
    expect(Array.from({ length: 4 }, (_, j) => s.links[fabricLink(t, 0, 0, j)].ab.packets).every((n) => n > 60)).toBe(true);
  });
});
