// The MetaRoCE-like transport's loss timers, how long each waits (docs/protocol.md, "Timers"):
// a path's RTT estimate, its RTO with the backoff, the tail-probe time, and how often a failed
// path is probed.

import { Device } from "../core/device";
import { Path } from "./state";

/** The longest RTO (1 s, as far as RFC 6298's backoff reaches). */
const RTO_MAX: u64 = 1000000000000;

/** RTT sample `rtt` (ps) of path `p` (RFC 6298: SRTT, RTTVAR, RTO). */
export function rttSample(dev: Device, p: Path, rtt: f64): void {
  if (p.srtt == 0) { p.srtt = rtt; p.rttvar = rtt / 2; }
  else {
    const err = rtt > p.srtt ? rtt - p.srtt : p.srtt - rtt;
    p.rttvar = 0.75 * p.rttvar + 0.25 * err;
    p.srtt = 0.875 * p.srtt + 0.125 * rtt;
  }
  const rto = <u64>(p.srtt + 4 * p.rttvar);
  p.rto = rto > dev.cfg.mrtRtoMinPs ? rto : dev.cfg.mrtRtoMinPs;
}

/** How long path `p` may stay silent with packets out before its RTO. */
export function rtoWait(dev: Device, p: Path): u64 {
  return p.rto;
}

/** Path `p`'s RTO expired: it backs off (doubles), to at most 1 s. */
export function rtoBackoff(dev: Device, p: Path): void {
  p.rto = p.rto * 2 > RTO_MAX ? RTO_MAX : p.rto * 2;
}

/** How long a path with packets out stays silent before its tail probe: 2 x SRTT, at least mrtProbeMinPs; half the smallest RTO before the first RTT sample. */
export function probeWait(dev: Device, p: Path): u64 {
  if (p.srtt == 0) return dev.cfg.mrtRtoMinPs / 2;
  const d = <u64>(2.0 * p.srtt);
  return d > dev.cfg.mrtProbeMinPs ? d : dev.cfg.mrtProbeMinPs;
}

/** A failed path is probed every RTO, at most every 4 x mrtRtoMinPs (its backed-off RTO would find a recovery late). */
export function failedProbeEvery(dev: Device, p: Path): u64 {
  const most = 4 * dev.cfg.mrtRtoMinPs;
  return p.rto < most ? p.rto : most;
}
