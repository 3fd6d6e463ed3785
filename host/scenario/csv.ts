// A run's series as tidy CSV files (`menic run --csv <dir>`, RunOptions.csv): one row per
// observation, one column per variable, a header row, times in ps and units in the column
// names, written as the run goes, so that any plotting tool reads them without parsing a trace:
//  - flows.csv: each flow's sending rate (retransmissions included), goodput (bytes its receiver
//    placed in order) and DCQCN rate (RoCEv2) over each interval;
//  - queues.csv: each switch output queue's depth, named as the Perfetto trace names it, from
//    the first sample at which it held a byte;
//  - paths.csv: each MetaRoCE-like path of the sending devices: state, window, bytes in flight,
//    smoothed RTT, rate hint;
//  - counters.csv: the result's counters (fabric drops by reason, ECN marks, PFC pauses,
//    retransmissions, timeouts, probes, ...) by their names in the result, as they grow.
// A row is taken at the first sample at or after each multiple of the interval (the runner
// stops between windows: docs/fabric.md, "Windows") and at a cluster's last sample, so the
// rates' intervals cover the run and the last counter rows are the result's. docs/csv.md says
// what every column means. No Node APIs: each file's text goes to a sink its caller opens.

import { deviceCounts } from "./counters.js";
import type { BuiltRun, RunObserver, CsvFile, CsvOptions, CsvSink } from "./result.js";
import { queueNames } from "./trace.js";

/** The files a CSV recording writes ({@link CsvFile}), each opened once, when the run's first cluster is built. */
export const CSV_FILES = ["flows.csv", "queues.csv", "paths.csv", "counters.csv"] as const satisfies readonly CsvFile[];

/** Each file's header row (docs/csv.md): the time, what the row is of, then its values with their units. */
export const CSV_HEADERS: Readonly<Record<CsvFile, readonly string[]>> = {
  "flows.csv": ["time_ps", "size_bytes", "interval_ps", "flow", "src", "dst", "sending_gbps", "goodput_gbps", "dcqcn_rate_gbps"],
  "queues.csv": ["time_ps", "size_bytes", "queue", "depth_bytes"],
  "paths.csv": ["time_ps", "size_bytes", "device", "peer", "path", "port", "state", "cwnd_bytes", "inflight_bytes", "srtt_ps", "hint_gbps"],
  "counters.csv": ["time_ps", "size_bytes", "counter", "value"],
};

/** The interval {@link CsvOptions.intervalPs} defaults to, 1 us (the trace's). */
export const CSV_INTERVAL_DEFAULT_PS = 1_000_000;
/** Text kept per file before it goes to its sink. */
const FLUSH_CHARS = 1 << 16;

/** A value as a CSV field: quoted when it holds a comma, a quote or a line break. */
function field(v: string | number): string {
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** One file, its rows buffered. */
class CsvText {
  private text = "";
  constructor(private readonly sink: CsvSink, header: readonly string[]) {
    this.text = `${header.join(",")}\n`;
  }
  row(cells: readonly (string | number)[]): void {
    this.text += `${cells.map(field).join(",")}\n`;
    if (this.text.length >= FLUSH_CHARS) this.flush();
  }
  flush(): void {
    if (this.text !== "") this.sink(this.text);
    this.text = "";
  }
}

/**
 * The result's counters now, by their names in it (`fabric.drops.buffer_full`, `retransmits`,
 * `retransmitCauses.probes`, `metaroce.rtos`, ...): what {@link ScenarioResult} reports of the
 * fabric and the devices, for one cluster.
 */
export function resultCounters(run: BuiltRun): [string, number][] {
  const { deviceDrops, metaroce, retransmitCauses, ...sums } = deviceCounts(run.devices, run.stageDrops(), run.transport === "metaroce");
  const f = run.fabric.totals();
  const out: [string, number][] = [];
  const add = (prefix: string, o: object) => { for (const [k, v] of Object.entries(o) as [string, number][]) out.push([prefix + k, v]); };
  add("fabric.drops.", f.drops);
  add("fabric.", { ecnMarks: f.ecnMarks, pfcPauses: f.pfcPauses, hops: f.hops, delivered: f.delivered });
  add("", sums);
  add("retransmitCauses.", retransmitCauses);
  add("deviceDrops.", deviceDrops);
  if (metaroce) add("metaroce.", metaroce);
  return out;
}

/** Records a run's flows, queues, paths and counters as CSV files ({@link CSV_FILES}) as it goes; pass it as a RunObserver, or give RunOptions.csv. */
export class CsvRecorder implements RunObserver {
  readonly intervalPs: number;
  private files: Record<CsvFile, CsvText> | null = null;
  private run: BuiltRun | null = null;
  /** the size column of this cluster's rows ("" for the run's one cluster) */
  private size: number | "" = "";
  /** per flow: bytes sent and placed at the last row */
  private sent: number[] = [];
  private placed: number[] = [];
  /** per channel: whether its queue has held a byte at a row */
  private queueSeen: boolean[] = [];
  private queues: { c: number; name: string }[] = [];
  /** the devices whose paths are recorded: the flows' senders */
  private pathDevices: number[] = [];
  /** per counter: its value in its last row, and that row's time */
  private counters = new Map<string, { value: number; atPs: number }>();
  private lastRowPs = 0;
  private nextRowPs = 0;
  /** the last sample's time (a row is owed for it when it is after the last row) */
  private lastSeenPs = 0;

  constructor(private readonly o: CsvOptions) {
    this.intervalPs = o.intervalPs ?? CSV_INTERVAL_DEFAULT_PS;
    if (!(Number.isSafeInteger(this.intervalPs) && this.intervalPs >= 1000)) throw new RangeError(`a CSV interval must be a whole number of ps, at least 1000 (1 ns), got ${this.intervalPs}`);
  }

  begin(run: BuiltRun): void {
    this.finish(); // the last cluster's (a collective's sizes: each on a cluster of its own)
    this.files ??= Object.fromEntries(CSV_FILES.map((f) => [f, new CsvText(this.o.open(f), CSV_HEADERS[f])])) as Record<CsvFile, CsvText>;
    this.run = run;
    this.size = run.size?.bytes ?? "";
    this.sent = [];
    this.placed = [];
    this.counters.clear();
    this.lastRowPs = this.lastSeenPs = 0;
    this.nextRowPs = this.intervalPs;
    this.pathDevices = run.transport === "metaroce" ? [...new Set(run.flows.map((f) => f.src))].sort((a, b) => a - b) : [];
    this.queues = queueNames(run);
    this.queueSeen = this.queues.map(() => false);
  }

  posted(): void {}
  completed(): void {}

  sample(nowPs: number): void {
    if (!this.run) return;
    this.lastSeenPs = Math.max(this.lastSeenPs, nowPs);
    if (nowPs < this.nextRowPs) return;
    this.take(nowPs, false);
  }

  /** The last cluster's last row, then every file's text to its sink. Call once the run is over. */
  close(): void {
    this.finish();
    if (this.files) for (const f of CSV_FILES) this.files[f].flush();
  }

  /** A cluster's last row: at its last sample, with every counter. */
  private finish(): void {
    if (!this.run) return;
    if (this.lastSeenPs > this.lastRowPs) this.take(this.lastSeenPs, true);
    else this.takeCounters(this.lastRowPs, true);
    this.run = null;
  }

  private take(nowPs: number, last: boolean): void {
    const run = this.run!, files = this.files!, dt = nowPs - this.lastRowPs;
    if (dt <= 0) return;
    run.flows.forEach((f, i) => {
      const sent = f.sentBytes(), placed = f.placedBytes();
      files["flows.csv"].row([nowPs, this.size, dt, i, f.src, f.dst, ((sent - (this.sent[i] ?? 0)) * 8000) / dt, ((placed - (this.placed[i] ?? 0)) * 8000) / dt, run.transport === "rocev2" ? f.rateGbps() : ""]);
      this.sent[i] = sent;
      this.placed[i] = placed;
    });
    this.queues.forEach((q, k) => {
      const bytes = run.fabric.queueBytes(q.c);
      if (bytes === 0 && !this.queueSeen[k]) return;
      this.queueSeen[k] = true;
      files["queues.csv"].row([nowPs, this.size, q.name, bytes]);
    });
    for (const d of this.pathDevices) {
      for (const p of run.devices[d]!.metarocePaths()) {
        files["paths.csv"].row([nowPs, this.size, d, p.peer, p.path, p.port, p.state, p.cwndBytes, p.inflightBytes, p.srttPs, p.hintGbps]);
      }
    }
    this.takeCounters(nowPs, last);
    this.lastRowPs = nowPs;
    this.nextRowPs = (Math.floor(nowPs / this.intervalPs) + 1) * this.intervalPs;
  }

  /** A row per counter that changed since its last row, or that has none yet; `last`: per counter whose last row is not at `nowPs`. */
  private takeCounters(nowPs: number, last: boolean): void {
    for (const [name, value] of resultCounters(this.run!)) {
      const had = this.counters.get(name);
      if (had && had.value === value && !(last && had.atPs < nowPs)) continue;
      this.files!["counters.csv"].row([nowPs, this.size, name, value]);
      this.counters.set(name, { value, atPs: nowPs });
    }
  }
}
