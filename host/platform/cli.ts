// The `menic` command (Node). Subcommands:
//   menic fw build <file.c|.S ...> -o <out.elf> [-O <level>]
//   menic fw run <elf> [--engines N] [--until 10ms] [--json] [--trace out.json] [--config cfg.json] [--set field=value]
// --json prints one JSON object on stdout and nothing else; without it, console lines go to stdout
// as they are drained, then a summary table. Exit status is non-zero on any failure.

import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { runFirmware, DEFAULT_UNTIL_PS, type FwRunResult } from "../fw/run.js";
import { toPerfetto, causeName } from "../trace/perfetto.js";
import { parseTime, formatTime } from "../units.js";
import { ConfigError } from "../config.js";
import { ElfError } from "../elf.js";
import { buildFirmware } from "../fw/build.js";

const USAGE = `usage:
  menic fw build <file.c|file.S ...> -o <out.elf> [-O 0|1|2|s]
  menic fw run <image.elf> [--engines N] [--until <time>] [--json] [--trace <out.json>]
                           [--config <cfg.json>] [--set <field>=<value> ...]
  menic help

times are like 10ms, 2.5us, 750ns, 1s; config fields are listed in docs/memory-map.md`;

class UsageError extends Error {}

export async function main(argv: string[]): Promise<number> {
  try {
    const [cmd, sub, ...rest] = argv;
    if (!cmd || cmd === "help" || cmd === "--help" || cmd === "-h") {
      console.log(USAGE);
      return cmd ? 0 : 2;
    }
    if (cmd === "fw" && sub === "run") return await fwRun(rest);
    if (cmd === "fw" && sub === "build") return fwBuild(rest);
    throw new UsageError(`unknown command: ${argv.slice(0, 2).join(" ")}`);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`menic: ${e.message}\n${USAGE}`);
      return 2;
    }
    if (e instanceof ConfigError || e instanceof ElfError || e instanceof Error) {
      console.error(`menic: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

function fwBuild(args: string[]): number {
  const { values, positionals } = parseArgs({
    args, allowPositionals: true,
    options: { out: { type: "string", short: "o" }, opt: { type: "string", short: "O", default: "2" } },
  });
  if (!values.out) throw new UsageError("fw build needs -o <out.elf>");
  if (positionals.length === 0) throw new UsageError("fw build needs at least one source file");
  const opt = values.opt as "0" | "1" | "2" | "s";
  if (!["0", "1", "2", "s"].includes(opt)) throw new UsageError(`-O must be 0, 1, 2 or s, got ${opt}`);
  const { elf } = buildFirmware({ sources: positionals, out: values.out, optLevel: opt });
  console.error(`wrote ${values.out} (${elf.length} bytes)`);
  return 0;
}

async function fwRun(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args, allowPositionals: true,
    options: {
      engines: { type: "string" },
      until: { type: "string" },
      json: { type: "boolean", default: false },
      trace: { type: "string" },
      config: { type: "string" },
      set: { type: "string", multiple: true, default: [] },
    },
  });
  if (positionals.length !== 1) throw new UsageError("fw run needs exactly one ELF image");
  const config: Record<string, number | string> = values.config ? JSON.parse(readFileSync(values.config, "utf8")) : {};
  for (const kv of values.set!) {
    const eq = kv.indexOf("=");
    if (eq < 1) throw new UsageError(`--set wants field=value, got ${kv}`);
    config[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  if (values.engines !== undefined) config.engines = values.engines;
  const untilPs = values.until ? parseTime(values.until) : DEFAULT_UNTIL_PS;
  const elf = readFileSync(positionals[0]);
  const json = values.json!;
  const r = await runFirmware(elf, {
    config, untilPs, collectTrace: !!values.trace,
    onConsoleLine: json ? undefined : (e, line) => console.log(`[e${String(e).padStart(2, "0")}] ${line}`),
  });
  if (values.trace) {
    writeFileSync(values.trace, JSON.stringify(toPerfetto(r.trace ?? [], r.engines.length, BigInt(r.timePs))));
  }
  if (json) console.log(JSON.stringify({ ...r, trace: undefined })); // the trace goes to its own file
  else printSummary(r);
  return r.ok ? 0 : 1;
}

function printSummary(r: FwRunResult): void {
  const rows = r.engines.map((e) => [
    String(e.id),
    e.state,
    e.state === "exited" ? String(e.exitCode) : e.state === "faulted" ? `${causeName(e.mcause!)} at pc 0x${e.pc.toString(16)}, mtval 0x${e.mtval!.toString(16)}` : "-",
    String(e.instructions),
    String(e.cycles),
    formatTime(e.sleepPs),
    String(e.consoleDropped),
  ]);
  const head = ["engine", "state", "exit / fault", "instructions", "cycles", "asleep", "console dropped"];
  const w = head.map((h, k) => Math.max(h.length, ...rows.map((row) => row[k].length)));
  const line = (cells: string[]) => cells.map((c, k) => (k >= 3 ? c.padStart(w[k]) : c.padEnd(w[k]))).join("  ");
  console.log("");
  console.log(line(head));
  for (const row of rows) console.log(line(row));
  const bad = r.engines.filter((e) => !(e.state === "exited" && e.exitCode === 0));
  console.log(`\nsimulated ${formatTime(r.timePs)}; ${r.engines.length - bad.length}/${r.engines.length} engines exited 0`);
}
