// A served device (`menic serve`) against a peer that is not menic and against bad input: this
// process speaks RoCEv2 to it as device 1 with frames built apart from the device
// (host/wire/rocev2.ts), a user's own tool as the peer; datagrams that cannot be frames, that
// carry a wrong ICRC, or that come from no peer's address are counted and dropped, and the device
// still places the next WRITE and answers it; bad control requests get an error reply that names
// the line and the field, and the server goes on serving; bad command lines are refused.
import { describe, it, expect, afterAll, beforeAll } from "vitest";
import { createSocket, type Socket } from "node:dgram";
import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { connect } from "node:net";
import { buildFrame, parseFrame } from "../host/wire/rocev2.js";
import { ArrivalBuilder } from "../host/serve/datagram.js";
import { OP, AETH_SYNDROME } from "../host/generated/headers.js";
import { portAddress } from "../host/fabric/topology.js";
import { spawnServe, connectServed, writeTransfer, type Served } from "./helpers/serve.js";

/** Addresses of this file alone (test files run side by side; each device owns its address's 4791 and 4792). */
const DEV = "127.0.3.1", TOOL = "127.0.3.2", STRANGER = "127.0.3.9";
/** The tool's QP number and the UDP source port its frames come from (0xC000 | qpn, as a device's would). */
const TOOL_QP = 7, TOOL_SPORT = 0xc000 | TOOL_QP;

let served: Served;
let qp: number, buf: number, rkey: number;
const sockets: Socket[] = [];
beforeAll(async () => {
  served = await spawnServe(["--device", "0", "--bind", DEV, "--peer", `1=${TOOL}`, "--pace", "fast", "--scale", "0.001"]);
  const c = served.client;
  const pd = await c.allocPd(), cq = await c.createCq(16);
  qp = await c.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 });
  await c.modifyQp(qp, { state: "INIT" });
  await c.modifyQp(qp, { state: "RTR", destQpNum: TOOL_QP, destDevice: 1 });
  await c.modifyQp(qp, { state: "RTS" });
  buf = await c.allocHostMemory(4096);
  rkey = (await c.regMr(pd, buf, 4096, ["REMOTE_WRITE", "LOCAL_WRITE"])).rkey;
});
afterAll(async () => {
  for (const s of sockets) s.close();
  if (served) expect((await served.stop()).code).toBe(0);
});

/** A UDP socket bound to `host`:`port`. */
async function socket(host: string, port: number): Promise<Socket> {
  const s = createSocket("udp4");
  sockets.push(s);
  s.bind(port, host);
  await once(s, "listening");
  return s;
}

/** Waits until `ok()`; throws naming `what` after 60 s (a hang guard). */
async function until(ok: () => boolean, what: string): Promise<void> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > 60_000) throw new Error(`no ${what} within 60 s`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Waits (a hang guard of 60 s) until the served device's counters satisfy `ok`; returns them. */
async function statsUntil(ok: (s: { serve: Record<string, number | string>; device: Record<string, number> }) => boolean) {
  const t0 = Date.now();
  for (;;) {
    const s = await served.client.stats();
    if (ok(s) || Date.now() - t0 > 60_000) return s;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("a served device with this process as its peer device 1", () => {
  /** The UDP payload of a RoCEv2 WRITE_ONLY from the tool (device 1) to the device's QP, as device 1 would send it. */
  const write = (psn: number, text: string) => buildFrame({
    opcode: OP.RC_WRITE_ONLY, destQp: qp, psn, ackReq: true, udpSrcPort: TOOL_SPORT,
    ipSrc: portAddress(1, 0), ipDst: portAddress(0, 0),
    reth: { va: BigInt(buf + psn * 64), rkey, dmaLength: text.length }, payload: new TextEncoder().encode(text),
  }).subarray(42);

  it("places a WRITE from a tool that speaks RoCEv2, answers it with an ACK, counts and drops what is not a frame from a peer, and still works", async () => {
    const fromTool = await socket(TOOL, TOOL_SPORT), toolRx = await socket(TOOL, 4791), stranger = await socket(STRANGER, TOOL_SPORT);
    const answers: ReturnType<typeof parseFrame>[] = [];
    const rebuild = new ArrivalBuilder();
    toolRx.on("message", (m: Buffer, r) => {
      // what the device sent, back into the frame it was: its ICRC covers the 10.p.d addresses and the source port
      const a = rebuild.rebuild(m, 0, 1, 0, r.port, 4791);
      answers.push(a ? parseFrame(Buffer.concat([a.hdr.subarray(0, a.hdrLen), m.subarray(a.bodyAt)])) : { ok: false, error: "ip-length" });
    });
    const answered = (n: number) => until(() => answers.length >= n, `answer ${n} from the device`);
    const send = (s: Socket, bytes: Uint8Array, port = 4791) => s.send(bytes, port, DEV);

    send(fromTool, write(0, "hello, served device"));
    await statsUntil((s) => s.device["roce.rx_requests"] === 1);
    await answered(1);
    const ack = answers[0]!;
    expect(ack.ok).toBe(true);
    if (!ack.ok) return;
    expect(ack.frame).toMatchObject({ opcode: OP.RC_ACK, destQp: TOOL_QP, psn: 0, ipSrc: portAddress(0, 0), ipDst: portAddress(1, 0) });
    expect(ack.frame.aeth!.syndrome & 0x60).toBe(AETH_SYNDROME.ACK);
    expect(new TextDecoder().decode(await served.client.read(buf, 20))).toBe("hello, served device");

    // not frames: too short for a BTH, an opcode no device sends, a MetaRoCE-like header of no type
    send(fromTool, Uint8Array.of(1, 2, 3));
    send(fromTool, Uint8Array.from({ length: 40 }, (_, i) => (i === 0 ? 0xff : i)));
    send(fromTool, new Uint8Array(60), 4792);
    // a frame whose payload changed on the way: the device's ICRC check refuses it
    const bad = write(1, "flipped");
    bad[bad.length - 6]! ^= 0x20;
    send(fromTool, bad);
    // a right frame from an address no --peer names
    send(stranger, write(1, "from nobody"));
    const s = await statsUntil((x) => x.serve.rxMalformed === 3 && x.serve.rxUnknownSource === 1 && x.device["roce.rx_bad_icrc"] === 1);
    expect([s.serve.rxMalformed, s.serve.rxUnknownSource, s.device["roce.rx_bad_icrc"], s.serve.rxDatagrams, s.serve.rxStaged]).toEqual([3, 1, 1, 6, 2]);
    expect(s.device["roce.rx_requests"]).toBe(1);

    // the device goes on: the next WRITE lands and is answered
    send(fromTool, write(1, "still here"));
    await statsUntil((x) => x.device["roce.rx_requests"] === 2);
    await answered(2);
    expect(answers[1]).toMatchObject({ ok: true, frame: { opcode: OP.RC_ACK, psn: 1 } });
    expect(new TextDecoder().decode(await served.client.read(buf + 64, 10))).toBe("still here");
    expect(new TextDecoder().decode(await served.client.read(buf, 20))).toBe("hello, served device");
  });
});

describe("--pace wall", () => {
  it("keeps simulated time at the wall's × scale, never ahead: a request acts at the time the wall says", async () => {
    const SCALE = 0.01;
    const t0 = performance.now();
    const a = await spawnServe(["--device", "0", "--bind", "127.0.3.11", "--peer", "1=127.0.3.12", "--pace", "wall", "--scale", String(SCALE)]);
    const b = await spawnServe(["--device", "1", "--bind", "127.0.3.12", "--peer", "0=127.0.3.11", "--pace", "wall", "--scale", String(SCALE)]);
    const listening = performance.now(); // a's clock started between t0 and here
    try {
      const [qa, qb] = await connectServed({ client: a.client, device: 0 }, { client: b.client, device: 1 }, 4, 16);
      await new Promise((r) => setTimeout(r, 300));
      const before = performance.now();
      const t = await writeTransfer(qa, qb, { wrs: 1, wrBytes: 1 << 20, window: 1, seed: 3, limitMs: 60_000 });
      const after = performance.now();
      expect(t.completions.map((c) => c.status)).toEqual(["SUCCESS"]);
      expect(Buffer.from(t.read).equals(Buffer.from(t.written))).toBe(true);
      // ms of wall time → ps of simulated time at SCALE
      const ps = (ms: number) => BigInt(Math.round(ms * 1e9 * SCALE));
      const done = t.completions[0]!.timePs;
      expect(done).toBeGreaterThan(ps(before - listening)); // posted at the wall's time, not where an idle clock stood
      expect(done).toBeLessThanOrEqual(ps(after - t0)); // never ahead of the wall
      const info = await a.client.info(), at = performance.now();
      expect(info.nowPs).toBeGreaterThanOrEqual(ps(at - listening - 50)); // the request's own way (50 ms) aside
      expect(info.nowPs).toBeLessThanOrEqual(ps(at - t0));
      expect(info.pace).toEqual({ mode: "wall", scale: SCALE, idleMs: 20 });
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});

describe("the control channel", () => {
  /** Sends `lines` on a fresh connection and resolves with one parsed reply per line. */
  async function exchange(lines: (string | Buffer)[]): Promise<Record<string, unknown>[]> {
    const s = connect(served.addresses.control.port, "127.0.0.1");
    await once(s, "connect");
    let text = "";
    s.setEncoding("utf8").on("data", (d: string) => { text += d; });
    for (const l of lines) s.write(typeof l === "string" ? l + "\n" : l);
    await until(() => text.split("\n").length - 1 >= lines.length, `${lines.length} replies`);
    s.end();
    return text.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  it("answers each bad request with an error that names its line and field, and goes on serving", async () => {
    const long = Buffer.alloc(17 << 20, 0x61);
    long[long.length - 1] = 0x0a;
    const replies = await exchange([
      "not json",
      "[1, 2]",
      '{"id": 3}',
      '{"id": 4, "op": "postsend"}',
      `{"id": 5, "op": "postSend", "qp": 99, "wrs": []}`,
      `{"id": 6, "op": "postSend", "qp": ${qp}, "wrs": [{"wrId": 1, "opcode": "RDMA_WRITE", "length": -1}]}`,
      `{"id": 7, "op": "postSend", "qp": ${qp}, "wrs": [{"wrId": -1, "opcode": "RDMA_WRITE"}]}`,
      '{"id": 8, "op": "regMr", "pd": 0, "addr": 0, "length": 1, "acess": []}',
      '{"id": 9, "op": "read", "addr": 1, "length": 4}',
      `{"id": 10, "op": "write", "addr": ${buf}, "data": "!!"}`,
      '{"id": true, "op": "info"}',
      `{"id": 12, "op": "pollCq", "cq": 0, "waitMs": -5}`,
      long,
      '{"id": "last", "op": "info"}',
    ]);
    const errors = replies.map((r) => (r.ok ? null : r.error as string));
    expect(errors[0]).toMatch(/^line 1, column \d+: not JSON: /);
    expect(errors[1]).toBe("line 2: a request is a JSON object ({\"id\": 1, \"op\": \"info\"}), got an array");
    expect(errors[2]).toMatch(/^line 3: the request has no "op" \(a string: info, stats, /);
    expect(errors[3]).toMatch(/^line 4: unknown op "postsend" \(did you mean postSend\?\)/);
    expect(errors[4]).toBe("line 5: postSend: qp 99: no such QP on this device (createQp makes one)");
    expect(errors[5]).toBe(`line 6: postSend: QP ${qp}: wrs[0].length must be an integer 0..4294967295, got -1`);
    expect(errors[6]).toBe("line 7: postSend: wrs[0].wrId must be a whole number >= 0: a JSON number up to 2^53, or a decimal string up to 2^64-1, got -1");
    expect(errors[7]).toMatch(/^line 8: regMr: unknown field "acess" \(did you mean access\?\) \(regMr takes pd, addr, length, access\)$/);
    expect(errors[8]).toMatch(/^line 9: view: \[0x1, \+4\) is not in host memory, HBM or engine SRAM$/);
    expect(errors[9]).toBe("line 10: write: data must be base64 (RFC 4648 §4, with padding)");
    expect(errors[10]).toBe("line 11: id must be a number or a string, got true");
    expect(errors[11]).toBe("line 12: pollCq: waitMs must be a whole number 0..600000, got -5");
    expect(errors[12]).toMatch(/^line 13: longer than 16777216 bytes: not read/);
    expect(replies.slice(0, 13).map((r) => r.id)).toEqual([null, null, 3, 4, 5, 6, 7, 8, 9, 10, null, 12, null]);
    expect(replies[13]).toMatchObject({ id: "last", ok: true, device: 0, transport: "rocev2" });
    // another connection, and the typed client, still get answers
    expect((await exchange(['{"id": 1, "op": "queryQp", "qp": ' + qp + "}"]))[0]).toEqual({ id: 1, ok: true, state: "RTS" });
    await expect(served.client.queryQp(1234)).rejects.toThrow(/queryQp: qp 1234: no such QP on this device/);
    expect((await served.client.info()).device).toBe(0);
  });
});

describe("menic serve's command line", () => {
  const serve = (...args: string[]) => spawnSync(process.execPath, ["bin/menic.js", "serve", ...args], { encoding: "utf8", timeout: 60_000 });

  it("refuses bad options with exit 2 and sockets it cannot have with exit 1, saying why", () => {
    const cases: [string[], number, RegExp][] = [
      [["--peer", "1"], 2, /--peer "1": want <device>=<host>\[:<port>\]/],
      [["--peer", "0=127.0.3.5"], 2, /--peer 0: that is this device's own id/],
      [["--bind", "127.0.3.1,127.0.4.1", "--peer", "1=127.0.3.2"], 2, /--peer 1: 1 address for a device of 2 ports/],
      [["--scale", "0"], 2, /--scale 0: must be a number in \(0, 1000\]/],
      [["--idle", "5"], 2, /--idle is for --pace fast/],
      [["--set", "ports=2"], 2, /config\.ports.*is set by --bind/],
      [["--bind", "192.0.2.1"], 1, /cannot bind port 0: 192\.0\.2\.1:4791: not an address of this host/],
      // the running device's own address
      [["--bind", DEV], 1, /cannot bind port 0: 127\.0\.3\.1:4791: in use/],
    ];
    for (const [args, status, message] of cases) {
      const r = serve(...args);
      expect(r.stderr, args.join(" ")).toMatch(message);
      expect(r.status, args.join(" ")).toBe(status);
      expect(r.stdout).toBe("");
    }
  });
});
