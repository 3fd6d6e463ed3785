// The front door of a scenario run: checks the scenario (plain data, scenario.ts) and hands it to
// what runs its kind — a traffic pattern (traffic.ts), one collective (collective.ts) or a
// sequence of them (sequence.ts). No Node APIs: it runs in a browser tab as well.

import type { Scenario, ScenarioInput } from "./scenario.js";
import { resolveScenario } from "./scenario.js";
import { checkCluster, leastConfig } from "./cluster.js";
import { runCollectiveScenario } from "./collective.js";
import { runCollectiveSequence } from "./sequence.js";
import { runTrafficScenario } from "./traffic.js";
import { TIMELINE_MIN_PS, type ScenarioResult, type RunOptions } from "./result.js";
import { CsvRecorder } from "./csv.js";
import { Observers } from "./observers.js";

// what a run takes and gives is result.ts's; these names have always been importable from here
export { DEVICE_DROP_COUNTERS, METAROCE_COUNTERS, type MetaroceCounts } from "./counters.js";
export type { FlowResult, RunEnd, ScenarioResult, PortCounts, FabricCounts, MessageCounts, PathSummary, BuiltRun, ObservedFlow, RunObserver, GraphTrace, RunOptions, CollectiveRow, CollectiveReport, Timeline, CsvOptions, CsvFile, CsvSink } from "./result.js";
export type { Percentiles } from "./counters.js";
export { trafficFlows } from "./traffic.js";
export type { ScenarioInput } from "./scenario.js";

/**
 * What {@link runScenario} refuses before it makes anything (flows, programs, devices): a bad
 * field ({@link resolveScenario}), and devices that cannot fit in `maxMemoryBytes` or whose
 * eventCapacity can overflow (host/scenario/cluster.ts checkCluster). Throws ConfigError; gives
 * the scenario resolved.
 */
export function checkScenario(coreModule: WebAssembly.Module, input: unknown, opts: Pick<RunOptions, "maxMemoryBytes"> = {}): Scenario {
  const sc = resolveScenario(input);
  checkCluster(coreModule, sc, leastConfig(sc), opts.maxMemoryBytes, true);
  return sc;
}

/**
 * Builds and runs a scenario: devices on one fabric, QP pairs posting messages (WRITE,
 * WRITE_WITH_IMM, SEND, READ) in its traffic pattern or open-loop workload, or a collective the
 * engines run (with that traffic beside it, when it has both), its faults; measures what it did.
 * @param coreModule the compiled core (`await coreModule()`)
 * @param input the scenario (schemas/scenario.schema.json; typed as {@link ScenarioInput}, so that
 *   a misspelt field fails to compile; parsed JSON is `any` and passes); checked by
 *   {@link resolveScenario} first, which throws ConfigError naming a bad field
 * @param opts progress, stopping, observers
 */
export async function runScenario(coreModule: WebAssembly.Module, input: ScenarioInput, opts: RunOptions = {}): Promise<ScenarioResult> {
  const sc = checkScenario(coreModule, input, opts);
  if (opts.timelinePs !== undefined) {
    if (!(Number.isSafeInteger(opts.timelinePs) && opts.timelinePs >= TIMELINE_MIN_PS)) throw new RangeError(`timelinePs must be an integer number of ps, at least ${TIMELINE_MIN_PS} (1 ns), got ${opts.timelinePs}`);
    if (sc.collective || sc.collectives) throw new RangeError("timelinePs: a timeline samples a traffic scenario's bytes placed; this scenario runs a collective");
  }
  if (opts.partition) {
    if (sc.collective || sc.collectives) throw new RangeError("a run split over threads is a traffic scenario's; this scenario runs a collective");
    if (opts.observer || opts.csv || opts.timelinePs !== undefined) throw new RangeError("a run split over threads takes no observer, trace, timeline or CSV recording (each thread sees only its own devices)");
  }
  // a CSV recording is one more observer of the run
  const csv = opts.csv ? new CsvRecorder(opts.csv) : null;
  const observer = csv && opts.observer ? new Observers([opts.observer, csv]) : csv ?? opts.observer;
  const o: RunOptions = { ...opts, ...(observer ? { observer } : {}) };
  try {
    if (sc.collective) return await runCollectiveScenario(coreModule, sc, o);
    if (sc.collectives) return await runCollectiveSequence(coreModule, sc, o);
    return await runTrafficScenario(coreModule, sc, o);
  } finally {
    csv?.close();
  }
}
