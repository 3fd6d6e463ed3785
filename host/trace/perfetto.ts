// Trace records → Chrome trace-event JSON (the format ui.perfetto.dev and chrome://tracing
// open): one track per engine with its spans (running, asleep in wfi, in a trap handler)
// and instant events for exit and fault. Timestamps are microseconds (ps / 1e6).

import type { TraceRecord } from "../device.js";
import { TraceWriter, type TraceSink } from "./writer.js";

/** One event of the Chrome trace-event format, which ui.perfetto.dev opens. */
export interface TraceEvent {
  /** What it shows: `running`, `exit 0`, `request`, a function's name, or `thread_name` (metadata); the rest of the names are in host/trace/perfetto.ts. */
  name: string;
  /** Its phase: `X` a complete span, `i` an instant, `M` metadata, `B`/`E` a span's begin and end. */
  ph: "X" | "i" | "M" | "B" | "E";
  /** When, µs. */
  ts?: number;
  /** A span's length, µs. */
  dur?: number;
  /** The process: 0 the engines, 1 the NIC's queue pairs. */
  pid: number;
  /** The track: an engine, or a QP number. */
  tid: number;
  /** An instant's scope: `t`, its track; `g`, the whole trace (host/trace/writer.ts's truncation note). */
  s?: "t" | "g";
  /** What else it says (a track's name, a trap's cause). */
  args?: Record<string, unknown>;
}

/** A whole trace, as `JSON.stringify` writes it to a file. */
export interface PerfettoTrace {
  /** Every event, tracks' names first. */
  traceEvents: TraceEvent[];
  /** How the viewer shows times. */
  displayTimeUnit: "ns";
}

const CAUSES: Record<number, string> = {
  0: "misaligned fetch", 1: "fetch access fault", 2: "illegal instruction", 3: "breakpoint",
  4: "misaligned load", 5: "load access fault", 6: "misaligned store", 7: "store access fault", 11: "ecall",
  0x80000007: "timer interrupt", 0x8000000b: "external interrupt",
};

export function causeName(mcause: number): string {
  return CAUSES[mcause >>> 0] ?? `cause 0x${(mcause >>> 0).toString(16)}`;
}

const us = (ps: bigint) => Number(ps) / 1e6;

/** Track (tid) of engine e's function spans: beside its state track. */
export const FUNCTION_TRACK = 1000;

/**
 * Builds the trace-event list; `endPs` closes the spans still open when the run stopped. With
 * `functionName` (a profiled run's engine.call / engine.ret records and the image's symbols),
 * each engine also gets a track of nested function spans, from its entry point on.
 */
export function toPerfetto(records: readonly TraceRecord[], engines: number, endPs: bigint, functionName?: (pc: number) => string): PerfettoTrace {
  const ev: TraceEvent[] = [{ name: "process_name", ph: "M", pid: 0, tid: 0, args: { name: "menic device" } }];
  for (let e = 0; e < engines; e++) ev.push({ name: "thread_name", ph: "M", pid: 0, tid: e, args: { name: `engine ${e}` } });
  const open: ({ name: string; since: bigint; args?: Record<string, unknown> } | null)[] = new Array(engines).fill(null);
  const close = (e: number, t: bigint) => {
    const s = open[e];
    if (s && t >= s.since) ev.push({ name: s.name, ph: "X", ts: us(s.since), dur: us(t - s.since), pid: 0, tid: e, args: s.args });
    open[e] = null;
  };
  // the NIC: one track per QP with a span per request (start to completion)
  const nicOpen = new Map<number, bigint>();
  const nicTracks = new Set<number>();
  for (const r of records) {
    if (r.point === "nic.wqe_start") {
      nicOpen.set(r.arg, r.timePs);
      if (!nicTracks.has(r.arg)) {
        nicTracks.add(r.arg);
        if (nicTracks.size === 1) ev.push({ name: "process_name", ph: "M", pid: 1, tid: 0, args: { name: "NIC" } });
        ev.push({ name: "thread_name", ph: "M", pid: 1, tid: r.arg, args: { name: `QP ${r.arg}` } });
      }
    } else if (r.point === "nic.wqe_done") {
      const qpn = r.arg >>> 8, since = nicOpen.get(qpn);
      if (since === undefined) continue;
      nicOpen.delete(qpn);
      const status = r.arg & 0xff;
      ev.push({ name: status === 0 ? "request" : `request (status ${status})`, ph: "X", ts: us(since), dur: us(r.timePs - since), pid: 1, tid: qpn, args: { status } });
    }
  }
  for (const r of records) {
    const e = r.engine;
    if (e >= engines) continue;
    switch (r.point) {
      case "engine.start":
      case "engine.wake":
      case "engine.mret":
        close(e, r.timePs);
        open[e] = { name: "running", since: r.timePs };
        break;
      case "engine.sleep":
        close(e, r.timePs);
        open[e] = { name: "wfi", since: r.timePs, args: { pc: `0x${r.arg.toString(16)}` } };
        break;
      case "engine.trap":
        close(e, r.timePs);
        open[e] = { name: `trap: ${causeName(r.arg)}`, since: r.timePs, args: { mcause: `0x${r.arg.toString(16)}` } };
        break;
      case "engine.exit":
        close(e, r.timePs);
        ev.push({ name: `exit ${r.arg | 0}`, ph: "i", s: "t", ts: us(r.timePs), pid: 0, tid: e });
        break;
      case "engine.fault":
        close(e, r.timePs);
        ev.push({ name: `fault: ${causeName(r.arg)}`, ph: "i", s: "t", ts: us(r.timePs), pid: 0, tid: e, args: { mcause: `0x${r.arg.toString(16)}` } });
        break;
    }
  }
  for (let e = 0; e < engines; e++) close(e, endPs);
  if (functionName) ev.push(...functionSpans(records, engines, endPs, functionName));
  return { traceEvents: ev, displayTimeUnit: "ns" };
}

/**
 * Writes a trace to `sink` as a JSON file in chunks (host/trace/writer.ts), never as one string,
 * which V8 refuses past ~512 MiB; no size bound (its records are all in memory already). Gives
 * the writer, closed.
 */
export function writePerfetto(t: PerfettoTrace, sink: TraceSink): TraceWriter {
  const w = new TraceWriter(sink, { maxBytes: Infinity });
  for (const e of t.traceEvents) w.add(e, (e.ts ?? 0) * 1e6);
  w.close();
  return w;
}

/** Nested B/E spans per engine from engine.start (the entry function), engine.call and engine.ret; a stop closes them all. */
function functionSpans(records: readonly TraceRecord[], engines: number, endPs: bigint, name: (pc: number) => string): TraceEvent[] {
  const ev: TraceEvent[] = [];
  const depth: number[] = new Array(engines).fill(0);
  const tid = (e: number) => FUNCTION_TRACK + e;
  const closeAll = (e: number, t: bigint) => { for (; depth[e]! > 0; depth[e]!--) ev.push({ name: "", ph: "E", ts: us(t), pid: 0, tid: tid(e) }); };
  for (let e = 0; e < engines; e++) ev.push({ name: "thread_name", ph: "M", pid: 0, tid: tid(e), args: { name: `engine ${e}: functions` } });
  for (const r of records) {
    const e = r.engine;
    if (e >= engines) continue;
    switch (r.point) {
      case "engine.start":
      case "engine.call":
        ev.push({ name: name(r.arg), ph: "B", ts: us(r.timePs), pid: 0, tid: tid(e), args: { pc: `0x${r.arg.toString(16)}` } });
        depth[e]!++;
        break;
      case "engine.ret":
        if (depth[e]! > 1) { ev.push({ name: "", ph: "E", ts: us(r.timePs), pid: 0, tid: tid(e) }); depth[e]!--; } // the entry function stays open
        break;
      case "engine.exit":
      case "engine.fault":
        closeAll(e, r.timePs);
        break;
    }
  }
  for (let e = 0; e < engines; e++) closeAll(e, endPs);
  return ev;
}
