// A traffic scenario's run: many devices on one fabric, QP pairs posting messages (WRITE,
// WRITE_WITH_IMM, SEND, READ) in a traffic pattern or an open-loop workload, faults, and the
// results users compare — goodput per flow and in total, completion times, a workload's FCT
// slowdown by size, drops, retransmissions, ECN marks. Its steps, each given what it needs: the
// messages (workload.ts planTraffic), the devices sized for them (traffic-run.ts trafficSizes),
// the cluster (openTrafficCluster), the traffic on it (traffic-run.ts TrafficRun: memory, QPs,
// posts, completions, its report), the run (runFlows) and the result (trafficResult). A
// collective's background traffic is a TrafficRun too (collective.ts). No Node APIs: it runs in a
// browser tab as well.

import type { Context } from "../verbs.js";
import type { MetarocePath } from "../device.js";
import type { Scenario } from "./scenario.js";
import { Cluster, configFromWords, type FabricOf, type ClusterSizeOf } from "./cluster.js";
import { portTraffic } from "./collective.js";
import { deviceCounts, deviceCountsOf } from "./counters.js";
import type { ScenarioResult, PathSummary, RunOptions, Timeline } from "./result.js";
import { Observers, TimelineRecorder } from "./observers.js";
import { planTraffic, type FlowPlan } from "./workload.js";
import { idealOf, trafficSizes, TrafficRun, type TrafficSizes } from "./traffic-run.js";
import { maxOf } from "../extremes.js";
import { gatherSplitRun, type SplitGathered } from "./split-run.js";

// what a traffic's flows are is workload.ts's; these names have always been importable from here
export { trafficFlows, type TrafficPatternOf } from "./workload.js";

function spread(v: number[]): [number, number, number] {
  if (v.length === 0) return [0, 0, 0];
  const s = [...v].sort((a, b) => a - b);
  return [s[0]!, s[(s.length - 1) >> 1]!, s[s.length - 1]!];
}

function pathSummary(paths: readonly MetarocePath[]): PathSummary {
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


/**
 * The scenario's devices, each sized for its own QPs and peers (an incast's senders hold one
 * connection, its receiver N: sized alike, 257 devices took 5.5 GB), on its fabric; the
 * cluster's memory bound and whether its devices share one instance are judged by the largest.
 */
async function openTrafficCluster(coreModule: WebAssembly.Module, sc: FabricOf & ClusterSizeOf & Pick<Scenario, "devices" | "transport">, sizes: TrafficSizes, opts: RunOptions): Promise<Cluster> {
  // sized for the traffic unless devices.config says: the host's doorbells in flight (each flow
  // posts its messages with one and its receives with one: at most a doorbell per QP; the
  // default 8,192, with room for express entries, was 1.2 MB of a 3.4 MB arena) and, in timing
  // mode, HBM without bytes (its regions bound the messages, whose payloads carry none)
  const configOf = (d: number, qps: number, conns: number, hostMemBytes: number) => ({
    engines: 1, hostMemBytes, hostDoorbellQueue: Math.max(16, qps), ...(sc.fabric.mode === "timing" ? { hbmBacking: 0 } : {}), ...sc.devices.config, ...configFromWords(sc, d), maxQps: qps, maxCqs: 4, mrtConnections: conns, hbmBytes: sizes.hbmBytes,
    ...(sc.fabric.mode === "timing" ? { txBodyBytes: 65536, rxBodyBytes: 65536 } : {}),
  });
  const maxQps = maxOf(sizes.qpsPerDevice, 4), connections = maxOf(sizes.peersPerDevice, 1);
  const cluster = await Cluster.build(coreModule, sc, {
    configOf: (d) => configOf(d, Math.max(4, sizes.qpsPerDevice[d]!), Math.max(1, sizes.peersPerDevice[d]!), sizes.hostMemBytes[d]!),
    sizedBy: configOf(0, maxQps, connections, maxOf(sizes.hostMemBytes)),
  }, opts);
  opts.onBuilt?.(cluster);
  return cluster;
}

/** How the run went: whether the caller stopped it, or it stalled (messages outstanding, nothing left to happen). */
interface RunProgress { stopped: boolean; stalled: boolean }

/**
 * Runs the cluster until every message completed, `untilPs`, a stop or a stall (no device has an
 * event and no frame is in the fabric with messages outstanding and none still to post: nothing
 * will ever complete them, reported as such rather than run to the limit), posting a workload's
 * flows as it reaches them and polling each device's CQ as it goes. `opts.observer` sees it (the
 * timeline's recorder among them); its chunks of time end at each of the `timeline`'s samples.
 */
async function runFlows(built: Cluster, tr: TrafficRun, untilPs: number, opts: RunOptions, timeline: TimelineRecorder | null): Promise<RunProgress> {
  const { runner, contexts } = built;
  const observer = opts.observer;
  const p: RunProgress = { stopped: false, stalled: false };
  const chunk = Math.max(runner.windowPs, Math.min(10_000_000, observer?.intervalPs ?? Infinity));
  // split over threads, each polls its own devices: what the run does next is what they agree
  const part = opts.partition, agreed = (x: number) => (part ? part.sum(x) : x);
  let completed = 0;
  while (completed < tr.total && runner.nowPs < untilPs) {
    if (agreed(opts.shouldStop && (await opts.shouldStop()) ? 1 : 0) > 0) { p.stopped = true; break; }
    const limit = Math.min(untilPs, runner.nowPs + chunk, timeline?.nextPs(runner.nowPs) ?? Infinity, tr.nextPostPs);
    let idle = runner.runUntilIdle(limit);
    // nothing happens until the next flows arrive: on to them (or to the next sample)
    if (idle && tr.pending) { runner.runTo(limit); idle = false; }
    if (runner.nowPs === tr.nextPostPs) tr.postDue(runner.nowPs);
    tr.poll(contexts);
    completed = agreed(tr.completed);
    observer?.sample(runner.nowPs);
    opts.onProgress?.(runner.nowPs, completed, tr.total);
    if (idle && completed < tr.total) { p.stalled = true; break; }
  }
  return p;
}

/** What a traffic result reports of its scenario: its name, seed, limit and transport. */
type TrafficResultOf = Pick<Scenario, "name" | "seed" | "untilPs" | "transport">;

/** What the run did: per flow and in total, completion times, the devices' and the fabric's counters, and its timeline when it took one. */
function trafficResult(sc: TrafficResultOf, built: Cluster, tr: TrafficRun, p: RunProgress, ideal: ((f: FlowPlan) => number) | null, timeline: Timeline | null, gathered: SplitGathered | null): ScenarioResult {
  const { runner, contexts, fabric } = built;
  // split over threads, the first has every device's counters and paths gathered; the others
  // (whose results are not reported) and a whole run, their own
  const metaroce = sc.transport === "metaroce", devices = contexts.flatMap((c) => (c ? [c.device] : []));
  const counts = gathered ? deviceCountsOf(gathered.sums, runner.stageDrops(), metaroce) : deviceCounts(devices, runner.stageDrops(), metaroce);
  const { messages, flows, totalBytes, totalGoodputGbps, fctPs, ...more } = tr.report(ideal);
  const fs = fabric.totals();
  const all = messages.completed === messages.total;
  const finished = all && messages.failed === 0;
  return {
    // a run whose messages all completed ends at the last completion (not where the runner's
    // last chunk of time happened to end); otherwise where it stopped
    name: sc.name, seed: sc.seed, endPs: all ? tr.lastCompletionPs : runner.nowPs, untilPs: sc.untilPs, finished,
    ended: finished ? "finished" : all ? "failed" : p.stopped ? "stopped" : p.stalled ? "stalled" : "time-limit",
    messages, flows, totalBytes, totalGoodputGbps, fctPs, ...more,
    transport: sc.transport,
    ...counts,
    ...(metaroce ? { paths: pathSummary((gathered?.paths ?? devices.map((dev) => dev.metarocePaths())).flat()) } : {}),
    fabric: { drops: fs.drops, ecnMarks: fs.ecnMarks, pfcPauses: fs.pfcPauses, hops: fs.hops, delivered: fs.delivered },
    ports: portTraffic(fabric),
    ...(timeline ? { timeline } : {}),
  };
}

/** Builds and runs a traffic scenario (one with no collective), and measures what it did. */
export async function runTrafficScenario(coreModule: WebAssembly.Module, sc: Scenario, opts: RunOptions): Promise<ScenarioResult> {
  const t = sc.traffic;
  const plan = planTraffic(sc);
  const sizes = trafficSizes(sc.devices.count, plan);
  const built = await openTrafficCluster(coreModule, sc, sizes, opts);
  // a timeline's samples on the window grid, where the runner can stop
  const W = built.runner.windowPs;
  const timeline = opts.timelinePs === undefined ? null : new TimelineRecorder(Math.ceil(opts.timelinePs / W) * W);
  const observer = timeline && opts.observer ? new Observers([opts.observer, timeline]) : timeline ?? opts.observer;
  const tr = new TrafficRun(built.contexts, sizes, plan, t.portGroup, 0, W, observer, opts.partition);
  observer?.begin({ fabric: built.fabric, messagesPerFlow: plan.messages, devices: built.contexts.map((c) => c.device), transport: sc.transport, stageDrops: () => built.runner.stageDrops(), flows: tr.observed() });
  tr.postDue(built.runner.nowPs);
  opts.onStart?.(plan.maxBytes);
  const progress = await runFlows(built, tr, sc.untilPs, { ...opts, observer }, timeline);
  // split over threads: the others' devices, planes and polls, put together in the first
  const gathered = opts.partition ? gatherSplitRun(opts.partition, built, tr, sc.transport === "metaroce") : null;
  return trafficResult(sc, built, tr, progress, plan.workload ? idealOf(sc) : null, timeline?.timeline() ?? null, gathered);
}
