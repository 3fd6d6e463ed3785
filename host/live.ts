// What a live view of a run plots (the page, web/): series sampled as simulated time passes,
// computed here, platform-free, so a Node run of the same scenario gives the very same numbers
// (test/web-page.test.ts compares them). A sampler declares its plots once (`plots`), then
// gives one frame per sample: the time, and per plot one value per series.
//  - firmware (FirmwareSampler): engine occupancy (the share of each interval an engine ran,
//    not asleep), HBM bandwidth by client;
//  - scenarios (ScenarioSampler, a RunObserver): goodput per flow and in total, HBM bandwidth
//    summed over the devices, and with the MetaRoCE-like transport the congestion window of
//    every path of the sending devices (their spread when there are too many to draw);
//  - collective scenarios (ClusterEngineSampler): each device's engine occupancy, HBM bandwidth;
//  - and what to mark on them (faultMarkers): a plane or links down and up again.

import type { Device } from "./device.js";
import type { RunObserver, BuiltRun } from "./scenario/run.js";
import type { Fault } from "./scenario/scenario.js";
// the page fans a run out to its plots and its trace with it; it has always been importable from here
export { Observers } from "./scenario/observers.js";

export interface PlotSpec {
  id: string;
  title: string;
  unit: string;
  series: string[];
}

export interface LiveFrame {
  tPs: number;
  /** per plot id, one value per series */
  values: Record<string, number[]>;
}

/**
 * A stretch of plotted time to mark on every plot: a fault (a plane or links down from `fromPs`
 * until `toPs`, null: to the run's end) or where a sweep's next run begins (`toPs` = `fromPs`).
 */
export interface PlotMarker {
  kind: "fault" | "run";
  label: string;
  fromPs: number;
  toPs: number | null;
}

/** The outages among `faults` (a plane or links down, then up) as markers, their times moved by `offsetPs` (the plotted time of the cluster's time 0). */
export function faultMarkers(faults: readonly Fault[], offsetPs = 0): PlotMarker[] {
  return faults.flatMap((f): PlotMarker[] => {
    if (f.kind === "loss") return []; // over the whole run: nothing to mark in time
    const what = f.kind === "plane-down" ? `plane ${f.plane}` : f.links === "all" ? "every link" : f.links === "fabric" ? "the fabric links" : `link${f.links.length === 1 ? "" : "s"} ${f.links.join(", ")}`;
    return [{ kind: "fault", label: `${what} down`, fromPs: offsetPs + f.atPs, toPs: f.untilPs === undefined ? null : offsetPs + f.untilPs }];
  });
}

/** Paths beyond this many get min / median / max lines instead of one line each. */
export const PATH_LINES_MAX = 16;
/** Engines beyond this many get min / mean / max occupancy instead of one line each. */
export const ENGINE_LINES_MAX = 16;

const HBM_PLOT = (): PlotSpec => ({ id: "hbm", title: "HBM bandwidth", unit: "Gb/s", series: ["NIC DMA", "reduce", "compute"] });

/** Gb/s of `bytes` over `dtPs` ps. */
const gbps = (bytes: number, dtPs: number) => (bytes * 8000) / dtPs;

function spread(v: number[]): number[] {
  const s = [...v].sort((a, b) => a - b);
  return s.length === 0 ? [0, 0, 0] : [s[0]!, s[(s.length - 1) >> 1]!, s[s.length - 1]!];
}

/** HBM bytes served per client, summed over devices, as a running total with rates over the last interval. */
class HbmRate {
  private last = [0, 0, 0];
  rates(devices: readonly Device[], dtPs: number): number[] {
    const now = [0, 0, 0];
    for (const d of devices) {
      const s = d.hbmServed();
      now[0]! += s.nic; now[1]! += s.reduce; now[2]! += s.compute;
    }
    const out = now.map((v, k) => gbps(v - this.last[k]!, dtPs));
    this.last = now;
    return out;
  }
}

/** The occupancy of one device's engines since it was made: the share of an interval each ran (its clock advanced, less its time asleep), in %. */
class EngineBusy {
  private last: number[];
  private readonly psPerCycle: number;

  constructor(private readonly dev: Device) {
    this.psPerCycle = 1e9 / Number(dev.config.get("engineClockKhz"));
    this.last = new Array<number>(dev.engines).fill(0);
  }

  /** Time an engine has spent running (its clock less its time asleep), ps. */
  private busyPs(i: number): number {
    const e = this.dev.engine(i);
    return e.cycles * this.psPerCycle - e.sleepPs;
  }

  /** Per engine, the share of the `dtPs` since the last call it ran, in %. */
  occupancy(dtPs: number): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.dev.engines; i++) {
      const b = this.busyPs(i);
      // an engine's clock may pass the interval's end by less than an instruction: at most 100%
      out.push(Math.min(100, Math.max(0, (100 * (b - this.last[i]!)) / dtPs)));
      this.last[i] = b;
    }
    return out;
  }
}

/** min, mean, max of `v` */
const minMeanMax = (v: number[]): number[] => {
  const [lo, , hi] = spread(v);
  return [lo!, v.reduce((s, x) => s + x, 0) / v.length, hi!];
};

/** A firmware run's plots: each engine's occupancy in the interval just ended, and HBM bandwidth. */
export class FirmwareSampler {
  readonly plots: PlotSpec[];
  private lastPs = 0;
  private readonly busy: EngineBusy;
  private readonly hbm = new HbmRate();

  constructor(private readonly dev: Device) {
    const n = dev.engines;
    this.busy = new EngineBusy(dev);
    const series = n <= ENGINE_LINES_MAX ? Array.from({ length: n }, (_, i) => `engine ${i}`) : ["min", "mean", "max"];
    this.plots = [{ id: "occupancy", title: "Engine occupancy", unit: "%", series }, HBM_PLOT()];
  }

  /** The frame for the interval from the last sample to `nowPs`; null when no time passed. */
  sample(nowPs: number): LiveFrame | null {
    const dt = nowPs - this.lastPs;
    if (dt <= 0) return null;
    const busy = this.busy.occupancy(dt);
    const occupancy = busy.length <= ENGINE_LINES_MAX ? busy : minMeanMax(busy);
    const frame = { tPs: nowPs, values: { occupancy, hbm: this.hbm.rates([this.dev], dt) } };
    this.lastPs = nowPs;
    return frame;
  }
}

/**
 * A collective scenario's plots (its engines run the graph executor): the occupancy of each
 * device's engines (their mean; min / mean / max over the devices when there are more than
 * ENGINE_LINES_MAX) and HBM bandwidth. Each size of a collective runs on devices built anew:
 * `attach` them (RunOptions.onBuilt), `sample` as the run goes (RunOptions.onProgress, with the
 * run's time); the plots' time goes on from where the last size's run ended.
 */
export class ClusterEngineSampler {
  plots: PlotSpec[] = [];
  readonly frames: LiveFrame[] = [];
  private devices: readonly Device[] = [];
  private busy: EngineBusy[] = [];
  private hbm = new HbmRate();
  /** the plotted time where the attached devices' time 0 is */
  private offsetPs = 0;
  private lastPs = 0;

  /** `onFrame` sees each frame as it is taken (the page posts it to the tab). */
  constructor(private readonly onFrame?: (f: LiveFrame) => void) {}

  /** The plotted time where the attached devices' time 0 is (a collective's next size goes on from where the last one's run ended). */
  get timeZeroPs(): number {
    return this.offsetPs;
  }

  attach(devices: readonly Device[]): void {
    this.offsetPs += this.lastPs;
    this.lastPs = 0;
    this.devices = devices;
    this.busy = devices.map((d) => new EngineBusy(d));
    this.hbm = new HbmRate();
    if (this.plots.length === 0) {
      const series = devices.length <= ENGINE_LINES_MAX ? devices.map((_, d) => `device ${d}`) : ["min", "mean", "max"];
      this.plots = [{ id: "occupancy", title: `Engine occupancy (mean over each device's ${devices[0]?.engines ?? 0} engines)`, unit: "%", series }, HBM_PLOT()];
    }
  }

  /** Every engine's state, device after device. */
  states(): string[] {
    return this.devices.flatMap((d) => Array.from({ length: d.engines }, (_, i) => d.engine(i).state as string));
  }

  /** Engines per device of the devices attached (0 before). */
  get engines(): number {
    return this.devices[0]?.engines ?? 0;
  }

  /** Devices attached. */
  get deviceCount(): number {
    return this.devices.length;
  }

  /** Takes the frame for the interval from the last sample to `nowPs` (the attached devices' time). */
  sample(nowPs: number): void {
    const dt = nowPs - this.lastPs;
    if (dt <= 0) return;
    const perDevice = this.busy.map((b) => {
      const v = b.occupancy(dt);
      return v.reduce((a, x) => a + x, 0) / Math.max(1, v.length);
    });
    const occupancy = perDevice.length <= ENGINE_LINES_MAX ? perDevice : minMeanMax(perDevice);
    const frame = { tPs: this.offsetPs + nowPs, values: { occupancy, hbm: this.hbm.rates(this.devices, dt) } };
    this.frames.push(frame);
    this.onFrame?.(frame);
    this.lastPs = nowPs;
  }
}

/** A scenario run's plots, sampled as the run goes (pass it as RunOptions.observer, or fan out to it). */
export class ScenarioSampler implements RunObserver {
  plots: PlotSpec[] = [];
  readonly frames: LiveFrame[] = [];
  private run: BuiltRun | null = null;
  private lastPs = 0;
  private placed: number[] = [];
  private readonly hbm = new HbmRate();
  /** sending devices whose paths are plotted */
  private pathDevices: number[] = [];
  private pathLines = false;

  /** `onFrame` sees each frame as it is taken (the page posts it to the tab). */
  constructor(readonly intervalPs: number, private readonly onFrame?: (f: LiveFrame) => void) {
    if (!(intervalPs >= 1000)) throw new RangeError(`sample interval must be at least 1 ns, got ${intervalPs} ps`);
  }

  begin(run: BuiltRun): void {
    this.run = run;
    this.placed = run.flows.map(() => 0);
    const flows = run.flows.map((f, i) => `flow ${i}: ${f.src}→${f.dst}`);
    this.plots = [{ id: "goodput", title: "Goodput", unit: "Gb/s", series: [...flows, "total"] }, HBM_PLOT()];
    if (run.transport === "metaroce") {
      this.pathDevices = [...new Set(run.flows.map((f) => f.src))].sort((a, b) => a - b);
      const names = this.pathDevices.flatMap((d) => run.devices[d]!.metarocePaths().map((p) => `dev ${d}→${p.peer} path ${p.path}`));
      this.pathLines = names.length <= PATH_LINES_MAX;
      this.plots.push({ id: "cwnd", title: "Congestion window per path", unit: "KB", series: this.pathLines ? names : ["min", "median", "max"] });
    }
  }

  posted(): void {}
  completed(): void {}

  sample(nowPs: number): void {
    const run = this.run!;
    const dt = nowPs - this.lastPs;
    if (dt <= 0) return;
    const goodput = run.flows.map((f, i) => {
      const placed = f.placedBytes(), g = gbps(placed - this.placed[i]!, dt);
      this.placed[i] = placed;
      return g;
    });
    goodput.push(goodput.reduce((s, x) => s + x, 0));
    const values: Record<string, number[]> = { goodput, hbm: this.hbm.rates(run.devices, dt) };
    if (run.transport === "metaroce") {
      const cwnd = this.pathDevices.flatMap((d) => run.devices[d]!.metarocePaths().map((p) => p.cwndBytes / 1000));
      values.cwnd = this.pathLines ? cwnd : spread(cwnd);
    }
    const frame = { tPs: nowPs, values };
    this.frames.push(frame);
    this.onFrame?.(frame);
    this.lastPs = nowPs;
  }
}
