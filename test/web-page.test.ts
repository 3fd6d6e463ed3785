// The page (web/, built into build/web/) in a real browser: Debian's chromium driven by
// playwright-core (.ci/run installs both; no browser download). The test serves build/web/ with
// scripts/serve.mjs, loads the page, runs a firmware example (given in the URL, as a shared
// link carries it) and a small MetaRoCE-like scenario (picked from the list), reads back what
// the page printed and plotted, and compares it with Node runs of the same scenarios: the
// results byte for byte with `menic ... --json`, the console with `--console merged`, the
// Perfetto trace with `menic run --trace`, and the plotted numbers with the same samplers run
// in Node. Screenshots go to build/web-page/ (git-ignored), a test artifact.
//
// Chromium runs with --no-sandbox: its sandbox needs user namespaces or a setuid helper, which
// this container (and CI running as root) does not give; the page is our own, loaded from
// localhost.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deflateRawSync } from "node:zlib";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { chromium, type Browser, type Page } from "playwright-core";
import { FirmwareSession } from "../host/fw/session.js";
import { FirmwareSampler, ScenarioSampler, ClusterEngineSampler, type LiveFrame, type PlotSpec } from "../host/live.js";
import { runScenario, type ScenarioInput } from "../host/scenario/run.js";
import { expandSweep } from "../host/scenario/sweep.js";
import { TRACE_INTERVAL_DEFAULT_PS } from "../host/scenario/trace.js";
import { coreModule } from "../host/platform/node.js";
import { runInSlices } from "../web/slices.js";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`test/web-page: ${CHROMIUM} is missing (apt-get install chromium): the browser checks are skipped`);

const ARTIFACTS = join("build", "web-page");
const load = (name: string) => JSON.parse(readFileSync(`examples/scenarios/${name}.json`, "utf8"));
const menic = (...args: string[]) => {
  const r = spawnSync("node", ["bin/menic.js", ...args], { encoding: "utf8", maxBuffer: 1 << 28 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};

/** The plots as the page keeps them: per plot, [x in us, ...one array per series]. */
function plotted(specs: PlotSpec[], frames: LiveFrame[]): Record<string, number[][]> {
  return Object.fromEntries(specs.map((s) => [s.id, [frames.map((f) => f.tPs / 1e6), ...s.series.map((_, k) => frames.map((f) => f.values[s.id]![k]!))]]));
}

/** A sweep's runs (of the same plots and series) as the page keeps them: one after another, each going on from the last one's end after a row of nulls. */
function sweepPlotted(runs: { specs: PlotSpec[]; frames: LiveFrame[] }[]): Record<string, (number | null)[][]> {
  const out: Record<string, (number | null)[][]> = {};
  let offset = 0;
  runs.forEach(({ specs, frames }, k) => {
    const one = plotted(specs, frames);
    for (const s of specs) {
      const cols = (out[s.id] ??= one[s.id]!.map(() => []));
      if (k > 0) cols.forEach((c, j) => c.push(j === 0 ? offset : null));
      one[s.id]!.forEach((c, j) => cols[j]!.push(...(j === 0 ? c.map((x) => offset + x) : c)));
    }
    offset = Math.max(...Object.values(out).map((p) => p[0]!.at(-1) as number));
  });
  return out;
}

async function runToDone(page: Page, timeout = 60_000): Promise<void> {
  await page.click("#run");
  await page.waitForFunction(() => document.body.dataset.state === "done" || document.body.dataset.state === "error", null, { timeout });
  const state = await page.evaluate(() => document.body.dataset.state);
  if (state !== "done") throw new Error(`the page says: ${await page.textContent("#status")}`);
}

describe.skipIf(!hasChromium)("the page, in chromium", () => {
  let server: Server, browser: Browser, base: string;

  beforeAll(async () => {
    if (!existsSync("build/web/index.html")) throw new Error("build/web/ is missing: run npm run build");
    mkdirSync(ARTIFACTS, { recursive: true });
    const { webServer } = (await import("../scripts/serve.mjs" as string)) as { webServer: () => Server };
    server = webServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  /** A 1280 x 900 page at `base + path`, and the uncaught errors it throws (each test expects none). */
  async function openPage(path = ""): Promise<{ page: Page; errors: string[] }> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(base + path);
    return { page, errors };
  }

  it("runs a firmware example from a shared link: the same result, console and plots as Node", async () => {
    const doc = { firmware: "pingpong", config: { engines: 8 }, until: "10ms" };
    const hash = `#s=${deflateRawSync(Buffer.from(JSON.stringify(doc))).toString("base64url")}`;
    const { page, errors } = await openPage(hash);
    expect(JSON.parse(await page.inputValue("#editor"))).toEqual(doc); // the link's scenario is in the editor
    await runToDone(page);
    await page.screenshot({ path: join(ARTIFACTS, "firmware-pingpong.png"), fullPage: true });

    const elf = "firmware/examples/pingpong.elf", args = ["fw", "run", elf, "--set", "engines=8", "--until", "10ms"];
    const json = menic(...args, "--json");
    expect(json.status).toBe(0);
    expect(await page.textContent("#result")).toBe(json.stdout.trimEnd());
    // the console, in simulated-time order, as --console merged prints it (the lines before the summary)
    const merged = menic(...args, "--console", "merged").stdout.split("\n\n")[0]! + "\n";
    expect(merged.split("\n").length).toBe(5); // 4 pairs report
    expect(await page.textContent("#console")).toBe(merged);

    // the plotted numbers: the same sampler over the same slices in Node
    const session = await FirmwareSession.open(coreModule(), readFileSync(elf), { config: doc.config, untilPs: 10_000_000_000n });
    const sampler = new FirmwareSampler(session.device);
    const frames: LiveFrame[] = [];
    await runInSlices(session, sampler, (f) => { if (f) frames.push(f); return false; });
    const onPage = JSON.parse((await page.getAttribute("#plots", "data-plotted"))!);
    expect(onPage).toEqual(plotted(sampler.plots, frames));
    // the last sample is where the run ended; occupancy is a share of each interval
    expect(onPage.occupancy[0].at(-1)).toBe(JSON.parse(json.stdout).timePs / 1e6);
    for (const s of onPage.occupancy.slice(1)) for (const v of s) expect(v >= 0 && v <= 100).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("lists every shipped scenario (examples/scenarios/, read when the page is built)", async () => {
    const page = await browser.newPage();
    await page.goto(base);
    const listed = await page.$$eval("#pick option", (os) => os.map((o) => (o as HTMLOptionElement).value).filter((v) => v.startsWith("sc:")));
    expect(listed).toEqual(readdirSync("examples/scenarios").filter((f) => f.endsWith(".json")).sort().map((f) => `sc:${f.slice(0, -5)}`));
    await page.selectOption("#pick", "sc:allreduce-tree");
    const { $schema: _, ...doc } = JSON.parse(readFileSync("examples/scenarios/allreduce-tree.json", "utf8"));
    expect(JSON.parse(await page.inputValue("#editor"))).toEqual(doc);
    await page.close();
  });

  it("runs a collective scenario picked from the list on the engines' executor: the same result as Node, byte for byte, and each device's engine occupancy", async () => {
    const file = "examples/scenarios/alltoall-planes.json";
    const { page, errors } = await openPage();
    await page.selectOption("#pick", "sc:alltoall-planes");
    await runToDone(page, 240_000);
    await page.screenshot({ path: join(ARTIFACTS, "collective-alltoall-planes.png"), fullPage: true });
    const dir = mkdtempSync(join(tmpdir(), "menic-web-"));
    const node = menic("run", file, "--json", "--trace", join(dir, "trace.json"));
    expect(node.status).toBe(0);
    expect(await page.textContent("#result")).toBe(node.stdout.trimEnd());
    expect(JSON.parse(node.stdout).collective.rows.map((r: { check: string }) => r.check)).toEqual(["ok", "ok"]);
    // the trace download: every graph node a slice on its engine's track, as --trace writes it
    const trace = await page.evaluate(async () => (await fetch((document.querySelector("#dl-trace") as HTMLAnchorElement).href)).text());
    expect(trace).toBe(readFileSync(join(dir, "trace.json"), "utf8"));
    expect(trace).toContain('"cat":"graph"');
    // every device's engines, after the run: asleep in the executor's wfi
    const sc = JSON.parse(readFileSync(file, "utf8"));
    const squares = await page.$$eval("#engines .engine", (es) => es.map((e) => [e.textContent, e.className]));
    expect(squares.length).toBe(sc.devices.count * sc.collective.engines);
    expect(squares[17]).toEqual(["d1.e1", "engine sleeping"]);
    // the plotted occupancy: the same sampler, fed at the same points, in Node
    const sampler = new ClusterEngineSampler();
    await runScenario(coreModule(), sc, { onBuilt: (c) => sampler.attach(c.contexts.map((x) => x.device)), onProgress: (t) => sampler.sample(t) });
    const onPage = JSON.parse((await page.getAttribute("#plots", "data-plotted"))!);
    expect(onPage).toEqual(plotted(sampler.plots, sampler.frames));
    expect(sampler.plots[0]!.series).toHaveLength(sc.devices.count);
    // the engines ran the collective: each device's mean occupancy rose above 10% at some point
    for (const s of onPage.occupancy.slice(1)) expect(Math.max(...s)).toBeGreaterThan(10);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("runs sweeps one run after another, as the CLI: a traffic sweep from the list and an edited collective sweep give its --json byte for byte", async () => {
    const { page, errors } = await openPage();
    await page.selectOption("#pick", "sc:metaroce-cc");
    await runToDone(page, 120_000);
    const cc = menic("run", "examples/scenarios/metaroce-cc.json", "--json");
    expect(cc.status).toBe(0);
    expect(await page.textContent("#result")).toBe(cc.stdout.trimEnd());
    expect(JSON.parse(cc.stdout).runs.length).toBe(2);
    expect(await page.textContent("#status")).toBe("Done: sweep finished.");
    expect(await page.isHidden("#dl-trace")).toBe(true); // a sweep has no trace, as in the CLI
    // WAS (issue 29 §4): each run's plots replaced the last one's. Now both runs stay, one after
    // the other: the same samplers run in Node, each line broken between the runs (a row of nulls)
    const ccRuns = [];
    for (const c of expandSweep(load("metaroce-cc"))) {
      const sampler = new ScenarioSampler(TRACE_INTERVAL_DEFAULT_PS);
      await runScenario(coreModule(), c.scenario as ScenarioInput, { observer: sampler });
      ccRuns.push({ specs: sampler.plots, frames: sampler.frames });
    }
    const ccPlotted = JSON.parse((await page.getAttribute("#plots", "data-plotted"))!) as Record<string, (number | null)[][]>;
    expect(ccPlotted).toEqual(sweepPlotted(ccRuns));
    const gap = ccRuns[0]!.frames.length; // the row between the runs
    for (const [id, cols] of Object.entries(ccPlotted)) {
      expect(cols[0]![gap], id).toBe(ccRuns[0]!.frames.at(-1)!.tPs / 1e6);
      expect(cols.slice(1).every((c) => c[gap] === null && c[gap - 1] !== null && c[gap + 1] !== null), id).toBe(true);
    }
    // where the second run begins is marked on every plot
    const runMarker = { kind: "run", label: 'run 2: {"devices.congestionControl":"nscc"}', fromUs: ccPlotted.goodput![0]![gap], toUs: ccPlotted.goodput![0]![gap] };
    expect(JSON.parse((await page.getAttribute("#plots", "data-markers"))!)).toEqual([runMarker]);
    expect(await page.$$eval(".plot .marker.run", (es) => es.map((e) => (e as HTMLElement).dataset.fromUs))).toEqual(Object.keys(ccPlotted).map(() => String(runMarker.fromUs)));

    // the ring against the tree, at two small sizes: the editor's text is what runs
    const tree = JSON.parse(readFileSync("examples/scenarios/allreduce-tree.json", "utf8"));
    tree.collective.sizes = [4096, 65536];
    await page.fill("#editor", JSON.stringify(tree));
    await runToDone(page, 240_000);
    await page.screenshot({ path: join(ARTIFACTS, "sweep-allreduce-tree.png"), fullPage: true });
    const node = menic("run", "examples/scenarios/allreduce-tree.json", "--set", "collective.sizes=[4096,65536]", "--json");
    expect(node.status).toBe(0);
    expect(await page.textContent("#result")).toBe(node.stdout.trimEnd());
    expect(JSON.parse(node.stdout).runs.map((r: { set: Record<string, string> }) => r.set["collective.algorithm"])).toEqual(["ring", "tree"]);
    // both runs plotted, the ring then the tree: the same sampler in Node
    const treeRuns = [];
    for (const algorithm of ["ring", "tree"]) {
      const sampler = new ClusterEngineSampler();
      const one = { ...tree, collective: { ...tree.collective, algorithm } };
      delete one.sweep;
      await runScenario(coreModule(), one, { onBuilt: (c) => sampler.attach(c.contexts.map((x) => x.device)), onProgress: (t) => sampler.sample(t) });
      treeRuns.push({ specs: sampler.plots, frames: sampler.frames });
    }
    expect(JSON.parse((await page.getAttribute("#plots", "data-plotted"))!)).toEqual(sweepPlotted(treeRuns));
    expect(errors).toEqual([]);
    await page.close();
  });

  it("runs a MetaRoCE-like scenario picked from the list: the same result, trace and plots as Node", async () => {
    const file = "examples/scenarios/metaroce-plane-failure.json";
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(base);
    await page.selectOption("#pick", "sc:metaroce-plane-failure");
    await runToDone(page);
    await page.screenshot({ path: join(ARTIFACTS, "scenario-metaroce-plane-failure.png"), fullPage: true });

    const dir = mkdtempSync(join(tmpdir(), "menic-web-"));
    const node = menic("run", file, "--json", "--trace", join(dir, "trace.json"));
    expect(node.status).toBe(0);
    expect(await page.textContent("#result")).toBe(node.stdout.trimEnd());
    // the downloads, read in the page (the capture is tens of MB: only its size and first block cross over)
    const blob = (sel: string) => page.evaluate(async (q) => {
      const b = await (await fetch((document.querySelector(q) as HTMLAnchorElement).href)).blob();
      return { bytes: b.size, head: Array.from(new Uint8Array(await b.slice(0, 4).arrayBuffer())), text: b.size < 64 << 20 && q === "#dl-trace" ? await b.text() : "" };
    }, sel);
    expect((await blob("#dl-trace")).text).toBe(readFileSync(join(dir, "trace.json"), "utf8"));
    const pcap = await blob("#dl-pcap");
    expect(Buffer.from(pcap.head).readUInt32LE(0)).toBe(0x0a0d0d0a); // a pcapng section header block
    expect(pcap.bytes).toBeGreaterThan(100_000);

    // the plotted numbers: the same sampler in Node
    const sampler = new ScenarioSampler(TRACE_INTERVAL_DEFAULT_PS);
    const result = await runScenario(coreModule(), JSON.parse(readFileSync(file, "utf8")), { observer: sampler });
    const onPage = JSON.parse((await page.getAttribute("#plots", "data-plotted"))!);
    expect(onPage).toEqual(plotted(sampler.plots, sampler.frames));
    expect(Object.keys(onPage)).toEqual(["goodput", "hbm", "cwnd"]);
    expect(sampler.plots[2]!.series).toHaveLength(16); // 2 connections x 8 paths
    // goodput integrated over the plotted intervals is every byte the scenario moved
    const [t, ...series] = onPage.goodput as number[][];
    const total = series.at(-1)!;
    const bytes = total.reduce((s, g, k) => s + (g * ((t[k]! - (k ? t[k - 1]! : 0)) * 1e6)) / 8000, 0);
    expect(Math.round(bytes)).toBe(result.totalBytes);

    // WAS (issue 29 §4): no plot showed when the plane was down. Now every plot shades it, from
    // the fault's start to its end, where its x scale puts them
    expect(JSON.parse((await page.getAttribute("#plots", "data-markers"))!)).toEqual([{ kind: "fault", label: "plane 1 down", fromUs: 100, toUs: 300 }]);
    const shaded = await page.$$eval(".plot", (boxes) => boxes.map((b) => {
      const m = b.querySelector(".u-over .marker.fault") as HTMLElement | null, over = b.querySelector(".u-over") as HTMLElement;
      return { plot: (b as HTMLElement).dataset.plot, from: m?.dataset.fromUs, to: m?.dataset.toUs, left: m?.offsetLeft ?? -1, width: m?.offsetWidth ?? -1, overWidth: over.clientWidth };
    }));
    expect(shaded.map((x) => [x.plot, x.from, x.to])).toEqual(["goodput", "hbm", "cwnd"].map((id) => [id, "100", "300"]));
    const end = t.at(-1)!; // the plots' x scale: 0 to the last sample
    for (const x of shaded) {
      // 200 us of a run of `end` us: its share of the plot's width, starting 100 us in
      expect(x.width / x.overWidth).toBeCloseTo(200 / end, 1);
      expect(x.left / x.overWidth).toBeCloseTo(100 / end, 1);
    }
    await page.close();
  });

  // WAS (issue 29 §4): with many series, uPlot's legend grew a line per few series below the
  // plot (17 flows and the total: taller than the plot itself)
  it("keeps a legend of more than 8 series compact (here 18): a box of a few lines that scrolls, every series in it", async () => {
    const { page, errors } = await openPage();
    const { $schema: _, ...doc } = load("roce-pair");
    doc.devices.count = 34; // 17 pairs
    doc.traffic.messageBytes = 65536;
    doc.traffic.messages = 1;
    await page.fill("#editor", JSON.stringify(doc));
    await runToDone(page, 120_000);
    await page.screenshot({ path: join(ARTIFACTS, "legend-17-flows.png"), fullPage: true });
    const legend = await page.$eval('.plot[data-plot="goodput"]', (b) => {
      const l = b.querySelector(".u-legend") as HTMLElement, chart = b.querySelector(".u-wrap") as HTMLElement;
      return { labels: Array.from(l.querySelectorAll(".u-series .u-label"), (e) => e.textContent), height: l.clientHeight, scroll: l.scrollHeight, chart: chart.clientHeight, many: b.classList.contains("many") };
    });
    expect(legend.labels).toEqual([...Array.from({ length: 17 }, (_, i) => `flow ${i}: ${2 * i}→${2 * i + 1}`), "total"]);
    expect(legend.many).toBe(true);
    expect(legend.height).toBeLessThan(legend.chart / 2); // a few lines, well under the plot's height...
    expect(legend.scroll).toBeGreaterThan(legend.height); // ...that scroll to the rest
    // the HBM plot's three series keep the full legend
    expect(await page.$eval('.plot[data-plot="hbm"]', (b) => b.classList.contains("many"))).toBe(false);
    expect(errors).toEqual([]);
    await page.close();
  });

  // WAS (issue 29 §3): a run the Stop button ended said "Done: scenario finished." (a sweep's:
  // "Done: sweep finished."), and a JSON error gave an offset, or nothing
  it("shows a stopped run as stopped, and says where the editor's JSON breaks", async () => {
    const { page, errors } = await openPage();
    const { $schema: _, ...doc } = load("roce-pair");
    doc.traffic.messages = 4096; // far longer than it takes to press Stop
    for (const d of [doc, { ...doc, sweep: { seed: [1, 2, 3] } }]) {
      await page.fill("#editor", JSON.stringify(d));
      await page.click("#run");
      // once the run has drawn its progress (no wall-clock limit: the test's timeout is the backstop)
      await page.waitForFunction(() => document.querySelector("#status")!.textContent!.startsWith("Running:"), null, { timeout: 120_000 });
      await page.click("#stop");
      await page.waitForFunction(() => document.body.dataset.state !== "running", null, { timeout: 120_000 });
      expect(await page.evaluate(() => document.body.dataset.state)).toBe("stopped");
      const result = JSON.parse((await page.textContent("#result"))!);
      const summary = (await page.textContent("#summary"))!;
      if (d.sweep) {
        expect(await page.textContent("#status")).toBe(`Stopped: sweep stopped in run ${result.runs.length} of 3.`);
        expect(result.runs.at(-1).result.ended).toBe("stopped");
        expect(summary.split("\n")[0]).toBe(`roce-pair: stopped in run ${result.runs.length} of 3`);
      } else {
        expect(await page.textContent("#status")).toMatch(/^Stopped: scenario stopped at \d+\.\d{3} (us|ms) of simulated time\.$/);
        expect(result.ended).toBe("stopped");
        expect(result.messages.completed).toBeLessThan(4096);
        expect(summary.split("\n")[0]).toMatch(/^roce-pair \(seed 1\): stopped at /);
        // a rate only from what completed: none ("—", null) when nothing did
        const total = summary.split("\n").find((l) => l.startsWith("total"))!.trim().split(/ {2,}/)[4];
        expect(total).toBe(result.totalGoodputGbps === null ? "—" : result.totalGoodputGbps.toFixed(2));
        expect(result.totalGoodputGbps === null).toBe(result.messages.completed === 0);
      }
    }
    await page.fill("#editor", '{\n  "name": "x",\n}');
    await page.click("#run");
    expect(await page.evaluate(() => document.body.dataset.state)).toBe("error");
    expect(await page.textContent("#status")).toBe('The scenario is not valid JSON: line 3, column 1: expected a double-quoted property name, got "}"');
    expect(errors).toEqual([]);
    await page.close();
  });
});
