import { describe, it, expect } from "vitest";
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { resolveScenario, inlineGraphFiles } from "../host/scenario/scenario.js";
import { inlineWorkloadFiles } from "../host/scenario/workload.js";
import { applySet, parsePath } from "../host/scenario/overrides.js";
import { dottedPath } from "../host/scenario/schema-errors.js";
import { ConfigError } from "../host/config.js";
import { FABRIC_DEFAULTS } from "../host/fabric/config.js";
import { HOST_LINK_DEFAULT, FABRIC_LINK_DEFAULT, SUPER_LINK_DEFAULT } from "../host/fabric/topology.js";
import { parseTime } from "../host/units.js";

// The scenario schema (schemas/scenario.schema.json) is the one description of a scenario: the
// validator host/scenario/scenario.ts runs is generated from it, its defaults are the ones a run
// uses, every field says what it is, and an invalid field is refused with its path.

const schema = JSON.parse(readFileSync("schemas/scenario.schema.json", "utf8"));
const EXAMPLES = readdirSync("examples/scenarios").filter((f) => f.endsWith(".json")).sort();
const minimal = () => ({ devices: { count: 2 }, traffic: { pattern: "pairs" } });

describe("the scenario schema", () => {
  it("is what host/generated/scenario-validate.js was generated from (regenerate: npm run gen:schema)", () => {
    execFileSync("node", ["scripts/gen-schema.mjs", "--check"], { encoding: "utf8", stdio: "pipe" });
  });

  it("describes every field", () => {
    const undescribed: string[] = [];
    const walk = (s: Record<string, unknown>, at: string) => {
      for (const [k, p] of Object.entries((s.properties ?? {}) as Record<string, Record<string, unknown>>)) {
        // a $ref (#/$defs/time, or a scenario field the cluster's refers to) may carry the description
        const ref = typeof p.$ref === "string" ? p.$ref.slice(2).split("/").reduce((o: Record<string, any>, k: string) => o[k], schema) : undefined;
        if (!p.description && !ref?.description) undescribed.push(`${at}.${k}`);
        walk(p, `${at}.${k}`);
      }
      for (const [i, b] of ((s.oneOf ?? []) as Record<string, unknown>[]).entries()) walk(b, `${at}.oneOf[${i}]`);
      if (s.items) walk(s.items as Record<string, unknown>, `${at}[]`);
    };
    walk(schema, "scenario");
    for (const [name, d] of Object.entries(schema.$defs as Record<string, Record<string, unknown>>)) walk(d, `$defs.${name}`);
    expect(undescribed).toEqual([]);
  });

  it("states the fabric's own defaults (host/fabric/config.ts, topology.ts)", () => {
    const p = schema.properties.fabric.properties;
    const link = (l: { gbps: number; latency: string }) => ({ gbps: l.gbps, latencyPs: Number(parseTime(l.latency)) });
    expect(link(p.hostLink.default)).toEqual(HOST_LINK_DEFAULT);
    expect(link(p.fabricLink.default)).toEqual(FABRIC_LINK_DEFAULT);
    expect(link(p.superLink.default)).toEqual(SUPER_LINK_DEFAULT);
    const sw = p.switch.properties;
    const d = FABRIC_DEFAULTS.switch;
    expect(Number(parseTime(sw.latency.default))).toBe(d.latencyPs);
    expect([sw.bufferBytesPerPort.default, sw.portCapFraction.default, sw.portCapBytes.default ?? Infinity]).toEqual([d.bufferBytesPerPort, d.portCapFraction, d.portCapBytes]);
    const ecn = sw.ecn.properties, pfc = sw.pfc.properties;
    expect({ enabled: ecn.enabled.default, kminBytes: ecn.kminBytes.default, kmaxBytes: ecn.kmaxBytes.default, pmax: ecn.pmax.default }).toEqual(d.ecn);
    expect({ enabled: pfc.enabled.default, xoffBytes: pfc.xoffBytes.default, xonBytes: pfc.xonBytes.default }).toEqual(d.pfc);
    // and a run gets them: the resolved scenario carries them as the fabric options
    expect(resolveScenario(minimal()).fabric).toEqual({
      mode: "full", topology: { kind: "single-switch" }, hostLink: HOST_LINK_DEFAULT, fabricLink: FABRIC_LINK_DEFAULT, superLink: SUPER_LINK_DEFAULT,
      switch: { latencyPs: d.latencyPs, bufferBytesPerPort: d.bufferBytesPerPort, portCapFraction: d.portCapFraction, ecn: d.ecn, pfc: d.pfc },
    });
  });

  it.each(EXAMPLES)("examples/scenarios/%s is valid and names the schema (editor completion)", (f) => {
    const s = JSON.parse(readFileSync(`examples/scenarios/${f}`, "utf8"));
    expect(s.$schema).toBe("../../schemas/scenario.schema.json");
    // a collective's graph file and a workload's size file are relative to the scenario file, as menic run reads them
    const near = (g: string) => readFileSync(`examples/scenarios/${g}`, "utf8");
    expect(() => resolveScenario(inlineWorkloadFiles(inlineGraphFiles(s, near), near))).not.toThrow();
  });

  it("fills defaults into a copy, not into the caller's object", () => {
    const input = minimal();
    const s = resolveScenario(input);
    expect(input).toEqual(minimal());
    expect([s.name, s.seed, s.untilPs, s.traffic.messageBytes, s.traffic.messages, s.traffic.incastSenders, s.faults]).toEqual(["scenario", 1, 1e12, 1 << 20, 1, 1, []]);
    const ls = resolveScenario({ ...minimal(), devices: { count: 40 }, fabric: { topology: { kind: "leaf-spine", planes: 2 } }, faults: [{ kind: "plane-down", plane: 1, at: "2.5us", until: 4_000_000 }] });
    expect(ls.fabric.topology).toEqual({ kind: "leaf-spine", planes: 2, spines: 1, devicesPerLeaf: 16 });
    expect(ls.faults).toEqual([{ kind: "plane-down", plane: 1, atPs: 2_500_000, untilPs: 4_000_000 }]);
    // three tiers: 100 devices under leaves of 16 are 7 leaves, 2 pods of 4
    const tt = resolveScenario({ ...minimal(), devices: { count: 100 }, fabric: { topology: { kind: "three-tier", leavesPerPod: 4, spinesPerPod: 2, superSpines: 3 } } });
    expect(tt.fabric.topology).toEqual({ kind: "three-tier", planes: 1, devicesPerLeaf: 16, leavesPerPod: 4, spinesPerPod: 2, superSpines: 3, pods: 2 });
    expect(tt.fabric.superLink).toEqual({ gbps: 800, latencyPs: 1_100_000 });
    expect(resolveScenario({ ...minimal(), fabric: { topology: { kind: "fat-tree", k: 4 } } }).fabric.topology).toEqual({ kind: "fat-tree", k: 4, planes: 1 });
  });
});

describe("an invalid scenario is refused with the field's path", () => {
  const bad = (extra: Record<string, unknown>) => ({ ...minimal(), ...extra });
  it.each([
    [bad({ fabric: { switch: { ecn: { kmin: 1 } } } }), "scenario.fabric.switch.ecn.kmin: unknown field (known: enabled, kminBytes, kmaxBytes, pmax)"],
    [bad({ devices: {} }), "scenario.devices.count: is required (must be an integer in [1, 65536])"],
    [bad({ devices: { count: 2.5 } }), "scenario.devices.count: must be an integer in [1, 65536], got 2.5"],
    [bad({ fabric: { mode: "fast" } }), 'scenario.fabric.mode: must be one of full, timing, got "fast"'],
    [bad({ fabric: { topology: { kind: "torus" } } }), 'scenario.fabric.topology.kind: must be one of single-switch, leaf-spine, three-tier, fat-tree, got "torus"'],
    [bad({ fabric: { topology: { kind: "single-switch", planes: 2 } } }), "scenario.fabric.topology.planes: unknown field (known: kind)"],
    [bad({ fabric: { topology: { kind: "leaf-spine", planes: 9 } } }), "scenario.fabric.topology.planes: must be an integer in [1, 8], got 9"],
    [bad({ fabric: { topology: { kind: "three-tier", leavesPerPod: 2, spinesPerPod: 2 } } }), "scenario.fabric.topology.superSpines: is required (must be an integer in [1, 4096])"],
    [bad({ devices: { count: 20 }, fabric: { topology: { kind: "three-tier", devicesPerLeaf: 2, leavesPerPod: 2, spinesPerPod: 2, superSpines: 1, pods: 4 } } }), "scenario.fabric.topology.pods: 4 pods of 2 leaves of 2 devices hold 16, the scenario has 20 devices: at least 5"],
    [bad({ devices: { count: 18 }, fabric: { topology: { kind: "fat-tree", k: 4 } } }), "scenario.fabric.topology.k: a 4-ary fat tree holds at most k³/4 = 16 devices, the scenario has 18"],
    [bad({ fabric: { topology: { kind: "fat-tree", k: 6.5 } } }), "scenario.fabric.topology.k: must be an integer in [2, 256], got 6.5"],
    [bad({ fabric: { topology: { kind: "fat-tree", k: 7 } } }), "scenario.fabric.topology.k: must be even, got 7"],
    [bad({ fabric: { hostLink: { gbps: 0 } } }), "scenario.fabric.hostLink.gbps: must be in (0, 100000], got 0"],
    [bad({ fabric: { switch: { ecn: { enabled: "yes" } } } }), 'scenario.fabric.switch.ecn.enabled: must be true or false, got "yes"'],
    [bad({ fabric: { switch: { ecn: { kminBytes: 300000 } } } }), "scenario.fabric.switch.ecn.kmaxBytes: must be a number in [300000, 1000000000000], got 200000"],
    [bad({ traffic: { pattern: "pairs", portGroup: "UP" } }), 'scenario.traffic.portGroup: must be one of SCALE_UP, SCALE_OUT, got "UP"'],
    [bad({ traffic: { pattern: "pairs", start: -5 } }), 'scenario.traffic.start: must be a time like "10us", "2.5 ms" or a whole number of ps, got -5'],
    [bad({ until: "1.5ps" }), "scenario.until: time 1.5ps is finer than 1 ps"],
    [bad({ faults: {} }), "scenario.faults: must be a list, got {}"],
    [bad({ faults: [{ random: 0.1 }] }), "scenario.faults[0].kind: is required (must be one of loss, link-down, plane-down)"],
    [bad({ faults: [{ kind: "link-down" }] }), 'scenario.faults[0].at: is required (must be a time like "10us", "2.5 ms" or a whole number of ps)'],
    [bad({ faults: [{ kind: "loss", links: "spine" }] }), 'scenario.faults[0].links: must be one of all, fabric, got "spine"'],
    [bad({ faults: [{ kind: "loss", links: [0, "1"] }] }), 'scenario.faults[0].links[1]: must be an integer in [0, 1073741824], got "1"'],
    [bad({ faults: [{ kind: "loss", links: 3 }] }), 'scenario.faults[0].links: must be "all", "fabric" or a list of link numbers, got 3'],
    [bad({ faults: [{ kind: "loss" }, { kind: "loss", gilbertElliott: { pGoodToBad: 0.5 } }] }), "scenario.faults[1].gilbertElliott.pBadToGood: is required (must be in [0, 1))"],
    [bad({ devices: { count: 2, config: { deviceId: 3 } } }), "scenario.devices.config.deviceId: is set by the scenario, not by devices.config"],
    [bad({ devices: { count: 2, config: { engines: 99 } } }), "scenario.devices.config.engines: must be in [1, 64], got 99"],
    [bad({ devices: { count: 2, config: { ports: "2" } } }), 'scenario.devices.config.ports: must be an integer >= 0, got "2"'],
    // what the schema cannot say
    [{ devices: { count: 2 }, collective: { op: "all-reduce", sizes: [4096, 4098] } }, "scenario.collective.sizes[1]: 4098 bytes is not a whole number of f32 elements (4 bytes each)"],
    [{ devices: { count: 2 }, collectives: [{ op: "all-gather" }, { op: "all-gather", dtype: "bf16", sizes: [7] }] }, "scenario.collectives[1].sizes[0]: 7 bytes is not a whole number of bf16 elements (2 bytes each)"],
    [bad({ fabric: { hostLink: { latency: 0 } } }), "scenario.fabric.hostLink.latency: must be from 1 ps to 1 s, got 0 ps"],
    [bad({ fabric: { fabricLink: { latency: "2s" } } }), "scenario.fabric.fabricLink.latency: must be from 1 ps to 1 s, got 2.000 s"],
    [bad({ faults: [{ kind: "link-down", at: "10us", until: "5us" }] }), "scenario.faults[0].until: must come after at (10.000 us), got 5.000 us"],
    [bad({ faults: [{ kind: "loss" }, { kind: "plane-down", plane: 0, at: "3us", until: 3_000_000 }] }), "scenario.faults[1].until: must come after at (3.000 us), got 3.000 us"],
    [{ devices: { count: 2, config: { ports: 2, scaleUpPorts: 2 } }, traffic: { pattern: "pairs", portGroup: "SCALE_OUT" } }, "scenario.traffic.portGroup: SCALE_OUT has no ports: 2 of the 2 ports are scale-up (devices.config.scaleUpPorts and devices.config.ports)"],
    [{ devices: { count: 2, config: { ports: 2, scaleUpPorts: 0 } }, traffic: { pattern: "pairs" } }, "scenario.traffic.portGroup: SCALE_UP has no ports: 0 of the 2 ports are scale-up (devices.config.scaleUpPorts and devices.config.ports)"],
  ])("%j", (input, message) => {
    let err: unknown;
    try { resolveScenario(input); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toBe(message);
  });

  it("names the device config's unknown field", () => {
    expect(() => resolveScenario({ ...minimal(), devices: { count: 2, config: { bogus: 1 } } })).toThrow(/^scenario\.devices\.config\.bogus: unknown field \(known: engines, /);
  });
});

describe("--set path=value", () => {
  it("parses dotted paths with list indexes, and nothing else", () => {
    expect(parsePath("faults[0].random")).toEqual(["faults", 0, "random"]);
    expect(parsePath("fabric.topology.kind")).toEqual(["fabric", "topology", "kind"]);
    for (const p of ["", "[0]", "a..b", "a[x]", "a.", "a[0]b", "__proto__.x", "a.constructor"]) expect(() => parsePath(p), p).toThrow(ConfigError);
  });

  it("sets JSON values (or text), making objects and lists on the way; the schema then checks them", () => {
    const s: Record<string, unknown> = minimal();
    applySet(s, "faults[0].random=0.05");
    applySet(s, "faults[0].kind=loss");
    applySet(s, "until=20us");
    applySet(s, "traffic.messages=3");
    applySet(s, 'fabric.topology={"kind":"leaf-spine","planes":2}');
    expect(s).toEqual({ devices: { count: 2 }, traffic: { pattern: "pairs", messages: 3 }, faults: [{ random: 0.05, kind: "loss" }], until: "20us", fabric: { topology: { kind: "leaf-spine", planes: 2 } } });
    const r = resolveScenario(s);
    expect([r.untilPs, r.traffic.messages, r.faults[0]]).toEqual([20_000_000, 3, { kind: "loss", links: "all", random: 0.05 }]);
    expect(() => applySet(s, "traffic.pattern.x=1")).toThrow('scenario.traffic.pattern: is "pairs", which has no field x');
    expect(() => applySet(s, "novalue")).toThrow(/wants path=value/);
    // null removes a field: it takes its default (WAS: kept as null, refused "must be an object, got null")
    applySet(s, "sweep={\"traffic.messages\":[1,2]}");
    applySet(s, "sweep=null");
    expect("sweep" in s).toBe(false);
    applySet(s, "traffic.messages=lots");
    expect(() => resolveScenario(s)).toThrow('scenario.traffic.messages: must be an integer in [1, 4096], got "lots"');
  });

  it("writes pointers as dotted paths", () => {
    expect(dottedPath("scenario", "")).toBe("scenario");
    expect(dottedPath("scenario", "/faults/12/links/0")).toBe("scenario.faults[12].links[0]");
    expect(dottedPath("x", "/a~1b/c~0d")).toBe("x.a/b.c~d");
  });
});
