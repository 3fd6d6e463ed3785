// Runs a scenario's `collectives`: several collectives one after another on the same devices
// (docs/graph.md, "A sequence of collectives"), each over its sizes, with the ports re-split
// between them where a collective says so. One cluster for the whole sequence, sized for every
// program of it; before a collective with `scaleUpPorts`, the cluster runs until no device has
// anything in flight that a re-split would strand (Device.portGroupsBlocker), then every device
// re-splits at that same time (docs/nic.md, "Port groups"). Each collective's report says the
// split it ran under and the frames each port sent while it ran (from the fabric's host links).
// No Node APIs.

import type { Context } from "../verbs.js";
import type { ClusterRunner } from "../fabric/runner.js";
import { graphDeviceConfig, executorsReady } from "../graph/index.js";
import { compileCollective, stripePorts, portTraffic, collectiveConfig, bootCluster, runProgram, addTotals, noTotals, reportOf, collectiveTimes, type CollectiveReport } from "./collective.js";
import { ConfigError, HBM_MAX_BYTES } from "../config.js";
import { matmulAlonePs } from "./interference.js";
import type { Scenario } from "./scenario.js";
import type { RunOptions, ScenarioResult } from "./result.js";
import { observeCluster } from "./collective-observe.js";

/** What every program of the sequence needs together: the most engines, and room for all their queue pairs, CQs, regions, PDs and HBM (nothing is freed between them). */
function needOfAll(needs: Record<string, number>[], devices: number): Record<string, number> {
  const sum = (k: string) => needs.reduce((a, x) => a + (x[k] ?? 0), 0);
  return {
    engines: Math.max(...needs.map((x) => x.engines)), maxQps: sum("maxQps"), maxCqs: sum("maxCqs"), maxMrs: sum("maxMrs"), maxPds: sum("maxPds"),
    hbmBytes: sum("hbmBytes"),
    // a connection per peer and port group
    mrtConnections: Math.max(4, 2 * devices),
  };
}

/**
 * Runs until no device has anything that stops a re-split to `up` scale-up ports, then re-splits
 * every device. Null when done; else why not (a group left without ports, the time limit, a stop).
 */
async function resplit(contexts: readonly Context[], runner: ClusterRunner, up: number, untilPs: number, opts: RunOptions): Promise<string | null> {
  for (;;) {
    const d = contexts.findIndex((ctx) => ctx.device.portGroupsBlocker(up) !== null);
    if (d < 0) break;
    const b = contexts[d]!.device.portGroupsBlocker(up)!;
    const why = `re-split to ${up} scale-up ports refused on device ${d}: ${b.message}`;
    if (b.reason === "empty-group") return why;
    if (runner.nowPs >= untilPs) return `${why}, still at the time limit`;
    if (opts.shouldStop && (await opts.shouldStop())) return "stopped";
    runner.runTo(Math.min(untilPs, runner.nowPs + runner.windowPs));
  }
  for (const ctx of contexts) ctx.device.setPortGroups({ scaleUpPorts: up });
  return null;
}

/** Runs scenario `sc` (which has `collectives`) and reports it in a ScenarioResult with `collectives`. */
export async function runCollectiveSequence(coreModule: WebAssembly.Module, sc: Scenario, opts: RunOptions = {}): Promise<ScenarioResult> {
  const list = sc.collectives!;
  const n = sc.devices.count;
  const stripes = stripePorts(sc);
  const programs = list.map((c, i) => c.sizes.map((size) => compileCollective(c, n, size, stripes[i])));
  const total = programs.reduce((a, x) => a + x.length, 0);
  const need = needOfAll(programs.flat().map(graphDeviceConfig), n);
  if (need.hbmBytes > HBM_MAX_BYTES)
    throw new ConfigError("scenario.collectives", `its sizes need ${need.hbmBytes} B of HBM on each device together (one cluster holds every collective's buffers and graph), more than the ${HBM_MAX_BYTES} B a device can have (config.hbmBytes)`);
  // a collective with a matmul load alongside: the load alone, on a device of the same config
  const config0 = collectiveConfig(sc, need, 0);
  const alone = await Promise.all(list.map((c) => (c.interference ? matmulAlonePs(coreModule, config0, c.interference, sc.untilPs) : null)));
  const { contexts, fabric, runner } = await bootCluster(coreModule, sc, need, opts);
  const flows = observeCluster(opts.observer, { fabric, runner, contexts }, sc.transport, programs.flat());
  const portFrames = () => portTraffic(fabric);
  const reports: CollectiveReport[] = [];
  let index = 0, stopped = false, timeLimit = false;
  for (const [i, c] of list.entries()) {
    const report: CollectiveReport = reportOf(c, n);
    reports.push(report);
    // the engines finish their bookkeeping after the last signal and sleep, waiting for the next doorbell
    while (!executorsReady(contexts) && runner.nowPs < sc.untilPs) runner.runTo(Math.min(sc.untilPs, runner.nowPs + runner.windowPs));
    if (c.scaleUpPorts !== undefined) {
      const err = await resplit(contexts, runner, c.scaleUpPorts, sc.untilPs, opts);
      if (err === "stopped") { stopped = true; break; }
      if (err) { report.error = err; timeLimit = err.endsWith("time limit"); break; }
      report.resplitPs = runner.nowPs;
    }
    report.portGroup = c.portGroup;
    report.scaleUpPorts = contexts[0]!.device.portGroups().scaleUpPorts;
    const before = portFrames();
    for (const [k, size] of c.sizes.entries()) {
      const r = await runProgram(sc, c, programs[i]![k]!, size, index++, total, contexts, runner, alone[i]!, opts, flows);
      report.rows.push(r.row);
      stopped = r.stopped;
      if (stopped || r.row.status !== "done") break;
    }
    const after = portFrames();
    report.portFrames = after.frames.map((x, p) => x - before.frames[p]!);
    report.portBytes = after.bytes.map((x, p) => x - before.bytes[p]!);
    if (stopped || report.rows.some((r) => r.status !== "done")) break;
  }
  const totals = noTotals();
  addTotals(totals, contexts, fabric, runner);
  const rows = reports.flatMap((r) => r.rows);
  const failed = rows.filter((r) => r.status !== "done" || r.check === "mismatch").length + reports.filter((r) => r.error).length;
  const finished = rows.length === total && failed === 0;
  const fab = totals.fab;
  return {
    name: sc.name, seed: sc.seed, endPs: runner.nowPs, untilPs: sc.untilPs, finished,
    ended: finished ? "finished" : stopped ? "stopped" : rows.some((r) => r.status === "stalled") ? "stalled" : timeLimit || rows.some((r) => r.status === "time-limit") ? "time-limit" : "failed",
    messages: { total, completed: rows.length, failed }, flows: [], totalBytes: rows.reduce((a, r) => a + r.bytes, 0),
    ...collectiveTimes(rows), transport: sc.transport, ...totals.sums, retransmitCauses: totals.retransmitCauses,
    fabric: { ...fab, drops: fab.drops as ScenarioResult["fabric"]["drops"] }, deviceDrops: totals.deviceDrops, ports: portFrames(),
    ...(totals.metaroce ? { metaroce: totals.metaroce } : {}),
    collectives: reports,
  };
}
