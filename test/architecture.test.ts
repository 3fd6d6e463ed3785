import { describe, it, expect } from "vitest";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";

// The core's module structure (ARCHITECTURE.md): folders that show its blocks, no import
// circles, and core/ below every block.

const ROOT = "assembly";

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return name === "generated" ? [] : sources(p);
    return p.endsWith(".ts") ? [p] : [];
  });
}

/** Each module's relative imports (generated views left out), as paths from the repo root. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(ROOT)) {
    const deps: string[] = [];
    for (const m of readFileSync(file, "utf8").matchAll(/from\s*"(\.[^"]*)"/g)) {
      const target = normalize(join(dirname(file), m[1]!)) + ".ts";
      if (!target.includes("/generated/")) deps.push(target);
    }
    graph.set(file, deps);
  }
  return graph;
}

/** One import circle as a path a → … → a, or null. */
function findCycle(graph: Map<string, string[]>): string[] | null {
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const visit = (v: string): string[] | null => {
    state.set(v, 1);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (state.get(w) === 1) return [...stack.slice(stack.indexOf(w)), w];
      if (!state.has(w)) {
        const c = visit(w);
        if (c) return c;
      }
    }
    stack.pop();
    state.set(v, 2);
    return null;
  };
  for (const v of graph.keys()) {
    if (!state.has(v)) {
      const c = visit(v);
      if (c) return c;
    }
  }
  return null;
}

describe("core module structure", () => {
  const graph = importGraph();

  it("has no import circles", () => {
    expect(findCycle(graph)?.map((p) => relative(ROOT, p)).join(" -> ") ?? "none").toBe("none");
  });

  it("finds a circle when there is one (the check itself works)", () => {
    const g = new Map(graph);
    g.set("assembly/core/sched.ts", [...(g.get("assembly/core/sched.ts") ?? []), "assembly/run.ts"]);
    expect(findCycle(g)).not.toBeNull();
  });

  it("keeps core/ below every block: it imports nothing outside core/", () => {
    const outward = [...graph].flatMap(([file, deps]) =>
      file.startsWith("assembly/core/") ? deps.filter((d) => !d.startsWith("assembly/core/")).map((d) => `${file} -> ${d}`) : []);
    expect(outward).toEqual([]);
  });

  it("lets no block call up into the step loop, the cluster's window loop or the export surface", () => {
    // the export surface and the cluster's window loop (which steps devices as the host does) sit above the step loop
    const top = ["assembly/run.ts", "assembly/index.ts", "assembly/create.ts", "assembly/cluster.ts"];
    const upward = [...graph].flatMap(([file, deps]) =>
      deps.filter((d) => top.includes(d))
        .filter(() => file !== "assembly/index.ts" && !(file === "assembly/cluster.ts")).map((d) => `${file} -> ${d}`));
    expect(upward).toEqual([]);
  });

  it("frees nothing: a device's arena is memory no block had before, zero as wasm grew it (assembly/create.ts)", () => {
    // the runtime "stub" gives a freed last block out again, dirty; createDevice clears nothing
    const frees = sources(ROOT).flatMap((file) =>
      readFileSync(file, "utf8").split("\n").flatMap((line, i) => (/^\s*\/\//.test(line) ? [] : /\bheap\.(free|realloc)\s*\(|__free\s*\(|__renew\s*\(/.test(line) ? [`${file}:${i + 1}`] : [])));
    expect(frees).toEqual([]);
    expect(JSON.parse(readFileSync("asconfig.json", "utf8")).options.runtime).toBe("stub");
  });
});
