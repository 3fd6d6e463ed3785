import { describe, it, expect } from "vitest";
import { singleSwitch, hostLink } from "../host/fabric/index.js";
import { cluster, frameLen } from "./helpers/fabric.js";

// An 8-to-1 incast through one switch with a small shared buffer: devices 1..8 each send M
// frames at 800 Gb/s to device 0. The output port drains one sender's rate, so the queue grows
// at 7 × 100 B/ns and overflows 1.2 MB within 2 µs: drop-tail drops. With PFC each ingress
// pauses its sender at XOFF = 32 KB held and resumes it at XON = 16 KB. Lossless needs room
// for what arrives after XOFF is decided: the pause takes 200 ns to reach the sender, frames
// already sent take 200 ns on the wire and 400 ns in the switch, plus a frame being sent:
// 100 B/ns × 800 ns + 2 frames ≈ 82 KB per ingress, so 8 × (32 + 82) KB ≈ 912 KB < 1.2 MB.

const M = 500, W = frameLen(1000), BUFFER = 1_200_000;

function incast(pfc: boolean) {
  const topo = singleSwitch({ devices: 9, ports: 1 });
  const c = cluster(topo, (d) => (d > 0 ? [{ port: 0, dstDevice: 0, bytes: M * 1000, mtu: 1000, udpSrcPort: d }] : []), {
    log: true,
    fabric: { switch: { bufferBytesPerPort: BUFFER / 9, ecn: { enabled: false }, pfc: { enabled: pfc, xoffBytes: 32_000, xonBytes: 16_000 } } },
  });
  expect(c.runner.runUntilIdle()).toBe(true);
  return { ...c, topo };
}

describe("PFC", () => {
  it("is needed: without it the incast overflows the buffer and drops at the tail", () => {
    const { fabric, endpoints } = incast(false);
    const s = fabric.stats();
    expect(s.drops.buffer_full).toBeGreaterThan(1000);
    expect(endpoints[0].receivedFrames).toBe(8 * M - s.drops.buffer_full);
    expect(s.pfcPauses).toBe(0);
  });

  it("keeps the incast lossless: every frame arrives, senders are paused and resumed", () => {
    const { fabric, endpoints, topo } = incast(true);
    const s = fabric.stats();
    expect(s.drops).toMatchObject({ buffer_full: 0, port_cap: 0 });
    expect(endpoints[0].receivedFrames).toBe(8 * M);
    expect(s.switches[0].bufferPeakBytes).toBeLessThanOrEqual(BUFFER);
    expect(s.pfcPauses).toBeGreaterThan(8);
    // every pause was answered by a resume, and every sender was paused
    expect(s.pfcResumes).toBe(s.pfcPauses);
    for (let d = 1; d <= 8; d++) {
      const up = s.links[hostLink(topo, d, 0)].ab;
      expect(up.pauses).toBeGreaterThan(0);
      // a paused port holds its frames: they wait in the port's own queue
      expect(up.queuePeakBytes).toBeGreaterThan(10 * W);
    }
    // each sender's frames arrive, in order
    for (let d = 1; d <= 8; d++) expect(endpoints[0].log.filter((a) => a.srcDevice === d).map((a) => a.seq)).toEqual(Array.from({ length: M }, (_, i) => i));
  });
});
