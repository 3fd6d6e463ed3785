// What a scenario run takes and gives (host/scenario/run.ts runs it): its options and observer,
// and its result, a traffic run's or a collective's. Types only: run.ts, collective.ts and
// sequence.ts all build these, none needs another to say what they are.

import type { Device } from "../device.js";
import type { Fabric, DropReason } from "../fabric/fabric.js";
import type { GraphProgram } from "../graph/types.js";
import type { CollectiveSpec } from "./scenario.js";
import type { Cluster } from "./cluster.js";
import type { Partition } from "../fabric/partition.js";
import type { InterferenceRow } from "./interference.js";
import type { MetaroceCounts, RetransmitCauses, Percentiles } from "./counters.js";
import type { SlowdownTable } from "./slowdown.js";
import type { TrafficVerb } from "./workload.js";

/** What one flow (a QP pair of the traffic pattern) did in a scenario run. */
export interface FlowResult {
  /** The sending device. */
  src: number;
  /** The receiving device. */
  dst: number;
  /** Payload bytes of the messages that completed successfully. */
  bytes: number;
  /** Messages it posted. */
  messages: number;
  /** Messages that completed successfully. */
  completed: number;
  /** messages that completed with an error (WR_FLUSH_ERR behind the first) */
  failed: number;
  /** SUCCESS when every message posted completed with success; else the first error a message completed with, or INCOMPLETE (the run ended with messages outstanding) */
  status: string;
  /** from the first post to the last completion, ps */
  durationPs: number;
  /** `bytes` over `durationPs`, Gb/s; null when none of its messages completed (no rate without a completion: {@link ScenarioResult}) */
  goodputGbps: number | null;
  /** An open-loop workload's flow (one message): its verb. */
  verb?: TrafficVerb;
  /** A workload's flow: when it arrived (its message was posted), ps. */
  startPs?: number;
  /** A workload's flow: its completion time alone on an idle fabric, ps (docs/workloads.md, "Slowdown"). */
  idealPs?: number;
  /** A workload's flow: `durationPs` (its FCT) over `idealPs`; null when it did not complete successfully. */
  slowdown?: number | null;
}

/** What the messages of one verb did ({@link ScenarioResult.verbs}). */
export interface VerbCounts {
  /** Messages of this verb posted (or to be posted). */
  messages: number;
  /** Completed successfully. */
  completed: number;
  /** Completed with an error. */
  failed: number;
  /** Payload bytes of those that completed successfully: written, sent, or (READ) read back from the other device. */
  bytes: number;
}

/** An open-loop workload's figures ({@link ScenarioResult.workload}): what was offered, and the FCT slowdown by flow size. */
export interface WorkloadReport {
  /** The size file (traffic.workload.sizes.file), or "text". */
  sizes: string;
  /** The sizes' mean, bytes (what the arrival rate is computed from). */
  meanFlowBytes: number;
  /** The offered load asked for: a fraction of each sending device's links' rate. */
  load: number;
  /** A sending device's links' rate, Gb/s: its ports in the traffic's group, each at the lesser of the link's rate and its own. */
  hostGbps: number;
  /** Flows in all (each a QP pair of one message). */
  flows: number;
  /** FCT slowdown (a flow's FCT over its ideal) by flow size: median and 99th percentile. */
  slowdown: SlowdownTable;
}

/**
 * What a traffic did: per flow and in total. A traffic scenario's result holds these fields
 * itself; a collective's background traffic has one per size ({@link CollectiveRow.background}).
 */
export interface TrafficReport {
  /** Messages over all flows. */
  messages: MessageCounts;
  /** Every flow, in the order of the traffic pattern (a workload: of arrival). */
  flows: FlowResult[];
  /** Payload bytes delivered over all flows (a READ's: read). */
  totalBytes: number;
  /** `totalBytes` over the time from the first post to the last completion, Gb/s; null when no message completed */
  totalGoodputGbps: number | null;
  /** Per-message completion time (post to completion), ps. */
  fctPs: Percentiles;
  /** Per verb, when the traffic posts others than RDMA WRITE (traffic.verb, traffic.verbs). */
  verbs?: Partial<Record<TrafficVerb, VerbCounts>>;
  /** An open-loop workload's figures (traffic.pattern `workload`). */
  workload?: WorkloadReport;
}

/**
 * How a run ended: every message done and successful; every message done, some failed; the
 * scenario's time ran out first; the caller stopped it; or stalled: work outstanding and nothing
 * left to happen (no device event, no frame in the fabric), so nothing would ever complete it.
 */
export type RunEnd = "finished" | "failed" | "time-limit" | "stopped" | "stalled";

/**
 * What a scenario run did ({@link runScenario}; `menic run --json` prints it).
 *
 * A rate is measured from completions only: a flow's goodput when one of its messages completed
 * (successfully or not: messages that all failed delivered 0 bytes, a goodput of 0), the total
 * goodput when a message did, a collective size's bandwidths when the collective completed that
 * size. Where nothing completed (a run stopped, out of time or stalled before its first
 * completion) there is no rate: the field is null, and the table and the page show "—".
 */
export interface ScenarioResult {
  /** The scenario's name. */
  name: string;
  /** The seed every random stream derived from. */
  seed: number;
  /** simulated time of the last completion when every message completed, else the time reached, ps */
  endPs: number;
  /** the scenario's time limit, ps */
  untilPs: number;
  /** true when every message completed successfully */
  finished: boolean;
  /** How the run ended. */
  ended: RunEnd;
  /** Messages over all flows. */
  messages: MessageCounts;
  /** Every flow, in the order of the traffic pattern. */
  flows: FlowResult[];
  /** Payload bytes delivered over all flows. */
  totalBytes: number;
  /** `totalBytes` over the time from the first post to the last completion, Gb/s; null when no message completed */
  totalGoodputGbps: number | null;
  /** Per-message completion time (post to completion), ps. */
  fctPs: Percentiles;
  /** Per verb, when the traffic posts others than RDMA WRITE (traffic.verb, traffic.verbs): messages, completions, failures, bytes. */
  verbs?: TrafficReport["verbs"];
  /** An open-loop workload (traffic.pattern `workload`): the load offered and the FCT slowdown by flow size. */
  workload?: WorkloadReport;
  /** the transport QPs between devices ran */
  transport: "rocev2" | "metaroce";
  /** RoCEv2: go-back-N restarts (each sends again from a PSN); MetaRoCE-like: packets sent again */
  retransmits: number;
  /** RoCEv2: transport timer expiries; MetaRoCE-like: path RTOs */
  timeouts: number;
  /** RoCEv2 NAKs the responders sent (sequence errors, RNR, access errors). */
  naksSent: number;
  /** DCQCN congestion notification packets the receivers sent (answers to ECN marks). */
  cnpsSent: number;
  /**
   * Frames that reached a device after its clock had passed their arrival time (port.rx_late):
   * a causality break in the cluster runner's windows, always 0 in a sound run (docs/fabric.md,
   * "Windows"); the report warns when it is not.
   */
  lateArrivals: number;
  /** why packets were sent again, by cause, and how many arrived twice */
  retransmitCauses: RetransmitCauses;
  /** What the fabric did. */
  fabric: FabricCounts;
  /** frames the devices dropped, by reason (DEVICE_DROP_COUNTERS, and rx_stage_full) */
  deviceDrops: Record<string, number>;
  /** frames and bytes the devices sent, per port, summed over the devices */
  ports: PortCounts;
  /** the MetaRoCE-like transport's own counters, summed over the devices (layouts/stats.json mrt.*) */
  metaroce?: MetaroceCounts;
  /** the MetaRoCE-like paths of every device at the end of the run */
  paths?: PathSummary;
  /** a collective scenario's results, one row per size (its traffic fields are empty) */
  collective?: CollectiveReport;
  /** a scenario of `collectives`: one report per collective, in order, each with the split it ran under and its frames per port (`endPs`: the whole sequence's end) */
  collectives?: CollectiveReport[];
  /** a traffic run asked for one ({@link RunOptions.timelinePs}, `menic run --timeline`): the bytes placed over all flows as the run went */
  timeline?: Timeline;
}

/**
 * A traffic run's payload bytes placed over time ({@link ScenarioResult.timeline}): what every
 * flow's receiver had placed in order, summed over the flows, at each multiple of `intervalPs`
 * of simulated time the run reached. The goodput between two samples is their difference over
 * the time between them (x 8000 / ps for Gb/s).
 */
export interface Timeline {
  /**
   * ps between samples: the interval asked for, rounded up to a multiple of the cluster
   * runner's window when the window does not divide it (the host samples between windows:
   * docs/fabric.md, "Windows")
   */
  intervalPs: number;
  /** `placedBytes[k]` at (k + 1) x intervalPs, up to where the run stopped (a run that finished: its last sample holds every byte, `totalBytes`) */
  placedBytes: number[];
}

/** What the devices sent per port, summed over the devices: index p is every device's port p. */
export interface PortCounts {
  /** frames sent */
  frames: number[];
  /** their bytes on the wire */
  bytes: number[];
}

/** What the fabric did in a run. */
export interface FabricCounts {
  /** Frames dropped, by reason: `buffer_full`, `port_cap`, `no_route`, `link_down`, `random_loss`, `ge_loss` (bursty loss), `bad_frame`. */
  drops: Record<DropReason, number>;
  /** Frames a switch marked with ECN CE. */
  ecnMarks: number;
  /** PFC pause frames the switches sent. */
  pfcPauses: number;
  /** Frames serialised onto a link (a frame crossing 4 links makes 4 hops). */
  hops: number;
  /** Frames delivered to a device. */
  delivered: number;
}

/** Messages over all flows of a run. */
export interface MessageCounts {
  /** Posted. */
  total: number;
  /** Completed, successfully or not. */
  completed: number;
  /** Completed with an error. */
  failed: number;
}

/** What the MetaRoCE-like paths looked like at the end: how many in each state, and the spread of their windows, RTTs and hints. */
export interface PathSummary {
  /** Paths over all devices. */
  count: number;
  /** Paths in the active state. */
  active: number;
  /** Paths suspect after a timeout. */
  suspect: number;
  /** Paths failed (probed until they answer). */
  failed: number;
  /** min, median, max over the paths */
  cwndBytes: [number, number, number];
  /** over the paths with a sample */
  srttPs: [number, number, number];
  /** over the paths with a hint */
  hintGbps: [number, number, number];
}

/** One size of a collective scenario. */
export interface CollectiveRow {
  /**
   * NCCL's "size", what algbw divides: bytes of the collective's data per device (all-gather,
   * reduce-scatter, all-to-all: all devices' shares, n x the size given); the tables' size column
   * is the size given (collective.sizes: `count` x the dtype's bytes)
   */
  bytes: number;
  /** elements per device: the size given (collective.sizes) over the dtype's bytes */
  count: number;
  /** from the doorbell to the last device's final signal, ps; for a size not done, to where its run ended (0: stopped before it began) */
  timePs: number;
  /** bytes / time, GB/s; null when the collective did not complete this size (no rate without a completion) */
  algbwGBps: number | null;
  /** algbw x the collective's bus factor, GB/s; null as algbwGBps */
  busbwGBps: number | null;
  /** engines running (not asleep in wfi) from the doorbell to the first poll after the end, as a fraction of engines x devices x that time */
  engineUtil: number;
  /** "ok" when every device's result is the reference's, bit for bit; "skipped" in timing mode or when not asked */
  check: "ok" | "mismatch" | "skipped";
  /** per device, the bytes its ports sent for this size (frames whole: headers, acknowledgements and retransmissions too) */
  txBytes: number[];
  /**
   * messages in sequence on the chain of events that decided this size's end (host/graph/critical.ts:
   * a ring all-reduce on N devices 2 (N - 1), a double binary tree 2 ceil(log2 N)); only for a size done
   */
  criticalPathHops?: number;
  /** how the run of this size ended (stalled: still running, and nothing left to happen in the cluster: no engine, NIC or fabric event; stopped: the caller stopped it, RunOptions.shouldStop) */
  status: "done" | "failed" | "time-limit" | "stalled" | "stopped";
  /** a failure: which node, on which device, with which status */
  error?: string;
  /** with `interference`: the matmul load run alongside, its slowdown (docs/compute.md) */
  interference?: InterferenceRow;
  /**
   * with `traffic` beside the collective: what that traffic did while this size ran (from its
   * doorbells to its end: messages still outstanding then are counted, not failed; a workload's
   * flows that had not arrived yet are left out)
   */
  background?: BackgroundTraffic;
}

/** What traffic beside a collective did while one of its sizes ran ({@link CollectiveRow.background}). */
export interface BackgroundTraffic extends TrafficReport {
  /** Payload bytes the flows' receivers placed (a READ's: its sender, once it completed) from the doorbells to the size's end, messages complete or not. */
  placedBytes: number;
  /** `placedBytes` over the size's time (its row's timePs), Gb/s: the traffic's rate while the collective ran; null when the size took no time. */
  placedGbps: number | null;
}

/** What a collective scenario did ({@link ScenarioResult.collective}): one row per size. */
export interface CollectiveReport {
  /** The collective. */
  op: CollectiveSpec["op"];
  /** ring, halving-doubling, tree, direct (all-to-all), or `msccl "<name>"` (an imported MSCCL algorithm) */
  algorithm: string;
  /** Element type. */
  dtype: CollectiveSpec["dtype"];
  /** Reduction. */
  redop: CollectiveSpec["redop"];
  /** Devices taking part. */
  devices: number;
  /** Engines per device running it. */
  engines: number;
  /** One per size, in the order of `sizes`. */
  rows: CollectiveRow[];
  /** `collectives`: the port group its queue pairs used. */
  portGroup?: CollectiveSpec["portGroup"];
  /** `collectives`: the scale-up ports of the split it ran under (the rest were scale-out). */
  scaleUpPorts?: number;
  /** `collectives`: when the re-split before it took effect, ps (absent: no re-split). */
  resplitPs?: number;
  /** Frames each port (by index, summed over the devices) sent into the fabric while it ran (its sizes together). */
  portFrames?: number[];
  /** Bytes each port (by index, summed over the devices) sent into the fabric while it ran (its sizes together). */
  portBytes?: number[];
  /** `collectives`: why it did not run (the re-split before it was refused until the time limit). */
  error?: string;
}

/**
 * The built run as an observer sees it: the fabric and the flows, in the order of
 * `trafficFlows`. A collective's flows are the ordered pairs of devices its programs talk
 * between, each the queue pairs bound between them (host/scenario/collective-observe.ts).
 */
export interface BuiltRun {
  fabric: Fabric;
  /** the devices, by device number */
  devices: readonly Device[];
  transport: "rocev2" | "metaroce";
  /** messages each flow posts (a collective's flows: 0, its engines post them) */
  messagesPerFlow: number;
  /** per flow: its DCQCN rate now, and the payload bytes its sender has sent (retransmissions included) and its receiver has placed in order */
  flows: readonly ObservedFlow[];
  /** arrivals the cluster runner could not stage in a window so far (the result's deviceDrops.rx_stage_full) */
  stageDrops(): number;
  /**
   * A `collective` scenario: each of its sizes runs on a cluster of its own, whose time starts at
   * 0 again; which size this cluster runs (`index` in collective.sizes, its `bytes`, the program's
   * `name`). Absent: the run's one cluster (a traffic scenario, a sequence of `collectives`).
   */
  size?: { index: number; bytes: number; name: string };
}

/** A flow as an observer reads it ({@link BuiltRun.flows}). */
export interface ObservedFlow {
  src: number;
  dst: number;
  messageBytes: number;
  /** how a trace names its counters (default `flow <index>`) */
  name?: string;
  /** DCQCN's rate now, Gb/s (a collective's flow: the lowest of its queue pairs') */
  rateGbps(): number;
  sentBytes(): number;
  placedBytes(): number;
}

/**
 * Watches a run as it goes (a trace): every message posted and completed, and time passing.
 * `begin` comes once per cluster: once in a traffic run or a sequence of `collectives`, once per
 * size in a `collective` scenario (BuiltRun.size); `sample` as its time passes, at least every
 * `intervalPs` (a collective's runner stops at each multiple of it).
 */
export interface RunObserver {
  /** sample wants to be called at least this often, ps of simulated time */
  readonly intervalPs: number;
  begin(run: BuiltRun): void;
  posted(flow: number, wrId: number, atPs: number): void;
  completed(flow: number, wrId: number, atPs: number, status: string): void;
  sample(nowPs: number): void;
  /** a collective scenario: one size's run is over; its graphs' nodes as they ran on the engines */
  graph?(g: GraphTrace): void;
}

/** A collective's nodes as they ran (RunObserver.graph): per device, in node order. */
export interface GraphTrace {
  /** which of the scenario's sizes (0-based) and its bytes */
  index: number;
  size: number;
  program: GraphProgram;
  /** per device: its nodes' spans, times in ps from the start of the simulation */
  spans: { node: number; engine: number; postedPs: number; donePs: number }[][];
}

/** How {@link runScenario} reports and may be stopped. */
export interface RunOptions {
  /** called now and then with the simulated time reached and the messages completed so far */
  onProgress?: (nowPs: number, completed: number, total: number) => void;
  /**
   * Awaited between chunks of simulated time: when it gives true the run stops where it is. The
   * run yields to the caller's event loop only here (a Ctrl-C handler runs when this waits).
   */
  shouldStop?: () => boolean | Promise<boolean>;
  /** a hook that sees the built cluster before it runs (pcap capture: endpoints[d].tap, tests) */
  onBuilt?: (c: Cluster) => void;
  /** watches every message posted and completed, and time passing (what `--trace` writes) */
  observer?: RunObserver;
  /**
   * The memory the run's devices and fabric may need: a scenario that needs more is refused
   * before it is built, with a ConfigError naming devices.count (default MEMORY_BOUND_BYTES,
   * 16 GiB; docs/fabric.md, "Memory")
   */
  maxMemoryBytes?: number;
  /**
   * @internal The most device arenas a core instance holds (default SHARED_INSTANCE_BYTES, 2 GiB):
   * devices past it are built in groups of instances (host/scenario/cluster.ts clusterHomes).
   * Results do not depend on it; tests make it small to build groups of a few devices.
   */
  sharedInstanceBytes?: number;
  /**
   * called when a run's set-up is done, just before its simulation starts: a traffic scenario's
   * once, its QPs connected and its messages posted (`size`: its message bytes); a collective
   * scenario's once per size, when that size's run rings its doorbells (`size`: its bytes)
   */
  onStart?: (size: number) => void;
  /**
   * the cluster runner's window instead of the largest multiple of the devices' interleave
   * quantum within the smallest link latency: at most that latency (docs/fabric.md, "Windows":
   * what may and may not depend on it)
   */
  windowPs?: number;
  /**
   * A traffic scenario: sample the payload bytes placed over all flows every this many ps of
   * simulated time (at least 1000, 1 ns) into the result's `timeline`. The run stops at each
   * sample as it stops between its chunks of time: nothing it measures changes with that, but
   * the `endPs` of a stalled run (the end of the chunk the host found it stalled after). A
   * collective scenario has no timeline and refuses one (RangeError).
   */
  timelinePs?: number;
  /**
   * Record the run's flows, queues, MetaRoCE-like paths and counters as tidy CSV files as it
   * goes, one row per sample (`menic run --csv <dir>`; docs/csv.md says every column). The run
   * stops at each sample, as for a trace: nothing in the result changes but a stalled traffic
   * run's `endPs` (the end of the stretch after which it was found stalled).
   */
  csv?: CsvOptions;
  /**
   * @internal This thread's part of one traffic run split over threads (`menic run --threads`,
   * host/platform/run-threads.ts): every thread builds its own devices and the whole fabric,
   * steps its own devices and planes, and the first reports the run (the others' results are partial). No observer,
   * timeline, CSV or capture; a traffic scenario only.
   */
  partition?: Partition;
}

/** One of the files a CSV recording writes ({@link RunOptions.csv}; docs/csv.md). */
export type CsvFile = "flows.csv" | "queues.csv" | "paths.csv" | "counters.csv";

/** Receives one CSV file's text, in order (a file's writes, an array's pushes). */
export type CsvSink = (text: string) => void;

/** Where a CSV recording goes and how often it samples ({@link RunOptions.csv}). */
export interface CsvOptions {
  /** Opens a file and gives the sink its text goes to; called once per file, when the run's first cluster is built. */
  open: (file: CsvFile) => CsvSink;
  /** How often a row is taken, ps of simulated time (a whole number, at least 1000: 1 ns); default 1 us, as the trace's. */
  intervalPs?: number;
}

/** The shortest interval of a timeline (RunOptions.timelinePs, `menic run --timeline`): 1 ns. */
export const TIMELINE_MIN_PS = 1000;
