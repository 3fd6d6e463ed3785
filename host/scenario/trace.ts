// A scenario run as a Perfetto trace (Chrome trace-event JSON, which ui.perfetto.dev opens):
// one process per sending device with, per flow, its messages as async slices (post to
// completion) and counters for the rate its sender sends at (retransmissions included), its
// goodput (bytes its receiver placed in order) and its DCQCN rate; and one "fabric" process with a
// counter per switch output queue that ever held a byte; with the MetaRoCE-like transport, per
// path of the senders' connections, its congestion window, rate hint and state (when there are
// at most PATH_TRACKS_MAX paths in all). Counters are sampled every `intervalPs` of simulated
// time and written only when they change. A collective scenario gives its graphs: a slice
// per node on its engine's track, from posted to done, and a flow arrow per dependency; and the
// fabric on the same timeline: its queues, per pair of devices the rates of the queue pairs
// between them (named `to <peer>`), and the paths. A `collective`'s sizes each run on a cluster
// of their own from time 0: each size's counters go to its own processes, the device's beside its
// engines' tracks; a sequence of `collectives` runs on one cluster, whose counters go to "fabric"
// and "device <d>" as a traffic run's.
// Events go to a TraceWriter as they happen (host/trace/writer.ts): the tracer keeps only the
// last value of each counter, so a trace costs the writer's buffer however long the run, and the
// writer's size bound (TRACE_MAX_BYTES_DEFAULT) ends the file early with a note of the
// simulated time where it stopped.

import type { TraceEvent } from "../trace/perfetto.js";
import { TraceWriter, type TraceSink, type TraceWriterOptions } from "../trace/writer.js";
import type { RunObserver, BuiltRun, GraphTrace } from "./run.js";
import { maxOf } from "../extremes.js";

/** Chrome trace events as this file writes them: metadata, counters and async slices. */
export interface ScenarioTraceEvent extends Omit<TraceEvent, "ph"> {
  ph: TraceEvent["ph"] | "C" | "b" | "e" | "s" | "f";
  cat?: string;
  id?: number;
  /** a flow's end binds to the slice enclosing it ("e") */
  bp?: "e";
}

const us = (ps: number) => ps / 1e6;
const FABRIC_PID = 0;
const devicePid = (d: number) => d + 1;
/**
 * Process ids of a collective's sizes: size i's device d is pid stride x (i + 1) + d, its fabric
 * d = devices; the stride is 1000, or the next power of ten above the devices, so that no two
 * sizes' processes, nor a sequence's device processes (d + 1), share a pid.
 */
const pidStride = (devices: number) => Math.max(1000, 10 ** Math.ceil(Math.log10(devices + 1)));
const sizePid = (index: number, devices: number, d: number) => pidStride(devices) * (index + 1) + d;

export const TRACE_INTERVAL_DEFAULT_PS = 1_000_000;
/** Paths beyond this many in all get no counters of their own (a trace of 4,000 connections would be mostly them). */
export const PATH_TRACKS_MAX = 256;

/** How a {@link ScenarioTracer} samples and how big its file may grow. */
export interface ScenarioTraceOptions extends TraceWriterOptions {
  /** how often counters are sampled, ps of simulated time (at least 1 ns); default {@link TRACE_INTERVAL_DEFAULT_PS} */
  intervalPs?: number;
}

export class ScenarioTracer implements RunObserver {
  readonly intervalPs: number;
  /** the file as written so far: events, bytes, where the size bound cut it */
  readonly writer: TraceWriter;
  private run: BuiltRun | null = null;
  /** the last value written per counter track, so unchanged samples write nothing */
  private readonly last = new Map<string, number>();
  /** per flow: bytes sent and placed at the last sample */
  private sent: number[] = [];
  private placed: number[] = [];
  private lastSamplePs = 0;
  private flowId = 0;
  private queueChannels: { c: number; name: string }[] = [];
  /** the sending devices whose paths get counters */
  private pathDevices: number[] = [];
  /** this cluster's processes: the fabric's and each device's */
  private fabricPid = FABRIC_PID;
  private devicePid = devicePid;
  /** processes named so far */
  private readonly named = new Set<number>();

  /** Writes the trace to `sink` as the run goes; {@link close} ends the file. */
  constructor(sink: TraceSink, o: ScenarioTraceOptions = {}) {
    this.intervalPs = o.intervalPs ?? TRACE_INTERVAL_DEFAULT_PS;
    if (!(this.intervalPs >= 1000)) throw new RangeError(`trace interval must be at least 1 ns, got ${this.intervalPs} ps`);
    this.writer = new TraceWriter(sink, o);
  }

  /** Ends the file (its closing, and the truncation note when the size bound was reached) and hands the rest to the sink. */
  close(): void {
    this.writer.close();
  }

  begin(run: BuiltRun): void {
    this.run = run;
    this.sent = run.flows.map(() => 0);
    this.placed = run.flows.map(() => 0);
    this.lastSamplePs = 0;
    const n = run.devices.length, size = run.size;
    this.fabricPid = size ? sizePid(size.index, n, n) : FABRIC_PID;
    this.devicePid = size ? (d) => sizePid(size.index, n, d) : devicePid;
    const prefix = size ? `${size.name}: ` : "";
    this.processName(this.fabricPid, `${prefix}fabric`, 0);
    const senders = [...new Set(run.flows.map((f) => f.src))].sort((a, b) => a - b);
    for (const d of senders) this.processName(this.devicePid(d), `${prefix}device ${d}`, 0);
    this.pathDevices = run.transport === "metaroce" ? senders : [];
    this.queueChannels = queueNames(run);
  }

  posted(flow: number, wrId: number, atPs: number): void {
    const f = this.run!.flows[flow]!;
    this.emit({ name: `flow ${flow} → ${f.dst}`, cat: "message", ph: "b", id: this.sliceId(flow, wrId), ts: us(atPs), pid: this.devicePid(f.src), tid: 0, args: { wrId, bytes: f.messageBytes } }, atPs);
  }

  completed(flow: number, wrId: number, atPs: number, status: string): void {
    const f = this.run!.flows[flow]!;
    this.emit({ name: `flow ${flow} → ${f.dst}`, cat: "message", ph: "e", id: this.sliceId(flow, wrId), ts: us(atPs), pid: this.devicePid(f.src), tid: 0, args: { status } }, atPs);
  }

  sample(nowPs: number): void {
    const run = this.run!;
    const dt = nowPs - this.lastSamplePs;
    if (dt <= 0 || this.writer.truncatedAtPs !== null) return; // the file is full: nothing more to write
    run.flows.forEach((f, i) => {
      // a rate over the interval just ended holds from its start
      const sent = f.sentBytes(), placed = f.placedBytes(), pid = this.devicePid(f.src), name = f.name ?? `flow ${i}`;
      this.counter(pid, `${name} sending Gb/s`, this.lastSamplePs, ((sent - (this.sent[i] ?? 0)) * 8000) / dt);
      this.counter(pid, `${name} goodput Gb/s`, this.lastSamplePs, ((placed - (this.placed[i] ?? 0)) * 8000) / dt);
      if (run.transport === "rocev2") this.counter(pid, `${name} DCQCN rate Gb/s`, nowPs, f.rateGbps());
      this.sent[i] = sent;
      this.placed[i] = placed;
    });
    for (const q of this.queueChannels) this.counter(this.fabricPid, `queue ${q.name} KB`, nowPs, run.fabric.queueBytes(q.c) / 1000);
    this.samplePaths(nowPs);
    this.lastSamplePs = nowPs;
  }

  /** Each MetaRoCE-like path of the sending devices: its window, rate hint and state (0 active, 1 suspect, 2 failed). */
  private samplePaths(nowPs: number): void {
    if (this.pathDevices.length === 0) return;
    const all = this.pathDevices.map((d) => ({ d, paths: this.run!.devices[d]!.metarocePaths() }));
    if (all.reduce((s, x) => s + x.paths.length, 0) > PATH_TRACKS_MAX) { this.pathDevices = []; return; }
    for (const { d, paths } of all) for (const p of paths) {
      const name = `to ${p.peer} path ${p.path}`;
      this.counter(this.devicePid(d), `${name} cwnd KB`, nowPs, p.cwndBytes / 1000);
      this.counter(this.devicePid(d), `${name} hint Gb/s`, nowPs, p.hintGbps);
      this.counter(this.devicePid(d), `${name} state`, nowPs, p.state === "active" ? 0 : p.state === "suspect" ? 1 : 2);
    }
  }

  /**
   * A collective's graphs (a collective scenario): per size and device a process, per engine a
   * thread, every node a slice from posted to done, and a flow arrow along every dependency
   * (from the start of the node depended on to the node that waited), so that the critical path
   * shows. Nodes not done (a failed run) end where the run stopped.
   */
  graph(g: GraphTrace): void {
    g.spans.forEach((spans, d) => {
      const pid = sizePid(g.index, g.spans.length, d);
      // its names, dated (should the size bound leave them out) by the device's first node
      const first = spans.reduce((t, x) => (x.postedPs > 0 && (t === 0 || x.postedPs < t) ? x.postedPs : t), 0);
      this.processName(pid, `${g.program.name}: device ${d}`, first);
      const engines = new Set(spans.map((x) => x.engine));
      for (const e of engines) this.emit({ name: "thread_name", ph: "M", pid, tid: e + 1, args: { name: `engine ${e}` } }, first);
      const end = maxOf(spans.map((x) => x.donePs), 0);
      const byNode = new Map(spans.map((x) => [x.node, x]));
      for (const x of spans) {
        const n = g.program.ranks[d]!.nodes[x.node]!;
        if (x.postedPs === 0) continue; // never posted
        const done = x.donePs || end;
        this.emit({ name: n.name ?? n.op, cat: "graph", ph: "X", ts: us(x.postedPs), dur: us(Math.max(0, done - x.postedPs)), pid, tid: x.engine + 1, args: { node: x.node, op: n.op, ...("bytes" in n ? { bytes: n.bytes } : {}), ...(x.donePs ? {} : { done: false }) } }, x.postedPs);
        for (const dep of n.deps) {
          const a = byNode.get(dep);
          if (!a || a.postedPs === 0) continue;
          const id = ++this.flowId;
          this.emit({ name: "dep", cat: "graph", ph: "s", id, ts: us(a.postedPs), pid, tid: a.engine + 1 }, a.postedPs);
          this.emit({ name: "dep", cat: "graph", ph: "f", bp: "e", id, ts: us(x.postedPs), pid, tid: x.engine + 1 }, x.postedPs);
        }
      }
    });
  }

  /** Names process `pid` once (a collective's device: by its counters, or by its graph). */
  private processName(pid: number, name: string, atPs: number): void {
    if (this.named.has(pid)) return;
    this.named.add(pid);
    this.emit({ name: "process_name", ph: "M", pid, tid: 0, args: { name } }, atPs);
  }

  private sliceId(flow: number, wrId: number): number {
    return flow * this.run!.messagesPerFlow + wrId + 1;
  }

  private counter(pid: number, name: string, atPs: number, value: number): void {
    const key = `${pid}/${name}`;
    const before = this.last.get(key);
    if (before === value || (before === undefined && value === 0 && name.startsWith("queue"))) return;
    this.last.set(key, value);
    this.emit({ name, ph: "C", ts: us(atPs), pid, tid: 0, args: { value } }, atPs);
  }

  private emit(e: ScenarioTraceEvent, atPs: number): void {
    this.writer.add(e, atPs);
  }
}

/** Every switch output queue of the run's fabric (the channel of a link leaving a switch), named `<from> → <to>`: the trace's `queue <name> KB` counters, the CSV's queues. */
export function queueNames(run: Pick<BuiltRun, "fabric">): { c: number; name: string }[] {
  const t = run.fabric.topology, out: { c: number; name: string }[] = [];
  t.links.forEach((L, l) => {
    const a = L.aSwitch >= 0 ? t.switches[L.aSwitch]!.name : `dev${L.device}.port${L.port}`, b = t.switches[L.bSwitch]!.name;
    if (L.aSwitch >= 0) out.push({ c: 2 * l, name: `${a} → ${b}` });
    out.push({ c: 2 * l + 1, name: `${b} → ${a}` });
  });
  return out;
}
