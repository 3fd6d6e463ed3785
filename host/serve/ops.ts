// The operations of a served device's control channel (docs/serve.md, "Control"): each takes a
// request's fields, checks them (an unknown field, a missing or mistyped one, a handle the
// device does not have), and does one verbs call on the device's context (host/verbs.ts, which
// checks the rest and says what is wrong: VerbsError). Handles are the device's own numbers: a
// PD's handle, an MR's lkey, a CQ's cqn, a QP's qpn; every client of the device shares them.
// Bytes travel as base64; 64-bit ids and times as decimal strings. Node only (Buffer's base64).

import type { Context, Pd, Mr, Cq, Qp, Wc, SendWr, RecvWr, QpAttr, AccessFlag, QpStateName, PortGroup } from "../verbs.js";
import { didYouMean } from "../user-input.js";
import type { SentDatagram } from "./served-device.js";

/** The most bytes one `write` or `read` moves: larger transfers are several requests (the client splits them). */
export const MAX_DATA_BYTES = 8 << 20;
/** The most completions one `pollCq` returns. */
export const MAX_POLL = 4096;
/** The longest a `pollCq` waits for a completion, ms of wall time. */
export const MAX_WAIT_MS = 600_000;
/** How long an `advance` waits for the datagrams it is told of, ms of wall time, unless told. */
export const ADVANCE_WAIT_MS = 10_000;

/** A request refused before anything happened: the message names the op and the field. */
export class ControlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ControlError";
  }
}

/** What the operations need of the server around them. */
export interface ControlHost {
  /** the device's context now (a reset replaces it) */
  readonly ctx: Context;
  /** the `info` reply: the device, its addresses, its peers, its pacing */
  info(): Record<string, unknown>;
  /** the `stats` reply: the device's counters and the server's */
  stats(): Record<string, unknown>;
  /** a request is about to act: the device's time is brought to the wall's */
  follow(): void;
  /** work was posted: a waiting loop runs again */
  wake(): void;
  /** calls `listener` after each step of the device; returns its removal */
  onStep(listener: () => void): () => void;
  /** step pacing: runs the device to `untilPs` once `received` datagrams have reached it; what it sent (null: the device is paced by the wall) */
  advance(untilPs: bigint, received: number, waitMs: number): Promise<SentDatagram[]> | null;
  /** replaces the device with a new one made as the options made the first, with `config` for --config and --set */
  reset(config: Record<string, number | string>): Promise<void>;
}

/** A reply's fields beside `id` and `ok`. */
export type Result = Record<string, unknown>;

/** One request's fields as the op reads them, each checked with its name in the message. */
class Fields {
  constructor(private readonly req: Record<string, unknown>, readonly op: string) {}

  fail(message: string): never {
    throw new ControlError(`${this.op}: ${message}`);
  }

  /** The field as given (undefined when absent). */
  raw(name: string): unknown {
    return this.req[name];
  }

  /** A whole number in [min, max]; `dflt` when absent, and required when there is none. */
  int(name: string, min: number, max: number, dflt?: number): number {
    const v = this.req[name];
    if (v === undefined && dflt !== undefined) return dflt;
    if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) this.fail(`${name} must be a whole number ${min}..${max}, got ${v === undefined ? "nothing" : JSON.stringify(v)}`);
    return v;
  }

  /** A string; required. */
  string(name: string): string {
    const v = this.req[name];
    if (typeof v !== "string") this.fail(`${name} must be a string, got ${v === undefined ? "nothing" : JSON.stringify(v)}`);
    return v;
  }

  /** A required field, passed on as the verbs call's own check sees it. */
  given(name: string): unknown {
    if (this.req[name] === undefined) this.fail(`${name} is missing`);
    return this.req[name];
  }
}

/** An op: the fields it takes (besides id and op) and what it does. */
interface Op {
  fields: readonly string[];
  run: (f: Fields) => Result | Promise<Result>;
}

/** What a 64-bit field (a wrId, a time in ps) may be, for a refusal's message. */
const U64 = "a whole number >= 0: a JSON number up to 2^53, or a decimal string up to 2^64-1";

/** A 64-bit field's value (a safe integer >= 0, or a decimal string up to 2^64 - 1), or null when it is not one. */
function u64Of(v: unknown): bigint | null {
  if (typeof v === "string" && /^\d{1,20}$/.test(v) && BigInt(v) < 1n << 64n) return BigInt(v);
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  return null;
}

/** A kind of handle: the objects given out, by number, and the op that makes one (for a message). */
interface Handles<T> {
  name: string;
  maker: string;
  live: Map<number, T>;
}

export class ControlOps {
  private readonly pds: Handles<Pd> = { name: "PD", maker: "allocPd", live: new Map() };
  private readonly mrs: Handles<Mr> = { name: "MR", maker: "regMr", live: new Map() };
  private readonly cqs: Handles<Cq> = { name: "CQ", maker: "createCq", live: new Map() };
  private readonly qps: Handles<Qp> = { name: "QP", maker: "createQp", live: new Map() };
  private readonly ops: Record<string, Op>;

  constructor(private readonly host: ControlHost) {
    const none = {};
    this.ops = {
      info: { fields: [], run: () => host.info() },
      stats: { fields: [], run: () => host.stats() },
      allocHostMemory: { fields: ["bytes", "alignment"], run: (f) => ({ addr: host.ctx.allocHostMemory(f.given("bytes") as number, (f.raw("alignment") ?? 64) as number) }) },
      allocHbm: { fields: ["bytes", "alignment"], run: (f) => ({ addr: host.ctx.allocHbm(f.given("bytes") as number, (f.raw("alignment") ?? 64) as number) }) },
      write: {
        fields: ["addr", "data"],
        run: (f) => {
          const data = base64(f, "data");
          host.ctx.write(f.given("addr") as number, data);
          return none;
        },
      },
      read: {
        fields: ["addr", "length"],
        run: (f) => ({ data: Buffer.from(host.ctx.view(f.given("addr") as number, f.int("length", 0, MAX_DATA_BYTES))).toString("base64") }),
      },
      allocPd: { fields: [], run: () => ({ pd: keep(this.pds, host.ctx.allocPd(), (pd) => pd.handle) }) },
      deallocPd: { fields: ["pd"], run: (f) => release(f, "pd", this.pds, (pd) => host.ctx.deallocPd(pd)) },
      regMr: {
        fields: ["pd", "addr", "length", "access"],
        run: (f) => {
          const mr = host.ctx.regMr(held(f, "pd", this.pds), f.given("addr") as number, f.given("length") as number, (f.raw("access") ?? []) as AccessFlag[]);
          return { lkey: keep(this.mrs, mr, (m) => m.lkey), rkey: mr.rkey };
        },
      },
      deregMr: { fields: ["lkey"], run: (f) => release(f, "lkey", this.mrs, (mr) => host.ctx.deregMr(mr)) },
      createCq: { fields: ["depth"], run: (f) => ({ cq: keep(this.cqs, host.ctx.createCq(f.given("depth") as number), (cq) => cq.cqn) }) },
      destroyCq: { fields: ["cq"], run: (f) => release(f, "cq", this.cqs, (cq) => host.ctx.destroyCq(cq)) },
      createQp: {
        fields: ["pd", "sendCq", "recvCq", "maxSendWr", "maxRecvWr", "sqSigAll"],
        run: (f) => {
          const qp = host.ctx.createQp(held(f, "pd", this.pds), {
            sendCq: held(f, "sendCq", this.cqs), recvCq: held(f, "recvCq", this.cqs),
            maxSendWr: f.given("maxSendWr") as number, maxRecvWr: f.given("maxRecvWr") as number, sqSigAll: f.raw("sqSigAll") as boolean | undefined,
          });
          return { qp: keep(this.qps, qp, (q) => q.qpn) };
        },
      },
      modifyQp: {
        fields: ["qp", "state", "destQpNum", "destDevice", "portGroup", "portLane"],
        run: (f) => {
          const attr: QpAttr = { state: f.string("state") as QpStateName };
          for (const k of ["destQpNum", "destDevice", "portLane"] as const) if (f.raw(k) !== undefined) attr[k] = f.raw(k) as number;
          if (f.raw("portGroup") !== undefined) attr.portGroup = f.raw("portGroup") as PortGroup;
          host.ctx.modifyQp(held(f, "qp", this.qps), attr);
          host.wake();
          return none;
        },
      },
      queryQp: { fields: ["qp"], run: (f) => ({ state: host.ctx.qpState(held(f, "qp", this.qps)) }) },
      destroyQp: {
        fields: ["qp"],
        run: (f) => {
          release(f, "qp", this.qps, (qp) => host.ctx.destroyQp(qp));
          host.wake();
          return none;
        },
      },
      postSend: {
        fields: ["qp", "wrs", "doorbell"],
        run: (f) => {
          const qp = held(f, "qp", this.qps);
          host.ctx.postSend(qp, workRequests(f) as SendWr[], f.raw("doorbell") === undefined ? {} : { doorbell: f.raw("doorbell") as "classic" | "express" });
          host.wake();
          return none;
        },
      },
      postRecv: {
        fields: ["qp", "wrs"],
        run: (f) => {
          host.ctx.postRecv(held(f, "qp", this.qps), workRequests(f) as RecvWr[]);
          host.wake();
          return none;
        },
      },
      pollCq: { fields: ["cq", "max", "waitMs"], run: (f) => this.pollCq(f) },
      advance: {
        fields: ["untilPs", "received", "waitMs"],
        run: async (f) => {
          const until = u64Of(f.raw("untilPs"));
          if (until === null) return f.fail(`untilPs must be a time in ps: ${U64}, got ${f.raw("untilPs") === undefined ? "nothing" : JSON.stringify(f.raw("untilPs"))}`);
          const run = host.advance(until, f.int("received", 0, 2 ** 53, 0), f.int("waitMs", 0, MAX_WAIT_MS, ADVANCE_WAIT_MS));
          if (!run) return f.fail("the device's time follows the wall clock: advance needs menic serve --pace step");
          const sent = await run;
          return { nowPs: host.ctx.nowPs.toString(), sent: sent.map((d) => ({ ...d, timePs: d.timePs.toString() })) };
        },
      },
      reset: {
        fields: ["config"],
        run: async (f) => {
          const config = f.raw("config") ?? {};
          if (typeof config !== "object" || config === null || Array.isArray(config)) f.fail(`config must be an object of device config fields, got ${JSON.stringify(config)}`);
          await host.reset(config as Record<string, number | string>);
          for (const h of [this.pds, this.mrs, this.cqs, this.qps]) h.live.clear();
          return { nowPs: host.ctx.nowPs.toString() };
        },
      },
    };
  }

  /** The ops' names, for a message. */
  get names(): string[] {
    return Object.keys(this.ops);
  }

  /**
   * Runs one request (a JSON object with `op` and the op's fields; `id` is the caller's): resolves
   * with the reply's fields, or rejects with a ControlError or VerbsError saying what is wrong.
   */
  async run(req: Record<string, unknown>): Promise<Result> {
    const name = req.op;
    if (typeof name !== "string") throw new ControlError(`the request has no "op" (a string: ${this.names.join(", ")})`);
    const op = Object.hasOwn(this.ops, name) ? this.ops[name] : undefined;
    if (!op) throw new ControlError(`unknown op ${JSON.stringify(name)}${didYouMean(name, this.names)} (ops: ${this.names.join(", ")})`);
    for (const k of Object.keys(req)) {
      if (k !== "id" && k !== "op" && !op.fields.includes(k))
        throw new ControlError(`${name}: unknown field ${JSON.stringify(k)}${didYouMean(k, op.fields)} (${name} takes ${op.fields.length ? op.fields.join(", ") : "no fields"})`);
    }
    this.host.follow();
    return op.run(new Fields(req, name));
  }

  /** pollCq: the completions there are, or with `waitMs`, the first to come within it. */
  private pollCq(f: Fields): Result | Promise<Result> {
    const ctx = this.host.ctx, cq = held(f, "cq", this.cqs);
    const max = f.int("max", 1, MAX_POLL, 16), waitMs = f.int("waitMs", 0, MAX_WAIT_MS, 0);
    const result = (wcs: Wc[]) => ({ completions: wcs.map(wcJson) });
    const now = ctx.pollCq(cq, max);
    if (now.length > 0 || waitMs === 0) return result(now);
    return new Promise((resolve, reject) => {
      const finish = (wcs: Wc[] | Error) => {
        off();
        clearTimeout(timer);
        if (wcs instanceof Error) reject(wcs);
        else resolve(result(wcs));
      };
      const off = this.host.onStep(() => {
        try {
          const got = ctx.pollCq(cq, max);
          if (got.length > 0) finish(got);
        } catch (e) {
          finish(e as Error);
        }
      });
      const timer = setTimeout(() => finish([]), waitMs);
    });
  }
}

/** The object a handle field `name` names, or a ControlError saying there is none. */
function held<T>(f: Fields, name: string, h: Handles<T>): T {
  const n = f.int(name, 0, 2 ** 32);
  const v = h.live.get(n);
  if (v === undefined) f.fail(`${name} ${n}: no such ${h.name} on this device (${h.maker} makes one)`);
  return v;
}

/** Keeps an object just made under its number; returns the number. */
function keep<T>(h: Handles<T>, v: T, number: (v: T) => number): number {
  h.live.set(number(v), v);
  return number(v);
}

/** Ends the object field `name` names with `end` (the verbs call), then forgets it. */
function release<T>(f: Fields, name: string, h: Handles<T>, end: (v: T) => void): Result {
  const v = held(f, name, h);
  end(v);
  h.live.delete(f.int(name, 0, 2 ** 32));
  return {};
}

/** A request's `data`: base64 of at most MAX_DATA_BYTES. */
function base64(f: Fields, name: string): Uint8Array {
  const text = f.string(name);
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) f.fail(`${name} must be base64 (RFC 4648 §4, with padding)`);
  if ((text.length / 4) * 3 > MAX_DATA_BYTES + 2) f.fail(`${name} holds more than ${MAX_DATA_BYTES} bytes: write them in several requests`);
  return Buffer.from(text, "base64");
}

/** A request's `wrs`, each `wrId` made a bigint (a decimal string up to 2^64-1, or a safe integer). */
function workRequests(f: Fields): unknown[] {
  const wrs = f.given("wrs");
  if (!Array.isArray(wrs)) f.fail(`wrs must be an array of work requests, got ${JSON.stringify(wrs)}`);
  return wrs.map((wr: unknown, i) => {
    if (typeof wr !== "object" || wr === null || Array.isArray(wr)) f.fail(`wrs[${i}] must be a work request object, got ${JSON.stringify(wr)}`);
    const id = (wr as { wrId?: unknown }).wrId;
    const wrId = u64Of(id);
    if (wrId === null) return f.fail(`wrs[${i}].wrId must be ${U64}, got ${id === undefined ? "nothing" : JSON.stringify(id)}`);
    return { ...wr, wrId };
  });
}

/** A completion as JSON: its 64-bit id and time as decimal strings. */
function wcJson(wc: Wc): Record<string, unknown> {
  return { ...wc, wrId: wc.wrId.toString(), timePs: wc.timePs.toString() };
}
