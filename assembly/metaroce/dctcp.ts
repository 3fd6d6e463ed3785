// The MetaRoCE-like transport's first congestion controller, per path (docs/protocol.md,
// "Congestion control"): DCTCP-style ECN-driven AIMD, after a slow start that ends at the first
// CE mark. alpha follows the fraction of CE-marked packets once per window of data (g = 1/16); a
// mark cuts the window to cwnd x (1 - alpha/2) at most once per round trip; otherwise the window
// grows by one MTU per window acknowledged. Loss without a mark is not congestion and costs no
// window. It paces its window over the path's smallest RTT. cc.ts is the interface that calls it.

import { Device, statAdd } from "../core/device";
import { Path, pdiff, initialWindow } from "./state";
import { STAT_MRT_CWND_CUTS } from "../generated/layouts";

const G: f64 = 1.0 / 16;

/** A path starts (at its first packet, or back from failure) with its share of its port's initial window. */
export function dctcpInit(dev: Device, p: Path): void {
  p.cwnd = initialWindow(dev, p);
  p.slowStart = 1;
  p.alpha = 0;
  p.ceAcked = 0;
  p.pktsAcked = 0;
  p.alphaEnd = p.nxt;
  p.cutArmed = 0;
}

/** An ACK of path `p` newly covered `pkts` packets of `bytes` bytes, `ce` of them marked. */
export function dctcpOnAck(dev: Device, p: Path, pkts: u32, bytes: u32, ce: u32): void {
  const mtu = <f64>dev.cfg.mtuBytes;
  p.ceAcked += ce;
  p.pktsAcked += pkts;
  if (p.cutArmed && pdiff(p.una, p.cutEnd) >= 0) p.cutArmed = 0;
  if (pdiff(p.una, p.alphaEnd) >= 0 && p.pktsAcked > 0) {
    // a window of data is in: alpha follows its fraction of marks
    const f = <f64>p.ceAcked / <f64>p.pktsAcked;
    p.alpha = (1 - G) * p.alpha + G * (f > 1 ? 1 : f);
    p.ceAcked = 0;
    p.pktsAcked = 0;
    p.alphaEnd = p.nxt;
  }
  if (ce > 0) p.slowStart = 0;
  if (ce > 0 && !p.cutArmed) {
    // at most one cut per round trip: not again until what is in flight now is acknowledged
    const a = p.alpha > 0 ? p.alpha : <f64>ce / <f64>(pkts > 0 ? pkts : 1);
    p.cwnd = p.cwnd * (1 - a / 2);
    if (p.cwnd < mtu) p.cwnd = mtu;
    p.cutArmed = 1;
    p.cutEnd = p.nxt;
    statAdd(dev, STAT_MRT_CWND_CUTS, 1);
  } else if (ce == 0) {
    // slow start doubles the window each round trip until the first mark; then one MTU a window
    p.cwnd += p.slowStart ? <f64>bytes : mtu * <f64>bytes / p.cwnd;
  }
  const cap = initialWindow(dev, p) * 16;
  if (p.cwnd > cap) p.cwnd = cap;
}

/** The path's RTO expired: its window starts again from the initial size. */
export function dctcpOnRto(dev: Device, p: Path): void {
  const init = initialWindow(dev, p);
  p.cwnd = p.cwnd < init ? p.cwnd : init;
}

/**
 * The RTT the path's window is paced over: its smallest sample plus the receiver's ACK delay, the
 * round trip of a packet that meets no queue; the smoothed RTT before a sample. The window limits
 * what is in flight; a smoothed RTT that still remembers a queue would pace the path far below
 * its window and hint for several round trips.
 */
export function dctcpPaceRtt(dev: Device, p: Path): f64 {
  return p.baseRtt > 0 ? p.baseRtt + <f64>dev.cfg.mrtAckDelayPs : p.srtt;
}
