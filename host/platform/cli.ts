// The `menic` command (Node). Subcommands:
//   menic run <scenario.json> [--seed N] [--json] [--pcap out.pcapng] [--trace out.json] [--set path=value ...]
//   menic fw build <file.c|.S ...> -o <out.elf> [-O <level>] [-g] [-D NAME[=VALUE]] [-I dir] [-- clang flags]
//   menic fw test <test.elf|dir> [--junit out.xml] [--until 10ms] [--set field=value]
//   menic fw run <elf> [--engines N] [--until 10ms] [--json] [--trace out.json] [--profile] [--config cfg.json] [--set field=value]
//                  [--gdb port]
// --json prints one JSON object on stdout and nothing else; without it, console lines go to stdout
// as they are drained, then a summary table. Progress goes to stderr, only on a terminal. Exit
// status is non-zero on any failure.

import { readFileSync, writeFileSync, openSync, writeSync, closeSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runFirmware, DEFAULT_UNTIL_PS, type FwRunResult, type FwRunOptions } from "../fw/run.js";
import { runFirmwareListening } from "./gdb-server.js";
import { toPerfetto } from "../trace/perfetto.js";
import { formatLocation, Symbolizer } from "../debug/symbolize.js";
import { formatProfile } from "../debug/profile.js";
import { parseTime, formatTime } from "../units.js";
import { ConfigError } from "../config.js";
import { ElfError } from "../elf.js";
import { buildFirmware, OPT_LEVELS, type OptLevel } from "../fw/build.js";
import { runFirmwareTests, toTap, toJunit, failed, type FwTestSuite } from "../fw/test.js";
import { runScenario, type ScenarioResult } from "../scenario/run.js";
import { resolveScenario } from "../scenario/scenario.js";
import { applySet } from "../scenario/overrides.js";
import { formatResult } from "../scenario/report.js";
import { ScenarioTracer } from "../scenario/trace.js";
import { expandSweep, runSweep, formatSweep, type SweepRun } from "../scenario/sweep.js";
import { ClusterCapture } from "../cluster/capture.js";
import { PcapngWriter } from "../wire/pcapng.js";
import { coreModule } from "./node.js";

const USAGE = `usage:
  menic run <scenario.json> [--seed N] [--json] [--pcap <out.pcapng>] [--set <path>=<value> ...]
                            [--trace <out.json> [--trace-interval <time>]]
  menic fw build <file.c|file.S ...> -o <out.elf> [-O 0|1|2|3|s|z|g] [-g] [-D NAME[=VALUE] ...]
                 [-I <dir> ...] [-- <more clang flags>]
  menic fw test <test.elf|dir> [--junit <out.xml>] [--until <time>] [--set <field>=<value> ...]
                                   (TAP on stdout; firmware/include/menic/test.h)
  menic fw run <image.elf> [--engines N] [--until <time>] [--json] [--trace <out.json>] [--profile]
                           [--config <cfg.json>] [--set <field>=<value> ...]
                           [--gdb <port>]   (a GDB stub on 127.0.0.1:port, 0: any free port; docs/engine.md)
  menic help

times are like 10ms, 2.5us, 750ns, 1s; config fields are listed in docs/memory-map.md;
scenario fields in schemas/scenario.schema.json (--set faults[0].random=0.05, --set until=20us)
menic run exits 0 when every message completed, 1 when one failed or time ran out,
2 on bad input, 130 when stopped by Ctrl-C (it still prints and writes what was reached);
a scenario with a "sweep" runs once per combination and prints one table (exit 0 unless stopped)`;

class UsageError extends Error {}

export async function main(argv: string[]): Promise<number> {
  try {
    const [cmd, sub, ...rest] = argv;
    if (!cmd || cmd === "help" || cmd === "--help" || cmd === "-h") {
      console.log(USAGE);
      return cmd ? 0 : 2;
    }
    if (cmd === "run") return await scenarioRun(argv.slice(1));
    if (cmd === "fw" && sub === "run") return await fwRun(rest);
    if (cmd === "fw" && sub === "build") return fwBuild(rest);
    if (cmd === "fw" && sub === "test") return await fwTest(rest);
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

function fwBuild(argv: string[]): number {
  const dashes = argv.indexOf("--"); // everything after -- goes to clang as it is
  const args = dashes < 0 ? argv : argv.slice(0, dashes);
  let parsed;
  try {
    parsed = parseArgs({
      args, allowPositionals: true,
      options: {
        out: { type: "string", short: "o" },
        opt: { type: "string", short: "O", default: "2" },
        debug: { type: "boolean", short: "g", default: false },
        define: { type: "string", short: "D", multiple: true, default: [] },
        include: { type: "string", short: "I", multiple: true, default: [] },
      },
    });
  } catch (e) {
    throw new UsageError((e as Error).message); // an unknown option, a missing value
  }
  const { values, positionals } = parsed;
  if (!values.out) throw new UsageError("fw build needs -o <out.elf>");
  if (positionals.length === 0) throw new UsageError("fw build needs at least one source file");
  const opt = values.opt as OptLevel;
  if (!OPT_LEVELS.includes(opt)) throw new UsageError(`-O must be one of ${OPT_LEVELS.join(", ")}, got ${opt}`);
  const defines: Record<string, string> = {};
  for (const d of values.define!) {
    const eq = d.indexOf("=");
    const name = eq < 0 ? d : d.slice(0, eq);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UsageError(`-D wants NAME or NAME=VALUE, got ${d}`);
    defines[name] = eq < 0 ? "1" : d.slice(eq + 1); // -DNAME means 1, as in clang
  }
  const { elf } = buildFirmware({
    sources: positionals, out: values.out, optLevel: opt, debug: values.debug, defines, includes: values.include,
    extra: dashes < 0 ? [] : argv.slice(dashes + 1),
  });
  console.error(`wrote ${values.out} (${elf.length} bytes)`);
  return 0;
}

/** `fw test`: every test image given (an ELF, or the *.elf of a directory), TAP on stdout, JUnit XML on request. */
async function fwTest(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args, allowPositionals: true,
      options: { junit: { type: "string" }, until: { type: "string" }, set: { type: "string", multiple: true, default: [] } },
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const { values, positionals } = parsed;
  if (positionals.length === 0) throw new UsageError("fw test needs test images (ELF files or directories of them)");
  const images = positionals.flatMap((p) =>
    statSync(p).isDirectory() ? readdirSync(p).filter((f) => f.endsWith(".elf")).sort().map((f) => join(p, f)) : [p]);
  if (images.length === 0) throw new UsageError(`no .elf files in ${positionals.join(", ")}`);
  const config: Record<string, string> = {};
  for (const kv of values.set!) {
    const eq = kv.indexOf("=");
    if (eq < 1) throw new UsageError(`--set wants field=value, got ${kv}`);
    config[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  const untilPs = values.until ? parseTime(values.until) : DEFAULT_UNTIL_PS;
  const suites: FwTestSuite[] = [];
  for (const image of images) suites.push(await runFirmwareTests(image, readFileSync(image), { config, untilPs }));
  process.stdout.write(toTap(suites));
  if (values.junit) writeFileSync(values.junit, toJunit(suites));
  return suites.some(failed) ? 1 : 0;
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
      profile: { type: "boolean", default: false },
      gdb: { type: "string" },
    },
  });
  if (positionals.length !== 1) throw new UsageError("fw run needs exactly one ELF image");
  const gdbPort = values.gdb === undefined ? null : Number(values.gdb);
  if (gdbPort !== null && !(/^\d+$/.test(values.gdb!) && gdbPort <= 65535)) throw new UsageError(`--gdb wants a TCP port 0..65535, got ${values.gdb}`);
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
  const runOpts: FwRunOptions = {
    config, untilPs, collectTrace: !!values.trace, profile: values.profile,
    onConsoleLine: json ? undefined : (e, line) => console.log(`[e${String(e).padStart(2, "0")}] ${line}`),
  };
  const r = gdbPort === null ? await runFirmware(elf, runOpts) : await runFirmwareListening(elf, gdbPort, runOpts);
  if (values.trace) {
    const symbols = values.profile ? Symbolizer.fromElf(elf) : null;
    const fn = symbols ? (pc: number) => symbols.functionAt(pc)?.name ?? `0x${pc.toString(16)}` : undefined;
    writeFileSync(values.trace, JSON.stringify(toPerfetto(r.trace ?? [], r.engines.length, BigInt(r.timePs), fn)));
  }
  if (json) console.log(JSON.stringify({ ...r, trace: undefined })); // the trace goes to its own file
  else {
    printSummary(r);
    if (r.profile) process.stdout.write(`\nprofile: self cycles per function, all engines\n${formatProfile(r.profile)}`);
  }
  return r.ok ? 0 : 1;
}

function printSummary(r: FwRunResult): void {
  const rows = r.engines.map((e) => [
    String(e.id),
    e.state,
    e.state === "exited" ? String(e.exitCode)
      : e.state === "faulted" ? `${e.fault} at pc ${formatLocation(e.where!)}, mtval 0x${e.mtval!.toString(16)}`
      : e.where ? `pc ${formatLocation(e.where)}` : "-",
    String(e.instructions),
    String(e.cycles),
    formatTime(e.sleepPs),
    String(e.consoleDropped),
  ]);
  const head = ["engine", "state", "exit / fault / pc", "instructions", "cycles", "asleep", "console dropped"];
  const w = head.map((h, k) => Math.max(h.length, ...rows.map((row) => row[k].length)));
  const line = (cells: string[]) => cells.map((c, k) => (k >= 3 ? c.padStart(w[k]) : c.padEnd(w[k]))).join("  ");
  console.log("");
  console.log(line(head));
  for (const row of rows) console.log(line(row));
  const bad = r.engines.filter((e) => !(e.state === "exited" && e.exitCode === 0));
  console.log(`\nsimulated ${formatTime(r.timePs)}; ${r.engines.length - bad.length}/${r.engines.length} engines exited 0`);
}

/** Exit status of `menic run` for each way a run ends (0: every message completed). */
const RUN_EXIT = { finished: 0, failed: 1, "time-limit": 1, stopped: 130 } as const;
const EXIT_BAD_INPUT = 2;

function runArgs(args: string[]) {
  try {
    return parseArgs({
      args, allowPositionals: true,
      options: {
        seed: { type: "string" },
        json: { type: "boolean", default: false },
        pcap: { type: "string" },
        trace: { type: "string" },
        "trace-interval": { type: "string" },
        set: { type: "string", multiple: true, default: [] },
      },
    });
  } catch (e) {
    throw new UsageError((e as Error).message); // an unknown option, a missing value
  }
}

async function scenarioRun(args: string[]): Promise<number> {
  const { values, positionals } = runArgs(args);
  if (positionals.length !== 1) throw new UsageError("run needs exactly one scenario file");
  let scenario: Record<string, unknown>;
  let tracer: ScenarioTracer | null;
  try {
    const file = positionals[0]!;
    let text: string;
    try { text = readFileSync(file, "utf8"); } catch (e) { throw new ConfigError(file, (e as Error).message); }
    try { scenario = JSON.parse(text); } catch (e) { throw new ConfigError(file, `not JSON: ${(e as Error).message}`); }
    if (typeof scenario !== "object" || scenario === null || Array.isArray(scenario)) throw new ConfigError(file, "must hold a JSON object");
    for (const kv of values.set!) applySet(scenario, kv);
    if (values.seed !== undefined) applySet(scenario, `seed=${values.seed}`);
    resolveScenario(scenario); // refuse bad input before building anything
    if (scenario.sweep !== undefined) {
      if (values.pcap || values.trace) throw new ConfigError(values.pcap ? "--pcap" : "--trace", "is for one run, not a sweep (--set sweep= null runs the scenario once)");
      expandSweep(scenario); // every combination checked before the first runs
    }
    if (values["trace-interval"] !== undefined && !values.trace) throw new ConfigError("--trace-interval", "needs --trace");
    tracer = values.trace ? new ScenarioTracer(values["trace-interval"] !== undefined ? traceInterval(values["trace-interval"]) : undefined) : null;
    if (values.trace) {
      try { closeSync(openSync(values.trace, "w")); } catch (e) { throw new ConfigError(`--trace ${values.trace}`, (e as Error).message); }
    }
  } catch (e) {
    return refuse(e);
  }

  // Ctrl-C: stop at the next step and report what was reached; a second one quits at once
  let interrupted = false;
  const onSigint = () => {
    if (interrupted) process.exit(RUN_EXIT.stopped);
    interrupted = true;
    process.stderr.write("\nmenic: stopping (Ctrl-C again to quit now)\n");
  };
  process.on("SIGINT", onSigint);
  const progress = process.stderr.isTTY ? progressLine() : null;
  if (scenario.sweep !== undefined) {
    let runs: SweepRun[];
    try {
      runs = await runSweep(coreModule(), scenario, {
        onRun: (k, n, set) => progress?.label(`run ${k + 1}/${n} ${JSON.stringify(set)}: `),
        onProgress: (nowPs, done, total) => progress?.update(nowPs, done, total),
        shouldStop: () => new Promise((resolve) => setImmediate(() => resolve(interrupted))),
      });
    } finally {
      process.off("SIGINT", onSigint);
      progress?.clear();
    }
    const name = String(scenario.name ?? "scenario");
    if (values.json) console.log(JSON.stringify({ name, runs }));
    else process.stdout.write(formatSweep(name, runs));
    // a sweep is a study: a run that failed or ran out of time is one of its results
    return runs.some((r) => r.result.ended === "stopped") ? RUN_EXIT.stopped : 0;
  }
  let pcapFd: number | null = null;
  let capture: ClusterCapture | null = null;
  let r: ScenarioResult;
  try {
    if (values.pcap) {
      try { pcapFd = openSync(values.pcap, "w"); } catch (e) { throw new ConfigError(`--pcap ${values.pcap}`, (e as Error).message); }
      const fd = pcapFd;
      capture = new ClusterCapture(new PcapngWriter((chunk) => writeSync(fd, chunk), "menic run"));
    }
    r = await runScenario(coreModule(), scenario, {
      onBuilt: (c) => capture?.attach(c.endpoints),
      ...(tracer ? { observer: tracer } : {}),
      onProgress: (nowPs, done, total) => {
        capture?.flush(nowPs);
        progress?.update(nowPs, done, total);
      },
      // wait for the event loop here, so that a Ctrl-C is seen
      shouldStop: () => new Promise((resolve) => setImmediate(() => resolve(interrupted))),
    });
  } catch (e) {
    return refuse(e); // what only the built cluster can check: a fault's link or plane
  } finally {
    process.off("SIGINT", onSigint);
    progress?.clear();
    if (capture) capture.flush();
    if (pcapFd !== null) closeSync(pcapFd);
    if (tracer) writeFileSync(values.trace!, JSON.stringify(tracer.toJSON()));
  }
  if (values.pcap) console.error(`menic: wrote ${values.pcap} (${capture!.written} frames)`);
  if (tracer) console.error(`menic: wrote ${values.trace} (${tracer.events.length} trace events)`);
  if (values.json) console.log(JSON.stringify(r));
  else process.stdout.write(formatResult(r));
  return RUN_EXIT[r.ended];
}

/** --trace-interval: a time of at least 1 ns. */
function traceInterval(text: string): number {
  let ps: number;
  try { ps = Number(parseTime(text)); } catch (e) { throw new ConfigError("--trace-interval", (e as Error).message); }
  if (!(ps >= 1000)) throw new ConfigError("--trace-interval", `must be at least 1ns, got ${text}`);
  return ps;
}

/** Says what is wrong with the input (a ConfigError) and gives its exit status; anything else is rethrown. */
function refuse(e: unknown): number {
  if (!(e instanceof ConfigError)) throw e;
  console.error(`menic: ${e.message}`);
  return EXIT_BAD_INPUT;
}

/** One line on stderr (a terminal), rewritten at most every 100 ms: simulated time, messages, wall time. */
function progressLine() {
  const t0 = performance.now();
  let last = -Infinity, prefix = "";
  return {
    label(text: string) { prefix = text; last = -Infinity; },
    update(nowPs: number, done: number, total: number) {
      const t = performance.now();
      if (t - last < 100) return;
      last = t;
      process.stderr.write(`\r\x1b[K${prefix}simulated ${formatTime(nowPs)}, messages ${done}/${total}, wall ${((t - t0) / 1000).toFixed(1)} s`);
    },
    clear() {
      if (last > -Infinity) process.stderr.write("\r\x1b[K");
    },
  };
}
