// The MetaRoCE-like transport's state (docs/protocol.md): connections (one per peer device),
// their paths with each path's sent-packet record and receive window, and per QP (a stream) the
// bitmaps of the SSNs its sender has had acknowledged and its receiver has placed, and the
// receives its messages fill. Sized from the config and laid out in one block of the arena.

import { Device, Config } from "../core/device";
import { MRT_PATH_WINDOW, MRT_STREAM_WINDOW } from "../generated/headers";
import { psnAdd } from "../nic/psn";
import { ETH_IP_UDP_TEMPLATE } from "../nic/ethernet";
import {
  PATH_STATE_ACTIVE, PATH_STATE_SUSPECT, PATH_STATE_FAILED, MRT_PATH_PEER, MRT_PATH_PATH, MRT_PATH_PORT, MRT_PATH_STATE,
  MRT_PATH_CWND, MRT_PATH_SRTT, MRT_PATH_HINT_GBPS, MRT_PATH_RTO_PS, MRT_PATH_INFLIGHT, MRT_PATH_RTOS, MRT_PATH_EPOCH, MRT_PATH_CONN,
} from "../generated/layouts";

/** Path states (sender side): layouts/device.json PATH_STATE. */
export const PATH_ACTIVE: u32 = PATH_STATE_ACTIVE;
export const PATH_SUSPECT: u32 = PATH_STATE_SUSPECT; // an RTO expired: no new data until an ACK comes back
export const PATH_FAILED: u32 = PATH_STATE_FAILED; // mrtFailAfter RTOs in a row: only probed

/** One connection: the paths to one peer device and the streams (QPs) that use them. */
@unmanaged export class Conn {
  valid: u32;
  peer: u32; // the peer's device id
  group: u32; // PORT_GROUP_*: the port group its paths use, now ports portFirst .. portFirst + portCount - 1
  portFirst: u32;
  portCount: u32; // 0: the group has no ports since a re-split (paths at PORT_NONE until a QP opens it again)
  streamHead: u32; // QPs (qpn + 1) with new packets to send: a list through MrtStream.next
  streamTail: u32;
  streamCount: u32; // QPs in that list
  rtxHead: u32; // ring of (qpn, ssn) to send again: RTX_CAP entries
  rtxCount: u32;
  timerPending: u32; // one MrtTimer event at most, re-armed lazily
  timerEventAt: u64;
  holdWake: u64; // the earliest time a held stream may send again (NEVER: none held)
  deadSince: u64; // since when every path has been failed (NEVER: one is not); the give-up bound runs from it
  srtt: f64; // ps, over every path's RTT samples (0: none yet): what a path with no sample of its own starts from
  rttvar: f64;
  hintGbps: f64; // the latest rate hint per path any of its paths heard (0: none yet)
  sampled: u32; // paths with an RTT sample of their own
  peerNext: u32; // the next connection to the same peer (connection + 1; 0 ends the chain): connFind's index
  drained: u32; // receiver: 1 from the peer's FLAG_DRAINED packet until a new message's first packet (not counted in the rate hint meanwhile)
  asked: u32; // 1 once it sent its request for a grant (its first hint: tx.ts mustAsk); no data goes before the grant
  markedAt: u64; // when an ACK of any of its paths last carried CE marks (0: none yet): the fabric toward the peer is congested (tx.ts pathTimer)
  heardAt: u64; // when an ACK of any of its paths last acknowledged a packet (0: none yet)
  lostAt: u64; // when it last declared a packet lost, from a SACK hole or an RTO (0: never)
}

/** A path, sender side. */
@unmanaged export class Path {
  port: u32;
  state: u32; // PATH_*
  epoch: u32;
  listed: u32; // 1 while in its port's list of paths with work
  next: u32; // the next entry of that list: global path index + 1, 0 ends it
  nxt: u32; // the next PSN to send
  una: u32; // the floor: every PSN below is acknowledged or declared lost
  inflight: u32; // bytes sent and neither acknowledged nor declared lost
  rtos: u32; // RTOs in a row
  probing: u32; // 1 while a probe is out (tail probe, or a failed path's)
  ceAcked: u32; // CE marks and packets acknowledged in the current alpha window
  pktsAcked: u32;
  alphaEnd: u32; // the alpha window ends when una passes this PSN
  cutEnd: u32; // no cut again until una passes this PSN
  cutArmed: u32; // 1 while cutEnd holds
  cwnd: f64; // bytes
  alpha: f64;
  srtt: f64; // ps (0: no sample yet)
  rttvar: f64;
  rto: u64;
  lastHeard: u64; // when an ACK last moved it
  nextTxAt: u64; // pacing: its next packet no sooner than this
  hintGbps: f64; // the receiver's hint for the connection on this port, per path (0: none yet)
  inited: u32; // 1 once its window was set at its first packet (ccInit)
  slowStart: u32; // 1 until its first CE mark: the window grows by what each ACK acknowledges
  baseRtt: f64; // the smallest RTT sample since ccInit (ps; 0: none yet): NSCC's delay, the hint's window (cc.ts ccWindow)
  cleanBytes: f64; // NSCC: bytes acknowledged since the last sign of congestion (a mark or a delay above the target)
  probes: u32; // tail probes sent since it last heard (an active path)
  probeAt: u64; // when the last of them was due
  probeFirstAt: u64; // when the first of them went (its RTO counts from there: the probe has a whole RTO to be answered)
  portShare: u32; // paths of its connection on its port (at least 1): they share the receiver's hint there
}

/** A path, receiver side. */
@unmanaged export class RxPath {
  started: u32; // 1 once a packet arrived
  cum: u32; // every PSN below arrived, or lies below the sender's floor
  epoch: u32; // of the last packet
  ce: u32; // CE-marked packets since the last ACK
  unacked: u32; // packets since the last ACK
  ackOwed: u32; // 1 while an ACK waits for the port
  listed: u32; // 1 while in its port's ACK list
  next: u32; // that list: global path index + 1
  ackDue: u64; // the ACK timer (NEVER: not armed)
  nakQp: u32; // the NAK the next ACK carries (nakCode 0: none)
  nakCode: u32;
  nakSsn: u32;
  bits0: u64; // PSNs cum+1 .. cum+256 arrived: bit i of word i>>6 (in PSN order), see rxBit
  bits1: u64;
  bits2: u64;
  bits3: u64;
}

/** One entry of a path's sent record (sender), for PSN psn at slot psn % PATH_WINDOW. */
export const SENT_BYTES: usize = 24; // qpn u32, ssn u32, sentAt u64, bytes u32, state u32
export const SENT_NONE: u32 = 0; // acknowledged, declared lost, or a probe
export const SENT_OUT: u32 = 1; // in flight
export const SENT_PROBE: u32 = 2; // a probe in flight (no stream packet)

/** One entry of the connection's retransmit ring: qpn, ssn. */
export const RTX_BYTES: usize = 8;

/** One receive a stream's messages fill (receiver), by receive index % RECV_RING. */
export const RECV_RING: u32 = 64;
export const RECV_BYTES: usize = 32; // index+1 u32 (0: empty), lastSsn u32, op u32, imm u32, len u32, status u32, pad

@unmanaged export class Mrt {
  conns: usize; // mrtConnections Conn records
  paths: usize; // mrtConnections x mrtPaths Path records
  rxPaths: usize; // the same number of RxPath records
  sent: usize; // per path PATH_WINDOW x SENT_BYTES
  rtx: usize; // per connection rtxCap() x RTX_BYTES
  streams: usize; // maxQps x STREAM_BYTES: every QP's acked bitmap, then every QP's placed bitmap, then every QP's receive ring
  portHeads: usize; // per port, 32 bytes: data list head and tail, ACK list head and tail, paths in the data list (5 x u32)
  portSeen: usize; // per port and connection, 16 bytes: when it last delivered a packet there (u64), the hint it was last told there (u32, x 65535)
  portPaths: usize; // per port: paths of every connection that leave on it (u32)
  hdrs: usize; // per path: the Ethernet, IPv4 and UDP headers its frames start with (ethIpUdpTemplate)
  peers: usize; // 2^peerBits() slots: open addressing by peer device id, each the first connection to it (connection + 1; 0: empty)
  connCount: u32; // connections made (never freed: a QP's connection outlives it)
}

export const CONN_STRIDE: usize = (offsetof<Conn>() + 15) & ~(<usize>15);
export const PATH_STRIDE: usize = (offsetof<Path>() + 15) & ~(<usize>15);
export const RXPATH_STRIDE: usize = (offsetof<RxPath>() + 15) & ~(<usize>15);
const BITMAP_BYTES: usize = <usize>MRT_STREAM_WINDOW / 8;
/**
 * Per QP: the sender's acknowledged-SSN bitmap, the receiver's placed-SSN bitmap, the receive
 * ring. Each kind is one array over the QPs: a stream uses one of its bitmaps, and its receive
 * ring only for SENDs and WRITE_WITH_IMMs, so side by side the ones in use share pages (with a
 * stream's three parts together, every stream touched a page of its own: 1,024 MetaRoCE-like
 * devices of 16 QPs peaked 29 MiB higher, docs/performance.md).
 */
export const STREAM_BYTES: usize = 2 * BITMAP_BYTES + <usize>RECV_RING * RECV_BYTES;

@inline export function mrtOf(dev: Device): Mrt { return changetype<Mrt>(dev.mrt); }
@inline export function connAt(dev: Device, c: u32): Conn { return changetype<Conn>(mrtOf(dev).conns + <usize>c * CONN_STRIDE); }
/** Path `k` of connection `c` is global path c * mrtPaths + k. */
@inline export function pathAt(dev: Device, g: u32): Path { return changetype<Path>(mrtOf(dev).paths + <usize>g * PATH_STRIDE); }
@inline export function rxPathAt(dev: Device, g: u32): RxPath { return changetype<RxPath>(mrtOf(dev).rxPaths + <usize>g * RXPATH_STRIDE); }
@inline export function sentAt(dev: Device, g: u32, psn: u32): usize {
  return mrtOf(dev).sent + (<usize>g * <usize>MRT_PATH_WINDOW + <usize>(psn % MRT_PATH_WINDOW)) * SENT_BYTES;
}
@inline export function rtxCap(dev: Device): u32 { return dev.cfg.mrtPaths * MRT_PATH_WINDOW; }
@inline export function rtxAt(dev: Device, c: u32, k: u32): usize {
  const cap = rtxCap(dev);
  const conn = connAt(dev, c);
  return mrtOf(dev).rtx + (<usize>c * <usize>cap + <usize>((conn.rtxHead + k) % cap)) * RTX_BYTES;
}
/** The sender's bitmap of stream `qpn`'s acknowledged SSNs (MRT_STREAM_WINDOW bits, by SSN mod the window). */
@inline export function ackedBitmap(dev: Device, qpn: u32): usize { return mrtOf(dev).streams + <usize>qpn * BITMAP_BYTES; }
/** The receiver's bitmap of stream `qpn`'s placed SSNs. */
@inline export function placedBitmap(dev: Device, qpn: u32): usize {
  return mrtOf(dev).streams + (<usize>dev.cfg.maxQps + <usize>qpn) * BITMAP_BYTES;
}
/** Empties an SSN bitmap. */
@inline export function ssnClear(map: usize): void { memory.fill(map, 0, BITMAP_BYTES); }
/** Is SSN `ssn`'s bit set in `map`? */
@inline export function ssnHas(map: usize, ssn: u32): bool {
  return (load<u8>(map + <usize>((ssn % MRT_STREAM_WINDOW) >> 3)) & <u8>(1 << <u8>(ssn & 7))) != 0;
}
/** Sets SSN `ssn`'s bit in `map`. */
@inline export function ssnMark(map: usize, ssn: u32): void {
  const b = map + <usize>((ssn % MRT_STREAM_WINDOW) >> 3);
  store<u8>(b, load<u8>(b) | <u8>(1 << <u8>(ssn & 7)));
}
/** The first SSN from `from` on whose bit is not set in `map`, clearing the bits it passes (they leave the window). */
export function ssnAdvance(map: usize, from: u32): u32 {
  let s = from;
  while (ssnHas(map, s)) {
    const b = map + <usize>((s % MRT_STREAM_WINDOW) >> 3);
    store<u8>(b, load<u8>(b) & ~<u8>(1 << <u8>(s & 7)));
    s = psnAdd(s, 1);
  }
  return s;
}
@inline export function recvAt(dev: Device, qpn: u32, index: u32): usize {
  return mrtOf(dev).streams + 2 * <usize>dev.cfg.maxQps * BITMAP_BYTES + (<usize>qpn * <usize>RECV_RING + <usize>(index % RECV_RING)) * RECV_BYTES;
}
/** Port `p`'s list heads: +0 data head, +4 data tail, +8 ACK head, +12 ACK tail (global path index + 1); +16 the data list's length. */
@inline export function portLists(dev: Device, p: u32): usize { return mrtOf(dev).portHeads + <usize>p * 32; }
/** The data list's length at +16 of a port's heads (listPush, listPop and spread.ts unlink keep it). */
export const PORT_DATA_COUNT: usize = 16;
/** Address of the count of paths (of every connection) that leave on port `p`. */
@inline export function portPathsAt(dev: Device, p: u32): usize { return mrtOf(dev).portPaths + <usize>p * 4; }
/** Path `g`'s header template (nic/ethernet.ts ethIpUdpTemplate), written when it is put on a port (spread.ts). */
@inline export function pathHdrs(dev: Device, g: u32): usize { return mrtOf(dev).hdrs + <usize>g * ETH_IP_UDP_TEMPLATE; }
@inline export function portSeenAt(dev: Device, p: u32, c: u32): usize { return mrtOf(dev).portSeen + (<usize>p * <usize>dev.cfg.mrtConnections + <usize>c) * 16; }
/** The hint port `p` last told connection `c` (u32, a fraction of its line rate x 65535). */
@inline export function portToldAt(dev: Device, p: u32, c: u32): usize { return portSeenAt(dev, p, c) + 8; }

/**
 * The path whose nextTxAt paces every path of path `g`'s connection on its port: the first of
 * them (path i leaves on port portFirst + i % portCount). A connection is paced per port at its
 * share of the receiver's port, not per path: eight paths each paced at an eighth would send in
 * bursts of eight, and follow a new hint one path's gap late.
 */
@inline export function pacerOf(dev: Device, g: u32): Path {
  const c = g / dev.cfg.mrtPaths;
  const n = connAt(dev, c).portCount;
  return pathAt(dev, c * dev.cfg.mrtPaths + (g % dev.cfg.mrtPaths) % (n > 0 ? n : 1));
}

/** Path `p`'s share of mrtInitCwndBytes, the initial window of its port: shared by every path (of every connection) that leaves on it; at least one MTU. */
@inline export function initialWindow(dev: Device, p: Path): f64 {
  const n = load<u32>(portPathsAt(dev, p.port));
  const share = <f64>dev.cfg.mrtInitCwndBytes / <f64>(n > 0 ? n : 1);
  // never below one MTU: a path with nothing in flight must be able to send a packet (with a
  // share under the MTU, no path could ever send, and with nothing in flight no timer fires)
  const mtu = <f64>dev.cfg.mtuBytes;
  return share > mtu ? share : mtu;
}

/** a - b between two path PSNs (32 bits, wrapping), as a signed distance. */
@inline export function pdiff(a: u32, b: u32): i32 { return <i32>(a - b); }

@inline function align16(n: usize): usize { return (n + 15) & ~(<usize>15); }

/** log2 of the slots of the peer index (at least twice the connections: probes stay short). */
@inline function peerBits(c: Config): u32 {
  const n = 2 * c.mrtConnections;
  return n <= 16 ? 4 : 32 - <u32>clz(n - 1);
}

/** Where device `peer`'s probe starts (Fibonacci hashing: the top bits of peer x 2^32/phi). */
@inline function peerSlot(peer: u32, bits: u32): u32 {
  return (peer * 0x9e3779b1) >>> (32 - bits);
}

/** The first connection to device `peer` (its chain goes on through Conn.peerNext), or -1 (inlined: every packet asks). */
@inline export function peerFirst(dev: Device, peer: u32): i32 {
  const m = mrtOf(dev), bits = peerBits(dev.cfg), mask = (<u32>1 << bits) - 1;
  for (let i = peerSlot(peer, bits); ; i = (i + 1) & mask) {
    const e = load<u32>(m.peers + (<usize>i << 2));
    if (e == 0) return -1;
    if (connAt(dev, e - 1).peer == peer) return <i32>e - 1;
  }
  return -1; // not reached: the index is never full
}

/** Connection `c` (just made, its peer set) joins the peer index, after the connections to its peer made before it. */
export function peerAdd(dev: Device, c: u32): void {
  const m = mrtOf(dev), bits = peerBits(dev.cfg), mask = (<u32>1 << bits) - 1, peer = connAt(dev, c).peer;
  const first = peerFirst(dev, peer);
  if (first >= 0) {
    let k = connAt(dev, <u32>first);
    while (k.peerNext != 0) k = connAt(dev, k.peerNext - 1);
    k.peerNext = c + 1;
    return;
  }
  let i = peerSlot(peer, bits);
  while (load<u32>(m.peers + (<usize>i << 2)) != 0) i = (i + 1) & mask;
  store<u32>(m.peers + (<usize>i << 2), c + 1);
}

/** Arena bytes of the transport's state for config `c` (none when the device runs RoCEv2). */
export function mrtBytes(c: Config): usize {
  if (c.transport == 0) return 0;
  const conns = <usize>c.mrtConnections, paths = conns * <usize>c.mrtPaths;
  return align16(offsetof<Mrt>()) + conns * CONN_STRIDE + paths * (PATH_STRIDE + RXPATH_STRIDE)
    + paths * <usize>MRT_PATH_WINDOW * SENT_BYTES + paths * <usize>MRT_PATH_WINDOW * RTX_BYTES
    + <usize>c.maxQps * STREAM_BYTES + <usize>c.ports * 32 + <usize>c.ports * conns * 16 + align16(<usize>c.ports * 4)
    + align16(paths * ETH_IP_UDP_TEMPLATE) + (<usize>4 << peerBits(c));
}

/** Lays the state out at `base` (16-byte aligned, mrtBytes long, zeroed). */
export function mrtInit(dev: Device, base: usize): void {
  const c = dev.cfg;
  if (c.transport == 0) { dev.mrt = 0; return; }
  dev.mrt = base;
  const s = changetype<Mrt>(base);
  const conns = <usize>c.mrtConnections, paths = conns * <usize>c.mrtPaths;
  let off = base + align16(offsetof<Mrt>());
  s.conns = off; off += conns * CONN_STRIDE;
  s.paths = off; off += paths * PATH_STRIDE;
  s.rxPaths = off; off += paths * RXPATH_STRIDE;
  s.sent = off; off += paths * <usize>MRT_PATH_WINDOW * SENT_BYTES;
  s.rtx = off; off += paths * <usize>MRT_PATH_WINDOW * RTX_BYTES;
  s.streams = off; off += <usize>c.maxQps * STREAM_BYTES;
  s.portHeads = off; off += <usize>c.ports * 32;
  s.portSeen = off; off += <usize>c.ports * conns * 16;
  s.portPaths = off; off += align16(<usize>c.ports * 4);
  s.hdrs = off; off += align16(paths * ETH_IP_UDP_TEMPLATE);
  s.peers = off;
}

/** Paths the device has (every connection made so far, each with mrtPaths). */
export function mrtPathCount(dev: Device): u32 {
  return dev.mrt == 0 ? 0 : mrtOf(dev).connCount * dev.cfg.mrtPaths;
}

/** Writes path `g`'s MRT_PATH record (layouts/device.json) at `dst`; false when there is no such path. */
export function mrtPathRead(dev: Device, g: u32, dst: usize): bool {
  if (g >= mrtPathCount(dev)) return false;
  const p = pathAt(dev, g);
  const c = g / dev.cfg.mrtPaths;
  store<u32>(dst + MRT_PATH_PEER, connAt(dev, c).peer);
  store<u32>(dst + MRT_PATH_PATH, g % dev.cfg.mrtPaths);
  store<u32>(dst + MRT_PATH_PORT, p.port);
  store<u32>(dst + MRT_PATH_STATE, p.state);
  store<f64>(dst + MRT_PATH_CWND, p.cwnd);
  store<f64>(dst + MRT_PATH_SRTT, p.srtt);
  store<f64>(dst + MRT_PATH_HINT_GBPS, p.hintGbps);
  store<u64>(dst + MRT_PATH_RTO_PS, p.rto);
  store<u32>(dst + MRT_PATH_INFLIGHT, p.inflight);
  store<u32>(dst + MRT_PATH_RTOS, p.rtos);
  store<u32>(dst + MRT_PATH_EPOCH, p.epoch);
  store<u32>(dst + MRT_PATH_CONN, c);
  return true;
}
