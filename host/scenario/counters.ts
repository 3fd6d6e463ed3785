// Device counters summed over a cluster's devices: what a scenario's results report
// (retransmissions, timeouts, drops by reason, ...). It reads only the counters asked for
// (Device.statValues), not every counter of every device as objects (Device.stats).

import type { Device } from "../device.js";

/** A distribution's median, 99th percentile and maximum. */
export interface Percentiles {
  /** The median. */
  p50: number;
  /** The 99th percentile. */
  p99: number;
  /** The largest. */
  max: number;
}

/** Counters of frames a device dropped, by reason (layouts/stats.json names; rx_stage_full: arrivals the host could not stage in a window). */
export const DEVICE_DROP_COUNTERS = ["port.tx_ring_full", "port.rx_ring_full", "roce.rx_malformed", "roce.rx_bad_icrc", "roce.rx_not_mine", "roce.rx_unknown_qp", "roce.rx_out_of_order", "roce.rx_duplicate",
  "mrt.rx_malformed", "mrt.rx_bad_crc", "mrt.rx_unknown", "mrt.rx_beyond_window"] as const;
/** The MetaRoCE-like counters a result reports: why packets were sent again, what the paths went through. */
export const METAROCE_COUNTERS = [
  "mrt.tx_data", "mrt.tx_retransmits", "mrt.losses_sack", "mrt.losses_rto", "mrt.tx_probes", "mrt.tx_requests", "mrt.rtos", "mrt.rto_waits", "mrt.paths_failed",
  "mrt.paths_recovered", "mrt.cwnd_cuts", "mrt.rx_duplicate", "mrt.rnr_naks",
] as const;
/** The MetaRoCE-like transport's counters, summed over the devices, by their names without `mrt.` (layouts/stats.json). */
export type MetaroceCounts = Record<(typeof METAROCE_COUNTERS)[number] extends `mrt.${infer K}` ? K : never, number>;

/** The counters both transports keep of what the network did to them (transportSums adds each pair). */
export const TRANSPORT_COUNTERS = ["roce.retransmits", "mrt.tx_retransmits", "roce.timeouts", "mrt.rtos", "roce.naks_sent", "mrt.naks_sent", "roce.cnps_sent", "port.rx_late"] as const;

/** The counters of why packets were sent again, on both transports (retransmitCauses adds them up by cause). */
export const RETRANSMIT_COUNTERS = ["roce.retransmits_nak", "roce.retransmits_read_gap", "roce.retransmits_timeout", "roce.retransmits_rnr", "roce.rx_duplicate",
  "mrt.losses_sack", "mrt.losses_rto", "mrt.losses_resync", "mrt.rnr_naks", "mrt.tx_probes", "mrt.rx_duplicate"] as const;

/**
 * Why packets were sent again, and how many arrived twice. RoCEv2 counts go-back-N restarts
 * (each sends again from a PSN: roce.retransmits is their sum); the MetaRoCE-like transport
 * counts PSNs declared lost (each of their packets is sent again) and probes.
 */
export interface RetransmitCauses {
  /** a loss the transport detected: RoCEv2 sequence NAKs and gaps in READ responses; MetaRoCE-like SACK holes */
  lossDetected: number;
  /** RoCEv2 transport timer expiries; MetaRoCE-like PSNs declared lost by a path's RTO */
  timeout: number;
  /** RNR NAKs: a message sent again because the receiver had no receive posted (no loss at all) */
  rnr: number;
  /** MetaRoCE-like PSNs declared lost when their path resynchronised past an ACK covering what was never sent (0 on RoCEv2) */
  resync: number;
  /** MetaRoCE-like probes: a tail probe sends a packet again under a new PSN, a failed path's probe carries none (0 on RoCEv2) */
  probes: number;
  /** packets a receiver got twice (RoCEv2 duplicate requests, MetaRoCE-like copies of an SSN placed before): the retransmissions that were not needed, or whose ACK was lost */
  duplicatesAtReceiver: number;
}

/** RetransmitCauses from sums of RETRANSMIT_COUNTERS. */
export function retransmitCauses(sum: Record<(typeof RETRANSMIT_COUNTERS)[number], number>): RetransmitCauses {
  return {
    lossDetected: sum["roce.retransmits_nak"] + sum["roce.retransmits_read_gap"] + sum["mrt.losses_sack"],
    timeout: sum["roce.retransmits_timeout"] + sum["mrt.losses_rto"], rnr: sum["roce.retransmits_rnr"] + sum["mrt.rnr_naks"],
    resync: sum["mrt.losses_resync"], probes: sum["mrt.tx_probes"], duplicatesAtReceiver: sum["roce.rx_duplicate"] + sum["mrt.rx_duplicate"],
  };
}

/** What every result reports of the transports and the devices' clocks: TransportSums of TRANSPORT_COUNTERS. */
export type TransportSums = { retransmits: number; timeouts: number; naksSent: number; cnpsSent: number; lateArrivals: number };

/** Retransmissions, timeouts, NAKs and CNPs over both transports, and late arrivals, from sums of TRANSPORT_COUNTERS. */
export function transportSums(sum: Record<(typeof TRANSPORT_COUNTERS)[number], number>): TransportSums {
  return {
    retransmits: sum["roce.retransmits"] + sum["mrt.tx_retransmits"], timeouts: sum["roce.timeouts"] + sum["mrt.rtos"],
    naksSent: sum["roce.naks_sent"] + sum["mrt.naks_sent"], cnpsSent: sum["roce.cnps_sent"], lateArrivals: sum["port.rx_late"],
  };
}

/** The line a result prints when frames reached a device in its past (a causality break: docs/fabric.md, "Windows"), or null. */
export function lateWarning(lateArrivals: number): string | null {
  return lateArrivals === 0 ? null : `WARNING: ${lateArrivals} frame${lateArrivals === 1 ? "" : "s"} reached a device after its clock had passed their arrival (port.rx_late): a causality break, the results may depend on the runner's window; please report it`;
}

/** What every result reports of its devices' counters: the transport sums, the frames dropped by reason, and the MetaRoCE-like transport's own counters when it ran. */
export interface DeviceCounts extends TransportSums {
  retransmitCauses: RetransmitCauses;
  deviceDrops: Record<string, number>;
  metaroce?: MetaroceCounts;
}

/**
 * The counters of `devices` as a result reports them ({@link DeviceCounts}): the drops by reason
 * with `stageDrops` (arrivals the runner could not stage) as rx_stage_full, and with `metaroce`
 * the MetaRoCE-like transport's counters by their names without `mrt.`.
 */
export function deviceCounts(devices: readonly Device[], stageDrops: number, metaroce: boolean): DeviceCounts {
  return deviceCountsOf(sumStats(devices, countedStats(metaroce)), stageDrops, metaroce);
}

/** The counters {@link DeviceCounts} is made of (layouts/stats.json names), once each. */
export function countedStats(metaroce: boolean): CountedStat[] {
  return [...new Set([...DEVICE_DROP_COUNTERS, ...TRANSPORT_COUNTERS, ...RETRANSMIT_COUNTERS, ...(metaroce ? METAROCE_COUNTERS : [])])];
}

/** A counter {@link DeviceCounts} is made of. */
export type CountedStat = (typeof DEVICE_DROP_COUNTERS | typeof TRANSPORT_COUNTERS | typeof RETRANSMIT_COUNTERS | typeof METAROCE_COUNTERS)[number];

/** {@link deviceCounts} from the sums of countedStats(metaroce) (a run split over threads adds up each thread's). */
export function deviceCountsOf(sum: Record<CountedStat, number>, stageDrops: number, metaroce: boolean): DeviceCounts {
  const deviceDrops: Record<string, number> = Object.fromEntries(DEVICE_DROP_COUNTERS.map((k) => [k, sum[k]]));
  deviceDrops.rx_stage_full = stageDrops;
  return {
    ...transportSums(sum), retransmitCauses: retransmitCauses(sum), deviceDrops,
    ...(metaroce ? { metaroce: Object.fromEntries(METAROCE_COUNTERS.map((k) => [k.slice(4), sum[k]])) as MetaroceCounts } : {}),
  };
}

/** Each of `names` (layouts/stats.json) summed over `devices` in their order, by name; an unknown name is a RangeError. */
export function sumStats<K extends string>(devices: readonly Device[], names: readonly K[]): Record<K, number> {
  const sums = new Array<number>(names.length).fill(0);
  for (const d of devices) d.statValues(names).forEach((v, i) => (sums[i]! += v));
  return Object.fromEntries(names.map((name, i) => [name, sums[i]!])) as Record<K, number>;
}

/** The 50th and 99th percentiles (nearest rank) and the maximum of `sorted` (ascending); 0 each when it is empty. */
export function percentiles(sorted: readonly number[]): Percentiles {
  const pct = (p: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!);
  return { p50: pct(50), p99: pct(99), max: sorted.length ? sorted[sorted.length - 1]! : 0 };
}
