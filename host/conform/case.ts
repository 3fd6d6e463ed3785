// A conformance case as conformance/ writes it (docs/conformance.md): what the implementation
// under test (the IUT) is set up with, and the steps a tester takes against it — frames sent
// to it at times, frames it must or must not send, work requests posted on it, completions and
// memory it must show. Read from JSON and checked here, every error naming its file and step;
// values stay as written (numbers, names, "$var" expressions) until a run resolves them
// (host/conform/values.ts).

import { parseTime } from "../units.js";

export type Transport = "metaroce" | "rocev2";

/** A value as a case writes it: a number, a boolean (a one-bit field: 1 or 0), a name (an opcode, a flag), "0x..", or "$var", "$var+N", "$var-N". */
export type Value = number | boolean | string;
/** What a field of a frame the IUT sends must be: a value, a range, not a value, or (flags) bits it has and has not. */
export type FieldMatch = Value | { min?: Value; max?: Value } | { not: Value } | { has?: string[]; lacks?: string[] } | string[] | number[];

/** Bytes as a case writes them: every byte `fill`, byte i = (i x 7 + seed) & 255 (`pattern`), or hex. */
export type Bytes = { fill: number; length: number } | { pattern: number; length: number } | { hex: string };

/** A frame the tester sends: its transport header's fields by name, `payload`, envelope fields (`ecn`, `udpSrcPort`), and damage. */
export interface SendFrame {
  [field: string]: Value | Bytes | Damage[] | undefined;
  payload?: Bytes;
  /** after it is built: bytes changed or cut (a malformed frame) */
  damage?: Damage[];
}

/**
 * Damage to a built frame, in order: flip bits of byte `at` (from the frame's first byte), cut
 * it to `truncate` bytes, or compute its IPv4 checksum and transport trailer again (`reseal`:
 * so that a field's damage is not caught by a check that comes first).
 */
export type Damage = { at: number; xor: number } | { truncate: number } | { reseal: true };

export interface WorkRequest {
  wrId: number;
  opcode: "RDMA_WRITE" | "RDMA_WRITE_WITH_IMM" | "SEND" | "SEND_WITH_IMM" | "RDMA_READ";
  /** where in the IUT's region the request's own bytes are */
  offset: number;
  length: number;
  /** where in the tester's region (the peer's) a WRITE or READ goes */
  remoteOffset?: number;
  imm?: number;
}

export interface Completion {
  wrId: number;
  status: string;
  opcode?: string;
  byteLen?: number;
  imm?: number;
}

export type Step =
  | { send: SendFrame; after?: string }
  | { expect: Record<string, FieldMatch>; within: string; capture?: Record<string, string> }
  | { none: Record<string, FieldMatch>; for: string }
  | { wait: string }
  | { post: WorkRequest }
  | { recv: { wrId: number; offset: number; length: number } }
  | { completion: Completion; within: string }
  | { noCompletion: true; for: string }
  | { memory: { offset: number; equals: Bytes } }
  | { use: string };

/** What the IUT has before the first step: a device config (its transport's fields), a region, receives posted. */
export interface IutSetup {
  /** device config fields (docs/nic.md): timers, paths, windows a case depends on */
  config?: Record<string, number>;
  /** the IUT's memory region: `bytes` long, its rights (default every one), its first bytes */
  region?: { bytes: number; access?: ("LOCAL_WRITE" | "REMOTE_WRITE" | "REMOTE_READ")[]; init?: Bytes };
  receives?: { wrId: number; offset: number; length: number }[];
}

export interface ConformCase {
  id: string;
  title: string;
  transport: Transport;
  /** where the behaviour is defined: a section of docs/protocol.md, or the IBA for RoCEv2 */
  spec: string;
  iut: IutSetup;
  steps: Step[];
  /** the file it came from */
  file: string;
}

/** The suite: its version, the protocol version its cases are written for, and the step lists cases `use`. */
export interface Suite {
  version: string;
  /** the MetaRoCE-like header's version (MRT.VERSION) the cases are written for */
  protocolVersion: number;
  fragments: Record<string, Step[]>;
  cases: ConformCase[];
}

/** A case or suite file that breaks the format: what and where. */
export class CaseError extends Error {
  constructor(readonly file: string, readonly where: string, what: string) {
    super(`${file}${where ? ` ${where}` : ""}: ${what}`);
    this.name = "CaseError";
  }
}

const STEP_KINDS = ["send", "expect", "none", "wait", "post", "recv", "completion", "noCompletion", "memory", "use"] as const;
const isObject = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);

/** Checks one step of `file` (its index `i`): its kind, and that its times parse. */
function checkStep(file: string, where: string, s: unknown, fragments: ReadonlySet<string>): Step {
  if (!isObject(s)) throw new CaseError(file, where, "a step is an object");
  const kinds = STEP_KINDS.filter((k) => k in s);
  if (kinds.length !== 1) throw new CaseError(file, where, `a step has exactly one of ${STEP_KINDS.join(", ")} (it has ${kinds.length ? kinds.join(", ") : "none"})`);
  const kind = kinds[0]!;
  const time = (key: string, required: boolean) => {
    const v = s[key];
    if (v === undefined) { if (required) throw new CaseError(file, where, `a ${kind} step needs "${key}" (a time, e.g. "5us")`); return; }
    if (typeof v !== "string" || !/[a-z]\s*$/.test(v)) throw new CaseError(file, where, `"${key}" is a time with its unit, e.g. "5us" (ps, ns, us, ms, s)`);
    try { parseTime(v); } catch (e) { throw new CaseError(file, where, `"${key}": ${(e as Error).message}`); }
  };
  switch (kind) {
    case "send": if (!isObject(s.send)) throw new CaseError(file, where, "send is a frame's fields"); time("after", false); break;
    case "expect": if (!isObject(s.expect)) throw new CaseError(file, where, "expect is a frame's fields"); time("within", true); break;
    case "none": if (!isObject(s.none)) throw new CaseError(file, where, "none is a frame's fields"); time("for", true); break;
    case "wait": time("wait", true); break;
    case "completion": if (!isObject(s.completion) || typeof s.completion.wrId !== "number" || typeof s.completion.status !== "string") throw new CaseError(file, where, "completion needs wrId (a number) and status"); time("within", true); break;
    case "noCompletion": time("for", true); break;
    case "post": if (!isObject(s.post) || typeof s.post.wrId !== "number" || typeof s.post.opcode !== "string" || typeof s.post.length !== "number") throw new CaseError(file, where, "post needs wrId, opcode and length"); break;
    case "recv": if (!isObject(s.recv) || typeof s.recv.wrId !== "number" || typeof s.recv.length !== "number") throw new CaseError(file, where, "recv needs wrId, offset and length"); break;
    case "memory": if (!isObject(s.memory) || typeof s.memory.offset !== "number" || !isObject(s.memory.equals)) throw new CaseError(file, where, "memory needs offset and equals (bytes)"); break;
    case "use": if (typeof s.use !== "string" || !fragments.has(s.use)) throw new CaseError(file, where, `use names a fragment of suite.json (${[...fragments].join(", ") || "none"})`); break;
  }
  return s as Step;
}

/** The case `json` read from `file`, checked; throws a CaseError saying what and where. */
export function checkCase(file: string, json: unknown, fragments: ReadonlySet<string>): ConformCase {
  if (!isObject(json)) throw new CaseError(file, "", "a case is a JSON object");
  for (const key of ["id", "title", "spec"] as const) if (typeof json[key] !== "string" || json[key] === "") throw new CaseError(file, "", `"${key}" is required text`);
  if (json.transport !== "metaroce" && json.transport !== "rocev2") throw new CaseError(file, "", `"transport" is "metaroce" or "rocev2"`);
  const iut = json.iut ?? {};
  if (!isObject(iut)) throw new CaseError(file, "iut", "is an object");
  if (!Array.isArray(json.steps) || json.steps.length === 0) throw new CaseError(file, "", `"steps" is a list of at least one step`);
  const steps = json.steps.map((s, i) => checkStep(file, `step ${i + 1}`, s, fragments));
  return { id: json.id as string, title: json.title as string, transport: json.transport, spec: json.spec as string, iut: iut as IutSetup, steps, file };
}

/** The suite file's JSON (`file`), its fragments checked. */
export function checkSuite(file: string, json: unknown): Omit<Suite, "cases"> {
  if (!isObject(json)) throw new CaseError(file, "", "the suite is a JSON object");
  if (typeof json.version !== "string") throw new CaseError(file, "", `"version" is required text`);
  if (typeof json.protocolVersion !== "number") throw new CaseError(file, "", `"protocolVersion" is required (the Mrh/Mra version field)`);
  const raw = json.fragments ?? {};
  if (!isObject(raw)) throw new CaseError(file, "fragments", "is an object of step lists");
  const names = new Set(Object.keys(raw));
  const fragments: Record<string, Step[]> = {};
  for (const [name, steps] of Object.entries(raw)) {
    if (!Array.isArray(steps)) throw new CaseError(file, `fragment ${name}`, "is a list of steps");
    fragments[name] = steps.map((s, i) => checkStep(file, `fragment ${name} step ${i + 1}`, s, names));
  }
  return { version: json.version, protocolVersion: json.protocolVersion, fragments };
}

/** A case's steps with every `use` replaced by its fragment's steps (fragments may use fragments; a loop is refused). */
export function expandSteps(c: ConformCase, fragments: Record<string, Step[]>, depth = 0): Step[] {
  if (depth > 8) throw new CaseError(c.file, "", "fragments use each other too deeply (a loop?)");
  return c.steps.flatMap((s) => ("use" in s ? expandSteps({ ...c, steps: fragments[s.use]! }, fragments, depth + 1) : [s]));
}
