import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseShard, inShard, shardSize } from "../host/scenario/shard.js";
import { ConfigError } from "../host/config.js";

// `menic run --shard i/n --json` and `menic merge` (issue 31 §5, docs/scale.md): a sweep cut into
// shards run in separate processes and merged gives, byte for byte, the table and the JSON one
// process gives for the whole sweep; files that are not one whole sweep's shards are refused,
// saying which file and why. `menic run --jobs N` (§4): a sweep's runs on N worker threads give
// the same bytes as on one, and Ctrl-C stops them as it stops a sweep on one.

const tmp = mkdtempSync(join(tmpdir(), "menic-shard-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const menic = (...args: string[]) => {
  const r = spawnSync("node", ["bin/menic.js", ...args], { encoding: "utf8" });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
};
const file = (name: string, text: string) => { const p = join(tmp, name); writeFileSync(p, text); return p; };

// 6 runs whose results differ: loss on or off, 1 to 3 messages (a lost frame in the last)
const SWEEP = {
  name: "shard-check", seed: 5, until: "5ms", transport: "metaroce",
  devices: { count: 2 }, fabric: { topology: { kind: "single-switch" } },
  traffic: { pattern: "pairs", messageBytes: 65536, messages: 2 },
  sweep: { faults: [[], [{ kind: "loss", random: 0.01 }]], "traffic.messages": [1, 2, 3] },
};

describe("menic run --shard and menic merge", () => {
  let scenario: string;
  let whole: { json: string; table: string };
  const shards: string[] = [];
  beforeAll(() => {
    scenario = file("sweep.json", JSON.stringify(SWEEP));
    whole = { json: menic("run", scenario, "--json").stdout, table: menic("run", scenario).stdout };
    for (let i = 1; i <= 4; i++) {
      const r = menic("run", scenario, "--json", "--shard", `${i}/4`);
      expect(r.status, r.stderr).toBe(0);
      shards.push(file(`shard-${i}.json`, r.stdout));
    }
  });

  it("a shard makes every n-th run of the sweep, from run i", () => {
    const s = JSON.parse(readFileSync(shards[1]!, "utf8"));
    expect([s.format, s.shard, s.planned, s.runs.map((r: { run: number }) => r.run)]).toEqual(["menic-sweep-shard/1", { index: 2, count: 4 }, 6, [1, 5]]);
    // its runs are the whole sweep's runs 1 and 5, whole
    const all = JSON.parse(whole.json).runs;
    expect(s.runs.map((r: { set: unknown; result: unknown }) => ({ set: r.set, result: r.result }))).toEqual([all[1], all[5]]);
    expect(all[5].set).toEqual({ faults: [{ kind: "loss", random: 0.01 }], "traffic.messages": 3 });
    expect(all[5].result.retransmits).toBe(1); // the runs differ: a merge in the wrong order would show
  });

  it("four shards run in separate processes merge, in any order, to the one process's JSON and table, byte for byte", () => {
    const json = menic("merge", shards[2]!, shards[0]!, shards[3]!, shards[1]!, "--json");
    expect(json.status, json.stderr).toBe(0);
    expect(json.stdout).toBe(whole.json);
    const table = menic("merge", ...shards);
    expect(table.status).toBe(0);
    expect(table.stdout).toBe(whole.table);
    expect(table.stdout.split("\n")[0]).toBe("shard-check: 6 runs");
  });

  it("more shards than runs: the empty ones are shards too", () => {
    const many = Array.from({ length: 8 }, (_, k) => file(`many-${k + 1}.json`, menic("run", scenario, "--json", "--shard", `${k + 1}/8`).stdout));
    expect(JSON.parse(readFileSync(many[7]!, "utf8")).runs).toEqual([]);
    expect(menic("merge", ...many, "--json").stdout).toBe(whole.json);
  });

  it("refuses files that are not one whole sweep's shards, saying which and why", () => {
    const edit = (from: string, name: string, change: (s: Record<string, any>) => void) => {
      const s = JSON.parse(readFileSync(from, "utf8"));
      change(s);
      return file(name, JSON.stringify(s));
    };
    const refused = (...files: string[]) => {
      const r = menic("merge", ...files);
      expect(r.status).toBe(2);
      expect(r.stdout).toBe("");
      return r.stderr.trim();
    };
    const [s1, s2, s3, s4] = shards as [string, string, string, string];
    expect(refused(s1, s2, s4)).toBe("menic: merge: shard 3 of 4 missing: give every shard of the sweep");
    expect(refused(s1, s2, s3, s4, s2)).toBe(`menic: ${s2}: is shard 2/4, as ${s2} is: each shard once`);
    const other = file("other.json", menic("run", scenario, "--json", "--shard", "3/4", "--seed", "6").stdout);
    expect(refused(s1, s2, other, s4)).toMatch(new RegExp(`^menic: ${other}: is of scenario "shard-check" with digest "[0-9a-f]{16}", where ${s1} has "[0-9a-f]{16}": not a shard of the same sweep$`));
    // --timeline adds a field to every result: shards with and without it are not one sweep
    const timeline = file("timeline.json", menic("run", scenario, "--json", "--shard", "3/4", "--timeline", "1us").stdout);
    expect(refused(s1, s2, timeline, s4)).toMatch(/^menic: .*timeline\.json: is of scenario "shard-check" with digest "[0-9a-f]{16}", where .* has "[0-9a-f]{16}": not a shard of the same sweep$/);
    const thirds = file("third.json", menic("run", scenario, "--json", "--shard", "3/3").stdout);
    expect(refused(s1, s2, thirds, s4)).toBe(`menic: ${thirds}: is one shard of 3, where ${s1} has 4: not a shard of the same sweep`);
    expect(refused(s1, edit(s2, "old.json", (s) => { s.menic = "0.0.9"; }), s3, s4)).toBe(`menic: ${join(tmp, "old.json")}: was run by menic "0.0.9", where ${s1} has "${JSON.parse(readFileSync(s1, "utf8")).menic}": not a shard of the same sweep`);
    expect(refused(s1, edit(s2, "stopped.json", (s) => { s.runs[1].result.ended = "stopped"; }), s3, s4)).toBe(`menic: ${join(tmp, "stopped.json")}: was stopped in run 5 (Ctrl-C): run shard 2/4 again`);
    expect(refused(s1, edit(s2, "short.json", (s) => { s.runs.pop(); }), s3, s4)).toBe(`menic: ${join(tmp, "short.json")}: holds 1 of its 2 runs: run shard 2/4 again`);
    expect(refused(s1, edit(s2, "moved.json", (s) => { s.runs[0].run = 2; }), s3, s4)).toBe(`menic: ${join(tmp, "moved.json")}: runs[0] is not run 1 of the sweep`);
    const one = file("one.json", whole.json);
    expect(refused(one)).toBe(`menic: ${one}: is not a shard file (it has no format, not "menic-sweep-shard/1"): menic run --shard i/n --json writes one`);
    expect(refused(file("bad.json", "{\"format\": "))).toMatch(/^menic: .*bad\.json:1:\d+: not JSON/);
  });

  it("--shard needs --json, a sweep, and i/n with 1 <= i <= n", () => {
    const usage = (...args: string[]) => { const r = menic("run", ...args); expect(r.status).toBe(2); return r.stderr.split("\n")[0]; };
    expect(usage(scenario, "--shard", "1/4")).toBe("menic: --shard prints its shard file as JSON: it needs --json (menic merge reads the files)");
    expect(usage(scenario, "--json", "--shard", "5/4")).toBe("menic: --shard: i must be from 1 to n (4), got 5");
    expect(usage(scenario, "--json", "--shard", "2")).toBe('menic: --shard: must be i/n (this shard\'s number, from 1, and how many there are: 2/4), got "2"');
    expect(usage("examples/scenarios/roce-pair.json", "--json", "--shard", "1/2")).toBe('menic: --shard cuts a sweep into shards; examples/scenarios/roce-pair.json has no "sweep"');
  });
});

describe("menic run --jobs", () => {
  let scenario: string;
  beforeAll(() => { scenario = file("jobs.json", JSON.stringify(SWEEP)); });

  it("2 and 5 threads give one thread's JSON and table, byte for byte, and with --shard its shard", () => {
    const one = { json: menic("run", scenario, "--json").stdout, table: menic("run", scenario).stdout };
    expect(one.json.length).toBeGreaterThan(1000);
    for (const jobs of ["2", "5"]) {
      expect(menic("run", scenario, "--json", "--jobs", jobs).stdout).toBe(one.json);
      expect(menic("run", scenario, "--jobs", jobs).stdout).toBe(one.table);
    }
    expect(menic("run", scenario, "--json", "--jobs", "2", "--shard", "2/4").stdout).toBe(menic("run", scenario, "--json", "--shard", "2/4").stdout);
  });

  it("refuses --jobs on a scenario with no sweep", () => {
    const r = menic("run", "examples/scenarios/roce-pair.json", "--jobs", "2");
    expect([r.status, r.stderr.split("\n")[0]]).toEqual([2, 'menic: --jobs makes a sweep\'s runs at once on worker threads; examples/scenarios/roce-pair.json has no "sweep" (a run alone uses one thread)']);
  });

  it.skipIf(spawnSync("script", ["--version"], { stdio: "ignore" }).status !== 0)("Ctrl-C stops the runs going on: the table ends at the first stopped run and the exit status is 130", async () => {
    // run 1 (2 messages) ends at once and the line says so; runs 2 and 3 (4,096 each) are then
    // on their threads, and Ctrl-C typed into the terminal stops them
    const long = file("long.json", JSON.stringify({ ...SWEEP, faults: [], sweep: { "traffic.messages": [2, 4096, 4096, 4096] } }));
    const child = spawn("script", ["-qec", `node bin/menic.js run ${long} --jobs 2`, "/dev/null"], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "", sent = false;
    child.stdout.on("data", (d) => {
      out += d;
      if (!sent && /run 1 of 4 finished; 1 of 4 done on 2 threads; wall \d+\.\d s/.test(out)) { sent = true; child.stdin.write("\x03"); }
    });
    expect(await new Promise<number | null>((resolve) => child.on("exit", resolve))).toBe(130);
    expect(out).toContain("shard-check: stopped in run 2 of 4");
    const rows = out.split(/\r?\n/).filter((l) => /^(2|4096) /.test(l));
    expect(rows.map((l) => l.split(/\s+/).at(-1))).toEqual(["finished", "stopped"]);
  });
});

describe("shard arithmetic", () => {
  it("every run in exactly one shard, each shard's size what it makes", () => {
    for (const [planned, count] of [[6, 4], [7, 7], [3, 8], [0, 2], [100, 9]] as const) {
      const owners = Array.from({ length: planned }, (_, k) => Array.from({ length: count }, (_, i) => i + 1).filter((index) => inShard(k, { index, count })));
      expect(owners.every((o) => o.length === 1)).toBe(true);
      for (let index = 1; index <= count; index++) expect(shardSize(planned, { index, count })).toBe(owners.filter((o) => o[0] === index).length);
    }
    expect(parseShard(" 3/16 ")).toEqual({ index: 3, count: 16 });
    expect(() => parseShard("0/4")).toThrow(ConfigError);
    expect(() => parseShard("1/0")).toThrow("n must be from 1");
  });
});
