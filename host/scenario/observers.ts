// Run observers (result.ts RunObserver) that are not a view of their own: Observers, which
// hands a run to several observers as one (the page: its live plots and its Perfetto trace).
// No Node APIs: it runs in a browser tab as well.

import type { RunObserver, BuiltRun, GraphTrace } from "./result.js";

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
