// What every `menic` command shares: its options declared once (name, value, default, help),
// parsed from argv with one kind of usage error, and its --help generated from the same
// declaration, so a new option cannot be added without its help line and default. Node only
// (it checks output paths on disk).

import { accessSync, constants, existsSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import { parseTime } from "../units.js";
import { didYouMean } from "../user-input.js";

/** Exit statuses, the same for every command. */
export const EXIT = {
  /** the command did what it was asked and the run succeeded */
  ok: 0,
  /**
   * the run itself failed: an engine faulted or exited non-zero, a message failed, time ran out, a
   * test failed; or an output file could not be written as the run went (a full disk), after the
   * results were printed
   */
  failed: 1,
  /** bad usage or bad input: an unknown option, a missing or bad value, an unreadable or invalid file, an unwritable output path */
  usage: 2,
  /** stopped by Ctrl-C (SIGINT), after printing and writing what was reached */
  stopped: 130,
} as const;

export const EXIT_HELP = `exit status: ${EXIT.ok} success; ${EXIT.failed} the run failed (a fault, a non-zero exit, a failed message or
test, time ran out) or an output file could not be written (a full disk: the results are printed
first); ${EXIT.usage} bad usage or bad input (any option or file); ${EXIT.stopped} stopped by Ctrl-C.`;

/** A mistake in how the command was called or in what it was given; exits EXIT.usage. */
export class UsageError extends Error {
  constructor(message: string, readonly command?: string) {
    super(message);
  }
}

/**
 * What an option takes:
 * - flag: nothing (`--json`); a boolean
 * - string: one text value; `strings`: repeatable, every value kept in order
 * - time: a simulated time with its unit (`10ns`, `2.5us`); bigint ps
 * - int: a whole number within [min, max]
 * - bytes: a size, bytes or with a unit (`64KB`, `256MiB`, `1.5GB`), within [min, max]; a number
 * - out: a file the command writes, checked writable before anything runs
 * - outdir: a directory the command writes files into (made when it first writes, if missing),
 *   checked before anything runs
 */
export type OptionKind = "flag" | "string" | "strings" | "time" | "int" | "bytes" | "out" | "outdir";

export interface OptionSpec<K extends OptionKind = OptionKind> {
  kind: K;
  /** one-letter alias (`-o`) */
  short?: string;
  /** the value's placeholder in help, e.g. `<file>` */
  value?: string;
  /** one line on what it does */
  help: string;
  /**
   * The default: a literal parsed like a typed value (`"1s"`, `"2"`), or, in parentheses, what
   * happens without the option (`"(no trace)"`, `"(the config's, 16)"`), or `"(required)"`.
   * Help prints it.
   */
  default: string;
  min?: number;
  max?: number;
  /** the values a string option accepts */
  choices?: readonly string[];
}

export interface CommandSpec {
  /** as typed after `menic`, e.g. `fw run` */
  name: string;
  /** the positional arguments in the usage line, e.g. `<image.elf>` */
  args: string;
  /** one line for the list of commands */
  summary: string;
  /** what it does, a few lines */
  about: string;
  options: Record<string, OptionSpec>;
  /** printed after the options (exit statuses, examples) */
  notes?: string;
  /** arguments after `--` are passed on untouched (fw build: to clang) */
  passThrough?: string;
}

type ValueOf<K extends OptionKind> = K extends "flag" ? boolean
  : K extends "strings" ? string[]
  : K extends "time" ? bigint | undefined
  : K extends "int" | "bytes" ? number | undefined
  : string | undefined;

export type OptionValues<O extends Record<string, OptionSpec>> = { [N in keyof O]: ValueOf<O[N]["kind"]> };

export interface Parsed<O extends Record<string, OptionSpec>> {
  values: OptionValues<O>;
  positionals: string[];
  /** what followed `--`, when the command passes it on */
  passed: string[];
}

const HELP: OptionSpec<"flag"> = { kind: "flag", short: "h", help: "print this help and exit", default: "(off)" };

/**
 * Parses a command's arguments against its spec. Returns null when --help (or -h) was asked
 * for (the caller prints `commandHelp`); throws UsageError naming the option for an unknown
 * option, a missing value, a value given to a flag, or a bad value.
 */
export function parseCommand<O extends Record<string, OptionSpec>>(spec: CommandSpec & { options: O }, argv: string[]): Parsed<O> | null {
  const all: Record<string, OptionSpec> = { ...spec.options, help: HELP };
  const byShort = new Map(Object.entries(all).filter(([, o]) => o.short).map(([n, o]) => [o.short!, n]));
  const terminator = argv.indexOf("--");
  const own = terminator >= 0 && spec.passThrough ? argv.slice(0, terminator) : argv;
  const passed = terminator >= 0 && spec.passThrough ? argv.slice(terminator + 1) : [];
  const nodeOptions = Object.fromEntries(Object.entries(all).map(([n, o]) => [n, {
    type: o.kind === "flag" ? "boolean" as const : "string" as const,
    ...(o.short ? { short: o.short } : {}),
  }]));
  const { tokens } = parseArgs({ args: own, options: nodeOptions, strict: false, allowPositionals: true, tokens: true });
  const raw = new Map<string, string[]>();
  const typed = new Map<string, string>(); // as the user wrote the option: -O or --opt
  const positionals: string[] = [];
  const fail = (msg: string) => new UsageError(msg, spec.name);
  for (const t of tokens) {
    if (t.kind === "positional") { positionals.push(t.value); continue; }
    if (t.kind === "option-terminator") continue;
    // parseArgs keeps a short option's letter as its name when it is not declared
    const name = all[t.name] ? t.name : byShort.get(t.name);
    const o = name ? all[name] : undefined;
    if (!name || !o) throw fail(`unknown option ${t.rawName}${t.rawName.startsWith("--") ? didYouMean(t.rawName.slice(2), Object.keys(all), (k) => `--${k}`) : ""}`);
    const shown = o.short && t.rawName === `-${o.short}` ? t.rawName : `--${name}`;
    typed.set(name, shown);
    if (o.kind === "flag") {
      if (t.value !== undefined) throw fail(`${shown} takes no value, got ${t.rawName}=${t.value}`);
      raw.set(name, ["true"]);
      continue;
    }
    // `--seed --json`: parseArgs would take the next option as the value
    if (t.value === undefined || (!t.inlineValue && t.value.startsWith("-") && t.value.length > 1))
      throw fail(`${shown} needs a value ${o.value ?? "<value>"}${t.value !== undefined ? ` (got ${t.value}; write ${shown}=${t.value} if that is the value)` : ""}`);
    if (o.kind === "strings") raw.set(name, [...(raw.get(name) ?? []), t.value]);
    else if (raw.has(name)) throw fail(`${shown} given twice`);
    else raw.set(name, [t.value]);
  }
  if (raw.has("help")) return null;
  const values: Record<string, unknown> = {};
  for (const [name, o] of Object.entries(spec.options)) {
    const given = raw.get(name);
    const literal = o.default.startsWith("(") ? undefined : o.default;
    if (o.kind === "flag") values[name] = given !== undefined;
    else if (o.kind === "strings") values[name] = given ?? [];
    else if (given === undefined && literal === undefined) values[name] = undefined;
    else {
      const text = given?.[0] ?? literal!;
      try {
        values[name] = optionValue(o, text);
      } catch (e) {
        throw fail(`${typed.get(name) ?? `--${name}`} ${text}: ${(e as Error).message}`);
      }
    }
  }
  return { values: values as OptionValues<O>, positionals, passed };
}

function optionValue(o: OptionSpec, text: string): unknown {
  switch (o.kind) {
    case "time": return parseTimeWithUnit(text);
    case "int": {
      if (!/^-?\d+$/.test(text.trim())) throw new Error("not a whole number");
      const n = Number(text);
      if ((o.min !== undefined && n < o.min) || (o.max !== undefined && n > o.max)) throw new Error(`must be in [${o.min ?? "-∞"}, ${o.max ?? "∞"}]`);
      return n;
    }
    case "bytes": {
      const n = parseByteSize(text);
      if ((o.min !== undefined && n < o.min) || (o.max !== undefined && n > o.max)) throw new Error(`must be in [${o.min ?? 0}, ${o.max ?? "∞"}] bytes`);
      return n;
    }
    case "out": checkWritable(text); return text;
    case "outdir": checkWritableDir(text); return text;
    default:
      if (o.choices && !o.choices.includes(text)) throw new Error(`must be one of ${o.choices.join(", ")}`);
      return text;
  }
}

/** A time typed on the command line: a number and its unit (ps, ns, us, ms, s). A bare number is refused: 10 what? */
export function parseTimeWithUnit(text: string): bigint {
  if (/^\s*\d+(\.\d+)?\s*$/.test(text)) throw new Error(`a time needs a unit: ps, ns, us, ms or s (e.g. ${text.trim()}ns)`);
  return parseTime(text);
}

const BYTE_UNITS: Record<string, number> = { b: 1, k: 1e3, kb: 1e3, kib: 1024, m: 1e6, mb: 1e6, mib: 1024 ** 2, g: 1e9, gb: 1e9, gib: 1024 ** 3, t: 1e12, tb: 1e12, tib: 1024 ** 4 };

/** A size typed on the command line: bytes, or a number and its unit (`64KB` = 64,000, `256MiB` = 256 × 2^20); whole bytes, rounded down. */
export function parseByteSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const unit = m ? BYTE_UNITS[(m[2] || "b").toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new Error("not a size: bytes, or with a unit: KB, MB, GB (10^3, 10^6, 10^9) or KiB, MiB, GiB (2^10, 2^20, 2^30)");
  return Math.floor(Number(m[1]) * unit);
}

/**
 * Throws unless `path` can be written: an existing writable file, or a new file in an existing
 * writable directory. Nothing is created, so a run refused later leaves no empty file behind.
 */
export function checkWritable(path: string): void {
  if (path === "") throw new Error("an empty path");
  const full = resolve(path);
  if (existsSync(full)) {
    if (statSync(full).isDirectory()) throw new Error("is a directory");
    try { accessSync(full, constants.W_OK); } catch { throw new Error("is not writable"); }
    return;
  }
  const dir = dirname(full);
  if (!existsSync(dir)) throw new Error(`directory ${dir} does not exist`);
  if (!statSync(dir).isDirectory()) throw new Error(`${dir} is not a directory`);
  try { accessSync(dir, constants.W_OK | constants.X_OK); } catch { throw new Error(`directory ${dir} is not writable`); }
}

/**
 * Throws unless files can be written in directory `path`: an existing writable directory, or a
 * new one in an existing writable directory (made when the command first writes, so a run refused
 * later leaves nothing behind).
 */
export function checkWritableDir(path: string): void {
  if (path === "") throw new Error("an empty path");
  const full = resolve(path);
  if (!existsSync(full)) return checkWritable(full);
  if (!statSync(full).isDirectory()) throw new Error("is not a directory");
  try { accessSync(full, constants.W_OK | constants.X_OK); } catch { throw new Error("is not writable"); }
}

/** The command's help: usage line, what it does, every option with its default, notes. */
export function commandHelp(spec: CommandSpec): string {
  const all: Record<string, OptionSpec> = { ...spec.options, help: HELP };
  const rows = Object.entries(all).map(([name, o]) => {
    const flag = `${o.short ? `-${o.short}, ` : "    "}--${name}${o.kind === "flag" ? "" : ` ${o.value ?? "<value>"}`}`;
    const extra = o.kind === "strings" ? " (repeatable)" : "";
    const dflt = name === "help" ? "" : o.default === "(required)" ? " [required]" : ` [default: ${o.default.replace(/^\((.*)\)$/, "$1")}]`;
    return [flag, `${o.help}${extra}${dflt}`] as const;
  });
  const w = Math.max(...rows.map(([f]) => f.length));
  const lines = [
    `usage: menic ${spec.name} ${spec.args} [options]${spec.passThrough ? ` [-- ${spec.passThrough}]` : ""}`,
    "",
    spec.about,
    "",
    "options:",
    ...rows.map(([f, h]) => `  ${f.padEnd(w)}  ${h}`),
  ];
  if (spec.notes) lines.push("", spec.notes);
  return lines.join("\n") + "\n";
}
