import { describe, it, expect } from "vitest";
import { resolveScenario } from "../host/scenario/scenario.js";
import { checkScenario, runScenario, type ScenarioInput } from "../host/scenario/run.js";
import { expandSweep, runSweep, SWEEP_RUNS_BOUND } from "../host/scenario/sweep.js";
import { clusterBytes, clusterHomes, deviceLayout, leastConfig, MEMORY_BOUND_BYTES } from "../host/scenario/cluster.js";
import { ConfigError, resolveConfig } from "../host/config.js";
import { Device } from "../host/device.js";
import { readSnapshot } from "../host/snapshot.js";
import { CoreInstance } from "../host/wasm.js";
import { coreModule } from "../host/platform/node.js";

// What a scenario run refuses before it makes anything, so that no valid input runs the host out
// of memory: a sweep of more runs than SWEEP_RUNS_BOUND (made one at a time, never all at once),
// devices that need more than MEMORY_BOUND_BYTES (sized by the core's own layout), an
// eventCapacity below what can be pending, messages larger than a device's HBM.

const pairs = (count: number, config: Record<string, number> = {}) => ({
  name: "bounds", devices: { count, config: { ports: 1, scaleUpPorts: 1, ...config } },
  traffic: { pattern: "pairs", messageBytes: 4096, messages: 1 },
});
const values = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
/** 4 keys of 64 values: 16,777,216 runs, every one a valid scenario. */
const hugeSweep = () => ({ ...pairs(2), sweep: { seed: values(64), "traffic.messages": values(64), "traffic.messageBytes": values(64), "traffic.flowsPerPair": values(64) } });

describe("a sweep", () => {
  it("counts its runs without making them, and makes run k when it is asked for, the last key fastest", () => {
    const sweep = expandSweep(hugeSweep(), { maxRuns: 64 ** 4 });
    expect(sweep.runs).toBe(16_777_216);
    const it = sweep[Symbol.iterator]();
    const first = [it.next().value!, it.next().value!];
    expect(first.map((c) => c.set)).toEqual([
      { seed: 1, "traffic.messages": 1, "traffic.messageBytes": 1, "traffic.flowsPerPair": 1 },
      { seed: 1, "traffic.messages": 1, "traffic.messageBytes": 1, "traffic.flowsPerPair": 2 },
    ]);
    expect(first[1]!.scenario).toMatchObject({ seed: 1, traffic: { messages: 1, messageBytes: 1, flowsPerPair: 2 } });
    expect(first[1]!.scenario.sweep).toBeUndefined();
    expect(Object.keys(first[1]!.set)).toEqual(["seed", "traffic.messages", "traffic.messageBytes", "traffic.flowsPerPair"]); // the table's columns
    for (let k = 2; k < 65; k++) it.next();
    // run 65 = (0, 0, 1, 1) in base 64
    expect(it.next().value!.set).toEqual({ seed: 1, "traffic.messages": 1, "traffic.messageBytes": 2, "traffic.flowsPerPair": 2 });
  });

  it(`refuses more than SWEEP_RUNS_BOUND (${SWEEP_RUNS_BOUND}) runs, saying how many it would make and how to allow them`, () => {
    expect(() => expandSweep(hugeSweep())).toThrow(ConfigError);
    expect(() => expandSweep(hugeSweep())).toThrow("scenario.sweep: would make 16777216 runs (64 x 64 x 64 x 64 values), more than the 10000 a sweep may make: sweep fewer values, or allow more (menic run --max-runs 16777216; maxRuns in the API)");
    const three = { ...pairs(2), sweep: { seed: [1, 2, 3] } };
    expect(() => expandSweep(three, { maxRuns: 2 })).toThrow(/^scenario\.sweep: would make 3 runs \(3 values\), more than the 2 /);
    expect(expandSweep(three, { maxRuns: 3 }).runs).toBe(3);
  });

  it("runSweep takes maxRuns: refused before the first run, or run to the end", async () => {
    const two = { ...pairs(2), sweep: { seed: [1, 2] } };
    let ran = 0;
    await expect(runSweep(coreModule(), two, { maxRuns: 1, onRun: () => ran++ })).rejects.toThrow(/would make 2 runs/);
    expect(ran).toBe(0);
    const runs = await runSweep(coreModule(), two, { maxRuns: 2 });
    expect(runs.map((r) => [r.set.seed, r.result.ended])).toEqual([[1, "finished"], [2, "finished"]]);
  });

  it("runSweep refuses a sweep with a run that cannot run before the first runs", async () => {
    const s = { ...pairs(2), sweep: { "devices.config.eventCapacity": [0, 16] } };
    let ran = 0;
    await expect(runSweep(coreModule(), s, { onRun: () => ran++ })).rejects.toThrow(/^scenario\.devices\.config\.eventCapacity: 16 is too few/);
    expect(ran).toBe(0);
  });
});

describe("the memory a scenario's devices need", () => {
  it("is sized by the core's own layout: the arena deviceLayout gives is the one a device of that config gets", async () => {
    for (const config of [{ engines: 1, hostMemBytes: 65536 }, { engines: 4, maxQps: 64, traceRingEntries: 256 }, {}]) {
      const device = await Device.create(new CoreInstance(coreModule()), config);
      expect(deviceLayout(coreModule(), resolveConfig(config)).arenaBytes).toBe(readSnapshot(device.save()).arena.length);
    }
  });

  it("refuses 65,536 devices before building one, naming devices.count and the figure", () => {
    const sc = pairs(65536);
    let err: Error | undefined;
    try { checkScenario(coreModule(), sc); } catch (e) { err = e as Error; }
    expect(err).toBeInstanceOf(ConfigError);
    const m = /^scenario\.devices\.count: 65536 devices need at least (\d+\.\d) GiB of memory \((\d+\.\d) MiB each, and the fabric\), more than the 16\.0 GiB a run may take/.exec(err!.message);
    expect(m, err!.message).not.toBeNull();
    // the figure: the arena less its host memory, and 64 KiB of host objects, per device; 2 KiB a link
    const resolved = resolveScenario(sc), cfg = resolveConfig(leastConfig(resolved));
    const need = clusterBytes(resolved, cfg, deviceLayout(coreModule(), cfg).arenaBytes);
    expect(need.perDevice).toBe(deviceLayout(coreModule(), cfg).arenaBytes - Number(cfg.get("hostMemBytes")) + 64 * 2 ** 10);
    expect(need.total).toBe(65536 * need.perDevice + 65536 * 2048);
    expect(Number(m![1])).toBe(Number((need.total / 2 ** 30).toFixed(1)));
    expect(need.total).toBeGreaterThan(MEMORY_BOUND_BYTES);
  });

  it("takes a larger bound when given one (RunOptions.maxMemoryBytes)", () => {
    const sc = pairs(4096);
    expect(() => checkScenario(coreModule(), sc)).toThrow(/^scenario\.devices\.count: 4096 devices need at least/);
    expect(checkScenario(coreModule(), sc, { maxMemoryBytes: 2 ** 40 }).devices.count).toBe(4096);
  });

  it("puts devices in one instance with their fabric only when their real arenas fit 2 GiB (256 devices of 9.4 MiB do not: two groups)", () => {
    const sc = resolveScenario(pairs(256, { hostMemBytes: 65536 }));
    const config = { ...leastConfig(sc), deviceId: 0 };
    expect(deviceLayout(coreModule(), resolveConfig(config)).arenaBytes * 256).toBeGreaterThan(2 ** 31);
    const homes = clusterHomes(coreModule(), sc, config);
    expect(homes.fabric).toBe(coreModule());
    expect(homes.instances).toBe(2);
    expect(homes.device(0)).toBeInstanceOf(CoreInstance);
    expect(homes.device(127)).toBe(homes.device(0));
    expect(homes.device(128)).not.toBe(homes.device(0));
    expect(homes.device(255)).toBe(homes.device(128));
    const eight = clusterHomes(coreModule(), resolveScenario(pairs(8)), leastConfig(resolveScenario(pairs(8))));
    expect(eight.fabric).toBeInstanceOf(CoreInstance);
    expect(eight.device(7)).toBe(eight.fabric);
  });

  it("gives a traffic scenario's devices the least host memory unless told: the fabric bench's 128 share one instance", () => {
    // npm run bench -- fabric's devices: 8 ports, timing mode, a permutation (bench/fabric.ts).
    // WAS: the default 16 MiB of host memory each, never touched (a traffic run keeps its rings
    // in HBM), made 128 arenas of 19 MiB, past 2 GiB: an instance each, 1.7 s to build
    const bench = (config: Record<string, number> = {}) => resolveScenario({
      name: "bench", transport: "metaroce", devices: { count: 128, config: { engines: 1, sramBytes: 4096, ports: 8, scaleUpPorts: 8, ...config } },
      fabric: { mode: "timing", topology: { kind: "leaf-spine", planes: 8, spines: 16, devicesPerLeaf: 16 } },
      traffic: { pattern: "permutation", messageBytes: 1 << 20, messages: 1 },
    });
    const least = leastConfig(bench());
    expect(least.hostMemBytes).toBe(65536);
    expect(deviceLayout(coreModule(), resolveConfig({ ...least, deviceId: 0 })).arenaBytes * 128).toBeLessThan(2 ** 29);
    expect(clusterHomes(coreModule(), bench(), least).fabric).toBeInstanceOf(CoreInstance);
    // a host memory the scenario gives is kept
    expect(leastConfig(bench({ hostMemBytes: 2 ** 24 })).hostMemBytes).toBe(2 ** 24);
    expect(clusterHomes(coreModule(), bench({ hostMemBytes: 2 ** 24 }), leastConfig(bench({ hostMemBytes: 2 ** 24 }))).fabric).toBe(coreModule());
  });
});

describe("a scenario's devices.config.eventCapacity", () => {
  it("is refused below the events its devices can have pending, with that figure; that figure itself runs", async () => {
    const bound = deviceLayout(coreModule(), resolveConfig({ ...leastConfig(resolveScenario(pairs(2))), eventCapacity: 0 })).eventBound;
    expect(bound).toBeGreaterThan(512); // a completion per HBM flow slot, at least
    await expect(runScenario(coreModule(), pairs(2, { eventCapacity: bound - 1 }) as ScenarioInput)).rejects.toThrow(
      `scenario.devices.config.eventCapacity: ${bound - 1} is too few, the event queue can overflow: these devices can have at least ${bound} events pending at once; give ${bound} or more, or 0 (the default) to size it so`);
    expect((await runScenario(coreModule(), pairs(2, { eventCapacity: bound }) as ScenarioInput)).ended).toBe("finished");
  });
});

describe("a message larger than a device's HBM", () => {
  it("is refused naming traffic.messageBytes, not the config's hbmBytes", async () => {
    const sc = { ...pairs(2), traffic: { pattern: "pairs", messageBytes: 2 ** 30, messages: 1 } };
    await expect(runScenario(coreModule(), sc as ScenarioInput)).rejects.toThrow(/^scenario\.traffic\.messageBytes: 1073741824 needs 1073872896 B of HBM per device \(the 1073741824 B region, its completion queue and send rings\), more than a device holds \(1073741824 B, the most hbmBytes allows\)$/);
  });
});
