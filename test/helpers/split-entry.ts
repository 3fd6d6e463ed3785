// A traffic run split over threads with options the CLI does not take (test/split-run.test.ts
// bundles this and runs it in a process of its own: the bundle is what its workers start
// again). argv: scenario file, threads, the most device arena bytes one core instance holds.
// Writes the result to stdout, and to stderr what the first thread built: "holds H of N
// devices in I instances".
import { readFileSync } from "node:fs";
import { isMainThread } from "node:worker_threads";
import { runScenarioThreads } from "../../host/platform/run-threads.js";
import type { Cluster } from "../../host/scenario/cluster.js";

if (isMainThread) {
  const [file, threads, shared] = process.argv.slice(2);
  const sc = JSON.parse(readFileSync(file!, "utf8"));
  const onBuilt = (c: Cluster) => console.error(`holds ${c.contexts.filter((x) => x !== undefined).length} of ${c.contexts.length} devices in ${c.instances} instances`);
  runScenarioThreads(sc, Number(threads), { sharedInstanceBytes: Number(shared), onBuilt }).then(
    (r) => process.stdout.write(JSON.stringify(r)),
    (e) => { console.error(e); process.exit(1); });
}
