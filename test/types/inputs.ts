// Type-level tests of what a user writes (compiled by `npm run typecheck`, never run): the
// inputs are typed from their one source (ScenarioInput and ClusterInput from
// schemas/scenario.schema.json, DeviceConfig from layouts/config.json), so a misspelt field is a
// compile error. Each `@ts-expect-error` below fails the typecheck when its line compiles.
import { runScenario, type ScenarioInput } from "../../host/scenario/run.js";
import { Context } from "../../host/verbs.js";
import { openDevice, openCluster } from "../../host/index.js";

declare const core: WebAssembly.Module;

export async function scenarios(): Promise<void> {
  // a scenario as the schema allows it: only devices is required, every default left out
  const ok: ScenarioInput = { devices: { count: 2 }, traffic: { pattern: "pairs" } };
  await runScenario(core, ok);
  await runScenario(core, { devices: { count: 2, config: { ports: 4 } }, fabric: { topology: { kind: "leaf-spine", planes: 2 } }, collective: { op: "all-reduce" } });
  // @ts-expect-error misspelt top-level field (traffic)
  await runScenario(core, { devices: { count: 2 }, trafic: { pattern: "pairs" } });
  // @ts-expect-error misspelt nested field (messageBytes)
  await runScenario(core, { devices: { count: 2 }, traffic: { pattern: "pairs", mesageBytes: 4096 } });
  // @ts-expect-error a value outside the schema's enum
  await runScenario(core, { devices: { count: 2 }, traffic: { pattern: "ring" } });
  // @ts-expect-error misspelt device config field (engines)
  await runScenario(core, { devices: { count: 2, config: { enignes: 4 } }, traffic: { pattern: "pairs" } });
  // @ts-expect-error a config field the scenario sets itself
  await runScenario(core, { devices: { count: 2, config: { maxQps: 8 } }, traffic: { pattern: "pairs" } });
  // @ts-expect-error devices is required
  await runScenario(core, { traffic: { pattern: "pairs" } });
}

export async function devices(): Promise<void> {
  await openDevice({ engines: 2, hbmBytes: 1n << 20n });
  await Context.open(core, { maxQps: 16 });
  // @ts-expect-error misspelt config field (engines)
  await openDevice({ engnes: 2 });
  // @ts-expect-error misspelt config field (hbmBytes)
  await Context.open(core, { hbmbytes: 1 << 20 });
}

export async function clusters(): Promise<void> {
  const cluster = await openCluster({ devices: { count: 2, config: { maxQps: 64 } }, transport: "metaroce", fabric: { mode: "timing", topology: { kind: "leaf-spine", planes: 2 } }, faults: [{ kind: "loss", random: 0.01 }] });
  cluster.run(cluster.nowPs + 1000n);
  // @ts-expect-error misspelt fabric field (mode)
  await openCluster({ devices: { count: 2 }, fabric: { mdoe: "timing" } });
  // @ts-expect-error a config field the cluster sets from the device's number
  await openCluster({ devices: { count: 2, config: { deviceId: 1 } } });
  // @ts-expect-error traffic is a scenario's, not a cluster's
  await openCluster({ devices: { count: 2 }, traffic: { pattern: "pairs" } });
  // @ts-expect-error a fault of a kind the schema does not have
  await openCluster({ devices: { count: 2 }, faults: [{ kind: "flap", at: 0 }] });
}
