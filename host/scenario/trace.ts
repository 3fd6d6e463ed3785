// A scenario run as a Perfetto trace (Chrome trace-event JSON, which ui.perfetto.dev opens):
// one process per sending device with, per flow, its messages as async slices (post to
// completion) and counters for the rate its sender sends at (retransmissions included), its
// goodput (bytes its receiver placed in order) and its DCQCN rate; and one "fabric" process with a
// counter per switch output queue that ever held a byte. Counters are sampled every
// `intervalPs` of simulated time and written only when they change.

import type { TraceEvent } from "../trace/perfetto.js";
import type { RunObserver, BuiltRun } from "./run.js";

/** Chrome trace events as this file writes them: metadata, counters and async slices. */
export interface ScenarioTraceEvent extends Omit<TraceEvent, "ph"> {
  ph: TraceEvent["ph"] | "C" | "b" | "e";
  cat?: string;
  id?: number;
}

const us = (ps: number) => ps / 1e6;
const FABRIC_PID = 0;
const devicePid = (d: number) => d + 1;

export const TRACE_INTERVAL_DEFAULT_PS = 1_000_000;

export class ScenarioTracer implements RunObserver {
  readonly events: ScenarioTraceEvent[] = [];
  private run: BuiltRun | null = null;
  /** the last value written per counter track, so unchanged samples write nothing */
  private readonly last = new Map<string, number>();
  /** per flow: bytes sent and placed at the last sample */
  private sent: number[] = [];
  private placed: number[] = [];
  private lastSamplePs = 0;
  private queueChannels: { c: number; name: string }[] = [];

  constructor(readonly intervalPs = TRACE_INTERVAL_DEFAULT_PS) {
    if (!(intervalPs >= 1000)) throw new RangeError(`trace interval must be at least 1 ns, got ${intervalPs} ps`);
  }

  begin(run: BuiltRun): void {
    this.run = run;
    this.sent = run.flows.map(() => 0);
    this.placed = run.flows.map(() => 0);
    const meta = (pid: number, name: string) => this.events.push({ name: "process_name", ph: "M", pid, tid: 0, args: { name } });
    meta(FABRIC_PID, "fabric");
    const senders = [...new Set(run.flows.map((f) => f.src))].sort((a, b) => a - b);
    for (const d of senders) meta(devicePid(d), `device ${d}`);
    // a switch's output queue: the channel of a link that starts at a switch
    const t = run.fabric.topology;
    t.links.forEach((L, l) => {
      const a = L.aSwitch >= 0 ? t.switches[L.aSwitch]!.name : `dev${L.device}.port${L.port}`, b = t.switches[L.bSwitch]!.name;
      if (L.aSwitch >= 0) this.queueChannels.push({ c: 2 * l, name: `${a} → ${b}` });
      this.queueChannels.push({ c: 2 * l + 1, name: `${b} → ${a}` });
    });
  }

  posted(flow: number, wrId: number, atPs: number): void {
    const f = this.run!.flows[flow]!;
    this.events.push({ name: `flow ${flow} → ${f.dst}`, cat: "message", ph: "b", id: this.sliceId(flow, wrId), ts: us(atPs), pid: devicePid(f.src), tid: 0, args: { wrId, bytes: f.messageBytes } });
  }

  completed(flow: number, wrId: number, atPs: number, status: string): void {
    const f = this.run!.flows[flow]!;
    this.events.push({ name: `flow ${flow} → ${f.dst}`, cat: "message", ph: "e", id: this.sliceId(flow, wrId), ts: us(atPs), pid: devicePid(f.src), tid: 0, args: { status } });
  }

  sample(nowPs: number): void {
    const run = this.run!;
    const dt = nowPs - this.lastSamplePs;
    if (dt <= 0) return;
    run.flows.forEach((f, i) => {
      // a rate over the interval just ended holds from its start
      const sent = f.sentBytes(), placed = f.placedBytes(), pid = devicePid(f.src);
      this.counter(pid, `flow ${i} sending Gb/s`, this.lastSamplePs, ((sent - this.sent[i]!) * 8000) / dt);
      this.counter(pid, `flow ${i} goodput Gb/s`, this.lastSamplePs, ((placed - this.placed[i]!) * 8000) / dt);
      this.counter(pid, `flow ${i} DCQCN rate Gb/s`, nowPs, f.rateGbps());
      this.sent[i] = sent;
      this.placed[i] = placed;
    });
    for (const q of this.queueChannels) this.counter(FABRIC_PID, `queue ${q.name} KB`, nowPs, run.fabric.queueBytes(q.c) / 1000);
    this.lastSamplePs = nowPs;
  }

  /** The trace as ui.perfetto.dev and chrome://tracing open it. */
  toJSON(): { traceEvents: ScenarioTraceEvent[]; displayTimeUnit: "ns" } {
    return { traceEvents: this.events, displayTimeUnit: "ns" };
  }

  private sliceId(flow: number, wrId: number): number {
    return flow * this.run!.messagesPerFlow + wrId + 1;
  }

  private counter(pid: number, name: string, atPs: number, value: number): void {
    const key = `${pid}/${name}`;
    const before = this.last.get(key);
    if (before === value || (before === undefined && value === 0 && name.startsWith("queue"))) return;
    this.last.set(key, value);
    this.events.push({ name, ph: "C", ts: us(atPs), pid, tid: 0, args: { value } });
  }
}
