// A scenario's results as the text table `menic run` prints (no Node APIs: a page can show it
// too): per flow source → destination, bytes, goodput and status; totals; completion-time
// percentiles; drops by reason; retransmissions, timeouts, NAKs, ECN marks. A rate that is
// absent (nothing completed: result.ts, ScenarioResult) is shown as "—", never as a number.

import { formatTime } from "../units.js";
import type { ScenarioResult, FlowResult, RunEnd, MetaroceCounts } from "./run.js";
import type { InterferenceRow } from "./interference.js";
import type { CollectiveReport } from "./collective.js";
import { lateWarning } from "./counters.js";
import { DTYPE_BYTES } from "../graph/types.js";
import type { CollectiveRow, TrafficReport } from "./result.js";
import type { SlowdownBucket } from "./slowdown.js";
import { TRAFFIC_VERBS } from "./workload.js";

/** Flows listed in the table at most; --json lists every one. */
export const TABLE_FLOWS_MAX = 32;

const ENDED: Record<RunEnd, string> = {
  finished: "finished",
  failed: "finished with failed messages",
  "time-limit": "ran out of time",
  stopped: "stopped",
  stalled: "stalled (work outstanding, nothing left to happen)",
};

/** What the table and the page show for a rate that is absent (null: nothing completed, ScenarioResult). */
export const NO_RATE = "—";

/** A rate with two decimals, or NO_RATE when there is none. */
export function rateCell(x: number | null): string {
  return x === null ? NO_RATE : x.toFixed(2);
}

/** Completion-time percentiles as cells, or NO_RATE each when no message completed successfully (the percentiles of nothing are 0 in the JSON). */
export function fctCells(r: Pick<TrafficReport, "messages" | "fctPs">, which: readonly ("p50" | "p99" | "max")[]): string[] {
  const none = r.messages.completed - r.messages.failed === 0;
  return which.map((k) => (none ? NO_RATE : formatTime(r.fctPs[k])));
}

/** How a run ended, as the table's first line and the page say it. */
export function endedText(e: RunEnd): string {
  return ENDED[e];
}

/** A flow's status for people: its error, "incomplete" while messages are outstanding, else SUCCESS. */
export function flowStatus(f: FlowResult): string {
  if (f.failed > 0) return f.status;
  return f.completed < f.messages ? "incomplete" : f.status;
}

/** Columns padded to their widest cell; `right` says which are numbers (right-aligned). */
function columns(rows: string[][], right: boolean[]): string[] {
  const w = rows[0]!.map((_, k) => Math.max(...rows.map((r) => (r[k] ?? "").length)));
  return rows.map((r) => r.map((c, k) => (right[k] ? c.padStart(w[k]!) : c.padEnd(w[k]!))).join("  ").trimEnd());
}

/** Non-zero counts as "name n, name n", or "none". */
function counts(o: Record<string, number>): string {
  const nz = Object.entries(o).filter(([, n]) => n > 0);
  return nz.length ? nz.map(([k, n]) => `${k} ${n}`).join(", ") : "none";
}

/**
 * A collective size as the scenario gave it (collective.sizes: bytes per device), for the tables'
 * size column. The row's `bytes` is NCCL's size, what its algbw divides: for all-gather,
 * reduce-scatter and all-to-all every device's share, n times the size given.
 */
export function givenBytes(c: Pick<CollectiveReport, "dtype">, x: Pick<CollectiveRow, "count">): number {
  return x.count * DTYPE_BYTES[c.dtype];
}

/** The ops whose NCCL size (the row's bytes, algbw's numerator) is n times the size given. */
const TIMES_N = new Set<CollectiveReport["op"]>(["all-gather", "reduce-scatter", "all-to-all"]);

/** The note under a table whose size column is not what algbw divides (TIMES_N), or none. */
export function sizeNote(reports: readonly Pick<CollectiveReport, "op">[]): string[] {
  if (!reports.some((c) => TIMES_N.has(c.op))) return [];
  return ["size: bytes per device as given (collective.sizes: an all-gather's input, a reduce-scatter's result, an all-to-all's block); algbw = n x size / time for these (NCCL's size: the JSON's bytes), size / time for the others"];
}

/** A collective's table, in the style of NCCL's tests: a row per size (of `collectives`: with its split and its frames per port). */
function formatCollective(r: ScenarioResult, c: CollectiveReport): string[] {
  const out = [`${c.op} (${c.algorithm}), ${c.dtype} ${c.redop}, ${c.devices} devices x ${c.engines} engines, ${r.transport}`];
  if (c.scaleUpPorts !== undefined) {
    const ports = c.portFrames?.length ?? 0;
    const [lo, hi] = c.portGroup === "SCALE_UP" ? [0, c.scaleUpPorts] : [c.scaleUpPorts, ports];
    const at = c.resplitPs !== undefined ? `, re-split at ${formatTime(c.resplitPs)}` : "";
    out.push(`port group ${c.portGroup}: ports ${lo}..${hi - 1} of ${ports} (${c.scaleUpPorts} scale-up${at}); frames sent per port ${c.portFrames!.join(" ")}`);
  }
  if (c.error) out.push(`not run: ${c.error}`);
  out.push("");
  const rows = [["size (B)", "count", "time", "algbw GB/s", "busbw GB/s", "engines busy", "check", "status"]];
  if (c.error) return out;
  for (const x of c.rows) rows.push([
    String(givenBytes(c, x)), String(x.count), formatTime(x.timePs), rateCell(x.algbwGBps), rateCell(x.busbwGBps), `${(100 * x.engineUtil).toFixed(1)}%`, x.check,
    x.error ? `${x.status}: ${x.error}` : x.status,
  ]);
  out.push(...columns(rows, [true, true, true, true, true, true, false, false]));
  out.push(...backgroundLines(c));
  return out;
}

/** Why the MetaRoCE-like transport sent packets again. */
function metaroceLine(m: MetaroceCounts): string {
  return `transport metaroce: packets sent ${m.tx_data}, again ${m.tx_retransmits} (lost in a SACK hole ${m.losses_sack}, at an RTO ${m.losses_rto}; received twice ${m.rx_duplicate})`;
}

/** Why packets were sent again, by cause (ScenarioResult.retransmitCauses). */
function causesLine(r: ScenarioResult): string {
  const c = r.retransmitCauses;
  return `sent again for: a loss detected ${c.lossDetected}, a timeout ${c.timeout}, an RNR NAK ${c.rnr}, a resync ${c.resync}, probes ${c.probes}; received twice ${c.duplicatesAtReceiver}`;
}

/** Bytes for people, in decimal units as the workloads' papers give sizes: 10 KB, 1.5 MB. */
export function formatBytes(n: number): string {
  const units: [number, string][] = [[1e9, "GB"], [1e6, "MB"], [1e3, "KB"]];
  for (const [u, name] of units) if (n >= u) return `${+(n / u).toFixed(n % u === 0 ? 0 : 2)} ${name}`;
  return `${n} B`;
}

/** A traffic's messages per verb (when it posts others than WRITE): done of posted, failed, and bytes. */
function verbLines(r: Pick<TrafficReport, "verbs">): string[] {
  if (!r.verbs) return [];
  const cells = TRAFFIC_VERBS.flatMap((v) => {
    const c = r.verbs![v];
    if (!c) return [];
    return [`${v} ${c.completed}/${c.messages}${c.failed ? ` (${c.failed} failed)` : ""}, ${c.bytes} B${v === "READ" ? " read" : ""}`];
  });
  return [`per verb: ${cells.join("; ")}`];
}

/** A slowdown bucket's size range. */
function bucketLabel(b: SlowdownBucket): string {
  if (b.toBytes === null) return b.fromBytes <= 1 ? "all" : `> ${formatBytes(b.fromBytes - 1)}`;
  return b.fromBytes <= 1 ? `<= ${formatBytes(b.toBytes)}` : `${formatBytes(b.fromBytes - 1)} - ${formatBytes(b.toBytes)}`;
}

const slowdownCell = (x: number | null) => (x === null ? NO_RATE : x.toFixed(2));

/** An open-loop workload's head and its FCT slowdown by flow size (docs/workloads.md). */
function workloadLines(r: Pick<TrafficReport, "workload">): string[] {
  const w = r.workload;
  if (!w) return [];
  const rows = [["flow size", "flows", "done", "slowdown p50", "p99"]];
  for (const b of [...w.slowdown.buckets, w.slowdown.all]) rows.push([bucketLabel(b), String(b.flows), String(b.completed), slowdownCell(b.p50), slowdownCell(b.p99)]);
  return [
    "", `open-loop workload: ${w.flows} flows, sizes ${w.sizes} (mean ${formatBytes(Math.round(w.meanFlowBytes))}), load ${w.load} of ${w.hostGbps} Gb/s per device`,
    ...columns(rows, [false, true, true, true, true]),
    "slowdown: a flow's FCT over its ideal, alone on an idle fabric (its path's latencies and line rate; the NIC's own time left out: docs/workloads.md)",
  ];
}

/** A collective's background traffic, a row per size: what it moved while that size ran. */
function backgroundLines(c: CollectiveReport): string[] {
  const rows = c.rows.filter((x) => x.background);
  if (rows.length === 0) return [];
  const slow = rows.some((x) => x.background!.workload);
  const t = [["size (B)", "placed (B)", "Gb/s", "messages done", "bytes", "FCT p50", "FCT p99", ...(slow ? ["slowdown p50", "p99"] : []), "failed"]];
  for (const x of rows) {
    const b = x.background!, a = b.workload?.slowdown.all;
    t.push([
      String(givenBytes(c, x)), String(b.placedBytes), rateCell(b.placedGbps), `${b.messages.completed - b.messages.failed}/${b.messages.total}`, String(b.totalBytes), ...fctCells(b, ["p50", "p99"]),
      ...(slow ? [slowdownCell(a?.p50 ?? null), slowdownCell(a?.p99 ?? null)] : []), String(b.messages.failed),
    ]);
  }
  const verbs = rows.flatMap((x) => verbLines(x.background!).map((l) => `${givenBytes(c, x)} B: ${l}`));
  return [
    "", "background traffic (`traffic` beside the collective, from each size's doorbells to its end):", ...columns(t, t[0]!.map((_, i) => i > 0)), ...verbs,
    "placed: payload bytes its receivers placed while the size ran, messages complete or not; Gb/s: over the size's time",
  ];
}

/** What follows a collective scenario's tables: drops, transport counters, the bus bandwidth convention. */
function collectiveFooter(r: ScenarioResult): string[] {
  const out: string[] = [];
  out.push("", `drops: fabric ${counts(r.fabric.drops)}; devices ${counts(r.deviceDrops)}; retransmissions ${r.retransmits}, timeouts ${r.timeouts}, NAKs ${r.naksSent}, ECN marks ${r.fabric.ecnMarks}`);
  out.push(causesLine(r));
  if (r.metaroce) out.push(metaroceLine(r.metaroce));
  const late = lateWarning(r.lateArrivals);
  if (late) out.push(late);
  out.push("busbw = algbw x 2(n-1)/n for all-reduce, (n-1)/n for reduce-scatter, all-gather and all-to-all, 1 for broadcast (NCCL's convention)");
  const reports = r.collective ? [r.collective] : r.collectives ?? [];
  out.push(...sizeNote(reports));
  for (const c of reports) {
    const withLoad = c.rows.filter((x) => x.interference);
    if (!withLoad.length) continue;
    const m = withLoad[0]!.interference!;
    out.push("", `compute interference (docs/compute.md): a matmul load on every device's compute grid, ${m.mode === "gpu-style" ? `gpu-style: communication holds ${m.commUnits} compute units while it runs` : "engines: the collective costs it HBM bandwidth only"}`);
    const t = [["size (B)", ...INTERFERENCE_HEAD]];
    for (const x of withLoad) t.push([String(givenBytes(c, x)), ...interferenceCells(x.interference!)]);
    out.push(...columns(t, t[0]!.map(() => true)));
    out.push("slowdown = alongside / alone - 1 (the slowest device); lost = (alongside - alone) / the collective's time");
  }
  return out;
}

/** The interference columns' heads, for this table and the sweep's. */
export const INTERFERENCE_HEAD = ["matmul alone", "alongside", "slowdown", "lost", "collective HBM"];

/** A row's interference cells, in INTERFERENCE_HEAD's order. */
export function interferenceCells(m: InterferenceRow): string[] {
  return [formatTime(m.alonePs), formatTime(m.alongsidePs), `${(100 * m.slowdown).toFixed(3)}%`, `${(100 * m.lostPerCollectiveTime).toFixed(2)}%`, `${(m.collectiveHbmBytes / 1e6).toFixed(2)} MB`];
}

/** The results table, lines ending in "\n". */
export function formatResult(r: ScenarioResult): string {
  const out: string[] = [];
  if (r.collective) {
    out.push(`${r.name} (seed ${r.seed}): ${ENDED[r.ended]} after ${formatTime(r.endPs)} of simulated time (limit ${formatTime(r.untilPs)} per size)`, "", ...formatCollective(r, r.collective), ...collectiveFooter(r));
    return out.map((l) => `${l}\n`).join("");
  }
  if (r.collectives) {
    out.push(`${r.name} (seed ${r.seed}): ${ENDED[r.ended]} at ${formatTime(r.endPs)} of simulated time (limit ${formatTime(r.untilPs)} for the whole sequence)`);
    for (const c of r.collectives) out.push("", ...formatCollective(r, c));
    out.push(...collectiveFooter(r));
    return out.map((l) => `${l}\n`).join("");
  }
  // the cluster runner advances in whole windows (docs/fabric.md): a limit between two window
  // boundaries is reached at the next one, and the line says so
  const rounded = r.endPs > r.untilPs ? ", rounded up to the end of the runner's window" : "";
  out.push(`${r.name} (seed ${r.seed}): ${ENDED[r.ended]} at ${formatTime(r.endPs)} of simulated time (limit ${formatTime(r.untilPs)}${rounded})`, "");
  const rows = [["flow", "src → dst", "messages", "bytes", "goodput Gb/s", "status"]];
  r.flows.slice(0, TABLE_FLOWS_MAX).forEach((f, i) => rows.push([
    String(i), `${f.src} → ${f.dst}`, `${f.completed}/${f.messages}`, String(f.bytes), rateCell(f.goodputGbps), flowStatus(f),
  ]));
  const done = r.flows.reduce((s, f) => s + f.completed, 0);
  rows.push(["total", `${r.flows.length} flow${r.flows.length === 1 ? "" : "s"}`, `${done}/${r.messages.total}`, String(r.totalBytes), rateCell(r.totalGoodputGbps),
    r.messages.failed ? `${r.messages.failed} failed` : ""]);
  out.push(...columns(rows, [false, false, true, true, true, false]));
  if (r.flows.length > TABLE_FLOWS_MAX) out.push(`(${r.flows.length - TABLE_FLOWS_MAX} more flows: --json lists every one)`);
  out.push("");
  const [p50, p99, max] = fctCells(r, ["p50", "p99", "max"]);
  out.push(`completion time: p50 ${p50}, p99 ${p99}, max ${max}${p50 === NO_RATE ? " (no message completed successfully)" : ""}`);
  out.push(...verbLines(r), ...workloadLines(r));
  out.push(`drops: fabric ${counts(r.fabric.drops)}; devices ${counts(r.deviceDrops)}`);
  if (r.metaroce) {
    const m = r.metaroce;
    out.push(metaroceLine(m));
    out.push(`paths: probes ${m.tx_probes}, RTOs ${m.rtos}, failed ${m.paths_failed}, recovered ${m.paths_recovered}, window cuts ${m.cwnd_cuts}, RNR NAKs ${m.rnr_naks}; ECN marks ${r.fabric.ecnMarks}`);
    if (r.paths) {
      const p = r.paths, kb = (n: number) => (n / 1024).toFixed(0), us = (n: number) => formatTime(Math.round(n)), g = (n: number) => n.toFixed(1);
      out.push(`at the end, ${p.count} paths: ${p.active} active, ${p.suspect} suspect, ${p.failed} failed; window KiB ${p.cwndBytes.map(kb).join("/")}, SRTT ${p.srttPs.map(us).join("/")}, rate hint Gb/s ${p.hintGbps.map(g).join("/")} (min/median/max)`);
    }
  } else {
    out.push(`retransmissions ${r.retransmits}, timeouts ${r.timeouts}, NAKs ${r.naksSent}, ECN marks ${r.fabric.ecnMarks}, CNPs ${r.cnpsSent}, PFC pauses ${r.fabric.pfcPauses}`);
  }
  out.push(causesLine(r));
  const late = lateWarning(r.lateArrivals);
  if (late) out.push(late);
  return out.map((l) => `${l}\n`).join("");
}
