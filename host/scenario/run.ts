// Runs a scenario: many devices on one fabric, QP pairs posting RDMA WRITEs in a traffic
// pattern, faults, and the results users compare — goodput per flow and in total, completion
// times, drops, retransmissions, ECN marks. The scenario is plain data (scenario.ts); this file
// builds it (devices, fabric, runner, QPs), runs it and measures it. No Node APIs: it runs in a
// browser tab as well.

import { Context, type Qp, type Cq } from "../verbs.js";
import { RandomStreams } from "../fabric/rng.js";
import type { Scenario, Flow } from "./scenario.js";
import { resolveScenario } from "./scenario.js";
import { buildCluster, checkCluster, clusterHome, leastConfig } from "./cluster.js";
import type { CoreInstance } from "../wasm.js";
import { runCollectiveScenario, portTraffic } from "./collective.js";
import { runCollectiveSequence } from "./sequence.js";
import { deviceCounts, percentiles } from "./counters.js";
import type { FlowResult, ScenarioResult, PathSummary, RunOptions } from "./result.js";
import { ConfigError, HBM_MAX_BYTES } from "../config.js";

// what a run takes and gives is result.ts's; these names have always been importable from here
export { DEVICE_DROP_COUNTERS, METAROCE_COUNTERS, type MetaroceCounts } from "./counters.js";
export type { FlowResult, RunEnd, ScenarioResult, PortCounts, FabricCounts, MessageCounts, PathSummary, BuiltRun, RunObserver, GraphTrace, RunOptions, CollectiveRow, CollectiveReport } from "./result.js";
export type { Percentiles } from "./counters.js";

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


/**
 * What {@link runScenario} refuses before it makes anything (flows, programs, devices): a bad
 * field ({@link resolveScenario}), and devices that cannot fit in `maxMemoryBytes` or whose
 * eventCapacity can overflow (host/scenario/cluster.ts checkCluster). Throws ConfigError; gives
 * the scenario resolved.
 */
export function checkScenario(coreModule: WebAssembly.Module, input: unknown, opts: Pick<RunOptions, "maxMemoryBytes"> = {}): Scenario {
  const sc = resolveScenario(input);
  checkCluster(coreModule, sc, leastConfig(sc), opts.maxMemoryBytes, true);
  return sc;
}

/**
 * Builds and runs a scenario: devices on one fabric, QP pairs posting RDMA WRITEs in its
 * traffic pattern, its faults; measures what it did.
 * @param coreModule the compiled core (`await coreModule()`)
 * @param input the scenario as parsed JSON (schemas/scenario.schema.json); checked by
 *   {@link resolveScenario} first, which throws ConfigError naming a bad field
 * @param opts progress, stopping, observers
 */
export async function runScenario(coreModule: WebAssembly.Module, input: unknown, opts: RunOptions = {}): Promise<ScenarioResult> {
  const sc = checkScenario(coreModule, input, opts);
  if (sc.collective) return runCollectiveScenario(coreModule, sc, opts);
  if (sc.collectives) return runCollectiveSequence(coreModule, sc, opts);
  const n = sc.devices.count;
  const flows = trafficFlows(sc);
  // per device: one QP per flow end, a CQ, and one region that is both source and destination
  const qpsPerDevice = new Array<number>(n).fill(0);
  const peers = Array.from({ length: n }, () => new Set<number>());
  for (const f of flows) { qpsPerDevice[f.src]!++; qpsPerDevice[f.dst]!++; peers[f.src]!.add(f.dst); peers[f.dst]!.add(f.src); }
  // a MetaRoCE-like device holds one connection per peer
  const connections = Math.max(1, ...peers.map((p) => p.size));
  const maxQps = Math.max(4, ...qpsPerDevice);
  const region = sc.traffic.messageBytes;
  const messagesPerFlow = sc.traffic.messages;
  const cqDepth = Math.max(16, messagesPerFlow * Math.max(...qpsPerDevice));
  // the region, the CQ and the QPs' send rings in HBM
  const hbmBytes = Math.max(1 << 20, roundUp(region + cqDepth * 32 + 2 * maxQps * messagesPerFlow * 128 + (1 << 16), 1 << 16));
  if (hbmBytes > HBM_MAX_BYTES) {
    const field = region >= hbmBytes / 2 ? "messageBytes" : "messages";
    throw new ConfigError(`scenario.traffic.${field}`, `${sc.traffic[field]} needs ${hbmBytes} B of HBM per device (the ${region} B region, its completion queue and send rings), more than a device holds (${HBM_MAX_BYTES} B, the most hbmBytes allows)`);
  }
  const contexts: Context[] = [];
  let home: WebAssembly.Module | CoreInstance = coreModule;
  // each device sized for its own QPs and peers (an incast's senders hold one connection, its
  // receiver N: sized alike, 257 devices took 5.5 GB); the cluster's memory bound and whether
  // its devices share one instance are judged by the largest
  const configOf = (d: number, qps: number, conns: number) => ({
    engines: 1, ...sc.devices.config, deviceId: d, seed: sc.seed, maxQps: qps, maxCqs: 4,
    timingMode: sc.fabric.mode === "timing" ? 1 : 0,
    transport: sc.transport === "metaroce" ? 1 : 0, mrtConnections: conns, mrtCc: sc.devices.congestionControl === "nscc" ? 1 : 0,
    hbmBytes,
    ...(sc.fabric.mode === "timing" ? { txBodyBytes: 65536, rxBodyBytes: 65536 } : {}),
  });
  home = clusterHome(coreModule, sc, configOf(0, maxQps, connections), opts.maxMemoryBytes);
  for (let d = 0; d < n; d++) contexts.push(await Context.open(home, configOf(d, Math.max(4, qpsPerDevice[d]!), Math.max(1, peers[d]!.size))));
  const { fabric, endpoints, runner } = buildCluster(home, sc, contexts, opts.windowPs);
  opts.onBuilt?.({ fabric, runner, contexts, endpoints });

  // the memory and the QPs
  const mem = contexts.map((ctx) => {
    const pd = ctx.allocPd();
    const cq = ctx.createCq(cqDepth);
    const addr = ctx.allocHbm(region);
    const mr = ctx.regMr(pd, addr, region, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
    return { pd, cq, addr, mr };
  });
  const state: FlowState[] = flows.map((spec) => {
    const mk = (d: number) => contexts[d]!.createQp(mem[d]!.pd, { sendCq: mem[d]!.cq, recvCq: mem[d]!.cq, maxSendWr: Math.max(1, messagesPerFlow), maxRecvWr: 1 });
    const tx = mk(spec.src), rx = mk(spec.dst);
    const connect = (d: number, qp: Qp, destQpNum: number, destDevice: number) => {
      const ctx = contexts[d]!;
      ctx.modifyQp(qp, { state: "INIT" });
      ctx.modifyQp(qp, { state: "RTR", destQpNum, destDevice, portGroup: sc.traffic.portGroup, portLane: spec.lane });
      ctx.modifyQp(qp, { state: "RTS" });
    };
    connect(spec.src, tx, rx.qpn, spec.dst);
    connect(spec.dst, rx, tx.qpn, spec.src);
    return { spec, ctx: contexts[spec.src]!, cq: mem[spec.src]!.cq, qp: tx, rx: { ctx: contexts[spec.dst]!, qp: rx }, posted: 0, completed: 0, failed: 0, firstPostPs: -1, lastDonePs: 0, postTimes: [], status: "" };
  });
  // a completion's flow: by its device, then its QP number
  const byQp = contexts.map(() => new Map<number, FlowState>());
  for (const f of state) byQp[f.spec.src]!.set(f.qp.qpn, f);
  const observer = opts.observer;
  observer?.begin({
    fabric, messagesPerFlow, devices: contexts.map((c) => c.device), transport: sc.transport,
    flows: state.map((f) => ({
      src: f.spec.src, dst: f.spec.dst, messageBytes: sc.traffic.messageBytes,
      rateGbps: () => f.ctx.qpRateGbps(f.qp), sentBytes: () => f.ctx.qpBytes(f.qp).tx, placedBytes: () => f.rx.ctx.qpBytes(f.rx.qp).rx,
    })),
  });

  // post every flow's messages at its start time
  const startPs = sc.traffic.startPs;
  for (const [i, f] of state.entries()) {
    const flowStartPs = startPs + i * sc.traffic.staggerPs;
    const at = BigInt(flowStartPs);
    const dst = mem[f.spec.dst]!, src = mem[f.spec.src]!;
    const wrs = Array.from({ length: messagesPerFlow }, (_, k) => ({
      wrId: k, opcode: "RDMA_WRITE" as const, signaled: true, localAddr: src.addr, length: sc.traffic.messageBytes, lkey: src.mr.lkey, remoteAddr: dst.addr, rkey: dst.mr.rkey,
    }));
    const now = f.ctx.nowPs;
    f.ctx.postSend(f.qp, wrs, { atPs: at > now ? at : now });
    f.posted = messagesPerFlow;
    f.firstPostPs = flowStartPs;
    for (let k = 0; k < messagesPerFlow; k++) observer?.posted(i, k, flowStartPs);
  }
  const flowIndex = new Map(state.map((f, i) => [f, i]));

  const total = state.length * messagesPerFlow;
  let completed = 0, stopped = false, stalled = false, lastCompletionPs = 0;
  const fct: number[] = [];
  const chunk = Math.max(runner.windowPs, Math.min(10_000_000, observer?.intervalPs ?? Infinity));
  const untilPs = sc.untilPs;
  opts.onStart?.(sc.traffic.messageBytes);
  while (completed < total && runner.nowPs < untilPs) {
    if (opts.shouldStop && (await opts.shouldStop())) { stopped = true; break; }
    // idle: no device has an event, no frame is in the fabric; with messages outstanding that is
    // a stall (nothing will ever complete them), reported as such rather than run to the limit
    const idle = runner.runUntilIdle(Math.min(untilPs, runner.nowPs + chunk));
    for (let d = 0; d < n; d++) {
      for (const wc of contexts[d]!.pollCq(mem[d]!.cq, 1 << 16)) {
        const f = byQp[d]!.get(wc.qpNum);
        if (!f) continue; // a receive-side completion: none are posted in a WRITE scenario
        completed++;
        observer?.completed(flowIndex.get(f)!, Number(wc.wrId), Number(wc.timePs), wc.status);
        lastCompletionPs = Math.max(lastCompletionPs, Number(wc.timePs));
        if (wc.status !== "SUCCESS") {
          f.failed++;
          if (f.status === "") f.status = wc.status;
          continue;
        }
        f.completed++;
        const t = Number(wc.timePs);
        f.lastDonePs = Math.max(f.lastDonePs, t);
        fct.push(t - f.firstPostPs);
      }
    }
    observer?.sample(runner.nowPs);
    opts.onProgress?.(runner.nowPs, completed, total);
    if (idle && completed < total) { stalled = true; break; }
  }

  const counts = deviceCounts(contexts.map((c) => c.device), runner.stageDrops(), sc.transport === "metaroce");
  const flowsOut: FlowResult[] = state.map((f) => {
    const bytes = f.completed * sc.traffic.messageBytes;
    const durationPs = f.completed > 0 ? f.lastDonePs - f.firstPostPs : 0;
    return {
      src: f.spec.src, dst: f.spec.dst, bytes, messages: f.posted, completed: f.completed, failed: f.failed,
      status: f.status !== "" ? f.status : f.completed === f.posted ? "SUCCESS" : "INCOMPLETE", durationPs,
      goodputGbps: durationPs > 0 ? (bytes * 8000) / durationPs : 0,
    };
  });
  const totalBytes = flowsOut.reduce((s, f) => s + f.bytes, 0);
  const lastDone = Math.max(0, ...state.map((f) => f.lastDonePs));
  fct.sort((a, b) => a - b);
  const fs = fabric.totals();
  const failed = flowsOut.reduce((s, f) => s + f.failed, 0);
  const finished = completed === total && failed === 0;
  return {
    // a run whose messages all completed ends at the last completion (not where the runner's
    // last chunk of time happened to end); otherwise where it stopped
    name: sc.name, seed: sc.seed, endPs: completed === total ? lastCompletionPs : runner.nowPs, untilPs, finished,
    ended: finished ? "finished" : completed === total ? "failed" : stopped ? "stopped" : stalled ? "stalled" : "time-limit",
    messages: { total, completed, failed }, flows: flowsOut, totalBytes,
    totalGoodputGbps: lastDone > startPs ? (totalBytes * 8000) / (lastDone - startPs) : 0,
    fctPs: percentiles(fct),
    transport: sc.transport,
    ...counts,
    ...(sc.transport === "metaroce" ? { paths: pathSummary(contexts) } : {}),
    fabric: { drops: fs.drops, ecnMarks: fs.ecnMarks, pfcPauses: fs.pfcPauses, hops: fs.hops, delivered: fs.delivered },
    ports: portTraffic(sc, contexts, fabric),
  };
}

const roundUp = (x: number, a: number) => Math.ceil(x / a) * a;

/** The flows of the scenario's traffic pattern: (source device, destination device) pairs. */
export function trafficFlows(sc: Scenario): Flow[] {
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
