// Runs conformance cases against a target: the tester keeps a time cursor (ps from the case's
// start, at the IUT's port), sends the case's frames at it, and moves it to each frame an
// expect step matches; a case passes when every step holds, and fails at the first that does
// not, saying what the IUT did instead (the frames it sent in the step's window, decoded).

import type { ConformCase, Completion, FieldMatch, Step, Suite } from "./case.js";
import { expandSteps } from "./case.js";
import { buildTesterFrame, decodeIutFrame, describe, mismatch, type Decoded } from "./frames.js";
import { bytesOf, firstDifference, resolve, ValueError, type Vars } from "./values.js";
import { TargetLimit, type IutCompletion, type SentFrame, type Target, type TesterPeer } from "./target.js";
import { portAddress } from "../fabric/topology.js";
import { parseTime, formatTime } from "../units.js";
import { MRT } from "../generated/headers.js";
import type { TestCase, TestSuite } from "../test-report.js";

/** The tester: device 1, whose QP and region the IUT's QP is connected to. */
export const TESTER: TesterPeer = { device: 1, qpn: 0x000123, addr: 0x1000_0000, rkey: 0x5eed };

/** When the first step runs, ps from the IUT's setup: the time it has to take its setup (a receive's doorbell reaches the NIC in about a microsecond). */
export const SETTLE_PS = 5_000_000n;

/** A step that does not hold: the message a failed case carries. */
class StepFailed extends Error {}

interface Seen { f: SentFrame; d: Decoded; used: boolean }

/** Runs one case on `target`; its result as a test case (its name the case's id and title). */
export async function runCase(c: ConformCase, fragments: Suite["fragments"], target: Target): Promise<TestCase> {
  const name = `${c.id}: ${c.title}`;
  let steps: Step[];
  try {
    steps = expandSteps(c, fragments);
  } catch (e) {
    return { name, status: "error", messages: [(e as Error).message] };
  }
  let i = 0;
  try {
    const iut = await target.open(c.transport, c.iut, TESTER);
    for (const r of c.iut.receives ?? []) await target.postRecv(r.wrId, r.offset, r.length);
    const vars: Vars = new Map([
      ["qpn", iut.qpn], ["addr", iut.addr], ["rkey", iut.rkey], ["peerQpn", TESTER.qpn], ["peerAddr", TESTER.addr], ["peerRkey", TESTER.rkey],
    ]);
    const ipSrc = portAddress(TESTER.device, 0), ipDst = portAddress(iut.device, 0);
    const seen: Seen[] = [], completions: IutCompletion[] = [];
    // the IUT has SETTLE_PS to take what it was set up with (its receives' doorbells) first
    let t = SETTLE_PS;
    /** Runs the IUT to `until`, keeping what it sent and completed. */
    const pull = async (until: bigint) => {
      for (const f of await target.advance(until)) seen.push({ f, d: decodeIutFrame(c.transport, f.bytes), used: false });
      completions.push(...(await target.poll()));
    };
    /** The IUT's frames sent from `from` to `to`, one per line, for a failure's message. */
    const sentBetween = (from: bigint, to: bigint) => {
      const lines = seen.filter((s) => s.f.timePs >= from && s.f.timePs <= to).map((s) => `    at ${formatTime(s.f.timePs)}${s.used ? " (matched before)" : ""}: ${describe(c.transport, s.d)}`);
      return lines.length ? `; the IUT sent:\n${lines.slice(0, 12).join("\n")}${lines.length > 12 ? `\n    ... and ${lines.length - 12} more` : ""}` : "; the IUT sent nothing";
    };
    for (; i < steps.length; i++) {
      const s = steps[i]!;
      if ("send" in s) {
        t += s.after ? parseTime(s.after) : 0n;
        await pull(t);
        if (target.now() > t) t = target.now();
        await target.send(buildTesterFrame(c.transport, s.send, vars, ipSrc, ipDst));
      } else if ("expect" in s) {
        const deadline = t + parseTime(s.within);
        for (;;) {
          const hit = seen.find((x) => !x.used && x.f.timePs >= t && x.f.timePs <= deadline && mismatch(c.transport, x.d, s.expect, vars) === null);
          if (hit) {
            hit.used = true;
            t = hit.f.timePs;
            for (const [v, field] of Object.entries(s.capture ?? {})) {
              const got = hit.d.ok ? hit.d.fields[field] : undefined;
              if (typeof got !== "number") throw new StepFailed(`capture ${v}: the frame has no number ${field}`);
              vars.set(v, got);
            }
            break;
          }
          if (target.now() >= deadline) throw new StepFailed(`no frame ${show(s.expect)} from ${formatTime(t)} to ${formatTime(deadline)}${whyNot(seen, t, deadline, c, s.expect, vars)}${sentBetween(t, deadline)}`);
          await pull(min(target.now() + target.stepPs, deadline));
        }
      } else if ("none" in s) {
        const end = t + parseTime(s.for);
        await pull(end);
        const hit = seen.find((x) => !x.used && x.f.timePs >= t && x.f.timePs <= end && mismatch(c.transport, x.d, s.none, vars) === null);
        if (hit) throw new StepFailed(`a frame ${show(s.none)} at ${formatTime(hit.f.timePs)}, expected none until ${formatTime(end)}: ${describe(c.transport, hit.d)}`);
        t = end;
      } else if ("wait" in s) {
        t += parseTime(s.wait);
        await pull(t);
      } else if ("post" in s) {
        await pull(t);
        await target.post({ ...s.post, remoteOffset: s.post.remoteOffset ?? 0 }, TESTER);
      } else if ("recv" in s) {
        await pull(t);
        await target.postRecv(s.recv.wrId, s.recv.offset, s.recv.length);
      } else if ("completion" in s) {
        const deadline = t + parseTime(s.within);
        while (completions.length === 0 && target.now() < deadline) await pull(min(target.now() + target.stepPs, deadline));
        const got = completions.shift();
        if (!got) throw new StepFailed(`no completion from ${formatTime(t)} to ${formatTime(deadline)} (expected wrId ${s.completion.wrId} ${s.completion.status})${sentBetween(t, deadline)}`);
        const bad = completionMismatch(got, s.completion, vars);
        if (bad) throw new StepFailed(`completion wrId ${got.wrId} ${got.status} ${got.opcode} ${got.byteLen} bytes: ${bad}`);
        if (target.now() > t) t = target.now();
      } else if ("noCompletion" in s) {
        const end = t + parseTime(s.for);
        await pull(end);
        if (completions.length) throw new StepFailed(`a completion (wrId ${completions[0]!.wrId} ${completions[0]!.status}), expected none until ${formatTime(end)}`);
        t = end;
      } else if ("memory" in s) {
        await pull(t);
        const want = bytesOf(s.memory.equals, "memory.equals");
        const got = await target.read(s.memory.offset, want.length);
        const diff = firstDifference(got, want);
        if (diff !== "equal") throw new StepFailed(`memory at offset ${s.memory.offset}: ${diff}`);
      }
    }
    return { name, status: "pass", messages: [] };
  } catch (e) {
    const where = `step ${i + 1} of ${steps.length}${steps[i] ? ` (${Object.keys(steps[i]!)[0]})` : ""}`;
    if (e instanceof StepFailed) {
      const counted = Object.entries(await target.counters().catch(() => ({}))).map(([k, v]) => `${k} ${v}`).join(", ");
      return { name, status: "fail", messages: [`${where}: ${e.message}`, `spec: ${c.spec}`, ...(counted ? [`the IUT counted: ${counted}`] : [])] };
    }
    if (e instanceof TargetLimit) return { name, status: "skip", messages: [`${where}: ${e.message}`] };
    if (e instanceof ValueError) return { name, status: "error", messages: [`${c.file} ${where}: ${e.message}`] };
    return { name, status: "error", messages: [`${where}: ${(e as Error).message}`] };
  } finally {
    await target.close();
  }
}

const min = (a: bigint, b: bigint) => (a < b ? a : b);
const show = (m: Record<string, FieldMatch>) => JSON.stringify(m);

/** Why the frames of the window did not match: the nearest one's first wrong field. */
function whyNot(seen: readonly Seen[], from: bigint, to: bigint, c: ConformCase, m: Record<string, FieldMatch>, vars: Vars): string {
  const near = seen.filter((x) => !x.used && x.f.timePs >= from && x.f.timePs <= to).map((x) => mismatch(c.transport, x.d, m, vars)!);
  return near.length ? ` (first candidate: ${near[0]})` : "";
}

function completionMismatch(got: IutCompletion, want: Completion, vars: Vars): string | null {
  if (got.wrId !== resolve(want.wrId, vars)) return `expected wrId ${want.wrId}`;
  if (got.status !== want.status) return `expected status ${want.status}`;
  if (want.opcode !== undefined && got.opcode !== want.opcode) return `expected opcode ${want.opcode}`;
  if (want.byteLen !== undefined && got.byteLen !== want.byteLen) return `expected ${want.byteLen} bytes`;
  if (want.imm !== undefined && got.imm !== want.imm) return `expected imm ${want.imm}, got ${got.imm}`;
  return null;
}

/** Runs every case of `suite` (those `only` keeps) on `target`, one suite of results per transport. */
export async function runSuite(suite: Suite, target: Target, only: (c: ConformCase) => boolean = () => true): Promise<TestSuite[]> {
  const out: TestSuite[] = [];
  for (const transport of ["metaroce", "rocev2"] as const) {
    const cases = suite.cases.filter((c) => c.transport === transport && only(c));
    if (cases.length === 0) continue;
    const results: TestCase[] = [];
    for (const c of cases) results.push(await runCase(c, suite.fragments, target));
    out.push({ name: `conformance ${suite.version} ${transport}`, cases: results, timePs: 0 });
  }
  return out;
}

/** Whether the suite was written for this build's MetaRoCE-like header version; a message when not. */
export function versionMismatch(suite: Suite): string | null {
  return suite.protocolVersion === MRT.VERSION ? null
    : `the suite is written for protocol version ${suite.protocolVersion}; this menic speaks version ${MRT.VERSION} (docs/protocol.md)`;
}
