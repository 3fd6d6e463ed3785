// The page's Web Worker: runs one scenario (a firmware example, a fabric/transport scenario, or a
// collective run by the engines' graph executor, whose ELF the host embeds) with the core
// embedded in this bundle, and posts what the page shows as it goes: the live plots' frames
// (host/live.ts), console lines in simulated-time order, engine states; at the
// end the result exactly as the CLI prints it with --json, the Perfetto trace and the pcapng.
// Updates are batched (about every 50 ms of wall time), which changes only how often the tab
// hears, never a number: every sample point is fixed by simulated time.

import { coreModule } from "../host/browser.js";
import { FirmwareSession, type FwRunResult } from "../host/fw/session.js";
import { runScenario, checkScenario, type RunObserver, type RunOptions, type ScenarioResult, type ScenarioInput } from "../host/scenario/run.js";
import { expandSweep, checkSweep, formatSweep, type SweepRun } from "../host/scenario/sweep.js";
import { resolveScenario } from "../host/scenario/scenario.js";
import { formatResult, endedText } from "../host/scenario/report.js";
import { ScenarioTracer, TRACE_INTERVAL_DEFAULT_PS } from "../host/scenario/trace.js";
import { ClusterCapture } from "../host/cluster/capture.js";
import { PcapngWriter } from "../host/wire/pcapng.js";
import { toPerfetto, writePerfetto } from "../host/trace/perfetto.js";
import type { TraceSink } from "../host/trace/writer.js";
import { parseTime, formatTime } from "../host/units.js";
import { FirmwareSampler, ScenarioSampler, ClusterEngineSampler, Observers, faultMarkers, type LiveFrame, type PlotMarker } from "../host/live.js";
import { FIRMWARE } from "./firmware.js";
import { isFirmwareDoc, type ConsoleLineMsg, type FirmwareDoc, type FromWorker, type ToWorker, type ScenarioDoc, type Outcome } from "./protocol.js";
import { runInSlices } from "./slices.js";

const post = (m: FromWorker, transfer: Transferable[] = []) => (self as unknown as Worker).postMessage(m, transfer);

let stopRequested = false;
self.onmessage = (ev: MessageEvent<ToWorker>) => {
  const m = ev.data;
  if (m.type === "stop") stopRequested = true;
  else run(m.doc).catch((e: unknown) => post({ type: "error", message: e instanceof Error ? e.message : String(e) }));
};

/** Lets queued messages (a stop) in: a macrotask through a MessageChannel, without setTimeout's clamping. */
function yieldToEvents(): Promise<void> {
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => resolve();
    ch.port2.postMessage(null);
  });
}

/** Collects what the tab has not seen yet and posts it about every 50 ms. */
class Outbox {
  frames: LiveFrame[] = [];
  console: ConsoleLineMsg[] = [];
  markers: PlotMarker[] = [];
  private lastPost = 0;
  flush(engineStates: string[], nowPs: number, progress?: { done: number; total: number }, force = false): boolean {
    const now = performance.now();
    if (!force && now - this.lastPost < 50) return false;
    post({ type: "update", frames: this.frames, console: this.console, engineStates, markers: this.markers, nowPs, ...(progress ? { progress } : {}) });
    this.frames = [];
    this.console = [];
    this.markers = [];
    this.lastPost = now;
    return true;
  }
}

async function run(doc: ScenarioDoc): Promise<void> {
  stopRequested = false;
  if (isFirmwareDoc(doc)) await runFirmwareDoc(doc);
  else await runScenarioDoc(doc);
}

async function runFirmwareDoc(doc: FirmwareDoc): Promise<void> {
  const elf = FIRMWARE[doc.firmware];
  if (!elf) throw new Error(`firmware: no example named ${JSON.stringify(doc.firmware)} (there are ${Object.keys(FIRMWARE).join(", ")})`);
  const untilPs = doc.until === undefined ? undefined : parseTime(doc.until);
  const out = new Outbox();
  const session = await FirmwareSession.open(await coreModule(), elf, {
    config: doc.config ?? {}, untilPs, collectTrace: true, consoleOrder: "time",
    onConsoleLine: (engine, text, timePs) => out.console.push({ engine, timePs: Number(timePs), text }),
  });
  const dev = session.device;
  const sampler = new FirmwareSampler(dev);
  post({ type: "begin", kind: "firmware", plots: sampler.plots, engines: dev.engines });
  const states = () => Array.from({ length: dev.engines }, (_, i) => dev.engine(i).state as string);
  await runInSlices(session, sampler, async (f) => {
    if (f) out.frames.push(f);
    if (!out.flush(states(), Number(session.nowPs))) return false;
    await yieldToEvents();
    return stopRequested;
  });
  const r: FwRunResult = session.finish();
  out.flush(states(), Number(session.nowPs), undefined, true);
  post({
    type: "done", kind: "firmware",
    resultJson: JSON.stringify({ ...r, trace: undefined }), // as `menic fw run --json` prints it
    summary: firmwareSummary(r), trace: traceBlob((sink) => writePerfetto(toPerfetto(r.trace ?? [], dev.engines, BigInt(r.timePs)), sink)), pcap: null,
    outcome: r.stopped ? { state: "stopped", text: `Stopped: firmware run stopped at ${formatTime(r.timePs)} of simulated time.` } : { state: "done", text: "Done: firmware run finished." },
  });
}

/** How a scenario run ended, in the words of the table's first line (host/scenario/report.ts). */
function scenarioOutcome(r: ScenarioResult): Outcome {
  if (r.ended === "stopped") return { state: "stopped", text: `Stopped: scenario stopped at ${formatTime(r.endPs)} of simulated time.` };
  return { state: "done", text: `Done: scenario ${endedText(r.ended)}.` };
}

/** How a sweep ended: stopped in one of its runs, or done, saying how many runs did not finish. */
function sweepOutcome(runs: readonly SweepRun[], planned: number): Outcome {
  if (runs.at(-1)?.result.ended === "stopped") return { state: "stopped", text: `Stopped: sweep stopped in run ${runs.length} of ${planned}.` };
  const unfinished = runs.filter((r) => r.result.ended !== "finished").length;
  return { state: "done", text: unfinished ? `Done: sweep ran; ${unfinished} of its ${runs.length} runs did not finish (the table's "ended" says how each ended).` : "Done: sweep finished." };
}

/** A trace written in chunks as one Blob, as the CLI's file would hold it (no string of the whole). */
function traceBlob(write: (sink: TraceSink) => void): Blob {
  const parts: Uint8Array<ArrayBuffer>[] = [];
  write((c) => parts.push(c as Uint8Array<ArrayBuffer>));
  return new Blob(parts, { type: "application/json" });
}

function firmwareSummary(r: FwRunResult): string {
  const ok = r.engines.filter((e) => e.state === "exited" && e.exitCode === 0).length;
  const rows = r.engines.map((e) => {
    const what = e.state === "exited" ? `exit ${e.exitCode}` : e.state === "faulted" ? `${e.fault} at pc 0x${e.pc.toString(16)}` : `pc 0x${e.pc.toString(16)}`;
    return `engine ${String(e.id).padStart(2)}  ${e.state.padEnd(8)} ${what.padEnd(12)} ${String(e.instructions).padStart(10)} instructions ${String(e.cycles).padStart(10)} cycles  asleep ${formatTime(e.sleepPs)}`;
  });
  return `${rows.join("\n")}\n\nsimulated ${formatTime(r.timePs)}; ${ok}/${r.engines.length} engines exited 0\n`;
}

/** Which run of a sweep is going on (the page says it). */
interface SweepPlace { index: number; of: number; set: Record<string, unknown> }

/**
 * What the page watches of one scenario run, as the run's hooks feed it: a collective's engines
 * (each device's occupancy and states) or the traffic's flows (goodput, HBM, windows), plus
 * `observer` (the trace) and `onBuilt` (the capture) when given. `begin` is posted at the run's
 * first progress, when its plots are known.
 */
function watch(doc: Record<string, unknown>, out: Outbox, o: { observer?: RunObserver; onBuilt?: RunOptions["onBuilt"]; onFlush?: (nowPs: number) => void; sweep?: SweepPlace } = {}) {
  // a collective's engines run the executor: their occupancy is what to watch (no flows to plot)
  const sc = resolveScenario(doc), collective = sc.collective !== undefined;
  // a traffic run's faults at their times; a collective's, once per size's cluster, after the sizes before it
  if (!collective) out.markers.push(...faultMarkers(sc.faults));
  const sampler = new ScenarioSampler(TRACE_INTERVAL_DEFAULT_PS, (f) => out.frames.push(f));
  const engines = new ClusterEngineSampler((f) => out.frames.push(f));
  let begun = false, progress = { done: 0, total: 0 }, nowPs = 0;
  const begin = () => {
    if (begun) return;
    post({ type: "begin", kind: "scenario", plots: collective ? engines.plots : sampler.plots, engines: collective ? engines.engines : 0, ...(collective ? { devices: engines.deviceCount } : {}), ...(o.sweep ? { sweep: o.sweep } : {}) });
    begun = true;
  };
  const states = () => (collective ? engines.states() : []);
  const observers = [...(collective ? [] : [sampler]), ...(o.observer ? [o.observer] : [])];
  const options: RunOptions = {
    ...(observers.length ? { observer: new Observers(observers) } : {}),
    onBuilt: (c) => {
      o.onBuilt?.(c);
      if (collective) {
        engines.attach(c.contexts.map((x) => x.device));
        out.markers.push(...faultMarkers(sc.faults, engines.timeZeroPs));
      }
    },
    onProgress: (t, done, total) => {
      if (collective) engines.sample(t);
      begin();
      o.onFlush?.(t);
      progress = { done, total };
      nowPs = t;
    },
    shouldStop: async () => {
      if (!begun || !out.flush(states(), nowPs, progress)) return false;
      await yieldToEvents();
      return stopRequested;
    },
  };
  return { options, end: (endPs: number) => { begin(); out.flush(states(), endPs, progress, true); } };
}

async function runScenarioDoc(doc: Record<string, unknown>): Promise<void> {
  if (doc.sweep !== undefined && doc.sweep !== null) return runSweepDoc(doc);
  const out = new Outbox();
  // the trace as `menic run --trace` writes it by default: its interval, its size bound
  const traceParts: Uint8Array<ArrayBuffer>[] = [];
  const tracer = new ScenarioTracer((c) => traceParts.push(c as Uint8Array<ArrayBuffer>), { intervalPs: TRACE_INTERVAL_DEFAULT_PS });
  const chunks: Uint8Array[] = [];
  const capture = new ClusterCapture(new PcapngWriter((c) => chunks.push(c), "menic page"));
  const w = watch(doc, out, { observer: tracer, onBuilt: (c) => capture.attach(c.endpoints), onFlush: (t) => capture.flush(t) });
  const r = await runScenario(await coreModule(), doc as ScenarioInput, w.options);
  capture.flush();
  tracer.close();
  w.end(r.endPs);
  const pcap = new Uint8Array(chunks.reduce((s, c) => s + c.length, 0));
  chunks.reduce((at, c) => (pcap.set(c, at), at + c.length), 0);
  post({ type: "done", kind: "scenario", resultJson: JSON.stringify(r), summary: formatResult(r), trace: new Blob(traceParts, { type: "application/json" }), pcap, outcome: scenarioOutcome(r) }, [pcap.buffer]);
}

/**
 * A sweep: one run per combination of its values, one after another, as runSweep runs them
 * (host/scenario/sweep.ts), each watched live in turn; the result and the table are the CLI's
 * (`menic run --json` prints { name, runs }). Like the CLI, no trace or capture for a sweep.
 */
async function runSweepDoc(doc: Record<string, unknown>): Promise<void> {
  const sweep = expandSweep(doc); // at most SWEEP_RUNS_BOUND runs, made as they come
  const core = await coreModule();
  checkSweep(sweep, (c) => checkScenario(core, c.scenario)); // every run checked before the first runs, as the CLI does
  const runs: SweepRun[] = [];
  let index = 0;
  for (const c of sweep) {
    const out = new Outbox();
    const w = watch(c.scenario, out, { sweep: { index: index++, of: sweep.runs, set: c.set } });
    const result = await runScenario(core, c.scenario as ScenarioInput, w.options);
    w.end(result.endPs);
    runs.push({ set: c.set, result });
    if (result.ended === "stopped") break;
  }
  const name = String(doc.name ?? "scenario");
  post({ type: "done", kind: "scenario", resultJson: JSON.stringify({ name, runs }), summary: formatSweep(name, runs, sweep.runs), trace: null, pcap: null, outcome: sweepOutcome(runs, sweep.runs) });
}
