// The page: pick or edit a scenario, run it in a Web Worker (worker.ts), and show it live —
// engine states and occupancy, console lines in simulated-time order, plots (uPlot) of what
// host/live.ts samples — then the result, a Perfetto trace and a pcapng to download (not for a
// sweep, whose runs are shown one after another), and a link that carries the scenario. What the page showed stays readable in the DOM for tests:
// body[data-state] ("idle", "running", "done", "stopped": the Stop button ended the run and what
// it reached is shown, "error"), #status (how the run ended, in words), #result (the --json text),
// #plots[data-plotted] (each plot's data arrays as uPlot holds them: a sweep's runs one after
// another, a row of nulls between two, which uPlot draws as a gap), #plots[data-series] (each
// plot's series) and #plots[data-markers] (faults and runs marked, in plotted us; each drawn as a
// .marker element over the plots).

import uPlot from "uplot";
import { CATALOG } from "./catalog.js";
import { encodeScenario, decodeScenario } from "./share.js";
import type { FromWorker, ScenarioDoc } from "./protocol.js";
import type { LiveFrame, PlotMarker, PlotSpec } from "../host/live.js";
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
let consoleShown = 0, consoleMore = 0;
let dirty = false;
const downloads: string[] = [];

/**
 * A plot as the page keeps it: its spec (its series: every one it has had, a sweep's runs
 * together), its data as uPlot holds it ([x in us, ...one array per series]; null where a series
 * has no value, which uPlot leaves as a gap), its chart.
 */
interface Plot { spec: PlotSpec; data: (number | null)[][]; chart: uPlot }
let plots: Plot[] = [];
/** The run going on: its plots, and per plot the column each of the run's series goes to. */
let current: { plot: Plot; cols: number[] }[] = [];
/** The plotted time (us) of the run's time 0: a sweep's runs go one after another, a gap between them. */
let offsetUs = 0;
/** What every plot marks, in plotted us: faults (down, then up again) and where a sweep's runs begin. */
let markers: { kind: PlotMarker["kind"]; label: string; fromUs: number; toUs: number | null }[] = [];

/** Series beyond this many get a compact legend that scrolls (16 paths, a run of many flows or devices). */
const LEGEND_FULL_MAX = 8;

/** A colour per series, far from its neighbours' however many there are (the golden angle). */
const palette = (k: number) => `hsl(${Math.round((k * 137.508) % 360)}, 65%, 45%)`;

const seriesOpts = (label: string, k: number): uPlot.Series => ({ label, stroke: palette(k), width: 1.5, spanGaps: false });

function newPlot(spec: PlotSpec): Plot {
  const box = document.createElement("div");
  box.className = "plot";
  box.dataset.plot = spec.id;
  plotsView.append(box);
  const data: (number | null)[][] = [[], ...spec.series.map(() => [])];
  const chart = new uPlot({
    title: `${spec.title} (${spec.unit})`, width: 540, height: 240,
    scales: { x: { time: false } },
    axes: [{ label: "simulated time (us)" }, { label: spec.unit }],
    series: [{ label: "us" }, ...spec.series.map(seriesOpts)],
    legend: { live: false },
    hooks: { draw: [placeMarkers] },
  }, data as uPlot.AlignedData, box);
  const plot = { spec: { ...spec, series: [...spec.series] }, data, chart };
  box.classList.toggle("many", spec.series.length > LEGEND_FULL_MAX);
  return plot;
}

/** Adds series `label` to `p` (a sweep's run has it, the runs before did not): no values before now. */
function addSeries(p: Plot, label: string): number {
  const k = p.spec.series.push(label) - 1;
  p.data.push(new Array<number | null>(p.data[0]!.length).fill(null));
  p.chart.addSeries(seriesOpts(label, k), k + 1);
  p.chart.root.parentElement!.classList.toggle("many", p.spec.series.length > LEGEND_FULL_MAX);
  return k;
}

/**
 * A run's plots: new ones; or, for a sweep's next run, the plots so far, each line broken where
 * the last run ended (a row of nulls), the run's series added to them, its time going on from there.
 */
function beginPlots(specs: PlotSpec[], sweep?: { index: number; set: Record<string, unknown> }): void {
  if (!sweep || sweep.index === 0) {
    plotsView.replaceChildren();
    plots = [];
    markers = [];
    offsetUs = 0;
  } else {
    offsetUs = Math.max(offsetUs, ...plots.map((p) => (p.data[0]!.at(-1) as number | undefined) ?? 0));
    for (const p of plots) p.data.forEach((col, c) => col.push(c === 0 ? offsetUs : null));
    markers.push({ kind: "run", label: `run ${sweep.index + 1}: ${JSON.stringify(sweep.set)}`, fromUs: offsetUs, toUs: offsetUs });
  }
  current = specs.map((spec) => {
    const found = plots.find((p) => p.spec.id === spec.id);
    const plot = found ?? newPlot(spec);
    if (!found) plots.push(plot);
    return { plot, cols: spec.series.map((label) => { const k = plot.spec.series.indexOf(label); return k >= 0 ? k : addSeries(plot, label); }) };
  });
  redraw();
}

function addFrames(frames: LiveFrame[]): void {
  for (const f of frames) {
    for (const { plot, cols } of current) {
      plot.data[0]!.push(offsetUs + f.tPs / 1e6);
      const v = f.values[plot.spec.id]!, row = new Array<number | null>(plot.spec.series.length).fill(null);
      cols.forEach((c, k) => (row[c] = v[k]!));
      row.forEach((x, c) => plot.data[c + 1]!.push(x));
    }
  }
  if (frames.length) redraw();
}

function addMarkers(list: PlotMarker[]): void {
  for (const m of list) markers.push({ kind: m.kind, label: m.label, fromUs: offsetUs + m.fromPs / 1e6, toUs: m.toPs === null ? null : offsetUs + m.toPs / 1e6 });
  if (list.length) redraw();
}

/** Draws the plots again at the next frame (at most once a frame). */
function redraw(): void {
  if (dirty) return;
  dirty = true;
  requestAnimationFrame(() => {
    dirty = false;
    for (const p of plots) p.chart.setData(p.data as uPlot.AlignedData);
  });
}

/**
 * The markers over a plot's drawing area, where its x scale puts them: a shaded span from a
 * fault's start to its end (to the right edge while it lasts), a line where a sweep's run begins.
 * Each is an element (.marker.fault, .marker.run) with its times in us, for the eye and for tests.
 */
function placeMarkers(u: uPlot): void {
  u.over.querySelectorAll(".marker").forEach((e) => e.remove());
  const w = u.over.clientWidth, { min, max } = u.scales.x;
  if (min === undefined || max === undefined || !(max > min)) return;
  for (const m of markers) {
    const a = u.valToPos(m.fromUs, "x"), b = m.toUs === null ? w : u.valToPos(m.toUs, "x");
    const left = Math.max(0, a), right = Math.min(w, Math.max(b, a + 2));
    if (right <= 0 || left >= w) continue; // outside what the plot shows
    const e = document.createElement("div");
    e.className = `marker ${m.kind}`;
    e.title = m.label;
    e.dataset.fromUs = String(m.fromUs);
    e.dataset.toUs = m.toUs === null ? "" : String(m.toUs);
    e.style.left = `${left}px`;
    e.style.width = `${right - left}px`;
    const text = document.createElement("span");
    text.textContent = m.kind === "run" ? m.label.split(":")[0]! : m.label;
    e.append(text);
    u.over.append(e);
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
      beginPlots(m.plots, m.sweep);
      enginesPerDevice = m.engines;
      manyDevices = m.devices !== undefined;
      runLabel = m.sweep ? `run ${m.sweep.index + 1}/${m.sweep.of} ${JSON.stringify(m.sweep.set)}: ` : "";
      enginesView.replaceChildren();
      if (m.engines === 0) enginesView.textContent = "No firmware runs in this scenario: its devices' engines stay idle.";
      $("console-view").hidden = m.kind === "scenario";
      break;
    case "update":
      addMarkers(m.markers);
      addFrames(m.frames);
      addConsole(m.console);
      if (m.engineStates.length) showEngines(m.engineStates);
      setStatus(`Running: ${runLabel}simulated ${formatTime(m.nowPs)}${m.progress ? `, ${m.progress.done}/${m.progress.total} ${manyDevices ? "sizes" : "messages"}` : ""}`);
      break;
    case "done": {
      for (const p of plots) p.chart.setData(p.data as uPlot.AlignedData);
      plotsView.dataset.plotted = JSON.stringify(Object.fromEntries(plots.map((p) => [p.spec.id, p.data])));
      plotsView.dataset.series = JSON.stringify(Object.fromEntries(plots.map((p) => [p.spec.id, p.spec.series])));
      plotsView.dataset.markers = JSON.stringify(markers);
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
  for (const k of ["plotted", "series", "markers"]) delete plotsView.dataset[k];
  plotsView.replaceChildren();
  plots = [];
  current = [];
  markers = [];
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
