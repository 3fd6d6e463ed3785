// The MetaRoCE-like transport's loss timers, how long each waits (docs/protocol.md, "Timers"):
// the RTT estimates — each path's own, and its connection's over every path, which a path that
// has no sample of its own yet starts from — the RTO with its backoff, the tail-probe time, and
// the drain bound both wait for: a path's bytes in flight cannot all come back sooner than the
// receiver's rate hint lets them through its port.

import { Device } from "../core/device";
import { Conn, Path } from "./state";

/** The longest any of these timers waits (1 s, as RFC 6298's largest RTO reaches). */
const RTO_MAX: u64 = 1000000000000;

/** RTT sample `rtt` (ps) of path `p` of connection `k` (RFC 6298: SRTT, RTTVAR, RTO), for the path and for the connection. */
export function rttSample(dev: Device, k: Conn, p: Path, rtt: f64): void {
  if (rtt < 1) rtt = 1; // a sample of 0 would read as none
  if (p.srtt == 0) { p.srtt = rtt; p.rttvar = rtt / 2; k.sampled++; }
  else {
    p.rttvar = 0.75 * p.rttvar + 0.25 * Math.abs(rtt - p.srtt);
    p.srtt = 0.875 * p.srtt + 0.125 * rtt;
  }
  p.rto = rtoOfEstimate(dev, p.srtt, p.rttvar);
  if (k.srtt == 0) { k.srtt = rtt; k.rttvar = rtt / 2; }
  else {
    k.rttvar = 0.75 * k.rttvar + 0.25 * Math.abs(rtt - k.srtt);
    k.srtt = 0.875 * k.srtt + 0.125 * rtt;
  }
}

@inline function rtoOfEstimate(dev: Device, srtt: f64, rttvar: f64): u64 {
  const rto = <u64>(srtt + 4 * rttvar);
  return rto > dev.cfg.mrtRtoMinPs ? rto : dev.cfg.mrtRtoMinPs;
}

/**
 * Path `p`'s RTO before the drain bound: its own (backed off) once it has an RTT sample; before
 * that its connection's (the other paths cross the same fabric to the same peer), doubled for
 * each RTO in a row; mrtRtoInitPs (backed off) while the connection has no sample at all.
 */
export function rtoOf(dev: Device, k: Conn, p: Path): u64 {
  if (p.srtt > 0 || k.srtt == 0) return p.rto;
  const base = rtoOfEstimate(dev, k.srtt, k.rttvar);
  const n = p.rtos < 40 ? p.rtos : 40;
  const r = base << <u64>n;
  return r > RTO_MAX || (r >> <u64>n) != base ? RTO_MAX : r;
}

/**
 * The time path `p`'s bytes in flight take to pass the receiver at its rate hint for the path
 * (its own, or before its first ACK the connection's latest); at most mrtRtoInitPs, 0 with no hint.
 * Behind a deep queue (an incast's first flight) a path's ACKs come this far apart though nothing
 * is lost, far more than its RTT samples from before the queue built say.
 */
export function drainOf(dev: Device, k: Conn, p: Path): u64 {
  const hint = p.hintGbps > 0 ? p.hintGbps : k.hintGbps;
  if (hint <= 0 || p.inflight == 0) return 0;
  const d = <u64>Math.ceil(<f64>p.inflight * 8000 / hint);
  return d < dev.cfg.mrtRtoInitPs ? d : dev.cfg.mrtRtoInitPs;
}

/**
 * How long path `p` may stay silent with packets out before its RTO: its RTO, or the drain bound
 * and then its RTO if the bound is longer (the tail probe waits for the bound: its answer must
 * have the time an RTO gives it, or behind a deep queue the RTO would always come first).
 */
export function rtoWait(dev: Device, k: Conn, p: Path): u64 {
  const r = rtoOf(dev, k, p), d = drainOf(dev, k, p);
  return r > d ? r : d + r;
}

/** Path `p`'s RTO expired: it backs off (doubles), to at most 1 s. */
export function rtoBackoff(dev: Device, k: Conn, p: Path): void {
  const r = rtoOf(dev, k, p);
  p.rto = r * 2 > RTO_MAX ? RTO_MAX : r * 2;
}

/**
 * How long a path with packets out stays silent before its tail probe: 2 x SRTT (its own, else
 * its connection's), at least mrtProbeMinPs and the drain bound; half the smallest RTO while the
 * connection has no RTT sample.
 */
export function probeWait(dev: Device, k: Conn, p: Path): u64 {
  const srtt = p.srtt > 0 ? p.srtt : k.srtt;
  if (srtt == 0) return dev.cfg.mrtRtoMinPs / 2;
  let d = <u64>(2.0 * srtt);
  if (d < dev.cfg.mrtProbeMinPs) d = dev.cfg.mrtProbeMinPs;
  const drain = drainOf(dev, k, p);
  return d > drain ? d : drain;
}

/** How long a tail probe's answer may take: 2 x SRTT (its own, else its connection's). */
export function probeAnswerWait(dev: Device, k: Conn, p: Path): u64 {
  const srtt = p.srtt > 0 ? p.srtt : k.srtt;
  return <u64>(2.0 * srtt);
}

/** A failed path is probed every RTO, at most every 4 x mrtRtoMinPs (its backed-off RTO would find a recovery late). */
export function failedProbeEvery(dev: Device, k: Conn, p: Path): u64 {
  const most = 4 * dev.cfg.mrtRtoMinPs;
  const r = rtoOf(dev, k, p);
  return r < most ? r : most;
}
