// Run observers (result.ts RunObserver) that are not a view of their own: Observers, which
// hands a run to several observers as one (the page: its live plots and its Perfetto trace),
// and TimelineRecorder, which takes a traffic result's timeline (RunOptions.timelinePs). No Node
// APIs: it runs in a browser tab as well.

import type { RunObserver, BuiltRun, GraphTrace, Timeline } from "./result.js";

/** Several observers of one run as one: each sees every call; samples come as often as the most frequent wants. */
export class Observers implements RunObserver {
  readonly intervalPs: number;
  constructor(private readonly all: RunObserver[]) {
    this.intervalPs = Math.min(...all.map((o) => o.intervalPs));
  }
  begin(run: BuiltRun): void { for (const o of this.all) o.begin(run); }
  posted(flow: number, wrId: number, atPs: number): void { for (const o of this.all) o.posted(flow, wrId, atPs); }
  completed(flow: number, wrId: number, atPs: number, status: string): void { for (const o of this.all) o.completed(flow, wrId, atPs, status); }
  sample(nowPs: number): void { for (const o of this.all) o.sample(nowPs); }
  graph(g: GraphTrace): void { for (const o of this.all) o.graph?.(g); }
}

/**
 * Takes a traffic run's {@link Timeline}: at each multiple of `intervalPs`, the payload bytes
 * placed over all flows. The run must stop at every multiple ({@link TimelineRecorder.nextPs}:
 * traffic.ts runFlows ends its chunks there); a sample between two is not one of its own.
 */
export class TimelineRecorder implements RunObserver {
  private readonly placed: number[] = [];
  private run: BuiltRun | null = null;
  /** `intervalPs`: a multiple of the run's window, so that the run can stop at each multiple of it */
  constructor(readonly intervalPs: number) {}
  begin(run: BuiltRun): void { this.run = run; }
  posted(): void {}
  completed(): void {}
  /** The next sample's time after `nowPs`. */
  nextPs(nowPs: number): number {
    return (Math.floor(nowPs / this.intervalPs) + 1) * this.intervalPs;
  }
  sample(nowPs: number): void {
    const due = (this.placed.length + 1) * this.intervalPs;
    if (nowPs < due) return;
    if (nowPs > due) throw new Error(`timeline: the run went on to ${nowPs} ps past its sample at ${due} ps`);
    this.placed.push(this.run!.flows.reduce((s, f) => s + f.placedBytes(), 0));
  }
  timeline(): Timeline {
    return { intervalPs: this.intervalPs, placedBytes: [...this.placed] };
  }
}
