import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runScenario, trafficFlows, type ScenarioResult, type BuiltRun, type RunObserver } from "../host/scenario/run.js";
import { resolveScenario } from "../host/scenario/scenario.js";
import { flowStatus, formatResult, TABLE_FLOWS_MAX } from "../host/scenario/report.js";
import { applySet } from "../host/scenario/overrides.js";
import { formatTime } from "../host/units.js";
import { coreModule } from "../host/platform/node.js";
import { readPcapng } from "./helpers/pcapng-read.js";
import { hasTshark, readCapture, tsharkPackets, removeCaptures } from "./helpers/tshark.js";

// `menic run <scenario.json>`: the results table and --json against runScenario's own result
// for the same scenario, bad input, --set and --seed, Ctrl-C, and --pcap read by Wireshark's
// InfiniBand dissector (tshark; skipped here when it is not installed, CI installs it).

const menic = (...args: string[]) => {
  const r = spawnSync("node", ["bin/menic.js", ...args], { encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};
const load = (name: string) => JSON.parse(readFileSync(`examples/scenarios/${name}.json`, "utf8"));
/** runScenario in this process on examples/scenarios/<name>.json with `--set` assignments. */
const direct = (name: string, ...sets: string[]) => {
  const s = load(name);
  for (const kv of sets) applySet(s, kv);
  return runScenario(coreModule(), s);
};
const tmp = mkdtempSync(join(tmpdir(), "menic-cli-run-"));
afterAll(() => removeCaptures(tmp));

describe("menic run examples/scenarios/roce-pair.json", () => {
  let r: ScenarioResult;
  beforeAll(async () => { r = await direct("roce-pair"); });

  it("prints the results table: per flow, totals, completion times, drops, retransmissions", () => {
    const out = menic("run", "examples/scenarios/roce-pair.json");
    expect(out.status).toBe(0);
    expect(out.stderr).toBe(""); // no progress line: stderr is not a terminal here
    const lines = out.stdout.split("\n");
    expect(lines[0]).toBe(`roce-pair (seed 1): finished at ${formatTime(r.endPs)} of simulated time (limit ${formatTime(r.untilPs)})`);
    const cells = (l: string) => l.split(/ {2,}/).map((c) => c.trim());
    const head = lines.findIndex((l) => l.startsWith("flow "));
    expect(cells(lines[head]!)).toEqual(["flow", "src → dst", "messages", "bytes", "goodput Gb/s", "status"]);
    expect(r.flows).toHaveLength(1);
    r.flows.forEach((f, i) => expect(cells(lines[head + 1 + i]!)).toEqual([
      String(i), `${f.src} → ${f.dst}`, `${f.completed}/${f.messages}`, String(f.bytes), f.goodputGbps!.toFixed(2), flowStatus(f)]));
    expect(cells(lines[head + 1 + r.flows.length]!)).toEqual(["total", "1 flow", `${r.messages.completed - r.messages.failed}/${r.messages.total}`, String(r.totalBytes), r.totalGoodputGbps!.toFixed(2)]);
    expect(out.stdout).toContain(`completion time: p50 ${formatTime(r.fctPs.p50)}, p99 ${formatTime(r.fctPs.p99)}, max ${formatTime(r.fctPs.max)}\n`);
    expect(out.stdout).toContain("drops: fabric none; devices none\n");
    expect(out.stdout).toContain(`retransmissions ${r.retransmits}, timeouts ${r.timeouts}, NAKs ${r.naksSent}, ECN marks ${r.fabric.ecnMarks}, CNPs ${r.cnpsSent}, PFC pauses ${r.fabric.pfcPauses}\n`);
    // what the table shows is what the scenario did: 16 x 1 MiB, all delivered
    expect([r.ended, r.totalBytes, r.messages]).toEqual(["finished", 16 << 20, { total: 16, completed: 16, failed: 0 }]);
    expect(r.totalGoodputGbps).toBeGreaterThan(0);
  });

  it("lists at most TABLE_FLOWS_MAX flows in the table, and says how many more", () => {
    const many: ScenarioResult = { ...r, flows: Array.from({ length: TABLE_FLOWS_MAX + 8 }, (_, i) => ({ ...r.flows[0]!, src: i })) };
    const lines = formatResult(many).split("\n");
    expect(lines.filter((l) => / → 1 /.test(l))).toHaveLength(TABLE_FLOWS_MAX);
    expect(lines).toContain(`(8 more flows: --json lists every one)`);
    expect(lines.find((l) => l.startsWith("total"))).toMatch(/^total\s+40 flows\s+/);
  });

  it("prints the same result as one JSON object with --json", () => {
    const out = menic("run", "examples/scenarios/roce-pair.json", "--json");
    expect(out.status).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual(JSON.parse(JSON.stringify(r)));
    expect(out.stdout.trim().split("\n")).toHaveLength(1);
  });
});

// util-linux `script` runs a command on a pseudo-terminal (Debian: bsdutils, always there)
const hasScript = spawnSync("script", ["--version"], { stdio: "ignore" }).status === 0;

describe("menic run: progress", () => {
  it.skipIf(!hasScript)("shows a progress line on stderr once the run has taken a second on a terminal; Ctrl-C there clears it and stops", async () => {
    // Ctrl-C typed into the terminal once the line has been drawn twice: the terminal sends SIGINT
    const child = spawn("script", ["-qec", "node bin/menic.js run examples/scenarios/roce-pair.json --set traffic.messages=4096", "/dev/null"], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "", sent = false;
    child.stdout.on("data", (d) => {
      out += d;
      if (!sent && (out.match(/\r\x1b\[Ksimulated /g) ?? []).length >= 2) { sent = true; child.stdin.write("\x03"); }
    });
    const status = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(status).toBe(130);
    // rewritten in place (carriage return, erase line): simulated time of the limit, messages,
    // packet-hops per host second, wall time, ETA
    const lines = [...out.matchAll(/\r\x1b\[K(simulated [^\r\n]*)/g)].map((m) => m[1]!);
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const l of lines) expect(l).toMatch(/^simulated \d+\.\d{3} (us|ms) of 1\.000 s, messages \d+\/4096, [\d.]+ (k |M )?hops\/s, wall \d+\.\d s, ETA ≤ \d+( min \d+)? s(\^C)?$/);
    expect(out).toMatch(/roce-pair \(seed 1\): stopped at /);
  });

  it.skipIf(!hasScript)("shows nothing when the run is short", () => {
    const r = spawnSync("script", ["-qec", "node bin/menic.js run examples/scenarios/roce-pair.json --set traffic.messages=2", "/dev/null"], { encoding: "utf8" });
    expect(r.stdout).not.toContain("\x1b[K");
  });
});

describe("menic run: bad input", () => {
  it("names the bad field and exits 2, printing nothing on stdout", () => {
    const out = menic("run", "examples/scenarios/roce-pair.json", "--set", "traffic.pattern=ring", "--json");
    expect(out).toEqual({ status: 2, stdout: "", stderr: 'menic: scenario.traffic.pattern: must be one of pairs, permutation, incast, all-to-all, workload, got "ring"\n' });
    const typo = join(tmp, "typo.json");
    writeFileSync(typo, JSON.stringify({ ...load("roce-pair"), fabric: { mode: "full", topolgy: {} } }));
    expect(menic("run", typo)).toMatchObject({ status: 2, stdout: "", stderr: "menic: scenario.fabric.topolgy: unknown field (did you mean topology? known: mode, topology, hostLink, fabricLink, superLink, switch)\n" });
    const notJson = join(tmp, "not.json");
    writeFileSync(notJson, "{ devices: 2 }");
    expect(menic("run", notJson)).toMatchObject({ status: 2, stderr: `menic: ${notJson}:1:3: not JSON: expected a double-quoted property name or '}', got "d"\n` });
    expect(menic("run", join(tmp, "missing.json"))).toMatchObject({ status: 2, stderr: `menic: ${join(tmp, "missing.json")}: no such file\n` });
    expect(menic("run", "examples/scenarios/roce-pair.json", "--seed=-3")).toMatchObject({ status: 2, stderr: "menic: --seed -3: must be in [0, 4294967295]\n(menic run --help says how to use it)\n" });
    expect(menic("run", "examples/scenarios/roce-pair.json", "--set", "faults[0].kind=loss", "--set", "faults[0].links=[99]"))
      .toMatchObject({ status: 2, stderr: "menic: scenario.faults[0].links: link 99 does not exist (the topology has 2)\n" });
    expect(menic("run", "examples/scenarios/roce-pair.json", "--pcap", join(tmp, "no", "such", "dir.pcapng"))).toMatchObject({ status: 2, stderr: `menic: --pcap ${join(tmp, "no", "such", "dir.pcapng")}: directory ${join(tmp, "no", "such")} does not exist\n(menic run --help says how to use it)\n` });
    expect(menic("run").status).toBe(2);
    expect(menic("run", "examples/scenarios/roce-pair.json", "--seed")).toMatchObject({ status: 2, stderr: "menic: --seed needs a value <n>\n(menic run --help says how to use it)\n" });
  });
});

// A command that must refuse its input before it builds anything: run with 40 GiB of address
// space (each wasm memory reserves about 10 GiB of it: three devices' instances do not fit) and
// a 256 MiB JavaScript heap, so that a refusal that comes too late fails instead of filling
// memory. The timeout is a backstop only: a command that opened a pipe would wait for ever.
const menicBounded = (...args: string[]) => {
  const r = spawnSync("sh", ["-c", 'ulimit -v 41943040 && exec node --max-old-space-size=256 bin/menic.js "$@"', "sh", ...args], { encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};
const scenarioFile = (name: string, s: unknown) => {
  const file = join(tmp, `${name}.json`);
  writeFileSync(file, JSON.stringify(s));
  return file;
};
const pair = { name: "p", devices: { count: 2, config: { ports: 1, scaleUpPorts: 1 } }, traffic: { pattern: "pairs", messageBytes: 4096, messages: 1 } };
const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

// WAS (issue 29 §3): pairs on 3 devices left device 2 out and incast senders beyond the devices
// were dropped, both silently; --set faults[3] on a list of one named faults[1]; a misspelt field
// or option had no suggestion; a JSON error gave an offset, or nothing; a missing file read
// "ENOENT: no such file or directory, open ..."; "-" was taken for a file's name
describe("menic run: what cannot run, said in the user's words, exit 2", () => {
  const refused = (stderr: string, ...args: string[]) => expect(menic("run", ...args), args.join(" ")).toEqual({ status: 2, stdout: "", stderr });
  const roce = "examples/scenarios/roce-pair.json";

  it("pairs on an odd count, incast senders beyond the devices, an index past a list's end", () => {
    refused("menic: scenario.traffic.pattern: pairs sends from device 2k to device 2k + 1, and devices.count is 3: device 2 would have no partner (give an even count, or another pattern)\n",
      roce, "--set", "devices.count=3");
    refused("menic: scenario.traffic.incastSenders: 2 senders, but device 0 has 1 other device to receive from (devices.count 2): at most 1\n",
      roce, "--set", "traffic.pattern=incast", "--set", "traffic.incastSenders=2");
    refused("menic: scenario.faults[3]: faults has 1 entry, faults[0]: --set changes it or adds faults[1]\n", "examples/scenarios/roce-loss.json", "--set", "faults[3].random=0.1");
    refused("menic: scenario.faults[2]: faults is empty: --set adds faults[0]\n", roce, "--set", "faults[2].kind=loss");
    // adding at the end is setting: the new entry is checked like any other, at its own index
    refused("menic: scenario.faults[1].kind: is required (must be one of loss, link-down, plane-down)\n", "examples/scenarios/roce-loss.json", "--set", "faults[1].random=0.1");
  });

  it("a collective size its MSCCL algorithm cannot cut into chunks: the size's path", () => {
    refused('menic: scenario.collective.sizes[1]: 1000 bytes is not a multiple of 128, what the algorithm "ring-allreduce-8x4" of graph.text needs (nchunksperloop="32" chunks of whole f32 elements)\n',
      "examples/scenarios/allreduce-msccl.json", "--set", "collective.sizes=[65536,1000]");
  });

  it("did you mean: a field, a device config field, an option", () => {
    expect(menic("run", roce, "--set", "trafic.messages=3")).toMatchObject({ status: 2, stdout: "", stderr: expect.stringMatching(/^menic: scenario\.trafic: unknown field \(did you mean traffic\? known: \$schema, name, /) });
    expect(menic("run", roce, "--set", "devices.config.enignes=2")).toMatchObject({ status: 2, stderr: expect.stringMatching(/^menic: scenario\.devices\.config\.enignes: unknown field \(did you mean engines\? known: engines, /) });
    refused("menic: unknown option --jsn (did you mean --json?)\n(menic run --help says how to use it)\n", roce, "--jsn");
    refused("menic: unknown option --allow-failure (did you mean --allow-failures?)\n(menic run --help says how to use it)\n", roce, "--allow-failure");
  });

  it("JSON by line and column; a missing file in words, with a near name; - reads stdin", () => {
    const bad = join(tmp, "trailing-comma.json");
    writeFileSync(bad, '{\n  "name": "x",\n  "seed": 1,\n}\n');
    refused(`menic: ${bad}:4:1: not JSON: expected a double-quoted property name, got "}"\n`, bad);
    refused(`menic: ${join(tmp, "absent-scenario-file.json")}: no such file\n`, join(tmp, "absent-scenario-file.json"));
    refused("menic: examples/scenarios/roce-pai.json: no such file (did you mean examples/scenarios/roce-pair.json?)\n", "examples/scenarios/roce-pai.json");
    const stdin = (input: string, ...args: string[]) => {
      const r = spawnSync("node", ["bin/menic.js", "run", "-", ...args], { encoding: "utf8", input });
      return { status: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    expect(stdin(readFileSync(roce, "utf8"), "--json")).toEqual(menic("run", roce, "--json"));
    expect(stdin("[1,,2]")).toEqual({ status: 2, stdout: "", stderr: 'menic: stdin:1:4: not JSON: expected a value, got ","\n' });
    expect(stdin("[1]")).toEqual({ status: 2, stdout: "", stderr: "menic: stdin: must hold a JSON object\n" });
  });
});

describe("menic run: input that cannot run is refused before anything is built, in the user's words, exit 2", () => {
  it.each([
    ["collective.sizes[1]", { devices: { count: 2 }, collective: { op: "all-reduce", sizes: [4096, 4098], engines: 1 } },
      "scenario.collective.sizes[1]: 4098 bytes is not a whole number of f32 elements (4 bytes each)"],
    ["traffic.messageBytes", { ...pair, traffic: { pattern: "pairs", messageBytes: 2 ** 30, messages: 1 } },
      "scenario.traffic.messageBytes: 1073741824 needs 1073872896 B of HBM per device (the 1073741824 B region, its completion queue and send rings), more than a device holds (1073741824 B, the most hbmBytes allows)"],
    ["fabric.hostLink.latency", { ...pair, fabric: { hostLink: { latency: 0 } } }, "scenario.fabric.hostLink.latency: must be from 1 ps to 1 s, got 0 ps"],
    ["faults[0].until", { ...pair, faults: [{ kind: "link-down", links: "all", at: "10us", until: "5us" }] }, "scenario.faults[0].until: must come after at (10.000 us), got 5.000 us"],
    ["traffic.portGroup", { ...pair, traffic: { ...pair.traffic, portGroup: "SCALE_OUT" } },
      "scenario.traffic.portGroup: SCALE_OUT has no ports: 1 of the 1 ports are scale-up (devices.config.scaleUpPorts and devices.config.ports)"],
    ["devices.config.eventCapacity", { ...pair, devices: { count: 2, config: { ...pair.devices.config, eventCapacity: 16 } } },
      /^menic: scenario\.devices\.config\.eventCapacity: 16 is too few, the event queue can overflow: these devices can have at least \d+ events pending at once; give \d+ or more, or 0 \(the default\) to size it so$/],
  ])("%s, with --json too (the message on stderr, nothing on stdout)", (name, s, message) => {
    const file = scenarioFile(name, s);
    for (const json of [[], ["--json"]]) {
      const out = menic("run", file, ...json);
      expect(out).toMatchObject({ status: 2, stdout: "" });
      if (typeof message === "string") expect(out.stderr).toBe(`menic: ${message}\n`);
      else expect(out.stderr.trimEnd()).toMatch(message);
    }
  });

  it("a sweep of 4 keys x 64 values (16,777,216 runs): refused, saying how many and how to allow them; --max-runs allows them", () => {
    const huge = scenarioFile("huge-sweep", { ...pair, sweep: { seed: upTo(64), "traffic.messages": upTo(64), "traffic.messageBytes": upTo(64), "traffic.flowsPerPair": upTo(64) } });
    expect(menicBounded("run", huge, "--json")).toEqual({ status: 2, stdout: "",
      stderr: "menic: scenario.sweep: would make 16777216 runs (64 x 64 x 64 x 64 values), more than the 10000 a sweep may make: sweep fewer values, or allow more (menic run --max-runs 16777216; maxRuns in the API)\n" });
    const three = scenarioFile("three-runs", { ...pair, sweep: { seed: [1, 2, 3] } });
    expect(menicBounded("run", three, "--max-runs", "2")).toMatchObject({ status: 2, stdout: "", stderr: expect.stringMatching(/^menic: scenario\.sweep: would make 3 runs \(3 values\), more than the 2 a sweep may make: /) });
    const out = menicBounded("run", three, "--max-runs", "3", "--json");
    expect(out.status).toBe(0);
    expect(JSON.parse(out.stdout).runs.map((r: { set: { seed: number }; result: ScenarioResult }) => [r.set.seed, r.result.ended])).toEqual([[1, "finished"], [2, "finished"], [3, "finished"]]);
  });

  it("65,536 devices: refused naming devices.count and the memory they need; --max-memory raises the bound", () => {
    const many = scenarioFile("many-devices", { ...pair, devices: { ...pair.devices, count: 65536 } });
    const out = menicBounded("run", many, "--json");
    expect(out).toMatchObject({ status: 2, stdout: "" });
    expect(out.stderr).toMatch(/^menic: scenario\.devices\.count: 65536 devices need at least \d+\.\d GiB of memory \(\d+\.\d MiB each, and the fabric\), more than the 16\.0 GiB a run may take \(docs\/fabric\.md, "Memory"\): give fewer devices or smaller memories, or, if the machine has the memory, allow more \(menic run --max-memory <GiB>; RunOptions\.maxMemoryBytes\)\n$/);
    // 2,048 devices are refused at 16 GiB; with 64 the run goes on to what else is wrong with it (before building a device)
    const big = scenarioFile("big-messages", { ...pair, devices: { ...pair.devices, count: 2048 }, traffic: { ...pair.traffic, messageBytes: 2 ** 30 } });
    expect(menicBounded("run", big).stderr).toMatch(/^menic: scenario\.devices\.count: 2048 devices need at least/);
    expect(menicBounded("run", big, "--max-memory", "64")).toMatchObject({ status: 2, stderr: expect.stringMatching(/^menic: scenario\.traffic\.messageBytes: 1073741824 needs /) });
  });

  it("a file that is not a regular file, or larger than 64 MiB, is refused unread, named by its field", () => {
    const graph = (file: string) => scenarioFile("graph-file", { devices: { count: 2 }, collective: { op: "all-reduce", sizes: [4096], engines: 1, graph: { format: "msccl-xml", file } } });
    expect(menicBounded("run", graph("/dev/zero"))).toEqual({ status: 2, stdout: "", stderr: "menic: scenario.collective.graph.file: /dev/zero: is a character device, not a regular file\n" });
    expect(menicBounded("run", "/dev/zero")).toEqual({ status: 2, stdout: "", stderr: "menic: /dev/zero: is a character device, not a regular file\n" });
    const fifo = join(tmp, "fifo.json");
    execFileSync("mkfifo", [fifo]); // opening it would wait for a writer
    expect(menicBounded("run", fifo)).toEqual({ status: 2, stdout: "", stderr: `menic: ${fifo}: is a pipe, not a regular file\n` });
    const large = join(tmp, "large.xml");
    writeFileSync(large, "");
    truncateSync(large, 64 * 2 ** 20 + 1); // sparse: no disk taken
    expect(menicBounded("run", graph(large))).toEqual({ status: 2, stdout: "", stderr: `menic: scenario.collective.graph.file: ${large}: holds 67108865 bytes, more than the 64 MiB an input file may\n` });
  });
});

describe("menic run --set and --seed", () => {
  it("--set changes fields before the schema checks them; a run out of time exits 1", async () => {
    const out = menic("run", "examples/scenarios/roce-pair.json", "--set", "traffic.messages=4", "--set", "until=20us", "--json");
    expect(out.status).toBe(1);
    const j = JSON.parse(out.stdout);
    expect(j).toEqual(JSON.parse(JSON.stringify(await direct("roce-pair", "traffic.messages=4", "until=20us"))));
    expect([j.untilPs, j.endPs, j.ended, j.finished, j.messages.total]).toEqual([20_000_000, 20_000_000, "time-limit", false, 4]);
    expect(j.messages.completed).toBeLessThan(4);
    // asked: a run out of time is a result (issue 29 §3)
    expect(menic("run", "examples/scenarios/roce-pair.json", "--set", "traffic.messages=4", "--set", "until=20us", "--json", "--allow-failures")).toEqual({ status: 0, stdout: out.stdout, stderr: "" });
  });

  it("--set faults[0].random sweeps loss; a failed message exits 1 with its status", async () => {
    const out = menic("run", "examples/scenarios/roce-loss.json", "--set", "faults[0].random=0.3", "--set", "traffic.messages=2");
    expect(out.status).toBe(1);
    const r = await direct("roce-loss", "faults[0].random=0.3", "traffic.messages=2");
    expect(r.ended).toBe("failed");
    expect(out.stdout).toContain(`finished with failed messages at ${formatTime(r.endPs)}`);
    expect(out.stdout).toMatch(/ 0 → 1 .* RETRY_EXC_ERR\n/);
    expect(out.stdout).toContain(`drops: fabric random_loss ${r.fabric.drops.random_loss}; devices `);
  });

  it("--seed draws another permutation", () => {
    const flows = (seed: number) => {
      const out = menic("run", "examples/scenarios/permutation.json", "--seed", String(seed), "--json");
      expect(out.status).toBe(0);
      const j = JSON.parse(out.stdout);
      expect(j.seed).toBe(seed);
      return j.flows.map((f: { src: number; dst: number }) => [f.src, f.dst]);
    };
    const a = flows(1), b = flows(2);
    expect(a).not.toEqual(b);
    for (const [seed, got] of [[1, a], [2, b]] as const) {
      expect(got).toEqual(trafficFlows(resolveScenario({ ...load("permutation"), seed })).map((f) => [f.src, f.dst]));
      expect(got.every(([s, d]: number[]) => s !== d)).toBe(true); // a derangement
      expect(new Set(got.map(([, d]: number[]) => d)).size).toBe(8);
    }
  });
});

describe("menic run --timeline", () => {
  /** The bytes placed over all flows at each of a run's samples (every `intervalPs`, or more often). */
  const placedProbe = (intervalPs: number) => {
    const samples: { t: number; placed: number }[] = [];
    let run!: BuiltRun;
    const observer: RunObserver = {
      intervalPs, begin: (r) => { run = r; }, posted() {}, completed() {},
      sample: (t) => { samples.push({ t, placed: run.flows.reduce((s, f) => s + f.placedBytes(), 0) }); },
    };
    return { observer, samples };
  };

  it("adds the payload bytes placed over all flows at every multiple of the interval, and changes nothing else", async () => {
    const out = menic("run", "examples/scenarios/permutation.json", "--timeline", "2us", "--json");
    expect(out.status).toBe(0);
    const { timeline, ...rest } = JSON.parse(out.stdout);
    // the same run untimed, watched every microsecond
    const probe = placedProbe(1_000_000);
    const plain = await runScenario(coreModule(), load("permutation"), { observer: probe.observer });
    expect(plain.timeline).toBeUndefined();
    expect(rest).toEqual(JSON.parse(JSON.stringify(plain)));
    expect(timeline.intervalPs).toBe(2_000_000);
    expect(timeline.placedBytes).toEqual(probe.samples.filter((x) => x.t % 2_000_000 === 0).map((x) => x.placed));
    // up to the end of the run, where every byte is placed
    expect(timeline.placedBytes.at(-1)).toBe(plain.totalBytes);
    expect(timeline.placedBytes.length).toBeGreaterThanOrEqual(Math.floor(plain.endPs / 2_000_000));
    expect(timeline.placedBytes[0]).toBeLessThan(timeline.placedBytes[4]);
  });

  it("beside an observer sampling at another interval, the same samples; an interval off the runner's window grid is rounded up onto it", async () => {
    const cli = JSON.parse(menic("run", "examples/scenarios/permutation.json", "--timeline", "4us", "--json").stdout).timeline;
    // the run stops at 3, 4, 7, 8, 11, 12 ... us: the observer's samples and the timeline's
    const probe = placedProbe(3_000_000);
    const r = await runScenario(coreModule(), load("permutation"), { observer: probe.observer, timelinePs: 4_000_000 });
    expect(r.timeline).toEqual(cli);
    expect(cli.placedBytes.length).toBeGreaterThan(3);
    // the observer still sees the run at least every 3 us
    expect(probe.samples.every((x, k) => x.t - (k ? probe.samples[k - 1]!.t : 0) <= 3_000_000)).toBe(true);
    let windowPs = 0;
    const odd = await runScenario(coreModule(), load("permutation"), { timelinePs: 1_000_001, onBuilt: (c) => { windowPs = c.runner.windowPs; } });
    expect(1_000_001 % windowPs).not.toBe(0); // the premise
    expect(odd.timeline!.intervalPs).toBe(Math.ceil(1_000_001 / windowPs) * windowPs);
    expect(odd.timeline!.placedBytes.at(-1)).toBe(odd.totalBytes);
  });

  it("refuses before running: without --json, finer than 1 ns, or for a collective scenario (the API: RangeError)", async () => {
    const hint = "\n(menic run --help says how to use it)\n";
    expect(menic("run", "examples/scenarios/permutation.json", "--timeline", "1us")).toEqual({ status: 2, stdout: "", stderr: `menic: --timeline needs --json (the timeline is a field of the JSON result)${hint}` });
    expect(menic("run", "examples/scenarios/permutation.json", "--timeline", "500ps", "--json")).toEqual({ status: 2, stdout: "", stderr: `menic: --timeline must be at least 1ns, got 500 ps${hint}` });
    expect(menic("run", "examples/scenarios/allreduce-ring.json", "--timeline", "1us", "--json")).toEqual({
      status: 2, stdout: "", stderr: `menic: --timeline samples a traffic scenario's bytes placed; examples/scenarios/allreduce-ring.json runs a collective${hint}`,
    });
    await expect(runScenario(coreModule(), load("permutation"), { timelinePs: 999 })).rejects.toThrow(new RangeError("timelinePs must be an integer number of ps, at least 1000 (1 ns), got 999"));
    await expect(runScenario(coreModule(), { ...load("allreduce-ring"), sweep: undefined }, { timelinePs: 1_000_000 })).rejects.toThrow(/^timelinePs: a timeline samples a traffic scenario's bytes placed; this scenario runs a collective$/);
  });
});

describe("menic run: Ctrl-C", () => {
  it("stops at the next step, prints what was reached, writes the capture so far, exits 130", async () => {
    const pcap = join(tmp, "stopped.pcapng"), trace = join(tmp, "stopped.json");
    const child = spawn("node", ["bin/menic.js", "run", "examples/scenarios/roce-pair.json", "--set", "traffic.messages=4096", "--json", "--pcap", pcap, "--trace", trace], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "", stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    // the capture writes a buffer of frames at a time: once there are bytes, the run is on
    // (no wall-clock limit: a loaded machine may take long to start; the test's timeout is the backstop)
    while (!(existsSync(pcap) && statSync(pcap).size > 0) && child.exitCode === null) await new Promise((r) => setTimeout(r, 20));
    child.kill("SIGINT");
    expect(await exited).toBe(130);
    const j = JSON.parse(stdout);
    expect(j.ended).toBe("stopped");
    expect(j.endPs).toBeLessThan(j.untilPs);
    expect(j.messages.completed).toBeLessThan(4096);
    const frames = Number(/wrote .* \((\d+) frames\)/.exec(stderr)?.[1]);
    expect(frames).toBeGreaterThan(0);
    expect(readPcapng(readFileSync(pcap)).packets).toHaveLength(frames);
    // the trace so far: rate samples up to the time the run stopped, none after
    const events = Number(/wrote .*stopped\.json \((\d+) trace events\)/.exec(stderr)?.[1]);
    const t = JSON.parse(readFileSync(trace, "utf8"));
    expect(t.traceEvents.length).toBe(events);
    const samples = t.traceEvents.filter((e: { ph: string }) => e.ph === "C").map((e: { ts: number }) => e.ts);
    expect(samples.length).toBeGreaterThan(0);
    expect(Math.max(...samples)).toBeLessThanOrEqual(j.endPs / 1e6);
  });
});

// /dev/full: every write fails with ENOSPC, as on a full disk (Linux)
describe.skipIf(!existsSync("/dev/full"))("menic run --pcap/--trace to a full disk (issue 26)", () => {
  it("prints the results all the same, then names the option and the path, and exits 1", async () => {
    const r = await direct("roce-pair");
    const table = formatResult(r);
    for (const opt of ["--pcap", "--trace"]) {
      const out = menic("run", "examples/scenarios/roce-pair.json", opt, "/dev/full");
      expect(out, opt).toEqual({ status: 1, stdout: table, stderr: `menic: ${opt} /dev/full: no space left on device (ENOSPC)\n` });
    }
    // both, with --json: the result as ever on stdout, a line per file that failed
    const both = menic("run", "examples/scenarios/roce-pair.json", "--json", "--pcap", "/dev/full", "--trace", "/dev/full");
    expect(both.status).toBe(1);
    expect(both.stdout).toBe(`${JSON.stringify(r)}\n`);
    expect(both.stderr).toBe("menic: --pcap /dev/full: no space left on device (ENOSPC)\nmenic: --trace /dev/full: no space left on device (ENOSPC)\n");
  });

  it("a run that failed keeps its own exit status; the message comes after its results", () => {
    const out = menic("run", "examples/scenarios/roce-pair.json", "--set", "traffic.messages=4", "--set", "until=20us", "--pcap", "/dev/full");
    expect(out.status).toBe(1);
    expect(out.stdout).toMatch(/^roce-pair \(seed 1\): ran out of time/);
    expect(out.stderr).toBe("menic: --pcap /dev/full: no space left on device (ENOSPC)\n");
  });
});

describe("menic run --pcap: fabric traffic as Ethernet frames, read by Wireshark", () => {
  // 2% loss on every link: lost frames leave and never arrive, go-back-N retransmits
  const sets = ["--set", "traffic.messages=4", "--set", "traffic.messageBytes=65536", "--set", "faults[0].random=0.02"];
  let file = "";
  let r: ScenarioResult;
  let stderr = "";
  beforeAll(async () => {
    file = join(tmp, "loss.pcapng");
    const out = menic("run", "examples/scenarios/roce-loss.json", ...sets, "--pcap", file, "--json");
    expect(out.status).toBe(0);
    stderr = out.stderr;
    r = JSON.parse(out.stdout);
    expect(r).toEqual(JSON.parse(JSON.stringify(await direct("roce-loss", "traffic.messages=4", "traffic.messageBytes=65536", "faults[0].random=0.02")))); // capturing changes nothing
  });

  it("writes the frames it says, one interface per device port (test/cluster-capture.test.ts checks the frames)", () => {
    const f = readPcapng(readFileSync(file));
    expect(stderr).toBe(`menic: wrote ${file} (${f.packets.length} frames)\n`);
    expect(f.interfaces.map((i) => i.name)).toEqual(["dev0.port0", "dev1.port0"]);
    expect(f.packets.filter((p) => p.flags === 1)).toHaveLength(r.fabric.delivered);
  });

  it.skipIf(!hasTshark)("decodes every frame as eth:ethertype:ip:udp:infiniband, none malformed, IPv4 checksums good", () => {
    const packets = tsharkPackets(file);
    expect(packets.length).toBe(readPcapng(readFileSync(file)).packets.length);
    packets.forEach((p, k) => {
      expect(p.get("frame.protocols")?.[0], `frame ${k + 1}`).toMatch(/^eth:ethertype:ip:udp:infiniband(:|$)/);
      expect(p.get("udp.dstport"), `frame ${k + 1}`).toEqual(["4791"]);
      expect(p.get("ip.checksum.status"), `frame ${k + 1}`).toEqual(["1"]);
    });
    expect(readCapture(file, ["-Y", "_ws.malformed || _ws.expert", "-T", "fields", "-e", "frame.number"]).trim()).toBe("");
    expect(new Set(packets.map((p) => p.get("frame.interface_name")![0]))).toEqual(new Set(["dev0.port0", "dev1.port0"]));
  });
});
