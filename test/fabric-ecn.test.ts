import { coreModule } from "../host/platform/node.js";
import { describe, it, expect } from "vitest";
import { singleSwitch, hostLink, ClusterRunner, Fabric, SyntheticEndpoint, type ArrivalBatch } from "../host/fabric/index.js";
import { ipv4Checksum } from "../host/wire/rocev2.js";
import { IPV4_ECN } from "../host/generated/headers.js";
import { frameLen } from "./helpers/fabric.js";

// ECN marking at enqueue, RED-style on the instantaneous output queue q (bytes waiting):
// never at q ≤ Kmin, always at q ≥ Kmax, with probability Pmax (q - Kmin) / (Kmax - Kmin)
// between. Two devices send K frames each at line rate into one port of a switch: the queue
// each frame finds is known by hand (test/fabric-timing.test.ts derives it): device 0's
// frame k finds k frames waiting, device 1's frame k finds k + 1 (both 0 for k = 0).

const K = 2000, W = frameLen(1000), KMIN = 100_000, KMAX = 1_000_000, PMAX = 0.2;
const prob = (q: number) => (q <= KMIN ? 0 : q >= KMAX ? 1 : (PMAX * (q - KMIN)) / (KMAX - KMIN));
const queueSeen = (src: number, k: number) => (k === 0 ? 0 : (k + src) * W);

/** A synthetic endpoint that also checks every arriving IPv4 header's checksum. */
class Checking extends SyntheticEndpoint {
  badChecksums = 0;
  override deliver(b: ArrivalBatch): void {
    for (let i = 0; i < b.n; i++) {
      const h = b.hdr.slice(b.hdrOff[i], b.hdrOff[i] + b.hdrLen[i]);
      const stored = (h[24] << 8) | h[25];
      h[24] = h[25] = 0;
      if (ipv4Checksum(h, 14, 20) !== stored) this.badChecksums++;
    }
    super.deliver(b);
  }
}

function run(ecn: number, seed = 1) {
  const topo = singleSwitch({ devices: 3, ports: 1 });
  const fabric = new Fabric(coreModule(), topo, { seed, switch: { ecn: { kminBytes: KMIN, kmaxBytes: KMAX, pmax: PMAX } } });
  const eps = [0, 1, 2].map((d) => new Checking({ device: d, ports: 1, log: true, flows: d < 2 ? [{ port: 0, dstDevice: 2, bytes: K * 1000, mtu: 1000, udpSrcPort: 7 + d, ecn }] : [] }));
  new ClusterRunner(fabric, eps).runUntilIdle();
  return { fabric, topo, sink: eps[2] };
}

describe("ECN marking", () => {
  it("marks ECT frames as Kmin, Kmax and Pmax say, within 4.5 σ of the expected count", () => {
    const { fabric, topo, sink } = run(IPV4_ECN.ECT0);
    expect(sink.log.length).toBe(2 * K);
    let expected = 0, variance = 0, ramp = 0, rampMarks = 0;
    for (const a of sink.log) {
      const q = queueSeen(a.srcDevice, a.seq), p = prob(q);
      const marked = a.ecn === IPV4_ECN.CE;
      if (p === 0) expect({ q, marked }).toEqual({ q, marked: false });
      else if (p === 1) expect({ q, marked }).toEqual({ q, marked: true });
      else {
        ramp++;
        rampMarks += +marked;
        expected += p;
        variance += p * (1 - p);
      }
      if (!marked) expect(a.ecn).toBe(IPV4_ECN.ECT0);
    }
    // about 1,700 frames meet the ramp, expecting ~170 marks (σ ≈ 12): marks are independent
    // Bernoulli draws, so the count is within 4.5 σ except with probability ~10^-5 (normal
    // approximation), and a slope or threshold off by a few per cent is far outside
    expect(ramp).toBeGreaterThan(1600);
    expect(Math.abs(rampMarks - expected)).toBeLessThan(4.5 * Math.sqrt(variance));
    const s = fabric.stats();
    expect(s.ecnMarks).toBe(sink.log.filter((a) => a.ecn === IPV4_ECN.CE).length);
    expect(s.links[hostLink(topo, 2, 0)].ba.ecnMarks).toBe(s.ecnMarks);
    expect(s.switches[0].ecnMarks).toBe(s.ecnMarks);
    // every marked header still has a valid checksum (RFC 1624 update)
    expect(sink.badChecksums).toBe(0);
  });

  it("marks ECT(1) the same way, never Not-ECT frames, and not at all with marking off", () => {
    expect(run(IPV4_ECN.ECT1).fabric.stats().ecnMarks).toBe(run(IPV4_ECN.ECT0).fabric.stats().ecnMarks);
    const plain = run(IPV4_ECN.NOT_ECT);
    expect(plain.fabric.stats().ecnMarks).toBe(0);
    expect(plain.sink.log.every((a) => a.ecn === IPV4_ECN.NOT_ECT)).toBe(true);
    const topo = singleSwitch({ devices: 3, ports: 1 });
    const fabric = new Fabric(coreModule(), topo, { switch: { ecn: { enabled: false, kminBytes: KMIN, kmaxBytes: KMAX, pmax: PMAX } } });
    const eps = [0, 1, 2].map((d) => new SyntheticEndpoint({ device: d, ports: 1, flows: d < 2 ? [{ port: 0, dstDevice: 2, bytes: K * 1000, mtu: 1000, udpSrcPort: 7 + d }] : [] }));
    new ClusterRunner(fabric, eps).runUntilIdle();
    expect(fabric.stats().ecnMarks).toBe(0);
  });

  it("draws from the scenario seed: another seed marks other frames", () => {
    const a = run(IPV4_ECN.ECT0, 1).sink.log.map((x) => x.ecn).join("");
    const b = run(IPV4_ECN.ECT0, 2).sink.log.map((x) => x.ecn).join("");
    expect(a).not.toBe(b);
    expect(run(IPV4_ECN.ECT0, 1).sink.log.map((x) => x.ecn).join("")).toBe(a);
  });
});
