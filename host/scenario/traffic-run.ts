// A traffic on a cluster's devices (a traffic scenario's, traffic.ts, or a collective's
// background traffic, collective.ts): what the devices need for it (trafficSizes), its memory, its
// QP pairs connected, its flows posted (a pattern's at once, an open-loop workload's as the run
// reaches them), its completions polled, and its report: per flow, per verb, in total, and a
// workload's FCT slowdown by size against each flow's ideal (slowdown.ts). No Node APIs.

import type { Context, Qp, Cq, Pd, Mr } from "../verbs.js";
import type { Partition } from "../fabric/partition.js";
import { FABRIC_DEFAULTS } from "../fabric/config.js";
import type { Scenario, Flow } from "./scenario.js";
import { buildTopology, type TopologyOf } from "./cluster.js";
import { percentiles } from "./counters.js";
import type { FlowResult, RunObserver, TrafficReport, VerbCounts, BuiltRun } from "./result.js";
import { ConfigError, HBM_MAX_BYTES, resolveConfig } from "../config.js";
import { CQE, WQE } from "../generated/layouts.js";
import { TRAFFIC_VERBS, VERB_OPCODE, type FlowPlan, type TrafficPlan, type TrafficVerb } from "./workload.js";
import { idealFctPs, pathBetween, slowdownTable } from "./slowdown.js";
import { maxOf, minOf } from "../extremes.js";

/** One end of a flow: its device's context and its QP. */
interface FlowEnd { ctx: Context; qp: Qp }

interface FlowState {
  plan: FlowPlan;
  spec: Flow;
  /**
   * The sending end and the receiving end, each null on a thread of a run split over threads
   * that does not hold its device (the one that does posts and polls there).
   */
  tx: FlowEnd | null;
  rx: FlowEnd | null;
  /** when its messages are posted, ps of simulated time */
  startPs: number;
  completed: number;
  failed: number;
  /** payload bytes of its messages that completed successfully, and of those the READs' */
  bytes: number;
  readBytes: number;
  lastDonePs: number;
  status: string;
}

/** What each device of a traffic scenario needs: its QPs and peers (one connection each), and the HBM every device gets. */
export interface TrafficSizes {
  qpsPerDevice: number[];
  peersPerDevice: number[];
  cqDepth: number;
  hbmBytes: number;
  /** per device: the host memory its CQ's and QPs' rings take (Context.createCq and createQp put a host-owned ring there) */
  hostMemBytes: number[];
}

/**
 * Sizes the devices for `plan`'s flows: per device one QP per flow end, a CQ, and one region
 * (of the largest message) that is both source and destination, in HBM with the CQ and the
 * QPs' rings. Throws ConfigError when that is more HBM than a device holds.
 */
export function trafficSizes(n: number, plan: TrafficPlan): TrafficSizes {
  const { maxBytes, messages } = plan;
  const qpsPerDevice = new Array<number>(n).fill(0);
  const peers = Array.from({ length: n }, () => new Set<number>());
  for (const { spec: f } of plan.flows) { qpsPerDevice[f.src]!++; qpsPerDevice[f.dst]!++; peers[f.src]!.add(f.dst); peers[f.dst]!.add(f.src); }
  const maxQps = maxOf(qpsPerDevice, 4);
  const cqDepth = Math.max(16, messages * maxOf(qpsPerDevice));
  const ring = Math.max(messages, plan.receives);
  const hbmBytes = Math.max(1 << 20, roundUp(maxBytes + cqDepth * 32 + 2 * maxQps * ring * 128 + (1 << 16), 1 << 16));
  if (hbmBytes > HBM_MAX_BYTES) {
    const field = plan.workload ? "workload" : maxBytes >= hbmBytes / 2 ? "messageBytes" : "messages";
    const what = field === "workload" ? `its largest flow (${maxBytes} B) and ${plan.flows.length} flows` : String(field === "messageBytes" ? maxBytes : messages);
    throw new ConfigError(`scenario.traffic.${field}`, `${what} needs ${hbmBytes} B of HBM per device (the ${maxBytes} B region, its completion queue and send rings), more than a device holds (${HBM_MAX_BYTES} B, the most hbmBytes allows)`);
  }
  // a ring of n entries in host memory takes n entries and up to 64 B of alignment; 64 KiB
  // pages (hostMemBytes' multiple), the least one page
  const hostMemBytes = qpsPerDevice.map((q) => roundUp(cqDepth * CQE.SIZE + q * 2 * (ring * WQE.SIZE + 64) + 64, 1 << 16));
  return { qpsPerDevice, peersPerDevice: peers.map((p) => p.size), cqDepth, hbmBytes, hostMemBytes };
}

/** A flow's completions as one thread polled them: index, completed, failed, bytes, READ bytes, last done, status. */
type PolledFlow = [number, number, number, number, number, number, string];

/** What one thread of a run split over threads polled (TrafficRun.polled). */
export interface PolledPart {
  completed: number;
  lastCompletionPs: number;
  fct: number[];
  verbs: NonNullable<TrafficReport["verbs"]>;
  flows: PolledFlow[];
}

/** A device's memory for the traffic: its PD, CQ, and the region both sent from and written into. */
interface DeviceMemory { pd: Pd; cq: Cq; addr: number; mr: Mr }

/** A device's region as the senders to it address it. */
interface Region { addr: number; rkey: number }

/**
 * Each device's PD, CQ of `cqDepth` and region of `regionBytes`, registered for local and
 * remote access; empty where `contexts` is (another thread's device).
 */
function allocMemory(contexts: readonly Context[], cqDepth: number, regionBytes: number): DeviceMemory[] {
  return contexts.map((ctx) => {
    const pd = ctx.allocPd();
    const cq = ctx.createCq(cqDepth);
    const addr = ctx.allocHbm(regionBytes);
    const mr = ctx.regMr(pd, addr, regionBytes, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
    return { pd, cq, addr, mr };
  });
}

/**
 * A QP pair per flow, connected (INIT, RTR, RTS at both ends) over `portGroup`, with room for
 * its messages and its receives; its messages start `offsetPs` after their plan's start. Every
 * QP is made before any is connected: an end on a device of another thread of a run split over
 * threads (`part`) is made there, and the threads tell each other their QP numbers and regions
 * (`regions`, filled here for every device) in between.
 */
function connectFlows(contexts: readonly Context[], mem: readonly DeviceMemory[], regions: Region[], plan: TrafficPlan, portGroup: Scenario["traffic"]["portGroup"], offsetPs: number, part: Partition | undefined): FlowState[] {
  const mk = (d: number, recv: number): FlowEnd | null => {
    const ctx = contexts[d], m = mem[d];
    return ctx && m ? { ctx, qp: ctx.createQp(m.pd, { sendCq: m.cq, recvCq: m.cq, maxSendWr: Math.max(1, plan.messages), maxRecvWr: Math.max(1, recv) }) } : null;
  };
  const ends = plan.flows.map((fp) => ({ tx: mk(fp.spec.src, 1), rx: mk(fp.spec.dst, fp.receives) }));
  // every device's region (2 numbers each), then every flow's two QP numbers; -1 where unknown here
  const n = contexts.length, known = new Float64Array(2 * n + 2 * ends.length).fill(-1);
  mem.forEach((m, d) => known.set([m.addr, m.mr.rkey], 2 * d));
  ends.forEach((e, i) => known.set([e.tx?.qp.qpn ?? -1, e.rx?.qp.qpn ?? -1], 2 * n + 2 * i));
  if (part) for (const h of part.exchange(known, [])) h.nums.forEach((v, k) => { if (v >= 0) known[k] = v; });
  for (let d = 0; d < n; d++) regions[d] = { addr: known[2 * d]!, rkey: known[2 * d + 1]! };
  const connect = (end: FlowEnd, destQpNum: number, destDevice: number, lane: number | undefined) => {
    end.ctx.modifyQp(end.qp, { state: "INIT" });
    end.ctx.modifyQp(end.qp, { state: "RTR", destQpNum, destDevice, portGroup, portLane: lane });
    end.ctx.modifyQp(end.qp, { state: "RTS" });
  };
  return plan.flows.map((fp, i) => {
    const spec = fp.spec, { tx, rx } = ends[i]!;
    if (tx) connect(tx, known[2 * n + 2 * i + 1]!, spec.dst, spec.lane);
    if (rx) connect(rx, known[2 * n + 2 * i]!, spec.src, spec.lane);
    return { plan: fp, spec, tx, rx, startPs: fp.startPs + offsetPs, completed: 0, failed: 0, bytes: 0, readBytes: 0, lastDonePs: 0, status: "" };
  });
}

/** The verb of message `k` of a flow. */
const verbOf = (f: FlowState, k: number): TrafficVerb => (f.plan.verbs ? TRAFFIC_VERBS[f.plan.verbs[k]!]! : f.plan.verb);

/**
 * Posts flow `f`'s receives (at `nowPs`: before its messages) and its messages at its start:
 * WRITEs and WRITE_WITH_IMMs into the receiver's region, SENDs into its receives (there), READs
 * from its region into the sender's. Message k has wrId k.
 */
function postFlow(f: FlowState, i: number, mem: readonly DeviceMemory[], regions: readonly Region[], nowPs: number, observer: RunObserver | undefined): void {
  const fp = f.plan, rx = f.rx, tx = f.tx;
  if (fp.receives > 0 && rx) {
    const recvAt = BigInt(nowPs), at = mem[f.spec.dst]!;
    rx.ctx.postRecv(rx.qp, Array.from({ length: fp.receives }, (_, k) => ({ wrId: k, localAddr: at.addr, length: fp.bytes, lkey: at.mr.lkey })), { atPs: recvAt > rx.ctx.nowPs ? recvAt : rx.ctx.nowPs });
  }
  if (!tx) return;
  const src = mem[f.spec.src]!, dst = regions[f.spec.dst]!;
  const wrs = Array.from({ length: fp.messages }, (_, k) => ({
    wrId: k, opcode: VERB_OPCODE[verbOf(f, k)], signaled: true, localAddr: src.addr, length: fp.bytes, lkey: src.mr.lkey, remoteAddr: dst.addr, rkey: dst.rkey,
    ...(verbOf(f, k) === "WRITE_WITH_IMM" ? { imm: k } : {}),
  }));
  const at = BigInt(f.startPs);
  const now = tx.ctx.nowPs;
  tx.ctx.postSend(tx.qp, wrs, { atPs: at > now ? at : now });
  for (let k = 0; k < fp.messages; k++) observer?.posted(i, k, f.startPs);
}

/**
 * How far ahead an open-loop workload's flows are posted: at each multiple of this (rounded up
 * to the runner's window) from the traffic's base, the flows that start before the next. Their
 * doorbells wait for their own start (postSend atPs), so the figure changes no result; it bounds
 * the doorbells waiting at once (hostDoorbellQueue).
 */
export const POST_AHEAD_PS = 10_000_000;

/**
 * A traffic on a built cluster: its memory, its QP pairs connected, its flows posted (a
 * pattern's at once; a workload's an epoch ahead, postDue), its completions polled (poll).
 */
export class TrafficRun {
  readonly state: FlowState[];
  private readonly mem: DeviceMemory[];
  /** every device's region (the senders to it write and read there) */
  private readonly regions: Region[] = [];
  /** a completion's flow: by its device, then its QP number */
  private readonly byQp: Map<number, FlowState>[];
  private readonly flowIndex: Map<FlowState, number>;
  /** the next flow to post (in start order), and the epochs they are posted in */
  private next = 0;
  private readonly epochPs: number;
  /** the messages' completion times (post to completion), ps */
  readonly fct: number[] = [];
  completed = 0;
  lastCompletionPs = 0;
  /** messages over all flows, posted or to be (what the run waits for) */
  readonly total: number;
  /** per verb: completions, failures, bytes (its messages are counted when reported) */
  private readonly verbs: NonNullable<TrafficReport["verbs"]> = {};

  /**
   * `offsetPs`: the traffic's base (its start is traffic.start after it; a pattern's messages are
   * posted now); `windowPs`: the runner's window, which an epoch is a multiple of. `part`: this
   * thread's part of a run split over threads, which holds only its own devices in `contexts`
   * and makes, posts and polls only their ends of the flows (every thread calls this at once).
   */
  constructor(contexts: readonly Context[], sizes: TrafficSizes, readonly plan: TrafficPlan, portGroup: Scenario["traffic"]["portGroup"], readonly offsetPs: number, windowPs: number, private readonly observer?: RunObserver, part?: Partition) {
    this.mem = allocMemory(contexts, sizes.cqDepth, plan.maxBytes);
    this.state = connectFlows(contexts, this.mem, this.regions, plan, portGroup, offsetPs, part);
    this.byQp = Array.from(contexts, () => new Map<number, FlowState>());
    for (const f of this.state) if (f.tx) this.byQp[f.spec.src]!.set(f.tx.qp.qpn, f);
    this.flowIndex = new Map(this.state.map((f, i) => [f, i]));
    this.total = this.state.reduce((s, f) => s + f.plan.messages, 0);
    this.epochPs = Math.ceil(POST_AHEAD_PS / windowPs) * windowPs;
  }

  /** Every flow's sender and receiver as an observer's BuiltRun sees them (a run with observers holds every device). */
  observed(): BuiltRun["flows"] {
    return this.state.map((f) => {
      const tx = f.tx!, rx = f.rx!;
      return {
        src: f.spec.src, dst: f.spec.dst, messageBytes: f.plan.bytes,
        rateGbps: () => tx.ctx.qpRateGbps(tx.qp),
        // bytes sent: requests by the sender, a READ's responses by the receiver (where the transport counts them)
        sentBytes: () => tx.ctx.qpBytes(tx.qp).tx + rx.ctx.qpBytes(rx.qp).tx,
        // bytes placed: by the receiver as they arrive; a READ's at the sender, counted when it completes
        placedBytes: () => rx.ctx.qpBytes(rx.qp).rx + f.readBytes,
      };
    });
  }

  /** The next time the run must stop to post (the next epoch of a workload's flows still to post), or Infinity. */
  get nextPostPs(): number {
    if (this.next >= this.state.length) return Infinity;
    return this.offsetPs + Math.floor((this.state[this.next]!.startPs - this.offsetPs) / this.epochPs) * this.epochPs;
  }

  /** Whether flows remain to be posted. */
  get pending(): boolean {
    return this.next < this.state.length;
  }

  /**
   * Posts what is due at `nowPs`: a pattern's every flow (at once, the first time); a workload's
   * flows starting before the epoch after `nowPs` (call it at nowPs = nextPostPs).
   */
  postDue(nowPs: number): void {
    const until = this.plan.workload ? this.offsetPs + (Math.floor((nowPs - this.offsetPs) / this.epochPs) + 1) * this.epochPs : Infinity;
    for (; this.next < this.state.length && this.state[this.next]!.startPs < until; this.next++) postFlow(this.state[this.next]!, this.next, this.mem, this.regions, nowPs, this.observer);
  }

  /** Reads every device's completions: each sender's message done (successfully or not), its time and bytes. */
  poll(contexts: readonly Context[]): void {
    for (let d = 0; d < contexts.length; d++) {
      const ctx = contexts[d];
      if (!ctx) continue; // another thread's device: it polls there
      for (const wc of ctx.pollCq(this.mem[d]!.cq, 1 << 16)) {
        const f = this.byQp[d]!.get(wc.qpNum);
        if (!f) continue; // a receive's completion (SEND, WRITE_WITH_IMM): the sender's counts the message
        this.completed++;
        const t = Number(wc.timePs), k = Number(wc.wrId);
        this.observer?.completed(this.flowIndex.get(f)!, k, t, wc.status);
        this.lastCompletionPs = Math.max(this.lastCompletionPs, t);
        const verb = verbOf(f, k);
        const vc = this.plan.mixed ? this.verbCount(verb) : null;
        if (wc.status !== "SUCCESS") {
          if (vc) vc.failed++;
          f.failed++;
          if (f.status === "") f.status = wc.status;
          continue;
        }
        f.completed++;
        f.bytes += f.plan.bytes;
        if (vc) { vc.completed++; vc.bytes += f.plan.bytes; }
        if (verb === "READ") f.readBytes += f.plan.bytes;
        f.lastDonePs = Math.max(f.lastDonePs, t);
        this.fct.push(t - f.startPs);
      }
    }
  }

  /**
   * What this thread's polls saw of a run split over threads (its devices' completions: the
   * flows whose sender it runs), for the first thread's `absorb`.
   */
  polled(): PolledPart {
    return {
      completed: this.completed, lastCompletionPs: this.lastCompletionPs, fct: this.fct, verbs: this.verbs,
      flows: this.state.flatMap((f, i) => (f.completed + f.failed === 0 ? [] : [[i, f.completed, f.failed, f.bytes, f.readBytes, f.lastDonePs, f.status] as PolledFlow])),
    };
  }

  /** Adds another thread's `polled` to this one's: the run's completions, each seen by the thread that runs its sender. */
  absorb(p: PolledPart): void {
    this.completed += p.completed;
    this.lastCompletionPs = Math.max(this.lastCompletionPs, p.lastCompletionPs);
    for (const t of p.fct) this.fct.push(t);
    for (const [v, c] of Object.entries(p.verbs) as [TrafficVerb, VerbCounts][]) {
      const mine = this.verbCount(v);
      mine.completed += c.completed; mine.failed += c.failed; mine.bytes += c.bytes;
    }
    for (const [i, completed, failed, bytes, readBytes, lastDonePs, status] of p.flows) {
      const f = this.state[i]!;
      f.completed += completed; f.failed += failed; f.bytes += bytes; f.readBytes += readBytes;
      f.lastDonePs = Math.max(f.lastDonePs, lastDonePs);
      if (f.status === "") f.status = status;
    }
  }

  /** Payload bytes placed so far over all flows: by the receivers as requests arrive, and by the senders of READs that completed (a run that holds every device). */
  placedBytes(): number {
    return this.state.reduce((sum, f) => sum + f.rx!.ctx.qpBytes(f.rx!.qp).rx + f.readBytes, 0);
  }

  /**
   * What the traffic did: per flow, in total and per verb, completion times, and a workload's
   * slowdown by size (`ideal`: a flow's ideal FCT). `arrivedByPs`: only the flows that started
   * before it (background traffic, whose collective ended before the rest arrived); else every
   * flow, the messages still to post counted as outstanding.
   */
  report(ideal: ((f: FlowPlan) => number) | null, arrivedByPs = Infinity): TrafficReport {
    const state = this.state.filter((f) => f.startPs < arrivedByPs);
    const flows: FlowResult[] = state.map((f) => {
      const durationPs = f.completed > 0 ? f.lastDonePs - f.startPs : 0;
      const out: FlowResult = {
        src: f.spec.src, dst: f.spec.dst, bytes: f.bytes, messages: f.plan.messages, completed: f.completed, failed: f.failed,
        status: f.status !== "" ? f.status : f.completed === f.plan.messages ? "SUCCESS" : "INCOMPLETE", durationPs,
        // no rate without a completion (ScenarioResult): messages that all failed delivered 0 bytes
        goodputGbps: f.completed + f.failed === 0 ? null : durationPs > 0 ? (f.bytes * 8000) / durationPs : 0,
      };
      if (!ideal) return out;
      const idealPs = ideal(f.plan);
      return { ...out, verb: f.plan.verb, startPs: f.startPs, idealPs, slowdown: f.completed === 1 ? durationPs / idealPs : null };
    });
    const totalBytes = flows.reduce((s, f) => s + f.bytes, 0);
    const lastDone = maxOf(state.map((f) => f.lastDonePs), 0);
    const failed = flows.reduce((s, f) => s + f.failed, 0);
    const firstPs = state.length ? minOf(state.map((f) => f.startPs)) : 0;
    const w = this.plan.workload;
    return {
      messages: { total: state.reduce((s, f) => s + f.plan.messages, 0), completed: this.completed, failed }, flows, totalBytes,
      totalGoodputGbps: this.completed === 0 ? null : lastDone > firstPs ? (totalBytes * 8000) / (lastDone - firstPs) : 0,
      fctPs: percentiles([...this.fct].sort((a, b) => a - b)),
      ...(this.plan.mixed ? { verbs: this.verbReport(state) } : {}),
      ...(w ? {
        workload: {
          sizes: w.spec.sizes.name, meanFlowBytes: w.spec.sizes.meanBytes, load: w.spec.load, hostGbps: w.hostGbps, flows: state.length,
          slowdown: slowdownTable(state.map((f, i) => ({ bytes: f.plan.bytes, slowdown: flows[i]!.slowdown ?? null })), w.spec.bucketsBytes),
        },
      } : {}),
    };
  }

  /** Per verb (those `state`'s messages use, in TRAFFIC_VERBS order): its messages, and its completions, failures and bytes as polled. */
  private verbReport(state: readonly FlowState[]): NonNullable<TrafficReport["verbs"]> {
    const messages: Partial<Record<TrafficVerb, number>> = {};
    for (const f of state) for (let k = 0; k < f.plan.messages; k++) messages[verbOf(f, k)] = (messages[verbOf(f, k)] ?? 0) + 1;
    return Object.fromEntries(TRAFFIC_VERBS.flatMap((v) => (messages[v] ? [[v, { ...this.verbCount(v), messages: messages[v] }]] : [])));
  }

  private verbCount(v: TrafficVerb): VerbCounts {
    return (this.verbs[v] ??= { messages: 0, completed: 0, failed: 0, bytes: 0 });
  }
}

/**
 * A collective's device config `need` (graphDeviceConfig) with room for traffic beside it of
 * `sizes`: its QPs, a CQ, and its region, CQ and rings in HBM.
 */
export function backgroundNeed(need: Record<string, number>, sizes: TrafficSizes): Record<string, number> {
  return { ...need, maxQps: need.maxQps! + maxOf(sizes.qpsPerDevice), maxCqs: need.maxCqs! + 1, hbmBytes: need.hbmBytes! + sizes.hbmBytes };
}

/** What each flow of a workload would take alone on an idle fabric (slowdown.ts), over `sc`'s topology. */
export function idealOf(sc: TopologyOf & Pick<Scenario, "transport" | "fabric"> & { traffic: Pick<Scenario["traffic"], "portGroup"> }): (f: FlowPlan) => number {
  const topo = buildTopology(sc);
  const cfg = resolveConfig({ engines: 1, ...sc.devices.config });
  const portGbps = Number(cfg.get("portGbps")), mtuBytes = Number(cfg.get("mtuBytes"));
  const ports = Number(cfg.get("ports")), up = Math.min(ports, Number(cfg.get("scaleUpPorts")));
  const group = sc.traffic.portGroup === "SCALE_UP" ? up : ports - up;
  const o = { transport: sc.transport, mtuBytes, sprayPorts: sc.transport === "metaroce" ? group : 1 };
  const switchPs = sc.fabric.switch?.latencyPs ?? FABRIC_DEFAULTS.switch.latencyPs;
  return (f) => idealFctPs(f.bytes, f.verb, pathBetween(topo, f.spec.src, f.spec.dst, switchPs, portGbps), o);
}

const roundUp = (x: number, a: number) => Math.ceil(x / a) * a;
