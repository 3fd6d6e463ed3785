// FCT slowdown, the figure datacenter transport papers plot (pFabric, HPCC, Homa): a flow's
// completion time over the one it would have alone on an idle fabric, by flow size. The ideal
// is computed, not run: the flow's frames as the transport builds them (headers from
// layouts/headers, one MTU of payload each) go store-and-forward over the links of their path,
// each frame taking ⌈(bytes + 24) × 8000 / Gb/s⌉ ps per link (the fabric's own serialisation,
// docs/fabric.md) and the link's latency, plus the switch latency at each switch, and the ACK
// (RoCEv2's AETH, the MetaRoCE-like ACK) comes back the same way; a READ's request goes out and
// its responses come back. The NIC's own time (the doorbell over PCIe, the work request's
// fetch, reading HBM, writing the completion) is left out, so the ideal is a lower bound of
// what any run takes and a lone flow's slowdown is a little above 1 (docs/workloads.md,
// "Slowdown"). No Node APIs.

import { UDP_IPV4_BYTES } from "../wire/udp-ipv4.js";
import { BTH_SIZE, RETH_SIZE, AETH_SIZE, IMM_DT_SIZE, ICRC_SIZE, MRH_SIZE, MRA_SIZE, MRC_SIZE } from "../generated/headers.js";
import { FRAME_OVERHEAD_BYTES } from "../cluster/endpoint.js";
import { hostLink, type Topology } from "../fabric/topology.js";
import type { TrafficVerb } from "./workload.js";
import { percentiles } from "./counters.js";

/** One link of a path, in the direction travelled. */
export interface Hop {
  /** its line rate, Gb/s */
  gbps: number;
  /** its latency (propagation and PHY), ps */
  latencyPs: number;
}

/** The links from one device to another, the latency of each switch between them, and the devices' own port rate (the first link sends no faster). */
export interface Path {
  /** The links, in the order travelled. */
  hops: Hop[];
  /** Each switch's latency, ps. */
  switchPs: number;
  /** The devices' port rate, Gb/s: the first link sends no faster. */
  portGbps: number;
}

/**
 * The path from device `src` to device `dst` over `topo` (their port 0's links: every host link
 * is alike, and so is every fabric link): one switch on a single switch or under one leaf, else
 * leaf, spine and leaf. `portGbps`: the devices' own port rate, which may be below the link's.
 */
export function pathBetween(topo: Topology, src: number, dst: number, switchPs: number, portGbps: number): Path {
  const a = topo.links[hostLink(topo, src, 0)]!, b = topo.links[hostLink(topo, dst, 0)]!;
  const hop = (l: { gbps: number; latencyPs: number }): Hop => ({ gbps: l.gbps, latencyPs: l.latencyPs });
  if (a.bSwitch === b.bSwitch) return { hops: [hop(a), hop(b)], switchPs, portGbps };
  const up = topo.links.find((l) => l.tier === "fabric")!;
  return { hops: [hop(a), hop(up), hop(up), hop(b)], switchPs, portGbps };
}

/** The same links the other way. */
const reverse = (p: Path): Path => ({ ...p, hops: [...p.hops].reverse() });

const serialisePs = (bytes: number, gbps: number) => Math.ceil(((bytes + FRAME_OVERHEAD_BYTES) * 8000) / gbps);

/**
 * When the last of `frames` (wire bytes each, all ready at time 0 at the first link) has
 * arrived over `path`, store and forward: each link sends one frame at a time, in order.
 */
export function transferPs(frames: readonly number[], path: Path): number {
  const H = path.hops.length;
  const free = new Float64Array(H); // when each link's transmitter is next free
  let arrival = 0;
  for (const f of frames) {
    let t = 0;
    for (let h = 0; h < H; h++) {
      const hop = path.hops[h]!;
      t = Math.max(t, free[h]!) + serialisePs(f, h === 0 ? Math.min(hop.gbps, path.portGbps) : hop.gbps);
      free[h] = t;
      t += hop.latencyPs + (h < H - 1 ? path.switchPs : 0);
    }
    arrival = t;
  }
  return arrival;
}

/** What the ideal of a transport's messages depends on: the transport, the MTU, and the ports a flow is spread over (the MetaRoCE-like transport sprays a QP over its group; RoCEv2 sends it on one port). */
export interface IdealOf {
  /** Which headers frames carry. */
  transport: "rocev2" | "metaroce";
  /** Payload bytes per packet (the devices' mtuBytes). */
  mtuBytes: number;
  /** Ports one flow's packets spread over: 1 on RoCEv2, its group's on the MetaRoCE-like transport. */
  sprayPorts: number;
}

/** Payload bytes of each packet of a `bytes` message: full MTUs, the rest last (a message of 0 bytes is one empty packet). */
function payloads(bytes: number, mtu: number): number[] {
  const n = Math.max(1, Math.ceil(bytes / mtu));
  return Array.from({ length: n }, (_, k) => (k < n - 1 ? mtu : bytes - (n - 1) * mtu));
}

const pad4 = (n: number) => (n + 3) & ~3;

/** The data frames of a message (the request's, or a READ's responses) in wire bytes, as the transport builds them. */
function dataFrames(verb: TrafficVerb | "READ_RESPONSE", bytes: number, o: IdealOf): number[] {
  const p = payloads(bytes, o.mtuBytes), n = p.length;
  if (o.transport === "metaroce") return p.map((x) => UDP_IPV4_BYTES + MRH_SIZE + x + MRC_SIZE);
  // RoCEv2 (IBA vol. 1 ch. 9): a WRITE's first packet carries a RETH, a WRITE_WITH_IMM's last an
  // ImmDt, a READ response's first and last an AETH; the payload is padded to 4 bytes
  return p.map((x, k) => {
    let ext = 0;
    if ((verb === "WRITE" || verb === "WRITE_WITH_IMM") && k === 0) ext += RETH_SIZE;
    if (verb === "WRITE_WITH_IMM" && k === n - 1) ext += IMM_DT_SIZE;
    if (verb === "READ_RESPONSE" && (k === 0 || k === n - 1)) ext += AETH_SIZE;
    return UDP_IPV4_BYTES + BTH_SIZE + ext + pad4(x) + ICRC_SIZE;
  });
}

/**
 * The frames of a message spread over `ports` ports: what the busiest port carries at least,
 * ⌈n / ports⌉ of them; the last ones (full MTUs and the short last: no larger than any other),
 * so that any spread takes at least as long.
 */
function busiestPort(frames: number[], ports: number): number[] {
  return ports <= 1 ? frames : frames.slice(frames.length - Math.ceil(frames.length / ports));
}

/**
 * The ideal completion time of a `bytes` message of `verb` over `path` (device to device): its
 * data frames there, then the ACK of the last back (WRITE, WRITE_WITH_IMM, SEND); or the READ
 * request there, then its responses back.
 */
export function idealFctPs(bytes: number, verb: TrafficVerb, path: Path, o: IdealOf): number {
  const ack = o.transport === "metaroce" ? UDP_IPV4_BYTES + MRA_SIZE + MRC_SIZE : UDP_IPV4_BYTES + BTH_SIZE + AETH_SIZE + ICRC_SIZE;
  const back = reverse(path);
  if (verb === "READ") {
    const request = o.transport === "metaroce" ? UDP_IPV4_BYTES + MRH_SIZE + MRC_SIZE : UDP_IPV4_BYTES + BTH_SIZE + RETH_SIZE + ICRC_SIZE;
    return transferPs([request], path) + transferPs(busiestPort(dataFrames("READ_RESPONSE", bytes, o), o.sprayPorts), back);
  }
  return transferPs(busiestPort(dataFrames(verb, bytes, o), o.sprayPorts), path) + transferPs([ack], back);
}

/** One size bucket of a slowdown table. */
export interface SlowdownBucket {
  /** Its smallest flow size, bytes. */
  fromBytes: number;
  /** Its largest, bytes (inclusive); null: no bound (the last bucket). */
  toBytes: number | null;
  /** Flows of these sizes that arrived. */
  flows: number;
  /** Of them, those that completed successfully (the percentiles are theirs). */
  completed: number;
  /** Median slowdown; null when none completed. */
  p50: number | null;
  /** 99th percentile slowdown (nearest rank); null when none completed. */
  p99: number | null;
}

/** FCT slowdown by flow size (ScenarioResult.workload.slowdown). */
export interface SlowdownTable {
  /** Every completed flow. */
  all: SlowdownBucket;
  /** By size: each bucket's sizes from the bound before it (exclusive) to its own (inclusive). */
  buckets: SlowdownBucket[];
}

/** The slowdown table of `flows` (each its size and its slowdown, null when it did not complete successfully), cut at `bounds` (bytes, increasing). */
export function slowdownTable(flows: readonly { bytes: number; slowdown: number | null }[], bounds: readonly number[]): SlowdownTable {
  const bucket = (from: number, to: number | null, of: readonly { bytes: number; slowdown: number | null }[]): SlowdownBucket => {
    const s = of.flatMap((f) => (f.slowdown === null ? [] : [f.slowdown])).sort((a, b) => a - b);
    const p = percentiles(s);
    return { fromBytes: from, toBytes: to, flows: of.length, completed: s.length, p50: s.length ? p.p50 : null, p99: s.length ? p.p99 : null };
  };
  const edges = [0, ...bounds];
  const buckets = edges.map((lo, i) => {
    const hi = i < bounds.length ? bounds[i]! : null;
    return bucket(lo + 1, hi, flows.filter((f) => f.bytes > lo && (hi === null || f.bytes <= hi)));
  });
  return { all: bucket(1, null, flows), buckets };
}
