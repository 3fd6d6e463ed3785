// The parts of `menic serve` (docs/serve.md) one at a time, in this process: the frame ↔
// datagram mapping against every frame two cabled devices send (both transports: the rebuilt
// frame must be the sent one, byte for byte, or RoCEv2's ICRC and the MetaRoCE-like CRC would
// refuse it), the transport header lengths, the pacing on a clock the test moves, the addresses
// typed on the command line, and the relay's seeded losses.
import { describe, it, expect } from "vitest";
import { createSocket } from "node:dgram";
import { once } from "node:events";
import { connectedPair, settle, frameCopy } from "./helpers/cable.js";
import { FrameDatagrams, ArrivalBuilder, copyUdpPayload } from "../host/serve/datagram.js";
import { transportHeaderBytes } from "../host/wire/split.js";
import { Pacer, STEP_PS, MAX_LAG_NS } from "../host/serve/pacer.js";
import { parseUdpAddress, parseAddressList, parsePeer, PeerTable, AddressError } from "../host/serve/addresses.js";
import { Relay } from "../host/serve/relay.js";
import { OP, UDP_PORT, MRT, MRA_SIZE, MRH_SIZE, BTH_SIZE, RETH_SIZE } from "../host/generated/headers.js";

describe("a frame as a datagram and back", () => {
  for (const [name, config] of [["RoCEv2", {}], ["MetaRoCE-like", { transport: 1, mrtConnections: 2 }]] as const) {
    it(`gives back every frame a ${name} pair sends, byte for byte, from its UDP payload, source port and peer`, async () => {
      const frames: { from: number; bytes: Uint8Array; payload: Uint8Array; port: number; dst: number; src: number; dport: number }[] = [];
      const routes = new FrameDatagrams();
      const { net, a, b } = await connectedPair({ ports: 2, scaleUpPorts: 2, ...config }, undefined, {
        tap: (from, f) => {
          const r = routes.routeOf(f);
          expect(r).not.toBeNull();
          const payload = new Uint8Array(r!.bytes);
          copyUdpPayload(f, payload);
          frames.push({ from, bytes: frameCopy(f), payload, port: r!.port, dst: r!.dstDevice, src: r!.srcUdpPort, dport: r!.dstUdpPort });
        },
      });
      // WRITEs of sizes around the MTU (a last packet with pad), a SEND with immediate and a READ: every header the transports send
      const src = a.ctx.allocHostMemory(3 * 4096), dst = b.ctx.allocHostMemory(3 * 4096);
      a.ctx.write(src, Uint8Array.from({ length: 3 * 4096 }, (_, i) => (i * 7 + 1) & 0xff));
      const smr = a.ctx.regMr(a.pd, src, 3 * 4096, ["LOCAL_WRITE"]), dmr = b.ctx.regMr(b.pd, dst, 3 * 4096, ["REMOTE_WRITE", "REMOTE_READ", "LOCAL_WRITE"]);
      b.ctx.postRecv(b.qp, [{ wrId: 9, localAddr: dst, length: 4096, lkey: dmr.lkey }]);
      a.ctx.postSend(a.qp, [
        { wrId: 1, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: 2 * 4096 + 3, lkey: smr.lkey, remoteAddr: dst, rkey: dmr.rkey },
        { wrId: 2, opcode: "SEND_WITH_IMM", signaled: true, imm: 77, localAddr: src, length: 5, lkey: smr.lkey },
        { wrId: 3, opcode: "RDMA_READ", signaled: true, localAddr: src + 4096, length: 4097, lkey: smr.lkey, remoteAddr: dst, rkey: dmr.rkey },
      ]);
      expect(settle(net, a.ctx, a.cq, 3).map((c) => c.status)).toEqual(["SUCCESS", "SUCCESS", "SUCCESS"]);
      expect(frames.length).toBeGreaterThan(8);
      expect(new Set(frames.map((f) => f.from))).toEqual(new Set([0, 1]));
      const rebuilt = new ArrivalBuilder();
      for (const f of frames) {
        expect(f.dst).toBe(1 - f.from);
        const arr = rebuilt.rebuild(f.payload, f.from, f.dst, f.port, f.src, f.dport);
        expect(arr).not.toBeNull();
        const whole = new Uint8Array(arr!.hdrLen + f.payload.length - arr!.bodyAt);
        whole.set(arr!.hdr.subarray(0, arr!.hdrLen));
        whole.set(f.payload.subarray(arr!.bodyAt), arr!.hdrLen);
        expect(arr!.wireLen).toBe(f.bytes.length);
        expect(Buffer.from(whole).equals(Buffer.from(f.bytes))).toBe(true);
      }
      // another source port is another frame: RoCEv2's ICRC covers it (the rebuild keeps what it is told)
      const first = frames[0]!;
      const moved = rebuilt.rebuild(first.payload, first.from, first.dst, first.port, first.src ^ 1, first.dport)!;
      expect(Buffer.from(moved.hdr.subarray(0, 42)).equals(Buffer.from(first.bytes.subarray(0, 42)))).toBe(false);
    });
  }

  it("finds where the transport's headers end, or refuses a payload it cannot stage", () => {
    const roce = (op: number, len: number) => { const p = new Uint8Array(len); p[0] = op; return p; };
    expect(transportHeaderBytes(UDP_PORT.ROCEV2, roce(OP.RC_WRITE_FIRST, 4096 + 32))).toBe(BTH_SIZE + RETH_SIZE);
    expect(transportHeaderBytes(UDP_PORT.ROCEV2, roce(OP.RC_WRITE_MIDDLE, 4096 + 16))).toBe(BTH_SIZE);
    expect(transportHeaderBytes(UDP_PORT.ROCEV2, roce(OP.RC_WRITE_FIRST, BTH_SIZE + RETH_SIZE + 3))).toBeNull(); // no room for the ICRC
    expect(transportHeaderBytes(UDP_PORT.ROCEV2, roce(0xff, 64))).toBeNull(); // no such opcode
    expect(transportHeaderBytes(UDP_PORT.ROCEV2, new Uint8Array(0))).toBeNull();
    const mrt = (type: number, len: number) => { const p = new Uint8Array(len); p[0] = (MRT.VERSION << 4) | type; return p; };
    expect(transportHeaderBytes(MRT.UDP_PORT, mrt(MRT.TYPE_ACK, MRA_SIZE + 4))).toBe(MRA_SIZE);
    expect(transportHeaderBytes(MRT.UDP_PORT, mrt(MRT.TYPE_DATA, MRH_SIZE + 100))).toBe(MRH_SIZE);
    expect(transportHeaderBytes(MRT.UDP_PORT, mrt(MRT.TYPE_PROBE, MRH_SIZE + 3))).toBeNull();
    expect(transportHeaderBytes(MRT.UDP_PORT, mrt(0, 100))).toBeNull();
    expect(transportHeaderBytes(4793, mrt(MRT.TYPE_DATA, 100))).toBeNull();
  });
});

describe("pacing", () => {
  const MS = 1_000_000n; // ns
  it("wall: never runs past the wall's time × scale, steps through work, waits for the next event", () => {
    const p = new Pacer({ mode: "wall", scale: 0.001, idleMs: 20 }, 5n * MS);
    // 2 ms of wall time at 0.001: 2 µs of simulated time
    expect(p.targetPs(7n * MS)).toBe(2_000_000n);
    // work now: a step at a time, not past the wall
    expect(p.plan(0n, 0n, 7n * MS)).toEqual({ kind: "run", untilPs: STEP_PS });
    expect(p.plan(1_500_000n, 1_500_000n, 7n * MS)).toEqual({ kind: "run", untilPs: 2_000_000n });
    // work before the wall's time after an idle gap: jumps the gap
    expect(p.plan(0n, 1_900_000n, 7n * MS)).toEqual({ kind: "run", untilPs: 2_000_000n });
    // the next event after the wall's time: follow the wall, wait until it gets there (3 µs later: 3 ms)
    expect(p.plan(0n, 5_000_000n, 7n * MS)).toEqual({ kind: "wait", followPs: 2_000_000n, wallMs: 3 });
    // nothing will ever happen: wait for an arrival
    expect(p.plan(0n, null, 7n * MS)).toEqual({ kind: "wait", followPs: 2_000_000n, wallMs: Infinity });
    // a long wait stays a wait in wall mode
    expect(p.plan(2_000_000n, 102_000_000n, 7n * MS)).toMatchObject({ kind: "wait", wallMs: 100 });
  });

  it("fast: a wait longer than idleMs becomes a skip to the next event, and time goes on from there", () => {
    const p = new Pacer({ mode: "fast", scale: 0.001, idleMs: 20 }, 0n);
    const plan = p.plan(0n, 67_000_000_000n, 1n * MS); // a 67 ms transport timer: 67 s of wall at this scale
    expect(plan).toEqual({ kind: "wait", followPs: 1_000_000n, wallMs: 20, skipToPs: 67_000_000_000n });
    p.skip(67_000_000_000n, 21n * MS);
    expect(p.targetPs(21n * MS)).toBe(67_000_000_000n);
    expect(p.counts.skips).toBe(1);
    expect(p.counts.skippedPs).toBe(67_000_000_000n - 21_000_000n);
    // a short wait is not skipped
    expect(p.plan(67_000_000_000n, 67_005_000_000n, 21n * MS)).toEqual({ kind: "wait", followPs: 67_000_000_000n, wallMs: 5 });
  });

  it("gives up the time a device lost behind the wall rather than run it in a burst", () => {
    const p = new Pacer({ mode: "wall", scale: 1, idleMs: 20 }, 0n);
    const behind = 50n * MS; // 50 ms of wall at scale 1: 50 ms of simulated time
    const plan = p.plan(0n, 0n, behind);
    expect(plan).toEqual({ kind: "run", untilPs: STEP_PS });
    expect(p.targetPs(behind)).toBe(MAX_LAG_NS * 1000n);
    expect(p.counts.lagPs).toBe((behind - MAX_LAG_NS) * 1000n);
  });
});

describe("addresses", () => {
  it("reads host[:port] lists and peers, and says what is wrong with one that is not", () => {
    expect(parseUdpAddress("127.0.0.2", "--bind")).toEqual({ host: "127.0.0.2", base: 4791 });
    expect(parseUdpAddress("127.0.0.2:5791", "--bind")).toEqual({ host: "127.0.0.2", base: 5791 });
    expect(parseAddressList("127.0.0.1,127.0.1.1:6000", "--bind")).toEqual([{ host: "127.0.0.1", base: 4791 }, { host: "127.0.1.1", base: 6000 }]);
    expect(parsePeer("12=127.0.0.9")).toEqual({ device: 12, ports: [{ host: "127.0.0.9", base: 4791 }] });
    expect(() => parseUdpAddress("localhost", "--bind")).toThrow(/--bind: "localhost": "localhost" is not an IPv4 address/);
    expect(() => parseUdpAddress("127.0.0.300", "--bind")).toThrow(AddressError);
    expect(() => parseUdpAddress("127.0.0.1:65535", "--bind")).toThrow(/port "65535" must be a whole number 1\.\.65534/);
    expect(() => parsePeer("127.0.0.2")).toThrow(/want <device>=<host>/);
    expect(() => parsePeer("70000=127.0.0.2")).toThrow(/0\.\.65535/);
  });

  it("maps a device's ports to addresses and back, and refuses peers it could not tell apart", () => {
    const me = { device: 0, ports: [{ host: "127.0.0.1", base: 4791 }, { host: "127.0.1.1", base: 4791 }] };
    const t = new PeerTable(me, [{ device: 1, ports: [{ host: "127.0.0.2", base: 4791 }, { host: "127.0.1.2", base: 5000 }] }]);
    expect(t.addressOf(1, 1)).toEqual({ host: "127.0.1.2", base: 5000 });
    expect(t.addressOf(2, 0)).toBeUndefined();
    expect(t.deviceAt(0, "127.0.0.2")).toBe(1);
    expect(t.deviceAt(1, "127.0.0.2")).toBeUndefined(); // port 1 hears device 1 from its port-1 address only
    expect(t.deviceAt(0, "127.0.0.1")).toBeUndefined(); // its own address is nobody's
    const one = (host: string) => ({ device: 1, ports: [{ host, base: 4791 }, { host: "127.0.1.2", base: 4791 }] });
    expect(() => new PeerTable(me, [one("127.0.0.2"), { device: 2, ports: [{ host: "127.0.0.2", base: 4791 }, { host: "127.0.1.3", base: 4791 }] }])).toThrow(/--peer 2: port 0's address 127\.0\.0\.2 is already device 1's/);
    expect(() => new PeerTable(me, [one("127.0.0.1")])).toThrow(/already device 0's/);
    expect(() => new PeerTable(me, [{ device: 1, ports: [{ host: "127.0.0.2", base: 4791 }] }])).toThrow(/1 address for a device of 2 ports/);
    expect(() => new PeerTable(me, [one("127.0.0.2"), one("127.0.0.3")])).toThrow(/device 1 is named twice/);
    expect(() => new PeerTable(me, [{ device: 0, ports: me.ports }])).toThrow(/this device's own id/);
  });
});

describe("the relay", () => {
  /** Sends datagrams 0..n-1 from a socket at 127.0.4.1 through a relay (side a listens at 127.0.4.3) to 127.0.4.2; which numbers arrive. */
  async function through(seed: number, loss: number, n: number): Promise<{ got: number[]; relay: Relay }> {
    const relay = await Relay.start({
      a: { listen: { host: "127.0.4.3", base: 24791 }, device: { host: "127.0.4.1", base: 24791 } },
      b: { listen: { host: "127.0.4.4", base: 24791 }, device: { host: "127.0.4.2", base: 24791 } },
      loss, seed,
    });
    const rx = createSocket("udp4"), tx = createSocket("udp4");
    rx.bind(24791, "127.0.4.2");
    tx.bind(0xc123, "127.0.4.1");
    await Promise.all([once(rx, "listening"), once(tx, "listening")]);
    const got: number[] = [], from = new Set<string>();
    rx.on("message", (m, r) => { got.push(m.readUInt32BE(0)); from.add(`${r.address}:${r.port}`); });
    for (let i = 0; i < n; i++) {
      const m = Buffer.alloc(8);
      m.writeUInt32BE(i);
      tx.send(m, 24791, "127.0.4.3");
      if (i % 50 === 49) await new Promise((r) => setTimeout(r, 5)); // no burst the kernel would drop
    }
    while (got.length < relay.aToB.forwarded || relay.aToB.forwarded + relay.aToB.dropped < n) await new Promise((r) => setTimeout(r, 10));
    rx.close(); tx.close(); relay.close();
    // the other side of the relay, from the sender's own source port
    expect([...from]).toEqual(["127.0.4.4:49443"]);
    return { got, relay };
  }

  it("loses the same datagrams for the same seed and order, another set for another seed, about the fraction asked", async () => {
    const one = await through(42, 0.2, 400), again = await through(42, 0.2, 400), other = await through(43, 0.2, 400);
    expect(one.got).toEqual(again.got);
    expect(one.got).not.toEqual(other.got);
    expect(one.relay.aToB.dropped).toBe(400 - one.got.length);
    expect(one.got).toEqual([...one.got].sort((x, y) => x - y)); // order kept
    expect(one.relay.aToB.dropped).toBeGreaterThan(50);
    expect(one.relay.aToB.dropped).toBeLessThan(110);
  });
});
