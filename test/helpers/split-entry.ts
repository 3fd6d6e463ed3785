// A traffic run split over threads with options the CLI does not take (test/split-run.test.ts
// bundles this and runs it in a process of its own: the bundle is what its workers start
// again). argv: scenario file, threads, the most device arena bytes one core instance holds.
import { readFileSync } from "node:fs";
import { isMainThread } from "node:worker_threads";
import { runScenarioThreads } from "../../host/platform/run-threads.js";

if (isMainThread) {
  const [file, threads, shared] = process.argv.slice(2);
  const sc = JSON.parse(readFileSync(file!, "utf8"));
  runScenarioThreads(sc, Number(threads), { sharedInstanceBytes: Number(shared) }).then(
    (r) => process.stdout.write(JSON.stringify(r)),
    (e) => { console.error(e); process.exit(1); });
}
