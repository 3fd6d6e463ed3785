// How a firmware run advances between two samples of the live view: on the device's
// interleave grid (a multiple of interleaveQuantumPs, so the run equals an uninterrupted one),
// about 1 us at first and twice as long every 256 samples, so a run of a second takes a few
// thousand samples, not a million. Fixed by simulated time alone: the same samples every run,
// in the page's worker and in a Node test alike.

import type { FirmwareSession } from "../host/fw/session.js";
import type { FirmwareSampler, LiveFrame } from "../host/live.js";

export function firmwareSlicePs(quantumPs: bigint, sample: number): bigint {
  const base = quantumPs * ((1_000_000n + quantumPs - 1n) / quantumPs);
  return base << BigInt(Math.min(20, Math.floor(sample / 256)));
}

/** Runs `session` to its end slice by slice, sampling after each; `after` may stop the run by giving true. */
export async function runInSlices(session: FirmwareSession, sampler: FirmwareSampler, after: (frame: LiveFrame | null) => boolean | Promise<boolean>): Promise<void> {
  const quantum = session.device.config.get("interleaveQuantumPs")!;
  for (let k = 0; !session.done; k++) {
    session.runTo(session.nowPs + firmwareSlicePs(quantum, k));
    if (await after(sampler.sample(Number(session.nowPs)))) return;
  }
}
