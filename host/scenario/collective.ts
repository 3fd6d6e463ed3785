// Runs a scenario whose devices run a collective (scenario `collective`, docs/graph.md): for each
// size, the devices boot the graph executor, the host compiles the collective, binds it, writes
// each device's input, rings one doorbell per device and runs the cluster until every device's
// final signal (or a failure, or the time limit). Measured per size, in the style of NCCL's
// tests: the time from the doorbell to the last device's final signal, algorithm bandwidth
// (bytes / time), bus bandwidth (the algorithm bandwidth times the collective's factor, so that
// it compares with a link's rate), engine utilisation, and a bit-for-bit check of every device's
// result against the reference executor. An observer (a trace, a CSV recording) sees each size's
// cluster, its flows and fabric, sampled at its interval (collective-observe.ts). No Node APIs.

import type { Context } from "../verbs.js";
import {
  allReduceRing, allReduceHalvingDoubling, allReduceTree, reduceScatterRing, allGatherRing, broadcastRing, allToAll,
  bindProgram, graphDeviceConfig, runReference, importMsccl, parseMscclXml, type GraphProgram,
} from "../graph/index.js";
import { executorElf } from "../generated/executor-elf.js";
import { Cluster, startExecutor, type FabricOf, type ClusterSizeOf } from "./cluster.js";
import { resolveConfig, ConfigError, HBM_MAX_BYTES } from "../config.js";
import type { Fabric } from "../fabric/fabric.js";
import type { ClusterRunner } from "../fabric/runner.js";
import { deviceCounts, percentiles, type TransportSums, type MetaroceCounts, type RetransmitCauses } from "./counters.js";
import { Alongside, matmulAlonePs, type InterferenceRow } from "./interference.js";
import type { Scenario, CollectiveSpec } from "./scenario.js";
import { criticalPath } from "../graph/critical.js";
import type { RunOptions, ScenarioResult, CollectiveRow, CollectiveReport } from "./result.js";
import { observeCluster, runObserved, type CollectiveFlows } from "./collective-observe.js";
import { backgroundNeed, idealOf, trafficSizes, TrafficRun, type TrafficSizes } from "./traffic-run.js";
import { planTraffic, type TrafficPlan } from "./workload.js";
import { maxOf } from "../extremes.js";
export type { CollectiveRow, CollectiveReport } from "./result.js";

/** A report's head for collective `c` on `n` devices, its rows to come. */
export function reportOf(c: CollectiveSpec, n: number): CollectiveReport {
  const algorithm = c.graph ? `msccl "${parseMscclXml(c.graph.text!).name}"` : c.op === "all-reduce" ? c.algorithm : c.op === "all-to-all" ? "direct" : "ring";
  return { op: c.op, algorithm, dtype: c.dtype, redop: c.redop, devices: n, engines: c.engines, rows: [] };
}

const ESIZE = { f32: 4, f16: 2, bf16: 2, i32: 4 } as const;

/** NCCL's bus bandwidth factors: what each device's links carry relative to the algorithm bandwidth. */
export function busFactor(op: CollectiveSpec["op"], n: number): number {
  if (op === "all-reduce") return (2 * (n - 1)) / n;
  if (op === "broadcast") return 1;
  return (n - 1) / n;
}

/** The program of `c` for `n` devices at `bytes` per device, striped over `ports` (stripePorts; an imported MSCCL algorithm is not). */
export function compileCollective(c: CollectiveSpec, n: number, bytes: number, ports = 1): GraphProgram {
  const o = { devices: n, engines: c.engines, bytes, dtype: c.dtype, redop: c.redop };
  if (c.graph) return importMsccl(c.graph.text!, o).program;
  const s = { ...o, ports };
  switch (c.op) {
    case "all-reduce": return c.algorithm === "halving-doubling" ? allReduceHalvingDoubling(s) : c.algorithm === "tree" ? allReduceTree(s) : allReduceRing(s);
    case "reduce-scatter": return reduceScatterRing(s);
    case "all-gather": return allGatherRing(s);
    case "broadcast": return broadcastRing({ ...s, root: c.root });
    case "all-to-all": return allToAll(s);
  }
}

/** What a collective's striping depends on: the collectives, the devices' config (their ports and split) and the transport. */
export type StripesOf = Pick<Scenario, "collective" | "collectives" | "transport"> & { devices: Pick<Scenario["devices"], "config"> };

/**
 * The ports each of `sc`'s collectives (its collective, or each of its collectives) is striped
 * over: over RoCEv2 with spreadPorts, its group's ports under the split it runs under (a queue
 * pair sends on one port); else 1 (the MetaRoCE-like transport sprays each connection over the
 * group itself).
 */
export function stripePorts(sc: StripesOf): number[] {
  const cfg = resolveConfig({ engines: 1, ...sc.devices.config });
  const ports = Number(cfg.get("ports"));
  let up = Math.min(ports, Number(cfg.get("scaleUpPorts")));
  return (sc.collective ? [sc.collective] : sc.collectives ?? []).map((c) => {
    if (c.scaleUpPorts !== undefined) up = c.scaleUpPorts;
    if (sc.transport !== "rocev2" || !c.spreadPorts) return 1;
    return Math.max(1, c.portGroup === "SCALE_UP" ? up : ports - up);
  });
}

/** Frames and bytes each port index has sent into the fabric so far, summed over the devices (the links from a device to its switch). */
export function portTraffic(fabric: Fabric): { frames: number[]; bytes: number[] } {
  const ports = fabric.ports;
  const frames = new Array<number>(ports).fill(0), bytes = new Array<number>(ports).fill(0);
  // each host link's channel from its device port (not fabric.stats(), which makes objects for
  // every link: 786,432 channels' at 16,384 devices on three tiers, 350 MB of a run's peak)
  fabric.topology.links.forEach((l, k) => {
    if (l.device < 0) return;
    const sent = fabric.channelSent(2 * k);
    frames[l.port]! += sent.packets;
    bytes[l.port]! += sent.bytes;
  });
  return { frames, bytes };
}

/** Deterministic input bytes for device d: xorshift32 words from (seed, device), valid numbers of every dtype (no NaN, no infinity). */
function input(bytes: number, seed: number, d: number, dtype: CollectiveSpec["dtype"]): Uint8Array {
  const out = new Uint8Array(bytes);
  const v = new DataView(out.buffer);
  let x = (seed * 0x9e3779b1 + (d + 1) * 0x85ebca6b) | 0 || 1;
  const next = () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), x >>> 0);
  const e = ESIZE[dtype];
  for (let i = 0; i + e <= bytes; i += e) {
    const r = next();
    // small values with a clear exponent: sums of many stay finite in every type
    if (dtype === "i32") v.setInt32(i, r | 0, true);
    else if (dtype === "f32") v.setFloat32(i, ((r & 0xffff) - 0x8000) / 4096, true);
    else v.setUint16(i, (r & 0x8000) | ((dtype === "bf16" ? 0x3c00 : 0x3000) + (r & 0x3ff)), true);
  }
  return out;
}

/** Transport and fabric counters of a collective scenario, summed over its clusters. */
export interface Totals {
  sums: TransportSums;
  /** why packets were sent again (as a traffic result's retransmitCauses) */
  retransmitCauses: RetransmitCauses;
  fab: { drops: Record<string, number>; ecnMarks: number; pfcPauses: number; hops: number; delivered: number };
  /** frames the devices dropped, by reason (as a traffic result's deviceDrops) */
  deviceDrops: Record<string, number>;
  /** the MetaRoCE-like transport's own counters (as a traffic result's metaroce), when it ran */
  metaroce?: MetaroceCounts;
}

/** Adds each count of `from` to `into`'s (absent ones start at 0); gives `into`. */
function addInto(into: Record<string, number>, from: Readonly<Record<string, number>>): Record<string, number> {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
  return into;
}

/** Totals with nothing counted yet. */
export function noTotals(): Totals {
  return { sums: { retransmits: 0, timeouts: 0, naksSent: 0, cnpsSent: 0, lateArrivals: 0 }, retransmitCauses: { lossDetected: 0, timeout: 0, rnr: 0, resync: 0, probes: 0, duplicatesAtReceiver: 0 }, fab: { drops: {}, ecnMarks: 0, pfcPauses: 0, hops: 0, delivered: 0 }, deviceDrops: {} };
}

/** Adds what a cluster's devices and fabric counted to `t`. */
export function addTotals(t: Totals, contexts: readonly Context[], fabric: Fabric, runner: ClusterRunner): void {
  const devices = contexts.map((ctx) => ctx.device);
  const { deviceDrops, metaroce, retransmitCauses, ...sums } = deviceCounts(devices, runner.stageDrops(), devices[0]?.config.get("transport") === 1n);
  addInto(t.sums, sums);
  for (const k of Object.keys(retransmitCauses) as (keyof RetransmitCauses)[]) t.retransmitCauses[k] += retransmitCauses[k];
  addInto(t.deviceDrops, deviceDrops);
  if (metaroce) t.metaroce = addInto(t.metaroce ?? {}, metaroce) as MetaroceCounts;
  const fs = fabric.totals();
  addInto(t.fab.drops, fs.drops);
  t.fab.ecnMarks += fs.ecnMarks;
  t.fab.pfcPauses += fs.pfcPauses;
  t.fab.hops += fs.hops;
  t.fab.delivered += fs.delivered;
}

/** What a collective's devices are opened from: their count and config, the seed, the fabric's mode, the transport, and what their cluster's memory is judged from. */
export type CollectiveDevicesOf = ClusterSizeOf & Pick<Scenario, "seed" | "transport"> & { devices: Pick<Scenario["devices"], "count" | "config">; fabric: Pick<Scenario["fabric"], "mode"> };

/** Device `d`'s config for programs needing `need` (graphDeviceConfig): the scenario's, raised to what they need. */
export function collectiveConfig(sc: CollectiveDevicesOf, need: Record<string, number>, d: number): Record<string, number> {
  return {
    ...sc.devices.config, ...need, deviceId: d, seed: sc.seed,
    engines: Math.max(need.engines, Number(sc.devices.config.engines ?? 16)),
    hbmBytes: Math.max(need.hbmBytes, Number(sc.devices.config.hbmBytes ?? 0)),
    timingMode: sc.fabric.mode === "timing" ? 1 : 0, transport: sc.transport === "metaroce" ? 1 : 0,
    mrtConnections: need.mrtConnections ?? Math.max(4, sc.devices.count),
  };
}

/**
 * The scenario's devices for programs needing `need` (collectiveConfig), each running the
 * executor, on its fabric, its engines booted (asleep, waiting for a doorbell) unless
 * `sc.untilPs` comes first.
 */
export async function bootCluster(coreModule: WebAssembly.Module, sc: CollectiveDevicesOf & FabricOf & Pick<Scenario, "untilPs">, need: Record<string, number>, opts: RunOptions): Promise<Cluster> {
  const elf = executorElf();
  const cluster = await Cluster.build(coreModule, sc, {
    configOf: (d) => collectiveConfig(sc, need, d), sizedBy: collectiveConfig(sc, need, 0),
    prepare: (ctx) => startExecutor(ctx, elf),
  }, opts);
  opts.onBuilt?.(cluster);
  // the engines boot the executor and sleep, waiting for the doorbell (bindProgram refuses them before)
  cluster.bootExecutors(sc.untilPs);
  return cluster;
}

/** What a program's run takes of its scenario: the seed its inputs are drawn from, the time limit, and whether frames carry bytes (a check needs them). */
export type ProgramRun = Pick<Scenario, "seed" | "untilPs"> & { fabric: Pick<Scenario["fabric"], "mode"> };

/** Traffic beside a collective (scenario `traffic` with `collective`): its plan, the devices' share of it, its port group, and each flow's ideal FCT (a workload's). */
export interface Background {
  plan: TrafficPlan;
  sizes: TrafficSizes;
  portGroup: Scenario["traffic"]["portGroup"];
  ideal: ReturnType<typeof idealOf> | null;
}

/**
 * Runs program `p` (collective `c` at `size` bytes per device, the `index`th run of `total`)
 * on the cluster: binds it, writes each device's input, rings the doorbells, runs until every
 * device's final signal, a failure, the time limit or a stop (with `interference`: the matmul
 * load alongside, `alonePs` its time alone), and measures it. Its row, and whether it was stopped.
 */
export async function runProgram(sc: ProgramRun, c: CollectiveSpec, p: GraphProgram, size: number, index: number, total: number, contexts: Context[], runner: ClusterRunner, alonePs: number | null, opts: RunOptions, flows: CollectiveFlows | null = null, background: Background | null = null) {
  const n = contexts.length;
  let stopped = false;
  const run = bindProgram(contexts, p, { portGroup: c.portGroup, spreadPorts: c.spreadPorts });
  flows?.bind(run);
  // an MSCCL algorithm that runs only in place has no "in": its input goes into "out"
  const inName = p.buffers.some((b) => b.name === "in") ? "in" : "out";
  const inBytes = p.buffers.find((b) => b.name === inName)!.bytes;
  const inputs = contexts.map((_, d) => input(inBytes, sc.seed, d, c.dtype));
  inputs.forEach((b, d) => run.write(d, inName, b));
  // the runner leaves idle devices where they last acted (the executors asleep since their
  // boot): bring them to its time, so that the doorbells ring at t0 and not in their past
  const t0 = runner.nowPs;
  for (const ctx of contexts) ctx.run(BigInt(t0));
  // background traffic: its QPs beside the collective's, its start counted from the doorbells
  const bg = background ? new TrafficRun(contexts, background.sizes, background.plan, background.portGroup, t0, runner.windowPs) : null;
  bg?.postDue(t0);
  const before = contexts.map((ctx) => Array.from({ length: p.engines }, (_, e) => ctx.device.engine(e)));
  const txBefore = contexts.map((ctx) => ctx.device.stats()["port.tx_bytes"]);
  run.start();
  const along = c.interference ? new Alongside(contexts.map((x) => x.device), c.interference) : null;
  along?.start();
  const ended = (d: number) => run.endCycles(d) > 0;
  opts.onStart?.(size);
  let state = run.poll();
  const chunk = Math.max(runner.windowPs, 1_000_000);
  // gpu-style: a window at a time, so that a device's compute units are given back within a
  // window of its final signal
  const step = c.interference?.mode === "gpu-style" ? runner.windowPs : chunk;
  let stalled = false;
  while (state.state === "running" && runner.nowPs < sc.untilPs) {
    if (opts.shouldStop && (await opts.shouldStop())) { stopped = true; break; }
    // idle with the collective still running: no engine, NIC or fabric event is left to move it
    const idle = runObserved(runner, Math.min(sc.untilPs, runner.nowPs + step, bg?.nextPostPs ?? Infinity), opts.observer);
    if (bg && runner.nowPs === bg.nextPostPs) bg.postDue(runner.nowPs);
    bg?.poll(contexts);
    state = run.poll();
    along?.poll(ended);
    opts.onProgress?.(runner.nowPs, index, total);
    if (idle && state.state === "running") { stalled = true; break; }
  }
  // the background traffic as it stood when the collective ended (or the run stopped)
  const bgReport = bg ? bg.report(background!.ideal, runner.nowPs) : undefined;
  const bgPlaced = bg?.placedBytes() ?? 0;
  const khz = Number(contexts[0].device.config.get("engineClockKhz"));
  const ps = (c: number) => Math.ceil((c * 1e9) / khz);
  const spans = contexts.map((_, d) => run.spans(d).map((x) => ({ node: x.node, engine: x.engine, postedPs: ps(x.postedCycles), donePs: ps(x.doneCycles) })));
  opts.observer?.graph?.({ index, size, program: p, spans });
  // the chain of events that decided the end, from the engines' own times (every node has them once it is done)
  const hops = state.state === "done" ? criticalPath(p, spans.map((d) => d.map((x) => ({ node: x.node, posted: x.postedPs, done: x.donePs })))).hops : undefined;
  const done = state.state === "done";
  const end = done ? maxOf(contexts.map((_, d) => Math.ceil((run.endCycles(d) * 1e9) / khz))) : runner.nowPs;
  // a size not done ran from its doorbells to where it ended (nothing, when stopped at once)
  const timePs = done ? Math.max(1, end - t0) : end - t0;
  // busy: each engine's clock advanced less its time asleep, over the span from the doorbells to
  // the end (the last device's final signal; where the run stopped, when it did not end) or to
  // the latest engine's clock, when an engine ran on past it (bookkeeping after its signal, by an
  // instruction or a stall): not to where the runner stopped, which is a window boundary
  let busy = 0, last = end;
  contexts.forEach((ctx, d) => {
    for (let e = 0; e < p.engines; e++) {
      const a = before[d][e], b = ctx.device.engine(e);
      busy += ((b.cycles - a.cycles) * 1e9) / khz - (b.sleepPs - a.sleepPs);
      last = Math.max(last, (b.cycles * 1e9) / khz);
    }
  });
  let check: CollectiveRow["check"] = "skipped";
  if (state.state === "done" && c.check && sc.fabric.mode === "full") {
    const ref = runReference(p, (rank, b) => (b === inName ? inputs[rank] : undefined));
    check = contexts.every((_, d) => equal(run.read(d, "out"), ref.buffers[d].get("out")!)) ? "ok" : "mismatch";
  }
  // the matmul load may outlast the collective: run on until it ends on every device
  let interference: InterferenceRow | undefined;
  let computeLate = false;
  if (along && state.state === "done" && !stopped) {
    while (!along.done && runner.nowPs < sc.untilPs) {
      if (opts.shouldStop && (await opts.shouldStop())) { stopped = true; break; }
      runner.runTo(Math.min(sc.untilPs, runner.nowPs + chunk));
      along.poll(ended);
    }
    if (along.done) interference = along.row(alonePs!, timePs);
    else computeLate = !stopped;
  }
  opts.observer?.sample(runner.nowPs); // where this size's run ended (after the load alongside)
  const nccl = c.op === "all-gather" || c.op === "reduce-scatter" || c.op === "all-to-all" ? n * size : size;
  // a bandwidth only for a size that was done: a failed or unfinished one moved less than its
  // bytes, and one stopped before its first completion has no rate at all (ScenarioResult)
  const algbw = done ? nccl / (timePs / 1e12) / 1e9 : null;
  const row: CollectiveRow = {
    bytes: nccl, count: size / ESIZE[c.dtype], timePs, algbwGBps: algbw, busbwGBps: algbw === null ? null : algbw * busFactor(c.op, n),
    // over the time run (to the poll after the end): engines still finish their bookkeeping after the last signal
    // (at most 1: every wake rounds the engine's clock up to its next cycle, a fraction of a ns each)
    engineUtil: Math.min(1, busy / (p.engines * n * Math.max(1, last - t0))), check,
    status: done && !computeLate ? "done" : state.state === "failed" ? "failed" : stopped ? "stopped" : stalled ? "stalled" : "time-limit",
    txBytes: contexts.map((ctx, d) => ctx.device.stats()["port.tx_bytes"] - txBefore[d]!),
    ...(hops !== undefined ? { criticalPathHops: hops } : {}),
    ...(state.state === "failed" ? { error: `${state.where}: ${state.status}` } : {}),
    ...(computeLate ? { error: "the matmul load alongside did not end within the limit" } : {}),
    ...(interference ? { interference } : {}),
    ...(bgReport ? { background: { ...bgReport, placedBytes: bgPlaced, placedGbps: timePs > 0 ? (bgPlaced * 8000) / timePs : null } } : {}),
  };
  return { row, stopped };
}

/** Runs scenario `sc` (which has a collective) and reports it in a ScenarioResult with `collective`. */
export async function runCollectiveScenario(coreModule: WebAssembly.Module, sc: Scenario, opts: RunOptions = {}): Promise<ScenarioResult> {
  const c = sc.collective!;
  const n = sc.devices.count;
  const rows: CollectiveRow[] = [];
  let endPs = 0, stopped = false;
  // transport and fabric counters, summed over the sizes' runs
  const totals = noTotals();
  let alonePs: number | null = null;
  let portFrames: number[] = [], portBytes: number[] = [];
  const [ports] = stripePorts(sc);
  // traffic beside the collective: planned once (each size's run posts it again, on its own devices)
  const bgPlan = sc.background ? planTraffic(sc) : null;
  const background: Background | null = bgPlan ? { plan: bgPlan, sizes: trafficSizes(n, bgPlan), portGroup: sc.traffic.portGroup, ideal: bgPlan.workload ? idealOf(sc) : null } : null;
  // every size compiled and sized before the first runs: one a device cannot hold is refused up
  // front, in the user's words, not after the sizes before it ran
  const programs = c.sizes.map((size, i) => {
    const p = compileCollective(c, n, size, ports);
    const need = background ? backgroundNeed(graphDeviceConfig(p), background.sizes) : graphDeviceConfig(p);
    if (need.hbmBytes > HBM_MAX_BYTES)
      throw new ConfigError(`scenario.collective.sizes[${i}]`, `${size} B needs ${need.hbmBytes} B of HBM on each device (the collective's buffers and graph), more than the ${HBM_MAX_BYTES} B a device can have (config.hbmBytes)`);
    return { size, p, need };
  });
  for (const { size, p, need } of programs) {
    // the matmul alone, once: on a device of the same config (the sizes change only its memory)
    if (c.interference && alonePs === null) alonePs = await matmulAlonePs(coreModule, collectiveConfig(sc, need, 0), c.interference, sc.untilPs);
    const { contexts, fabric, runner } = await bootCluster(coreModule, sc, need, opts);
    // new devices: nothing is connected yet, so the split changes at once
    if (c.scaleUpPorts !== undefined) for (const ctx of contexts) ctx.device.setPortGroups({ scaleUpPorts: c.scaleUpPorts });
    const flows = observeCluster(opts.observer, { fabric, runner, contexts }, sc.transport, [p], { index: rows.length, bytes: size, name: p.name });
    const r = await runProgram(sc, c, p, size, rows.length, c.sizes.length, contexts, runner, alonePs, opts, flows, background);
    rows.push(r.row);
    stopped = r.stopped;
    endPs += r.row.timePs;
    addTotals(totals, contexts, fabric, runner);
    const t = portTraffic(fabric);
    portFrames = t.frames.map((x, i) => x + (portFrames[i] ?? 0));
    portBytes = t.bytes.map((x, i) => x + (portBytes[i] ?? 0));
    if (stopped || r.row.status !== "done") break;
  }
  const failed = rows.filter((r) => r.status !== "done" || r.check === "mismatch").length;
  // a background message that failed fails the run too (one still outstanding when its size ended does not)
  const bgFailed = rows.some((r) => (r.background?.messages.failed ?? 0) > 0);
  const finished = rows.length === c.sizes.length && failed === 0 && !bgFailed;
  const fab = totals.fab;
  return {
    name: sc.name, seed: sc.seed, endPs, untilPs: sc.untilPs, finished,
    ended: finished ? "finished" : stopped ? "stopped" : rows.some((r) => r.status === "stalled") ? "stalled" : rows.some((r) => r.status === "time-limit") ? "time-limit" : "failed",
    messages: { total: c.sizes.length, completed: rows.length, failed }, flows: [], totalBytes: rows.reduce((a, r) => a + r.bytes, 0),
    ...collectiveTimes(rows), transport: sc.transport, ...totals.sums, retransmitCauses: totals.retransmitCauses,
    fabric: { ...fab, drops: fab.drops as ScenarioResult["fabric"]["drops"] }, deviceDrops: totals.deviceDrops, ports: { frames: portFrames, bytes: portBytes },
    ...(totals.metaroce ? { metaroce: totals.metaroce } : {}),
    collective: { ...reportOf(c, n), rows, portFrames, portBytes },
  };
}

/**
 * A collective result's goodput and completion times: each size run is one "message" of its
 * vector's bytes, done in its row's time (post to the last device's signal); the goodput is
 * the bytes over the times, Gb/s (the collectives' algorithm bandwidth, as algbwGBps × 8);
 * null when no size was done.
 */
export function collectiveTimes(rows: readonly CollectiveRow[]): Pick<ScenarioResult, "totalGoodputGbps" | "fctPs"> {
  const done = rows.filter((r) => r.status === "done");
  const times = done.map((r) => r.timePs).sort((a, b) => a - b);
  const busy = times.reduce((a, t) => a + t, 0), bytes = done.reduce((a, r) => a + r.bytes, 0);
  return { totalGoodputGbps: done.length === 0 ? null : busy > 0 ? (bytes * 8000) / busy : 0, fctPs: percentiles(times) };
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
