import { describe, it, expect } from "vitest";
import { RandomStreams, probabilityThreshold, fmix32, hashTuple, ecmpPick, derive32 } from "../host/fabric/rng.js";
import { EventQueue } from "../host/fabric/events.js";
import { readFrame, markCe, newFrameFields, FRAME_OK, FRAME_NOT_IPV4, FRAME_TRUNCATED } from "../host/fabric/frame.js";
import { portAddress, addressPort, portMac, formatIpv4 } from "../host/fabric/topology.js";
import { buildFrame, ipv4Checksum } from "../host/wire/rocev2.js";
import { OP, IPV4_ECN } from "../host/generated/headers.js";

// The fabric's parts on their own: random streams, the ECMP hash, the frame reader and the
// CE mark, the addressing rule, the event queue.

/** Pearson's χ² of `counts` against a uniform expectation. */
function chiSquare(counts: number[]): number {
  const n = counts.reduce((a, b) => a + b, 0), e = n / counts.length;
  return counts.reduce((a, c) => a + ((c - e) * (c - e)) / e, 0);
}

// Upper 0.1 % points of χ² (NIST/SEMATECH tables): a correct generator exceeds them once in a
// thousand seeds; the seeds here are fixed, so a pass is stable, and a biased or correlated
// generator lands far above them.
const CHI2_999 = { 15: 37.70, 63: 103.44 } as const;

describe("random streams", () => {
  it("run xoshiro128**: state (1, 2, 3, 4) gives 11520, 0, 5927040, 70819200 (Blackman and Vigna's reference code, by hand)", () => {
    // by hand: result = rotl(s1 * 5, 7) * 9; state update s2 ^= s0, s3 ^= s1, s1 ^= s2, s0 ^= s3, s2 ^= s1_old << 9, s3 = rotl(s3, 11)
    const r = new RandomStreams(1);
    r.setState(0, [1, 2, 3, 4]);
    expect([r.next(0), r.next(0), r.next(0), r.next(0)]).toEqual([11520, 0, 5927040, 70819200]);
    r.setState(0, [0x9e3779b9, 0x7f4a7c15, 0xf39cc060, 0x5cedc834]);
    const a = Array.from({ length: 1000 }, () => r.next(0));
    expect(a).toEqual(reference([0x9e3779b9, 0x7f4a7c15, 0xf39cc060, 0x5cedc834], 1000));
  });

  it("are uniform (χ², 64 cells, 10^5 draws) and differ between streams and seeds", () => {
    const r = new RandomStreams(3);
    r.seed(0, 7, 1);
    r.seed(1, 7, 2);
    r.seed(2, 8, 1);
    const cells = new Array(64).fill(0);
    for (let i = 0; i < 100_000; i++) cells[r.next(0) >>> 26]++;
    expect(chiSquare(cells)).toBeLessThan(CHI2_999[63]);
    const a = [r.next(0), r.next(0)], b = [r.next(1), r.next(1)], c = [r.next(2), r.next(2)];
    expect(a).not.toEqual(b);
    expect(a).not.toEqual(c);
    const again = new RandomStreams(1);
    again.seed(0, 7, 1);
    for (let i = 0; i < 100_000; i++) again.next(0);
    expect([again.next(0), again.next(0)]).toEqual(a);
  });

  it("turn probabilities into thresholds out of 2^32", () => {
    expect(probabilityThreshold(0)).toBe(0);
    expect(probabilityThreshold(1)).toBe(2 ** 32);
    expect(probabilityThreshold(0.25)).toBe(2 ** 30);
  });
});

/** Reference xoshiro128** from the published C code, with BigInt and 32-bit masks. */
function reference(state: number[], n: number): number[] {
  const M = 0xffff_ffffn;
  const s = state.map(BigInt);
  const rotl = (x: bigint, k: bigint) => ((x << k) | (x >> (32n - k))) & M;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    out.push(Number((rotl((s[1] * 5n) & M, 7n) * 9n) & M));
    const t = (s[1] << 9n) & M;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 11n);
  }
  return out;
}

describe("the ECMP hash", () => {
  const src = portAddress(3, 1), dst = portAddress(40, 1);

  it("spreads 10,000 UDP source ports evenly over 16 members (χ², 15 degrees of freedom)", () => {
    const cells = new Array(16).fill(0);
    for (let sport = 0; sport < 10_000; sport++) cells[ecmpPick(hashTuple(src, dst, 0xc000 + sport, 4791, 17, 0), derive32(1, 5), 16)]++;
    expect(chiSquare(cells)).toBeLessThan(CHI2_999[15]);
  });

  it("makes two switches' choices independent (8 × 8 contingency table, χ² of uniform cells)", () => {
    const cells = new Array(64).fill(0);
    const s1 = derive32(1, 11), s2 = derive32(1, 12);
    for (let sport = 0; sport < 20_000; sport++) {
      const h = hashTuple(src, dst, sport, 4791, 17, 0);
      cells[ecmpPick(h, s1, 8) * 8 + ecmpPick(h, s2, 8)]++;
    }
    expect(chiSquare(cells)).toBeLessThan(CHI2_999[63]);
  });

  it("depends on every field of the tuple and is a pure function of it", () => {
    const h = hashTuple(src, dst, 1000, 4791, 17, 0);
    expect(hashTuple(src, dst, 1000, 4791, 17, 0)).toBe(h);
    for (const other of [hashTuple(src + 1, dst, 1000, 4791, 17, 0), hashTuple(src, dst + 1, 1000, 4791, 17, 0),
      hashTuple(src, dst, 1001, 4791, 17, 0), hashTuple(src, dst, 1000, 4792, 17, 0), hashTuple(src, dst, 1000, 4791, 6, 0)])
      expect(other).not.toBe(h);
    // fmix32 is MurmurHash3's finaliser: 0 stays 0, and one input bit flips about half the output
    expect(fmix32(0)).toBe(0);
    let flips = 0;
    for (let b = 0; b < 32; b++) flips += popcount(fmix32(0x1234_5678) ^ fmix32(0x1234_5678 ^ (1 << b)));
    expect(flips / 32).toBeGreaterThan(12);
    expect(flips / 32).toBeLessThan(20);
  });
});

const popcount = (x: number) => {
  let n = 0;
  for (x >>>= 0; x; x &= x - 1) n++;
  return n;
};

describe("frames", () => {
  it("give the addressing rule: port p of device d is 10.p.(d >> 8).(d & 255), MAC 02:00 + the address", () => {
    expect(formatIpv4(portAddress(0x1234, 5))).toBe("10.5.18.52");
    expect(formatIpv4(portAddress(7, 11))).toBe("10.11.0.7");
    expect(addressPort(portAddress(0xfffe, 255))).toEqual({ device: 0xfffe, port: 255 });
    expect(addressPort(0xc0a80001)).toBeNull();
    expect(portMac(0x1234, 5)).toBe(0x0200_0a05_1234);
  });

  it("read the 5-tuple and ECN of a RoCEv2 frame; refuse other EtherTypes and short frames", () => {
    const bytes = buildFrame({ opcode: OP.RC_WRITE_MIDDLE, destQp: 9, psn: 1, ipSrc: portAddress(1, 2), ipDst: portAddress(3, 2), udpSrcPort: 0xc123, ecn: IPV4_ECN.ECT1, payload: new Uint8Array(8) });
    const v = new DataView(bytes.buffer), f = newFrameFields();
    expect(readFrame(v, 0, 54, f)).toBe(FRAME_OK);
    expect(f).toEqual({ src: portAddress(1, 2), dst: portAddress(3, 2), proto: 17, sport: 0xc123, dport: 4791, ecn: IPV4_ECN.ECT1 });
    expect(readFrame(v, 0, 40, f)).toBe(FRAME_TRUNCATED);
    const arp = bytes.slice();
    arp[12] = 0x08; arp[13] = 0x06;
    expect(readFrame(new DataView(arp.buffer), 0, 54, f)).toBe(FRAME_NOT_IPV4);
  });

  it("mark CE with the IPv4 checksum updated incrementally (RFC 1624), equal to a full recomputation", () => {
    let x = 12345;
    const rnd = (n: number) => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) % n;
    for (let k = 0; k < 2000; k++) {
      const bytes = buildFrame({
        opcode: OP.RC_WRITE_MIDDLE, destQp: rnd(1 << 24), psn: rnd(1 << 24), ipSrc: rnd(2 ** 32), ipDst: rnd(2 ** 32),
        dscp: rnd(64), ecn: k & 1 ? IPV4_ECN.ECT0 : IPV4_ECN.ECT1, ttl: rnd(256), ipId: rnd(65536), payload: new Uint8Array(4),
      });
      markCe(new DataView(bytes.buffer), 0);
      expect(bytes[15] & 3).toBe(IPV4_ECN.CE);
      const stored = (bytes[24] << 8) | bytes[25];
      bytes[24] = bytes[25] = 0;
      expect(stored).toBe(ipv4Checksum(bytes, 14, 20));
    }
  });
});

describe("the event queue", () => {
  it("pops in (time, key) order whatever the mix: equal times, explicit keys, far-future events, width changes", () => {
    const q = new EventQueue(1_000_000);
    // the reference: events kept sorted by (time, key) with a binary-search insert
    const ref: { t: number; k: number; e: number }[] = [];
    const insert = (o: { t: number; k: number; e: number }) => {
      let lo = 0, hi = ref.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (ref[mid].t < o.t || (ref[mid].t === o.t && ref[mid].k < o.k)) lo = mid + 1;
        else hi = mid;
      }
      ref.splice(lo, 0, o);
    };
    let x = 99, seq = 0, now = 0, ev = 0;
    const rnd = (n: number) => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) % n;
    const popped: number[] = [], expected: number[] = [];
    for (let step = 0; step < 200_000; step++) {
      const r = rnd(100);
      if (r < 55 || ref.length === 0) {
        // near future (often the same ps), sometimes far beyond the ring, sometimes keyed below 0
        const t = now + (rnd(4) === 0 ? 0 : rnd(3) === 0 ? rnd(50_000_000) : rnd(2_000_000));
        const keyed = rnd(5) === 0;
        const k = keyed ? -(2 ** 52) + rnd(1 << 20) * 1024 + step % 1024 : seq;
        if (keyed) q.pushKeyed(t, k, ev);
        else q.push(t, ev);
        if (!keyed) seq++;
        insert({ t, k, e: ev++ });
      } else {
        const limit = now + rnd(3_000_000);
        const got = q.popBefore(limit);
        if (ref[0].t < limit) {
          const want = ref.shift()!;
          expected.push(want.e);
          popped.push(got);
          expect(q.lastTime).toBe(want.t);
          now = want.t;
        } else {
          expect(got).toBe(-1);
          now = limit;
        }
      }
      if (step % 1000 === 0) expect(q.size).toBe(ref.length);
    }
    expect(popped).toEqual(expected);
    expect(q.nextTime()).toBe(ref[0]?.t ?? Infinity);
  });
});
