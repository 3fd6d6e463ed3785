// Device counters summed over a cluster's devices: what a scenario's results report
// (retransmissions, timeouts, drops by reason, ...). It reads only the counters asked for
// (Device.statValues), not every counter of every device as objects (Device.stats).

import type { Device } from "../device.js";

/** Each of `names` (layouts/stats.json) summed over `devices` in their order, by name; an unknown name is a RangeError. */
export function sumStats<K extends string>(devices: readonly Device[], names: readonly K[]): Record<K, number> {
  const sums = new Array<number>(names.length).fill(0);
  for (const d of devices) d.statValues(names).forEach((v, i) => (sums[i]! += v));
  return Object.fromEntries(names.map((name, i) => [name, sums[i]!])) as Record<K, number>;
}
