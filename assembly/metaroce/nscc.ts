// The MetaRoCE-like transport's second congestion controller, per path: NSCC-like (after Ultra
// Ethernet's Network Signal-based Congestion Control). It reads two signals on every ACK — the
// CE marks it carries and the queueing delay of its newest RTT sample (that sample less the
// smallest the path has seen, its base RTT) — and acts by the quadrant they fall in, with
// mrtNsccTargetDelayPs the delay it aims for:
//   no mark, delay below the target: increase in proportion to how far below (the queue has room),
//     and once a whole window went by with no mark and the delay below half the target, fast: by
//     what was acknowledged (doubling per round trip, as slow start does);
//   no mark, delay above: fair increase, one MTU per window (the queue is not ours to drain);
//   marked, delay above: multiplicative decrease to the window that would hold the queue at the
//     target, cwnd x (base RTT + target) / RTT, at most once per round trip (if every path
//     sharing the queue does so, what is in flight falls to the pipe plus the target's queue);
//   marked, delay below: nothing (the queue that marked it has drained, or is not on its way).
// Unlike DCTCP's alpha, which follows the fraction of marks over windows (g = 1/16) and cuts at
// most half a window per round trip, the delay says at once how much queue there is: a queue far
// above the target is cut to it in one round trip.
// Loss without a mark costs no window; an RTO brings the window down to the initial share.
// cc.ts is the interface that calls it.

import { Device, statAdd } from "../core/device";
import { Path, pdiff, initialWindow } from "./state";
import { STAT_MRT_CWND_CUTS } from "../generated/layouts";

/** The proportional increase: 1 + this many MTUs per window at zero delay, one at the target. */
const PROPORTIONAL_GAIN: f64 = 4;

/** A path starts (at its first packet, or back from failure) with its share of its port's initial window. */
export function nsccInit(dev: Device, p: Path): void {
  p.cwnd = initialWindow(dev, p);
  p.cleanBytes = 0;
  p.cutArmed = 0;
}

/** An ACK of path `p` newly covered `pkts` packets of `bytes` bytes, `ce` of them marked; `rtt` its newest RTT sample (ps; < 0: none). */
export function nsccOnAck(dev: Device, p: Path, pkts: u32, bytes: u32, ce: u32, rtt: f64): void {
  const mtu = <f64>dev.cfg.mtuBytes;
  if (p.cutArmed && pdiff(p.una, p.cutEnd) >= 0) p.cutArmed = 0;
  if (pkts == 0 && ce == 0) return;
  const target = <f64>dev.cfg.mrtNsccTargetDelayPs;
  // no sample (the ACK covered only what an older one did): the delay is taken as at the target
  const delay = rtt >= 0 ? rtt - p.baseRtt : target;
  // (a cut needs a sample: with none, delay is the target and `high` false)
  const high = delay > target;
  if (ce == 0 && !high) {
    if (delay < target / 2) p.cleanBytes += <f64>bytes; else p.cleanBytes = 0;
    if (p.cleanBytes >= p.cwnd) p.cwnd += <f64>bytes; // a whole window with no sign of congestion: fast increase
    else p.cwnd += mtu * <f64>bytes / p.cwnd * (1 + PROPORTIONAL_GAIN * (target - delay) / target);
  } else if (ce == 0) {
    p.cleanBytes = 0;
    p.cwnd += mtu * <f64>bytes / p.cwnd;
  } else if (high) {
    p.cleanBytes = 0;
    if (!p.cutArmed) {
      p.cwnd = p.cwnd * (p.baseRtt + target) / (p.baseRtt + delay);
      if (p.cwnd < mtu) p.cwnd = mtu;
      p.cutArmed = 1;
      p.cutEnd = p.nxt;
      statAdd(dev, STAT_MRT_CWND_CUTS, 1);
    }
  } else p.cleanBytes = 0;
  const cap = initialWindow(dev, p) * 16;
  if (p.cwnd > cap) p.cwnd = cap;
}

/**
 * The RTT a path's window is paced over (ps; 0: no sample yet): base RTT + target, what the
 * window is sized for. Not the smoothed RTT: after a cut for a long queue, that one stays long
 * for several round trips and would pace the cut window far below what the port can take.
 */
export function nsccPaceRtt(dev: Device, p: Path): f64 {
  return p.baseRtt > 0 ? p.baseRtt + <f64>dev.cfg.mrtNsccTargetDelayPs : 0;
}

/** The path's RTO expired: its window comes down to the initial share (if it was above). */
export function nsccOnRto(dev: Device, p: Path): void {
  const init = initialWindow(dev, p);
  if (p.cwnd > init) p.cwnd = init;
  p.cleanBytes = 0;
}
