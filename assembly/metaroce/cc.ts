// The MetaRoCE-like transport's congestion control, per path (docs/protocol.md, "Congestion
// control"): the interface the sender calls — a path starts, an ACK comes, an RTO expires, the
// rate it may send at — and the controller behind it. The controller is dctcp.ts; another is a
// file with the same three functions, called from here.
//
// Every controller paces a path the same way: at min(cwnd / SRTT, the receiver's hint for it).

import { Device } from "../core/device";
import { Path } from "./state";
import { dctcpInit, dctcpOnAck, dctcpOnRto } from "./dctcp";

/** A path starts (at its first packet, or back from failure): its window and the controller's state. */
export function ccInit(dev: Device, p: Path): void {
  dctcpInit(dev, p);
}

/** An ACK of path `p` newly covered `pkts` packets of `bytes` bytes, `ce` of them marked. */
export function ccOnAck(dev: Device, p: Path, pkts: u32, bytes: u32, ce: u32): void {
  dctcpOnAck(dev, p, pkts, bytes, ce);
}

/** The path's RTO expired. */
export function ccOnRto(dev: Device, p: Path): void {
  dctcpOnRto(dev, p);
}

/** Bytes per ps the path may send at (0: not paced), from its window, RTT and the receiver's hint. */
export function ccPaceRate(dev: Device, p: Path): f64 {
  let r: f64 = 0;
  if (p.srtt > 0) r = p.cwnd / p.srtt;
  if (p.hintGbps > 0) {
    const h = p.hintGbps / 8000;
    if (r == 0 || h < r) r = h;
  }
  return r;
}
