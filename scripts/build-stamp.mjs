// The incremental part of npm run build (scripts/build.mjs): a step runs only when what it read
// last time changed, or what it wrote is gone or no longer the bytes it wrote. Inputs are hashed
// by content (sha256; touching a file changes nothing), with their paths, so a file added to,
// removed from or renamed in an input folder counts too. The record of each step (the hash of its
// inputs, the files its tool said it read, the hash of every output) is one JSON file.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

/** Every file under `paths` (files or folders, relative to `root`), sorted, relative to `root`;
 * a path that does not exist is listed as it is (and hashed as missing). */
export function filesUnder(root, paths) {
  const out = new Set();
  const walk = (p) => {
    let st;
    try {
      st = statSync(join(root, p));
    } catch {
      out.add(p);
      return;
    }
    if (st.isDirectory()) for (const e of readdirSync(join(root, p))) walk(join(p, e));
    else out.add(p);
  };
  for (const p of paths) walk(relative(root, resolve(root, p)));
  return [...out].sort();
}

/** sha256 of a file's bytes, or "missing". */
function fileHash(path) {
  try {
    return createHash("sha256").update(readFileSync(path)).digest("hex");
  } catch {
    return "missing";
  }
}

export class BuildStamp {
  /**
   * @param {string} root  the folder every path is relative to
   * @param {string} file  the record, relative to root (e.g. build/build-stamp.json)
   * @param {{ force?: boolean, common?: string[], versions?: Record<string, string> }} opts
   *   force: run every step; common: inputs of every step (the build scripts, the lock file);
   *   versions: of the tools every step uses (node)
   */
  constructor(root, file, opts = {}) {
    this.root = root;
    this.file = join(root, file);
    this.common = opts.common ?? [];
    this.versions = opts.versions ?? {};
    this.record = {};
    if (!opts.force && existsSync(this.file)) {
      try {
        this.record = JSON.parse(readFileSync(this.file, "utf8"));
      } catch {
        this.record = {}; // unreadable: every step runs
      }
    }
  }

  /** One hash of the files under `paths` (paths and contents) and of `versions`. */
  inputsHash(paths, versions) {
    const h = createHash("sha256").update(JSON.stringify({ ...this.versions, ...versions }));
    for (const f of filesUnder(this.root, [...this.common, ...paths])) h.update(`${f}\0${fileHash(join(this.root, f))}\0`);
    return h.digest("hex");
  }

  /** The files under `paths` as { path: hash }, or null when one is missing. */
  outputHashes(paths) {
    const out = {};
    for (const f of filesUnder(this.root, paths)) {
      const h = fileHash(join(this.root, f));
      if (h === "missing") return null;
      out[f] = h;
    }
    return out;
  }

  /** True when the step `name` need not run: same inputs, outputs still the bytes it wrote. */
  upToDate(name, inputs, versions) {
    const was = this.record[name];
    if (!was || was.inputs !== this.inputsHash([...inputs, ...(was.read ?? [])], versions) || !was.outputs) return false;
    const now = this.outputHashes(Object.keys(was.outputs));
    return now !== null && Object.entries(was.outputs).every(([f, h]) => now[f] === h);
  }

  /**
   * Runs `run` unless the step is up to date, and records it; returns whether it ran.
   * `inputs`: files and folders it reads; `versions`: its tools'; `run` resolves to
   * { outputs, read? }: the files and folders it wrote and, where the tool says, every file it
   * read (esbuild's metafile), which the next check hashes as well.
   */
  async step(name, { inputs, versions = {}, run }) {
    if (this.upToDate(name, inputs, versions)) return false;
    delete this.record[name];
    this.save(); // a step that fails half way leaves no record: it runs again next time
    const done = await run();
    const read = done.read?.map((f) => relative(this.root, resolve(this.root, f))).sort();
    this.record[name] = {
      inputs: this.inputsHash([...inputs, ...(read ?? [])], versions),
      outputs: this.outputHashes(done.outputs),
      ...(read ? { read } : {}),
    };
    this.save();
    return true;
  }

  save() {
    mkdirSync(dirname(this.file), { recursive: true });
    writeFileSync(`${this.file}.tmp`, `${JSON.stringify(this.record, null, 1)}\n`);
    renameSync(`${this.file}.tmp`, this.file);
  }
}
