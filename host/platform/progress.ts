// What a long run shows and how it stops, for every `menic` command that runs one: a progress
// line on stderr (simulated time, host speed, ETA) when stderr is a terminal and the run has
// taken more than a second, and Ctrl-C (SIGINT) asking the run to stop at its next step so
// that the command still prints and writes what was reached. A sweep's line counts its runs
// ("run 3/8 ...: "); its wall time and ETA are the whole sweep's, so they never go back when a
// run ends and the next begins. Node only.

import { formatTime } from "../units.js";
import { EXIT } from "./cli-support.js";

/** Wall time before the progress line first shows: short runs print nothing extra. */
export const PROGRESS_AFTER_MS = 1000;
/** The line is rewritten at most this often. */
const REDRAW_MS = 250;

export interface ProgressSample {
  /** simulated time reached */
  nowPs: number;
  /** the run's limit of simulated time */
  untilPs: number;
  /** what has been done, e.g. "messages 3/16" */
  detail?: string;
  /** the share of the work done (0..1) when the run knows it (messages completed of total) */
  done?: number;
  /** the host's speed since the start: a count of work (instructions, packet-hops) and its unit per second */
  work?: () => { count: number; unit: "MIPS" | "hops/s" };
}

/** Where a sweep is: run `index` (from 0) of `of`, begun `runWallS` seconds ago. */
export interface SweepPlace {
  index: number;
  of: number;
  runWallS: number;
}

export interface ProgressLine {
  /**
   * A sweep's run `index` (from 0) of `of` begins, `text` before the line ("run 3/8 {...}: "):
   * the simulated time and the host's speed are this run's (it has its own devices); the wall
   * time and the ETA stay the sweep's.
   */
  run(index: number, of: number, text: string): void;
  update(s: ProgressSample): void;
  /** the line says `text` and the wall time so far (runs on worker threads: which ended, how many are done) */
  note(text: string): void;
  /** erases the line (before the results are printed) */
  clear(): void;
}

/**
 * The progress line when `stream` is a terminal, else one that prints nothing. The ETA is the
 * sooner of the limit (at the simulated-time rate so far) and, when the share done is known,
 * the end of the work at its rate so far; "≤" because a run can end before its limit.
 */
export function progressLine(stream: NodeJS.WriteStream = process.stderr, now: () => number = () => performance.now()): ProgressLine {
  if (!stream.isTTY) return { run() {}, update() {}, note() {}, clear() {} };
  const start = now();
  let runStart = start, sim0 = 0, last = -Infinity, prefix = "", shown = false;
  let place: { index: number; of: number } | null = null;
  return {
    run(index, of, text) { place = { index, of }; prefix = text; runStart = now(); sim0 = -1; },
    update(s) {
      const t = now();
      if (sim0 < 0) sim0 = s.nowPs;
      if (t - start < PROGRESS_AFTER_MS || t - last < REDRAW_MS) return;
      last = t;
      shown = true;
      const sweep = place ? { ...place, runWallS: (t - runStart) / 1000 } : undefined;
      stream.write(`\r\x1b[K${prefix}${progressText(s, (t - start) / 1000, s.nowPs - sim0, sweep)}`);
    },
    note(text) {
      shown = true;
      stream.write(`\r\x1b[K${text}; wall ${((now() - start) / 1000).toFixed(1)} s`);
    },
    clear() {
      if (shown) stream.write("\r\x1b[K");
    },
  };
}

/**
 * The line's text: simulated time of the limit, what was done, the host's speed, wall time, ETA.
 * `wallS`: since the command began; `simRunPs`: simulated time this run has advanced while
 * watched. In a sweep (`sweep`), the speed and the run's own ETA are over this run's wall time,
 * and the ETA adds the runs after it at the mean wall time of the runs before ("~": the runs may
 * differ); alone, the ETA is "≤" (the run may end before its limit).
 */
export function progressText(s: ProgressSample, wallS: number, simRunPs: number, sweep?: SweepPlace): string {
  const runWallS = sweep ? sweep.runWallS : wallS;
  const parts = [`simulated ${formatTime(s.nowPs)} of ${formatTime(s.untilPs)}`];
  if (s.detail) parts.push(s.detail);
  if (s.work && runWallS > 0) {
    const { count, unit } = s.work();
    parts.push(unit === "MIPS" ? `${(count / runWallS / 1e6).toFixed(1)} MIPS` : `${formatCount(count / runWallS)} hops/s`);
  }
  parts.push(`wall ${wallS.toFixed(1)} s`);
  const byLimit = simRunPs > 0 ? ((s.untilPs - s.nowPs) / simRunPs) * runWallS : Infinity;
  const byWork = s.done !== undefined && s.done > 0 ? ((1 - s.done) / s.done) * runWallS : Infinity;
  const eta = Math.min(byLimit, byWork);
  if (!sweep) parts.push(`ETA ${Number.isFinite(eta) ? `≤ ${formatWall(eta)}` : "unknown"}`);
  else {
    // the runs after this one, each as long as the runs before took on average (the first: as this one will)
    const perRun = sweep.index > 0 ? (wallS - runWallS) / sweep.index : runWallS + eta;
    const total = eta + (sweep.of - sweep.index - 1) * perRun;
    parts.push(`ETA ${Number.isFinite(total) ? `~ ${formatWall(total)}` : "unknown"}`);
  }
  return parts.join(", ");
}

function formatCount(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} k` : n.toFixed(0);
}

/** Seconds of wall time as "42 s", "3 min 20 s", "5 h 12 min". */
export function formatWall(seconds: number): string {
  const s = Math.ceil(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 100 * 3600) return `${Math.floor(s / 3600)} h ${Math.ceil((s % 3600) / 60)} min`;
  return "more than 100 h";
}

export interface Interrupt {
  /** awaited between steps of a run: yields to the event loop (so a SIGINT is seen), then says whether to stop */
  shouldStop(): Promise<boolean>;
  /** whether Ctrl-C was pressed */
  readonly stopped: boolean;
  /** removes the SIGINT handler */
  dispose(): void;
}

/**
 * Catches Ctrl-C for the run that follows: the first asks it to stop at its next step (the
 * command then prints and writes what was reached and exits 130); a second quits at once.
 */
export function catchInterrupt(onQuit: () => never = () => process.exit(EXIT.stopped)): Interrupt {
  let stopped = false;
  const handler = () => {
    if (stopped) onQuit();
    stopped = true;
    process.stderr.write("\nmenic: stopping (Ctrl-C again to quit now)\n");
  };
  process.on("SIGINT", handler);
  return {
    shouldStop: () => new Promise((resolve) => setImmediate(() => resolve(stopped))),
    get stopped() { return stopped; },
    dispose: () => { process.off("SIGINT", handler); },
  };
}
