// Writes a generator's outputs, or with `--check` on the command line writes nothing and exits 1
// naming the files that differ from what it would write (the tests run generators that way).
import { readFileSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";

/** `outputs` maps a path below `root` to its text; `regen` is the command that rewrites them. */
export function writeGenerated(root, outputs, regen) {
  const check = process.argv.includes("--check");
  const stale = [];
  for (const [rel, text] of Object.entries(outputs)) {
    const path = join(root, rel);
    const old = existsSync(path) ? readFileSync(path, "utf8") : null;
    if (old === text) continue;
    if (check) stale.push(rel);
    else { mkdirSync(dirname(path), { recursive: true }); writeFileSync(path, text); console.log(`wrote ${rel}`); }
  }
  if (stale.length) { console.error(`stale generated files: ${stale.join(", ")} (run ${regen})`); process.exit(1); }
}
