// `menic conform` (Node): reads the conformance suite from disk (conformance/ in the package,
// or --suite <dir>: suite.json and one JSON file per case under metaroce/ and rocev2/), runs its
// cases against a target and prints TAP on stdout, JUnit XML on request. The cases, their
// format and the targets: docs/conformance.md; the runner: host/conform/.

import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join } from "node:path";
import { checkCase, checkSuite, CaseError, type Suite } from "../conform/case.js";
import { runSuite, versionMismatch } from "../conform/run.js";
import { SimTarget } from "../conform/sim-target.js";
import { UdpTarget, parseUdpTarget } from "../conform/udp-target.js";
import { TESTER } from "../conform/run.js";
import { AddressError, parseUdpAddress } from "../serve/addresses.js";
import { failed, toJunit, toTap } from "../test-report.js";
import { parseJson, JsonTextError } from "../user-input.js";
import { OutputFile } from "./output.js";
import { coreModule, packageRoot } from "./node.js";
import { EXIT, UsageError, commandHelp, parseCommand, type CommandSpec } from "./cli-support.js";


/** Where the tester's sockets are unless --tester says: device 1's address in docs/serve.md's examples. */
const TESTER_HOST = "127.0.0.2";

export const CONFORM = {
  name: "conform",
  args: "",
  summary: "run the conformance suite against an implementation: TAP, JUnit XML",
  about: `Runs the conformance cases of the MetaRoCE-like transport (docs/protocol.md) and of RoCEv2 RC
(conformance/, docs/conformance.md) against a target, the implementation under test, and prints
TAP on stdout. Each case sets the target up with one QP connected to the tester, sends it frames
at times and checks what it sends back, completes and places. --target sim runs a menic device
in this process; --target udp://HOST:PORT one in another process, on real UDP sockets, driven
through its control channel (--control): menic serve --pace step --peer 1=<--tester>, which runs
the cases of the transport it speaks.`,
  options: {
    target: { kind: "string", value: "<target>", help: "the implementation under test: sim (in this process), or udp://HOST[:PORT] (its RoCEv2 port; the MetaRoCE-like transport on the next)", default: "sim" },
    control: { kind: "int", value: "<port>", help: "udp:// target: the TCP port of its control channel on 127.0.0.1 (menic serve prints it)", default: "(none)" },
    tester: { kind: "string", value: "<host[:port]>", help: "udp:// target: the tester's address, the IUT's peer device 1", default: TESTER_HOST },
    suite: { kind: "string", value: "<dir>", help: "the suite's folder: suite.json, metaroce/*.json, rocev2/*.json", default: "(the package's conformance/)" },
    case: { kind: "strings", value: "<text>", help: "run only the cases whose id contains <text> (repeatable: any of them)", default: "(every case)" },
    transport: { kind: "string", value: "<transport>", choices: ["metaroce", "rocev2"], help: "run only this transport's cases", default: "(both)" },
    junit: { kind: "out", value: "<out.xml>", help: "also write the results as JUnit XML", default: "(no JUnit file)" },
    list: { kind: "flag", help: "list the cases (id, transport, title) and run nothing", default: "(off)" },
  },
  notes: `exit status: 0 every case passed (a skipped case, one the target cannot be given, is no
failure); 1 a case failed or could not run, or the target could not be reached; 2 bad usage, or
a suite file that breaks the format (it says which file, which step and why).`,
} satisfies CommandSpec;

/** The suite in `dir`: suite.json and every case file under metaroce/ and rocev2/, in name order; throws a CaseError for a bad file. */
export function loadSuite(dir: string): Suite {
  const read = (file: string) => {
    try {
      return parseJson(readFileSync(file, "utf8"));
    } catch (e) {
      if (e instanceof JsonTextError) throw new CaseError(file, "", e.message);
      throw new CaseError(file, "", (e as Error).message);
    }
  };
  const head = checkSuite(join(dir, "suite.json"), read(join(dir, "suite.json")));
  const fragments = new Set(Object.keys(head.fragments));
  const cases = [];
  const ids = new Map<string, string>();
  for (const transport of ["metaroce", "rocev2"]) {
    const sub = join(dir, transport);
    if (!existsSync(sub)) continue;
    for (const name of readdirSync(sub).filter((f) => f.endsWith(".json")).sort()) {
      const file = join(sub, name);
      const c = checkCase(file, read(file), fragments);
      if (c.transport !== transport) throw new CaseError(file, "", `a ${c.transport} case in ${transport}/`);
      const other = ids.get(c.id);
      if (other) throw new CaseError(file, "", `id ${c.id} is taken by ${other}`);
      ids.set(c.id, file);
      cases.push(c);
    }
  }
  if (cases.length === 0) throw new CaseError(dir, "", "no cases (metaroce/*.json, rocev2/*.json)");
  return { ...head, cases };
}

/** `menic conform`. */
export async function conformCommand(args: string[]): Promise<number> {
  const parsed = parseCommand(CONFORM, args);
  if (!parsed) { process.stdout.write(commandHelp(CONFORM)); return EXIT.ok; }
  const { values, positionals } = parsed;
  if (positionals.length) throw new UsageError(`conform takes no file arguments (${positionals.join(" ")}); --suite names the suite's folder`, CONFORM.name);
  let suite: Suite;
  try {
    suite = loadSuite(values.suite ?? join(packageRoot(), "conformance"));
  } catch (e) {
    if (e instanceof CaseError) throw new UsageError(e.message, CONFORM.name);
    throw e;
  }
  const version = versionMismatch(suite);
  if (version) throw new UsageError(version, CONFORM.name);
  const target = values.target!;
  if (target !== "sim" && !target.startsWith("udp://")) throw new UsageError(`--target ${target}: want sim or udp://HOST[:PORT]`, CONFORM.name);
  if (target === "sim" && values.control !== undefined) throw new UsageError("--control is for a udp:// target", CONFORM.name);
  const udp = target === "sim" ? null : await udpTarget(target, values.control, values.tester!, values.list);
  const transport = udp?.transport;
  if (transport && values.transport !== undefined && values.transport !== transport) {
    await udp.shutdown();
    throw new UsageError(`--transport ${values.transport}: the IUT at ${target} speaks ${transport}`, CONFORM.name);
  }
  const only = (c: Suite["cases"][number]) =>
    (values.transport === undefined || c.transport === values.transport) && (transport === undefined || c.transport === transport) &&
    (values.case.length === 0 || values.case.some((text) => c.id.includes(text)));
  const chosen = suite.cases.filter(only);
  if (chosen.length === 0) {
    await udp?.shutdown();
    throw new UsageError(`no case matches${values.case.length ? ` --case ${values.case.join(", ")}` : ""}${values.transport ? ` --transport ${values.transport}` : ""}${transport ? ` (the IUT speaks ${transport})` : ""}`, CONFORM.name);
  }
  if (values.list) {
    for (const c of chosen) console.log(`${c.id.padEnd(32)} ${c.transport.padEnd(9)} ${c.title}`);
    return EXIT.ok;
  }
  let results;
  try {
    results = await runSuite(suite, udp ?? new SimTarget(coreModule()), only);
  } finally {
    await udp?.shutdown();
  }
  process.stdout.write(toTap(results));
  if (values.junit) {
    const junit = new OutputFile("--junit", values.junit);
    junit.write(toJunit(results, "menic conform"));
    junit.close();
    const failure = junit.failure();
    if (failure) { console.error(`menic: ${failure}`); return EXIT.failed; }
  }
  return results.some(failed) ? EXIT.failed : EXIT.ok;
}

/** The udp:// target `text` with its control port and the tester's address, connected; null for --list, which runs nothing. */
async function udpTarget(text: string, control: number | undefined, tester: string, list: boolean): Promise<UdpTarget | null> {
  const iut = parseUdpTarget(text);
  if (!iut) throw new UsageError(`--target ${text}: want udp://HOST[:PORT], HOST an IPv4 address and PORT the IUT's RoCEv2 UDP port (4791 when left out)`, CONFORM.name);
  if (control === undefined) throw new UsageError(`--target ${text} needs --control <port>: the IUT's control channel (menic serve prints it)`, CONFORM.name);
  let at;
  try {
    at = parseUdpAddress(tester, "--tester");
  } catch (e) {
    if (e instanceof AddressError) throw new UsageError(e.message, CONFORM.name);
    throw e;
  }
  if (list) return null;
  return UdpTarget.connect({ iut, controlPort: control, tester: at, warn: (line) => console.error(line.replace(/^menic serve/, "menic conform (tester)")) }, TESTER);
}
