// The page: pick or edit a scenario, run it in a Web Worker (worker.ts), and show it live —
// engine states and occupancy, console lines in simulated-time order, plots (uPlot) of what
// host/live.ts samples — then the result, a Perfetto trace and a pcapng to download (not for a
// sweep, whose runs are shown one after another), and a link that carries the scenario. What the page showed stays readable in the DOM for tests:
// body[data-state] ("idle", "running", "done", "stopped": the Stop button ended the run and what
// it reached is shown, "error"), #status (how the run ended, in words), #result (the --json text), and
// #plots[data-plotted] (each plot's data arrays as uPlot holds them).

import uPlot from "uplot";
import { CATALOG } from "./catalog.js";
import { encodeScenario, decodeScenario } from "./share.js";
import type { FromWorker, ScenarioDoc } from "./protocol.js";
import type { LiveFrame, PlotSpec } from "../host/live.js";
import { formatTime } from "../host/units.js";
import { parseJson } from "../host/user-input.js";

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const pick = $<HTMLSelectElement>("pick"), editor = $<HTMLTextAreaElement>("editor"), status = $("status");
const runButton = $<HTMLButtonElement>("run"), stopButton = $<HTMLButtonElement>("stop");
const consoleView = $("console"), plotsView = $("plots"), enginesView = $("engines");

/** Console lines shown at most; the rest are counted. */
const CONSOLE_SHOWN_MAX = 10_000;

for (const group of ["firmware", "scenario"] as const) {
  const og = document.createElement("optgroup");
  og.label = group === "firmware" ? "Firmware examples" : "Fabric and transport scenarios";
  for (const e of CATALOG.filter((c) => c.group === group)) og.append(new Option(e.id.slice(3), e.id));
  pick.append(og);
}
pick.append(new Option("(edited or from a link)", "custom"));
const show = (doc: ScenarioDoc) => (editor.value = JSON.stringify(doc, null, 2));
pick.onchange = () => {
  const e = CATALOG.find((c) => c.id === pick.value);
  if (e) show(e.doc);
};
editor.oninput = () => (pick.value = "custom");

function setStatus(text: string, error = false): void {
  status.textContent = text;
  status.classList.toggle("error", error);
}
const setState = (s: "idle" | "running" | "done" | "stopped" | "error") => (document.body.dataset.state = s);

// ---- the run
let worker: Worker | null = null;
let plots: { spec: PlotSpec; data: number[][]; chart: uPlot }[] = [];
let consoleShown = 0, consoleMore = 0;
let dirty = false;
const downloads: string[] = [];

function palette(k: number, n: number): string {
  return `hsl(${Math.round((360 * k) / Math.max(1, n))}, 65%, 45%)`;
}

function makePlots(specs: PlotSpec[]): void {
  plotsView.replaceChildren();
  plots = specs.map((spec) => {
    const box = document.createElement("div");
    box.className = "plot";
    box.dataset.plot = spec.id;
    plotsView.append(box);
    const data = [[], ...spec.series.map(() => [])] as number[][];
    const chart = new uPlot({
      title: `${spec.title} (${spec.unit})`, width: 540, height: 240,
      scales: { x: { time: false } },
      axes: [{ label: "simulated time (us)" }, { label: spec.unit }],
      series: [{ label: "us" }, ...spec.series.map((label, k) => ({ label, stroke: palette(k, spec.series.length), width: 1.5 }))],
      legend: { live: false },
    }, data as uPlot.AlignedData, box);
    return { spec, data, chart };
  });
}

function addFrames(frames: LiveFrame[]): void {
  for (const f of frames) {
    for (const p of plots) {
      p.data[0]!.push(f.tPs / 1e6);
      const v = f.values[p.spec.id]!;
      for (let k = 0; k < p.spec.series.length; k++) p.data[k + 1]!.push(v[k]!);
    }
  }
  if (frames.length && !dirty) {
    dirty = true;
    requestAnimationFrame(() => {
      dirty = false;
      for (const p of plots) p.chart.setData(p.data as uPlot.AlignedData);
    });
  }
}

function addConsole(lines: { engine: number; timePs: number; text: string }[]): void {
  const room = Math.max(0, CONSOLE_SHOWN_MAX - consoleShown);
  const shown = lines.slice(0, room);
  consoleMore += lines.length - shown.length;
  if (shown.length) {
    consoleView.append(shown.map((l) => `[${formatTime(l.timePs).padStart(12)} e${String(l.engine).padStart(2, "0")}] ${l.text}\n`).join(""));
    consoleShown += shown.length;
  }
  consoleView.dataset.more = String(consoleMore);
}

/** Engines per device of the run, and whether the states are of several devices (labelled d<device>.e<engine>). */
let enginesPerDevice = 0, manyDevices = false;
/** A sweep's run going on: "run 2/4 {...}: " before the status. */
let runLabel = "";

function showEngines(states: string[]): void {
  const label = (i: number) => (manyDevices ? `d${Math.floor(i / enginesPerDevice)}.e${i % enginesPerDevice}` : `e${i}`);
  if (enginesView.children.length !== states.length) {
    enginesView.replaceChildren(...states.map((_, i) => {
      const d = document.createElement("div");
      d.className = "engine";
      d.textContent = label(i);
      return d;
    }));
  }
  states.forEach((s, i) => {
    const d = enginesView.children[i] as HTMLElement;
    d.className = `engine ${s}`;
    d.title = `${manyDevices ? `device ${Math.floor(i / enginesPerDevice)}, engine ${i % enginesPerDevice}` : `engine ${i}`}: ${s}`;
  });
}

function download(id: string, data: BlobPart, type: string): void {
  const a = $<HTMLAnchorElement>(id);
  const url = URL.createObjectURL(new Blob([data], { type }));
  downloads.push(url);
  a.href = url;
  a.hidden = false;
}

function finished(): void {
  runButton.disabled = false;
  stopButton.disabled = true;
  worker?.terminate();
  worker = null;
}

function onMessage(m: FromWorker): void {
  switch (m.type) {
    case "begin":
      makePlots(m.plots);
      enginesPerDevice = m.engines;
      manyDevices = m.devices !== undefined;
      runLabel = m.sweep ? `run ${m.sweep.index + 1}/${m.sweep.of} ${JSON.stringify(m.sweep.set)}: ` : "";
      enginesView.replaceChildren();
      if (m.engines === 0) enginesView.textContent = "No firmware runs in this scenario: its devices' engines stay idle.";
      $("console-view").hidden = m.kind === "scenario";
      break;
    case "update":
      addFrames(m.frames);
      addConsole(m.console);
      if (m.engineStates.length) showEngines(m.engineStates);
      setStatus(`Running: ${runLabel}simulated ${formatTime(m.nowPs)}${m.progress ? `, ${m.progress.done}/${m.progress.total} ${manyDevices ? "sizes" : "messages"}` : ""}`);
      break;
    case "done": {
      for (const p of plots) p.chart.setData(p.data as uPlot.AlignedData);
      plotsView.dataset.plotted = JSON.stringify(Object.fromEntries(plots.map((p) => [p.spec.id, p.data])));
      consoleView.dataset.lines = String(consoleShown + consoleMore);
      $("summary").textContent = m.summary;
      $("result").textContent = m.resultJson;
      if (m.trace !== null) download("dl-trace", m.trace, "application/json");
      if (m.pcap) download("dl-pcap", m.pcap as Uint8Array<ArrayBuffer>, "application/vnd.tcpdump.pcap");
      // a stopped run says so: its results are what it reached, not what it was to do
      setStatus(m.outcome.text);
      setState(m.outcome.state);
      finished();
      break;
    }
    case "error":
      setStatus(m.message, true);
      setState("error");
      finished();
      break;
  }
}

function run(): void {
  let doc: ScenarioDoc;
  try {
    doc = parseJson(editor.value) as ScenarioDoc; // a syntax error says its line and column
    if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw new Error("the scenario must be a JSON object");
  } catch (e) {
    setStatus(`The scenario is not valid JSON: ${(e as Error).message}`, true);
    setState("error");
    return;
  }
  worker?.terminate();
  for (const u of downloads.splice(0)) URL.revokeObjectURL(u);
  for (const id of ["dl-trace", "dl-pcap"]) $(id).hidden = true;
  consoleView.textContent = "";
  consoleShown = consoleMore = 0;
  runLabel = "";
  enginesView.replaceChildren();
  $("summary").textContent = "";
  $("result").textContent = "";
  delete plotsView.dataset.plotted;
  plotsView.replaceChildren();
  plots = [];
  worker = new Worker("worker.js");
  worker.onmessage = (ev: MessageEvent<FromWorker>) => onMessage(ev.data);
  worker.onerror = (ev) => onMessage({ type: "error", message: `the worker failed: ${ev.message}` });
  runButton.disabled = true;
  stopButton.disabled = false;
  setStatus("Starting…");
  setState("running");
  worker.postMessage({ type: "run", doc });
}

runButton.onclick = run;
stopButton.onclick = () => worker?.postMessage({ type: "stop" });
$("share").onclick = async () => {
  const hash = await encodeScenario(editor.value);
  history.replaceState(null, "", hash);
  const box = $<HTMLInputElement>("share-url");
  box.value = location.href;
  box.hidden = false;
  box.select();
  navigator.clipboard?.writeText(location.href).catch(() => {});
};

async function load(): Promise<void> {
  setState("idle");
  try {
    const fromLink = await decodeScenario(location.hash);
    if (fromLink !== null) {
      editor.value = fromLink;
      pick.value = "custom";
      return;
    }
  } catch (e) {
    setStatus((e as Error).message, true);
  }
  pick.value = CATALOG[0]!.id;
  show(CATALOG[0]!.doc);
}
window.addEventListener("hashchange", () => void load());
void load();
