// A served device under `--pace step` (docs/serve.md, "Time"): its time moves only when a
// client asks (`advance`), after the datagrams the client says it sent have arrived, and the
// reply says when each of the device's own datagrams left. `reset` gives a new device with
// another config. Run in this process against a socket of the test's, which stands for device 1.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { createSocket, type Socket } from "node:dgram";
import { once } from "node:events";
import { coreModule } from "../host/platform/node.js";
import { Server } from "../host/serve/serve.js";
import { ServeClient } from "../host/serve/client.js";
import { buildTesterFrame } from "../host/conform/frames.js";
import { parseFrame } from "../host/wire/rocev2.js";
import { UDP_IPV4_BYTES } from "../host/wire/udp-ipv4.js";
import { ArrivalBuilder } from "../host/serve/datagram.js";
import { portAddress } from "../host/fabric/topology.js";
import { AETH_SYNDROME } from "../host/generated/headers.js";

const DEV = "127.0.7.1", PEER = "127.0.7.2";
const PEER_QPN = 0x123;

let server: Server, client: ServeClient, peer: Socket;
const heard: { data: Buffer; port: number }[] = [];

beforeAll(async () => {
  server = await Server.start({
    module: coreModule(), device: 0, transport: "rocev2", bind: [{ host: DEV, base: 4791 }], peers: [{ device: 1, ports: [{ host: PEER, base: 4791 }] }],
    config: { mtuBytes: 1024 }, pace: { mode: "step", scale: 1, idleMs: 20 }, controlPort: 0,
  });
  client = await ServeClient.connect(server.addresses.control.port);
  peer = createSocket("udp4");
  peer.on("message", (data, r) => heard.push({ data, port: r.port }));
  peer.bind(4791, PEER);
  await once(peer, "listening");
});

afterAll(async () => {
  peer.close();
  await client.close();
  await server.close();
});

/** A QP of the device connected to device 1's QP PEER_QPN, and a 4 KiB region open to it. */
async function connected() {
  const pd = await client.allocPd(), cq = await client.createCq(16);
  const qp = await client.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 8, maxRecvWr: 8 });
  await client.modifyQp(qp, { state: "INIT" });
  await client.modifyQp(qp, { state: "RTR", destQpNum: PEER_QPN, destDevice: 1 });
  await client.modifyQp(qp, { state: "RTS" });
  const addr = await client.allocHbm(4096);
  const mr = await client.regMr(pd, addr, 4096, ["LOCAL_WRITE", "REMOTE_WRITE"]);
  return { qp, addr, rkey: mr.rkey, lkey: mr.lkey };
}

/** Device 1's one-packet WRITE of 64 bytes (pattern 5) to `addr`, as its UDP payload, sent from the peer's socket's port (the ICRC covers it). */
function write(qp: number, addr: number, rkey: number): Uint8Array {
  const vars = new Map<string, number>();
  const frame = buildTesterFrame("rocev2", { opcode: "RC_WRITE_ONLY", destQp: qp, psn: 0, ackReq: true, va: addr, rkey, dmaLength: 64, payload: { pattern: 5, length: 64 }, udpSrcPort: 4791 }, vars, portAddress(1, 0), portAddress(0, 0));
  return frame.subarray(UDP_IPV4_BYTES);
}

describe("menic serve --pace step", () => {
  it("keeps its time until asked; runs to exactly the time asked; refuses a time past", async () => {
    await client.reset({ mtuBytes: 1024 });
    await new Promise((r) => setTimeout(r, 30));
    expect((await client.stats()).nowPs).toBe(0n); // the wall moved; the device did not
    expect((await client.advance(1_234_567n)).nowPs).toBe(1_234_567n);
    expect((await client.stats()).nowPs).toBe(1_234_567n);
    await expect(client.advance(1_000_000n)).rejects.toThrow(/advance: untilPs 1000000 is before the device's time, 1234567 ps/);
  });

  it("stages the datagrams it is told of before it runs, and says when its answer left", async () => {
    await client.reset({ mtuBytes: 1024 });
    const { qp, addr, rkey } = await connected();
    const start = (await client.advance(2_000_000n)).nowPs;
    heard.length = 0;
    peer.send(write(qp, addr, rkey), 4791, DEV);
    const r = await client.advance(start + 3_000_000n, { received: 1 });
    // one datagram: the ACK of PSN 0, from the QP's own source port, after the WRITE arrived at `start`
    expect(r.sent).toHaveLength(1);
    const ack = r.sent[0]!;
    expect(ack.srcUdpPort).toBe(0xc000 | qp);
    expect(ack.timePs).toBeGreaterThan(start);
    expect(ack.timePs).toBeLessThan(start + 3_000_000n);
    while (heard.length < 1) await new Promise((res) => setTimeout(res, 5));
    expect(heard[0]!.port).toBe(ack.srcUdpPort);
    expect(heard[0]!.data.length).toBe(ack.bytes);
    // parseFrame checks the ICRC over the envelope too: rebuild it as the device wrote it
    const p = parseFrame(rebuilt(heard[0]!.data, ack.srcUdpPort));
    expect(p.ok && p.frame.aeth?.syndrome === AETH_SYNDROME.CREDITS_INVALID && p.frame.psn === 0 && p.frame.destQp === PEER_QPN).toBe(true);
    expect([...(await client.read(addr, 64))]).toEqual(Array.from({ length: 64 }, (_, i) => (i * 7 + 5) & 255));
  });

  it("waits for datagrams it was told of that do not come, then says how many did", async () => {
    const now = (await client.stats()).nowPs;
    const rx = (await client.stats()).serve.rxDatagrams as number;
    await expect(client.advance(now + 1_000n, { received: rx + 1, waitMs: 100 })).rejects.toThrow(new RegExp(`advance: ${rx + 1} datagrams were to have reached the device; ${rx} did within 100 ms`));
    expect((await client.stats()).nowPs).toBe(now); // and it did not run
  });

  it("reset: a new device with the config given; a field the options set is refused and the old device kept", async () => {
    await client.reset({ mtuBytes: 1024 });
    const { qp } = await connected();
    await client.advance(500_000n);
    await expect(client.reset({ deviceId: 3 })).rejects.toThrow(/config\.deviceId.*is set by --device/);
    expect(await client.queryQp(qp)).toBe("RTS");
    expect((await client.stats()).nowPs).toBe(500_000n);
    await client.reset({ mtuBytes: 2048 });
    expect((await client.stats()).nowPs).toBe(0n);
    await expect(client.queryQp(qp)).rejects.toThrow(/no such QP/);
    // the new config holds: a 4 KiB WRITE leaves as 2 packets of 2 KiB, not 4 of 1 KiB
    const c = await connected();
    await client.postSend(c.qp, [{ wrId: 1n, opcode: "RDMA_WRITE", signaled: true, localAddr: c.addr, length: 4096, lkey: c.lkey, remoteAddr: 0x1000_0000, rkey: 0x5eed }]);
    const sent = (await client.advance(20_000_000n)).sent.filter((d) => d.srcUdpPort === (0xc000 | c.qp));
    expect(sent.map((d) => d.bytes)).toEqual([12 + 16 + 2048 + 4, 12 + 2048 + 4]);
  });
});

describe("advance on a device paced by the wall", () => {
  it("is refused, naming --pace step", async () => {
    const wall = await Server.start({
      module: coreModule(), device: 0, transport: "rocev2", bind: [{ host: "127.0.7.3", base: 4791 }], peers: [],
      pace: { mode: "fast", scale: 0.001, idleMs: 20 }, controlPort: 0,
    });
    const c = await ServeClient.connect(wall.addresses.control.port);
    try {
      await expect(c.advance(1_000n)).rejects.toThrow(/advance needs menic serve --pace step/);
    } finally {
      await c.close();
      await wall.close();
    }
  });
});

/** The frame device 0 sent as `payload` from `srcPort` to device 1: the envelope host/serve/datagram.ts rebuilds, then the payload. */
function rebuilt(payload: Uint8Array, srcPort: number): Uint8Array {
  const a = new ArrivalBuilder().rebuild(payload, 0, 1, 0, srcPort, 4791)!;
  const out = new Uint8Array(a.hdrLen + payload.length - a.bodyAt);
  out.set(a.hdr.subarray(0, a.hdrLen));
  out.set(payload.subarray(a.bodyAt), a.hdrLen);
  return out;
}
