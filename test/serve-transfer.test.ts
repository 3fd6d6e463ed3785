// Two `menic serve` processes on the loopback interface, joined through a relay that loses 1 %
// of their datagrams (host/serve/relay.ts, seeded), driven through their control channels from
// this process: 64 MiB of RDMA WRITEs (64 of 1 MiB), over RoCEv2 and over the MetaRoCE-like
// transport. Every work request completes exactly once with SUCCESS, the destination holds the
// source's bytes, the relay really lost datagrams and the transport really sent again. Time is
// paced with --pace fast at a scale that keeps the 800 Gb/s ports' offered load (20 MB/s of
// wall time) within what the sockets and the relay carry on a loaded machine: docs/serve.md,
// "Time". The limits are hang guards only.
import { describe, it, expect, afterAll } from "vitest";
import { Relay } from "../host/serve/relay.js";
import { spawnServe, connectServed, writeTransfer, quietStats, type Served } from "./helpers/serve.js";

const MiB = 1 << 20;
/** Addresses of this file alone: test files run side by side, and each device owns its address's 4791 and 4792. */
const A = "127.0.1.1", B = "127.0.1.2", RELAY_A = "127.0.1.3", RELAY_B = "127.0.1.4";

const running: Served[] = [];
const relays: Relay[] = [];
afterAll(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
  for (const r of relays.splice(0)) r.close();
});

describe.each([
  { transport: "rocev2", retransmits: "roce.retransmits", extra: [] as string[] },
  { transport: "metaroce", retransmits: "mrt.tx_retransmits", extra: ["--set", "mrtConnections=2"] },
])("64 MiB of WRITEs between two served devices, 1 % of datagrams lost: $transport", ({ transport, retransmits, extra }) => {
  it("completes every work request exactly once with SUCCESS, and the bytes land", async () => {
    const relay = await Relay.start({
      a: { listen: { host: RELAY_A, base: 4791 }, device: { host: A, base: 4791 } },
      b: { listen: { host: RELAY_B, base: 4791 }, device: { host: B, base: 4791 } },
      loss: 0.01, seed: 2026,
    });
    relays.push(relay);
    // host memory for 64 MiB of buffers and the rings beside them
    const common = ["--transport", transport, "--pace", "fast", "--scale", "0.0002", "--idle", "50", "--set", `hostMemBytes=${72 * MiB}`, ...extra];
    const a = await spawnServe(["--device", "0", "--bind", A, "--peer", `1=${RELAY_A}`, ...common]);
    running.push(a);
    const b = await spawnServe(["--device", "1", "--bind", B, "--peer", `0=${RELAY_B}`, ...common]);
    running.push(b);
    expect(a.addresses.ports).toEqual([{ port: 0, address: "10.0.0.0", host: A, rocev2: 4791, metaroce: 4792 }]);

    const [qa, qb] = await connectServed({ client: a.client, device: 0 }, { client: b.client, device: 1 });
    const wrs = 64;
    const t = await writeTransfer(qa, qb, { wrs, wrBytes: MiB, window: 64, seed: 5, limitMs: 900_000 });
    // nothing more comes: each work request completed once
    t.completions.push(...await a.client.pollCq(qa.cq, { max: 256, waitMs: 200 }));
    console.log(`serve ${transport}: 64 MiB in ${(t.wallMs / 1000).toFixed(2)} s of wall time; relay lost ${relay.aToB.dropped} of ${relay.aToB.dropped + relay.aToB.forwarded} datagrams a→b, ${relay.bToA.dropped} of ${relay.bToA.dropped + relay.bToA.forwarded} b→a`);

    expect(t.completions.map((c) => c.status)).toEqual(Array(wrs).fill("SUCCESS"));
    expect(t.completions.map((c) => c.wrId).sort((x, y) => (x < y ? -1 : 1))).toEqual(Array.from({ length: wrs }, (_, i) => BigInt(i) + 0x1_0000_0000n));
    expect(t.completions.every((c) => c.opcode === "RDMA_WRITE" && c.byteLen === MiB && c.qpNum === qa.qp)).toBe(true);
    expect(t.read.length).toBe(64 * MiB);
    expect(Buffer.from(t.read).equals(Buffer.from(t.written))).toBe(true);

    // the loss was real, and the transport made up for it
    expect(relay.aToB.dropped).toBeGreaterThan(0);
    const [sa, sb] = await Promise.all([quietStats(a.client), quietStats(b.client)]);
    expect(sa.device[retransmits]).toBeGreaterThan(0);
    // the datagrams were the devices' frames: none refused on the way in
    for (const s of [sa, sb]) expect([s.serve.rxUnknownSource, s.serve.rxMalformed, s.serve.rxInboxFull]).toEqual([0, 0, 0]);
    expect(sb.serve.rxDatagrams).toBeLessThanOrEqual(relay.aToB.forwarded); // a loaded machine's kernel may drop a few more
    expect(sa.serve.txDatagrams).toBeGreaterThanOrEqual(relay.aToB.forwarded + relay.aToB.dropped);
    // each frame a port sent left as one datagram; each datagram staged reached the device once
    for (const s of [sa, sb]) {
      expect(s.device["port.tx_packets"]).toBe(s.serve.txDatagrams);
      expect(s.device["port.rx_packets"] + (s.device["port.rx_ring_full"] ?? 0)).toBe(s.serve.rxStaged);
    }
    // every payload byte arrived at least once
    expect(sb.serve.rxBytes).toBeGreaterThan(64 * MiB);
    for (const s of [a, b]) {
      const { code, stderr } = await s.stop();
      expect(code).toBe(0);
      expect(stderr).toMatch(/menic serve: stopped by SIGTERM at .*: sent \d+ datagrams/);
    }
    running.length = 0;
    relay.close();
  });
});
