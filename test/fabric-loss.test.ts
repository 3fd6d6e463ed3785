import { describe, it, expect } from "vitest";
import { singleSwitch, hostLink } from "../host/fabric/index.js";
import { cluster, serPs, frameLen } from "./helpers/fabric.js";

// Loss on a link, against probability theory. Device 0 sends N small frames to device 1
// through one switch; loss is set on device 0's link. The receiver's log gives the frame
// numbers that survived: a gap is a burst of consecutive losses.

function send(n: number, loss: Parameters<ReturnType<typeof cluster>["fabric"]["setLoss"]>[1], seed = 1) {
  const topo = singleSwitch({ devices: 2, ports: 1 });
  const c = cluster(topo, (d) => (d === 0 ? [{ port: 0, dstDevice: 1, bytes: n * 64, mtu: 64, udpSrcPort: 9 }] : []), { log: true, fabric: { seed } });
  c.fabric.setLoss(hostLink(topo, 0, 0), loss);
  c.runner.runUntilIdle();
  const got = c.endpoints[1].log.map((a) => a.seq);
  const bursts: number[] = [];
  let prev = -1;
  for (const s of [...got, n]) {
    if (s - prev > 1) bursts.push(s - prev - 1);
    prev = s;
  }
  return { ...c, topo, lost: n - got.length, bursts };
}

describe("random loss", () => {
  it("drops each frame with probability p: 5 % of 40,000 within 4.5 σ", () => {
    const N = 40_000, p = 0.05;
    const { fabric, topo, lost } = send(N, { random: p });
    // binomial: mean Np = 2000, σ = √(Np(1-p)) ≈ 43.6
    expect(Math.abs(lost - N * p)).toBeLessThan(4.5 * Math.sqrt(N * p * (1 - p)));
    const s = fabric.stats();
    expect(s.drops.random_loss).toBe(lost);
    expect(s.links[hostLink(topo, 0, 0)].ab.drops.random_loss).toBe(lost);
    // a lost frame was still sent: the link carried all N
    expect(s.links[hostLink(topo, 0, 0)].ab.packets).toBe(N);
  });

  it("is independent per seed and repeatable with one", () => {
    expect(send(5000, { random: 0.1 }, 3).lost).toBe(send(5000, { random: 0.1 }, 3).lost);
    expect(send(5000, { random: 0.1 }, 3).bursts).not.toEqual(send(5000, { random: 0.1 }, 4).bursts);
    expect(send(5000, { random: 0 }).lost).toBe(0);
    expect(send(500, { random: 1 }).lost).toBe(500);
  });
});

describe("Gilbert–Elliott loss", () => {
  it("loses bursts of mean length 1 / pBadToGood at the stationary rate pGB / (pGB + pBG)", () => {
    const N = 100_000, pGB = 0.01, pBG = 0.25;
    const { fabric, lost, bursts } = send(N, { gilbertElliott: { pGoodToBad: pGB, pBadToGood: pBG } });
    // lossBad 1, lossGood 0: a burst is one stay in the bad state, geometric with mean 1/pBG = 4
    // and σ = √(1 - pBG) / pBG ≈ 3.46; about N πB pBG ≈ 960 bursts, so the mean's σ ≈ 0.11
    const mean = bursts.reduce((a, b) => a + b, 0) / bursts.length;
    expect(bursts.length).toBeGreaterThan(800);
    expect(Math.abs(mean - 1 / pBG)).toBeLessThan((4.5 * Math.sqrt(1 - pBG)) / pBG / Math.sqrt(bursts.length));
    // P(burst of 1) = pBG
    const ones = bursts.filter((b) => b === 1).length / bursts.length;
    expect(Math.abs(ones - pBG)).toBeLessThan(4.5 * Math.sqrt((pBG * (1 - pBG)) / bursts.length));
    // stationary loss rate πB = 0.0385; losses are correlated (λ = 1 - pGB - pBG = 0.74), so
    // the rate's variance is πB(1 - πB)(1 + λ) / ((1 - λ) N): σ ≈ 0.0016
    const piB = pGB / (pGB + pBG), lambda = 1 - pGB - pBG;
    const sigma = Math.sqrt((piB * (1 - piB) * (1 + lambda)) / ((1 - lambda) * N));
    expect(Math.abs(lost / N - piB)).toBeLessThan(4.5 * sigma);
    expect(fabric.stats().drops.ge_loss).toBe(lost);
    expect(fabric.stats().drops.random_loss).toBe(0);
  });

  it("with lossGood and lossBad below 1 loses at πG lossGood + πB lossBad", () => {
    const N = 100_000, pGB = 0.05, pBG = 0.2, lossGood = 0.01, lossBad = 0.5;
    const { lost } = send(N, { gilbertElliott: { pGoodToBad: pGB, pBadToGood: pBG, lossGood, lossBad } });
    const piB = pGB / (pGB + pBG), rate = (1 - piB) * lossGood + piB * lossBad; // 0.108
    // losses k frames apart covary by (lossBad - lossGood)² πG πB λ^k, λ = 1 - pGB - pBG, so
    // Var(rate) = (r(1 - r) + 2 (lossBad - lossGood)² πG πB λ / (1 - λ)) / N: σ ≈ 0.0018
    const lambda = 1 - pGB - pBG, d = lossBad - lossGood;
    const sigma = Math.sqrt((rate * (1 - rate) + (2 * d * d * (1 - piB) * piB * lambda) / (1 - lambda)) / N);
    expect(Math.abs(lost / N - rate)).toBeLessThan(4.5 * sigma);
  });
});

describe("loss on a queue's link", () => {
  it("keeps the survivors in order and on the transmitter's clock: a frame lost as it starts still took its turn on the wire", () => {
    // devices 0 and 1 both send to device 2 at line rate: the switch's port to device 2 always has
    // a queue, so its transmissions run back to back, lost ones included, and every survivor
    // arrives a whole number of serialisation times after the first
    const topo = singleSwitch({ devices: 3, ports: 1 });
    const N = 3000, mtu = 64;
    const c = cluster(topo, (d) => (d < 2 ? [{ port: 0, dstDevice: 2, bytes: N * mtu, mtu, udpSrcPort: 9 + d }] : []), { log: true });
    const down = hostLink(topo, 2, 0);
    c.fabric.setLoss(down, { random: 0.2 });
    c.runner.runUntilIdle();
    const got = c.endpoints[2].log;
    const s = c.fabric.stats();
    const lost = s.links[down].ba.drops.random_loss;
    expect(lost).toBeGreaterThan(0.15 * 2 * N);
    expect(got.length + lost).toBe(2 * N);
    expect(s.links[down].ba.packets).toBe(2 * N);
    const ser = serPs(frameLen(mtu), topo.links[down]!.gbps);
    const steps = got.map((a) => (a.arrivalPs - got[0]!.arrivalPs) / ser);
    // whole turns, increasing, and the last survivor no later than the last of the 2N turns
    expect(steps.every((k) => Number.isInteger(k))).toBe(true);
    expect(steps.every((k, i) => i === 0 || k > steps[i - 1]!)).toBe(true);
    expect(steps[steps.length - 1]).toBeLessThan(2 * N);
    // each sender's survivors in its own order
    for (const d of [0, 1]) {
      const seqs = got.filter((a) => a.srcDevice === d).map((a) => a.seq);
      expect(seqs.every((q, i) => i === 0 || q > seqs[i - 1]!)).toBe(true);
    }
  });
});
