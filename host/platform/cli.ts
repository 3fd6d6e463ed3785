// The `menic` command (Node): `menic run`, `menic merge`, `menic conform` (conform-cli.ts), `menic serve`,
// `menic fw build|test|run`. Each command's options
// are declared once (host/platform/cli-support.ts parses them and writes their --help);
// --json prints one JSON object on stdout and nothing else; without it, console lines go to
// stdout as they are drained, then a summary table. Progress goes to stderr, only on a
// terminal. Exit statuses are cli-support's EXIT: 0 ok, 1 the run failed, 2 bad usage or
// input, 130 stopped by Ctrl-C.

import { readFileSync, writeFileSync, mkdirSync, openSync, writeSync, readSync, closeSync, readdirSync, statSync, fstatSync, constants, type Stats } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { runFirmware, type FwRunResult, type FwRunOptions } from "../fw/run.js";
import { runFirmwareListening } from "./gdb-server.js";
import { toPerfetto, writePerfetto } from "../trace/perfetto.js";
import { formatLocation, Symbolizer } from "../debug/symbolize.js";
import { formatBacktrace } from "../debug/backtrace.js";
import { formatProfile } from "../debug/profile.js";
import { DEFAULT_LOG_LIMIT, MAX_LOG_LIMIT } from "../debug/insn-log.js";
import { formatTime } from "../units.js";
import { ConfigError } from "../config.js";
import { ElfError } from "../elf.js";
import { buildFirmware, OPT_LEVELS, type OptLevel } from "../fw/build.js";
import { runFirmwareTests, toTap, toJunit, failed, type FwTestSuite } from "../fw/test.js";
import { runScenario, checkScenario, type ScenarioResult, type RunEnd, type ScenarioInput, type CsvFile } from "../scenario/run.js";
import { TIMELINE_MIN_PS } from "../scenario/result.js";
import { MEMORY_BOUND_BYTES } from "../scenario/cluster.js";
import { resolveScenario, inlineGraphFiles, type Scenario } from "../scenario/scenario.js";
import { inlineWorkloadFiles } from "../scenario/workload.js";
import { applySet } from "../scenario/overrides.js";
import { formatResult } from "../scenario/report.js";
import { ScenarioTracer } from "../scenario/trace.js";
import { TRACE_MAX_BYTES_DEFAULT, TRACE_MAX_BYTES_MIN } from "../trace/writer.js";
import { OutputFile, describeFsError } from "./output.js";
import { expandSweep, checkSweep, runSweep, formatSweep, SWEEP_RUNS_BOUND, type SweepRun } from "../scenario/sweep.js";
import { parseShard, inShard, mergeShards, scenarioDigest, SHARD_FORMAT, type Shard, type ShardFile, type Merged } from "../scenario/shard.js";
import { runSweepJobs } from "./sweep-pool.js";
import { runScenarioThreads } from "./run-threads.js";
import { ClusterCapture } from "../cluster/capture.js";
import { PcapngWriter } from "../wire/pcapng.js";
import { coreModule, packageRoot } from "./node.js";
import { EXIT, EXIT_HELP, UsageError, commandHelp, parseCommand, type CommandSpec } from "./cli-support.js";
import { CONFORM, conformCommand } from "./conform-cli.js";
import { catchInterrupt, progressLine, type ProgressSample } from "./progress.js";
import { nearest, didYouMean, parseJson, JsonTextError } from "../user-input.js";
import type { Fabric } from "../fabric/fabric.js";
import { Server, TRANSPORTS, type TransportName } from "../serve/serve.js";
import { AddressError, parseAddressList, parsePeer } from "../serve/addresses.js";
import type { PaceOptions } from "../serve/pacer.js";

const TIMES = "times need a unit: ps, ns, us, ms or s (10ms, 2.5us, 750ns)";
/** The most an input file (a scenario, a graph, a config, an ELF image) may hold: a larger one is refused, not read. */
const INPUT_MAX_MIB = 64;
/** The most a shard file may hold: menic's own output, a sweep's results (4,032 flows a run are 1 MB). */
const SHARD_MAX_MIB = 1024;

const RUN = {
  name: "run",
  args: "<scenario.json | ->",
  summary: "run a scenario: devices, fabric, traffic, faults",
  about: `Runs a scenario (devices, fabric, traffic, faults: schemas/scenario.schema.json) and prints
its results: goodput per flow, completion times, drops, retransmissions. A scenario with a
"sweep" runs once per combination of values and prints one table. "-" reads the scenario from
stdin (a collective's graph.file is then relative to the current directory). A rate with nothing
completed to measure it is null in --json and "—" in the table.`,
  options: {
    seed: { kind: "int", value: "<n>", min: 0, max: 0xffffffff, help: "the seed of every random stream", default: "(the scenario's seed, 1 when it has none)" },
    until: { kind: "time", value: "<time>", help: "simulated-time limit (the same as --set until=<time>)", default: "(the scenario's until, 1s when it has none)" },
    set: { kind: "strings", value: "<path>=<value>", help: "set a scenario field before it is checked: --set traffic.messages=4, --set 'faults[0].random=0.05'; null removes one (--set sweep=null)", default: "(none)" },
    json: { kind: "flag", help: "print the result as one JSON object on stdout, nothing else", default: "(off: a results table)" },
    pcap: { kind: "out", value: "<out.pcapng>", help: "write every frame at every device port (pcapng, Wireshark)", default: "(no capture)" },
    trace: { kind: "out", value: "<out.json>", help: "write a Perfetto trace: per-flow rates, switch queues, message slices", default: "(no trace)" },
    csv: { kind: "outdir", value: "<dir>", help: "write the run's series as tidy CSV files in <dir>: flows.csv (rates), queues.csv, paths.csv, counters.csv (docs/csv.md)", default: "(no CSV)" },
    "trace-interval": { kind: "time", value: "<time>", help: "how often --trace and --csv sample rates, queues, paths and counters (at least 1ns)", default: "(1us)" },
    "trace-max-bytes": {
      kind: "bytes", value: "<size>", min: 0, help: `bound --trace's file (64MB, 1GiB, at least ${TRACE_MAX_BYTES_MIN}; 0: none): past it the trace stops, says where, and the run goes on`,
      default: `(${TRACE_MAX_BYTES_DEFAULT / 2 ** 20}MiB)`,
    },
    timeline: { kind: "time", value: "<time>", help: "with --json: add \"timeline\", the payload bytes placed over all flows at every multiple of <time> (a traffic scenario; at least 1ns)", default: "(none)" },
    "max-runs": { kind: "int", value: "<n>", min: 1, max: 2 ** 24, help: "refuse a sweep of more runs than this", default: String(SWEEP_RUNS_BOUND) },
    "max-memory": { kind: "int", value: "<GiB>", min: 1, max: 2 ** 20, help: "refuse a scenario whose devices and fabric need more memory than this (docs/fabric.md, \"Memory\")", default: String(MEMORY_BOUND_BYTES / 2 ** 30) },
    "allow-failures": { kind: "flag", help: "exit 0 though a run (a sweep's run) failed, ran out of time or stalled: a study whose failures are results", default: "(off: exit 1)" },
    jobs: { kind: "int", value: "<n>", min: 1, max: 256, help: "make a sweep's runs on n worker threads at once, each run on one (the table and JSON are the same as on one; each thread holds its own devices: n times the memory)", default: "1" },
    threads: { kind: "int", value: "<n>", min: 1, max: 64, help: "split one traffic run over n worker threads, its devices and planes shared out (the table and JSON are the same as on one; n at most its planes; each thread builds its own devices and the whole fabric; docs/scale.md)", default: "1" },
    shard: { kind: "string", value: "<i/n>", help: "with --json: make only every n-th run of the sweep, from run i (1 to n), and print them as a shard file; menic merge puts the shards back together (docs/scale.md)", default: "(none: every run)" },
  },
  notes: `${TIMES}.
input files (the scenario, a collective's graph.file): regular files of at most ${INPUT_MAX_MIB} MiB.
exit status: 0 every message completed; 1 one failed, time ran out or the run stalled (work left,
nothing to happen), or --pcap's, --trace's or --csv's files could not be written (a full disk: the results
are printed first); 2 bad usage or input;
130 stopped by Ctrl-C (it still prints and writes what was reached). A sweep exits 1 when one of
its runs failed, ran out of time or stalled, 0 with --allow-failures (and a run alone too).`,
} satisfies CommandSpec;

const MERGE = {
  name: "merge",
  args: "<shard.json ...>",
  summary: "put a sweep's shards (menic run --shard i/n --json) back together",
  about: `Checks that the files are the shards of one sweep, every shard once and each whole, run by
this version of menic on the same scenario, and prints the sweep's table (or with --json its JSON)
as one \`menic run\` of the whole sweep prints it, byte for byte (docs/scale.md).`,
  options: {
    json: { kind: "flag", help: "print the sweep's result as one JSON object on stdout, nothing else", default: "(off: the sweep's table)" },
    "allow-failures": { kind: "flag", help: "exit 0 though a run failed, ran out of time or stalled", default: "(off: exit 1)" },
  },
  notes: `shard files: regular files of at most ${SHARD_MAX_MIB} MiB.
exit status: 0 every run finished; 1 one failed, ran out of time or stalled (0 with --allow-failures);
2 bad usage, or files that are not one whole sweep's shards (it says which file and why).`,
} satisfies CommandSpec;

/** `menic serve --pace fast`: how long a waiting device waits for its peer before it skips ahead, ms. */
const IDLE_MS_DEFAULT = 20;

const SERVE = {
  name: "serve",
  args: "[--peer <id>=<host> ...]",
  summary: "serve a device whose ports send and receive real UDP datagrams",
  about: `Runs one device whose ports send and receive real UDP datagrams: each frame's UDP payload
(RoCEv2 on 4791, the MetaRoCE-like transport on 4792), to the peer device's address, from the
frame's own UDP source port. Simulated time is paced to wall time (--pace, --scale). Another
process drives the device's verbs over the control channel, JSON lines over TCP on 127.0.0.1
(docs/serve.md; the package's ServeClient). Prints one JSON line on stdout when it listens: the
device, its ports' addresses and UDP ports, and the control port. Runs until SIGINT or SIGTERM.`,
  options: {
    device: { kind: "int", value: "<id>", min: 0, max: 0xffff, help: "this device's id: a peer's QP names it at RTR (destDevice)", default: "0" },
    transport: { kind: "string", value: "<name>", choices: Object.keys(TRANSPORTS), help: "the transport its QPs speak: rocev2 or metaroce (the MetaRoCE-like one)", default: "rocev2" },
    bind: { kind: "string", value: "<host[:port],...>", help: "where each port listens, one IPv4 address per port (the device has as many ports); :port moves RoCEv2 there and the MetaRoCE-like transport to the next", default: "127.0.0.1" },
    peer: { kind: "strings", value: "<id>=<host[:port],...>", help: "a device it talks to, and its ports' addresses; a datagram from any other address is dropped", default: "(none)" },
    pace: { kind: "string", value: "<mode>", choices: ["wall", "fast", "step"], help: "wall: simulated time never ahead of wall time x --scale; fast: the same while there is work, and a device left waiting for --idle ms skips to its next event (for tests); step: time moves only when a control client asks (advance: menic conform --target udp://)", default: "wall" },
    scale: { kind: "string", value: "<x>", help: "simulated time per wall time (0.001: a wall millisecond is a simulated microsecond), a number in (0, 1000]", default: "1" },
    idle: { kind: "int", value: "<ms>", min: 1, max: 600_000, help: "--pace fast: wall milliseconds with nothing arriving before a waiting device skips ahead", default: `(${IDLE_MS_DEFAULT})` },
    control: { kind: "int", value: "<port>", min: 0, max: 65535, help: "the control channel's TCP port on 127.0.0.1 (0: any free one)", default: "0" },
    config: { kind: "string", value: "<cfg.json>", help: "device config fields from a JSON file (docs/memory-map.md)", default: "(the defaults)" },
    set: { kind: "strings", value: "<field>=<value>", help: "set one device config field, after --config (not deviceId, ports, transport or timingMode: the options set them)", default: "(none)" },
    pcap: { kind: "out", value: "<out.pcapng>", help: "write every frame the ports send and take (pcapng, Wireshark), as the device sees them", default: "(no capture)" },
  },
  notes: `exit status: 0 stopped by SIGINT or SIGTERM (it then prints its counters on stderr); 1 the
device failed, a socket could not be bound, or --pcap's file could not be written; 2 bad usage or
input.`,
} satisfies CommandSpec;

const FW_BUILD = {
  name: "fw build",
  args: "<file.c|file.S ...>",
  summary: "compile firmware for the message engines (clang, lld)",
  about: "Compiles and links firmware for the message engines (RV32IMA) against the SDK, with clang and lld.",
  passThrough: "<more clang flags>",
  options: {
    out: { kind: "out", short: "o", value: "<out.elf>", help: "the ELF image to write", default: "(required)" },
    opt: { kind: "string", short: "O", value: "<level>", choices: OPT_LEVELS, help: `optimisation level, one of ${OPT_LEVELS.join(", ")}`, default: "2" },
    debug: { kind: "flag", short: "g", help: "DWARF debug info: file:line in faults, profiles and traces", default: "(off)" },
    define: { kind: "strings", short: "D", value: "<NAME[=VALUE]>", help: "define a preprocessor macro (-DNAME means NAME=1)", default: "(none)" },
    include: { kind: "strings", short: "I", value: "<dir>", help: "add a header directory", default: "(the SDK's firmware/include only)" },
  },
  notes: "exit status: 0 built; 1 clang or lld failed; 2 bad usage or input.",
} satisfies CommandSpec;

const FW_TEST = {
  name: "fw test",
  args: "<test.elf|dir ...>",
  summary: "run firmware unit tests: TAP, JUnit XML",
  about: `Runs firmware unit tests (firmware/include/menic/test.h) on one engine each, every ELF given
or every *.elf of a directory given, and prints TAP on stdout.`,
  options: {
    junit: { kind: "out", value: "<out.xml>", help: "also write the results as JUnit XML", default: "(no JUnit file)" },
    until: { kind: "time", value: "<time>", help: "simulated-time limit per test image", default: "1s" },
    set: { kind: "strings", value: "<field>=<value>", help: "set a device config field (docs/memory-map.md)", default: "(none: the defaults, engines 1)" },
  },
  notes: `${TIMES}.\nexit status: 0 every test passed; 1 a test failed; 2 bad usage or input.`,
} satisfies CommandSpec;

const FW_RUN = {
  name: "fw run",
  args: "<image.elf>",
  summary: "run firmware on every engine of a device",
  about: `Loads one RV32 ELF image into every engine of a device and runs it until every engine has
exited or faulted, or until the time limit; prints the console lines as they come and a summary
per engine.`,
  options: {
    engines: { kind: "int", value: "<n>", min: 1, max: 64, help: "message engines of the device (config engines)", default: "(the config's, 16)" },
    until: { kind: "time", value: "<time>", help: "simulated-time limit: the run stops at exactly this time", default: "1s" },
    json: { kind: "flag", help: "print the result as one JSON object on stdout, nothing else", default: "(off: console lines and a table)" },
    trace: { kind: "out", value: "<out.json>", help: "write a Perfetto trace, one track per engine (ui.perfetto.dev)", default: "(no trace)" },
    profile: { kind: "flag", help: "count cycles per function (and name the trace's spans by function)", default: "(off)" },
    log: { kind: "string", value: "insn[=<engines>]", help: "print each instruction of these engines (e.g. 0,2-3): pc, bytes, disassembly, the register written (the interpreter runs)", default: "(no log; insn: every engine)" },
    "log-limit": { kind: "int", value: "<n>", min: 1, max: MAX_LOG_LIMIT, help: "lines of --log before it stops and says so", default: `(${DEFAULT_LOG_LIMIT})` },
    config: { kind: "string", value: "<cfg.json>", help: "device config fields from a JSON file (docs/memory-map.md)", default: "(the defaults)" },
    set: { kind: "strings", value: "<field>=<value>", help: "set one device config field, after --config", default: "(none)" },
    gdb: { kind: "int", value: "<port>", min: 0, max: 65535, help: "a GDB stub on 127.0.0.1:<port>, 0 any free port (docs/engine.md)", default: "(no GDB stub)" },
    console: { kind: "string", value: "<order>", choices: ["engine", "merged"], help: "merged: every engine's console lines in simulated-time order, with their times", default: "engine" },
  },
  notes: `${TIMES}.
exit status: 0 every engine exited 0; 1 an engine faulted, exited non-zero or still ran at the
limit; 2 bad usage or input; 130 stopped by Ctrl-C (it still prints and writes what was reached).`,
} satisfies CommandSpec;

const FW_COMMANDS = [FW_BUILD, FW_TEST, FW_RUN];

/** A command's line in a list of commands: how it is called, what it does. */
const commandLine = (c: CommandSpec) => `  ${`menic ${c.name} ${c.args}`.padEnd(36)} ${c.summary}`;

const HELP = `usage: menic <command> [options]

menic emulates an AI accelerator's network side: NIC, transports, RISC-V message engines, fabric.

commands:
${[RUN, MERGE, CONFORM, SERVE, ...FW_COMMANDS].map(commandLine).join("\n")}
  ${"menic help [command]".padEnd(36)} this help, or a command's (also: menic <command> --help)
  ${"menic --version".padEnd(36)} print the version

${TIMES}.
config fields: docs/memory-map.md; scenario fields: schemas/scenario.schema.json.
${EXIT_HELP}
`;

const FW_HELP = `usage: menic fw <build|test|run> [options]

${FW_COMMANDS.map(commandLine).join("\n")}

menic fw <command> --help describes a command and its options.
`;

function version(): string {
  return String(JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")).version);
}

/** Runs one `menic` command line; gives its exit status. */
export async function main(argv: string[]): Promise<number> {
  const [cmd, sub] = argv;
  try {
    if (cmd === "--version" || cmd === "-V") { console.log(`menic ${version()}`); return EXIT.ok; }
    if (cmd === undefined) { process.stderr.write(HELP); return EXIT.usage; }
    if (cmd === "--help" || cmd === "-h") { process.stdout.write(HELP); return EXIT.ok; }
    if (cmd === "help") return help(argv.slice(1));
    if (cmd === "run") return await scenarioRun(argv.slice(1));
    if (cmd === "merge") return merge(argv.slice(1));
    if (cmd === "conform") return await conformCommand(argv.slice(1));
    if (cmd === "serve") return await serveCommand(argv.slice(1));
    if (cmd === "fw") {
      if (sub === undefined) { process.stderr.write(FW_HELP); return EXIT.usage; }
      if (sub === "--help" || sub === "-h") { process.stdout.write(FW_HELP); return EXIT.ok; }
      if (sub === "run") return await fwRun(argv.slice(2));
      if (sub === "build") return fwBuild(argv.slice(2));
      if (sub === "test") return await fwTest(argv.slice(2));
      const near = nearest(sub, ["build", "test", "run"]);
      throw new UsageError(`unknown command: fw ${sub} (${near ? `did you mean fw ${near}? ` : ""}fw build, fw test or fw run)`, "fw");
    }
    const near = nearest(cmd, ["run", "merge", "conform", "serve", "fw", "help"]);
    throw new UsageError(`unknown command: ${cmd} (${near ? `did you mean ${near}? ` : ""}run, merge, conform, serve or fw; menic --help lists them)`);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`menic: ${e.message}\n(menic ${e.command ? `${e.command} ` : ""}--help says how to use it)`);
      return EXIT.usage;
    }
    if (e instanceof ConfigError || e instanceof ElfError) {
      console.error(`menic: ${e.message}`);
      return EXIT.usage;
    }
    if (e instanceof Error) {
      console.error(`menic: ${e.message}`);
      return EXIT.failed;
    }
    throw e;
  }
}

/** `menic help [command]`. */
function help(words: string[]): number {
  const name = words.join(" ");
  if (name === "") { process.stdout.write(HELP); return EXIT.ok; }
  if (name === "fw") { process.stdout.write(FW_HELP); return EXIT.ok; }
  const spec = [RUN, MERGE, CONFORM, SERVE, ...FW_COMMANDS].find((c) => c.name === name);
  if (!spec) throw new UsageError(`no such command: ${name}`);
  process.stdout.write(commandHelp(spec));
  return EXIT.ok;
}

/**
 * Reads a file the user named, at most INPUT_MAX_MIB: a device, a pipe or a directory is
 * refused before a byte is read (reading /dev/zero would never end), and so is a larger file.
 * Throws an Error saying what is wrong with it.
 */
function readBounded(path: string, maxMib = INPUT_MAX_MIB): Buffer {
  const max = maxMib * 2 ** 20;
  const what = (st: Stats) => (st.isDirectory() ? "a directory" : st.isFIFO() ? "a pipe" : st.isCharacterDevice() ? "a character device" : st.isBlockDevice() ? "a block device" : st.isSocket() ? "a socket" : "not a file");
  // non-blocking: opening a pipe would otherwise wait for a writer
  let fd: number;
  try { fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK); } catch (e) { throw new Error(openFailure(e, path)); }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error(`is ${what(st)}, not a regular file`);
    if (st.size > max) throw new Error(`holds ${st.size} bytes, more than the ${maxMib} MiB ${maxMib === INPUT_MAX_MIB ? "an input file" : "such a file"} may`);
    // a byte more than it holds: a file that grows as it is read is refused, not read on
    const buf = Buffer.alloc(st.size + 1);
    let got = 0, n: number;
    while (got < buf.length && (n = readSync(fd, buf, got, buf.length - got, null)) > 0) got += n;
    if (got > st.size) throw new Error("grew while it was read");
    return buf.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

/** Why a file could not be opened, in words: "no such file (did you mean roce-pair.json?)", "permission denied (EACCES)". */
function openFailure(e: unknown, path: string): string {
  if ((e as NodeJS.ErrnoException).code !== "ENOENT") return describeFsError(e);
  // a name near it in the directory it names, written as the path was
  let names: string[] = [];
  try { names = readdirSync(dirname(path)); } catch { /* no such directory either */ }
  const dir = path.includes("/") ? path.slice(0, path.lastIndexOf("/") + 1) : "";
  return `no such file${didYouMean(basename(path), names, (n) => dir + n)}`;
}

/** Reads an input file (readBounded); a missing, unreadable, special or too large one is bad input (exit 2), named with the option that gave it. */
function readInput(path: string, what: string, maxMib = INPUT_MAX_MIB): Buffer {
  try { return readBounded(path, maxMib); } catch (e) { throw new ConfigError(what, (e as Error).message); }
}

/** Reads all of stdin (`menic run -`), at most INPUT_MAX_MIB. */
async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > INPUT_MAX_MIB * 2 ** 20) {
      process.stdin.destroy();
      throw new ConfigError("stdin", `holds more than the ${INPUT_MAX_MIB} MiB an input may`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** JSON text the user gave as `name`; not JSON is bad input (exit 2), said at its line and column (`my.json:4:1: not JSON: ...`). */
function jsonInput(text: string, name: string): unknown {
  try {
    return parseJson(text);
  } catch (e) {
    if (e instanceof JsonTextError) throw new ConfigError(`${name}:${e.line}:${e.column}`, `not JSON: ${e.detail}`);
    throw new ConfigError(name, `not JSON: ${(e as Error).message}`);
  }
}

/** `--set field=value` assignments as a config object. */
function configSets(sets: string[], into: Record<string, number | string>): Record<string, number | string> {
  for (const kv of sets) {
    const eq = kv.indexOf("=");
    if (eq < 1) throw new UsageError(`--set wants field=value, got ${kv}`);
    into[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  return into;
}

function fwBuild(argv: string[]): number {
  const parsed = parseCommand(FW_BUILD, argv);
  if (!parsed) { process.stdout.write(commandHelp(FW_BUILD)); return EXIT.ok; }
  const { values, positionals, passed } = parsed;
  if (!values.out) throw new UsageError("fw build needs -o <out.elf>", FW_BUILD.name);
  if (positionals.length === 0) throw new UsageError("fw build needs at least one source file", FW_BUILD.name);
  const defines: Record<string, string> = {};
  for (const d of values.define) {
    const eq = d.indexOf("=");
    const name = eq < 0 ? d : d.slice(0, eq);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UsageError(`-D wants NAME or NAME=VALUE, got ${d}`, FW_BUILD.name);
    defines[name] = eq < 0 ? "1" : d.slice(eq + 1); // -DNAME means 1, as in clang
  }
  const { elf } = buildFirmware({
    sources: positionals, out: values.out, optLevel: values.opt as OptLevel, debug: values.debug, defines, includes: values.include, extra: passed,
  });
  console.error(`wrote ${values.out} (${elf.length} bytes)`);
  return EXIT.ok;
}

/** `fw test`: every test image given (an ELF, or the *.elf of a directory), TAP on stdout, JUnit XML on request. */
async function fwTest(args: string[]): Promise<number> {
  const parsed = parseCommand(FW_TEST, args);
  if (!parsed) { process.stdout.write(commandHelp(FW_TEST)); return EXIT.ok; }
  const { values, positionals } = parsed;
  if (positionals.length === 0) throw new UsageError("fw test needs test images (ELF files or directories of them)", FW_TEST.name);
  const images = positionals.flatMap((p) => {
    let dir: boolean;
    try { dir = statSync(p).isDirectory(); } catch (e) { throw new ConfigError(p, openFailure(e, p)); }
    return dir ? readdirSync(p).filter((f) => f.endsWith(".elf")).sort().map((f) => join(p, f)) : [p];
  });
  if (images.length === 0) throw new UsageError(`no .elf files in ${positionals.join(", ")}`, FW_TEST.name);
  const config = configSets(values.set, {});
  const suites: FwTestSuite[] = [];
  for (const image of images) suites.push(await runFirmwareTests(image, readInput(image, image), { config, untilPs: values.until }));
  process.stdout.write(toTap(suites));
  let junit: OutputFile | null = null;
  if (values.junit) {
    junit = new OutputFile("--junit", values.junit);
    junit.write(toJunit(suites));
    junit.close();
  }
  return withOutputs([junit], suites.some(failed) ? EXIT.failed : EXIT.ok);
}

async function fwRun(args: string[]): Promise<number> {
  const parsed = parseCommand(FW_RUN, args);
  if (!parsed) { process.stdout.write(commandHelp(FW_RUN)); return EXIT.ok; }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) throw new UsageError("fw run needs exactly one ELF image", FW_RUN.name);
  let config: Record<string, number | string> = {};
  if (values.config) {
    config = jsonInput(readInput(values.config, `--config ${values.config}`).toString("utf8"), `--config ${values.config}`) as Record<string, number | string>;
  }
  configSets(values.set, config);
  if (values.engines !== undefined) config.engines = values.engines;
  const elf = readInput(positionals[0]!, positionals[0]!);
  const json = values.json;
  const untilPs = values.until!; // it has a default
  const merged = values.console === "merged";
  if (values["log-limit"] !== undefined && values.log === undefined) throw new UsageError("--log-limit needs --log", FW_RUN.name);
  const runOpts: FwRunOptions = {
    config, untilPs, collectTrace: !!values.trace, profile: values.profile,
    insnLog: values.log === undefined ? undefined : { engines: parseLogEngines(values.log), limit: values["log-limit"] },
    consoleOrder: merged ? "time" : "engine",
    onConsoleLine: json ? undefined
      : merged ? (e, line, timePs) => console.log(`[${formatTime(timePs).padStart(12)} e${String(e).padStart(2, "0")}] ${line}`)
      : (e, line) => console.log(`[e${String(e).padStart(2, "0")}] ${line}`),
  };
  let r: FwRunResult;
  if (values.gdb !== undefined) r = await runFirmwareListening(elf, values.gdb, runOpts); // the debugger stops and continues it
  else {
    // Ctrl-C stops the run at its next slice; the summary and the trace still get what was reached
    const interrupt = catchInterrupt();
    const progress = progressLine();
    try {
      r = await runFirmware(elf, {
        ...runOpts,
        onProgress: (nowPs, instructions) => progress.update({ nowPs: Number(nowPs), untilPs: Number(untilPs), work: () => ({ count: instructions, unit: "MIPS" }) }),
        shouldStop: interrupt.shouldStop,
      });
    } finally {
      interrupt.dispose();
      progress.clear();
    }
  }
  const traceFile = values.trace ? new OutputFile("--trace", values.trace) : null;
  if (traceFile) {
    const symbols = values.profile ? Symbolizer.fromElf(elf) : null;
    const fn = symbols ? (pc: number) => symbols.functionAt(pc)?.name ?? `0x${pc.toString(16)}` : undefined;
    writePerfetto(toPerfetto(r.trace ?? [], r.engines.length, BigInt(r.timePs), fn), traceFile.write);
    traceFile.close(); // a write that failed is said after the summary
  }
  // the trace goes to its own file
  if (json) console.log(JSON.stringify({ ...r, trace: undefined }));
  else {
    if (r.insnLog) printInsnLog(r.insnLog);
    printSummary(r);
    if (r.profile) process.stdout.write(`\nprofile: self cycles per function, all engines\n${formatProfile(r.profile)}`);
  }
  return withOutputs([traceFile], r.stopped ? EXIT.stopped : r.ok ? EXIT.ok : EXIT.failed);
}

/** `--log insn[=<engines>]`'s engines: undefined for all, else a list like `0,2-3`. */
function parseLogEngines(spec: string): number[] | undefined {
  const m = /^insn(?:=(.*))?$/.exec(spec);
  if (!m) throw new UsageError(`--log ${spec}: the only log is insn, or insn=<engines> (e.g. insn=0,2-3)`, FW_RUN.name);
  if (m[1] === undefined) return undefined;
  const out: number[] = [];
  for (const part of m[1].split(",")) {
    const r = /^(\d+)(?:-(\d+))?$/.exec(part);
    const lo = r ? Number(r[1]) : NaN, hi = r?.[2] !== undefined ? Number(r[2]) : lo;
    if (!r || hi < lo || hi > 63) throw new UsageError(`--log ${spec}: engines ${JSON.stringify(part)} is not an engine number or range (0-63, e.g. 0,2-3)`, FW_RUN.name);
    for (let e = lo; e <= hi; e++) out.push(e);
  }
  return out;
}

function printInsnLog(log: NonNullable<FwRunResult["insnLog"]>): void {
  for (const line of log.lines) process.stdout.write(line + "\n");
  if (log.total > log.lines.length)
    process.stdout.write(`insn log: stopped at --log-limit ${log.limit} lines; the engines ran ${log.total - log.lines.length} more logged instructions\n`);
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
  printBacktraces(r);
  const bad = r.engines.filter((e) => !(e.state === "exited" && e.exitCode === 0));
  console.log(`\n${r.stopped ? "stopped by Ctrl-C: " : ""}simulated ${formatTime(r.timePs)}; ${r.engines.length - bad.length}/${r.engines.length} engines exited 0`);
}

/** Each faulted engine's call chain; engines with the same chain share one listing. */
function printBacktraces(r: FwRunResult): void {
  const byChain = new Map<string, number[]>();
  for (const e of r.engines) {
    if (!e.backtrace) continue;
    const chain = formatBacktrace(e.backtrace);
    byChain.set(chain, [...(byChain.get(chain) ?? []), e.id]);
  }
  for (const [chain, ids] of byChain) console.log(`\nbacktrace of engine${ids.length > 1 ? "s" : ""} ${ids.join(", ")}:\n${chain}`);
}

/** Exit status of `menic run` for each way a run ends (0: every message completed). */
const RUN_EXIT = { finished: EXIT.ok, failed: EXIT.failed, "time-limit": EXIT.failed, stopped: EXIT.stopped, stalled: EXIT.failed } as const;

async function scenarioRun(args: string[]): Promise<number> {
  const parsed = parseCommand(RUN, args);
  if (!parsed) { process.stdout.write(commandHelp(RUN)); return EXIT.ok; }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) throw new UsageError("run needs exactly one scenario file (- reads it from stdin)", RUN.name);
  let scenario: Record<string, unknown>;
  let traceOptions: { intervalPs?: number; maxBytes: number } | null;
  let intervalOption: { intervalPs?: number } = {};
  let shard: Shard | null = null;
  const timelineOption = values.timeline !== undefined ? { timelinePs: Number(values.timeline) } : {};
  const limits = { maxRuns: values["max-runs"], maxMemoryBytes: values["max-memory"]! * 2 ** 30 };
  try {
    // `-`: the scenario from stdin (its graph.file relative to the current directory)
    const file = positionals[0]!, name = file === "-" ? "stdin" : file;
    const text = (file === "-" ? await readStdin() : readInput(file, file)).toString("utf8");
    scenario = jsonInput(text, name) as Record<string, unknown>;
    if (typeof scenario !== "object" || scenario === null || Array.isArray(scenario)) throw new ConfigError(name, "must hold a JSON object");
    for (const kv of values.set) applySet(scenario, kv);
    if (values.seed !== undefined) applySet(scenario, `seed=${values.seed}`);
    if (values.until !== undefined) applySet(scenario, `until=${values.until}`);
    // a collective's graph file and a workload's size file are relative to the scenario file
    const readNear = (f: string) => readBounded(resolve(dirname(file), f)).toString("utf8");
    scenario = inlineWorkloadFiles(inlineGraphFiles(scenario, readNear), readNear) as Record<string, unknown>;
    // refuse bad input before building anything
    const timeline = values.timeline;
    if (timeline !== undefined && !values.json) throw new UsageError("--timeline needs --json (the timeline is a field of the JSON result)", RUN.name);
    if (timeline !== undefined && timeline < BigInt(TIMELINE_MIN_PS)) throw new UsageError(`--timeline must be at least 1ns, got ${formatTime(timeline)}`, RUN.name);
    const threads = values.threads ?? 1;
    const check = (s: unknown) => {
      const sc = checkScenario(coreModule(), s, limits);
      if (timeline !== undefined && (sc.collective || sc.collectives)) throw new UsageError(`--timeline samples a traffic scenario's bytes placed; ${name} runs a collective`, RUN.name);
      if (threads > 1) {
        // what a run split over threads cannot be (the runner refuses it too, later)
        const t = sc.fabric.topology, planes = t.kind === "single-switch" ? 1 : t.planes;
        if (sc.collective || sc.collectives) throw new UsageError(`--threads splits a traffic run; ${name} runs a collective`, RUN.name);
        if (threads > planes) throw new UsageError(`--threads ${threads}: a run splits over at most its planes' number of threads (${planes}, fabric.topology)`, RUN.name);
        if (sc.fabric.switch?.pfc?.enabled) throw new UsageError("--threads needs PFC off (fabric.switch.pfc.enabled): a pause would cross from one plane's thread to its devices' within a window", RUN.name);
      }
    };
    if (values.shard !== undefined) {
      shard = parseShard(values.shard);
      if (!values.json) throw new UsageError("--shard prints its shard file as JSON: it needs --json (menic merge reads the files)", RUN.name);
      if (scenario.sweep === undefined) throw new UsageError(`--shard cuts a sweep into shards; ${name} has no "sweep"`, RUN.name);
    }
    if (values.jobs !== undefined && values.jobs > 1 && scenario.sweep === undefined) throw new UsageError(`--jobs makes a sweep's runs at once on worker threads; ${name} has no "sweep" (a run alone uses one thread)`, RUN.name);
    if (values.threads !== undefined && values.threads > 1) {
      if (scenario.sweep !== undefined) throw new UsageError(`--threads splits one run over threads; ${name} is a sweep (--jobs runs a sweep's runs at once)`, RUN.name);
      const one = values.pcap ? "--pcap" : values.trace ? "--trace" : values.csv ? "--csv" : timeline !== undefined ? "--timeline" : null;
      if (one) throw new UsageError(`${one} sees every device of a run; with --threads each thread has only its own`, RUN.name);
    }
    if (scenario.sweep === undefined) check(scenario);
    else {
      const one = values.pcap ? "--pcap" : values.trace ? "--trace" : values.csv ? "--csv" : null;
      if (one) throw new UsageError(`${one} is for one run, not a sweep (--set sweep=null runs the scenario once)`, RUN.name);
      // every combination checked before the first runs
      checkSweep(expandSweep(scenario, limits), (c) => check(c.scenario));
    }
    if (values["trace-interval"] !== undefined && !values.trace && !values.csv) throw new UsageError("--trace-interval needs --trace or --csv", RUN.name);
    if (values["trace-max-bytes"] !== undefined && !values.trace) throw new UsageError("--trace-max-bytes needs --trace", RUN.name);
    const interval = values["trace-interval"];
    if (interval !== undefined && interval < 1000n) throw new UsageError(`--trace-interval must be at least 1ns, got ${formatTime(interval)}`, RUN.name);
    const max = values["trace-max-bytes"];
    if (max !== undefined && max !== 0 && max < TRACE_MAX_BYTES_MIN) throw new UsageError(`--trace-max-bytes must be at least ${TRACE_MAX_BYTES_MIN} (or 0: no bound), got ${max}`, RUN.name);
    intervalOption = interval !== undefined ? { intervalPs: Number(interval) } : {};
    traceOptions = values.trace ? { ...intervalOption, maxBytes: max === 0 ? Infinity : max ?? TRACE_MAX_BYTES_DEFAULT } : null;
  } catch (e) {
    return refuse(e);
  }

  // Ctrl-C stops the run at its next step; the table and the files still get what was reached
  const interrupt = catchInterrupt();
  const progress = progressLine();
  let fabric: Fabric | null = null; // of the run going on: its packet-hops are the host's speed
  const onBuilt = (c: { fabric: Fabric }) => { fabric = c.fabric; };
  // what a run has done: a traffic run's messages, a collective's sizes (each a run of its own, from time 0)
  // (a run split over threads has no one fabric here: no speed, rather than a part of it)
  const sample = (nowPs: number, untilPs: number, done: number, total: number, what: string): ProgressSample => {
    const f: Fabric | null = fabric;
    return { nowPs, untilPs, detail: `${what} ${done}/${total}`, done: total > 0 ? done / total : undefined, ...(f ? { work: () => ({ count: f.totals().hops, unit: "hops/s" as const }) } : {}) };
  };
  const counts = (sc: Scenario) => (sc.collective || sc.collectives ? "sizes" : "messages");
  // a failed run is a result when asked (--allow-failures); a stop is always said
  const exitOf = (ended: RunEnd) => (values["allow-failures"] && ended !== "stopped" ? EXIT.ok : RUN_EXIT[ended]);
  if (scenario.sweep !== undefined) {
    let run = { untilPs: 0, what: "messages" };
    let runs: SweepRun[];
    const sweep = expandSweep(scenario, limits), planned = sweep.runs;
    const jobs = values.jobs ?? 1;
    try {
      if (jobs > 1) {
        const combos = [...sweep].map((c, k) => ({ ...c, k })).filter((c) => !shard || inShard(c.k, shard));
        // Ctrl-C reaches the workers through a shared flag, which their runs poll at each step
        const stop = new Int32Array(new SharedArrayBuffer(4));
        const watch = setInterval(() => { if (interrupt.stopped) Atomics.store(stop, 0, 1); }, 50);
        let done = 0;
        try {
          runs = await runSweepJobs(combos, jobs, { ...(limits.maxMemoryBytes ? { maxMemoryBytes: limits.maxMemoryBytes } : {}), ...timelineOption }, stop,
            (k, ended) => progress.note(`run ${k + 1} of ${planned} ${ended}; ${++done} of ${combos.length} done on ${Math.min(jobs, combos.length)} threads`));
        } finally {
          clearInterval(watch);
        }
      } else runs = await runSweep(coreModule(), scenario, {
        ...limits,
        ...timelineOption,
        ...(shard ? { select: (k: number) => inShard(k, shard!) } : {}),
        onRun: (k, n, set, input) => {
          const sc = resolveScenario(input);
          run = { untilPs: sc.untilPs, what: counts(sc) };
          progress.run(k, n, `run ${k + 1}/${n} ${JSON.stringify(set)}: `);
        },
        onBuilt,
        onProgress: (nowPs, done, total) => progress.update(sample(nowPs, run.untilPs, done, total, run.what)),
        shouldStop: interrupt.shouldStop,
      });
    } finally {
      interrupt.dispose();
      progress.clear();
    }
    const name = String(scenario.name ?? "scenario");
    if (shard) {
      const file: ShardFile = {
        format: SHARD_FORMAT, menic: version(), name, scenario: scenarioDigest(scenario, timelineOption), shard,
        planned, runs: runs.map((r, i) => ({ run: shard!.index - 1 + i * shard!.count, ...r })),
      };
      console.log(JSON.stringify(file));
    } else if (values.json) console.log(JSON.stringify({ name, runs }));
    else process.stdout.write(formatSweep(name, runs, planned));
    if (runs.some((r) => r.result.ended === "stopped")) return EXIT.stopped;
    const unfinished = runs.filter((r) => r.result.ended !== "finished");
    if (unfinished.length === 0 || values["allow-failures"]) return EXIT.ok;
    console.error(`menic: ${unfinished.length} of the ${runs.length} runs did not finish (${[...new Set(unfinished.map((r) => r.result.ended))].join(", ")}): exit status 1 (--allow-failures: 0, when the failures are results)`);
    return EXIT.failed;
  }
  const sc = resolveScenario(scenario);
  const untilPs = sc.untilPs;
  // a file that cannot be written as the run goes (a full disk) is said after the results, and exits 1
  let pcapFile: OutputFile | null = null, traceFile: OutputFile | null = null;
  let capture: ClusterCapture | null = null;
  let tracer: ScenarioTracer | null = null;
  const csv = values.csv ? csvFiles(values.csv) : null;
  let r: ScenarioResult;
  try {
    if (values.pcap) {
      pcapFile = new OutputFile("--pcap", values.pcap);
      capture = new ClusterCapture(new PcapngWriter(pcapFile.write, "menic run"));
    }
    if (traceOptions) {
      traceFile = new OutputFile("--trace", values.trace!);
      tracer = new ScenarioTracer(traceFile.write, traceOptions);
    }
    const threads = values.threads ?? 1;
    r = threads > 1 ? await runScenarioThreads(scenario as ScenarioInput, threads, {
      maxMemoryBytes: limits.maxMemoryBytes,
      onProgress: (nowPs, done, total) => progress.update(sample(nowPs, untilPs, done, total, counts(sc))),
      shouldStop: interrupt.shouldStop,
    }) : await runScenario(coreModule(), scenario as ScenarioInput, {
      ...limits,
      ...timelineOption,
      onBuilt: (c) => { onBuilt(c); capture?.attach(c.endpoints); },
      ...(tracer ? { observer: tracer } : {}),
      ...(csv ? { csv: { ...intervalOption, open: csv.open } } : {}),
      onProgress: (nowPs, done, total) => {
        capture?.flush(nowPs);
        progress.update(sample(nowPs, untilPs, done, total, counts(sc)));
      },
      shouldStop: interrupt.shouldStop,
    });
  } catch (e) {
    return refuse(e); // what only the built cluster can check: a fault's link or plane
  } finally {
    interrupt.dispose();
    progress.clear();
    capture?.flush();
    tracer?.close();
    pcapFile?.close();
    traceFile?.close();
    csv?.close();
  }
  if (capture && pcapFile?.error === null) console.error(`menic: wrote ${values.pcap} (${capture.written} frames)`);
  if (tracer && traceFile?.error === null) {
    const w = tracer.writer;
    console.error(`menic: wrote ${values.trace} (${w.events} trace events)`);
    if (w.truncatedAtPs !== null) {
      console.error(`menic: --trace ${values.trace}: truncated at ${formatTime(Math.round(w.truncatedAtPs))} of simulated time, its size bound of ${w.maxBytes} bytes reached ` +
        "(--trace-max-bytes raises it; a longer --trace-interval writes fewer samples); the results cover the whole run");
    }
  }
  if (csv && csv.files.every((f) => f.out.error === null) && csv.files.length) {
    console.error(`menic: wrote ${values.csv}: ${csv.files.map((f) => `${f.name} (${f.rows} rows)`).join(", ")}`);
  }
  if (values.json) console.log(JSON.stringify(r));
  else process.stdout.write(formatResult(r));
  return withOutputs([pcapFile, traceFile, ...(csv?.files.map((f) => f.out) ?? [])], exitOf(r.ended));
}

/** `menic merge <shard.json ...>`: a sweep's shards back together, printed as one run of the sweep prints it. */
function merge(args: string[]): number {
  const parsed = parseCommand(MERGE, args);
  if (!parsed) { process.stdout.write(commandHelp(MERGE)); return EXIT.ok; }
  const { values, positionals } = parsed;
  if (positionals.length === 0) throw new UsageError("merge needs the shard files of a sweep (menic run --shard i/n --json writes one)", MERGE.name);
  let m: Merged;
  try {
    m = mergeShards(positionals.map((path) => ({ path, json: jsonInput(readInput(path, path, SHARD_MAX_MIB).toString("utf8"), path) })));
  } catch (e) {
    return refuse(e);
  }
  if (values.json) console.log(JSON.stringify({ name: m.name, runs: m.runs }));
  else process.stdout.write(formatSweep(m.name, m.runs, m.planned));
  const unfinished = m.runs.filter((r) => r.result.ended !== "finished");
  if (unfinished.length === 0 || values["allow-failures"]) return EXIT.ok;
  console.error(`menic: ${unfinished.length} of the ${m.runs.length} runs did not finish (${[...new Set(unfinished.map((r) => r.result.ended))].join(", ")}): exit status 1 (--allow-failures: 0, when the failures are results)`);
  return EXIT.failed;
}

/** `menic serve`: a device on UDP sockets until SIGINT or SIGTERM (docs/serve.md). */
async function serveCommand(args: string[]): Promise<number> {
  const parsed = parseCommand(SERVE, args);
  if (!parsed) { process.stdout.write(commandHelp(SERVE)); return EXIT.ok; }
  const { values, positionals } = parsed;
  if (positionals.length > 0) throw new UsageError(`serve takes no arguments, got ${positionals[0]} (peers are --peer <id>=<host>)`, SERVE.name);
  const scale = Number(values.scale);
  if (!/^\s*\d*\.?\d+(e-?\d+)?\s*$/i.test(values.scale!) || !(scale > 0 && scale <= 1000)) throw new UsageError(`--scale ${values.scale}: must be a number in (0, 1000] (simulated time per wall time)`, SERVE.name);
  if (values.pace !== "fast" && values.idle !== undefined) throw new UsageError("--idle is for --pace fast", SERVE.name);
  let config: Record<string, number | string> = {};
  if (values.config) config = jsonInput(readInput(values.config, `--config ${values.config}`).toString("utf8"), `--config ${values.config}`) as Record<string, number | string>;
  configSets(values.set, config);
  let bind, peers;
  try {
    bind = parseAddressList(values.bind!, "--bind");
    peers = values.peer.map(parsePeer);
  } catch (e) {
    if (e instanceof AddressError) throw new UsageError(e.message, SERVE.name);
    throw e;
  }
  const pcapFile = values.pcap ? new OutputFile("--pcap", values.pcap) : null;
  let server: Server;
  try {
    server = await Server.start({
      module: coreModule(), device: values.device!, transport: values.transport as TransportName, bind, peers, config,
      pace: { mode: values.pace as PaceOptions["mode"], scale, idleMs: values.idle ?? IDLE_MS_DEFAULT }, controlPort: values.control!,
      pcap: pcapFile?.write, warn: (line) => console.error(line),
    });
  } catch (e) {
    if (e instanceof AddressError) throw new UsageError(e.message, SERVE.name);
    throw e;
  }
  console.log(JSON.stringify(server.addresses));
  // until a signal stops it, or the device fails
  const signalled = await new Promise<string | null>((resolve) => {
    const stop = (sig: string) => () => resolve(sig);
    const onInt = stop("SIGINT"), onTerm = stop("SIGTERM");
    process.once("SIGINT", onInt).once("SIGTERM", onTerm);
    void server.ended.then(() => {
      process.off("SIGINT", onInt).off("SIGTERM", onTerm);
      resolve(null);
    });
  });
  await server.close();
  pcapFile?.close();
  const c = server.counters(), d = server.device;
  console.error(`menic serve: ${signalled ? `stopped by ${signalled}` : "the device failed"} at ${formatTime(d.ctx.nowPs)}: ` +
    `sent ${c.txDatagrams} datagrams (${c.txNoPeer} frames to no peer), received ${c.rxDatagrams} (${c.rxStaged} staged; dropped: ${c.rxUnknownSource} from unknown sources, ${c.rxMalformed} malformed, ${c.rxInboxFull} with the inbox full)`);
  if (d.failure) {
    console.error(`menic: ${d.failure.message}`);
    return withOutputs([pcapFile], EXIT.failed);
  }
  return withOutputs([pcapFile], EXIT.ok);
}

/**
 * The files of `--csv <dir>`: each opened when the run asks for it (RunOptions.csv), the
 * directory made then if missing; a failure to make it or write a file is kept with the file,
 * said after the results. Counts each file's rows (lines after the header).
 */
function csvFiles(dir: string) {
  const files: { name: CsvFile; out: OutputFile; rows: number }[] = [];
  return {
    files,
    open: (name: CsvFile) => {
      const f = { name, out: new OutputFile("--csv", join(dir, name)), rows: -1 };
      files.push(f);
      try { mkdirSync(dir, { recursive: true }); } catch (e) { f.out.error = describeFsError(e); }
      return (text: string) => {
        f.out.write(text);
        for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) f.rows++;
      };
    },
    close: () => { for (const f of files) f.out.close(); },
  };
}

/** After the results: says which output file could not be written; a run that was fine then exits 1. */
function withOutputs(files: readonly (OutputFile | null)[], status: number): number {
  const failed = files.map((f) => f?.failure() ?? null).filter((m) => m !== null);
  for (const m of failed) console.error(`menic: ${m}`);
  return failed.length && status === EXIT.ok ? EXIT.failed : status;
}

/** Says what is wrong with the input (a ConfigError) and gives its exit status; anything else is rethrown. */
function refuse(e: unknown): number {
  if (!(e instanceof ConfigError)) throw e;
  console.error(`menic: ${e.message}`);
  return EXIT.usage;
}
