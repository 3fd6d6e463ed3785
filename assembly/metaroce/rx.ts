// The MetaRoCE-like transport's receiving side (docs/protocol.md): a DATA packet is checked,
// placed where it says and recorded in its path's window and its stream's bitmap; an ACK moves
// its path's window, declares the holes under what it covers lost, and acknowledges the SSNs
// of the packets it covers, which completes messages in order. Bad frames are counted by
// reason and dropped.

import { Device, statAdd } from "../core/device";
import { NEVER } from "../core/time";
import { Qp, qpAt } from "../nic/verbs";
import { streamOf } from "./stream";
import { dmaPtr } from "../mem/dma";

import { wakePort } from "../nic/ports";
import { qpError } from "../nic/queues";
import { recvPosted, remoteGrants, recvAddr, recvFits, recvComplete } from "../nic/receive";
import {
  OUT_MAX, OUT_WAIT_RESPONSE, OUT_HAVE_LAST, OUT_RESPONSE, outAt, outAck, outDrain, outComplete, outFlush, outAppend, outMsn, outFlags,
  outSetFlags, outRespLast, outSetRespLast,
} from "../nic/outstanding";
import { psnAdd, psnDiff, packetsOf } from "../nic/psn";
import { crc32 } from "../checksum/icrc";
import {
  Path, RxPath, connAt, peerFirst, pathAt, rxPathAt, sentAt, ackedBitmap, placedBitmap, ssnHas, ssnMark, ssnAdvance, recvAt, portSeenAt, pacerOf, pdiff,
  PATH_ACTIVE, PATH_FAILED, SENT_NONE, SENT_OUT, SENT_PROBE, RECV_RING,
} from "./state";
import { owesAck, queueRtx, pathWant, pathResync, streamReady, wantTimer, armPath, connGranted, gapAt, uniform } from "./tx";
import { ccOnAck, ccInit, ccHintRose } from "./cc";
import { rttSample } from "./rto";
import {
  ETH_SIZE, IPV4_SIZE, UDP_SIZE, IPV4_ECN_CE, getIpv4Ecn, getIpv4Src,
  MRT_VERSION, MRT_TYPE_DATA, MRT_TYPE_ACK, MRT_TYPE_PROBE, MRT_FLAG_LAST, MRT_FLAG_ACK_REQ, MRT_FLAG_FIRST, MRT_FLAG_RETX, MRT_FLAG_DRAINED, MRT_OP_WRITE_IMM,
  MRT_OP_SEND, MRT_OP_SEND_IMM, MRT_OP_READ_REQ, MRT_OP_READ_RESP, MRT_PROBE_QP, MRT_STREAM_WINDOW, MRT_PATH_WINDOW, MRT_NAK_RNR, MRT_NAK_REMOTE_ACCESS,
  MRT_NAK_INVALID_REQUEST, MRH_SIZE, MRA_SIZE, MRC_SIZE,
  getMrhVersion, getMrhType, getMrhFlags, getMrhPath, getMrhEpoch, getMrhPsn, getMrhFloor, getMrhOp, getMrhDestQp, getMrhSsn,
  getMrhMsn, getMrhOffset, getMrhLength, getMrhAddr, getMrhRkey, getMrhImm,
  getMraEpoch, getMraCum, getMraSack0, getMraSack1, getMraSack2, getMraSack3, getMraCe,
  getMraHint, getMraNakQp, getMraNakCode, getMraNakSsn,
} from "../generated/headers";
import {
  QP_STATE_RTR, QP_STATE_RTS, ACCESS_REMOTE_WRITE, ACCESS_REMOTE_READ, WQE_LADDR, WQE_LENGTH,
  WQE_SIZE, WQE_OPCODE, OPCODE_RDMA_READ,
  OPCODE_RECV, OPCODE_RDMA_WRITE_WITH_IMM, STATUS_SUCCESS, STATUS_REM_ACCESS_ERR, STATUS_REM_INV_REQ_ERR, STATUS_RNR_RETRY_EXC_ERR,
  STAT_MRT_RX_DATA, STAT_MRT_RX_ACKS, STAT_MRT_RX_PROBES, STAT_MRT_RX_MALFORMED, STAT_MRT_RX_BAD_CRC, STAT_MRT_RX_UNKNOWN,
  STAT_MRT_RX_DUPLICATE, STAT_MRT_RX_BEYOND_WINDOW, STAT_MRT_LOSSES_SACK, STAT_MRT_NAKS_SENT, STAT_MRT_RNR_NAKS, STAT_MRT_NAKS_STRAY,
  STAT_MRT_PATHS_RECOVERED, STAT_MRT_RX_PATH_RESTARTS, STAT_NIC_RNR_RETRIES, STAT_MRT_RX_FLOOR_ABOVE_PSN, STAT_MRT_ACK_CUM_BEYOND_SENT, STAT_MRT_ACK_SACK_BEYOND_SENT,
} from "../generated/layouts";

const HDRS: u32 = ETH_SIZE + IPV4_SIZE + UDP_SIZE;

/**
 * A frame to UDP port MRT_UDP_PORT, its Ethernet, IPv4 and UDP headers already checked (nic/rx.ts):
 * `f` the frame (full mode: all of it; timing mode: its headers), `wire` its length, `hdrLen`
 * the header bytes the record holds, `port` where it arrived.
 */
export function mrtReceive(dev: Device, f: usize, wire: u32, hdrLen: u32, port: u32, full: bool, t: u64): void {
  if (dev.mrt == 0) { statAdd(dev, STAT_MRT_RX_UNKNOWN, 1); return; }
  const h = f + HDRS;
  if (hdrLen < HDRS + 4 || wire < hdrLen + MRC_SIZE) { statAdd(dev, STAT_MRT_RX_MALFORMED, 1); return; }
  const type = getMrhType(h); // the first byte is the same in both headers
  const isAck = type == MRT_TYPE_ACK;
  const size = isAck ? MRA_SIZE : MRH_SIZE;
  if (getMrhVersion(h) != MRT_VERSION || (type != MRT_TYPE_DATA && type != MRT_TYPE_ACK && type != MRT_TYPE_PROBE)
    || hdrLen != HDRS + size || getMrhPath(h) >= dev.cfg.mrtPaths || (type != MRT_TYPE_DATA && wire != hdrLen + MRC_SIZE)) {
    statAdd(dev, STAT_MRT_RX_MALFORMED, 1);
    return;
  }
  if (full && load<u32>(f + wire - MRC_SIZE) != crc32(h, <usize>(wire - HDRS - MRC_SIZE))) { statAdd(dev, STAT_MRT_RX_BAD_CRC, 1); return; }
  // a sender's floor is its oldest PSN in flight: never above the PSN it is sending
  if (!isAck && pdiff(getMrhFloor(h), getMrhPsn(h)) > 0) {
    statAdd(dev, STAT_MRT_RX_MALFORMED, 1);
    statAdd(dev, STAT_MRT_RX_FLOOR_ABOVE_PSN, 1);
    return;
  }
  // the connection: the peer the source address names, on a port its paths use
  const peer = getIpv4Src(f + ETH_SIZE) & 0xffff;
  const k = getMrhPath(h);
  const c = connFind(dev, peer, port, k);
  if (c < 0) { statAdd(dev, STAT_MRT_RX_UNKNOWN, 1); return; }
  const g = <u32>c * dev.cfg.mrtPaths + k;
  if (isAck) { ackIn(dev, <u32>c, g, h, t); return; }
  const ce = getIpv4Ecn(f + ETH_SIZE) == IPV4_ECN_CE;
  if (type == MRT_TYPE_PROBE) {
    if (getMrhDestQp(h) != MRT_PROBE_QP) { statAdd(dev, STAT_MRT_RX_MALFORMED, 1); return; }
    probeRestart(dev, g, h);
    if (!pathAdmit(dev, g, h)) return;
    statAdd(dev, STAT_MRT_RX_PROBES, 1);
    pathRecord(dev, g, h, ce, t);
    owesAck(dev, g, true, t);
    return;
  }
  dataIn(dev, <u32>c, g, h, f + hdrLen, wire - hdrLen - MRC_SIZE, ce, t);
}

/** The connection to `peer` whose path `k` uses `port`, or -1. */
function connFind(dev: Device, peer: u32, port: u32, k: u32): i32 {
  for (let c = peerFirst(dev, peer); c >= 0; c = <i32>connAt(dev, <u32>c).peerNext - 1)
    if (pathAt(dev, <u32>c * dev.cfg.mrtPaths + k).port == port) return c;
  return -1;
}

// ---- receiver

/**
 * Takes the floor the packet carries on path `g`: false when its PSN lies beyond the window
 * (dropped, counted as that alone: a frame moves one receive counter).
 */
function pathAdmit(dev: Device, g: u32, h: usize): bool {
  const r = rxPathAt(dev, g);
  const floor = getMrhFloor(h);
  if (!r.started) { r.started = 1; r.cum = floor; }
  const up = pdiff(floor, r.cum);
  // a floor more than a quarter of the PSN space ahead comes from no sender (a sender's floor is
  // never far from what this receiver acknowledged): not taken, so that the sender, which only
  // follows a window moved at most that far, and this receiver never stand half the space apart,
  // where "ahead" and "behind" cannot be told apart
  if (up > PSN_JUMP_MAX) { statAdd(dev, STAT_MRT_RX_BEYOND_WINDOW, 1); return false; }
  if (up > 0) advanceTo(r, floor);
  if (pdiff(getMrhPsn(h), r.cum) > <i32>MRT_PATH_WINDOW) { statAdd(dev, STAT_MRT_RX_BEYOND_WINDOW, 1); return false; }
  return true;
}

/**
 * A probe whose floor stands more than PSN_JUMP_MAX from the path's cumulative PSN, either way,
 * restarts the path's receive window at the floor. The two ends follow each other's jumps only
 * that far at a time (pathAdmit here, the sender's resynchronisation on an ACK beyond what it
 * sent), so forged frames that move one end twice before the other hears it part them for good:
 * the sender's floor then lies in the receiver's refused band, or the receiver's ACKs beyond
 * any resynchronisation. A probe comes only from a suspect or failed path, after its PSNs in
 * flight were declared lost, so taking its floor loses nothing: a packet taken twice is
 * placed twice at most, the same bytes (its stream's SSN bitmap still drops the copy).
 */
function probeRestart(dev: Device, g: u32, h: usize): void {
  const r = rxPathAt(dev, g);
  if (!r.started) return;
  const floor = getMrhFloor(h);
  const d = pdiff(floor, r.cum);
  if (d <= PSN_JUMP_MAX && d >= -PSN_JUMP_MAX) return;
  statAdd(dev, STAT_MRT_RX_PATH_RESTARTS, 1);
  r.bits0 = 0; r.bits1 = 0; r.bits2 = 0; r.bits3 = 0;
  r.cum = floor;
}

/**
 * The farthest a path's PSNs may jump at once: a receiver's window to a packet's floor, a
 * sender's next PSN to what an ACK covers (a resynchronisation). A quarter of the 32-bit space,
 * so that the two ends never stand half the space apart, where pdiff cannot tell ahead from behind.
 */
const PSN_JUMP_MAX: i32 = 1 << 30;

/** Records PSN psn of path `g` as arrived (pathAdmit took it). */
function pathRecord(dev: Device, g: u32, h: usize, ce: bool, t: u64): void {
  const r = rxPathAt(dev, g);
  const d = pdiff(getMrhPsn(h), r.cum);
  if (d == 0) advanceTo(r, r.cum + 1);
  else if (d > 0) setBit(r, <u32>d - 1);
  r.epoch = getMrhEpoch(h);
  r.unacked++;
  if (ce) r.ce++;
  seen(dev, g / dev.cfg.mrtPaths, pathAt(dev, g).port, getMrhFlags(h), t);
}

/**
 * Connection `c` delivered a packet with `flags` on port `port`: what the port's rate hint counts
 * (tx.ts hintOf). A connection counts from a new message's first packet until its sender's
 * FLAG_DRAINED packet, after which it counts on no port at once instead of for the rest of the
 * hint window: the connections still sending get its share a window sooner. A packet sent before
 * the drained one and arriving after it (another path) does not count it again unless it is the
 * first packet of a message; then it counts until the window forgets it, as it did before.
 */
function seen(dev: Device, c: u32, port: u32, flags: u32, t: u64): void {
  const k = connAt(dev, c);
  if ((flags & MRT_FLAG_DRAINED) != 0) {
    k.drained = 1;
    for (let p: u32 = 0; p < dev.cfg.ports; p++) store<u64>(portSeenAt(dev, p, c), 0);
    return;
  }
  if (k.drained != 0 && (flags & (MRT_FLAG_FIRST | MRT_FLAG_RETX)) == MRT_FLAG_FIRST) k.drained = 0;
  if (k.drained == 0) store<u64>(portSeenAt(dev, port, c), t);
}

@inline function setBit(r: RxPath, i: u32): void {
  const w = changetype<usize>(r) + offsetof<RxPath>("bits0") + <usize>(i >> 6) * 8;
  store<u64>(w, load<u64>(w) | (<u64>1 << (63 - <u64>(i & 63))));
}

/**
 * Moves the path's cumulative PSN up to at least `to`, then on over every PSN that arrived
 * (bit i of the window is PSN cum + 1 + i; cum itself is the first that has not arrived).
 */
function advanceTo(r: RxPath, to: u32): void {
  // past the whole window: every PSN it holds lies below `to`, and `to` itself lies beyond it
  // (so has not arrived). One step, not one per PSN: a floor may jump 2^31 PSNs
  if (pdiff(to, r.cum) > <i32>MRT_PATH_WINDOW + 1) {
    r.bits0 = 0; r.bits1 = 0; r.bits2 = 0; r.bits3 = 0;
    r.cum = to;
    return;
  }
  let cumArrived = false; // has PSN cum arrived? Never at the start, by the invariant
  while (pdiff(to, r.cum) > 0 || cumArrived) {
    cumArrived = (r.bits0 >> 63) != 0; // PSN cum + 1, which becomes cum
    shift(r);
    r.cum++;
  }
}

/** The bitmap one PSN on (its bit 0, PSN cum + 1, drops out; cum moves up by one with it). */
@inline function shift(r: RxPath): void {
  r.bits0 = (r.bits0 << 1) | (r.bits1 >> 63);
  r.bits1 = (r.bits1 << 1) | (r.bits2 >> 63);
  r.bits2 = (r.bits2 << 1) | (r.bits3 >> 63);
  r.bits3 = r.bits3 << 1;
}

/** A DATA packet of connection `c` on path `g`: `payload` bytes at `pl`. */
function dataIn(dev: Device, c: u32, g: u32, h: usize, pl: usize, payload: u32, ce: bool, t: u64): void {
  const op = getMrhOp(h), flags = getMrhFlags(h);
  const off = getMrhOffset(h), len = getMrhLength(h), mtu = dev.cfg.mtuBytes;
  const last = (flags & MRT_FLAG_LAST) != 0;
  // a packet says where it is in its message: every one but the last carries a whole MTU; a
  // READ request is one packet and carries none
  const readReq = op == MRT_OP_READ_REQ;
  if (op > MRT_OP_READ_RESP || payload > mtu || (readReq ? payload != 0 || off != 0 || !last
    : off % mtu != 0 || <u64>off + <u64>payload > <u64>len || (last ? off + payload != len : payload != mtu))) { statAdd(dev, STAT_MRT_RX_MALFORMED, 1); return; }
  const qpn = getMrhDestQp(h);
  if (qpn >= dev.cfg.maxQps) { statAdd(dev, STAT_MRT_RX_UNKNOWN, 1); return; }
  const q = qpAt(dev, qpn), st = streamOf(q);
  if (!q.valid || !q.remote || st.conn != c || (q.state != QP_STATE_RTR && q.state != QP_STATE_RTS)) { statAdd(dev, STAT_MRT_RX_UNKNOWN, 1); return; }
  const ssn = getMrhSsn(h);
  const ds = psnDiff(ssn, st.rcum);
  if (ds >= <i32>MRT_STREAM_WINDOW) { statAdd(dev, STAT_MRT_RX_BEYOND_WINDOW, 1); return; }
  if (!pathAdmit(dev, g, h)) return;
  statAdd(dev, STAT_MRT_RX_DATA, 1);
  const now = (flags & MRT_FLAG_ACK_REQ) != 0;
  if (ds < 0 || ssnHas(placedBitmap(dev, qpn), ssn)) {
    // placed before: a copy sent again while the first was on its way
    statAdd(dev, STAT_MRT_RX_DUPLICATE, 1);
    pathRecord(dev, g, h, ce, t);
    owesAck(dev, g, true, t);
    return;
  }
  if (readReq) { readRequest(dev, c, g, h, q, qpn, ssn, ce, t); return; }
  // where the bytes go
  let dst: u64 = 0;
  const consumes = op == MRT_OP_WRITE_IMM || op == MRT_OP_SEND || op == MRT_OP_SEND_IMM;
  let read: usize = 0;
  let recv: u32 = 0;
  if (consumes) {
    recv = st.recvBase + getMrhMsn(h);
    if (!recvPosted(q, recv) || recv - q.rqCi >= RECV_RING) {
      // its receive is not posted: not placed, not recorded (so sent again), and its sender told to wait
      nak(dev, g, qpn, MRT_NAK_RNR, ssn, t);
      return;
    }
  }
  if (op == MRT_OP_SEND || op == MRT_OP_SEND_IMM) {
    if (recvFits(dev, q, recv, off, payload) != STATUS_SUCCESS) { refuse(dev, g, qpn, MRT_NAK_INVALID_REQUEST, ssn, t); return; }
    dst = recvAddr(dev, q, recv, off);
  } else if (op == MRT_OP_READ_RESP) {
    // its bytes land where our READ of that MSN says (none when the READ is over: a copy late)
    read = readOf(dev, q, qpn, getMrhMsn(h));
    if (read != 0 && <u64>off + <u64>payload > <u64>load<u32>(read + WQE_LENGTH)) { statAdd(dev, STAT_MRT_RX_MALFORMED, 1); return; }
    if (read != 0) dst = load<u64>(read + WQE_LADDR) + <u64>off;
  } else {
    dst = getMrhAddr(h);
    if (!remoteGrants(dev, q, getMrhRkey(h), dst, <u64>payload, ACCESS_REMOTE_WRITE)) { refuse(dev, g, qpn, MRT_NAK_REMOTE_ACCESS, ssn, t); return; }
  }
  pathRecord(dev, g, h, ce, t);
  if (dev.cfg.timingMode == 0 && payload > 0 && (op != MRT_OP_READ_RESP || read != 0)) memory.copy(dmaPtr(dev, dst, <u64>payload), pl, payload);
  q.rxBytes += payload;
  if (read != 0 && last) {
    outSetRespLast(read, ssn);
    outSetFlags(read, outFlags(read) | OUT_HAVE_LAST);
  }
  if (consumes && last) {
    const e = recvAt(dev, qpn, recv);
    store<u32>(e, recv + 1);
    store<u32>(e, ssn, 4);
    store<u32>(e, op, 8);
    store<u32>(e, getMrhImm(h), 12);
    store<u32>(e, len, 16);
  }
  // the stream: this SSN placed, receives and READs complete in order
  streamPlaced(dev, q, qpn, ssn, t);
  ackPolicy(dev, g, now || pdiff(getMrhPsn(h), rxPathAt(dev, g).cum) >= 0, t);
}

/** SSN `ssn` of stream `q` is placed: the cumulative SSN moves over what is placed, and receives and READs whose messages are whole complete. */
function streamPlaced(dev: Device, q: Qp, qpn: u32, ssn: u32, t: u64): void {
  const map = placedBitmap(dev, qpn);
  ssnMark(map, ssn);
  const st = streamOf(q);
  st.rcum = ssnAdvance(map, st.rcum);
  completeReceives(dev, q, qpn, t);
  readsDone(dev, q, qpn, t);
}

/** Our outstanding READ whose MSN is `msn` and whose response is still coming, or 0. */
function readOf(dev: Device, q: Qp, qpn: u32, msn: u32): usize {
  for (let k: u32 = 0; k < q.outCount; k++) {
    const e = outAt(dev, q, qpn, k);
    if ((outFlags(e) & OUT_WAIT_RESPONSE) != 0 && outMsn(e) == msn) return e;
  }
  return 0;
}

/** READs whose response is placed whole stop waiting: they complete in order with the rest. */
function readsDone(dev: Device, q: Qp, qpn: u32, t: u64): void {
  let any = false;
  for (let k: u32 = 0; k < q.outCount; k++) {
    const e = outAt(dev, q, qpn, k);
    const f = outFlags(e);
    if ((f & (OUT_WAIT_RESPONSE | OUT_HAVE_LAST)) != (OUT_WAIT_RESPONSE | OUT_HAVE_LAST) || psnDiff(streamOf(q).rcum, outRespLast(e)) <= 0) continue;
    outSetFlags(e, f & ~OUT_WAIT_RESPONSE);
    any = true;
  }
  if (any) outAck(dev, q, qpn, psnAdd(streamOf(q).una, 0xffffff), t);
}

/**
 * A READ request for stream `q`: the bytes it names are checked and sent back as a message of
 * our own stream to the requester (its MSN the request's), which our sender reliably delivers.
 */
function readRequest(dev: Device, c: u32, g: u32, h: usize, q: Qp, qpn: u32, ssn: u32, ce: bool, t: u64): void {
  const addr = getMrhAddr(h), len = getMrhLength(h);
  if (!remoteGrants(dev, q, getMrhRkey(h), addr, <u64>len, ACCESS_REMOTE_READ)) { refuse(dev, g, qpn, MRT_NAK_REMOTE_ACCESS, ssn, t); return; }
  // no room among our outstanding messages: not taken, and its sender told to wait
  if (q.outCount >= OUT_MAX) { nak(dev, g, qpn, MRT_NAK_RNR, ssn, t); return; }
  pathRecord(dev, g, h, ce, t);
  const e = outAt(dev, q, qpn, q.outCount);
  memory.fill(e, 0, <usize>WQE_SIZE);
  store<u8>(e + WQE_OPCODE, <u8>OPCODE_RDMA_READ);
  store<u64>(e + WQE_LADDR, addr);
  store<u32>(e + WQE_LENGTH, len);
  const first = q.sqPsn, last = psnAdd(first, packetsOf(len, dev.cfg.mtuBytes) - 1);
  q.sqPsn = psnAdd(last, 1);
  outAppend(dev, q, qpn, e, first, last, getMrhMsn(h), OUT_RESPONSE);
  streamReady(dev, q, qpn, t);
  streamPlaced(dev, q, qpn, ssn, t);
  owesAck(dev, g, true, t);
}

/** The receives whose messages are placed whole complete, in order. */
function completeReceives(dev: Device, q: Qp, qpn: u32, t: u64): void {
  while (q.rqCi != q.rqPi) {
    const e = recvAt(dev, qpn, q.rqCi);
    if (load<u32>(e) != q.rqCi + 1 || psnDiff(streamOf(q).rcum, load<u32>(e, 4)) <= 0) return;
    const op = load<u32>(e, 8);
    store<u32>(e, 0);
    const imm = op == MRT_OP_WRITE_IMM || op == MRT_OP_SEND_IMM;
    const rxOp = op == MRT_OP_WRITE_IMM ? OPCODE_RDMA_WRITE_WITH_IMM : OPCODE_RECV;
    if (!recvComplete(dev, q, qpn, load<u32>(e, 16), load<u32>(e, 12), imm, rxOp, t)) return;
  }
}

/** ACK at once when asked, or when the packet left a hole; else after mrtAckEvery packets or the ACK delay. */
function ackPolicy(dev: Device, g: u32, now: bool, t: u64): void {
  owesAck(dev, g, now || rxPathAt(dev, g).unacked >= dev.cfg.mrtAckEvery, t);
}

/**
 * A packet the receiver will not take, for a reason its sender must hear: NAKed, and not recorded
 * (as an RNR one is not). Its PSN is never acknowledged, so its sender cannot take it as placed:
 * the ACK carrying the NAK ends its message with an error; if that ACK is lost, the sender finds
 * the packet missing, sends it again, and it is refused again.
 */
function refuse(dev: Device, g: u32, qpn: u32, code: u32, ssn: u32, t: u64): void {
  nak(dev, g, qpn, code, ssn, t);
}

function nak(dev: Device, g: u32, qpn: u32, code: u32, ssn: u32, t: u64): void {
  const r = rxPathAt(dev, g);
  r.nakQp = qpn;
  r.nakCode = code;
  r.nakSsn = ssn;
  statAdd(dev, STAT_MRT_NAKS_SENT, 1);
  owesAck(dev, g, true, t);
}

// ---- sender: an ACK

/** Is PSN `psn` covered by an ACK of cumulative PSN `cum` and SACK words s0..s3? */
@inline function covered(psn: u32, cum: u32, s0: u64, s1: u64, s2: u64, s3: u64): bool {
  const d = pdiff(psn, cum);
  if (d < 0) return true;
  if (d == 0 || d > <i32>MRT_PATH_WINDOW) return false;
  const i = <u32>d - 1;
  const w = i < 64 ? s0 : i < 128 ? s1 : i < 192 ? s2 : s3;
  return ((w >> (63 - <u64>(i & 63))) & 1) != 0;
}

/** The highest PSN an ACK covers (cum - 1 when its SACK is empty). */
function highestCovered(cum: u32, s0: u64, s1: u64, s2: u64, s3: u64): u32 {
  if (s3 != 0) return cum + 1 + 192 + 63 - <u32>ctz(s3);
  if (s2 != 0) return cum + 1 + 128 + 63 - <u32>ctz(s2);
  if (s1 != 0) return cum + 1 + 64 + 63 - <u32>ctz(s1);
  if (s0 != 0) return cum + 1 + 63 - <u32>ctz(s0);
  return cum - 1;
}

function ackIn(dev: Device, c: u32, g: u32, h: usize, t: u64): void {
  const p = pathAt(dev, g), k = connAt(dev, c);
  if (getMraEpoch(h) != (p.epoch & 0xff)) { statAdd(dev, STAT_MRT_RX_UNKNOWN, 1); return; } // from before the path came back
  const cum = getMraCum(h);
  const s0 = getMraSack0(h), s1 = getMraSack1(h), s2 = getMraSack2(h), s3 = getMraSack3(h);
  const high = highestCovered(cum, s0, s1, s2, s3);
  // what it covers cannot lie beyond what was sent: dropped, and the path resynchronised past it,
  // only ever forward: with cum almost 2^31 from the next PSN, cum reads as beyond while the
  // highest PSN covered (cum and its SACK read together) lies behind, and moving the path back
  // would send PSNs again that an ACK still on its way may cover (a completion without its data)
  const cumBeyond = pdiff(cum, p.nxt) > 0;
  if (cumBeyond || pdiff(high, p.nxt) >= 0) {
    statAdd(dev, STAT_MRT_RX_MALFORMED, 1);
    statAdd(dev, cumBeyond ? STAT_MRT_ACK_CUM_BEYOND_SENT : STAT_MRT_ACK_SACK_BEYOND_SENT, 1);
    const jump = pdiff(high + 1, p.nxt);
    if (jump > 0 && jump <= PSN_JUMP_MAX) pathResync(dev, c, g, high + 1, t);
    return;
  }
  statAdd(dev, STAT_MRT_RX_ACKS, 1);
  let pkts: u32 = 0, bytes: u32 = 0, heard = false;
  let sample: f64 = -1;
  // a NAK names a packet the receiver did not take (refused, or not ready): it arrived, so it
  // leaves the window as no loss, and it is never acknowledged to its stream. A NAK naming no
  // packet this path has in flight is not acted on (its packet was found missing meanwhile and
  // its copy will be answered, or the NAK is forged): a stream fails only for what it sent.
  const code = getMraNakCode(h);
  let naked = code != 0 ? nakedStream(dev, c, getMraNakQp(h)) : NO_STREAM;
  const nakSsn = getMraNakSsn(h);
  const s = naked != NO_STREAM ? unsent(dev, g, p, naked, nakSsn) : 0;
  if (s != 0) {
    heard = true;
    sample = <f64>(t - load<u64>(s, 8));
  } else if (code != 0) {
    // no stream of ours sends to the QP it names, or no packet of it is in flight here
    statAdd(dev, STAT_MRT_NAKS_STRAY, 1);
    naked = NO_STREAM;
  }
  // PSNs above the highest it covers are neither acknowledged nor lost yet
  for (let psn = p.una; pdiff(psn, p.nxt) < 0 && pdiff(psn, high) <= 0; psn++) {
    const s = sentAt(dev, g, psn);
    const st = load<u32>(s, 20);
    if (st == SENT_NONE) continue;
    if (covered(psn, cum, s0, s1, s2, s3)) {
      heard = true;
      sample = <f64>(t - load<u64>(s, 8));
      store<u32>(s, SENT_NONE, 20);
      if (st == SENT_PROBE) continue;
      const n = load<u32>(s, 16);
      p.inflight -= n;
      pkts++;
      bytes += n;
      acked(dev, c, load<u32>(s), load<u32>(s, 4), t);
    } else if (pdiff(psn, high) < 0) {
      // a hole under what arrived: paths do not reorder, so it is lost
      store<u32>(s, SENT_NONE, 20);
      if (st == SENT_PROBE) continue;
      p.inflight -= load<u32>(s, 16);
      statAdd(dev, STAT_MRT_LOSSES_SACK, 1);
      k.lostAt = t;
      queueRtx(dev, c, load<u32>(s), load<u32>(s, 4), t);
    }
  }
  while (pdiff(p.una, p.nxt) < 0 && load<u32>(sentAt(dev, g, p.una), 20) == SENT_NONE) p.una++;
  if (sample >= 0) rttSample(dev, k, p, sample);
  // the receiver's fair share on this port, split over the connection's paths there
  const hint = getMraHint(h), before = p.hintGbps, granted = k.hintGbps > 0;
  p.hintGbps = hint == 0 ? 0 : <f64>hint / 65535 * <f64>dev.cfg.portGbps / <f64>p.portShare;
  if (hint != 0) {
    k.hintGbps = p.hintGbps;
    // the hint is the connection's share of the receiver's port: every path of it that leaves
    // on the same port hears it now, not at its own next ACK (a path told a small share sends
    // seldom, and would keep it for long)
    for (let i: u32 = 0; i < dev.cfg.mrtPaths; i++) {
      const o = pathAt(dev, c * dev.cfg.mrtPaths + i);
      if (o !== p && o.port == p.port && o.hintGbps > 0) o.hintGbps = p.hintGbps;
    }
    hear(dev, pacerOf(dev, g), p.portShare, before, p.hintGbps, t);
  }
  ccOnAck(dev, p, pkts, bytes, getMraCe(h), sample);
  if (getMraCe(h) != 0) k.markedAt = t;
  if (!granted && hint != 0) connGranted(dev, c, p.baseRtt > 0 ? p.baseRtt : k.srtt, t);
  else if (getMraCe(h) == 0) ccHintRose(dev, p, before);
  if (heard) {
    k.heardAt = t;
    p.lastHeard = t;
    p.rtos = 0;
    p.probing = 0;
    p.probes = 0;
    if (p.state != PATH_ACTIVE) {
      if (p.state == PATH_FAILED) {
        statAdd(dev, STAT_MRT_PATHS_RECOVERED, 1);
        k.deadSince = NEVER; // one path is back: no give-up
        ccInit(dev, p);
        p.epoch = (p.epoch + 1) & 0xff;
      }
      p.state = PATH_ACTIVE;
    }
  }
  if (naked != NO_STREAM) nakIn(dev, c, naked, code, nakSsn, t);
  pathWant(dev, g, t);
  armPath(dev, c, p);
  // the paths with no RTT sample of their own time out by the connection's estimate and hint, which this ACK moved
  if (k.sampled < dev.cfg.mrtPaths) {
    for (let i: u32 = 0; i < dev.cfg.mrtPaths; i++) {
      const o = pathAt(dev, c * dev.cfg.mrtPaths + i);
      if (o.srtt == 0) armPath(dev, c, o);
    }
  }
}

/**
 * The connection paced by path `p` (pacerOf; `share` of its paths on that port) hears a hint of
 * `gbps` per path at `t`, after `before`: its next packet goes at a random point of one gap at the
 * new rate from now. Kept at the old gap, a connection told a small share waited long; kept in
 * phase with its last packet, the senders of an incast bunched: 256 of them held 260 KB in front
 * of the port once every gap (10.8 us) to the end (seeds 91001, 91003 to 91005).
 */
function hear(dev: Device, p: Path, share: u32, before: f64, gbps: f64, t: u64): void {
  if (before <= 0 || gbps <= 0 || gbps == before || p.nextTxAt == 0) return;
  const was = p.nextTxAt;
  p.nextTxAt = t + <u64>(gapAt(dev, gbps, share) * uniform(dev));
  if (p.nextTxAt < was) wakePort(dev, p.port, p.nextTxAt); // its port may sleep until the old time
}

const NO_STREAM: u32 = 0xffffffff;

/** Our stream of connection `c` sending to the receiver's QP `destQpn` (what a NAK names), or NO_STREAM. */
function nakedStream(dev: Device, c: u32, destQpn: u32): u32 {
  for (let qpn: u32 = 0; qpn < dev.cfg.maxQps; qpn++) {
    const q = qpAt(dev, qpn);
    if (q.valid && q.remote && streamOf(q).conn == c && q.destQpn == destQpn) return qpn;
  }
  return NO_STREAM;
}

/**
 * The packet of stream `qpn`, SSN `ssn`, that path `g` has in flight leaves the window without
 * being acknowledged or counted lost (the receiver NAKed it). Its record, or 0 if none is in flight.
 */
function unsent(dev: Device, g: u32, p: Path, qpn: u32, ssn: u32): usize {
  for (let psn = p.una; pdiff(psn, p.nxt) < 0; psn++) {
    const s = sentAt(dev, g, psn);
    const st = load<u32>(s, 20);
    if (st != SENT_OUT || load<u32>(s) != qpn || load<u32>(s, 4) != ssn) continue;
    store<u32>(s, SENT_NONE, 20);
    p.inflight -= load<u32>(s, 16);
    return s;
  }
  return 0;
}

/** SSN `ssn` of stream `qpn` arrived: the stream's oldest unacknowledged SSN moves, and messages it passes are acknowledged. */
function acked(dev: Device, c: u32, qpn: u32, ssn: u32, t: u64): void {
  if (qpn >= dev.cfg.maxQps) return;
  const q = qpAt(dev, qpn);
  const st = streamOf(q);
  if (!q.valid || !q.remote || st.conn != c) return;
  const d = psnDiff(ssn, st.una);
  if (d < 0 || d >= <i32>MRT_STREAM_WINDOW) return;
  const map = ackedBitmap(dev, qpn);
  ssnMark(map, ssn);
  if (d != 0) return;
  st.una = ssnAdvance(map, st.una);
  // progress: the RNR budget is whole again (as RoCEv2's is when an ACK moves its outstanding messages)
  q.rnrLeft = dev.cfg.rnrRetries;
  outAck(dev, q, qpn, psnAdd(st.una, 0xffffff), t);
  if (q.rtxActive) streamReady(dev, q, qpn, t); // its window moved on
}

/** The receiver did not take SSN `ssn` of our stream `qpn`, which was in flight: not ready (RNR), or refused for good. */
function nakIn(dev: Device, c: u32, qpn: u32, code: u32, ssn: u32, t: u64): void {
  const q = qpAt(dev, qpn);
  if (code == MRT_NAK_RNR) {
    statAdd(dev, STAT_MRT_RNR_NAKS, 1);
    const st = streamOf(q);
    if (st.rnrAt <= t) {
      // a new hold: one retry of the RNR budget
      if (q.rnrLeft == 0) { failMessages(dev, q, qpn, STATUS_RNR_RETRY_EXC_ERR, t); return; }
      q.rnrLeft--;
      statAdd(dev, STAT_NIC_RNR_RETRIES, 1);
      st.rnrAt = t + dev.cfg.rnrTimerPs;
      wantTimer(dev, c, st.rnrAt);
    }
    // sent again once the hold is over (the retransmit ring skips a held stream)
    queueRtx(dev, c, qpn, ssn, t);
    return;
  }
  failMessages(dev, q, qpn, code == MRT_NAK_REMOTE_ACCESS ? STATUS_REM_ACCESS_ERR : STATUS_REM_INV_REQ_ERR, t);
}

/** The stream's oldest unfinished message ends with `status`, the ones after it are flushed, the QP goes to error. */
function failMessages(dev: Device, q: Qp, qpn: u32, status: u32, t: u64): void {
  outDrain(dev, q, qpn, t, true);
  if (q.outCount > 0) outComplete(dev, q, qpn, status, t);
  outFlush(dev, qpn, t);
  qpError(dev, qpn, t);
}
