import { describe, it, expect } from "vitest";
import { leafSpine, hostLink, fabricLink, portAddress, type SyntheticFlow } from "../host/fabric/index.js";
import { derive32, streamId, STREAM } from "../host/fabric/rng.js";
import { ecmpPick, hashTuple } from "./helpers/fabric-core.js";
import { cluster, serPs, frameLen } from "./helpers/fabric.js";

// Link and plane failures: frames sent on a down link, queued for it, or on the wire when it
// fails are lost; switches leave a failed uplink out of ECMP once they know (after the
// failure detection delay), so traffic re-hashes over the survivors; all of it returns when
// the link recovers.

const W = frameLen(1000), SER = serPs(W, 800);

describe("a plane that fails at T and recovers at T2", () => {
  it("loses exactly the frames it carried or was sent in between; the other plane loses none", () => {
    // devices 0,1 under leaf 0 and 2,3 under leaf 1 of each plane; port p on plane p
    const topo = leafSpine({ devices: 4, ports: 2, planes: 2, devicesPerLeaf: 2, spines: 2 });
    const N = 1849; // 20 µs of frames at line rate, one every SER = 10.82 ns
    const flows = (d: number): SyntheticFlow[] => (d === 0 ? [0, 1].map((p) => ({ port: p, dstDevice: 2, bytes: N * 1000, mtu: 1000, udpSrcPort: 40 + p })) : []);
    const { fabric, endpoints, runner } = cluster(topo, flows, { log: true });
    const T = 5_000_000, T2 = 12_000_000;
    fabric.failPlane(1, T, T2);
    runner.runTo(T - 200_000);
    expect([fabric.portIsUp(0, 1), fabric.portIsUp(0, 0)]).toEqual([true, true]);
    runner.runTo(T + 200_000);
    expect([fabric.portIsUp(0, 1), fabric.portIsUp(0, 0)]).toEqual([false, true]);
    runner.runUntilIdle();
    expect(fabric.portIsUp(0, 1)).toBe(true);

    // frame i leaves at i·SER and, crossing 4 links at 800 Gb/s (200, 600, 600, 200 ns) and
    // 3 switches (400 ns each), has arrived at i·SER + D; it survives if it arrived before T,
    // or if it left at T2 or later (every link of the plane is up again then)
    const D = 4 * SER + 2 * 200_000 + 2 * 600_000 + 3 * 400_000;
    const before = Math.ceil((T - D) / SER), after = N - Math.ceil(T2 / SER);
    expect([before, after]).toEqual([200, 739]);
    const got = (port: number) => endpoints[2].log.filter((a) => a.port === port).map((a) => a.seq);
    expect(got(0)).toEqual(Array.from({ length: N }, (_, i) => i));
    expect(got(1)).toEqual([...Array.from({ length: before }, (_, i) => i), ...Array.from({ length: after }, (_, i) => N - after + i)]);
    const s = fabric.stats();
    // frames sent into the plane while it was down die at the port (link_down); frames inside
    // a switch when it failed find no uplink (no_route); nothing else is lost
    const lost = N - before - after;
    expect(s.drops.link_down + s.drops.no_route).toBe(lost);
    // at device 0's port: frames on its wire at T (their last bit due after T) and those sent until T2
    expect(s.links[hostLink(topo, 0, 1)].ab.drops.link_down).toBe(Math.ceil(T2 / SER) - Math.ceil((T - SER - 200_000) / SER));
    expect(s.drops).toMatchObject({ buffer_full: 0, port_cap: 0, random_loss: 0, ge_loss: 0, bad_frame: 0 });
    expect(s.links.filter((l) => l.name.startsWith("dev") && l.name.includes("port0")).every((l) => l.ab.drops.link_down + l.ba.drops.link_down === 0)).toBe(true);
  });
});

describe("an uplink that fails", () => {
  // one plane, leaves 0 and 1, 4 spines; device 0 (leaf 0) sends to device 1 (leaf 1) on 3
  // ports at line rate for 21.6 µs, each port spraying its frames over 16 UDP source ports
  const SPINES = 4, PORTS = 3, FRAMES = 2000, PATHS = 16;
  const topo = leafSpine({ devices: 2, ports: PORTS, planes: 1, devicesPerLeaf: 1, spines: SPINES });
  const udp = (port: number, seq: number) => 1000 + PATHS * port + (seq % PATHS);
  const flows = (d: number): SyntheticFlow[] => (d === 0 ? Array.from({ length: PORTS }, (_, p) => ({ port: p, dstDevice: 1, bytes: FRAMES * 1000, mtu: 1000, udpSrcPort: udp(p, 0), paths: PATHS })) : []);
  const up = (s: ReturnType<ReturnType<typeof cluster>["fabric"]["stats"]>) => Array.from({ length: SPINES }, (_, j) => s.links[fabricLink(topo, 0, 0, j)].ab.packets);
  const J = 2, LINK = fabricLink(topo, 0, 0, J);

  function run(detectPs: number, T: number, T2: number) {
    const c = cluster(topo, flows, { fabric: { failureDetectionPs: detectPs } });
    c.fabric.failLink(LINK, T, T2);
    return c;
  }

  it("is left out of ECMP at once (detection 0): only frames on it or queued for it are lost", () => {
    const T = 5_001_234, T2 = 100_000_000;
    const { fabric, endpoints, runner } = run(0, T, T2);
    runner.runTo(T);
    const atT = up(fabric.stats());
    expect(atT.every((n) => n > 100)).toBe(true);
    runner.runUntilIdle();
    const s = fabric.stats();
    // nothing was sent on the failed uplink after T; the others took its share
    expect(up(s)[J]).toBe(atT[J]);
    const lost = PORTS * FRAMES - endpoints[1].receivedFrames;
    expect(s.drops.link_down).toBe(lost);
    expect(s.links[LINK].ab.drops.link_down + s.links[LINK].ba.drops.link_down).toBe(lost);
    expect(lost).toBeGreaterThan(0);
    // what one link can hold: frames on its wire (600 ns / 10.82 ns ≈ 56) and queued at leaf 0
    expect(lost).toBeLessThanOrEqual(Math.ceil((600_000 + SER) / SER) + s.links[LINK].ab.queuePeakBytes / W);
  });

  it("with a detection delay, loses exactly the frames hashed to it until the switches know", () => {
    const T = 5_001_234, DETECT = 1_000_000, T2 = 100_000_000;
    const slow = run(DETECT, T, T2), fast = run(0, T, T2);
    slow.runner.runTo(T + DETECT + 1_200_000);
    const lostThen = slow.fabric.stats().drops.link_down;
    slow.runner.runUntilIdle();
    fast.runner.runUntilIdle();
    expect(slow.fabric.stats().drops.link_down).toBe(lostThen);
    // By hand: frame i of port p reaches leaf 0's output queues at i·SER + SER + 200 ns + 400 ns.
    // Those that reach them in (T, T + DETECT] and whose tuple leaf 0 hashes (its seed: seed 1,
    // switch 0) to spine J of 4 are dropped there; with instant detection they go to another
    // spine. Everything else is the same in both runs.
    const seed = derive32(1, streamId(STREAM.SWITCH_ECMP, 0));
    let hashedToJ = 0;
    for (let p = 0; p < PORTS; p++)
      for (let i = 0; i < FRAMES; i++) {
        const at = i * SER + SER + 600_000;
        if (at <= T || at > T + DETECT) continue;
        if (ecmpPick(hashTuple(portAddress(0, p), portAddress(1, p), udp(p, i), 4791, 17), seed, SPINES) === J) hashedToJ++;
      }
    expect(hashedToJ).toBeGreaterThan(50); // about a quarter of 3 × 92 frames per µs
    expect(lostThen - fast.fabric.stats().drops.link_down).toBe(hashedToJ);
  });

  it("carries traffic again once it recovers (and is known to)", () => {
    const T = 2_000_000, T2 = 6_000_000, DETECT = 400_000;
    const { fabric, endpoints, runner } = run(DETECT, T, T2);
    runner.runTo(T2 + DETECT);
    const atKnown = up(fabric.stats())[J];
    runner.runUntilIdle();
    expect(up(fabric.stats())[J]).toBeGreaterThan(atKnown + 300);
    expect(fabric.linkIsUp(LINK)).toBe(true);
    expect(endpoints[1].receivedFrames + fabric.stats().drops.link_down).toBe(PORTS * FRAMES);
  });
});
