import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";

// The sharded sweep examples of docs/scale.md, run here as their engines would run them: the
// Slurm job array's script once per array task (SLURM_ARRAY_TASK_ID and _COUNT set as Slurm
// sets them), the Kubernetes Indexed Job's container script once per index (JOB_COMPLETION_INDEX,
// its ConfigMap's scenario and its volume's directory put where the pod mounts them); then
// `menic merge` on what they wrote must be what one `menic run` of the sweep prints.

const tmp = mkdtempSync(join(tmpdir(), "menic-scale-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
// `menic` on PATH, as the package installs it
const bin = join(tmp, "bin");
mkdirSync(bin);
writeFileSync(join(bin, "menic"), `#!/bin/sh\nexec node ${JSON.stringify(resolve("bin/menic.js"))} "$@"\n`);
chmodSync(join(bin, "menic"), 0o755);
const env = (extra: Record<string, string>) => ({ ...process.env, PATH: `${bin}:${process.env.PATH}`, ...extra });
const menic = (...args: string[]) => spawnSync("node", ["bin/menic.js", ...args], { encoding: "utf8" });
const shardFiles = (dir: string) => readdirSync(dir).filter((f) => f.endsWith(".json")).sort().map((f) => join(dir, f));

const SCENARIO = "examples/scenarios/metaroce-loss.json";
let whole: string;
beforeAll(() => { whole = menic("run", SCENARIO).stdout; });

describe("examples/scale/menic-sweep.sbatch: a Slurm job array", () => {
  it("its 3 array tasks write 3 shards that merge to the one process's table", () => {
    const out = join(tmp, "slurm");
    for (let i = 1; i <= 3; i++) {
      const r = spawnSync("bash", ["examples/scale/menic-sweep.sbatch", SCENARIO, out], { encoding: "utf8", env: env({ SLURM_ARRAY_TASK_ID: String(i), SLURM_ARRAY_TASK_COUNT: "3" }) });
      expect(r.status, r.stderr).toBe(0);
    }
    const files = shardFiles(out);
    expect(files.map((f) => f.slice(out.length + 1))).toEqual(["shard-1.json", "shard-2.json", "shard-3.json"]);
    const merged = menic("merge", ...files, "--allow-failures");
    expect(merged.stdout).toBe(whole);
    expect(merged.stdout.split("\n")[0]).toBe("metaroce-loss: 10 runs");
  });

  it("outside an array task it says so and writes nothing", () => {
    const r = spawnSync("bash", ["examples/scale/menic-sweep.sbatch", SCENARIO, join(tmp, "none")], { encoding: "utf8", env: env({}) });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain("not an array task: sbatch --array=1-N");
  });
});

describe("examples/scale/menic-sweep-job.yaml: a Kubernetes Indexed Job", () => {
  const docs = parseAllDocuments(readFileSync("examples/scale/menic-sweep-job.yaml", "utf8")).map((d) => d.toJS());
  const job = docs.find((d) => d.kind === "Job")!, config = docs.find((d) => d.kind === "ConfigMap")!;
  const container = job.spec.template.spec.containers[0];

  it("is an Indexed Job whose completions are its shard count, running the shipped scenario", () => {
    expect(docs.map((d) => d.kind)).toEqual(["ConfigMap", "PersistentVolumeClaim", "Job"]);
    expect(job.spec.completionMode).toBe("Indexed");
    expect(container.env).toEqual([{ name: "SHARDS", value: String(job.spec.completions) }]);
    const { $schema: _, ...shipped } = JSON.parse(readFileSync(SCENARIO, "utf8"));
    expect(JSON.parse(config.data["sweep.json"])).toEqual(shipped);
  });

  it("its pods' script, one run per index, writes shards that merge to the one process's table", () => {
    const scenarioDir = join(tmp, "k8s-scenario"), out = join(tmp, "k8s-out");
    mkdirSync(scenarioDir);
    mkdirSync(out);
    writeFileSync(join(scenarioDir, "sweep.json"), config.data["sweep.json"]);
    // the pod's mounts (volumeMounts) are directories here
    const mounts = Object.fromEntries(container.volumeMounts.map((m: { name: string; mountPath: string }) => [m.mountPath, m.name === "scenario" ? scenarioDir : out]));
    let script: string = container.args[0];
    for (const [path, dir] of Object.entries(mounts)) script = script.replaceAll(`${path}/`, `${dir}/`);
    expect(container.command).toEqual(["sh", "-c"]);
    for (let index = 0; index < job.spec.completions; index++) {
      const r = spawnSync("sh", ["-c", script], { encoding: "utf8", env: env({ JOB_COMPLETION_INDEX: String(index), SHARDS: container.env[0].value }) });
      expect(r.status, r.stderr).toBe(0);
    }
    const files = shardFiles(out);
    expect(files.length).toBe(4);
    expect(menic("merge", ...files, "--allow-failures").stdout).toBe(whole);
  });
});
