// The fuzz tier's scenario generators (issue 26, "Keep finding them"): random traffic scenarios
// mutated from a valid base, and collectives under random faults, each drawn from a seed, and the
// invariants every run must keep whatever it was given:
// - it is refused with a ConfigError that names a field (scenario.…), or it runs: nothing else
//   escapes (no RangeError, no trap, no "Invalid string length");
// - it never stalls: work outstanding with nothing left to happen (RunEnd "stalled");
// - no frame reaches a device in its past (lateArrivals, port.rx_late: a causality break);
// - what it reports holds together: a flow is SUCCESS exactly when every message it posted
//   completed with success, INCOMPLETE when some are outstanding and none failed, its first error
//   otherwise; no goodput without a completion; a run "finished" has every message done;
// - a collective that is done computed the reference's result bit for bit; one that failed names
//   the node and status; a run never ends "finished" with a row not done;
// - memory stays bounded: no instance of the run more than doubles from its first window to its
//   end (the runtime grows memory by doubling, and the fabric's pool and tables grow by segments
//   and doubling as traffic needs them; a run whose tables grew without end would double again);
// - the same input gives the same result (checked on every `determinismEvery`-th case).
// test/fuzz-tier.test.ts runs a small budget of each in CI; `npm run soak` runs a large one.
import { xorshift32 } from "../xorshift.js";
import { runScenario, type ScenarioResult, type ScenarioInput } from "../../../host/scenario/run.js";
import { ConfigError } from "../../../host/config.js";

export interface TierOutcome {
  /** what broke, one line each (empty: every invariant held) */
  violations: string[];
  /** how the run ended, or "refused" (a ConfigError naming a field) */
  ended: string;
  /** messages (traffic) or collective sizes posted, and those that completed */
  posted: number;
  completed: number;
}

type Rng = () => number;
const pick = <T>(next: Rng, a: readonly T[]): T => a[next() % a.length]!;
const chance = (next: Rng, p: number) => next() / 0x1_0000_0000 < p;
const between = (next: Rng, lo: number, hi: number) => lo + (next() % (hi - lo + 1));

/** Devices' ports and the split, shared by both generators (valid for the schema; not always for the topology). */
function deviceConfig(next: Rng): { ports: number; scaleUpPorts: number; extra: Record<string, number> } {
  const ports = pick(next, [1, 2, 4, 12]);
  const extra: Record<string, number> = {};
  if (chance(next, 0.4)) extra.mtuBytes = pick(next, [256, 1024, 4096]);
  if (chance(next, 0.3)) extra.mrtPaths = pick(next, [1, 2, 8, 16]);
  if (chance(next, 0.3)) extra.mrtInitCwndBytes = pick(next, [4096, 16384, 65536, 524288]);
  if (chance(next, 0.3)) extra.transportRetries = between(next, 0, 7);
  if (chance(next, 0.3)) extra.rnrRetries = between(next, 0, 6);
  return { ports, scaleUpPorts: ports === 1 ? 1 : between(next, 1, ports), extra };
}

function topology(next: Rng, devices: number): Record<string, unknown> {
  if (chance(next, 0.6)) return { kind: "single-switch" };
  const planes = pick(next, [1, 2]), spines = pick(next, [1, 2]), devicesPerLeaf = pick(next, [1, 2, 4, devices]);
  // a third of the rest on three tiers: pods of 1 or 2 leaves, 1 or 2 super-spines a group
  if (chance(next, 1 / 3)) return { kind: "three-tier", planes, devicesPerLeaf, leavesPerPod: pick(next, [1, 2]), spinesPerPod: spines, superSpines: pick(next, [1, 2]) };
  return { kind: "leaf-spine", planes, spines, devicesPerLeaf };
}

function faults(next: Rng): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  if (chance(next, 0.5)) out.push({ kind: "loss", links: "all", random: pick(next, [0.001, 0.01, 0.05]) });
  if (chance(next, 0.2)) out.push({ kind: "loss", links: "all", gilbertElliott: { pGoodToBad: 0.01, pBadToGood: 0.3 } });
  if (chance(next, 0.3)) {
    const at = between(next, 0, 20);
    out.push({ kind: "link-down", links: [between(next, 0, 7)], at: `${at}us`, ...(chance(next, 0.7) ? { until: `${at + between(next, 1, 40)}us` } : {}) });
  }
  return out;
}

/** A random traffic scenario (seeded): every field the schema allows, small enough to run in well under a second. */
/**
 * How a case is made to end, whatever the seed range (null: as it goes): traffic, one case in
 * sixteen asks for 0 messages (refused, naming scenario.traffic.messages) and one has 1 us (too
 * little to finish); collectives, one in six has 3 us. Cut short, a case ends at its time limit
 * unless something else in it is refused. The tests check each such case, and so every budget
 * reaches every outcome (a fresh range of 24 collectives may otherwise all finish, and one of 48
 * traffic cases had none refused).
 */
export function forcedEnd(kind: "traffic" | "collective", seed: number): "refused" | "time-limit" | null {
  if (kind === "collective") return seed % 6 === 5 ? "time-limit" : null;
  return seed % 16 === 15 ? "refused" : seed % 16 === 7 ? "time-limit" : null;
}

export function trafficScenario(seed: number): Record<string, unknown> {
  const next = xorshift32(seed * 2 + 1);
  const count = between(next, 2, 8);
  const { ports, scaleUpPorts, extra } = deviceConfig(next);
  const forced = forcedEnd("traffic", seed);
  const s = {
    name: `tier-traffic-${seed}`, seed, until: pick(next, ["200us", "1ms", "3ms"]),
    transport: pick(next, ["rocev2", "metaroce"]),
    devices: { count, congestionControl: pick(next, ["dctcp", "nscc"]), config: { ports, scaleUpPorts, ...extra } },
    fabric: { topology: topology(next, count), ...(chance(next, 0.3) ? { mode: "timing" } : {}), ...(chance(next, 0.15) ? { switch: { pfc: { enabled: true } } } : {}) },
    traffic: {
      pattern: pick(next, ["pairs", "permutation", "incast", "all-to-all"]),
      messageBytes: pick(next, [1, 100, 4096, 4097, 65536, 300_000]),
      messages: between(next, 1, 6),
      flowsPerPair: pick(next, [1, 1, 2]),
      ...(chance(next, 0.3) ? { start: `${between(next, 0, 10)}us` } : {}),
      ...(chance(next, 0.3) ? { stagger: `${between(next, 0, 3)}us` } : {}),
    },
    faults: faults(next),
  };
  if (forced === "refused") s.traffic.messages = 0;
  if (forced === "time-limit") s.until = "1us";
  return s;
}

/** A random collective under random faults (seeded). */
export function collectiveScenario(seed: number): Record<string, unknown> {
  const next = xorshift32(seed * 2 + 2);
  const count = between(next, 2, 8);
  const { ports, scaleUpPorts, extra } = deviceConfig(next);
  const op = pick(next, ["all-reduce", "reduce-scatter", "all-gather", "broadcast", "all-to-all"] as const);
  const algorithm = op === "all-reduce" ? pick(next, ["ring", "tree", ...((count & (count - 1)) === 0 ? ["halving-doubling"] : [])]) : "ring";
  const dtype = pick(next, ["f32", "f16", "bf16", "i32"]);
  // a whole number of elements on every device
  const unit = 4 * count * 8;
  return {
    // cut short as forcedEnd says: the checks must hold for a collective that did not finish too
    name: `tier-collective-${seed}`, seed, until: forcedEnd("collective", seed) ? "3us" : "5ms",
    transport: pick(next, ["rocev2", "metaroce"]),
    devices: { count, config: { ports, scaleUpPorts, transportTimeoutPs: 65_536_000, ...extra } },
    fabric: { topology: topology(next, count) },
    collective: { op, algorithm, dtype, sizes: [unit * between(next, 1, 32), ...(chance(next, 0.5) ? [unit * between(next, 64, 512)] : [])], engines: pick(next, [1, 4, 16]), ...(op === "broadcast" ? { root: between(next, 0, count - 1) } : {}) },
    faults: faults(next),
  };
}

/** Runs `input` and checks every invariant of the tier; never throws for what the run does. */
export async function runTierCase(module: WebAssembly.Module, input: Record<string, unknown>, opts: { determinism?: boolean } = {}): Promise<TierOutcome> {
  const violations: string[] = [];
  const name = String(input.name);
  let grew = 0;
  const run = async () => {
    // every instance of the run (the fabric's, and the devices' when they live apart), from the
    // first window on: set-up may grow them; the run only by the frames the fabric held at its
    // peak, each a 128-byte block, a 32-byte ring entry and side record, and in full mode a
    // payload slot. The slots' slab doubles by copying (twice the last slab in all), and the
    // allocator doubles a memory that runs out: at most twice before and twice the frames.
    // (Frames, not the switches' buffer bytes: at a 256-byte MTU a queued frame's slot and
    // records are three times its wire bytes; tier-traffic-154 at 400 cases.)
    let memories: WebAssembly.Memory[] = [], before: number[] = [];
    let held = () => 0;
    const size = () => memories.map((m) => m.buffer.byteLength);
    const r = await runScenario(module, input as ScenarioInput, {
      onBuilt: (b) => {
        memories = [...new Set([b.fabric.core.memory, ...b.contexts.map((c) => c.device.core.memory)])];
        before = size();
        const perFrame = 128 + 32 + 32 + (b.fabric.config.mode === "full" ? b.fabric.config.payloadSlotBytes : 0);
        held = () => 2 * b.fabric.totals().packetsPeak * perFrame;
      },
      onStart: () => { if (grew === 0 && memories.length) before = size(); },
    });
    size().forEach((n, i) => { grew = Math.max(grew, n - 2 * (before[i]! + held())); });
    return r;
  };
  let r: ScenarioResult;
  try {
    r = await run();
  } catch (e) {
    if (e instanceof ConfigError && /scenario\./.test(e.message)) return { violations, ended: "refused", posted: 0, completed: 0 };
    return { violations: [`${name}: threw ${e instanceof Error ? `${e.constructor.name}: ${e.message}` : String(e)}`], ended: "threw", posted: 0, completed: 0 };
  }
  violations.push(...resultViolations(name, r));
  if (grew > 0) violations.push(`${name}: an instance's memory grew to ${grew} B more than twice what it was at the first window and what the frames the fabric held take`);
  if (opts.determinism) {
    const again = await run();
    if (JSON.stringify(again) !== JSON.stringify(r)) violations.push(`${name}: the same input gave another result`);
  }
  const posted = r.collective ? r.collective.rows.length : r.messages.total;
  const completed = r.collective ? r.collective.rows.filter((x) => x.status === "done").length : r.messages.completed;
  return { violations, ended: r.ended, posted, completed };
}

/** What in result `r` of scenario `name` breaks an invariant of the tier (its own lines: a test feeds it results that do). */
export function resultViolations(name: string, r: ScenarioResult): string[] {
  const violations: string[] = [];
  const say = (what: string) => violations.push(`${name}: ${what}`);
  if (r.ended === "stalled") say(`stalled at ${r.endPs} ps with ${r.messages.total - r.messages.completed} of ${r.messages.total} outstanding`);
  if (r.lateArrivals !== 0) say(`${r.lateArrivals} frames reached a device in its past (port.rx_late)`);
  if (r.collective) {
    r.collective.rows.forEach((row, i) => {
      if (row.status === "done" && row.check === "mismatch") say(`size ${i}: done, but its result differs from the reference's`);
      if (row.status === "failed" && !/: [A-Z_]+$/.test(row.error ?? "")) say(`size ${i}: failed without naming a node and status (${row.error})`);
      if (row.status !== "done" && r.ended === "finished") say(`size ${i}: ${row.status}, yet the run ended finished`);
      // no rate without a completion (result.ts): a bandwidth exactly for a size done
      if (row.busbwGBps !== null && row.status !== "done") say(`size ${i}: ${row.busbwGBps} GB/s for a size not done`);
      if (row.busbwGBps === null && row.status === "done") say(`size ${i}: done, with no bandwidth`);
    });
  } else {
    r.flows.forEach((f, i) => {
      const want = f.failed > 0 ? null : f.completed === f.messages ? "SUCCESS" : "INCOMPLETE";
      if (want !== null && f.status !== want) say(`flow ${i}: ${f.completed}/${f.messages} done, ${f.failed} failed, status ${f.status}`);
      if (want === null && (f.status === "SUCCESS" || f.status === "INCOMPLETE")) say(`flow ${i}: ${f.failed} failed, status ${f.status}`);
      if (f.completed + f.failed > f.messages) say(`flow ${i}: ${f.completed} + ${f.failed} completions for ${f.messages} messages`);
      // no rate without a completion (result.ts); messages that all failed delivered nothing: 0
      if (f.goodputGbps !== null && (f.completed + f.failed === 0 || (f.goodputGbps > 0 && f.completed === 0))) say(`flow ${i}: goodput ${f.goodputGbps} Gb/s with no message done`);
      if (f.goodputGbps === null && f.completed + f.failed > 0) say(`flow ${i}: no goodput, though ${f.completed + f.failed} of its messages completed`);
    });
    if (r.ended === "finished" && r.messages.completed !== r.messages.total) say(`finished with ${r.messages.completed} of ${r.messages.total} done`);
  }
  return violations;
}
