// The MetaRoCE-like transport's sending side (docs/protocol.md, "Sender"): connections come
// into being at RTR, streams queue new packets, lost ones queue to be sent again, and a free
// port sends, in order, the ACKs its paths owe, then a packet of a path that has room and whose
// pacing time has come. One MrtTimer event per connection runs its paths' timers: RTO, tail
// probe, the receiver's ACK delay, and the end of an RNR hold.

import { Device, statAdd } from "../core/device";
import { schedule, unschedule, EventKind } from "../core/sched";
import { NEVER } from "../core/time";
import { rngOf, rngUniform } from "../core/rng";
import { Qp, qpAt, qpWqe } from "../nic/verbs";
import { streamOf } from "./stream";
import { dmaPtr } from "../mem/dma";
import { Port, portAt, portsOf, txRoom, framePs, emit, wakePort, portWakeAt, WIRE_OVERHEAD } from "../nic/ports";
import { ethIpUdpFrom } from "../nic/ethernet";
import { psnAdd, psnDiff, packetsOf } from "../nic/psn";
import { outAt, outFirstPsn, outLastPsn, outMsn, outFlags, outDrain, outComplete, outFlush, outPush, startNextAt, OUT_RESPONSE, OUT_WAIT_RESPONSE } from "../nic/outstanding";
import { qpError } from "../nic/queues";
import { crc32 } from "../checksum/icrc";
import {
  Conn, Path, RxPath, mrtOf, connAt, peerFirst, peerAdd, pathAt, pathHdrs, rxPathAt, sentAt, rtxAt, rtxCap, ackedBitmap, placedBitmap, ssnClear, ssnHas, portLists, PORT_DATA_COUNT, portSeenAt, portToldAt, portPathsAt, pacerOf,
  pdiff, PATH_ACTIVE, PATH_SUSPECT, PATH_FAILED, SENT_NONE, SENT_OUT, SENT_PROBE,
} from "./state";
import { ccInit, ccOnRto, ccPaceRate, ccGranted } from "./cc";
import { connSpread, PORT_NONE } from "./spread";
import { rtoWait, rtoBackoff, probeWait, probeAnswerWait, failedProbeEvery } from "./rto";
import {
  ETH_SIZE, MRT_UDP_PORT, MRT_VERSION, MRT_TYPE_DATA, MRT_TYPE_ACK, MRT_TYPE_PROBE, MRT_FLAG_FIRST, MRT_FLAG_LAST,
  MRT_FLAG_ACK_REQ, MRT_FLAG_RETX, MRT_FLAG_DRAINED, MRT_OP_WRITE, MRT_OP_WRITE_IMM, MRT_OP_SEND, MRT_OP_SEND_IMM, MRT_OP_READ_REQ, MRT_OP_READ_RESP, MRT_PROBE_QP,
  MRT_STREAM_WINDOW, MRT_PATH_WINDOW, MRH_SIZE, MRA_SIZE, MRC_SIZE,
  setMrhVersion, setMrhType, setMrhFlags, setMrhPath, setMrhEpoch, setMrhPsn, setMrhFloor, setMrhOp, setMrhDestQp, setMrhSsn,
  setMrhMsn, setMrhOffset, setMrhLength, setMrhAddr, setMrhRkey, setMrhImm,
  setMraVersion, setMraType, setMraFlags, setMraPath, setMraEpoch, setMraCum, setMraSack0, setMraSack1, setMraSack2, setMraSack3,
  setMraCe, setMraResv, setMraHint, setMraNakQp, setMraNakCode, setMraNakSsn,
} from "../generated/headers";
import {
  OPCODE_RDMA_WRITE, OPCODE_RDMA_WRITE_WITH_IMM, OPCODE_SEND, OPCODE_SEND_WITH_IMM, OPCODE_RDMA_READ,
  WQE_OPCODE, WQE_LENGTH, WQE_LADDR, WQE_RADDR, WQE_RKEY, WQE_IMM,
  STAT_MRT_TX_DATA, STAT_MRT_TX_RETRANSMITS, STAT_MRT_TX_PROBES, STAT_MRT_TX_ACKS, STAT_MRT_RTOS, STAT_MRT_RTO_WAITS, STAT_MRT_LOSSES_RTO,
  STAT_MRT_PATHS_FAILED, STAT_MRT_LOSSES_RESYNC, STAT_MRT_CONNS_GIVEN_UP, STATUS_RETRY_EXC_ERR, QP_STATE_RTR, QP_STATE_RTS,
  RNG_BLOCK_NIC, STAT_MRT_TX_REQUESTS, FATAL_MRT_RECORD_OVERWRITE,
} from "../generated/layouts";

// ---- connections and streams

/**
 * The connection to device `peer` over port group `group` (PORT_GROUP_*), whose ports are now
 * portFirst .. portFirst + portCount - 1 (portCount > 0), made if there is none; -1 when the table
 * is full. One parked by a re-split that left its group without ports is spread again.
 */
export function connOpen(dev: Device, peer: u32, group: u32, portFirst: u32, portCount: u32): i32 {
  const m = mrtOf(dev);
  for (let c = peerFirst(dev, peer); c >= 0; c = <i32>connAt(dev, <u32>c).peerNext - 1) {
    if (connAt(dev, <u32>c).group != group) continue;
    connSpread(dev, <u32>c, portFirst, portCount, false);
    return c;
  }
  if (m.connCount >= dev.cfg.mrtConnections) return -1;
  const c = m.connCount++;
  const k = connAt(dev, c);
  k.valid = 1;
  k.peer = peer;
  k.group = group;
  k.holdWake = NEVER;
  peerAdd(dev, c);
  connSpread(dev, c, portFirst, portCount, true);
  return <i32>c;
}

/** QP `qpn` becomes a stream of connection `c`: its bitmaps and counters start again (at RTR). */
export function streamOpen(dev: Device, q: Qp, qpn: u32, c: u32): void {
  const st = streamOf(q);
  st.conn = c;
  st.una = q.sqPsn; // its SSNs are the request's PSNs
  st.rcum = 0; // and its peer's start at 0 (the peer's sqPsn after RESET)
  st.recvNext = 0;
  st.msn = 0;
  st.recvBase = q.rqCi;
  st.rnrAt = 0;
  ssnClear(ackedBitmap(dev, qpn));
  ssnClear(placedBitmap(dev, qpn));
}

/** QP `qpn` goes to RTR towards device `peer`: it becomes a stream of the connection over `group` (false: the connection table is full, mrtConnections). */
export function mrtConnect(dev: Device, q: Qp, qpn: u32, peer: u32, group: u32, first: u32, count: u32): bool {
  const c = connOpen(dev, peer, group, first, count);
  if (c < 0) return false;
  streamOpen(dev, q, qpn, <u32>c);
  return true;
}

/**
 * The request at the head of QP `qpn` (operation `op`) has its source read: every message joins
 * the outstanding ones and the queue starts its next entry; its packets are the stream's SSNs
 * msgPsn .. msgLastPsn. A SEND or WRITE_IMM names the receive it fills; a READ is acknowledged
 * only once its response is all in.
 */
export function mrtSend(dev: Device, q: Qp, qpn: u32, op: u32, t: u64): void {
  const consumes = op == OPCODE_SEND || op == OPCODE_SEND_WITH_IMM || op == OPCODE_RDMA_WRITE_WITH_IMM;
  const st = streamOf(q);
  const msn = consumes ? st.recvNext++ : st.msn;
  st.msn++;
  outPush(dev, q, qpn, qpWqe(dev, qpn), q.msgPsn, q.msgLastPsn, msn, op == OPCODE_RDMA_READ ? OUT_WAIT_RESPONSE : 0);
  streamReady(dev, q, qpn, t);
  startNextAt(dev, q, qpn, t);
}

/** Stream `q` has new packets (a message joined its outstanding ones): its connection has work. */
export function streamReady(dev: Device, q: Qp, qpn: u32, t: u64): void {
  const st = streamOf(q);
  if (!st.listed) pushStream(dev, connAt(dev, st.conn), q, qpn);
  connWant(dev, st.conn, t);
}

/** Takes QP `qpn` out of its connection's stream list (it is being destroyed or reset). */
export function streamClose(dev: Device, q: Qp, qpn: u32): void {
  const st = streamOf(q);
  if (dev.mrt == 0 || !st.listed) return;
  const k = connAt(dev, st.conn);
  let prev: u32 = 0, cur = k.streamHead;
  while (cur != 0 && cur != qpn + 1) { prev = cur; cur = streamOf(qpAt(dev, cur - 1)).next; }
  if (cur == 0) return;
  if (prev == 0) k.streamHead = st.next; else streamOf(qpAt(dev, prev - 1)).next = st.next;
  if (k.streamTail == qpn + 1) k.streamTail = prev;
  k.streamCount--;
  st.listed = 0;
  st.next = 0;
}

/** SSN `ssn` of stream `qpn` was lost: it goes to its connection's retransmit ring. */
export function queueRtx(dev: Device, c: u32, qpn: u32, ssn: u32, t: u64): void {
  const k = connAt(dev, c);
  // queued already (a tail probe's copy and its original, both lost): sent again once
  for (let i: u32 = 0; i < k.rtxCount; i++) {
    const e = rtxAt(dev, c, i);
    if (load<u32>(e) == qpn && load<u32>(e, 4) == ssn) return;
  }
  if (k.rtxCount >= rtxCap(dev)) rtxCompact(dev, c);
  if (k.rtxCount >= rtxCap(dev)) {
    // every entry is a packet still owed: make room by the oldest's stream giving up (never seen
    // in a test: the ring holds every path's window)
    const e = rtxAt(dev, c, 0);
    if (load<u32>(e) < dev.cfg.maxQps) giveUp(dev, qpAt(dev, load<u32>(e)), load<u32>(e), t);
    rtxCompact(dev, c);
    if (k.rtxCount >= rtxCap(dev)) rtxRemove(dev, c, 0);
  }
  const e = rtxAt(dev, c, k.rtxCount);
  store<u32>(e, qpn);
  store<u32>(e, ssn, 4);
  k.rtxCount++;
  connWant(dev, c, t);
}

/** Connection `c` has something to send: its usable paths go to their ports' lists, and the ports look. */
export function connWant(dev: Device, c: u32, t: u64): void {
  const first = c * dev.cfg.mrtPaths;
  for (let g = first; g < first + dev.cfg.mrtPaths; g++) if (wants(pathAt(dev, g))) list(dev, g, t);
}

/** Path `g` may send (its window opened, it came back): on its port's list if it is usable. */
export function pathWant(dev: Device, g: u32, t: u64): void {
  if (wants(pathAt(dev, g))) list(dev, g, t);
}

/**
 * Connection `c` heard the receiver's rate hint for the first time, the grant that answers its
 * request (mustAsk): every path on a port starts (the ones that have not sent yet take their
 * window now), hears the hint, is granted its bandwidth-delay product over `rtt` (cc.ts
 * ccGranted) and goes to its port's list. Each port's first packet goes at a random point of its
 * first gap at the hint: many connections granted at once (their requests arrived together)
 * would otherwise send at once, and stay together.
 */
export function connGranted(dev: Device, c: u32, rtt: f64, t: u64): void {
  const k = connAt(dev, c);
  const first = c * dev.cfg.mrtPaths;
  for (let g = first; g < first + dev.cfg.mrtPaths; g++) {
    const p = pathAt(dev, g);
    if (p.port == PORT_NONE) continue;
    firstPacket(dev, p);
    if (p.hintGbps == 0) p.hintGbps = k.hintGbps;
    ccGranted(dev, p, rtt);
    if (pacerOf(dev, g) !== p) continue;
    const at = t + <u64>(gapAt(dev, p.hintGbps, p.portShare) * uniform(dev));
    if (p.nextTxAt < at) p.nextTxAt = at;
  }
  connWant(dev, c, t);
}

/** The gap (ps) between a connection's packets of one MTU on a port where each of its `share` paths has a hint of `gbps`. */
export function gapAt(dev: Device, gbps: f64, share: u32): f64 {
  return <f64>framePs(dev, dev.cfg.mtuBytes) * <f64>dev.cfg.portGbps / (gbps * <f64>share);
}

/** A uniform draw in [0, 1) from the device's NIC random stream. */
export function uniform(dev: Device): f64 {
  return rngUniform(rngOf(dev, RNG_BLOCK_NIC));
}

/**
 * Must connection `c` (record `k`) ask for its grant: it has heard no hint, has not sent its request, and has
 * data. The request is a PROBE with FIRST (a header, no data): an incast's 256
 * requests queue 25 KB at the receiver's port where 256 first packets of data would queue 1 MB,
 * and the receiver hears them all within a third of a microsecond, so it tells each its share
 * from the start.
 */
@inline function mustAsk(dev: Device, k: Conn, c: u32): bool {
  return k.hintGbps == 0 && k.asked == 0 && hasWork(dev, c);
}

/** Is path `p` usable and not yet on its port's list? */
@inline function wants(p: Path): bool {
  return !p.listed && (p.state == PATH_ACTIVE || p.probing == 1);
}

function list(dev: Device, g: u32, t: u64): void {
  const p = pathAt(dev, g);
  p.listed = 1;
  listPush(dev, portLists(dev, p.port), g, false);
  wakePort(dev, p.port, t);
}

// ---- the ports' lists of paths (data: Path.next; ACKs: RxPath.next), global path index + 1

function listPush(dev: Device, heads: usize, g: u32, ack: bool): void {
  const off: usize = ack ? 8 : 0;
  const tail = load<u32>(heads + off, 4);
  if (ack) rxPathAt(dev, g).next = 0; else pathAt(dev, g).next = 0;
  if (tail == 0) store<u32>(heads + off, g + 1);
  else if (ack) rxPathAt(dev, tail - 1).next = g + 1;
  else pathAt(dev, tail - 1).next = g + 1;
  store<u32>(heads + off, g + 1, 4);
  if (!ack) store<u32>(heads + PORT_DATA_COUNT, load<u32>(heads + PORT_DATA_COUNT) + 1);
}

function listPop(dev: Device, heads: usize, ack: bool): u32 {
  const off: usize = ack ? 8 : 0;
  const g = load<u32>(heads + off) - 1;
  const next = ack ? rxPathAt(dev, g).next : pathAt(dev, g).next;
  store<u32>(heads + off, next);
  if (next == 0) store<u32>(heads + off, 0, 4);
  if (!ack) store<u32>(heads + PORT_DATA_COUNT, load<u32>(heads + PORT_DATA_COUNT) - 1);
  return g;
}

/** Receiver: path `g` owes an ACK now, on its port's list of ACKs (the port is not woken). */
function listAck(dev: Device, g: u32): void {
  const r = rxPathAt(dev, g);
  r.ackOwed = 1;
  r.ackDue = NEVER;
  if (r.listed) return;
  r.listed = 1;
  listPush(dev, portLists(dev, pathAt(dev, g).port), g, true);
}

/** Receiver: path `g` owes an ACK, now or by its ACK timer. */
export function owesAck(dev: Device, g: u32, now: bool, t: u64): void {
  const r = rxPathAt(dev, g);
  if (now) {
    listAck(dev, g);
    wakePort(dev, pathAt(dev, g).port, t);
    return;
  }
  if (r.ackDue == NEVER) {
    r.ackDue = t + dev.cfg.mrtAckDelayPs;
    wantTimer(dev, g / dev.cfg.mrtPaths, r.ackDue);
  }
}

// ---- the port

/** The PortTx event of a device running this transport: port `p` is free at `t`. */
export function mrtPortTx(dev: Device, p: u32, t: u64): void {
  const port = portAt(dev, p);
  port.txPending = 0;
  const heads = portLists(dev, p);
  // the ACKs this port owes go first: they hold the senders' windows
  while (load<u32>(heads, 8) != 0) {
    const g = load<u32>(heads, 8) - 1;
    const r = rxPathAt(dev, g);
    if (!r.ackOwed) { listPop(dev, heads, true); r.listed = 0; continue; }
    const wire = buildAck(dev, g, t);
    if (!send(dev, p, wire, t)) return;
    listPop(dev, heads, true);
    r.listed = 0;
    r.ackOwed = 0;
    r.unacked = 0;
    r.ce = 0;
    r.nakCode = 0;
    statAdd(dev, STAT_MRT_TX_ACKS, 1);
    nextLook(dev, port, p, heads);
    return;
  }
  // then data: the first path of the list that may send now (each path looked at once: the list's length is kept)
  const n = load<u32>(heads + PORT_DATA_COUNT);
  let wait = NEVER;
  for (let i: u32 = 0; i < n && load<u32>(heads) != 0; i++) {
    const g = load<u32>(heads) - 1;
    const path = pathAt(dev, g);
    const c = g / dev.cfg.mrtPaths;
    if (path.probing == 1) {
      // the last packet again, which a lost tail needs; behind a marking queue a header, which
      // asks the same ACK without adding a packet the receiver would likely get twice. Before
      // the grant no data goes: an unanswered request is asked again (a tail probe would have
      // sent the first data packet, as the conformance case mrt-request-first found)
      const k = connAt(dev, c), granted = k.hintGbps != 0;
      let wire = granted && path.state == PATH_ACTIVE && !marked(dev, k, path, t) ? buildTailProbe(dev, c, g, t) : 0;
      if (wire == 0) wire = buildProbe(dev, c, g, t, !granted);
      else statAdd(dev, STAT_MRT_TX_PROBES, 1);
      if (!send(dev, p, wire, t)) return;
      portWakeAt(dev, port, p, port.busyUntil);
      path.probing = 2;
      armPath(dev, c, path); // its next probe, if this one goes unanswered
      rotate(dev, heads, g, path.state == PATH_ACTIVE && hasWork(dev, c));
      return;
    }
    const k = connAt(dev, c);
    if (path.state == PATH_ACTIVE && mustAsk(dev, k, c)) {
      if (!send(dev, p, buildProbe(dev, c, g, t, true), t)) return;
      k.asked = 1;
      rotate(dev, heads, g, false);
      nextLook(dev, port, p, heads);
      return;
    }
    // no data before the grant (its answer brings the path back: connGranted)
    if (path.state != PATH_ACTIVE || !hasWork(dev, c) || !hasRoom(dev, path) || k.hintGbps == 0) {
      listPop(dev, heads, false);
      path.listed = 0;
      continue;
    }
    const paced = pacerOf(dev, g).nextTxAt;
    if (paced > t) {
      if (paced < wait) wait = paced;
      rotate(dev, heads, g, true);
      continue;
    }
    const wire = buildNext(dev, c, g, false, t);
    if (wire == 0) {
      // nothing it may send now (streams at their window, or held): the ACK or the hold's end brings it back
      listPop(dev, heads, false);
      path.listed = 0;
      continue;
    }
    if (!send(dev, p, wire, t)) return;
    rotate(dev, heads, g, true);
    nextLook(dev, port, p, heads);
    return;
  }
  if (wait != NEVER) portWakeAt(dev, port, p, wait);
}

/** Moves the head of the port's data list to its back (or out of the list when `keep` is false). */
function rotate(dev: Device, heads: usize, g: u32, keep: bool): void {
  if (keep && load<u32>(heads) == load<u32>(heads, 4)) return; // alone in it: the list stays as it is
  listPop(dev, heads, false);
  if (keep) listPush(dev, heads, g, false);
  else pathAt(dev, g).listed = 0;
}

/**
 * Sends the frame just built on port `p` at `t`, which is busy until it has left (the caller
 * says when the port looks again); false (the port blocked until the host drains the ring) when
 * there is no room.
 */
function send(dev: Device, p: u32, wire: u32, t: u64): bool {
  const port = portAt(dev, p);
  const hdrLen = portsOf(dev).frameHdrLen;
  if (!txRoom(dev, dev.cfg.timingMode == 0 ? wire - hdrLen : 0)) { port.blocked = 1; return false; }
  const end = t + framePs(dev, wire);
  emit(dev, p, end, wire, hdrLen);
  port.busyUntil = end;
  return true;
}

/**
 * Port `p` has just sent: it looks for its next frame when that one has left, or, when every
 * path on its list is paced past then (and no ACK is owed), at the first of their pacing times;
 * with an empty list it sleeps. Whatever could send sooner wakes it sooner (an owed ACK, a path
 * listed or probing: wakePort). Looking when the frame has left only to find every path paced
 * would cost an event a packet.
 */
function nextLook(dev: Device, port: Port, p: u32, heads: usize): void {
  if (load<u32>(heads) == 0 && load<u32>(heads, 8) == 0) return;
  const end = port.busyUntil;
  let at = load<u32>(heads, 8) != 0 ? end : NEVER;
  for (let k = load<u32>(heads); k != 0 && at > end; k = pathAt(dev, k - 1).next) {
    const path = pathAt(dev, k - 1);
    const ready = path.probing == 1 ? end : pacerOf(dev, k - 1).nextTxAt;
    if (ready < at) at = ready;
  }
  portWakeAt(dev, port, p, at > end ? at : end);
}

@inline function hasWork(dev: Device, c: u32): bool {
  const k = connAt(dev, c);
  return k.rtxCount > 0 || k.streamHead != 0;
}

@inline function hasRoom(dev: Device, p: Path): bool {
  return <f64>p.inflight + <f64>dev.cfg.mtuBytes <= p.cwnd && pdiff(p.nxt, p.una) < <i32>MRT_PATH_WINDOW;
}

// ---- choosing and building a data packet

/** Builds connection `c`'s next packet for path `g`: one to send again first, else a new one. Its wire length, or 0 for none. */
function buildNext(dev: Device, c: u32, g: u32, probe: bool, t: u64): u32 {
  const k = connAt(dev, c);
  // the retransmit ring, oldest first: entries acknowledged meanwhile are dropped, held streams skipped
  let scanned: u32 = 0;
  while (scanned < k.rtxCount) {
    const e = rtxAt(dev, c, scanned);
    const qpn = load<u32>(e), ssn = load<u32>(e, 4);
    const live = qpn < dev.cfg.maxQps && streamLive(dev, qpAt(dev, qpn), c) && !isAcked(dev, qpAt(dev, qpn), qpn, ssn);
    if (!live) { rtxRemove(dev, c, scanned); continue; }
    const q = qpAt(dev, qpn);
    const rnrAt = streamOf(q).rnrAt;
    if (rnrAt > t) { holdUntil(dev, c, rnrAt); scanned++; continue; }
    rtxRemove(dev, c, scanned);
    const wire = buildData(dev, c, g, q, qpn, ssn, true, probe, false, t);
    if (wire != 0) return wire;
  }
  // new packets, streams round robin
  for (let i: u32 = 0, n = k.streamCount; i < n; i++) {
    const qpn = k.streamHead - 1;
    const q = qpAt(dev, qpn);
    popStream(dev, k, q);
    if (!streamLive(dev, q, c) || !q.rtxActive) continue; // nothing new: out of the list
    const st = streamOf(q);
    if (st.rnrAt > t) { holdUntil(dev, c, st.rnrAt); pushStream(dev, k, q, qpn); continue; }
    const ssn = q.rtxPsn;
    if (psnDiff(ssn, st.una) >= <i32>MRT_STREAM_WINDOW) { pushStream(dev, k, q, qpn); continue; } // its window: an ACK reopens it
    // the cursor on to the next new packet
    const e = outAt(dev, q, qpn, q.rtxK);
    if (ssn == outLastPsn(e)) {
      q.rtxK++;
      if (q.rtxK >= q.outCount) q.rtxActive = 0;
      else q.rtxPsn = outFirstPsn(outAt(dev, q, qpn, q.rtxK));
    } else q.rtxPsn = psnAdd(ssn, 1);
    if (q.rtxActive) pushStream(dev, k, q, qpn);
    // nothing new queued behind it: the receiver stops counting the connection in its hint
    const wire = buildData(dev, c, g, q, qpn, ssn, false, probe, k.streamHead == 0, t);
    if (wire != 0) return wire;
  }
  return 0;
}

function popStream(dev: Device, k: Conn, q: Qp): void {
  const st = streamOf(q);
  k.streamHead = st.next;
  if (k.streamHead == 0) k.streamTail = 0;
  k.streamCount--;
  st.next = 0;
  st.listed = 0;
}

function pushStream(dev: Device, k: Conn, q: Qp, qpn: u32): void {
  const st = streamOf(q);
  st.listed = 1;
  st.next = 0;
  if (k.streamTail == 0) k.streamHead = qpn + 1;
  else streamOf(qpAt(dev, k.streamTail - 1)).next = qpn + 1;
  k.streamTail = qpn + 1;
  k.streamCount++;
}

/** Drops the entries of the retransmit ring that are owed no more (acknowledged meanwhile, or of a stream gone). */
function rtxCompact(dev: Device, c: u32): void {
  const k = connAt(dev, c);
  let kept: u32 = 0;
  for (let i: u32 = 0; i < k.rtxCount; i++) {
    const e = rtxAt(dev, c, i);
    const qpn = load<u32>(e), ssn = load<u32>(e, 4);
    if (qpn >= dev.cfg.maxQps || !streamLive(dev, qpAt(dev, qpn), c) || isAcked(dev, qpAt(dev, qpn), qpn, ssn)) continue;
    if (kept != i) memory.copy(rtxAt(dev, c, kept), e, 8);
    kept++;
  }
  k.rtxCount = kept;
}

/** A stream whose lost packet cannot even be queued, or whose connection gave up: its messages end with RETRY_EXC_ERR and the QP goes to error. */
function giveUp(dev: Device, q: Qp, qpn: u32, t: u64): void {
  outDrain(dev, q, qpn, t, true);
  if (q.outCount > 0) outComplete(dev, q, qpn, STATUS_RETRY_EXC_ERR, t);
  outFlush(dev, qpn, t);
  qpError(dev, qpn, t);
}

function rtxRemove(dev: Device, c: u32, i: u32): void {
  const k = connAt(dev, c);
  // the entries before it move up one (the ring keeps its order)
  for (let j = i; j > 0; j--) memory.copy(rtxAt(dev, c, j), rtxAt(dev, c, j - 1), 8);
  k.rtxHead = (k.rtxHead + 1) % rtxCap(dev);
  k.rtxCount--;
}

function holdUntil(dev: Device, c: u32, at: u64): void {
  const k = connAt(dev, c);
  if (at < k.holdWake) k.holdWake = at;
  wantTimer(dev, c, at);
}

@inline function streamLive(dev: Device, q: Qp, c: u32): bool {
  return q.valid != 0 && q.remote != 0 && streamOf(q).conn == c;
}

/** Has SSN `ssn` of stream `q` been acknowledged? */
export function isAcked(dev: Device, q: Qp, qpn: u32, ssn: u32): bool {
  const d = psnDiff(ssn, streamOf(q).una);
  if (d < 0) return true;
  if (d >= <i32>MRT_STREAM_WINDOW) return false;
  return ssnHas(ackedBitmap(dev, qpn), ssn);
}

/** The outstanding message of stream `q` holding SSN `ssn`, or 0. */
export function messageOf(dev: Device, q: Qp, qpn: u32, ssn: u32): usize {
  for (let k: u32 = 0; k < q.outCount; k++) {
    const e = outAt(dev, q, qpn, k);
    if (psnDiff(ssn, outFirstPsn(e)) >= 0 && psnDiff(ssn, outLastPsn(e)) <= 0) return e;
  }
  return 0;
}

function mrtOp(op: u32, flags: u32): u32 {
  if ((flags & OUT_RESPONSE) != 0) return MRT_OP_READ_RESP;
  if (op == OPCODE_RDMA_READ) return MRT_OP_READ_REQ;
  if (op == OPCODE_RDMA_WRITE_WITH_IMM) return MRT_OP_WRITE_IMM;
  if (op == OPCODE_SEND) return MRT_OP_SEND;
  if (op == OPCODE_SEND_WITH_IMM) return MRT_OP_SEND_IMM;
  return MRT_OP_WRITE;
}

/** Builds packet `ssn` of stream `q` for path `g` in the port's frame buffer (`drained`: its connection's last new packet for now); its wire length (0: its message is gone). */
function buildData(dev: Device, c: u32, g: u32, q: Qp, qpn: u32, ssn: u32, again: bool, probe: bool, drained: bool, t: u64): u32 {
  const e = messageOf(dev, q, qpn, ssn);
  if (e == 0) return 0;
  const path = pathAt(dev, g);
  firstPacket(dev, path);
  const op = mrtOp(<u32>load<u8>(e + WQE_OPCODE), outFlags(e));
  const len = load<u32>(e + WQE_LENGTH);
  const mtu = dev.cfg.mtuBytes;
  const idx = <u32>psnDiff(ssn, outFirstPsn(e));
  // a READ request is one packet without payload; every other message is cut at the MTU
  const n = op == MRT_OP_READ_REQ ? 1 : packetsOf(len, mtu);
  const off = idx * mtu;
  const plen = op == MRT_OP_READ_REQ ? 0 : idx == n - 1 ? len - off : mtu;
  let flags: u32 = 0;
  if (idx == 0) flags |= MRT_FLAG_FIRST;
  if (idx == n - 1) flags |= MRT_FLAG_LAST | MRT_FLAG_ACK_REQ;
  if (again) flags |= MRT_FLAG_RETX | MRT_FLAG_ACK_REQ;
  if (probe) flags |= MRT_FLAG_ACK_REQ;
  if (drained) flags |= MRT_FLAG_DRAINED;
  const h = ethIpUdpFrom(dev, pathHdrs(dev, g), MRH_SIZE + plen + MRC_SIZE);
  const psn = path.nxt;
  dataHeader(h, MRT_TYPE_DATA, flags, g % dev.cfg.mrtPaths, path.epoch, psn, path.una);
  setMrhOp(h, op);
  setMrhDestQp(h, q.destQpn);
  setMrhSsn(h, ssn);
  setMrhMsn(h, outMsn(e));
  setMrhOffset(h, off);
  setMrhLength(h, len);
  // a READ response's bytes go where its requester's own READ says: it names no address
  setMrhAddr(h, op == MRT_OP_READ_RESP ? 0 : load<u64>(e + WQE_RADDR) + <u64>off);
  setMrhRkey(h, op == MRT_OP_READ_RESP ? 0 : load<u32>(e + WQE_RKEY));
  setMrhImm(h, load<u32>(e + WQE_IMM));
  const wire = finish(dev, h + MRH_SIZE, load<u64>(e + WQE_LADDR) + <u64>off, plen);
  // the path's record of it, and its window and pacing
  const s = takeSlot(dev, g, psn);
  store<u32>(s, qpn);
  store<u32>(s, ssn, 4);
  store<u64>(s, t, 8);
  store<u32>(s, plen, 16);
  store<u32>(s, SENT_OUT, 20);
  // a path that had nothing in flight starts its silence now (not at the ACK it last heard),
  // and its timer with it. A path with packets out has its timer armed already: one more packet
  // only lengthens its drain bound (rto.ts), and the timer finds the later time when it fires
  const starts = path.lastHeard == NEVER || path.nxt == path.una;
  if (starts) path.lastHeard = t;
  path.nxt = psn + 1;
  path.inflight += plen;
  pace(dev, g, path, t, wire);
  if (starts) armPath(dev, c, path);
  q.txBytes += plen;
  statAdd(dev, again ? STAT_MRT_TX_RETRANSMITS : STAT_MRT_TX_DATA, 1);
  return wire;
}

/**
 * The record slot of PSN `psn` on path `g`, for a packet about to go (or a failed path's probe
 * given up). Every sender checks the record's room first (hasRoom, recordFull); a slot still
 * holding a packet in flight means one did not, and that packet would be lost to its stream for
 * good, its work request never complete (as a probe over a full record once did:
 * test/metaroce-record.test.ts). The device fails (FATAL_MRT_RECORD_OVERWRITE) rather than run
 * on silently wrong.
 */
@inline function takeSlot(dev: Device, g: u32, psn: u32): usize {
  const s = sentAt(dev, g, psn);
  if (load<u32>(s, 20) == SENT_OUT) dev.fatal = FATAL_MRT_RECORD_OVERWRITE;
  return s;
}

function dataHeader(h: usize, type: u32, flags: u32, path: u32, epoch: u32, psn: u32, floor: u32): void {
  setMrhVersion(h, MRT_VERSION);
  setMrhType(h, type);
  setMrhFlags(h, flags);
  setMrhPath(h, path);
  setMrhEpoch(h, epoch & 0xff);
  setMrhPsn(h, psn);
  setMrhFloor(h, floor);
}

/**
 * Copies `payload` bytes from DMA address `from` after the header ending at `at` and writes the
 * CRC-32 trailer over the UDP payload (full mode; timing mode carries no bytes). Returns the
 * frame's wire length and records its header length.
 */
function finish(dev: Device, at: usize, from: u64, payload: u32): u32 {
  const s = portsOf(dev);
  const f = s.frame;
  const hdrLen = <u32>(at - f);
  const wire = hdrLen + payload + MRC_SIZE;
  s.frameHdrLen = hdrLen;
  if (dev.cfg.timingMode == 0) {
    if (payload > 0) memory.copy(at, dmaPtr(dev, from, <u64>payload), payload);
    const udpPayload = f + ETH_SIZE + 28; // after IPv4 (20) and UDP (8)
    store<u32>(at + payload, crc32(udpPayload, <usize>(at + payload - udpPayload))); // little-endian, like the ICRC
  }
  return wire;
}

/**
 * The path's next packet no sooner than this one's size at its pacing rate after this one was
 * due: a packet that left late (its connection's window held it, or the port was busy) costs the
 * path no rate, up to one packet's gap (no more: a path idle for long does not burst).
 */
function pace(dev: Device, g: u32, p: Path, t: u64, wire: u32): void {
  const pacer = pacerOf(dev, g);
  const r = ccPaceRate(dev, p) * <f64>p.portShare; // the connection's rate on the port
  if (r <= 0) { pacer.nextTxAt = 0; return; }
  const gap = <u64>Math.ceil(<f64>(wire + WIRE_OVERHEAD) / r);
  const due = pacer.nextTxAt + gap > t ? pacer.nextTxAt : t - gap;
  pacer.nextTxAt = due + gap;
}

/** A path's window is set when it first sends, once every connection of the run is likely made (the port's share depends on them all). */
@inline function firstPacket(dev: Device, p: Path): void {
  if (p.inited) return;
  p.inited = 1;
  ccInit(dev, p);
}

/**
 * The tail probe of active path `g` (after RACK-TLP's loss probe), asking for an ACK at once:
 * the connection's next packet (one sent again, else a new one) when it has one, beyond the
 * path's window; else the path's newest packet still out, sent again under a new PSN. Either way
 * its ACK shows every hole below it; when the path's newest packet was lost (a tail loss:
 * nothing after it to show the hole) the second kind brings it, and its message completes a
 * round trip after the probe rather than two. The first kind costs nothing when nothing was lost
 * (a probe that fires behind a queue). Its wire length, or 0 for neither (an empty PROBE goes).
 */
function buildTailProbe(dev: Device, c: u32, g: u32, t: u64): u32 {
  if (hasWork(dev, c)) {
    const wire = buildNext(dev, c, g, true, t);
    if (wire != 0) return wire;
  }
  const path = pathAt(dev, g);
  for (let psn = path.nxt - 1; pdiff(psn, path.una) >= 0; psn--) {
    const s = sentAt(dev, g, psn);
    if (load<u32>(s, 20) != SENT_OUT) continue;
    const qpn = load<u32>(s), ssn = load<u32>(s, 4);
    if (qpn >= dev.cfg.maxQps) return 0;
    const q = qpAt(dev, qpn);
    if (!streamLive(dev, q, c) || isAcked(dev, q, qpn, ssn)) return 0;
    return buildData(dev, c, g, q, qpn, ssn, true, true, false, t);
  }
  return 0;
}

/** A probe on path `g`: a new PSN and no payload, asking for an ACK; a `request` (FIRST set) asks for the connection's grant (mustAsk). */
function buildProbe(dev: Device, c: u32, g: u32, t: u64, request: bool = false): u32 {
  const path = pathAt(dev, g);
  firstPacket(dev, path);
  const h = ethIpUdpFrom(dev, pathHdrs(dev, g), MRH_SIZE + MRC_SIZE);
  const psn = path.nxt;
  dataHeader(h, MRT_TYPE_PROBE, request ? MRT_FLAG_ACK_REQ | MRT_FLAG_FIRST : MRT_FLAG_ACK_REQ, g % dev.cfg.mrtPaths, path.epoch, psn, path.una);
  memory.fill(h + 12, 0, <usize>MRH_SIZE - 12);
  setMrhDestQp(h, MRT_PROBE_QP);
  const s = takeSlot(dev, g, psn);
  store<u32>(s, 0xffffffff);
  store<u32>(s, 0, 4);
  store<u64>(s, t, 8);
  store<u32>(s, 0, 16);
  store<u32>(s, SENT_PROBE, 20);
  if (path.lastHeard == NEVER || path.nxt == path.una) path.lastHeard = t;
  path.nxt = psn + 1;
  armPath(dev, c, path);
  statAdd(dev, request ? STAT_MRT_TX_REQUESTS : STAT_MRT_TX_PROBES, 1);
  return finish(dev, h + MRH_SIZE, 0, 0);
}

/** The ACK path `g` owes: its cumulative PSN, SACK, marks, the port's rate hint, and a NAK if any. */
function buildAck(dev: Device, g: u32, t: u64): u32 {
  const r = rxPathAt(dev, g);
  const port = pathAt(dev, g).port;
  const h = ethIpUdpFrom(dev, pathHdrs(dev, g), MRA_SIZE + MRC_SIZE);
  setMraVersion(h, MRT_VERSION);
  setMraType(h, MRT_TYPE_ACK);
  setMraFlags(h, 0);
  setMraPath(h, g % dev.cfg.mrtPaths);
  setMraEpoch(h, r.epoch & 0xff);
  setMraCum(h, r.cum);
  setMraSack0(h, r.bits0);
  setMraSack1(h, r.bits1);
  setMraSack2(h, r.bits2);
  setMraSack3(h, r.bits3);
  setMraCe(h, r.ce > 255 ? 255 : r.ce);
  setMraResv(h, 0);
  setMraHint(h, hintOf(dev, port, g / dev.cfg.mrtPaths, t));
  setMraNakQp(h, r.nakCode != 0 ? r.nakQp : 0);
  setMraNakCode(h, r.nakCode);
  setMraNakSsn(h, r.nakCode != 0 ? r.nakSsn : 0);
  return finish(dev, h + MRA_SIZE, 0, 0);
}

/**
 * Connection `o` is owed an ACK on receiving port `p` now (on its first path there that has
 * received), which carries the port's hint. Only while port `p` sends (mrtPortTx: an ACK's grant
 * tells other connections less), which looks at its ACK list next: it is not woken.
 */
function tell(dev: Device, p: u32, o: u32): void {
  const paths = dev.cfg.mrtPaths;
  for (let g = o * paths; g < (o + 1) * paths; g++) {
    if (pathAt(dev, g).port != p || !rxPathAt(dev, g).started) continue;
    listAck(dev, g);
    return;
  }
}

/**
 * The rate hint port `p` tells connection `c` at `t`, a fraction of its line rate x 65535: its
 * fair share, mrtHintPermille of the line over the connections active on it. When a connection
 * is told its first hint (its grant) the others told more than the new share are told less at
 * once (lowerOthers): requests arriving together (an incast's 256 arrive within a third of a
 * microsecond) are each told a share of the few heard before them, and the first ones would keep
 * most of the port for a round trip.
 */
function hintOf(dev: Device, p: u32, c: u32, t: u64): u32 {
  const window = dev.cfg.mrtHintWindowPs;
  let active: u32 = 0;
  for (let o: u32 = 0; o < mrtOf(dev).connCount; o++) if (activeAt(dev, p, o, t, window)) active++;
  if (active == 0) active = 1;
  const all = <f64>dev.cfg.mrtHintPermille / 1000;
  const fair = all / <f64>active;
  // never 0, which says "no hint": a connection's first hint is its grant (connGranted)
  let hint = <u32>Math.floor(fair * 65535);
  if (hint == 0) hint = 1;
  const told = portToldAt(dev, p, c), was = load<u32>(told);
  store<u32>(told, hint);
  if (was == 0) lowerOthers(dev, p, c, t, window, fair);
  return hint;
}

/**
 * Is connection `o` active on receiving port `p` at `t`: it delivered there within `window` plus
 * twice the gap between its packets at the hint it was last told (256 connections at their share
 * of 800 Gb/s deliver every 10.8 us each: a fixed window would miss some, and their hint, shared
 * among fewer, would add up to more than the port). A connection whose sender said it drained
 * counts no more (rx.ts seen).
 */
@inline function activeAt(dev: Device, p: u32, o: u32, t: u64, window: u64): bool {
  const seen = load<u64>(portSeenAt(dev, p, o));
  if (seen == 0) return false;
  const told = load<u32>(portToldAt(dev, p, o));
  const gap = told == 0 ? 0 : <u64>(<f64>framePs(dev, dev.cfg.mtuBytes) * 65535 / <f64>told);
  return t - seen <= window + 2 * gap;
}

/**
 * Connection `c` was just granted its share of port `p`: the others active on it that were told
 * more than 5/4 of the new fair share `fair` are told less now, each by an ACK on its first path
 * there, not at their next ACK a round trip on. With 256 requests arriving together, the first
 * were granted the whole port, a half, a third...: together several times the port.
 */
function lowerOthers(dev: Device, p: u32, c: u32, t: u64, window: u64, fair: f64): void {
  const n = mrtOf(dev).connCount, high = <u32>Math.min(fair * 65535 * 5 / 4, 65535);
  for (let o: u32 = 0; o < n; o++) {
    if (o == c || load<u32>(portToldAt(dev, p, o)) <= high || !activeAt(dev, p, o, t, window)) continue;
    tell(dev, p, o);
  }
}

// ---- timers: one MrtTimer per connection, re-armed lazily for the earliest of its paths' times

/** The earliest time path `p` of connection `k` needs its connection's timer: its RTO or tail probe. */
function pathDue(dev: Device, k: Conn, p: Path): u64 {
  if (p.lastHeard == NEVER) return NEVER;
  if (p.state == PATH_FAILED) return p.lastHeard + failedProbeEvery(dev, k, p);
  if (pdiff(p.nxt, p.una) <= 0) return NEVER; // nothing in flight
  const wait = rtoWait(dev, k, p);
  const rto = rtoAtOf(dev, k, p, wait);
  // one probe after the probe time, never after the RTO would have come (RACK-TLP, RFC 8985
  // 7.2); on an active path, while none is answered, another after twice as long from the last,
  // and so on until the RTO, which leaves the first probe the time its answer needs (rtoAtOf)
  if (p.probing == 1 || (p.probing != 0 && (p.state != PATH_ACTIVE || p.probes == 0))) return rto;
  const pw = probeWait(dev, k, p);
  const probe = p.probes == 0 ? p.lastHeard + (pw < wait ? pw : wait) : p.probeAt + (pw << <u64>(p.probes < 20 ? p.probes : 20));
  return probe < rto ? probe : rto;
}

/**
 * When path `p`'s RTO comes: `wait` (rtoWait) after it was last heard from, and on an active
 * path that has sent a tail probe, no sooner than the probe's answer can come (probeAnswerWait
 * after it). Behind a deep queue SRTT + 4 RTTVAR is shorter than the probe time (2 SRTT): the
 * RTO came first, and a tail loss cost an RTO where a probe finds it (RACK-TLP, RFC 8985 7.2).
 */
@inline function rtoAtOf(dev: Device, k: Conn, p: Path, wait: u64): u64 {
  const rto = p.lastHeard + wait;
  if (p.state != PATH_ACTIVE || p.probes == 0) return rto;
  const answer = p.probeFirstAt + probeAnswerWait(dev, k, p);
  return answer > rto ? answer : rto;
}

/** Connection `c`'s timer is armed for path `p`'s next RTO or tail probe. */
export function armPath(dev: Device, c: u32, p: Path): void {
  const at = pathDue(dev, connAt(dev, c), p);
  if (at != NEVER) wantTimer(dev, c, at);
}

/** Connection `c`'s timer event at `at` or earlier. */
export function wantTimer(dev: Device, c: u32, at: u64): void {
  const k = connAt(dev, c);
  if (k.timerPending && k.timerEventAt <= at) return;
  if (k.timerPending) unschedule(dev, EventKind.MrtTimer, c);
  k.timerPending = 1;
  k.timerEventAt = at;
  schedule(dev, at, EventKind.MrtTimer, c, 0);
}

/** The MrtTimer event of connection `c`: every path's due timers, then the next one armed. */
export function mrtTimer(dev: Device, c: u32, t: u64): void {
  const k = connAt(dev, c);
  k.timerPending = 0;
  let next = NEVER;
  if (k.deadSince != NEVER) {
    if (k.deadSince + dev.cfg.mrtGiveUpPs <= t) connGiveUp(dev, c, t);
    next = k.deadSince + dev.cfg.mrtGiveUpPs;
  }
  if (k.holdWake != NEVER) {
    if (k.holdWake <= t) { k.holdWake = NEVER; connWant(dev, c, t); }
    else if (k.holdWake < next) next = k.holdWake;
  }
  for (let i: u32 = 0; i < dev.cfg.mrtPaths; i++) {
    const g = c * dev.cfg.mrtPaths + i;
    const r = rxPathAt(dev, g);
    if (r.ackDue != NEVER) {
      if (r.ackDue <= t) owesAck(dev, g, true, t);
      else if (r.ackDue < next) next = r.ackDue;
    }
    const p = pathAt(dev, g);
    let due = pathDue(dev, k, p);
    if (due != NEVER && due <= t) {
      pathTimer(dev, c, g, p, t);
      due = pathDue(dev, k, p);
    }
    if (due != NEVER && due < next) next = due;
  }
  if (next != NEVER) wantTimer(dev, c, next);
}

/** Path `g`'s own time has come: a tail probe, or its RTO. */
function pathTimer(dev: Device, c: u32, g: u32, p: Path, t: u64): void {
  const k = connAt(dev, c);
  const rtoAt = rtoAtOf(dev, k, p, rtoWait(dev, k, p));
  if (p.state != PATH_FAILED && p.probing != 1 && (t < rtoAt || (p.state == PATH_ACTIVE && p.probes == 0))) {
    // silent for a probe time with packets out (at the latest when its RTO would come): ask
    // for an ACK, which shows any hole. A probe takes a PSN: with the record full it would take
    // the slot of the oldest packet out, whose loss nothing would then find; the RTO comes
    // instead (no sooner than 2 x SRTT after the path was last heard from: probeFirstAt is then
    // that time)
    p.probes++;
    p.probeAt = t;
    p.probing = recordFull(p) ? 2 : 1;
    if (p.probes == 1) p.probeFirstAt = p.probing == 1 ? t : p.lastHeard;
    if (p.probing == 1) forceList(dev, g, t);
    return;
  }
  if (p.state == PATH_FAILED) {
    // a failed path is probed every RTO until it answers; it has nothing but probes out, and
    // the oldest unanswered ones are given up to make room (the receiver drops a PSN 256 past its floor)
    if (recordFull(p)) forgetProbes(dev, g, p);
    p.lastHeard = t;
    p.probing = 1;
    forceList(dev, g, t);
    return;
  }
  if (congested(dev, k, p, t)) {
    // a hot link, not a dead one (the seeds: congestion is not failure): what is in flight is
    // queued behind it, not lost, and sending it again would only add to the queue. New data
    // goes to the other paths while this one is suspect; its probe, and its packets, are
    // answered when the queue drains. Waited out this way until mrtFailAfter RTOs in a row
    statAdd(dev, STAT_MRT_RTO_WAITS, 1);
    rtoBackoff(dev, k, p);
    p.rtos++;
    p.lastHeard = t;
    p.state = PATH_SUSPECT;
    // its probe takes a PSN: with the record full it would take the oldest packet's slot, and
    // that packet's ACK would then acknowledge the probe (its SSN never acknowledged, its work
    // request never complete: test/metaroce-record.test.ts). The next RTO comes instead
    p.probing = recordFull(p) ? 2 : 1;
    if (p.probing == 1) forceList(dev, g, t);
    return;
  }
  // the RTO: everything in flight on the path is lost and goes to the others
  statAdd(dev, STAT_MRT_RTOS, 1);
  declareAllLost(dev, c, g, p, STAT_MRT_LOSSES_RTO, t);
  rtoBackoff(dev, k, p);
  p.rtos++;
  p.lastHeard = t;
  p.probing = 1;
  ccOnRto(dev, p);
  if (p.rtos >= dev.cfg.mrtFailAfter) {
    if (p.state != PATH_FAILED) statAdd(dev, STAT_MRT_PATHS_FAILED, 1);
    p.state = PATH_FAILED;
    connMaybeDead(dev, c, t);
  } else p.state = PATH_SUSPECT;
  forceList(dev, g, t);
}

/**
 * Is path `p`'s silence at its RTO congestion rather than loss, while it has RTOs left before it
 * would be failed: an ACK of its connection (any path) carried CE marks within the RTO wait
 * before `t` (queues toward the peer stand above the marking threshold), or no other path of
 * the connection has been heard since this one was (the whole connection is silent: a queue in
 * front of all its paths, not this path's link; a link that fails leaves the others heard)
 * while the connection has declared nothing lost within the RTO wait (a burst of loss silences
 * every path too, and its losses show first in SACK holes).
 * Behind a queue longer than its RTO (an oversubscribed leaf's uplink holding megabytes), a
 * path's ACKs come after its RTO though nothing is lost: declared lost, its packets were all
 * received twice.
 */
function congested(dev: Device, k: Conn, p: Path, t: u64): bool {
  if (p.rtos + 1 >= dev.cfg.mrtFailAfter) return false;
  return marked(dev, k, p, t) || (k.heardAt <= p.lastHeard && !recent(dev, k, k.lostAt, p, t));
}

/** Did an ACK of connection `k` (any path) carry CE marks within path `p`'s RTO wait before `t`? */
function marked(dev: Device, k: Conn, p: Path, t: u64): bool {
  return recent(dev, k, k.markedAt, p, t);
}

/** Was `at` (0: never) within path `p`'s RTO wait before `t` (`k` its connection)? */
@inline function recent(dev: Device, k: Conn, at: u64, p: Path, t: u64): bool {
  return at != 0 && t - at <= rtoWait(dev, k, p);
}

/** Path of connection `c` failed at `t`: when it was the last one, the give-up bound starts. */
function connMaybeDead(dev: Device, c: u32, t: u64): void {
  const k = connAt(dev, c);
  if (k.deadSince != NEVER) return;
  for (let i: u32 = 0; i < dev.cfg.mrtPaths; i++) if (pathAt(dev, c * dev.cfg.mrtPaths + i).state != PATH_FAILED) return;
  k.deadSince = t;
  wantTimer(dev, c, t + dev.cfg.mrtGiveUpPs);
}

/**
 * Every path of connection `c` has been failed for mrtGiveUpPs: the peer is unreachable. Its
 * streams end as a RoCEv2 QP does when its retries run out (rocev2/rx.ts): the oldest
 * outstanding message with RETRY_EXC_ERR, the rest flushed, the QP in ERR. The failed paths are
 * still probed (a QP connected later may find them back), and the bound starts again for
 * QPs that join the connection while it stays dead.
 */
function connGiveUp(dev: Device, c: u32, t: u64): void {
  statAdd(dev, STAT_MRT_CONNS_GIVEN_UP, 1);
  for (let qpn: u32 = 0; qpn < dev.cfg.maxQps; qpn++) {
    const q = qpAt(dev, qpn);
    if (!streamLive(dev, q, c) || (q.state != QP_STATE_RTR && q.state != QP_STATE_RTS)) continue;
    streamClose(dev, q, qpn);
    giveUp(dev, q, qpn, t);
  }
  rtxCompact(dev, c);
  connAt(dev, c).deadSince = t;
}

/** Puts path `g` on its port's list whatever its state (it has a probe to send). */
function forceList(dev: Device, g: u32, t: u64): void {
  const p = pathAt(dev, g);
  if (!p.listed) {
    p.listed = 1;
    listPush(dev, portLists(dev, p.port), g, false);
  }
  wakePort(dev, p.port, t);
}

/**
 * An ACK of path `g` covered PSNs from `to` - 1 down that the path never sent: the receiver's
 * window was moved there by a forged packet (or the ACK is forged). Nothing it says of this
 * path's packets can be trusted, and every later ACK would say the same, so the path starts
 * afresh beyond it: what is in flight is sent again, and its next PSN (and floor) is `to`.
 * Its window and timers stay: this is no sign of congestion nor of a dead path.
 */
export function pathResync(dev: Device, c: u32, g: u32, to: u32, t: u64): void {
  const p = pathAt(dev, g);
  declareAllLost(dev, c, g, p, STAT_MRT_LOSSES_RESYNC, t);
  p.una = to;
  p.nxt = to;
  if (p.state == PATH_ACTIVE) { p.probing = 0; pathWant(dev, g, t); return; }
  // a suspect or failed path's probe was in flight: another, in the new PSNs, brings it back
  p.probing = 1;
  forceList(dev, g, t);
}

/** Has path `p` as many PSNs out as its record holds? (A new PSN would take the oldest one's slot.) */
@inline function recordFull(p: Path): bool {
  return pdiff(p.nxt, p.una) >= <i32>MRT_PATH_WINDOW;
}

/** Failed path `g`'s unanswered probes are given up: its floor moves to its next PSN (it has no packet out: takeSlot's reason fails the device if it had). */
function forgetProbes(dev: Device, g: u32, p: Path): void {
  for (let psn = p.una; pdiff(psn, p.nxt) < 0; psn++) store<u32>(takeSlot(dev, g, psn), SENT_NONE, 20);
  p.una = p.nxt;
}

/** Every PSN in flight on path `g` is declared lost (counted in `stat`): its packets queue to be sent again, the floor moves up. */
function declareAllLost(dev: Device, c: u32, g: u32, p: Path, stat: u32, t: u64): void {
  const k = connAt(dev, c);
  for (let psn = p.una; pdiff(psn, p.nxt) < 0; psn++) {
    const s = sentAt(dev, g, psn);
    const st = load<u32>(s, 20);
    if (st == SENT_OUT) {
      p.inflight -= load<u32>(s, 16);
      statAdd(dev, stat, 1);
      k.lostAt = t;
      queueRtx(dev, c, load<u32>(s), load<u32>(s, 4), t);
    }
    store<u32>(s, SENT_NONE, 20);
  }
  p.una = p.nxt;
  p.inflight = 0;
}
