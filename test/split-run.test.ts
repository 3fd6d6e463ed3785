import { describe, it, expect, afterAll } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { trafficScenario, forcedEnd } from "./helpers/fuzz-tier/scenarios.js";
import { Fabric } from "../host/fabric/fabric.js";
import { leafSpine } from "../host/fabric/topology.js";
import { coreModule } from "../host/platform/node.js";
import { FAB, FCH } from "../host/generated/layouts.js";

// One traffic run split over threads (`menic run --threads N`, issue 31 §4): each thread steps
// its own devices and runs its own planes, frames crossing between them at every window. The
// table and the JSON are one thread's, byte for byte, on runs where every crossing matters:
// loss and retransmissions on both transports, ECN marks, a plane failing and coming back,
// bodies carried in full mode, three tiers, an open-loop workload posting as it goes. A thread
// that dropped the frames another handed it, or took them a window late, would change them.

const tmp = mkdtempSync(join(tmpdir(), "menic-split-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const menic = (...args: string[]) => {
  const r = spawnSync("node", ["bin/menic.js", ...args], { encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};
let files = 0;
const file = (sc: object) => { const p = join(tmp, `sc-${files++}.json`); writeFileSync(p, JSON.stringify(sc)); return p; };

/** Runs `sc` on 1 thread and on each of `threads`: the JSON and table of each, and the one-thread JSON parsed. */
function compare(sc: object, threads: number[]) {
  const p = file(sc);
  const one = { json: menic("run", p, "--json", "--allow-failures"), table: menic("run", p, "--allow-failures") };
  expect(one.json.status, one.json.stderr).toBe(0);
  for (const n of threads) {
    const json = menic("run", p, "--json", "--allow-failures", "--threads", String(n));
    expect(json.status, json.stderr).toBe(0);
    expect(json.stdout, `${n} threads`).toBe(one.json.stdout);
    const table = menic("run", p, "--allow-failures", "--threads", String(n));
    expect(table.stdout, `${n} threads`).toBe(one.table.stdout);
  }
  return JSON.parse(one.json.stdout);
}

/** test/helpers/split-entry.ts bundled into the package's build folder (its core is found from there), once. */
let entryBuilt: Promise<string> | null = null;
function splitEntry(): Promise<string> {
  const entry = join("build", "test-split-entry.mjs");
  entryBuilt ??= build({ entryPoints: ["test/helpers/split-entry.ts"], bundle: true, platform: "node", format: "esm", outfile: entry, logLevel: "warning" }).then(() => entry);
  return entryBuilt;
}

describe("a traffic run split over threads", () => {
  it("MetaRoCE-like over 4 planes with loss and a plane down and back: 2 and 4 threads give one thread's bytes", () => {
    const r = compare({
      name: "split-metaroce", seed: 7, until: "3ms", transport: "metaroce",
      devices: { count: 16, config: { engines: 1, ports: 4, scaleUpPorts: 4 } },
      fabric: { mode: "timing", topology: { kind: "leaf-spine", planes: 4, spines: 2, devicesPerLeaf: 4 }, switch: { ecn: { kminBytes: 20000, kmaxBytes: 200000, pmax: 0.1 } } },
      traffic: { pattern: "permutation", messageBytes: 262144, messages: 24 },
      faults: [{ kind: "loss", random: 0.002 }, { kind: "plane-down", plane: 2, at: "8us", until: "30us" }],
    }, [2, 4]);
    // what crossed between threads changed what happened: losses recovered, marks, a plane lost
    expect(r.finished).toBe(true);
    expect(r.retransmits).toBeGreaterThan(1000);
    expect(r.fabric.ecnMarks).toBeGreaterThan(1000);
    expect(r.fabric.drops.random_loss).toBeGreaterThan(100);
    expect(r.fabric.drops.link_down).toBeGreaterThan(1000);
  });

  it("RoCEv2 in full mode (bodies cross with their frames) over 2 planes with loss", () => {
    const r = compare({
      name: "split-roce", seed: 3, until: "200ms",
      devices: { count: 8, config: { engines: 1, ports: 2, scaleUpPorts: 2 } },
      fabric: { mode: "full", topology: { kind: "leaf-spine", planes: 2, spines: 2, devicesPerLeaf: 4 } },
      traffic: { pattern: "all-to-all", messageBytes: 32768, messages: 2 },
      faults: [{ kind: "loss", random: 0.003 }],
    }, [2]);
    // its tail losses wait for RoCEv2's transport timeout (67 ms by default)
    expect([r.finished, r.endPs > 67e9]).toEqual([true, true]);
    expect(r.retransmits).toBeGreaterThan(5);
    expect(r.fabric.drops.random_loss).toBeGreaterThan(5);
  });

  it("three tiers and an open-loop workload posted as the run reaches it", () => {
    const r = compare({
      name: "split-workload", seed: 11, until: "2ms", transport: "metaroce",
      devices: { count: 32, config: { engines: 1, ports: 2, scaleUpPorts: 2 } },
      fabric: { mode: "timing", topology: { kind: "three-tier", planes: 2, devicesPerLeaf: 4, leavesPerPod: 2, spinesPerPod: 2, superSpines: 2 } },
      traffic: { pattern: "workload", workload: { sizes: { file: join(process.cwd(), "examples/workloads/websearch.cdf") }, load: 0.4, flows: 150 } },
    }, [2]);
    expect(r.messages.completed).toBeGreaterThan(100);
    expect(r.workload.flows).toBe(150);
  });

  it("devices in instances of their own, stepped by the host (as at 16,384 devices): 2 threads give one thread's bytes", async () => {
    const entry = await splitEntry();
    const p = file({
      name: "split-host", seed: 5, until: "3ms", transport: "metaroce",
      devices: { count: 12, config: { engines: 1, ports: 2, scaleUpPorts: 2 } },
      fabric: { mode: "timing", topology: { kind: "leaf-spine", planes: 2, spines: 2, devicesPerLeaf: 4 } },
      traffic: { pattern: "permutation", messageBytes: 131072, messages: 8 },
      faults: [{ kind: "loss", random: 0.003 }],
    });
    // 12 devices of about 1.5 MB in instances of at most 4 MB: 6 of them, and the fabric in its
    // own; split over 2 threads, each builds only its 6 devices, in 3
    const held: string[] = [];
    const run = (threads: number, shared: number) => {
      const r = spawnSync("node", [entry, p, String(threads), String(shared)], { encoding: "utf8" });
      expect(r.status, r.stderr).toBe(0);
      held.push(r.stderr.trim());
      return r.stdout;
    };
    const one = run(1, 2 ** 31), r = JSON.parse(one);
    expect(run(1, 4e6)).toBe(one);
    expect(run(2, 4e6)).toBe(one);
    expect(held).toEqual(["holds 12 of 12 devices in 1 instances", "holds 12 of 12 devices in 6 instances", "holds 6 of 12 devices in 3 instances"]);
    expect([r.finished, r.retransmits > 5, r.fabric.drops.random_loss > 5]).toEqual([true, true, true]);
  });

  it("the fuzz tier's traffic scenarios (2 planes, PFC off; seeds no test picked): 2 threads give one thread's bytes, or its refusal", async () => {
    const entry = await splitEntry();
    const cases: number[] = [];
    for (let seed = 301; cases.length < 8; seed++) {
      const sc = trafficScenario(seed) as { fabric: { topology: { planes?: number }; switch?: { pfc?: { enabled?: boolean } } } };
      if (!forcedEnd("traffic", seed) && (sc.fabric.topology.planes ?? 1) >= 2 && !sc.fabric.switch?.pfc?.enabled) cases.push(seed);
    }
    let completed = 0;
    for (const seed of cases) {
      const p = file(trafficScenario(seed));
      const [one, two] = [1, 2].map((n) => spawnSync("node", [entry, p, String(n), String(2 ** 31)], { encoding: "utf8" }));
      expect([two!.status, two!.stdout], `seed ${seed}`).toEqual([one!.status, one!.stdout]);
      if (one!.status !== 0) expect(two!.stderr.split("\n")[0], `seed ${seed}`).toBe(one!.stderr.split("\n")[0]);
      else completed += JSON.parse(one!.stdout).messages.completed;
    }
    expect(completed).toBeGreaterThan(50);
  });

  it.skipIf(spawnSync("script", ["--version"], { stdio: "ignore" }).status !== 0)("Ctrl-C stops every thread at its next chunk: the result says stopped, the exit status is 130", async () => {
    // 32,768 messages of 4 MiB: far longer than the test waits; Ctrl-C typed into the terminal
    // once the progress line counts some messages done
    const p = file({
      name: "split-stop", seed: 7, until: "1s", transport: "metaroce",
      devices: { count: 8, config: { engines: 1, ports: 2, scaleUpPorts: 2 } },
      fabric: { mode: "timing", topology: { kind: "leaf-spine", planes: 2, spines: 2, devicesPerLeaf: 4 } },
      traffic: { pattern: "permutation", messageBytes: 4194304, messages: 4096 },
    });
    const child = spawn("script", ["-qec", `node bin/menic.js run ${p} --threads 2 --json`, "/dev/null"], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "", sent = false;
    child.stdout.on("data", (d) => {
      out += d;
      if (!sent && /messages [1-9]\d*\/32768/.test(out)) { sent = true; child.stdin.write("\x03"); }
    });
    expect(await new Promise<number | null>((resolve) => child.on("exit", resolve))).toBe(130);
    const r = JSON.parse(out.slice(out.indexOf('{"name":"split-stop"')).replace(/\r/g, ""));
    expect(r.ended).toBe("stopped");
    // stopped after some completed and long before all: the threads agreed to stop
    expect(r.messages.completed).toBeGreaterThan(0);
    expect(r.messages.completed).toBeLessThan(32768);
    expect(r.endPs).toBeLessThan(1e12);
  });

  it("refuses what it cannot split, saying why (exit 2, before anything is built)", () => {
    const pfc = file({
      name: "split-pfc", seed: 1, until: "1ms", devices: { count: 4, config: { engines: 1, ports: 2, scaleUpPorts: 2 } },
      fabric: { topology: { kind: "leaf-spine", planes: 2, spines: 1, devicesPerLeaf: 2 }, switch: { pfc: { enabled: true } } },
      traffic: { pattern: "pairs", messageBytes: 4096, messages: 1 },
    });
    const refused = (r: ReturnType<typeof menic>) => [r.status, r.stderr.split("\n")[0]];
    expect(refused(menic("run", pfc, "--threads", "2"))).toEqual([2, "menic: --threads needs PFC off (fabric.switch.pfc.enabled): a pause would cross from one plane's thread to its devices' within a window"]);
    expect(refused(menic("run", pfc, "--threads", "3", "--set", "fabric.switch.pfc.enabled=false"))).toEqual([2, "menic: --threads 3: a run splits over at most its planes' number of threads (2, fabric.topology)"]);
    expect(refused(menic("run", "examples/scenarios/alltoall-planes.json", "--threads", "2"))).toEqual([2, "menic: --threads splits a traffic run; examples/scenarios/alltoall-planes.json runs a collective"]);
    expect(refused(menic("run", pfc, "--threads", "2", "--pcap", join(tmp, "x.pcap")))).toEqual([2, "menic: --pcap sees every device of a run; with --threads each thread has only its own"]);
    // a sweep's runs go on threads with --jobs
    expect(refused(menic("run", "examples/scenarios/all-to-all.json", "--threads", "2"))).toEqual([2, "menic: --threads splits one run over threads; examples/scenarios/all-to-all.json is a sweep (--jobs runs a sweep's runs at once)"]);
  });

  it("hands a fabric's counters to the first thread as its slots not 0: sums add up, peaks keep the larger", () => {
    const topo = leafSpine({ devices: 8, ports: 2, planes: 2, devicesPerLeaf: 4, spines: 2 });
    const [first, other] = [new Fabric(coreModule(), topo, { seed: 1 }), new Fabric(coreModule(), topo, { seed: 1 })];
    // a total, a switch's drops and buffer peak, a channel's frames and queue peak, the packet pool's peak
    const put = (f: Fabric, hops: number, drops: number, bufPeak: number, pkts: number, qpeak: number, pktPeak: number) => {
      const dv = new DataView(f.core.memory.buffer), at = (field: number) => dv.getUint32(f.fab + field, true);
      const ch = at(FAB.ch) + 5 * FCH.SIZE;
      dv.setFloat64(f.fab + FAB.hops, hops, true);
      dv.setFloat64(at(FAB.sw_drops) + 8 * 3, drops, true);
      dv.setFloat64(at(FAB.buf_peak) + 8 * 2, bufPeak, true);
      dv.setFloat64(ch + FCH.pkts, pkts, true);
      dv.setFloat64(ch + FCH.qpeak, qpeak, true);
      dv.setUint32(f.fab + FAB.pkt_peak, pktPeak, true);
    };
    put(first, 100, 0, 9000, 7, 3000, 40);
    put(other, 23, 5, 4000, 0, 6000, 90);
    const handed = other.counters();
    // the number of slots, then (slot, value) for the five not 0 (pkts is 0 there)
    expect(handed.length).toBe(1 + 2 * 5);
    first.absorbCounters(handed);
    const dv = new DataView(first.core.memory.buffer), at = (field: number) => dv.getUint32(first.fab + field, true), ch = at(FAB.ch) + 5 * FCH.SIZE;
    expect([dv.getFloat64(first.fab + FAB.hops, true), dv.getFloat64(at(FAB.sw_drops) + 24, true), dv.getFloat64(at(FAB.buf_peak) + 16, true), dv.getFloat64(ch + FCH.pkts, true), dv.getFloat64(ch + FCH.qpeak, true), dv.getUint32(first.fab + FAB.pkt_peak, true)])
      .toEqual([123, 5, 9000, 7, 6000, 90]);
    expect(() => new Fabric(coreModule(), leafSpine({ devices: 4, ports: 2, planes: 2, devicesPerLeaf: 4, spines: 2 }), { seed: 1 }).absorbCounters(handed)).toThrow(/counters/);
  });
});
