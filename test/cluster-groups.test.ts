// Devices whose arenas do not fit one core instance are built in groups of instances, the fabric
// in one of its own (host/scenario/cluster.ts clusterHomes), and the host steps them: every
// figure of a run must be what one shared instance (the window loop in the core) and an
// instance per device give.
import { describe, it, expect } from "vitest";
import { coreModule } from "../host/platform/node.js";
import { runScenario, type ScenarioInput } from "../host/scenario/run.js";
import type { Cluster } from "../host/scenario/cluster.js";

/** The scenario's result as JSON, built in instances of at most `sharedInstanceBytes` of arenas (default: one), and how many instances that made. */
async function run(sc: ScenarioInput, sharedInstanceBytes?: number) {
  let built: Cluster | null = null;
  const r = await runScenario(coreModule(), sc, { onBuilt: (c) => { built = c; }, ...(sharedInstanceBytes !== undefined ? { sharedInstanceBytes } : {}) });
  const c = built as unknown as Cluster;
  return { json: JSON.stringify(r), instances: c.instances, inCore: c.runner.inCore, arena: c.contexts[1]!.device.handle - c.contexts[0]!.device.handle };
}

describe("devices in groups of instances", () => {
  it("a traffic with loss on a leaf/spine: one instance, groups of five, an instance each: the same result to the byte", async () => {
    const sc: ScenarioInput = {
      name: "groups", seed: 90211, until: "20ms", transport: "metaroce",
      devices: { count: 16, config: { engines: 1, ports: 4, scaleUpPorts: 4 } },
      fabric: { mode: "timing", topology: { kind: "leaf-spine", planes: 2, spines: 2, devicesPerLeaf: 4 } },
      traffic: { pattern: "permutation", messageBytes: 128 << 10, messages: 3, verbs: { WRITE: 2, READ: 1 } },
      faults: [{ kind: "loss", links: "fabric", random: 0.005 }],
    } as ScenarioInput;
    const one = await run(sc);
    expect(one).toMatchObject({ instances: 1, inCore: true });
    const fives = await run(sc, Math.floor(one.arena * 5.5));
    expect(fives).toMatchObject({ instances: 4, inCore: false });
    const each = await run(sc, 1);
    expect(each).toMatchObject({ instances: 16, inCore: false });
    expect(fives.json).toBe(one.json);
    expect(each.json).toBe(one.json);
    expect(JSON.parse(one.json).ended).toBe("finished");
  });

  it("a ring all-reduce in full mode, checked against the reference, in groups of three", async () => {
    const sc: ScenarioInput = {
      name: "groups-allreduce", seed: 90212, until: "50ms", transport: "rocev2",
      devices: { count: 7 }, fabric: { mode: "full", topology: { kind: "single-switch" } },
      collective: { op: "all-reduce", algorithm: "ring", sizes: [64 << 10], dtype: "f32", redop: "sum", engines: 4, check: true },
    } as ScenarioInput;
    const one = await run(sc);
    const threes = await run(sc, Math.floor(one.arena * 3.5));
    expect(one.instances).toBe(1);
    expect(threes.instances).toBe(3);
    expect(threes.json).toBe(one.json);
  });
});
