// A sweep's runs in worker threads (`menic run --jobs N`, docs/scale.md): each worker builds its
// own core instance and makes whole runs, one at a time, as the pool hands them out in the
// sweep's order; the results come back in that order whatever order they end in. A run depends
// only on its scenario and seed, so the table and JSON are a one-thread run's, byte for byte.
// Node only: the worker is this same module (the CLI bundle) started again in a thread.

import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { fileURLToPath } from "node:url";
import { coreModule } from "./node.js";
import { onWorkers } from "./worker-pool.js";
import { runScenario, type ScenarioInput, type ScenarioResult } from "../scenario/run.js";
import type { SweepCombo, SweepRun } from "../scenario/sweep.js";

/** What a worker is given: its run's scenario and the options every run of the sweep shares. */
interface Job { k: number; scenario: Record<string, unknown>; opts: PoolRunOptions }
/** What a worker gives back: run k's result, or the error that ended it. */
type Done = { k: number; result: ScenarioResult } | { k: number; error: string };

/** The run options a worker can be handed (plain data: no callbacks cross a thread). */
export interface PoolRunOptions { maxMemoryBytes?: number; timelinePs?: number }

const WORKER_TAG = "menic-sweep-worker";

/**
 * Makes the runs `combos` (each with its place k in the sweep) on `jobs` worker threads, and
 * gives them in the sweep's order. `stop` (one Int32) set non-zero stops the runs going on at
 * their next step, as Ctrl-C does a run: they end "stopped", no run is started after, and what
 * is given back ends at the first stopped run, as a one-thread sweep's does. `onDone` is told of
 * each run as it ends (in the order they end).
 */
export async function runSweepJobs(combos: readonly (SweepCombo & { k: number })[], jobs: number, opts: PoolRunOptions, stop: Int32Array,
  onDone: (k: number, ended: string) => void = () => {}): Promise<SweepRun[]> {
  const items: Job[] = combos.map((c) => ({ k: c.k, scenario: c.scenario, opts }));
  const sets = new Map(combos.map((c) => [c.k, c.set]));
  const byK = new Map<number, SweepRun>();
  let failure: Error | null = null, stopped = false;
  await onWorkers<Job, Done>(fileURLToPath(import.meta.url), { tag: WORKER_TAG, stop: stop.buffer }, jobs, items, (_, d) => {
    if ("error" in d) { failure ??= new Error(`run ${d.k} of the sweep: ${d.error}`); return; }
    byK.set(d.k, { set: sets.get(d.k)!, result: d.result });
    if (d.result.ended === "stopped") stopped = true;
    onDone(d.k, d.result.ended);
  }, (busy) =>
    // once stopped, no new run, except one when none was going on to end "stopped": the sweep
    // then says where it stopped, as a one-thread sweep does
    failure !== null || (Atomics.load(stop, 0) !== 0 && (stopped || busy > 0)));
  if (failure) throw failure;
  // in the sweep's order, up to its first stopped run (a one-thread sweep stops there)
  const out: SweepRun[] = [];
  for (const k of [...byK.keys()].sort((a, b) => a - b)) {
    out.push(byK.get(k)!);
    if (byK.get(k)!.result.ended === "stopped") break;
  }
  return out;
}

/** In a worker thread started by runSweepJobs: makes the runs it is handed, one at a time. */
function workerMain(): void {
  const stop = new Int32Array(workerData.stop as SharedArrayBuffer);
  const core = coreModule();
  parentPort!.on("message", async (job: Job) => {
    let done: Done;
    try {
      const result = await runScenario(core, job.scenario as ScenarioInput, { ...job.opts, shouldStop: () => Atomics.load(stop, 0) !== 0 });
      done = { k: job.k, result };
    } catch (e) {
      done = { k: job.k, error: e instanceof Error ? e.message : String(e) };
    }
    parentPort!.postMessage(done);
  });
}

if (!isMainThread && (workerData as { tag?: string } | null)?.tag === WORKER_TAG) workerMain();
