// The split of the NIC's ports into the scale-up group (ports 0 .. scaleUpPorts - 1) and the
// scale-out group (the rest), and changing it at run time (seed 000: the 12 ports are split in
// software, and re-split between collectives). The split starts as the config's scaleUpPorts and
// lives in the NIC's state (Nic.scaleUpPorts), so save/restore keeps it.
//
// A QP connected to another device is bound to a group, not a port: it sends on port
// first + lane mod count of its group, the lane given at RTR (the same at both ends of a pair; a
// collective gives its queue pairs lanes that cover the group) or, with none, first +
// (qpn + destQpn) mod count, which both ends of a pair compute alike; a
// MetaRoCE-like connection spreads its paths over the group's ports (metaroce/spread.ts). A
// re-split moves every such QP and connection to the ports its group has now. It is allowed only
// while every one of them is quiescent — no send work posted, executing or unacknowledged, no
// message half received, no answer owed, no packet of a connection in flight or owed an ACK —
// and refused otherwise (CMD_ERR_IN_USE), naming the first that is not (portSplitBlocker): a
// packet in flight on a port that leaves the group would come back to a path that is no longer
// there. A host drains first (runs the devices until portSplitBlocker says NONE), then re-splits
// every device of the communicator at the same time, so the two ends of each pair agree.

import { Device } from "../core/device";
import { nicOf } from "./state";
import { groupFirst, groupCount } from "./ports";
import { Qp, qpAt } from "./verbs";
import { dbqSendPendingFor } from "./doorbells";
import { transportAnswering, transportQueued, transportMoved, transportBusyConnection, transportConnectionPeer, transportRespread } from "./transport";
import {
  PORT_SPLIT_BLOCK_SEND, PORT_SPLIT_BLOCK_ANSWER, PORT_SPLIT_BLOCK_PATHS,
  PORT_SPLIT_BLOCK_EMPTY_GROUP, CMD_ERR_IN_USE, CMD_ERR_ARGUMENT, QP_STATE_RTR, QP_STATE_RTS, PORT_LANE_AUTO,
} from "../generated/layouts";

/** Ports 0 .. portSplit(dev) - 1 are the scale-up group now. */
@inline export function portSplit(dev: Device): u32 {
  return nicOf(dev).scaleUpPorts;
}

/**
 * The port QP `qpn`, connected to QP `destQpn` with port lane `lane`, sends on in its group: port
 * `lane` of the group (modulo its size) when the lane is set, else one from the two QP numbers.
 * Both ends of a pair compute the same (they are given the same lane), so a pair stays on one
 * port index, and so on one plane.
 */
@inline export function qpPortIn(qpn: u32, destQpn: u32, lane: u32, first: u32, count: u32): u32 {
  return first + (lane != PORT_LANE_AUTO ? lane : qpn + destQpn) % count;
}

/**
 * What stops the split from becoming `up` scale-up ports now: 0 when nothing does, else
 * PORT_SPLIT_BLOCK_* << 56 | the peer device << 32 | the QP number (SEND, ANSWER, EMPTY_GROUP)
 * or the connection's index (PATHS). A group left without ports is reported before work in
 * flight: waiting would not cure it.
 */
export function portSplitBlocker(dev: Device, up: u32): u64 {
  if (up == portSplit(dev)) return 0; // nothing would move
  for (let qpn: u32 = 0; qpn < dev.cfg.maxQps; qpn++) {
    const q = qpAt(dev, qpn);
    if (connected(q) && groupCount(q.group, up, dev.cfg.ports) == 0) return blocked(PORT_SPLIT_BLOCK_EMPTY_GROUP, q.destDevice, qpn);
  }
  for (let qpn: u32 = 0; qpn < dev.cfg.maxQps; qpn++) {
    const q = qpAt(dev, qpn);
    if (!connected(q)) continue;
    if (sendBusy(dev, q, qpn)) return blocked(PORT_SPLIT_BLOCK_SEND, q.destDevice, qpn);
    if (transportAnswering(dev, q)) return blocked(PORT_SPLIT_BLOCK_ANSWER, q.destDevice, qpn);
  }
  const c = transportBusyConnection(dev);
  if (c >= 0) return blocked(PORT_SPLIT_BLOCK_PATHS, transportConnectionPeer(dev, <u32>c), <u32>c);
  return 0;
}

/** Is QP `q` connected to another device and able to send (RTR or RTS)? One in RESET or INIT picks its port at its next RTR; one in ERR sends nothing and keeps its port until destroyed. */
@inline function connected(q: Qp): bool {
  return q.valid != 0 && q.remote != 0 && (q.state == QP_STATE_RTR || q.state == QP_STATE_RTS);
}

@inline function blocked(why: u32, peer: u32, id: u32): u64 {
  return (<u64>why << 56) | (<u64>(peer & 0xffffff) << 32) | <u64>id;
}

/** Has QP `qpn` send work: a doorbell on its way, entries the NIC knows of and has not completed, messages unacknowledged or being sent again, packets queued? */
function sendBusy(dev: Device, q: Qp, qpn: u32): bool {
  return q.busy != 0 || q.announced != q.sqCi || q.outCount != 0 || q.rtxActive != 0 || transportQueued(dev, q) || dbqSendPendingFor(dev, qpn);
}

/**
 * Re-splits the ports: `up` scale-up, the rest scale-out. CMD_ERR_ARGUMENT when `up` exceeds
 * the ports, CMD_ERR_IN_USE when something is not quiescent (portSplitBlocker says what), else 0
 * (at once when the split is `up` already): every connected QP sends on its group's new port
 * from now on, with DCQCN back at line rate when the port changed (its rate was the old
 * path's), and every MetaRoCE-like connection's paths are spread over its
 * group's new ports (a group left without ports parks its idle connections).
 */
export function portSplitSet(dev: Device, up: u32): i32 {
  if (up > dev.cfg.ports) return CMD_ERR_ARGUMENT;
  if (up == portSplit(dev)) return 0;
  if (portSplitBlocker(dev, up) != 0) return CMD_ERR_IN_USE;
  nicOf(dev).scaleUpPorts = up;
  for (let qpn: u32 = 0; qpn < dev.cfg.maxQps; qpn++) {
    const q = qpAt(dev, qpn);
    if (!connected(q)) continue;
    const port = qpPortIn(qpn, q.destQpn, q.lane, groupFirst(q.group, up), groupCount(q.group, up, dev.cfg.ports));
    if (port == q.port) continue; // the same path: its rate stays
    transportMoved(dev, q, qpn);
    q.port = port;
  }
  transportRespread(dev, up);
  return 0;
}
