// The MetaRoCE-like transport's congestion control, per path (docs/protocol.md, "Congestion
// control"): the interface the sender calls — a path starts, an ACK comes, an RTO expires, the
// rate it may send at — and the controller behind it, which the config field mrtCc chooses:
// dctcp.ts (MRT_CC_DCTCP, the default) or nscc.ts (MRT_CC_NSCC). Another is a file with the same
// three functions and a value of mrtCc, called from here.
//
// Every controller paces a path at min(cwnd / RTT, the receiver's hint for it); the RTT is the
// controller's (DCTCP: its smallest RTT plus the receiver's ACK delay, the smoothed RTT before a
// sample; NSCC: the RTT its window is sized for). A connection's first hint, its grant, gives its
// paths the hint's bandwidth-delay product (ccGranted); when the hint rises, the window grows to
// the new hint's at once (ccHintRose).

import { Device } from "../core/device";
import { Path } from "./state";
import { dctcpInit, dctcpOnAck, dctcpOnRto, dctcpPaceRtt } from "./dctcp";
import { nsccInit, nsccOnAck, nsccOnRto, nsccPaceRtt } from "./nscc";

/** Values of the config field mrtCc. */
export const MRT_CC_DCTCP: u32 = 0;
export const MRT_CC_NSCC: u32 = 1;

/** A path starts (at its first packet, or back from failure): its window and the controller's state. */
export function ccInit(dev: Device, p: Path): void {
  p.baseRtt = 0;
  if (dev.cfg.mrtCc == MRT_CC_NSCC) nsccInit(dev, p);
  else dctcpInit(dev, p);
}

/** An ACK of path `p` newly covered `pkts` packets of `bytes` bytes, `ce` of them marked; `rtt` the RTT of the newest PSN it covered (ps; < 0: none). */
export function ccOnAck(dev: Device, p: Path, pkts: u32, bytes: u32, ce: u32, rtt: f64): void {
  if (rtt >= 0 && (p.baseRtt == 0 || rtt < p.baseRtt)) p.baseRtt = rtt;
  if (dev.cfg.mrtCc == MRT_CC_NSCC) nsccOnAck(dev, p, pkts, bytes, ce, rtt);
  else dctcpOnAck(dev, p, pkts, bytes, ce);
}

/** The path's RTO expired. */
export function ccOnRto(dev: Device, p: Path): void {
  if (dev.cfg.mrtCc == MRT_CC_NSCC) nsccOnRto(dev, p);
  else dctcpOnRto(dev, p);
}

/** Bytes per ps the path may send at (0: not paced), from its window, RTT and the receiver's hint. */
export function ccPaceRate(dev: Device, p: Path): f64 {
  let r: f64 = 0;
  const rtt = dev.cfg.mrtCc == MRT_CC_NSCC ? nsccPaceRtt(dev, p) : dctcpPaceRtt(dev, p);
  if (rtt > 0) r = p.cwnd / rtt;
  if (p.hintGbps > 0) {
    const h = p.hintGbps / 8000;
    if (r == 0 || h < r) r = h;
  }
  return r;
}

/**
 * Path `p`'s connection heard the receiver's hint for the first time (the answer to its request):
 * the path, sending or not yet, may have what the hint keeps in flight with no queue (over `rtt`,
 * the connection's smallest RTT, and the receiver's ACK delay), and its slow start is over: the
 * receiver has said its rate, the sender does not hunt for it (the seeds).
 */
export function ccGranted(dev: Device, p: Path, rtt: f64): void {
  p.slowStart = 0;
  if (rtt <= 0 || p.hintGbps <= 0) return;
  growToHint(dev, p, rtt);
}

/**
 * The receiver raised path `p`'s hint from `before` (an ACK without marks): its window grows at
 * once to what the new hint keeps in flight with no queue, over the path's smallest RTT and the
 * receiver's ACK delay. The receiver's share is what its port can take, so a path it gives more
 * gets there in one round trip (the seeds: senders do not hunt for their share) instead of one
 * MTU a round trip from a window that marks cut while the path was paced below it; marks cut it
 * again as ever. Not at the first hint: that one grants (ccGranted).
 */
export function ccHintRose(dev: Device, p: Path, before: f64): void {
  if (before <= 0 || p.hintGbps <= before || p.baseRtt <= 0) return;
  growToHint(dev, p, p.baseRtt);
}

/** Path `p`'s window grows, never shrinks, to what its hint keeps in flight over `rtt` and the receiver's ACK delay. */
function growToHint(dev: Device, p: Path, rtt: f64): void {
  const w = p.hintGbps / 8000 * (rtt + <f64>dev.cfg.mrtAckDelayPs);
  if (w > p.cwnd) p.cwnd = w;
}
