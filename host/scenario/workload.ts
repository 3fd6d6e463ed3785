// What a traffic scenario's messages are (planTraffic): its flows — a pattern's (trafficFlows),
// or an open-loop workload's, arriving as a Poisson process at each sending device at a target
// load of its links, between random pairs, sizes drawn from a CDF (size-cdf.ts), as in datacenter
// transport papers (DCTCP, pFabric, HPCC, Homa) —, their messages' verbs (one, or a mix by weight
// drawn from the seed) and the receives a SEND or WRITE_WITH_IMM consumes. traffic-run.ts posts
// them; docs/workloads.md says what each field means. Every draw comes from a stream of the scenario seed
// (host/fabric/rng.ts), and the logarithm an exponential draw needs is computed here with
// + - * / only, so that a run is the same in every JavaScript engine. No Node APIs.

import { ConfigError, resolveConfig } from "../config.js";
import { RandomStreams } from "../fabric/rng.js";
import { buildTopology, type TopologyOf } from "./cluster.js";
import type { Scenario, Flow } from "./scenario.js";
import { CdfError, cdfSize, parseSizeCdf, type SizeCdf } from "./size-cdf.js";
import { parseTime } from "../units.js";
import { maxOf } from "../extremes.js";

/** The verbs a scenario's traffic can post (schemas/scenario.schema.json traffic.verb). */
export const TRAFFIC_VERBS = ["WRITE", "WRITE_WITH_IMM", "SEND", "READ"] as const;
/** A verb a scenario's traffic posts: WRITE, WRITE_WITH_IMM, SEND or READ (RDMA_WRITE, RDMA_WRITE_WITH_IMM, SEND and RDMA_READ work requests). */
export type TrafficVerb = (typeof TRAFFIC_VERBS)[number];

/** Each traffic verb's work request opcode (host/verbs.ts Opcode). */
export const VERB_OPCODE = { WRITE: "RDMA_WRITE", WRITE_WITH_IMM: "RDMA_WRITE_WITH_IMM", SEND: "SEND", READ: "RDMA_READ" } as const;

/** Verbs by weight: each message is `v` with probability weight(v) / the weights' sum. */
export type VerbMix = Partial<Record<TrafficVerb, number>>;

/** Does a message of `verb` consume a receive at the destination? (SEND fills one, WRITE_WITH_IMM completes one with its immediate.) */
export const consumesReceive = (verb: TrafficVerb): boolean => verb === "SEND" || verb === "WRITE_WITH_IMM";

/** An open-loop workload, resolved (schemas/scenario.schema.json traffic.workload). */
export interface WorkloadSpec {
  /** The flow sizes' distribution. */
  sizes: SizeCdf;
  /** Offered load per sending device, a fraction of its links' rate (payload bytes). */
  load: number;
  /** Flows in all: the first this many arrivals over all devices. */
  flows?: number;
  /** Or: every arrival within this long after traffic.start, ps. */
  durationPs?: number;
  /** The slowdown table's size buckets: each an upper bound in bytes (inclusive), increasing; one bucket more holds the larger flows. */
  bucketsBytes: number[];
}

/** Flows a workload may have at most: each is a QP pair of its own, whose rings (and the completion queue sized for them) are in its devices' host memory (16 MiB by default: 16,384 flows between two devices fill half of it). */
export const WORKLOAD_MAX_FLOWS = 16384;

/** The slowdown table's default buckets: decades of bytes, 10 KB to 10 MB (pFabric and HPCC's figures split flows so). */
export const WORKLOAD_BUCKETS_DEFAULT = [10_000, 100_000, 1_000_000, 10_000_000];

/** Random stream tags: the verb mix of a pattern's messages; a workload's arrivals at device h are stream WORKLOAD_STREAM + h. */
const VERB_STREAM = 0x76657262; // "verb"
const WORKLOAD_STREAM = 0x776c0000; // "wl" << 16

/** A uniform number in [0, 1) with 53 random bits, from two draws of stream `i`. */
export function uniform(rng: RandomStreams, i: number): number {
  const hi = rng.next(i), lo = rng.next(i) >>> 11;
  return (hi * 2 ** 21 + lo) / 2 ** 53;
}

/**
 * The natural logarithm of x > 0 with + - * / only, so that every JavaScript engine gives the
 * same bits (Math.log is allowed to differ by an ulp between engines, and an arrival time rounded
 * to the picosecond could then differ): x scaled by powers of 2 (exact) into [1/√2, √2], then
 * ln m = 2 atanh((m - 1) / (m + 1)) by its series, 24 terms (|s| ≤ 0.172: the last term is below 1e-36).
 */
export function lnExact(x: number): number {
  if (!(x > 0) || !Number.isFinite(x)) return x === 0 ? -Infinity : NaN;
  let k = 0;
  while (x < Math.SQRT1_2) { x *= 2; k--; }
  while (x > Math.SQRT2) { x /= 2; k++; }
  const s = (x - 1) / (x + 1), s2 = s * s;
  let term = s, sum = 0;
  for (let j = 0; j < 24; j++) {
    sum += term / (2 * j + 1);
    term *= s2;
  }
  return 2 * sum + k * Math.LN2;
}

/** The verbs of `mix` with a weight above 0, in TRAFFIC_VERBS order, and their cumulative weights. */
function mixTable(mix: VerbMix): { verbs: TrafficVerb[]; cum: number[] } {
  const verbs = TRAFFIC_VERBS.filter((v) => (mix[v] ?? 0) > 0);
  let c = 0;
  return { verbs, cum: verbs.map((v) => (c += mix[v]!)) };
}

/** Draws verbs from a mix: one stream of the seed; a mix of one verb draws nothing. */
export class VerbDraw {
  private readonly t: { verbs: TrafficVerb[]; cum: number[] };
  constructor(mix: VerbMix, private readonly rng: RandomStreams, private readonly stream: number) {
    this.t = mixTable(mix);
  }

  /** The only verb, or null when the mix has several. */
  get single(): TrafficVerb | null {
    return this.t.verbs.length === 1 ? this.t.verbs[0]! : null;
  }

  next(): TrafficVerb {
    const { verbs, cum } = this.t;
    if (verbs.length === 1) return verbs[0]!;
    const x = uniform(this.rng, this.stream) * cum[cum.length - 1]!;
    const k = cum.findIndex((c) => x < c);
    return verbs[k < 0 ? verbs.length - 1 : k]!;
  }
}

/** The verb draw of a pattern's messages (flow by flow, message by message) for scenario seed `seed`. */
export function patternVerbs(mix: VerbMix, seed: number): VerbDraw {
  const rng = new RandomStreams(1);
  rng.seed(0, seed, VERB_STREAM);
  return new VerbDraw(mix, rng, 0);
}

/** What a device's links can carry for the traffic, Gb/s: its ports in the traffic's group, each at the lesser of its link's and its own rate. */
export function hostGbps(sc: TopologyOf & { traffic: { portGroup: "SCALE_UP" | "SCALE_OUT" } }): number {
  const cfg = resolveConfig({ engines: 1, ...sc.devices.config });
  const ports = Number(cfg.get("ports")), up = Math.min(ports, Number(cfg.get("scaleUpPorts")));
  const group = sc.traffic.portGroup === "SCALE_UP" ? up : ports - up;
  const topo = buildTopology(sc);
  return group * Math.min(Number(cfg.get("portGbps")), topo.links[0]!.gbps);
}

/** One flow of an open-loop workload: a single message of `bytes` from `src` to `dst` (a READ: `src` reads from `dst`), posted at `atPs`. */
export interface WorkloadFlow {
  src: number;
  dst: number;
  bytes: number;
  atPs: number;
  verb: TrafficVerb;
}

/**
 * The flows of workload `w` among `n` devices, in arrival order (time, then device): each device
 * sends a Poisson process of flows from `startPs` at rate λ = load × `gbps` / (8 × the mean size)
 * (exponential gaps), each to a device other than itself drawn uniformly, its size from the CDF
 * and its verb from `mix`, all from that device's stream of `seed`. Until `w.flows` flows in all,
 * or every arrival before startPs + durationPs. `at` names the workload in a refusal (more than
 * WORKLOAD_MAX_FLOWS flows).
 */
export function workloadFlows(w: WorkloadSpec, n: number, seed: number, startPs: number, gbps: number, mix: VerbMix, at = "scenario.traffic.workload"): WorkloadFlow[] {
  // flows per ps at each device: bits per ps over bits per flow
  const lambda = (w.load * gbps * 1e-3) / (8 * w.sizes.meanBytes);
  const rng = new RandomStreams(n);
  for (let h = 0; h < n; h++) rng.seed(h, seed, WORKLOAD_STREAM + h);
  const verbs = mixTable(mix).verbs.length > 1 ? Array.from({ length: n }, (_, h) => new VerbDraw(mix, rng, h)) : null;
  const only = mixTable(mix).verbs[0]!;
  // each device's clock (float ps, rounded per arrival so that no error accumulates)
  const clock = new Float64Array(n).fill(startPs);
  const gap = (h: number) => (clock[h] += -lnExact(1 - uniform(rng, h)) / lambda);
  const arrival = (h: number): WorkloadFlow => {
    const r = Math.floor(uniform(rng, h) * (n - 1));
    const dst = r < h ? r : r + 1;
    const bytes = cdfSize(w.sizes, uniform(rng, h));
    return { src: h, dst, bytes, atPs: Math.round(clock[h]!), verb: verbs ? verbs[h]!.next() : only };
  };
  const tooMany = (field: string, why: string) =>
    new ConfigError(`${at}.${field}`, `${why}, more than the ${WORKLOAD_MAX_FLOWS} a run may have (a QP pair each): give ${field === "duration" ? "a shorter duration or a lower load" : "fewer"}`);
  const out: WorkloadFlow[] = [];
  if (w.durationPs !== undefined) {
    const end = startPs + w.durationPs;
    const expected = n * lambda * w.durationPs;
    if (expected > WORKLOAD_MAX_FLOWS) throw tooMany("duration", `${n} devices at λ = ${(lambda * 1e12).toFixed(0)} flows/s each for ${w.durationPs} ps make about ${Math.round(expected)} flows`);
    for (let h = 0; h < n; h++) {
      for (gap(h); clock[h]! < end; gap(h)) {
        out.push(arrival(h));
        if (out.length > WORKLOAD_MAX_FLOWS) throw tooMany("duration", `its arrivals reached ${out.length} flows`);
      }
    }
    return out.sort((a, b) => a.atPs - b.atPs || a.src - b.src);
  }
  // the first `flows` arrivals over all devices: a heap of each device's next arrival, by (time, device)
  const heap: number[] = [];
  const less = (a: number, b: number) => clock[a]! < clock[b]! || (clock[a] === clock[b] && a < b);
  const push = (h: number) => {
    heap.push(h);
    for (let i = heap.length - 1; i > 0;) {
      const p = (i - 1) >> 1;
      if (!less(heap[i]!, heap[p]!)) break;
      [heap[i], heap[p]] = [heap[p]!, heap[i]!];
      i = p;
    }
  };
  const pop = (): number => {
    const top = heap[0]!, last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    }
    return top;
  };
  for (let h = 0; h < n; h++) { gap(h); push(h); }
  while (out.length < w.flows!) {
    const h = pop();
    out.push(arrival(h));
    gap(h);
    push(h);
  }
  return out;
}

/** A workload as the schema passed it (defaults filled). */
interface WorkloadInput { sizes: { file?: string; text?: string }; load: number; flows?: number; duration?: string | number; buckets?: number[] }

/**
 * The workload of a scenario's traffic (`raw`, as the schema passed it), at `at`
 * (scenario.traffic.workload): its size file read (its text inlined: inlineWorkloadFiles), one of
 * flows and duration, buckets increasing. Throws ConfigError naming the field (a malformed size
 * file: its file:line and what is wrong).
 */
export function resolveWorkload(raw: WorkloadInput, at: string): WorkloadSpec {
  const s = raw.sizes;
  if (s.text === undefined) {
    if (s.file !== undefined) throw new ConfigError(`${at}.sizes.file`, `${JSON.stringify(s.file)} is not read here: menic run reads it relative to the scenario file; through the API give the CDF as text, or call inlineWorkloadFiles first`);
    throw new ConfigError(`${at}.sizes`, "needs file or text (the flow sizes' CDF: docs/workloads.md, \"Size files\")");
  }
  let sizes: SizeCdf;
  try {
    sizes = parseSizeCdf(s.text, s.file ?? "text");
  } catch (e) {
    if (e instanceof CdfError) throw new ConfigError(`${at}.sizes.${s.file !== undefined ? "file" : "text"}`, e.message);
    throw e;
  }
  if ((raw.flows === undefined) === (raw.duration === undefined))
    throw new ConfigError(at, raw.flows === undefined ? "needs flows (how many in all) or duration (how long they keep arriving)" : "has both flows and duration: give one");
  const buckets = raw.buckets ?? WORKLOAD_BUCKETS_DEFAULT;
  buckets.forEach((b, i) => {
    if (i > 0 && b <= buckets[i - 1]!) throw new ConfigError(`${at}.buckets[${i}]`, `bucket bounds must increase: ${b} after ${buckets[i - 1]}`);
  });
  let durationPs: number | undefined;
  if (raw.duration !== undefined) {
    try {
      durationPs = typeof raw.duration === "number" ? raw.duration : Number(parseTime(raw.duration));
    } catch (e) {
      throw new ConfigError(`${at}.duration`, (e as Error).message);
    }
    if (durationPs <= 0) throw new ConfigError(`${at}.duration`, "must be longer than 0");
  }
  return { sizes, load: raw.load, ...(raw.flows !== undefined ? { flows: raw.flows } : {}), ...(durationPs !== undefined ? { durationPs } : {}), bucketsBytes: buckets };
}

/** The verbs of a scenario's traffic (as the schema passed them: `verb`, or `verbs` by weight, not both), at `at` (scenario.traffic). */
export function resolveVerbs(t: { verb?: TrafficVerb; verbs?: VerbMix }, at: string): VerbMix {
  if (t.verb !== undefined && t.verbs !== undefined) throw new ConfigError(at, "has both verb and verbs: give one verb, or a mix by weight");
  if (t.verbs === undefined) return { [t.verb ?? "WRITE"]: 1 };
  if (!TRAFFIC_VERBS.some((v) => (t.verbs![v] ?? 0) > 0)) throw new ConfigError(`${at}.verbs`, "needs a verb with a weight above 0");
  return t.verbs;
}

/**
 * Replaces the text of a workload's size file in a scenario (parsed JSON, not yet resolved):
 * `traffic.workload.sizes.file` read with `read` (the CLI reads relative to the scenario file)
 * into `sizes.text`, the file's name kept for the errors that name its lines. Returns a copy;
 * what `read` throws is thrown as a ConfigError naming the field.
 */
export function inlineWorkloadFiles(input: unknown, read: (file: string) => string): unknown {
  const s = structuredClone(input) as { traffic?: { workload?: { sizes?: Record<string, unknown> } } };
  const sizes = s?.traffic?.workload?.sizes;
  if (typeof sizes !== "object" || sizes === null || typeof sizes.file !== "string" || sizes.text !== undefined) return s;
  try {
    sizes.text = read(sizes.file);
  } catch (e) {
    throw new ConfigError("scenario.traffic.workload.sizes.file", `${sizes.file}: ${(e as Error).message}`);
  }
  return s;
}

/**
 * One flow's messages: how many, their bytes, their verbs, when they are posted, and the
 * receives its receiver posts. A pattern's flow has `messages` of `bytes` each; a workload's
 * flow is one message.
 */
export interface FlowPlan {
  spec: Flow;
  /** when its messages are posted, ps from the traffic's base (0, or a collective's doorbells) */
  startPs: number;
  messages: number;
  /** bytes of each message */
  bytes: number;
  /** each message's verb (TRAFFIC_VERBS index) when the traffic mixes verbs, else null: every message is `verb` */
  verbs: Uint8Array | null;
  verb: TrafficVerb;
  /** receives its receiver posts before it starts */
  receives: number;
}

/** What a traffic posts, flow by flow, and how. */
export interface TrafficPlan {
  flows: FlowPlan[];
  /** the largest message, bytes (each device's region holds one) */
  maxBytes: number;
  /** the most messages of a flow */
  messages: number;
  /** the most receives of a flow */
  receives: number;
  /** an open-loop workload: its spec and each device's rate, Gb/s; its flows are posted as the run reaches them */
  workload?: { spec: WorkloadSpec; hostGbps: number };
  /** some message is not a WRITE: the result counts each verb */
  mixed: boolean;
}

/** What a traffic's plan is drawn from: the pattern or workload, the seed, the devices and links (a workload's rate). */
export type TrafficPlanOf = TrafficPatternOf & TopologyOf & { traffic: Pick<Scenario["traffic"], "messageBytes" | "messages" | "startPs" | "staggerPs" | "verbs" | "receives" | "workload" | "portGroup"> };

const VERB_INDEX = Object.fromEntries(TRAFFIC_VERBS.map((v, i) => [v, i])) as Record<TrafficVerb, number>;

/** The receives a flow's receiver posts: the scenario's `receives`, else one per message that consumes one. */
function receivesOf(t: Pick<Scenario["traffic"], "receives">, verbs: Uint8Array | null, verb: TrafficVerb, messages: number): number {
  if (t.receives !== undefined) return t.receives;
  if (!verbs) return consumesReceive(verb) ? messages : 0;
  let n = 0;
  for (const v of verbs) if (consumesReceive(TRAFFIC_VERBS[v]!)) n++;
  return n;
}

/** The messages of `sc`'s traffic: its pattern's flows (trafficFlows), each message's verb drawn from the mix in flow order; or its workload's flows (workloadFlows). */
export function planTraffic(sc: TrafficPlanOf): TrafficPlan {
  const t = sc.traffic;
  const mixed = TRAFFIC_VERBS.some((v) => v !== "WRITE" && (t.verbs[v] ?? 0) > 0);
  let flows: FlowPlan[];
  let workload: TrafficPlan["workload"];
  if (t.workload) {
    const gbps = hostGbps(sc);
    workload = { spec: t.workload, hostGbps: gbps };
    flows = workloadFlows(t.workload, sc.devices.count, sc.seed, t.startPs, gbps, t.verbs).map((w) => ({
      spec: { src: w.src, dst: w.dst }, startPs: w.atPs, messages: 1, bytes: w.bytes, verbs: null, verb: w.verb, receives: receivesOf(t, null, w.verb, 1),
    }));
  } else {
    const draw = patternVerbs(t.verbs, sc.seed);
    flows = trafficFlows(sc).map((spec, i) => {
      const verbs = draw.single ? null : Uint8Array.from({ length: t.messages }, () => VERB_INDEX[draw.next()]);
      const verb = draw.single ?? "WRITE";
      return { spec, startPs: t.startPs + i * t.staggerPs, messages: t.messages, bytes: t.messageBytes, verbs, verb, receives: receivesOf(t, verbs, verb, t.messages) };
    });
  }
  return {
    flows, mixed, ...(workload ? { workload } : {}),
    maxBytes: maxOf(flows.map((f) => f.bytes), 1),
    messages: maxOf(flows.map((f) => f.messages), 1),
    receives: maxOf(flows.map((f) => f.receives), 0),
  };
}

/** What a traffic pattern's flows are drawn from: the device count, the pattern and its parameters, the seed (a permutation's). */
export type TrafficPatternOf = Pick<Scenario, "seed"> & { devices: Pick<Scenario["devices"], "count">; traffic: Pick<Scenario["traffic"], "pattern" | "flowsPerPair" | "incastSenders"> };

/** The flows of the scenario's traffic pattern: (source device, destination device) pairs. */
export function trafficFlows(sc: TrafficPatternOf): Flow[] {
  const n = sc.devices.count, t = sc.traffic;
  const out: Flow[] = [];
  const repeat = (src: number, dst: number) => {
    if (t.flowsPerPair === 1) out.push({ src, dst });
    else for (let k = 0; k < t.flowsPerPair; k++) out.push({ src, dst, lane: src + dst + k });
  };
  switch (t.pattern) {
    case "pairs":
      for (let d = 0; d + 1 < n; d += 2) repeat(d, d + 1);
      break;
    case "permutation": {
      // a derangement drawn from the scenario's seed: nobody sends to itself
      const rng = new RandomStreams(1);
      rng.seed(0, sc.seed, 0x7065726d);
      const perm = Array.from({ length: n }, (_, i) => i);
      do {
        for (let i = n - 1; i > 0; i--) {
          const j = rng.next(0) % (i + 1);
          [perm[i], perm[j]] = [perm[j]!, perm[i]!];
        }
      } while (n > 1 && perm.some((p, i) => p === i));
      perm.forEach((p, i) => repeat(i, p));
      break;
    }
    case "incast":
      for (let d = 1; d <= Math.min(t.incastSenders, n - 1); d++) repeat(d, 0);
      break;
    case "all-to-all":
      for (let s = 0; s < n; s++) for (let d = 0; d < n; d++) if (s !== d) repeat(s, d);
      break;
  }
  return out;
}
