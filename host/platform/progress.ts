// What a long run shows and how it stops, for every `menic` command that runs one: a progress
// line on stderr (simulated time, host speed, ETA) when stderr is a terminal and the run has
// taken more than a second, and Ctrl-C (SIGINT) asking the run to stop at its next step so
// that the command still prints and writes what was reached. Node only.

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

export interface ProgressLine {
  /** text before the line (a sweep's run k of n); restarts the speed and ETA measurement */
  label(text: string): void;
  update(s: ProgressSample): void;
  /** erases the line (before the results are printed) */
  clear(): void;
}

/**
 * The progress line when `stream` is a terminal, else one that prints nothing. The ETA is the
 * sooner of the limit (at the simulated-time rate so far) and, when the share done is known,
 * the end of the work at its rate so far; "≤" because a run can end before its limit.
 */
export function progressLine(stream: NodeJS.WriteStream = process.stderr, now: () => number = () => performance.now()): ProgressLine {
  if (!stream.isTTY) return { label() {}, update() {}, clear() {} };
  const start = now();
  let t0 = start, sim0 = 0, last = -Infinity, prefix = "", shown = false;
  return {
    label(text) { prefix = text; t0 = now(); sim0 = -1; },
    update(s) {
      const t = now();
      if (sim0 < 0) sim0 = s.nowPs;
      if (t - start < PROGRESS_AFTER_MS || t - last < REDRAW_MS) return;
      last = t;
      shown = true;
      stream.write(`\r\x1b[K${prefix}${progressText(s, (t - t0) / 1000, s.nowPs - sim0)}`);
    },
    clear() {
      if (shown) stream.write("\r\x1b[K");
    },
  };
}

/** The line's text: simulated time of the limit, what was done, the host's speed, wall time, ETA. */
export function progressText(s: ProgressSample, wallS: number, simRunPs: number): string {
  const parts = [`simulated ${formatTime(s.nowPs)} of ${formatTime(s.untilPs)}`];
  if (s.detail) parts.push(s.detail);
  if (s.work && wallS > 0) {
    const { count, unit } = s.work();
    parts.push(unit === "MIPS" ? `${(count / wallS / 1e6).toFixed(1)} MIPS` : `${formatCount(count / wallS)} hops/s`);
  }
  parts.push(`wall ${wallS.toFixed(1)} s`);
  const byLimit = simRunPs > 0 ? ((s.untilPs - s.nowPs) / simRunPs) * wallS : Infinity;
  const byWork = s.done !== undefined && s.done > 0 ? ((1 - s.done) / s.done) * wallS : Infinity;
  const eta = Math.min(byLimit, byWork);
  parts.push(`ETA ${Number.isFinite(eta) ? `≤ ${formatWall(eta)}` : "unknown"}`);
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
