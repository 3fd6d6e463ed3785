// A reference model of the host verbs API's queues (docs/nic.md): which work requests
// complete, with which status and which bytes placed, never when. The test drives the
// emulator and this model with the same operations and, after every one, hands the model
// the completions it polled; the model must explain them.
//
// Timing is left to the emulator. Completions are polled after every operation, so a
// completion seen after operation k happened during k: its Done saw the world as the host
// left it before k, changed by the NIC's own work inside k (receives taken, QPs sent to ERR).
// The NIC's work inside one step is not observed in order across CQs, so `explain` searches
// for an order (per CQ the order is observed) in which every completion is allowed:
//  - a request's status is what its checks give in the world at its Done, or what they gave
//    in a world it may have started in (its `seen` set: the world before each advance, the
//    world each step ended in (which the NIC still sees until the host's next doorbells
//    arrive), and before and after a control command on its QP, which delivers its doorbells
//    and may start it), and SUCCESS only when the world at Done allows it (docs/nic.md: "At
//    Done ... the request is checked again");
//  - each QP's send queue runs in order, one at a time; an unsignaled successful WRITE or READ
//    writes no completion, so it is taken as done when a later entry of its QP completes;
//  - ERR completes every entry once, at once and in posting order (IB spec 10.3.1; a send
//    queue completes in the order it was posted): a request in flight when its QP goes to ERR
//    or is destroyed (the `exempt` one) completes with the outcome it already has (an error its
//    checks found) or WR_FLUSH_ERR, never SUCCESS (a transfer of this device places its bytes
//    and completes in one step), then the entries behind it are flushed;
//  - RESET discards without completions (from ERR, what the QP's delivered doorbells announce
//    is flushed first); destroyQp completes everything at once, as ERR does; a host call that throws changes
//    nothing, and one the model cannot judge without timing (a post that may find room, a
//    RESET that may find a request in flight) may go either way.
// Bytes: sources are never written (their regions grant no write right), so a successful
// transfer's bytes are known. Every byte of a sink must be its last writer's value per QP
// (writers of different QPs in one step may land in either order), or unchanged when none
// wrote it; an unsignaled transfer that may have run unobserved may also have written it.

import type { Wc } from "../../host/verbs.js";
import { ACCESS, REMOTE_KEY_BIT } from "../../host/generated/layouts.js";

export type Status =
  | "SUCCESS" | "LOC_LEN_ERR" | "LOC_QP_OP_ERR" | "LOC_PROT_ERR" | "WR_FLUSH_ERR" | "REM_INV_REQ_ERR"
  | "REM_ACCESS_ERR" | "REM_OP_ERR" | "RETRY_EXC_ERR" | "RNR_RETRY_EXC_ERR";
export type QpState = "RESET" | "INIT" | "RTR" | "RTS" | "ERR";
export type SendOp = "RDMA_WRITE" | "RDMA_WRITE_WITH_IMM" | "SEND" | "SEND_WITH_IMM" | "RDMA_READ";

export const { LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ } = ACCESS;
export { REMOTE_KEY_BIT };

/** Guard bytes on each side of every buffer, and their value. */
export const GUARD = 64, GUARD_BYTE = 0xee;

/**
 * A buffer of the test. Sources are filled with `sourceByte` once and registered without
 * write rights, so they never change; sinks are registered without REMOTE_READ, so no
 * request reads them.
 */
export interface ModelBuffer { readonly id: number; readonly role: "source" | "sink"; readonly addr: number; readonly length: number }

export const sourceByte = (buf: number, off: number) => (off * 7 + buf * 61 + 13) & 0xff;
export const sinkFill = (buf: number) => (0x40 + buf * 3) & 0xff;

export interface ModelMr { readonly buf: ModelBuffer; readonly pd: number; readonly access: number; readonly lkey: number; live: boolean }

export interface SendEntry {
  readonly kind: "send"; readonly wrId: number; readonly qp: ModelQp; readonly op: SendOp; readonly signaled: boolean;
  readonly len: number; readonly laddr: number; readonly lkey: number; readonly raddr: number; readonly rkey: number; readonly imm: number;
  /** It may have started: it was outstanding while its QP was in RTS. */
  startable: boolean;
  /** Statuses its checks gave in worlds it may have started in. */
  readonly seen: Set<Status>;
}

export interface RecvEntry { readonly kind: "recv"; readonly wrId: number; readonly qp: ModelQp; readonly laddr: number; readonly len: number; readonly lkey: number }

export class ModelQp {
  state: QpState = "RESET";
  dest: number | null = null;
  sq: SendEntry[] = [];
  rq: RecvEntry[] = [];
  /** The request that may be in flight since the host moved the QP to ERR. */
  exempt: SendEntry | null = null;
  destroyed = false;
  /** Set by a command whose effects complete at once (ERR, destroy, RESET from ERR): checked at the end of its step. */
  settle: "err" | "destroy" | "reset" | null = null;
  constructor(
    readonly id: number, readonly qpn: number, readonly pd: number, readonly sendCq: number, readonly recvCq: number,
    readonly sqDepth: number, readonly rqDepth: number, readonly sigAll: boolean,
  ) {}
}

/** A transfer that placed (or, for `optional` ones, may have placed) bytes in a sink. */
interface Write { qp: number; dst: ModelBuffer; dstOff: number; src: ModelBuffer; srcOff: number; len: number }

/**
 * A QP in the search. `finishing`: its request failed at the target's receive, which has
 * completed; the target went to ERR and flushed before this request writes its own completion.
 */
/**
 * A QP as one order of a step's transitions leaves it. `emptied`: at some point of the step it
 * was RTR or RTS with no receive posted, so a request that consumes one and was in flight then
 * may have had its last RNR NAK from it, though the QP has failed since (its own request ran
 * out of RNR retries a moment before).
 */
interface QView { state: QpState; sq: SendEntry[]; rq: RecvEntry[]; exempt: SendEntry | null; finishing: Status | null; emptied: boolean }
interface World { qs: QView[]; writes: Write[]; optional: Write[]; done: number[] }

/** The completion a transition of the model writes. */
interface Cqe { cq: number; wrId: number; status: Status; opcode: string; qpNum: number; byteLen: number; imm: number | null }

export class ModelError extends Error {}

const consumes = (op: SendOp) => op === "SEND" || op === "SEND_WITH_IMM" || op === "RDMA_WRITE_WITH_IMM";
const isSend = (op: SendOp) => op === "SEND" || op === "SEND_WITH_IMM";
const ready = (s: QpState) => s === "RTR" || s === "RTS";

/** What a host call must do: throw, succeed, or either (the model cannot know the timing that decides). */
export type Verdict = "throw" | "ok" | "either";

export interface ExplainOptions {
  /** The step ran until nothing was left to happen: every request that could run has run. */
  quiet: boolean;
  /** The emulator's state of a live QP. */
  state(qp: ModelQp): QpState;
  /** Bytes of DMA memory. */
  read(addr: number, length: number): Uint8Array;
}

export class VerbsModel {
  readonly qps: ModelQp[] = [];
  readonly mrs: ModelMr[] = [];
  readonly buffers: ModelBuffer[] = [];
  private readonly entries = new Map<number, SendEntry | RecvEntry>();
  private readonly done = new Map<number, number>(); // wrId -> step it completed in
  private readonly discarded = new Set<number>();
  private readonly keysIssued = new Set<number>();
  private shadow = new Map<ModelBuffer, Uint8Array>();
  step = 0;
  completions = 0;
  /** Search nodes of the last explanation, and the most of any. */
  nodes = 0;
  maxNodes = 0;

  constructor(readonly maxQps: number, private readonly nodeBudget = 200_000) {}

  // ---- objects

  addBuffer(role: "source" | "sink", addr: number, length: number): ModelBuffer {
    const b: ModelBuffer = { id: this.buffers.length, role, addr, length };
    this.buffers.push(b);
    if (role === "sink") this.shadow.set(b, new Uint8Array(length).fill(sinkFill(b.id)));
    return b;
  }

  addMr(buf: ModelBuffer, pd: number, access: number, lkey: number, rkey: number): ModelMr {
    if (lkey === 0 || rkey !== (lkey | REMOTE_KEY_BIT) >>> 0) throw new ModelError(`regMr gave lkey 0x${lkey.toString(16)}, rkey 0x${rkey.toString(16)}`);
    if (this.keysIssued.has(lkey)) throw new ModelError(`regMr gave lkey 0x${lkey.toString(16)} again: a stale key would name the new region`);
    if (buf.role === "source" && access & (LOCAL_WRITE | REMOTE_WRITE)) throw new Error("test bug: a source must stay read-only");
    if (buf.role === "sink" && access & REMOTE_READ) throw new Error("test bug: a sink must not be read");
    this.keysIssued.add(lkey);
    const m: ModelMr = { buf, pd, access, lkey, live: true };
    this.mrs.push(m);
    return m;
  }

  addQp(qpn: number, pd: number, sendCq: number, recvCq: number, sqDepth: number, rqDepth: number, sigAll: boolean): ModelQp {
    const clash = this.qps.find((q) => !q.destroyed && q.qpn === qpn);
    if (clash) throw new ModelError(`createQp gave QP number ${qpn}, which QP #${clash.id} still has`);
    const q = new ModelQp(this.qps.length, qpn, pd, sendCq, recvCq, sqDepth, rqDepth, sigAll);
    this.qps.push(q);
    return q;
  }

  /** The PD of the QP that `q` sends to, if there is one. */
  targetPd(q: ModelQp): number | null {
    return this.target(q)?.pd ?? null;
  }

  private target(q: ModelQp): ModelQp | null {
    if (q.dest === null) return null;
    return this.qps.find((t) => !t.destroyed && t.qpn === q.dest) ?? null;
  }

  private mrOf(key: number): ModelMr | null {
    const lkey = (key & ~REMOTE_KEY_BIT) >>> 0;
    return this.mrs.find((m) => m.live && m.lkey === lkey) ?? null;
  }

  /** assembly/nic/verbs.ts mrCheck: zero-length accesses need no region (IB spec 10.6.3.1). */
  private keyOk(key: number, remote: boolean, pd: number, addr: number, len: number, need: number): boolean {
    if (len === 0) return true;
    if ((key >>> 31 === 1) !== remote) return false;
    const m = this.mrOf(key);
    if (!m || m.pd !== pd) return false;
    const base = m.buf.addr, length = m.buf.length;
    if (addr < base || len > length || addr - base > length - len) return false;
    return (m.access & need) === need;
  }

  // ---- the checks of a request (docs/nic.md "Executing a request", in the NIC's order)

  private evaluate(e: SendEntry, qs: QView[]): Status {
    const q = e.qp, read = e.op === "RDMA_READ";
    if (!this.keyOk(e.lkey, false, q.pd, e.laddr, e.len, read ? LOCAL_WRITE : 0)) return "LOC_PROT_ERR";
    const t = this.target(q);
    if (!t || !ready(qs[t.id].state)) return "RETRY_EXC_ERR";
    if (!isSend(e.op) && !this.keyOk(e.rkey, true, t.pd, e.raddr, e.len, read ? REMOTE_READ : REMOTE_WRITE)) return "REM_ACCESS_ERR";
    if (consumes(e.op)) {
      const r = qs[t.id].rq[0];
      if (!r) return "RNR_RETRY_EXC_ERR";
      if (isSend(e.op)) {
        if (e.len > r.len) return "REM_INV_REQ_ERR";
        if (!this.keyOk(r.lkey, false, t.pd, r.laddr, e.len, LOCAL_WRITE)) return "REM_OP_ERR";
      }
    }
    return "SUCCESS";
  }

  private liveView(): QView[] {
    return this.qps.map((q) => ({ state: q.state, sq: q.sq, rq: q.rq, exempt: q.exempt, finishing: null, emptied: ready(q.state) && q.rq.length === 0 }));
  }

  /** Records, for the entries of `qps` that may start now, what their checks give in the world as it is (or in `view`). */
  private snapshot(qps: ModelQp[], view: QView[] = this.liveView()): void {
    for (const q of qps) {
      if (q.destroyed) continue;
      for (const e of q.sq) if (e.startable && (q.state === "RTS" || e === q.exempt)) e.seen.add(this.evaluate(e, view));
    }
  }

  /** Before time advances: every request that may run sees the world as the host left it. */
  beforeAdvance(): void {
    this.snapshot(this.qps);
  }

  /** An unsignaled WRITE or READ whose success writes no completion, and which may have succeeded. */
  private silent(e: SendEntry, qs: QView[]): boolean {
    if (e.signaled || e.qp.sigAll || consumes(e.op) || !e.startable) return false;
    return e.seen.has("SUCCESS") || this.evaluate(e, qs) === "SUCCESS";
  }

  private silentPrefix(q: ModelQp, qs: QView[]): number {
    const sq = qs[q.id].sq;
    let k = 0;
    while (k < sq.length && this.silent(sq[k], qs)) k++;
    return k;
  }

  // ---- host calls: what they must do, and their effect when they succeed

  /** Send entries the NIC may still hold (as the host counts room: posted minus finished), at least and at most. */
  private sqHeld(q: ModelQp): [number, number] {
    const view = this.liveView();
    const k = this.silentPrefix(q, view);
    return [q.sq.length - k, q.sq.length];
  }

  expectPost(q: ModelQp, n: number): Verdict {
    if (q.destroyed) return "throw";
    const [lo, hi] = this.sqHeld(q);
    if (lo + n > q.sqDepth) return "throw";
    if (hi + n > q.sqDepth) return "either";
    return q.state === "RESET" ? "either" : "ok";
  }

  /** The host accepted `wrs`: the entries the NIC finished unobserved are taken as done to make room. */
  post(q: ModelQp, wrs: Omit<SendEntry, "kind" | "qp" | "startable" | "seen">[]): void {
    for (;;) {
      const [, hi] = this.sqHeld(q);
      if (hi + wrs.length <= q.sqDepth) break;
      const e = q.sq[0];
      if (!e || !this.silent(e, this.liveView())) throw new ModelError(`postSend of ${wrs.length} accepted on QP ${q.qpn} though its ${q.sqDepth} slots hold ${hi} unfinished entries`);
      this.completeSilently(q, e);
    }
    for (const w of wrs) {
      const e: SendEntry = { ...w, kind: "send", qp: q, startable: q.state === "RTS", seen: new Set() };
      this.entries.set(e.wrId, e);
      q.sq.push(e);
    }
  }

  private completeSilently(q: ModelQp, e: SendEntry): void {
    q.sq.shift();
    if (q.exempt === e) q.exempt = null;
    this.done.set(e.wrId, this.step);
  }

  expectRecv(q: ModelQp, n: number): Verdict {
    if (q.destroyed || q.rq.length + n > q.rqDepth) return "throw";
    return q.state === "RESET" ? "either" : "ok";
  }

  recv(q: ModelQp, wrs: Omit<RecvEntry, "kind" | "qp">[]): void {
    for (const w of wrs) {
      const r: RecvEntry = { ...w, kind: "recv", qp: q };
      this.entries.set(r.wrId, r);
      q.rq.push(r);
    }
  }

  /** May a request of `q` be in flight (which refuses RESET)? */
  private mayBeBusy(q: ModelQp): boolean {
    return q.sq.some((e) => e.startable) && (q.state === "RTS" || q.exempt !== null);
  }

  expectModify(q: ModelQp, to: QpState, dest: number | undefined): Verdict {
    if (q.destroyed) return "throw";
    if (dest !== undefined && (dest < 0 || dest >= this.maxQps)) return "throw";
    if (to === "ERR") return "ok";
    if (to === "RESET") return this.mayBeBusy(q) ? "either" : "ok";
    if (to === "RTR" && dest === undefined) return "throw";
    const from = q.state;
    const ok = (from === "RESET" && to === "INIT") || (from === "INIT" && to === "RTR") || (from === "RTR" && to === "RTS") || from === to;
    return ok ? "ok" : "throw";
  }

  /** Before a command on `q` (it delivers the QP's doorbells first, which may start its next request). */
  beforeCommand(q: ModelQp): void {
    this.snapshot([q]);
  }

  modify(q: ModelQp, to: QpState, dest: number | undefined): void {
    const from = q.state;
    if (to === "ERR") {
      if (from === "RTS") q.exempt = q.sq[0]?.startable ? q.sq[0] : null;
      else if (from !== "ERR") q.exempt = null;
      q.state = "ERR";
      q.settle = "err";
      return;
    }
    if (to === "RESET") {
      // nothing was in flight (else RESET is refused): a request that might have been has
      // finished unobserved, or never started and is flushed below
      q.exempt = null;
      if (from === "ERR") {
        // its doorbells are delivered first: what they announce is flushed before the reset
        q.settle = "reset";
      } else {
        for (const e of q.sq) this.discarded.add(e.wrId);
        for (const r of q.rq) this.discarded.add(r.wrId);
        q.sq = [];
        q.rq = [];
      }
      q.state = "RESET";
      return;
    }
    if (to === "RTR") q.dest = dest!;
    q.state = to;
    if (to === "RTS") {
      for (const e of q.sq) e.startable = true;
      this.snapshot([q]);
    }
  }

  destroy(q: ModelQp): void {
    // a destroyed QP goes to ERR first: its request in flight ends as at ERR
    if (q.state === "RTS") q.exempt = q.sq[0]?.startable ? q.sq[0] : null;
    q.destroyed = true;
    q.settle = "destroy";
  }

  expectDereg(mr: ModelMr): Verdict {
    return mr.live ? "ok" : "throw";
  }

  dereg(mr: ModelMr): void {
    mr.live = false;
  }

  // ---- explaining the completions of one step

  /**
   * Explains the completions polled after one step (per CQ, in order). Throws ModelError
   * when no order of the model's transitions produces them, or when what is left afterwards
   * (QP states, bytes, requests that must have completed) disagrees with the emulator.
   */
  explain(polled: Map<number, Wc[]>, opts: ExplainOptions): void {
    this.step++;
    const cqs = [...polled.keys()].filter((c) => polled.get(c)!.length > 0);
    const obs = cqs.map((c) => polled.get(c)!);
    const total = obs.reduce((n, l) => n + l.length, 0);
    for (const list of obs) for (const c of list) this.precheck(c);
    const start: World = { qs: this.liveView().map((v) => ({ ...v, sq: [...v.sq], rq: [...v.rq] })), writes: [], optional: [], done: [] };
    const actual = new Map<ModelBuffer, Uint8Array>();
    for (const b of this.buffers) actual.set(b, opts.read(b.addr - GUARD, b.length + 2 * GUARD));
    let best: { depth: number; why: string } = { depth: -1, why: "" };
    const failed = new Set<string>();
    this.nodes = 0;

    const search = (w: World, cur: number[], depth: number): World | null => {
      if (++this.nodes > this.nodeBudget) throw new ModelError(`step ${this.step}: no explanation within ${this.nodeBudget} search nodes (${total} completions); closest: ${best.why}`);
      const key = this.key(w, cur);
      if (failed.has(key)) return null;
      if (depth === total) {
        const end = this.finish(w, opts, actual);
        if (typeof end !== "string") return end;
        if (depth >= best.depth) best = { depth, why: end };
        failed.add(key);
        return null;
      }
      let tried = false;
      for (let i = 0; i < cqs.length; i++) {
        if (cur[i] >= obs[i].length) continue;
        for (const next of this.transitions(w, obs[i][cur[i]])) {
          const moved = this.consume(next.cqes, cqs, obs, cur);
          if (moved === null) continue;
          tried = true;
          const r = search(next.world, moved, depth + next.cqes.length);
          if (r) return r;
        }
      }
      if (!tried && depth >= best.depth) best = { depth, why: this.unexplained(w, cqs, obs, cur) };
      failed.add(key);
      return null;
    };

    const end = search(start, cqs.map(() => 0), 0);
    this.maxNodes = Math.max(this.maxNodes, this.nodes);
    if (!end) throw new ModelError(`step ${this.step}: ${best.why}\n  completions: ${this.describe(cqs, obs)}`);
    this.commit(end, actual, start);
    this.completions += total;
  }

  /** Completions that no search can explain, named plainly. */
  private precheck(c: Wc): void {
    const id = Number(c.wrId);
    const e = this.entries.get(id);
    if (this.discarded.has(id)) throw new ModelError(`step ${this.step}: wr ${id} completed (${c.status}) after RESET discarded it`);
    if (this.done.has(id)) throw new ModelError(`step ${this.step}: wr ${id} completed twice (${c.status}; first in step ${this.done.get(id)})`);
    if (!e) throw new ModelError(`step ${this.step}: a completion (${c.status}, qp ${c.qpNum}) for wr ${id}, which was never posted (or its post threw)`);
    if (c.qpNum !== e.qp.qpn) throw new ModelError(`step ${this.step}: wr ${id} of QP ${e.qp.qpn} completed with qp_num ${c.qpNum}`);
  }

  private describe(cqs: number[], obs: Wc[][]): string {
    return cqs.map((c, i) => `CQ ${c}: ${obs[i].map((x) => `${x.wrId}:${x.status}${x.status === "SUCCESS" ? `/${x.byteLen}` : ""}`).join(" ")}`).join("; ") || "none";
  }

  private unexplained(w: World, cqs: number[], obs: Wc[][], cur: number[]): string {
    const heads = cqs.map((c, i) => (cur[i] < obs[i].length ? obs[i][cur[i]] : null)).filter((x): x is Wc => x !== null);
    return heads.map((c) => {
      const e = this.entries.get(Number(c.wrId))!;
      const q = w.qs[e.qp.id];
      const where = e.kind === "send" ? q.sq.indexOf(e) : q.rq.indexOf(e);
      let allowed = "";
      if (e.kind === "send" && where >= 0) allowed = `; its checks now give ${this.evaluate(e, w.qs)}, seen ${[...e.seen].join("/") || "nothing"}`;
      return `wr ${c.wrId} (${e.kind === "send" ? e.op : "RECV"} on QP ${e.qp.qpn}, ${q.state}${e.qp.destroyed ? ", destroyed" : ""}, position ${where}) completed ${c.status} and nothing explains it${allowed}`;
    }).join("; ");
  }

  private key(w: World, cur: number[]): string {
    const qs = w.qs.map((q) => `${q.state}${q.sq.map((e) => e.wrId).join(",")}/${q.rq.map((r) => r.wrId).join(",")}/${q.exempt?.wrId ?? ""}/${q.finishing ?? ""}/${q.emptied ? 1 : 0}`).join("|");
    const writes = w.writes.map((x) => `${x.qp}:${x.dst.id}:${x.dstOff}:${x.src.id}:${x.srcOff}:${x.len}`).sort().join(",");
    return `${cur.join(",")}#${qs}#${writes}`;
  }

  /** Advances the CQ cursors over `cqes` in order, or null when one is not next in its CQ. */
  private consume(cqes: Cqe[], cqs: number[], obs: Wc[][], cur: number[]): number[] | null {
    const next = [...cur];
    for (const x of cqes) {
      const i = cqs.indexOf(x.cq);
      if (i < 0 || next[i] >= obs[i].length) return null;
      const c = obs[i][next[i]];
      if (Number(c.wrId) !== x.wrId || c.status !== x.status || c.opcode !== x.opcode || c.qpNum !== x.qpNum || c.byteLen !== x.byteLen) return null;
      if (x.imm === null ? c.imm !== undefined : c.imm !== x.imm) return null;
      next[i]++;
    }
    return next;
  }

  private clone(w: World): World {
    return { qs: w.qs.map((q) => ({ ...q, sq: [...q.sq], rq: [...q.rq] })), writes: [...w.writes], optional: [...w.optional], done: [...w.done] };
  }

  /** The model's transitions that would write completion `c` (among others). */
  private *transitions(w: World, c: Wc): Generator<{ world: World; cqes: Cqe[] }> {
    const e = this.entries.get(Number(c.wrId));
    if (!e) return;
    if (e.kind === "send") {
      const idx = w.qs[e.qp.id].sq.indexOf(e);
      if (idx < 0) return;
      // explanations that complete fewer requests unobserved first: they commit to less
      // (a request left in flight may still complete, or land bytes, in a later step)
      const x = this.exec(w, e.qp, idx, c.status as Status);
      if (x) yield x;
      if (c.status === "WR_FLUSH_ERR") {
        const f = this.flush(w, e.qp, idx);
        if (f) yield f;
      }
      return;
    }
    const t = e.qp, tv = w.qs[t.id];
    if (tv.rq[0] !== e) return;
    if (c.status === "WR_FLUSH_ERR") {
      if (tv.state === "ERR" || t.destroyed || t.settle === "reset") {
        const n = this.clone(w);
        n.qs[t.id].rq.shift();
        n.done.push(e.wrId);
        yield { world: n, cqes: [{ cq: t.recvCq, wrId: e.wrId, status: "WR_FLUSH_ERR", opcode: "RECV", qpNum: t.qpn, byteLen: 0, imm: null }] };
      }
      return;
    }
    // a receive taken by a sender's request: SUCCESS, or the receive side of its failure
    const s: Status | null = c.status === "SUCCESS" ? "SUCCESS" : c.status === "LOC_LEN_ERR" ? "REM_INV_REQ_ERR" : c.status === "LOC_PROT_ERR" ? "REM_OP_ERR" : null;
    if (!s) return;
    for (const q of this.qps) {
      if (q.destroyed || q.dest !== t.qpn || this.target(q) !== t) continue;
      const sq = w.qs[q.id].sq;
      for (let i = 0; i < sq.length; i++) {
        if (consumes(sq[i].op)) {
          const x = this.exec(w, q, i, s);
          if (x) yield x;
        }
        if (!this.silent(sq[i], w.qs)) break;
      }
    }
  }

  /** Entry `idx` of `q` runs to completion with status `s`, the entries before it having completed unobserved. */
  private exec(w0: World, q: ModelQp, idx: number, s: Status): { world: World; cqes: Cqe[] } | null {
    const v0 = w0.qs[q.id];
    const e = v0.sq[idx];
    if (v0.finishing !== null) {
      // the request whose target's receive failed writes its own completion
      if (idx !== 0 || s !== v0.finishing) return null;
      const w = this.clone(w0);
      const v = w.qs[q.id];
      v.sq.shift();
      w.done.push(e.wrId);
      v.finishing = null;
      v.state = "ERR";
      v.exempt = null;
      return { world: w, cqes: [{ cq: q.sendCq, wrId: e.wrId, status: s, opcode: e.op, qpNum: q.qpn, byteLen: 0, imm: null }] };
    }
    if (!e.startable) return null;
    for (let i = 0; i < idx; i++) if (!this.silent(v0.sq[i], w0.qs)) return null;
    const exemptReach = v0.exempt !== null && v0.sq.indexOf(v0.exempt) <= idx && v0.sq.indexOf(v0.exempt) >= 0;
    // a request in flight when its QP went to ERR (or was destroyed) ends then, with its outcome
    const ending = v0.state === "ERR" || q.destroyed;
    if (ending ? !exemptReach : v0.state !== "RTS") return null;
    const w = this.clone(w0);
    const v = w.qs[q.id];
    for (let i = 0; i < idx; i++) this.silentDone(w, v.sq.shift()!);
    const now = this.evaluate(e, w.qs);
    const allowed = new Set(e.seen);
    // a receive's size and key are judged at Done, when it is taken (docs/nic.md)
    allowed.delete("REM_INV_REQ_ERR");
    allowed.delete("REM_OP_ERR");
    allowed.add(now);
    if (now !== "SUCCESS") allowed.delete("SUCCESS");
    const t = this.target(q);
    // its target failed after answering it "not ready": the RNR NAKs it had counted
    if (now === "RETRY_EXC_ERR" && consumes(e.op) && t && w.qs[t.id].emptied) allowed.add("RNR_RETRY_EXC_ERR");
    if (ending) {
      // it has not executed (a transfer places its bytes and completes in one step): its
      // checks' failure, or flushed
      for (const x of ["SUCCESS", "REM_INV_REQ_ERR", "REM_OP_ERR"] as const) allowed.delete(x);
      allowed.add("WR_FLUSH_ERR");
    }
    if (!allowed.has(s)) return null;
    const cqes: Cqe[] = [];
    if ((s === "REM_INV_REQ_ERR" || s === "REM_OP_ERR") && t && w.qs[t.id].rq.length > 0) {
      // the target's receive fails too and the target goes to ERR (IB spec 9.9.3), flushing,
      // before this request completes
      const tv = w.qs[t.id];
      const r = tv.rq.shift()!;
      w.done.push(r.wrId);
      cqes.push({ cq: t.recvCq, wrId: r.wrId, status: s === "REM_INV_REQ_ERR" ? "LOC_LEN_ERR" : "LOC_PROT_ERR", opcode: "RECV", qpNum: t.qpn, byteLen: 0, imm: null });
      this.toErr(tv, t === q ? e : null);
      v.finishing = s;
      return { world: w, cqes };
    }
    v.sq.shift();
    w.done.push(e.wrId);
    if (s === "SUCCESS") {
      if (consumes(e.op)) {
        const tv = w.qs[t!.id];
        const r = tv.rq.shift()!;
        if (tv.rq.length === 0 && ready(tv.state)) tv.emptied = true;
        w.done.push(r.wrId);
        cqes.push({
          cq: t!.recvCq, wrId: r.wrId, status: "SUCCESS", opcode: e.op === "RDMA_WRITE_WITH_IMM" ? "RDMA_WRITE_WITH_IMM" : "RECV",
          qpNum: t!.qpn, byteLen: e.len, imm: e.op === "SEND" ? null : e.imm,
        });
        if (isSend(e.op) && e.len > 0) w.writes.push(this.transfer(q, this.mrOf(r.lkey)!, r.laddr, this.mrOf(e.lkey)!, e.laddr, e.len));
      }
      if (!isSend(e.op) && e.len > 0) w.writes.push(this.landing(q, e));
    }
    if (e.signaled || q.sigAll || s !== "SUCCESS") {
      cqes.push({ cq: q.sendCq, wrId: e.wrId, status: s, opcode: e.op, qpNum: q.qpn, byteLen: s === "SUCCESS" ? e.len : 0, imm: null });
    }
    if (v.exempt === e || (v.exempt !== null && !v.sq.includes(v.exempt))) v.exempt = null;
    if (s !== "SUCCESS") { v.state = "ERR"; v.exempt = null; }
    return { world: w, cqes };
  }

  /** The NIC moves a QP to ERR by itself (its receive failed): a request of its own may be in flight (`busy`, when it is the failing one). */
  private toErr(tv: QView, busy: SendEntry | null): void {
    if (tv.state === "RTS") {
      tv.exempt = busy ?? (tv.sq[0]?.startable ? tv.sq[0] : null);
    }
    tv.state = "ERR";
  }

  /**
   * Entry `idx` of `q` is flushed, the entries before it having completed unobserved: never
   * one behind a request still to complete (the queue completes in the order it was posted).
   */
  private flush(w0: World, q: ModelQp, idx: number): { world: World; cqes: Cqe[] } | null {
    const v0 = w0.qs[q.id];
    if (!(v0.state === "ERR" || q.destroyed || q.settle === "reset")) return null;
    for (let i = 0; i < idx; i++) if (!this.silent(v0.sq[i], w0.qs)) return null;
    const w = this.clone(w0);
    const v = w.qs[q.id];
    for (let i = 0; i < idx; i++) this.silentDone(w, v.sq.shift()!);
    const e = v.sq.shift()!;
    if (v.exempt !== null && !v.sq.includes(v.exempt)) v.exempt = null;
    w.done.push(e.wrId);
    return { world: w, cqes: [{ cq: q.sendCq, wrId: e.wrId, status: "WR_FLUSH_ERR", opcode: e.op, qpNum: q.qpn, byteLen: 0, imm: null }] };
  }

  /** An unsignaled WRITE or READ completed unobserved: its bytes may have landed. */
  private silentDone(w: World, e: SendEntry): void {
    w.done.push(e.wrId);
    const x = this.mayLand(e, w.qs);
    if (x) w.optional.push(x);
  }

  /**
   * Where an unobserved request may have put its bytes: it could succeed (at some moment, which
   * nothing orders against the rest of the step) and its regions are still registered (a
   * region deregistered before the step takes no more bytes).
   */
  private mayLand(e: SendEntry, qs: QView[]): Write | null {
    if (e.len === 0 || !(e.seen.has("SUCCESS") || this.evaluate(e, qs) === "SUCCESS")) return null;
    const read = e.op === "RDMA_READ", rm = this.mrOf(e.rkey);
    if (!this.keyOk(e.lkey, false, e.qp.pd, e.laddr, e.len, read ? LOCAL_WRITE : 0)) return null;
    if (!rm || !this.keyOk(e.rkey, true, rm.pd, e.raddr, e.len, read ? REMOTE_READ : REMOTE_WRITE)) return null;
    return this.landing(e.qp, e);
  }

  /** Where a successful WRITE, WRITE_WITH_IMM or READ puts its bytes. */
  private landing(q: ModelQp, e: SendEntry): Write {
    return e.op === "RDMA_READ"
      ? this.transfer(q, this.mrOf(e.lkey)!, e.laddr, this.mrOf(e.rkey)!, e.raddr, e.len)
      : this.transfer(q, this.mrOf(e.rkey)!, e.raddr, this.mrOf(e.lkey)!, e.laddr, e.len);
  }

  private transfer(q: ModelQp, dst: ModelMr, dstAddr: number, src: ModelMr, srcAddr: number, len: number): Write {
    if (src.buf.role !== "source" || dst.buf.role !== "sink") throw new Error(`test bug: a transfer from buffer ${src.buf.id} to ${dst.buf.id}`);
    return { qp: q.id, dst: dst.buf, dstOff: dstAddr - dst.buf.addr, src: src.buf, srcOff: srcAddr - src.buf.addr, len };
  }

  /** The world after a step with what must have completed taken as done, or why it disagrees with the emulator. */
  private finish(w0: World, opts: ExplainOptions, actual: Map<ModelBuffer, Uint8Array>): World | string {
    const w = this.clone(w0);
    for (const q of this.qps) {
      const v = w.qs[q.id];
      const where = `QP ${q.qpn} (${q.destroyed ? "destroyed" : v.state})`;
      const all = q.settle === "destroy" || q.settle === "reset" || (opts.quiet && (q.destroyed || v.state === "ERR" || v.state === "RTS"));
      if (all) {
        // everything must have completed: what is left ran unobserved, or was lost
        while (v.sq.length > 0 && this.silent(v.sq[0], w.qs)) {
          const e = v.sq.shift()!;
          this.silentDone(w, e);
          if (v.exempt === e) v.exempt = null;
        }
        if (v.sq.length > 0) return `wr ${v.sq[0].wrId} (${v.sq[0].op}) of ${where} never completed`;
      }
      if (q.settle === "err") {
        // the request in flight and the entries behind it complete at once
        const rest = v.sq.find((e) => !this.silent(e, w.qs));
        if (rest) return `${where} was moved to ERR, but wr ${rest.wrId} did not complete at once`;
      }
      const flushes = q.destroyed || v.state === "ERR" || q.settle === "reset";
      if ((q.settle !== null || opts.quiet) && flushes && v.rq.length > 0) return `receive wr ${v.rq[0].wrId} of ${where} was never flushed`;
      if (!q.destroyed) {
        const got = opts.state(q);
        if (got !== v.state) return `QP ${q.qpn} is ${got} in the emulator; the model has ${v.state}`;
      }
    }
    return this.checkBytes(w, actual) ?? w;
  }

  private checkBytes(w: World, actual: Map<ModelBuffer, Uint8Array>): string | null {
    // requests that may still run unobserved may have written too
    const optional = [...w.optional];
    for (const q of this.qps) {
      if (q.destroyed) continue;
      for (const e of w.qs[q.id].sq) {
        const x = this.silent(e, w.qs) ? this.mayLand(e, w.qs) : null;
        if (x) optional.push(x);
      }
    }
    for (const b of this.buffers) {
      const got = actual.get(b)!;
      for (let i = 0; i < GUARD; i++) {
        if (got[i] !== GUARD_BYTE) return `the guard byte ${GUARD - i} before buffer ${b.id} is 0x${got[i].toString(16)}`;
        if (got[GUARD + b.length + i] !== GUARD_BYTE) return `the guard byte ${i} after buffer ${b.id} is 0x${got[GUARD + b.length + i].toString(16)}`;
      }
      if (b.role === "source") {
        for (let i = 0; i < b.length; i++) if (got[GUARD + i] !== sourceByte(b.id, i)) return `source buffer ${b.id} changed at byte ${i}`;
        continue;
      }
      const byQp = new Map<number, Int16Array>();
      const maybe: Int16Array[] = [];
      const paint = (x: Write, into: Int16Array) => { for (let i = 0; i < x.len; i++) into[x.dstOff + i] = sourceByte(x.src.id, x.srcOff + i); };
      for (const x of w.writes) {
        if (x.dst !== b) continue;
        let a = byQp.get(x.qp);
        if (!a) byQp.set(x.qp, (a = new Int16Array(b.length).fill(-1)));
        paint(x, a);
      }
      for (const x of optional) {
        if (x.dst !== b) continue;
        const a = new Int16Array(b.length).fill(-1);
        paint(x, a);
        maybe.push(a);
      }
      const before = this.shadow.get(b)!;
      for (let i = 0; i < b.length; i++) {
        const v = got[GUARD + i];
        let wrote = false, ok = false;
        for (const a of byQp.values()) if (a[i] >= 0) { wrote = true; if (a[i] === v) ok = true; }
        if (!wrote && before[i] === v) ok = true;
        for (const a of maybe) if (a[i] === v) ok = true;
        if (!ok) {
          const want = wrote ? [...byQp.values()].filter((a) => a[i] >= 0).map((a) => a[i]) : [before[i]];
          return `sink buffer ${b.id} byte ${i} is 0x${v.toString(16)}, expected ${want.map((x) => `0x${x.toString(16)}`).join(" or ")}${wrote ? " (written this step)" : " (unchanged)"}`;
        }
      }
    }
    return null;
  }

  private commit(w: World, actual: Map<ModelBuffer, Uint8Array>, start: World): void {
    // a request may have been checked, inside the step, in a world that lasted only part of it:
    // the step's receives taken, its QPs not yet sent to ERR (a SEND finding its target's last
    // receive taken by an earlier one, before that target failed); an error found there is the
    // outcome it carries when its own QP goes to ERR next. Taken before the model moves to the
    // step's end, while its QPs are as the step found them
    this.snapshot(this.qps, this.qps.map((q) => ({ ...start.qs[q.id], rq: w.qs[q.id].rq })));
    for (const q of this.qps) {
      const v = w.qs[q.id];
      q.sq = v.sq;
      q.rq = v.rq;
      q.state = v.state;
      q.exempt = v.exempt;
      q.settle = null;
    }
    for (const id of w.done) this.done.set(id, this.step);
    for (const b of this.buffers) if (b.role === "sink") this.shadow.set(b, actual.get(b)!.slice(GUARD, GUARD + b.length));
    // the world as the step left it lasts, for the NIC, until the host's next doorbells arrive
    // (a receive posted next is not seen before its doorbell has crossed PCIe)
    this.snapshot(this.qps);
  }
}
