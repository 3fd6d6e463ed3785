// One traffic run split over worker threads (`menic run --threads N`, docs/scale.md): this
// thread and N - 1 workers each build their own devices and the whole fabric and run their
// part of it (host/fabric/partition.ts); this one reports the run, the same bytes as on one
// thread. Node only: the workers are this same module (the CLI bundle, or a bench's) started
// again.

import { isMainThread, parentPort, workerData, Worker } from "node:worker_threads";
import { fileURLToPath } from "node:url";
import { coreModule } from "./node.js";
import { runScenario, type ScenarioInput, type ScenarioResult } from "../scenario/run.js";
import type { RunOptions } from "../scenario/result.js";
import { makePartitions, abortPartitions, Partition, PartitionAborted, type PartitionShared } from "../fabric/partition.js";

const WORKER_TAG = "menic-run-thread";

/** The run options a worker is handed (plain data: no callbacks cross a thread). */
export interface ThreadRunOptions { maxMemoryBytes?: number; windowPs?: number; sharedInstanceBytes?: number }

/** What a worker is started with. */
interface Start { tag: string; index: number; shared: PartitionShared; scenario: unknown; opts: ThreadRunOptions }

/**
 * Runs the traffic scenario `scenario` split over `threads` threads (this one and threads - 1
 * workers); resolves with its result. `opts` beyond ThreadRunOptions (progress, stop, the
 * cluster built: this thread's devices only) are this thread's. One thread is runScenario itself.
 */
export async function runScenarioThreads(scenario: ScenarioInput, threads: number, opts: ThreadRunOptions & Pick<RunOptions, "onProgress" | "shouldStop" | "onStart" | "onBuilt"> = {}): Promise<ScenarioResult> {
  if (threads === 1) return runScenario(coreModule(), scenario, opts);
  const shared = makePartitions(threads);
  const { maxMemoryBytes, windowPs, sharedInstanceBytes } = opts;
  const plain: ThreadRunOptions = JSON.parse(JSON.stringify({ maxMemoryBytes, windowPs, sharedInstanceBytes }));
  const failures: string[] = [];
  const workers = Array.from({ length: threads - 1 }, (_, i) => {
    const w = new Worker(fileURLToPath(import.meta.url), { workerData: { tag: WORKER_TAG, index: i + 1, shared, scenario, opts: plain } satisfies Start, execArgv: workerExecArgv() });
    let ready = () => {};
    const started = new Promise<void>((resolve) => (ready = resolve));
    const done = new Promise<void>((resolve) => {
      w.on("message", (m: { started?: boolean; error?: string }) => {
        if (m.started) ready();
        if (m.error) failures.push(m.error);
      });
      w.on("error", (e) => { failures.push(e.message); abortPartitions(shared); ready(); });
      w.on("exit", () => { ready(); resolve(); });
    });
    return { w, started, done };
  });
  // a worker starting up needs this thread's event loop, which the run's meetings block
  await Promise.all(workers.map((w) => w.started));
  try {
    return await runScenario(coreModule(), scenario, { ...opts, partition: new Partition(0, shared) });
  } catch (e) {
    abortPartitions(shared);
    await Promise.all(workers.map((w) => w.done));
    // a worker's own failure says more than this thread's "another thread failed"
    if (e instanceof PartitionAborted && failures.length) throw new Error(failures[0]);
    throw e;
  } finally {
    await Promise.all(workers.map((w) => w.done));
  }
}

/** This process's Node options a worker takes too: not those of a script given on the command line (`node --input-type=module -e ...`, as a bench's child is). */
function workerExecArgv(): string[] {
  const out: string[] = [];
  for (let i = 0; i < process.execArgv.length; i++) {
    const a = process.execArgv[i]!;
    if (["-e", "--eval", "-p", "--print"].includes(a)) { i++; continue; }
    if (a.startsWith("--input-type") || a.startsWith("--eval=") || a.startsWith("--print=")) continue;
    out.push(a);
  }
  return out;
}

/** In a worker thread started by runScenarioThreads: its part of the run. */
async function workerMain(start: Start): Promise<void> {
  parentPort!.postMessage({ started: true });
  try {
    await runScenario(coreModule(), start.scenario as ScenarioInput, { ...start.opts, partition: new Partition(start.index, start.shared) });
    parentPort!.postMessage({});
  } catch (e) {
    abortPartitions(start.shared);
    parentPort!.postMessage(e instanceof PartitionAborted ? {} : { error: e instanceof Error ? e.message : String(e) });
  }
}

if (!isMainThread && (workerData as { tag?: string } | null)?.tag === WORKER_TAG) void workerMain(workerData as Start);
