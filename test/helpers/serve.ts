// Served devices for tests (docs/serve.md): `menic serve` spawned as its own process (the
// built CLI, bin/menic.js), its control channel connected, and the transfers the serve tests
// run through them: QPs connected across two devices, RDMA WRITEs posted and polled until each
// completes, the destination read back.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { ServeClient, type ServeStats } from "../../host/serve/client.js";
import type { Wc } from "../../host/verbs.js";
import type { ServeAddresses } from "../../host/serve/serve.js";

/** A `menic serve` process: where it listens, a client on its control channel, and how to end it. */
export interface Served {
  child: ChildProcess;
  addresses: ServeAddresses;
  client: ServeClient;
  /** what it has written on stderr so far */
  stderr: () => string;
  /** SIGTERM, then its exit status and stderr (the counters it prints) */
  stop: () => Promise<{ code: number | null; stderr: string }>;
}

/** Starts `menic serve <args>`; resolves once it prints where it listens, rejects (with its stderr) if it exits first. */
export async function spawnServe(args: string[]): Promise<Served> {
  const child = spawn(process.execPath, ["bin/menic.js", "serve", ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let err = "", out = "";
  child.stderr!.setEncoding("utf8").on("data", (s: string) => { err += s; });
  const addresses = await new Promise<ServeAddresses>((resolve, reject) => {
    child.stdout!.setEncoding("utf8").on("data", (s: string) => {
      out += s;
      const nl = out.indexOf("\n");
      if (nl >= 0) resolve(JSON.parse(out.slice(0, nl)) as ServeAddresses);
    });
    child.once("exit", (code) => reject(new Error(`menic serve ${args.join(" ")} exited ${code} before it listened: ${err}`)));
  });
  const client = await ServeClient.connect(addresses.control.port);
  const exited = once(child, "exit") as Promise<[number | null]>;
  return {
    child, addresses, client, stderr: () => err,
    stop: async () => {
      await client.close();
      if (child.exitCode === null) child.kill("SIGTERM");
      const [code] = await exited;
      return { code, stderr: err };
    },
  };
}

/** A QP on a served device, with what the transfer needs of it. */
export interface ServedQp {
  client: ServeClient;
  device: number;
  pd: number;
  cq: number;
  qp: number;
}

/** A PD, a CQ of `cqDepth` and a QP of `depth` send entries on each of `a` and `b`, connected to each other and in RTS. */
export async function connectServed(a: { client: ServeClient; device: number }, b: { client: ServeClient; device: number }, depth = 64, cqDepth = 1024): Promise<[ServedQp, ServedQp]> {
  const make = async (s: { client: ServeClient; device: number }): Promise<ServedQp> => {
    const pd = await s.client.allocPd();
    const cq = await s.client.createCq(cqDepth);
    const qp = await s.client.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: depth, maxRecvWr: 16 });
    return { ...s, pd, cq, qp };
  };
  const x = await make(a), y = await make(b);
  for (const [p, q] of [[x, y], [y, x]] as const) {
    await p.client.modifyQp(p.qp, { state: "INIT" });
    await p.client.modifyQp(p.qp, { state: "RTR", destQpNum: q.qp, destDevice: q.device });
    await p.client.modifyQp(p.qp, { state: "RTS" });
  }
  return [x, y];
}

/** The bytes a transfer writes: a pattern no shift or swap of whole packets leaves equal. */
export function pattern(bytes: number, seed: number): Uint8Array {
  const out = new Uint8Array(bytes);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < bytes; i += 4) {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    out[i] = s; out[i + 1] = s >>> 8; out[i + 2] = s >>> 16; out[i + 3] = s >>> 24;
  }
  return out;
}

/** What a transfer saw: every completion of the writer's CQ, the bytes read back, and its wall time. */
export interface Transfer {
  completions: Wc[];
  written: Uint8Array;
  read: Uint8Array;
  wallMs: number;
}

/**
 * `wrs` RDMA WRITEs of `wrBytes` each from `from` to `to`, one after another in memory, at most
 * `window` posted and not yet completed; every one signaled. Polls until each has completed
 * (or `limitMs` of wall time passed, a hang guard) and reads the destination back.
 */
export async function writeTransfer(from: ServedQp, to: ServedQp, o: { wrs: number; wrBytes: number; window: number; seed: number; limitMs: number }): Promise<Transfer> {
  const bytes = o.wrs * o.wrBytes;
  const src = await from.client.allocHostMemory(bytes, 4096), dst = await to.client.allocHostMemory(bytes, 4096);
  const written = pattern(bytes, o.seed);
  await from.client.write(src, written);
  const smr = await from.client.regMr(from.pd, src, bytes);
  const dmr = await to.client.regMr(to.pd, dst, bytes, ["REMOTE_WRITE", "LOCAL_WRITE"]);
  const t0 = performance.now();
  const completions: Wc[] = [];
  let posted = 0;
  while (completions.length < o.wrs && performance.now() - t0 < o.limitMs) {
    const room = Math.min(o.window - (posted - completions.length), o.wrs - posted);
    if (room > 0) {
      const wrs = Array.from({ length: room }, (_, k) => posted + k).map((i) => ({
        wrId: BigInt(i) + 0x1_0000_0000n, opcode: "RDMA_WRITE" as const, signaled: true,
        localAddr: src + i * o.wrBytes, length: o.wrBytes, lkey: smr.lkey, remoteAddr: dst + i * o.wrBytes, rkey: dmr.rkey,
      }));
      await from.client.postSend(from.qp, wrs);
      posted += room;
    }
    completions.push(...await from.client.pollCq(from.cq, { max: 256, waitMs: 1000 }));
    if (completions.some((c) => c.status !== "SUCCESS")) break;
  }
  const wallMs = performance.now() - t0;
  return { completions, written, read: await to.client.read(dst, bytes), wallMs };
}

/**
 * The served device's counters once nothing more is arriving: read until two readings 100 ms
 * apart agree on what it sent, staged and received (at most `limitMs`, a hang guard).
 */
export async function quietStats(client: ServeClient, limitMs = 10_000): Promise<ServeStats> {
  const key = (s: ServeStats) => [s.serve.txDatagrams, s.serve.rxStaged, s.device["port.rx_packets"], s.device["port.tx_packets"]].join();
  const t0 = performance.now();
  let last = await client.stats();
  for (;;) {
    await new Promise((r) => setTimeout(r, 100));
    const now = await client.stats();
    if (key(now) === key(last) || performance.now() - t0 > limitMs) return now;
    last = now;
  }
}
