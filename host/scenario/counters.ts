// Device counters summed over a cluster's devices: what a scenario's results report
// (retransmissions, timeouts, drops by reason, ...). It reads only the counters asked for
// (Device.statValues), not every counter of every device as objects (Device.stats).

import type { Device } from "../device.js";

/** The counters both transports keep of what the network did to them (transportSums adds each pair). */
export const TRANSPORT_COUNTERS = ["roce.retransmits", "mrt.tx_retransmits", "roce.timeouts", "mrt.rtos", "roce.naks_sent", "mrt.naks_sent", "roce.cnps_sent", "port.rx_late"] as const;

/** What every result reports of the transports and the devices' clocks: TransportSums of TRANSPORT_COUNTERS. */
export interface TransportSums { retransmits: number; timeouts: number; naksSent: number; cnpsSent: number; lateArrivals: number }

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

/** Each of `names` (layouts/stats.json) summed over `devices` in their order, by name; an unknown name is a RangeError. */
export function sumStats<K extends string>(devices: readonly Device[], names: readonly K[]): Record<K, number> {
  const sums = new Array<number>(names.length).fill(0);
  for (const d of devices) d.statValues(names).forEach((v, i) => (sums[i]! += v));
  return Object.fromEntries(names.map((name, i) => [name, sums[i]!])) as Record<K, number>;
}
