// Drives a host verbs context (host/verbs.ts) and the reference model (verbs-model.ts) with
// the same operations, polls every CQ after each one and has the model explain what came
// back. Used by test/verbs-model.test.ts (fast-check finds and shrinks failing sequences)
// and by the soak (bench/soak.ts, `npm run soak`).
//
// The device: two PDs, six host QPs in host memory — 0<->1 and 2<->3 connected in pairs
// (3 in the other PD), 4 connected to itself (signalling all), 5 sending to 1 beside 0 — six
// host CQs of 32 entries (QPs 0 to 3 one each, 4 and 5 crosswise on the last two: no CQ can
// overrun between two polls), queues 2 to 8 deep so that over-posting is common. Three source buffers (constant bytes, no write right)
// and five sinks (no REMOTE_READ), in host memory, HBM and engine 1's SRAM, each with guard
// bytes; everything else of host memory, HBM and SRAM that is not a ring stays zero.

import fc from "fast-check";
import { Context, VerbsError, type Cq, type Mr, type Pd, type Qp, type SendWr } from "../../host/verbs.js";
import { DMA, REGIONS, ACCESS, CQE, WQE } from "../../host/generated/layouts.js";
import {
  VerbsModel, ModelError, GUARD, GUARD_BYTE, LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ, REMOTE_KEY_BIT, sourceByte, sinkFill,
  type ModelBuffer, type ModelMr, type ModelQp, type QpState, type SendOp, type Verdict,
} from "./verbs-model.js";

// ---- operations (indices are taken modulo what exists when the operation runs, so that
// every shrunk sequence still means something)

/**
 * A key and address: when `fit`, a live region of the kind the field wants in the PD the
 * request needs (so most requests are valid); else any region ever registered, of that kind
 * or (`otherRole`) the other, live or not, in any PD. `bad` 1 flips the remote-key bit, 2 is
 * a key of no region. The address is the region's start plus `off`.
 */
export interface KeySpec { fit: boolean; pick: number; off: number; bad: 0 | 1 | 2; otherRole: boolean }
export interface WrSpec { op: SendOp; signaled: boolean; local: KeySpec; remote: KeySpec; len: number }
export type HostOp =
  | { t: "post"; qp: number; wrs: WrSpec[]; express: boolean }
  | { t: "recv"; qp: number; wrs: { local: KeySpec; len: number }[] }
  | { t: "advance"; ps: number }
  | { t: "quiet" }
  | { t: "modify"; qp: number; to: QpState | "next"; dest: number }
  | { t: "reconnect"; qp: number; dest: number }
  | { t: "dereg"; mr: number; lastTarget?: boolean }
  | { t: "reg"; buf: number; access: number; pd: number }
  | { t: "destroy"; qp: number }
  | { t: "create"; pd: number; sendCq: number; recvCq: number; sq: number; rq: number; sigAll: boolean };

export interface HostScenario {
  depths: { sq: number; rq: number }[];
  hostDoorbellQueue: number;
  ops: HostOp[];
}

const weighted = <T>(...xs: [number, fc.Arbitrary<T>][]) => fc.oneof(...xs.map(([weight, arbitrary]) => ({ weight, arbitrary })));
const keySpec: fc.Arbitrary<KeySpec> = fc.record({
  fit: weighted([15, fc.constant(true)], [1, fc.constant(false)]),
  pick: fc.nat(15),
  off: weighted([3, fc.constant(0)], [8, fc.nat(127)], [1, fc.integer({ min: 128, max: 300 })]),
  bad: weighted([60, fc.constant(0 as const)], [1, fc.constant(1 as const)], [1, fc.constant(2 as const)]),
  otherRole: weighted([40, fc.constant(false)], [1, fc.constant(true)]),
});
const length = weighted([1, fc.constant(0)], [14, fc.integer({ min: 1, max: 96 })], [1, fc.constantFrom(160, 256, 300)]);
const wrSpec: fc.Arbitrary<WrSpec> = fc.record({
  op: fc.constantFrom<SendOp>("RDMA_WRITE", "RDMA_WRITE", "RDMA_WRITE_WITH_IMM", "SEND", "SEND", "SEND_WITH_IMM", "RDMA_READ", "RDMA_READ"),
  signaled: weighted([4, fc.constant(true)], [1, fc.constant(false)]),
  local: keySpec,
  remote: keySpec,
  len: length,
});
const qpIndex = fc.nat(9);

export const hostOp: fc.Arbitrary<HostOp> = weighted<HostOp>(
  [8, fc.record({ t: fc.constant("post" as const), qp: qpIndex, wrs: fc.array(wrSpec, { minLength: 1, maxLength: 4 }), express: fc.boolean() })],
  [8, fc.record({ t: fc.constant("recv" as const), qp: qpIndex, wrs: fc.array(fc.record({ local: keySpec, len: weighted([1, fc.constant(0)], [8, fc.constantFrom(96, 128)], [2, fc.integer({ min: 1, max: 95 })]) }), { minLength: 1, maxLength: 3 }) })],
  [6, fc.record({ t: fc.constant("advance" as const), ps: fc.constantFrom(20_000, 100_000, 300_000, 700_000, 1_200_000, 2_500_000, 6_000_000) })],
  [2, fc.constant({ t: "quiet" as const })],
  [2, fc.record({ t: fc.constant("modify" as const), qp: qpIndex, to: fc.constantFrom<QpState | "next">("next", "next", "ERR", "RESET", "RTS", "INIT", "RTR"), dest: fc.nat(9) })],
  [4, fc.record({ t: fc.constant("reconnect" as const), qp: qpIndex, dest: fc.nat(9) })],
  [1, fc.record({ t: fc.constant("dereg" as const), mr: fc.nat(15) })],
  [1, fc.record({ t: fc.constant("reg" as const), buf: fc.nat(7), access: fc.nat(3), pd: weighted([4, fc.constant(0)], [1, fc.constant(1)]) })],
  [1, fc.record({ t: fc.constant("destroy" as const), qp: qpIndex })],
  [1, fc.record({
    t: fc.constant("create" as const), pd: weighted([4, fc.constant(0)], [1, fc.constant(1)]), sendCq: fc.nat(5), recvCq: fc.nat(5),
    sq: fc.integer({ min: 2, max: 8 }), rq: fc.integer({ min: 2, max: 8 }), sigAll: fc.boolean(),
  })],
);

// Runs of operations that meet where the reviewed bugs were (review issue 6): a command on a QP
// whose requests are in flight or whose doorbells are still crossing PCIe, a region
// deregistered under a WRITE, two QPs sending into one receive queue, posts to a QP in ERR.
const short = fc.constantFrom(0, 20_000, 300_000, 900_000, 1_500_000);
const advance = (ps: number): HostOp[] => (ps > 0 ? [{ t: "advance", ps }] : []);
const post = (qp: number, wrs: WrSpec[], express: boolean): HostOp => ({ t: "post", qp, wrs, express });
const inFlight: fc.Arbitrary<HostOp[]> = fc.record({
  qp: fc.nat(5), wrs: fc.array(wrSpec, { minLength: 1, maxLength: 4 }), express: fc.boolean(), delay: short,
  then: fc.constantFrom("ERR", "RESET", "reconnect", "destroy", "dereg", "dereg"),
}).map(({ qp, wrs, express, delay, then }) => [
  post(qp, wrs, express),
  ...advance(delay),
  then === "destroy" ? { t: "destroy", qp } : then === "dereg" ? { t: "dereg", mr: 0, lastTarget: true } : then === "reconnect" ? { t: "reconnect", qp: qp + 100, dest: qp } : { t: "modify", qp, to: then, dest: 0 },
]);
const sendSpec = wrSpec.map((w): WrSpec => ({ ...w, op: w.op === "RDMA_WRITE_WITH_IMM" || w.op === "SEND_WITH_IMM" ? w.op : "SEND", signaled: true }));
const fanIn: fc.Arbitrary<HostOp[]> = fc.record({
  recvs: fc.array(fc.record({ local: keySpec, len: fc.constantFrom(96, 128) }), { minLength: 1, maxLength: 3 }),
  a: fc.array(sendSpec, { minLength: 1, maxLength: 2 }), b: fc.array(sendSpec, { minLength: 1, maxLength: 2 }), delay: short,
}).map(({ recvs, a, b, delay }) => [{ t: "recv", qp: 1, wrs: recvs }, post(0, a, true), post(5, b, false), ...advance(delay)]);
const errThenPost: fc.Arbitrary<HostOp[]> = fc.record({
  qp: fc.nat(5), wrs: fc.array(wrSpec, { minLength: 2, maxLength: 4 }), more: fc.array(wrSpec, { minLength: 1, maxLength: 2 }), delay: short, express: fc.boolean(),
}).map(({ qp, wrs, more, delay, express }) => [post(qp, wrs, express), ...advance(delay), { t: "modify", qp, to: "ERR", dest: 0 }, post(qp, more, !express), { t: "advance", ps: 2_500_000 }]);

const chunk: fc.Arbitrary<HostOp[]> = weighted<HostOp[]>([12, hostOp.map((o) => [o])], [3, inFlight], [1, fanIn], [1, errThenPost]);

export const hostScenario = (maxChunks: number): fc.Arbitrary<HostScenario> => fc.record({
  depths: fc.array(fc.record({ sq: fc.integer({ min: 2, max: 8 }), rq: fc.integer({ min: 2, max: 8 }) }), { minLength: 6, maxLength: 6 }),
  hostDoorbellQueue: fc.constantFrom(2, 8192, 8192, 8192),
  ops: fc.array(chunk, { maxLength: maxChunks, size: "max" }).map((cs) => cs.flat()),
});

// ---- the device

/** Small memories (so the whole of them is checked at every quiet step) and short retry timers. */
export const HOST_CONFIG = {
  engines: 2, sramBytes: 4096, hbmBytes: 65536, hostMemBytes: 131072, maxMrs: 64, maxQps: 64,
  rnrTimerPs: 600_000, rnrRetries: 2, transportTimeoutPs: 1_000_000, transportRetries: 1,
};
const CQ_DEPTH = 32;
const BUF_BYTES = 256;
/** A key that names no region (index 200 of maxMrs 64). */
const NO_KEY = (200 << 8) | 1;
/** A QP number no QP has, and one the device does not have. */
const NO_QP = 60, BAD_QP = 64;
const MAX_CREATES = 4;
const QUIET_PS = 10_000_000_000n;

export class HarnessError extends Error {}

export interface HostRunStats { ops: number; completions: number; maxNodes: number }

export class HostHarness {
  readonly model: VerbsModel;
  private readonly pds: Pd[] = [];
  private readonly cqs: Cq[] = [];
  private readonly qps: Qp[] = [];
  private readonly mrs: Mr[] = [];
  private readonly rings: [number, number][] = [];
  private nextWr = 1;
  private doorbellsSinceQuiet = 0;
  private creates = 0;
  private opIndex = -1;
  private lastRemoteKey: number | null = null;

  private constructor(readonly ctx: Context, private readonly sc: HostScenario) {
    this.model = new VerbsModel(HOST_CONFIG.maxQps);
  }

  static async open(module: WebAssembly.Module, sc: HostScenario): Promise<HostHarness> {
    const ctx = await Context.open(module, { ...HOST_CONFIG, hostDoorbellQueue: sc.hostDoorbellQueue });
    const h = new HostHarness(ctx, sc);
    h.setup();
    return h;
  }

  private setup(): void {
    const { ctx, model } = this;
    this.pds.push(ctx.allocPd(), ctx.allocPd());
    for (let i = 0; i < 6; i++) {
      const cq = ctx.createCq(CQ_DEPTH);
      this.cqs.push(cq);
      this.rings.push([cq.ring, CQ_DEPTH * CQE.SIZE]);
    }
    const place = (where: "host" | "hbm" | "sram") => {
      if (where === "sram") return DMA.DMA_SRAM + 1 * REGIONS.SRAM.window + 1024;
      return (where === "host" ? ctx.allocHostMemory(BUF_BYTES + 2 * GUARD) : ctx.allocHbm(BUF_BYTES + 2 * GUARD)) + GUARD;
    };
    const buffers: [ModelBuffer["role"], "host" | "hbm" | "sram", number, number][] = [
      ["source", "host", 0, REMOTE_READ], ["source", "hbm", 0, 0], ["source", "host", 1, REMOTE_READ],
      ["sink", "host", 0, LOCAL_WRITE | REMOTE_WRITE], ["sink", "hbm", 0, LOCAL_WRITE], ["sink", "hbm", 0, REMOTE_WRITE],
      ["sink", "host", 1, LOCAL_WRITE | REMOTE_WRITE], ["sink", "sram", 0, LOCAL_WRITE | REMOTE_WRITE],
    ];
    for (const [role, where, pd, access] of buffers) {
      const b = model.addBuffer(role, place(where), BUF_BYTES);
      const all = ctx.view(b.addr - GUARD, BUF_BYTES + 2 * GUARD);
      all.fill(GUARD_BYTE);
      for (let i = 0; i < BUF_BYTES; i++) all[GUARD + i] = role === "source" ? sourceByte(b.id, i) : sinkFill(b.id);
      this.register(b, pd, access);
    }
    // QP i: PD, send CQ, receive CQ, destination (by index), signal all
    const plan: [number, number, number, number, boolean][] = [[0, 0, 0, 1, false], [0, 1, 1, 0, false], [0, 2, 2, 3, false], [1, 3, 3, 2, false], [0, 4, 5, 4, true], [0, 5, 4, 1, false]];
    plan.forEach(([pd, s, r, , sigAll], i) => this.createQp(pd, s, r, this.sc.depths[i].sq, this.sc.depths[i].rq, sigAll));
    plan.forEach(([, , , dest], i) => {
      const qp = this.qps[i], q = model.qps[i];
      ctx.modifyQp(qp, { state: "INIT" });
      ctx.modifyQp(qp, { state: "RTR", destQpNum: this.qps[dest].qpn });
      ctx.modifyQp(qp, { state: "RTS" });
      model.modify(q, "INIT", undefined);
      model.modify(q, "RTR", this.qps[dest].qpn);
      model.modify(q, "RTS", undefined);
    });
    this.poll(false);
  }

  private register(b: ModelBuffer, pd: number, access: number): void {
    const names = (Object.keys(ACCESS) as (keyof typeof ACCESS)[]).filter((name) => access & ACCESS[name]);
    const mr = this.ctx.regMr(this.pds[pd], b.addr, b.length, names);
    this.model.addMr(b, this.pds[pd].handle, access, mr.lkey, mr.rkey);
    this.mrs.push(mr);
  }

  private createQp(pd: number, sendCq: number, recvCq: number, sq: number, rq: number, sigAll: boolean): void {
    const qp = this.ctx.createQp(this.pds[pd], { sendCq: this.cqs[sendCq], recvCq: this.cqs[recvCq], maxSendWr: sq, maxRecvWr: rq, sqSigAll: sigAll });
    this.qps.push(qp);
    this.rings.push([qp.sqRing, sq * WQE.SIZE], [qp.rqRing, rq * WQE.SIZE]);
    this.model.addQp(qp.qpn, this.pds[pd].handle, this.cqs[sendCq].cqn, this.cqs[recvCq].cqn, sq, rq, sigAll);
  }

  /** Completions a CQ may have to hold between two polls: the depths of the live QPs using it. */
  private cqLoad(cqn: number): number {
    return this.model.qps.filter((q) => !q.destroyed).reduce((n, q) => n + (q.sendCq === cqn ? q.sqDepth : 0) + (q.recvCq === cqn ? q.rqDepth : 0), 0);
  }

  private fail(why: string): never {
    const op = this.sc.ops[this.opIndex];
    throw new HarnessError(`op ${this.opIndex} ${op ? JSON.stringify(op) : "(setup or final quiet step)"}: ${why}`);
  }

  /** Runs a host call the model judged; returns whether it threw. `resource` allows a refusal for lack of doorbell room. */
  private call(what: string, verdict: Verdict, f: () => void, resource = false): boolean {
    let err: VerbsError | null = null;
    try {
      f();
    } catch (e) {
      if (!(e instanceof VerbsError)) throw e;
      err = e;
    }
    if (verdict === "throw" && !err) this.fail(`${what} succeeded; the model says it must throw`);
    if (verdict === "ok" && err && !(resource && /doorbell/.test(err.message))) this.fail(`${what} threw "${err.message}"; the model says it must succeed`);
    return err !== null;
  }

  private mrsOf(role: ModelBuffer["role"]): { mr: Mr; m: ModelMr }[] {
    return this.model.mrs.map((m, i) => ({ mr: this.mrs[i], m })).filter((x) => x.m.buf.role === role);
  }

  /** The key and address `spec` names for a field wanting a region of `role` in PD `pd` (null: no PD fits, e.g. no target) with rights `need`. */
  private key(spec: KeySpec, role: ModelBuffer["role"], remote: boolean, pd: number | null, need: number): { addr: number; key: number } {
    let list = this.mrsOf(spec.otherRole ? (role === "source" ? "sink" : "source") : role);
    const fitting = list.filter((x) => x.m.live && x.m.pd === pd && (x.m.access & need) === need);
    if (spec.fit && !spec.otherRole && fitting.length > 0) list = fitting;
    const { mr, m } = list[spec.pick % list.length];
    const key = spec.bad === 2 ? NO_KEY : (remote ? mr.rkey : mr.lkey) ^ (spec.bad === 1 ? REMOTE_KEY_BIT : 0);
    return { addr: m.buf.addr + spec.off, key: key >>> 0 };
  }

  /** How messages name a QP handle. */
  private static named(qp: Qp, q: ModelQp): string {
    return `QP ${qp.qpn}${q.destroyed ? " (a destroyed QP's handle)" : ""}`;
  }

  private qpAt(i: number): { qp: Qp; q: ModelQp } {
    const k = i % this.qps.length;
    return { qp: this.qps[k], q: this.model.qps[k] };
  }

  /** Doorbells this post needs against what may still be crossing PCIe. */
  private doorbellVerdict(n: number, express: boolean): Verdict {
    const need = express ? n : 1;
    if (need > this.sc.hostDoorbellQueue) return "throw";
    return this.doorbellsSinceQuiet + need > this.sc.hostDoorbellQueue ? "either" : "ok";
  }

  private apply(op: HostOp): boolean {
    const { ctx, model } = this;
    switch (op.t) {
      case "post": {
        const { qp, q } = this.qpAt(op.qp);
        // sources are read-only and sinks never read: a WRITE or SEND reads a source, a READ a sink's opposite
        const wrs = op.wrs.map((s) => {
          const read = s.op === "RDMA_READ";
          const local = this.key(read ? s.local : { ...s.local, otherRole: false }, read ? "sink" : "source", false, q.pd, read ? LOCAL_WRITE : 0);
          const remote = this.key(s.remote, read ? "source" : "sink", true, model.targetPd(q), read ? REMOTE_READ : REMOTE_WRITE);
          const wrId = this.nextWr++;
          return { wrId, op: s.op, signaled: s.signaled, len: s.len, laddr: local.addr, lkey: local.key, raddr: remote.addr, rkey: remote.key, imm: (wrId * 2654435761) >>> 0 };
        });
        const send: SendWr[] = wrs.map((w) => ({ wrId: w.wrId, opcode: w.op, signaled: w.signaled, localAddr: w.laddr, length: w.len, lkey: w.lkey, remoteAddr: w.raddr, rkey: w.rkey, imm: w.imm }));
        const v = model.expectPost(q, wrs.length), d = this.doorbellVerdict(wrs.length, op.express);
        const verdict: Verdict = v === "throw" || d === "throw" ? "throw" : v === "either" || d === "either" ? "either" : "ok";
        const threw = this.call(`postSend of ${wrs.length} to ${HostHarness.named(qp, q)}`, verdict, () => ctx.postSend(qp, send, { doorbell: op.express ? "express" : "classic" }), d === "either");
        this.lastRemoteKey = wrs[wrs.length - 1].rkey;
        if (!threw) {
          model.post(q, wrs);
          this.doorbellsSinceQuiet += op.express ? wrs.length : 1;
        }
        return false;
      }
      case "recv": {
        const { qp, q } = this.qpAt(op.qp);
        const wrs = op.wrs.map((s) => {
          const local = this.key(s.local, "sink", false, q.pd, LOCAL_WRITE);
          return { wrId: this.nextWr++, laddr: local.addr, len: s.len, lkey: local.key };
        });
        const d = this.doorbellVerdict(1, false), v = model.expectRecv(q, wrs.length);
        const verdict: Verdict = v === "throw" ? "throw" : v === "either" || d === "either" ? "either" : "ok";
        const threw = this.call(`postRecv of ${wrs.length} to ${HostHarness.named(qp, q)}`, verdict, () => ctx.postRecv(qp, wrs.map((w) => ({ wrId: w.wrId, localAddr: w.laddr, length: w.len, lkey: w.lkey }))), d === "either");
        if (!threw) {
          model.recv(q, wrs);
          this.doorbellsSinceQuiet++;
        }
        return false;
      }
      case "advance":
        model.beforeAdvance();
        ctx.run(ctx.nowPs + BigInt(op.ps));
        return false;
      case "quiet":
        model.beforeAdvance();
        ctx.run(ctx.nowPs + QUIET_PS);
        this.doorbellsSinceQuiet = 0;
        return true;
      case "modify": {
        const { qp, q } = this.qpAt(op.qp);
        const next: Record<QpState, QpState> = { RESET: "INIT", INIT: "RTR", RTR: "RTS", RTS: "ERR", ERR: "RESET" };
        const to = op.to === "next" ? next[q.state] : op.to;
        const numbers = [...this.qps.map((x) => x.qpn), NO_QP, BAD_QP];
        const dest = to === "RTR" ? numbers[op.dest % numbers.length] : undefined;
        const verdict = model.expectModify(q, to, dest);
        if (!q.destroyed) model.beforeCommand(q);
        const threw = this.call(`modifyQp(${HostHarness.named(qp, q)} ${q.state} -> ${to}${dest === undefined ? "" : `, dest ${dest}`})`, verdict, () => ctx.modifyQp(qp, { state: to, destQpNum: dest }));
        if (!threw) model.modify(q, to, dest);
        return false;
      }
      case "reconnect": {
        // a QP that is not working, if there is one: errors are common, recovery should be too
        // (indices of 100 and above name the QP itself)
        const down = model.qps.filter((x) => !x.destroyed && x.state !== "RTS");
        const { qp, q } = down.length > 0 && op.qp < 100 ? { qp: this.qps[down[op.qp % down.length].id], q: down[op.qp % down.length] } : this.qpAt(op.qp % 100);
        const numbers = this.qps.map((x) => x.qpn);
        const dest = numbers[op.dest % numbers.length];
        for (const [to, d] of [["RESET", undefined], ["INIT", undefined], ["RTR", dest], ["RTS", undefined]] as [QpState, number | undefined][]) {
          const verdict = model.expectModify(q, to, d);
          if (!q.destroyed) model.beforeCommand(q);
          const threw = this.call(`modifyQp(${HostHarness.named(qp, q)} ${q.state} -> ${to}${d === undefined ? "" : `, dest ${d}`})`, verdict, () => ctx.modifyQp(qp, { state: to, destQpNum: d }));
          if (threw) break;
          model.modify(q, to, d);
          // RESET from ERR flushes what its doorbells announce: the model settles it before going on
          if (to === "RESET") this.poll(false);
        }
        return false;
      }
      case "dereg": {
        // lastTarget: the region the last request posted writes or reads remotely, if it is registered
        const last = this.lastRemoteKey === null ? -1 : this.mrs.findIndex((m, k) => model.mrs[k].live && m.rkey === this.lastRemoteKey);
        if (op.lastTarget && last < 0) return false;
        const i = op.lastTarget ? last : op.mr % this.mrs.length;
        const threw = this.call(`deregMr(lkey 0x${this.mrs[i].lkey.toString(16)})`, model.expectDereg(model.mrs[i]), () => ctx.deregMr(this.mrs[i]));
        if (!threw) model.dereg(model.mrs[i]);
        return false;
      }
      case "reg": {
        const b = model.buffers[op.buf % model.buffers.length];
        if (model.mrs.some((m) => m.live && m.buf === b)) return false;
        const access = b.role === "source" ? [0, REMOTE_READ][op.access % 2] : [LOCAL_WRITE, REMOTE_WRITE, LOCAL_WRITE | REMOTE_WRITE, 0][op.access % 4];
        this.register(b, op.pd, access);
        return false;
      }
      case "destroy": {
        const { qp, q } = this.qpAt(op.qp);
        if (!q.destroyed) model.beforeCommand(q);
        const threw = this.call(`destroyQp(${HostHarness.named(qp, q)})`, q.destroyed ? "throw" : "ok", () => ctx.destroyQp(qp));
        if (!threw) model.destroy(q);
        return false;
      }
      case "create": {
        const s = this.cqs[op.sendCq % this.cqs.length], r = this.cqs[op.recvCq % this.cqs.length];
        const fits = s === r ? this.cqLoad(s.cqn) + op.sq + op.rq <= CQ_DEPTH : this.cqLoad(s.cqn) + op.sq <= CQ_DEPTH && this.cqLoad(r.cqn) + op.rq <= CQ_DEPTH;
        if (this.creates >= MAX_CREATES || !fits) return false;
        this.creates++;
        this.createQp(op.pd, this.cqs.indexOf(s), this.cqs.indexOf(r), op.sq, op.rq, op.sigAll);
        return false;
      }
    }
  }

  private poll(quiet: boolean): void {
    const polled = new Map<number, import("../../host/verbs.js").Wc[]>();
    for (const cq of this.cqs) {
      try {
        polled.set(cq.cqn, this.ctx.pollCq(cq, 1 << 20));
      } catch (e) {
        if (e instanceof VerbsError) this.fail(e.message);
        throw e;
      }
    }
    try {
      this.model.explain(polled, {
        quiet,
        state: (q) => this.ctx.qpState(this.qps[q.id]) as QpState,
        read: (addr, len) => this.ctx.read(addr, len),
      });
    } catch (e) {
      if (e instanceof ModelError) this.fail(e.message);
      throw e;
    }
    if (quiet) this.checkOutside();
  }

  /** Everything of host memory, HBM and SRAM outside the buffers and the rings is still zero. */
  private checkOutside(): void {
    const hostBytes = HOST_CONFIG.hostMemBytes, hbmBytes = HOST_CONFIG.hbmBytes, sramBytes = HOST_CONFIG.sramBytes;
    const skip = [...this.rings, ...this.model.buffers.map((b) => [b.addr - GUARD, b.length + 2 * GUARD] as [number, number])];
    const regions: [string, number, number][] = [["host memory", DMA.DMA_HOST, hostBytes], ["HBM", REGIONS.HBM.base, hbmBytes]];
    for (let e = 0; e < HOST_CONFIG.engines; e++) regions.push([`engine ${e} SRAM`, DMA.DMA_SRAM + e * REGIONS.SRAM.window, sramBytes]);
    for (const [name, base, len] of regions) {
      const mem = this.ctx.view(base, len);
      const holes = skip.filter(([a]) => a >= base && a < base + len).sort((x, y) => x[0] - y[0]);
      let at = 0;
      for (const [a, n] of [...holes, [base + len, 0] as [number, number]]) {
        for (let i = at; i < a - base; i++) if (mem[i] !== 0) this.fail(`${name} at +0x${i.toString(16)}, outside every buffer and ring, is 0x${mem[i].toString(16)}`);
        at = Math.max(at, a - base + n);
      }
    }
  }

  /** Runs every operation, checking after each, then a last quiet step. */
  run(): HostRunStats {
    for (this.opIndex = 0; this.opIndex < this.sc.ops.length; this.opIndex++) {
      let quiet = false;
      try {
        quiet = this.apply(this.sc.ops[this.opIndex]);
      } catch (e) {
        if (e instanceof ModelError) this.fail(e.message);
        throw e;
      }
      this.poll(quiet);
    }
    this.opIndex = this.sc.ops.length;
    this.model.beforeAdvance();
    this.ctx.run(this.ctx.nowPs + QUIET_PS);
    this.poll(true);
    return { ops: this.sc.ops.length + 1, completions: this.model.completions, maxNodes: this.model.maxNodes };
  }
}

export async function runHostScenario(module: WebAssembly.Module, sc: HostScenario): Promise<HostRunStats> {
  return (await HostHarness.open(module, sc)).run();
}
