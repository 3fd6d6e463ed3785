// The control channel of a served device (`menic serve`, docs/serve.md) from another process:
// a typed client that speaks its JSON lines over TCP. Each method is one request (a `write` or
// `read` larger than a request takes is several, sent at once) and resolves with its reply's
// result, or rejects with a ServeError carrying the server's message. Node only (node:net).

import { connect, type Socket } from "node:net";
import type { AccessFlag, QpAttr, QpStateName, RecvWr, SendWr, Wc } from "../verbs.js";
import { MAX_DATA_BYTES } from "./ops.js";

/** A request the served device refused, or a connection that ended before its reply: the server's message says what and where. */
export class ServeError extends Error {
  /** @param message what the server said (`line 3: postSend: qp 9: no such QP on this device (createQp makes one)`) */
  constructor(
    message: string,
    /** The op of the request it answers (`postSend`), or "" for the connection. */
    readonly op: string,
  ) {
    super(message);
    this.name = "ServeError";
  }
}

/** The keys of a memory region registered on a served device ({@link ServeClient.regMr}). */
export interface ServeMr {
  /** Names the region in this device's work requests (and in deregMr). */
  lkey: number;
  /** Names it to a peer's RDMA WRITE or READ. */
  rkey: number;
}

/** Where a served device is ({@link ServeClient.info}). */
export interface ServeInfo {
  /** Its device id: the `destDevice` a peer's QP names at RTR. */
  device: number;
  /** The transport its QPs speak. */
  transport: "rocev2" | "metaroce";
  /** Its ports, in order. */
  ports: {
    /** The port's index. */
    port: number;
    /** Its IPv4 address in the emulated network: 10.port.(device >> 8).(device & 255). */
    address: string;
    /** The host address its sockets are bound to. */
    host: string;
    /** The UDP port it takes RoCEv2 on (4791 unless moved). */
    rocev2: number;
    /** The UDP port it takes the MetaRoCE-like transport on (4792 unless moved). */
    metaroce: number;
  }[];
  /** Its peers. */
  peers: {
    /** The peer's device id. */
    device: number;
    /** Where each of its ports is, `host:port` (RoCEv2's port; the MetaRoCE-like transport's is the next). */
    ports: string[];
  }[];
  /** How its time is paced. */
  pace: {
    /** `menic serve --pace`: `wall`, `fast`, or `step` (time moves only at {@link ServeClient.advance}). */
    mode: "wall" | "fast" | "step";
    /** `--scale`: simulated time per wall time. */
    scale: number;
    /** `--idle`: how long a waiting device waits for its peer before it skips ahead (fast), ms. */
    idleMs: number;
  };
  /** Where its control channel listens. */
  control: {
    /** Always the loopback address, 127.0.0.1. */
    host: string;
    /** Its TCP port. */
    port: number;
  };
  /** Its time now, ps. */
  nowPs: bigint;
}

/** A datagram a stepped device sent during an {@link ServeClient.advance}. */
export interface ServeSent {
  /** When its frame's last bit left the port, ps of the device's time. */
  timePs: bigint;
  /** The device port it left. */
  port: number;
  /** Its UDP source port (the socket it was sent from). */
  srcUdpPort: number;
  /** Its bytes of UDP payload. */
  bytes: number;
}

/** What a stepped device did in an {@link ServeClient.advance}. */
export interface ServeAdvance {
  /** Its time now, ps: the time asked for. */
  nowPs: bigint;
  /** The datagrams it sent, in order. */
  sent: ServeSent[];
}

/** A served device's counters ({@link ServeClient.stats}). */
export interface ServeStats {
  /** Its time now, ps. */
  nowPs: bigint;
  /** The server's counters: datagrams sent and received, and those dropped by reason (docs/serve.md lists them). */
  serve: Record<string, number | string>;
  /** The device's own counters by name (`Device.stats()`; docs/memory-map.md lists them). */
  device: Record<string, number>;
}

/**
 * A connection to a served device's control channel (`menic serve` prints its port). Methods
 * mirror the verbs {@link Context}'s, with handles as the device's numbers: a PD's handle, an
 * MR's lkey, a CQ's number, a QP's number.
 */
export class ServeClient {
  private nextId = 1;
  private readonly pending = new Map<number, { op: string; resolve: (r: Record<string, unknown>) => void; reject: (e: Error) => void }>();
  private buffered: Buffer[] = [];
  private closedWith: Error | null = null;

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.data(chunk));
    const end = (why: string) => {
      this.closedWith ??= new ServeError(why, "");
      for (const p of this.pending.values()) p.reject(new ServeError(`${p.op}: ${why}`, p.op));
      this.pending.clear();
    };
    socket.on("error", (e) => end(`connection failed: ${e.message}`));
    socket.on("close", () => end("the served device closed the connection"));
  }

  /** Connects to a served device's control channel at `host`:`port`; rejects when nothing listens there. */
  static connect(port: number, host = "127.0.0.1"): Promise<ServeClient> {
    return new Promise((resolve, reject) => {
      const s = connect({ port, host });
      s.once("error", (e) => reject(new Error(`cannot reach a served device at ${host}:${port}: ${e.message}`)));
      s.once("connect", () => resolve(new ServeClient(s)));
    });
  }

  /** Sends request `op` with `fields` and resolves with the reply's fields (besides `id` and `ok`): the protocol itself. */
  request(op: string, fields: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    if (this.closedWith) return Promise.reject(new ServeError(`${op}: ${this.closedWith.message}`, op));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { op, resolve, reject });
      this.socket.write(JSON.stringify({ id, op, ...fields }) + "\n");
    });
  }

  private data(chunk: Buffer): void {
    let at = 0;
    for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, at)) {
      const line = Buffer.concat([...this.buffered, chunk.subarray(at, nl)]).toString("utf8");
      this.buffered = [];
      at = nl + 1;
      const r = JSON.parse(line) as { id: number | null; ok: boolean; error?: string } & Record<string, unknown>;
      // replies come in the order of the requests: one without an id answers the oldest
      const id = typeof r.id === "number" ? r.id : this.pending.keys().next().value;
      const p = id === undefined ? undefined : this.pending.get(id);
      if (!p) continue;
      this.pending.delete(id!);
      if (r.ok) {
        const { id: _, ok: __, ...fields } = r;
        p.resolve(fields);
      } else p.reject(new ServeError(r.error ?? "refused", p.op));
    }
    if (at < chunk.length) this.buffered.push(chunk.subarray(at));
  }

  /** Where the device is, its peers and its pacing. */
  async info(): Promise<ServeInfo> {
    const r = await this.request("info");
    return { ...r, nowPs: BigInt(r.nowPs as string) } as unknown as ServeInfo;
  }

  /** Its counters and the server's. */
  async stats(): Promise<ServeStats> {
    const r = await this.request("stats");
    return { ...r, nowPs: BigInt(r.nowPs as string) } as unknown as ServeStats;
  }

  /** Host memory for buffers (Context.allocHostMemory); its DMA address. */
  async allocHostMemory(bytes: number, alignment = 64): Promise<number> {
    return (await this.request("allocHostMemory", { bytes, alignment })).addr as number;
  }

  /** HBM for buffers (Context.allocHbm); its DMA address. */
  async allocHbm(bytes: number, alignment = 64): Promise<number> {
    return (await this.request("allocHbm", { bytes, alignment })).addr as number;
  }

  /** Writes `bytes` at DMA address `addr` (Context.write), in requests of at most 8 MiB sent together. */
  async write(addr: number, bytes: Uint8Array): Promise<void> {
    const parts: Promise<unknown>[] = [];
    for (let at = 0; at < bytes.length; at += MAX_DATA_BYTES) {
      const piece = bytes.subarray(at, at + MAX_DATA_BYTES);
      parts.push(this.request("write", { addr: addr + at, data: Buffer.from(piece.buffer, piece.byteOffset, piece.length).toString("base64") }));
    }
    await Promise.all(parts);
  }

  /** Reads `length` bytes at DMA address `addr` (Context.read), in requests of at most 8 MiB sent together. */
  async read(addr: number, length: number): Promise<Uint8Array> {
    const out = new Uint8Array(length);
    const parts: Promise<void>[] = [];
    for (let at = 0; at < length; at += MAX_DATA_BYTES) {
      const n = Math.min(MAX_DATA_BYTES, length - at), to = at;
      parts.push(this.request("read", { addr: addr + at, length: n }).then((r) => out.set(Buffer.from(r.data as string, "base64"), to)));
    }
    await Promise.all(parts);
    return out;
  }

  /** A protection domain; its handle. */
  async allocPd(): Promise<number> {
    return (await this.request("allocPd")).pd as number;
  }

  /** Frees protection domain `pd`. */
  async deallocPd(pd: number): Promise<void> {
    await this.request("deallocPd", { pd });
  }

  /** Registers `[addr, addr + length)` in `pd` with `access` (Context.regMr); its keys. */
  async regMr(pd: number, addr: number, length: number, access: AccessFlag[] = []): Promise<ServeMr> {
    const r = await this.request("regMr", { pd, addr, length, access });
    return { lkey: r.lkey as number, rkey: r.rkey as number };
  }

  /** Deregisters the region of local key `lkey`. */
  async deregMr(lkey: number): Promise<void> {
    await this.request("deregMr", { lkey });
  }

  /** A host-owned CQ of `depth` entries; its number. */
  async createCq(depth: number): Promise<number> {
    return (await this.request("createCq", { depth })).cq as number;
  }

  /** Destroys CQ `cq`. */
  async destroyCq(cq: number): Promise<void> {
    await this.request("destroyCq", { cq });
  }

  /** A host-owned QP (Context.createQp) with CQs named by number; its QP number. */
  async createQp(pd: number, init: { sendCq: number; recvCq: number; maxSendWr: number; maxRecvWr: number; sqSigAll?: boolean }): Promise<number> {
    return (await this.request("createQp", { pd, ...init })).qp as number;
  }

  /** Moves QP `qp` (Context.modifyQp): at RTR, `destQpNum` and `destDevice` name the peer's QP and device. */
  async modifyQp(qp: number, attr: QpAttr): Promise<void> {
    await this.request("modifyQp", { qp, ...attr });
  }

  /** QP `qp`'s state now. */
  async queryQp(qp: number): Promise<QpStateName> {
    return (await this.request("queryQp", { qp })).state as QpStateName;
  }

  /** Destroys QP `qp`. */
  async destroyQp(qp: number): Promise<void> {
    await this.request("destroyQp", { qp });
  }

  /** Posts send work requests (Context.postSend) at the device's time now. */
  async postSend(qp: number, wrs: SendWr[], opts: { doorbell?: "classic" | "express" } = {}): Promise<void> {
    await this.request("postSend", { qp, wrs: wrs.map((w) => ({ ...w, wrId: String(w.wrId) })), ...opts });
  }

  /** Posts receive work requests (Context.postRecv). */
  async postRecv(qp: number, wrs: RecvWr[]): Promise<void> {
    await this.request("postRecv", { qp, wrs: wrs.map((w) => ({ ...w, wrId: String(w.wrId) })) });
  }

  /**
   * Up to `max` (default 16) new completions of CQ `cq` (as {@link Context.pollCq} gives them); with `waitMs`, the server waits up to that
   * long (wall time) for the first one before it answers, possibly with none.
   */
  async pollCq(cq: number, opts: { max?: number; waitMs?: number } = {}): Promise<Wc[]> {
    const r = await this.request("pollCq", { cq, ...opts });
    return (r.completions as Record<string, unknown>[]).map((c) => ({ ...c, wrId: BigInt(c.wrId as string), timePs: BigInt(c.timePs as string) }) as Wc);
  }

  /**
   * A device served with `--pace step`: once `received` datagrams have reached it (counting from
   * its start or last reset; the server waits up to `waitMs` of wall time for them), runs it to
   * `untilPs`. Resolves with its time then and the datagrams it sent meanwhile, in order: when
   * each frame's last bit left, from which port and UDP source port, and its bytes of UDP payload.
   */
  async advance(untilPs: bigint, opts: { received?: number; waitMs?: number } = {}): Promise<ServeAdvance> {
    const r = await this.request("advance", { untilPs: untilPs.toString(), ...opts });
    const sent = (r.sent as Record<string, unknown>[]).map((d) => ({ ...d, timePs: BigInt(d.timePs as string) }) as ServeSent);
    return { nowPs: BigInt(r.nowPs as string), sent };
  }

  /**
   * Replaces the device with a new one, as `menic serve` made the first but with `config` in
   * place of its --config and --set: time from 0, no handles, memory and counters new.
   */
  async reset(config: Record<string, number | string> = {}): Promise<void> {
    await this.request("reset", { config });
  }

  /** Closes the connection (the device goes on serving). */
  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.socket.destroyed) return resolve();
      this.socket.once("close", () => resolve());
      this.socket.end();
    });
  }
}
