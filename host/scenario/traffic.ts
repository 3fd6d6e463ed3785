// A traffic scenario's run: many devices on one fabric, QP pairs posting RDMA WRITEs in a
// traffic pattern, faults, and the results users compare — goodput per flow and in total,
// completion times, drops, retransmissions, ECN marks. Its steps, each given what it needs: the
// flows of the pattern (trafficFlows), the devices sized for them (trafficSizes), the cluster
// (openTrafficCluster), the QPs (connectFlows), the posts (postFlows), the run (runFlows) and the
// result (trafficResult). No Node APIs: it runs in a browser tab as well.

import type { Context, Qp, Cq, Pd, Mr } from "../verbs.js";
import { RandomStreams } from "../fabric/rng.js";
import type { Scenario, Flow } from "./scenario.js";
import { Cluster, configFromWords, type TopologyOf, type FabricOf, type ClusterSizeOf } from "./cluster.js";
import { portTraffic } from "./collective.js";
import { deviceCounts, percentiles } from "./counters.js";
import type { FlowResult, ScenarioResult, PathSummary, RunOptions, RunObserver, Timeline } from "./result.js";
import { Observers, TimelineRecorder } from "./observers.js";
import { ConfigError, HBM_MAX_BYTES } from "../config.js";

function spread(v: number[]): [number, number, number] {
  if (v.length === 0) return [0, 0, 0];
  const s = [...v].sort((a, b) => a - b);
  return [s[0]!, s[(s.length - 1) >> 1]!, s[s.length - 1]!];
}

function pathSummary(contexts: readonly Context[]): PathSummary {
  const paths = contexts.flatMap((c) => c.device.metarocePaths());
  return {
    count: paths.length,
    active: paths.filter((p) => p.state === "active").length,
    suspect: paths.filter((p) => p.state === "suspect").length,
    failed: paths.filter((p) => p.state === "failed").length,
    cwndBytes: spread(paths.map((p) => p.cwndBytes)),
    srttPs: spread(paths.filter((p) => p.srttPs > 0).map((p) => p.srttPs)),
    hintGbps: spread(paths.filter((p) => p.hintGbps > 0).map((p) => p.hintGbps)),
  };
}


interface FlowState {
  spec: Flow;
  ctx: Context;
  cq: Cq;
  qp: Qp;
  /** the receiving end */
  rx: { ctx: Context; qp: Qp };
  posted: number;
  completed: number;
  failed: number;
  firstPostPs: number;
  lastDonePs: number;
  postTimes: number[];
  status: string;
}

/** What each device of a traffic scenario needs: its QPs and peers (one connection each), and the HBM every device gets. */
interface TrafficSizes {
  qpsPerDevice: number[];
  peersPerDevice: number[];
  cqDepth: number;
  hbmBytes: number;
}

/**
 * Sizes the devices for `flows` of `messages` messages of `messageBytes` each: per device one
 * QP per flow end, a CQ, and one region that is both source and destination, in HBM with the
 * CQ and the QPs' send rings. Throws ConfigError when that is more HBM than a device holds.
 */
export function trafficSizes(n: number, flows: readonly Flow[], messageBytes: number, messages: number): TrafficSizes {
  const qpsPerDevice = new Array<number>(n).fill(0);
  const peers = Array.from({ length: n }, () => new Set<number>());
  for (const f of flows) { qpsPerDevice[f.src]!++; qpsPerDevice[f.dst]!++; peers[f.src]!.add(f.dst); peers[f.dst]!.add(f.src); }
  const maxQps = Math.max(4, ...qpsPerDevice);
  const cqDepth = Math.max(16, messages * Math.max(...qpsPerDevice));
  const hbmBytes = Math.max(1 << 20, roundUp(messageBytes + cqDepth * 32 + 2 * maxQps * messages * 128 + (1 << 16), 1 << 16));
  if (hbmBytes > HBM_MAX_BYTES) {
    const field = messageBytes >= hbmBytes / 2 ? "messageBytes" : "messages";
    throw new ConfigError(`scenario.traffic.${field}`, `${field === "messageBytes" ? messageBytes : messages} needs ${hbmBytes} B of HBM per device (the ${messageBytes} B region, its completion queue and send rings), more than a device holds (${HBM_MAX_BYTES} B, the most hbmBytes allows)`);
  }
  return { qpsPerDevice, peersPerDevice: peers.map((p) => p.size), cqDepth, hbmBytes };
}

/**
 * The scenario's devices, each sized for its own QPs and peers (an incast's senders hold one
 * connection, its receiver N: sized alike, 257 devices took 5.5 GB), on its fabric; the
 * cluster's memory bound and whether its devices share one instance are judged by the largest.
 */
async function openTrafficCluster(coreModule: WebAssembly.Module, sc: FabricOf & ClusterSizeOf & Pick<Scenario, "devices" | "transport">, sizes: TrafficSizes, opts: RunOptions): Promise<Cluster> {
  const configOf = (d: number, qps: number, conns: number) => ({
    engines: 1, ...sc.devices.config, ...configFromWords(sc, d), maxQps: qps, maxCqs: 4, mrtConnections: conns, hbmBytes: sizes.hbmBytes,
    ...(sc.fabric.mode === "timing" ? { txBodyBytes: 65536, rxBodyBytes: 65536 } : {}),
  });
  const maxQps = Math.max(4, ...sizes.qpsPerDevice), connections = Math.max(1, ...sizes.peersPerDevice);
  const cluster = await Cluster.build(coreModule, sc, {
    configOf: (d) => configOf(d, Math.max(4, sizes.qpsPerDevice[d]!), Math.max(1, sizes.peersPerDevice[d]!)),
    sizedBy: configOf(0, maxQps, connections),
  }, opts);
  opts.onBuilt?.(cluster);
  return cluster;
}

/** A device's memory for the traffic: its PD, CQ, and the region both sent from and written into. */
interface DeviceMemory { pd: Pd; cq: Cq; addr: number; mr: Mr }

/** Each device's PD, CQ of `cqDepth` and region of `regionBytes`, registered for local and remote access. */
function allocMemory(contexts: readonly Context[], cqDepth: number, regionBytes: number): DeviceMemory[] {
  return contexts.map((ctx) => {
    const pd = ctx.allocPd();
    const cq = ctx.createCq(cqDepth);
    const addr = ctx.allocHbm(regionBytes);
    const mr = ctx.regMr(pd, addr, regionBytes, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
    return { pd, cq, addr, mr };
  });
}

/** A QP pair per flow, connected (INIT, RTR, RTS at both ends) over `portGroup`, with room for `messages` sends. */
function connectFlows(contexts: readonly Context[], mem: readonly DeviceMemory[], flows: readonly Flow[], messages: number, portGroup: Scenario["traffic"]["portGroup"]): FlowState[] {
  return flows.map((spec) => {
    const mk = (d: number) => contexts[d]!.createQp(mem[d]!.pd, { sendCq: mem[d]!.cq, recvCq: mem[d]!.cq, maxSendWr: Math.max(1, messages), maxRecvWr: 1 });
    const tx = mk(spec.src), rx = mk(spec.dst);
    const connect = (d: number, qp: Qp, destQpNum: number, destDevice: number) => {
      const ctx = contexts[d]!;
      ctx.modifyQp(qp, { state: "INIT" });
      ctx.modifyQp(qp, { state: "RTR", destQpNum, destDevice, portGroup, portLane: spec.lane });
      ctx.modifyQp(qp, { state: "RTS" });
    };
    connect(spec.src, tx, rx.qpn, spec.dst);
    connect(spec.dst, rx, tx.qpn, spec.src);
    return { spec, ctx: contexts[spec.src]!, cq: mem[spec.src]!.cq, qp: tx, rx: { ctx: contexts[spec.dst]!, qp: rx }, posted: 0, completed: 0, failed: 0, firstPostPs: -1, lastDonePs: 0, postTimes: [], status: "" };
  });
}

/** Posts every flow's `messages` WRITEs of `messageBytes` at its start time: `startPs`, then `staggerPs` apart flow by flow. */
function postFlows(state: readonly FlowState[], mem: readonly DeviceMemory[], t: Pick<Scenario["traffic"], "messageBytes" | "messages" | "startPs" | "staggerPs">, observer: RunObserver | undefined): void {
  for (const [i, f] of state.entries()) {
    const flowStartPs = t.startPs + i * t.staggerPs;
    const at = BigInt(flowStartPs);
    const dst = mem[f.spec.dst]!, src = mem[f.spec.src]!;
    const wrs = Array.from({ length: t.messages }, (_, k) => ({
      wrId: k, opcode: "RDMA_WRITE" as const, signaled: true, localAddr: src.addr, length: t.messageBytes, lkey: src.mr.lkey, remoteAddr: dst.addr, rkey: dst.mr.rkey,
    }));
    const now = f.ctx.nowPs;
    f.ctx.postSend(f.qp, wrs, { atPs: at > now ? at : now });
    f.posted = t.messages;
    f.firstPostPs = flowStartPs;
    for (let k = 0; k < t.messages; k++) observer?.posted(i, k, flowStartPs);
  }
}

/** How the run went: messages completed of `total`, how it ended, when the last completed, and each completion time. */
interface RunProgress { total: number; completed: number; stopped: boolean; stalled: boolean; lastCompletionPs: number; fct: number[] }

/**
 * Runs the cluster until every message completed, `untilPs`, a stop or a stall (no device has an
 * event and no frame is in the fabric with messages outstanding: nothing will ever complete
 * them, reported as such rather than run to the limit), polling each device's CQ as it goes.
 * `opts.observer` sees it (the timeline's recorder among them); its chunks of time end at each
 * of the `timeline`'s samples.
 */
async function runFlows(built: Cluster, mem: readonly DeviceMemory[], state: readonly FlowState[], untilPs: number, opts: RunOptions, timeline: TimelineRecorder | null): Promise<RunProgress> {
  const { runner, contexts } = built;
  const observer = opts.observer;
  // a completion's flow: by its device, then its QP number
  const byQp = contexts.map(() => new Map<number, FlowState>());
  for (const f of state) byQp[f.spec.src]!.set(f.qp.qpn, f);
  const flowIndex = new Map(state.map((f, i) => [f, i]));
  const p: RunProgress = { total: state.reduce((s, f) => s + f.posted, 0), completed: 0, stopped: false, stalled: false, lastCompletionPs: 0, fct: [] };
  const chunk = Math.max(runner.windowPs, Math.min(10_000_000, observer?.intervalPs ?? Infinity));
  while (p.completed < p.total && runner.nowPs < untilPs) {
    if (opts.shouldStop && (await opts.shouldStop())) { p.stopped = true; break; }
    const idle = runner.runUntilIdle(Math.min(untilPs, runner.nowPs + chunk, timeline?.nextPs(runner.nowPs) ?? Infinity));
    for (let d = 0; d < contexts.length; d++) {
      for (const wc of contexts[d]!.pollCq(mem[d]!.cq, 1 << 16)) {
        const f = byQp[d]!.get(wc.qpNum);
        if (!f) continue; // a receive-side completion: none are posted in a WRITE scenario
        p.completed++;
        observer?.completed(flowIndex.get(f)!, Number(wc.wrId), Number(wc.timePs), wc.status);
        p.lastCompletionPs = Math.max(p.lastCompletionPs, Number(wc.timePs));
        if (wc.status !== "SUCCESS") {
          f.failed++;
          if (f.status === "") f.status = wc.status;
          continue;
        }
        f.completed++;
        const t = Number(wc.timePs);
        f.lastDonePs = Math.max(f.lastDonePs, t);
        p.fct.push(t - f.firstPostPs);
      }
    }
    observer?.sample(runner.nowPs);
    opts.onProgress?.(runner.nowPs, p.completed, p.total);
    if (idle && p.completed < p.total) { p.stalled = true; break; }
  }
  return p;
}

/** What a traffic result reports of its scenario: its name, seed, limit and transport, the messages' size and start, and the topology (the ports' traffic). */
type TrafficResultOf = Pick<Scenario, "name" | "seed" | "untilPs" | "transport"> & { traffic: Pick<Scenario["traffic"], "messageBytes" | "startPs"> } & TopologyOf;

/** What the run did: per flow and in total, completion times, the devices' and the fabric's counters, and its timeline when it took one. */
function trafficResult(sc: TrafficResultOf, built: Cluster, state: readonly FlowState[], p: RunProgress, timeline: Timeline | null): ScenarioResult {
  const { runner, contexts, fabric } = built;
  const counts = deviceCounts(contexts.map((c) => c.device), runner.stageDrops(), sc.transport === "metaroce");
  const flowsOut: FlowResult[] = state.map((f) => {
    const bytes = f.completed * sc.traffic.messageBytes;
    const durationPs = f.completed > 0 ? f.lastDonePs - f.firstPostPs : 0;
    return {
      src: f.spec.src, dst: f.spec.dst, bytes, messages: f.posted, completed: f.completed, failed: f.failed,
      status: f.status !== "" ? f.status : f.completed === f.posted ? "SUCCESS" : "INCOMPLETE", durationPs,
      // no rate without a completion (ScenarioResult): messages that all failed delivered 0 bytes
      goodputGbps: f.completed + f.failed === 0 ? null : durationPs > 0 ? (bytes * 8000) / durationPs : 0,
    };
  });
  const totalBytes = flowsOut.reduce((s, f) => s + f.bytes, 0);
  const lastDone = Math.max(0, ...state.map((f) => f.lastDonePs));
  const fct = [...p.fct].sort((a, b) => a - b);
  const fs = fabric.totals();
  const failed = flowsOut.reduce((s, f) => s + f.failed, 0);
  const all = p.completed === p.total;
  const finished = all && failed === 0;
  const startPs = sc.traffic.startPs;
  return {
    // a run whose messages all completed ends at the last completion (not where the runner's
    // last chunk of time happened to end); otherwise where it stopped
    name: sc.name, seed: sc.seed, endPs: all ? p.lastCompletionPs : runner.nowPs, untilPs: sc.untilPs, finished,
    ended: finished ? "finished" : all ? "failed" : p.stopped ? "stopped" : p.stalled ? "stalled" : "time-limit",
    messages: { total: p.total, completed: p.completed, failed }, flows: flowsOut, totalBytes,
    totalGoodputGbps: p.completed === 0 ? null : lastDone > startPs ? (totalBytes * 8000) / (lastDone - startPs) : 0,
    fctPs: percentiles(fct),
    transport: sc.transport,
    ...counts,
    ...(sc.transport === "metaroce" ? { paths: pathSummary(contexts) } : {}),
    fabric: { drops: fs.drops, ecnMarks: fs.ecnMarks, pfcPauses: fs.pfcPauses, hops: fs.hops, delivered: fs.delivered },
    ports: portTraffic(sc, contexts, fabric),
    ...(timeline ? { timeline } : {}),
  };
}

/** Builds and runs a traffic scenario (one with no collective), and measures what it did. */
export async function runTrafficScenario(coreModule: WebAssembly.Module, sc: Scenario, opts: RunOptions): Promise<ScenarioResult> {
  const t = sc.traffic;
  const flows = trafficFlows(sc);
  const sizes = trafficSizes(sc.devices.count, flows, t.messageBytes, t.messages);
  const built = await openTrafficCluster(coreModule, sc, sizes, opts);
  const mem = allocMemory(built.contexts, sizes.cqDepth, t.messageBytes);
  const state = connectFlows(built.contexts, mem, flows, t.messages, t.portGroup);
  // a timeline's samples on the window grid, where the runner can stop
  const W = built.runner.windowPs;
  const timeline = opts.timelinePs === undefined ? null : new TimelineRecorder(Math.ceil(opts.timelinePs / W) * W);
  const observer = timeline && opts.observer ? new Observers([opts.observer, timeline]) : timeline ?? opts.observer;
  observer?.begin({
    fabric: built.fabric, messagesPerFlow: t.messages, devices: built.contexts.map((c) => c.device), transport: sc.transport, stageDrops: () => built.runner.stageDrops(),
    flows: state.map((f) => ({
      src: f.spec.src, dst: f.spec.dst, messageBytes: t.messageBytes,
      rateGbps: () => f.ctx.qpRateGbps(f.qp), sentBytes: () => f.ctx.qpBytes(f.qp).tx, placedBytes: () => f.rx.ctx.qpBytes(f.rx.qp).rx,
    })),
  });
  postFlows(state, mem, t, observer);
  opts.onStart?.(t.messageBytes);
  const progress = await runFlows(built, mem, state, sc.untilPs, { ...opts, observer }, timeline);
  return trafficResult(sc, built, state, progress, timeline?.timeline() ?? null);
}

const roundUp = (x: number, a: number) => Math.ceil(x / a) * a;

/** What a traffic pattern's flows are drawn from: the device count, the pattern and its parameters, the seed (a permutation's). */
export type TrafficPatternOf = Pick<Scenario, "seed"> & { devices: Pick<Scenario["devices"], "count">; traffic: Pick<Scenario["traffic"], "pattern" | "flowsPerPair" | "incastSenders"> };

/** The flows of the scenario's traffic pattern: (source device, destination device) pairs. */
export function trafficFlows(sc: TrafficPatternOf): Flow[] {
  const n = sc.devices.count, t = sc.traffic;
  const out: Flow[] = [];
  const repeat = (src: number, dst: number) => {
    if (t.flowsPerPair === 1) out.push({ src, dst });
    else for (let k = 0; k < t.flowsPerPair; k++) out.push({ src, dst, lane: src + dst + k });
  };
  switch (t.pattern) {
    case "pairs":
      for (let d = 0; d + 1 < n; d += 2) repeat(d, d + 1);
      break;
    case "permutation": {
      // a derangement drawn from the scenario's seed: nobody sends to itself
      const rng = new RandomStreams(1);
      rng.seed(0, sc.seed, 0x7065726d);
      const perm = Array.from({ length: n }, (_, i) => i);
      do {
        for (let i = n - 1; i > 0; i--) {
          const j = rng.next(0) % (i + 1);
          [perm[i], perm[j]] = [perm[j]!, perm[i]!];
        }
      } while (n > 1 && perm.some((p, i) => p === i));
      perm.forEach((p, i) => repeat(i, p));
      break;
    }
    case "incast":
      for (let d = 1; d <= Math.min(t.incastSenders, n - 1); d++) repeat(d, 0);
      break;
    case "all-to-all":
      for (let s = 0; s < n; s++) for (let d = 0; d < n; d++) if (s !== d) repeat(s, d);
      break;
  }
  return out;
}
