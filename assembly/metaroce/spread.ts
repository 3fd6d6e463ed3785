// A MetaRoCE-like connection's paths over the ports of its port group (docs/protocol.md,
// "Paths and port groups"): path i leaves on port first + i mod count. Spread when the
// connection is made, and again when the NIC re-splits its ports (nic/port-groups.ts): the paths
// move to the group's new ports and start over there as new paths do (window, RTT, rate hint,
// state), keeping their PSNs, which the receiver's window follows. A re-split happens only with
// the connection quiescent (connQuiet), so nothing is in flight on the ports it leaves.

import { Device } from "../core/device";
import { NEVER } from "../core/time";
import { mrtOf, connAt, pathAt, rxPathAt, portLists, PORT_DATA_COUNT, portPathsAt, pathHdrs, pdiff, PATH_ACTIVE } from "./state";
import { ethIpUdpTemplate } from "../nic/ethernet";
import { MRT_UDP_PORT } from "../generated/headers";
import { ccInit } from "./cc";
import { groupFirst, groupCount } from "../nic/ports";

/** The port of a path whose group has no ports (the connection is parked until a QP opens the group again). */
export const PORT_NONE: u32 = 0xffffffff;

/** UDP source port of path `k`: the ECMP entropy that puts paths on different routes. */
@inline export function pathUdpPort(dev: Device, k: u32): u32 {
  return 0xc000 | ((k & 0xff) << 6) | (dev.cfg.deviceId & 63);
}

/** Is connection `c` quiescent: nothing in flight, to send, to send again or to acknowledge, no probe out? */
export function connQuiet(dev: Device, c: u32): bool {
  const k = connAt(dev, c);
  if (k.rtxCount != 0 || k.streamHead != 0) return false;
  for (let i: u32 = 0; i < dev.cfg.mrtPaths; i++) {
    const g = c * dev.cfg.mrtPaths + i;
    const p = pathAt(dev, g);
    if (p.inflight != 0 || p.probing != 0 || pdiff(p.nxt, p.una) != 0) return false;
    const r = rxPathAt(dev, g);
    if (r.ackOwed != 0 || r.ackDue != NEVER || r.nakCode != 0) return false;
  }
  return true;
}

/**
 * Puts connection `c`'s paths on ports `first` .. `first + count - 1` (count 0: on no port).
 * Nothing changes when they are there already; otherwise each path leaves its port (its lists,
 * its share of the port's initial window) and starts over on its new one. The connection must be
 * quiescent, or new (its paths zeroed, on no port yet).
 */
export function connSpread(dev: Device, c: u32, first: u32, count: u32, fresh: bool): void {
  const k = connAt(dev, c);
  if (!fresh && k.portFirst == first && k.portCount == count) return;
  if (!fresh && k.portCount != 0) {
    for (let i: u32 = 0; i < dev.cfg.mrtPaths; i++) pathLeave(dev, c * dev.cfg.mrtPaths + i);
  }
  k.portFirst = first;
  k.portCount = count;
  k.deadSince = NEVER;
  for (let i: u32 = 0; i < dev.cfg.mrtPaths; i++) {
    const g = c * dev.cfg.mrtPaths + i;
    const p = pathAt(dev, g);
    if (count == 0) { p.port = PORT_NONE; continue; }
    p.port = first + i % count;
    p.portShare = dev.cfg.mrtPaths / count + (i % count < dev.cfg.mrtPaths % count ? 1 : 0);
    ethIpUdpTemplate(dev, pathHdrs(dev, g), p.port, k.peer, pathUdpPort(dev, i), MRT_UDP_PORT);
    const n = portPathsAt(dev, p.port);
    store<u32>(n, load<u32>(n) + 1);
    // a path on a new port knows nothing of it yet: as at the connection's start
    p.state = PATH_ACTIVE;
    p.rtos = 0;
    p.probing = 0;
    p.srtt = 0;
    p.rttvar = 0;
    p.rto = dev.cfg.mrtRtoInitPs;
    p.lastHeard = NEVER;
    p.nextTxAt = 0;
    p.hintGbps = 0;
    p.inited = 0;
    ccInit(dev, p);
    rxPathAt(dev, g).ackDue = NEVER;
  }
}

/** Path `g` leaves its port: out of the port's lists of paths with data and with ACKs, no longer counted in its share. */
function pathLeave(dev: Device, g: u32): void {
  const p = pathAt(dev, g);
  const heads = portLists(dev, p.port);
  if (p.listed) { unlink(dev, heads, g, false); p.listed = 0; }
  const r = rxPathAt(dev, g);
  if (r.listed) { unlink(dev, heads, g, true); r.listed = 0; }
  const n = portPathsAt(dev, p.port);
  store<u32>(n, load<u32>(n) - 1);
}

/** Takes path `g` out of a port's data list (`ack` false: through Path.next; one fewer at +16) or ACK list (RxPath.next); heads at +0/+4 and +8/+12. */
function unlink(dev: Device, heads: usize, g: u32, ack: bool): void {
  const off: usize = ack ? 8 : 0;
  let prev: u32 = 0, cur = load<u32>(heads + off);
  while (cur != 0 && cur != g + 1) { prev = cur; cur = nextOf(dev, cur - 1, ack); }
  if (cur == 0) return;
  const next = nextOf(dev, g, ack);
  if (prev == 0) store<u32>(heads + off, next);
  else if (ack) rxPathAt(dev, prev - 1).next = next;
  else pathAt(dev, prev - 1).next = next;
  if (load<u32>(heads + off, 4) == g + 1) store<u32>(heads + off, prev, 4);
  if (ack) rxPathAt(dev, g).next = 0; else pathAt(dev, g).next = 0;
  if (!ack) store<u32>(heads + PORT_DATA_COUNT, load<u32>(heads + PORT_DATA_COUNT) - 1);
}

@inline function nextOf(dev: Device, g: u32, ack: bool): u32 {
  return ack ? rxPathAt(dev, g).next : pathAt(dev, g).next;
}

/** The first connection that is not quiescent (connQuiet), or -1. */
export function connBusy(dev: Device): i32 {
  for (let c: u32 = 0; c < mrtOf(dev).connCount; c++) if (!connQuiet(dev, c)) return <i32>c;
  return -1;
}

/** The peer device of connection `c`. */
export function connPeer(dev: Device, c: u32): u32 {
  return connAt(dev, c).peer;
}

/** The ports are re-split, `up` of them scale-up: every connection's paths move to its group's ports now. */
export function connsRespread(dev: Device, up: u32): void {
  for (let c: u32 = 0; c < mrtOf(dev).connCount; c++) {
    const g = connAt(dev, c).group;
    connSpread(dev, c, groupFirst(g, up), groupCount(g, up, dev.cfg.ports), false);
  }
}
