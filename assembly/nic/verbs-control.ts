// Control-path verbs that change queue pairs and completion queues (ibv_create_qp,
// ibv_modify_qp, ibv_destroy_qp, ibv_destroy_cq). They act at once: the driver's own time is
// not modelled. State transitions follow IB spec 10.3.1 for the states this NIC has.

import { Device } from "../core/device";
import { Qp, qpAt, cqAt, pdValid, OWNER_HOST, NOT_ARMED } from "./verbs";
import { dmaPtr } from "../mem/dma";
import { startNextRequest } from "./requester";
import { qpError, qpReset } from "./queues";
import { dbqDeliverFor } from "./doorbells";
import { transportConnect, transportClose, transportReset } from "./transport";
import { unschedule, EventKind } from "../core/sched";
import { portSplit, qpPortIn } from "./port-groups";
import { groupFirst, groupCount } from "./ports";
import {
  CMD_ERR_NO_OBJECT, CMD_ERR_TRANSITION, CMD_ERR_IN_USE, CMD_ERR_ARGUMENT, QP_STATE_RESET, QP_STATE_INIT, QP_STATE_RTR, QP_STATE_RTS, QP_STATE_ERR, WQE_SIZE, MAX_QUEUE_DEPTH, PORT_LANE_AUTO,
} from "../generated/layouts";

// results: a number, or a negative CMD_ERR (layouts/verbs.json), which firmware reads too
export const E_OK: i32 = 0;
export const E_NO_OBJECT: i32 = CMD_ERR_NO_OBJECT;
export const E_TRANSITION: i32 = CMD_ERR_TRANSITION;
export const E_IN_USE: i32 = CMD_ERR_IN_USE;
export const E_ARGUMENT: i32 = CMD_ERR_ARGUMENT;

export function qpCreate(dev: Device, pd: u32, sendCq: u32, recvCq: u32, sqBase: u64, sqDepth: u32, rqBase: u64, rqDepth: u32, owner: u32, sigAll: u32): i32 {
  if (!pdValid(dev, pd)) return E_NO_OBJECT;
  if (sendCq >= dev.cfg.maxCqs || !cqAt(dev, sendCq).valid || recvCq >= dev.cfg.maxCqs || !cqAt(dev, recvCq).valid) return E_NO_OBJECT;
  if (sqDepth == 0 || sqDepth > MAX_QUEUE_DEPTH || rqDepth == 0 || rqDepth > MAX_QUEUE_DEPTH) return E_ARGUMENT;
  if (owner != OWNER_HOST && owner >= dev.cfg.engines) return E_ARGUMENT;
  if (dmaPtr(dev, sqBase, <u64>sqDepth * WQE_SIZE) == 0 || dmaPtr(dev, rqBase, <u64>rqDepth * WQE_SIZE) == 0) return E_ARGUMENT;
  for (let i: u32 = 0; i < dev.cfg.maxQps; i++) {
    const q = qpAt(dev, i);
    if (q.valid) continue;
    memory.fill(changetype<usize>(q), 0, offsetof<Qp>()); // the transports' areas in it too
    q.valid = 1;
    q.state = QP_STATE_RESET;
    q.pd = pd;
    q.sendCq = sendCq;
    q.recvCq = recvCq;
    q.sqBase = sqBase;
    q.sqDepth = sqDepth;
    q.rqBase = rqBase;
    q.rqDepth = rqDepth;
    q.owner = owner;
    q.sigAll = sigAll;
    q.waitBlock = NOT_ARMED;
    return <i32>i;
  }
  return E_NO_OBJECT;
}

/**
 * Moves QP `qpn` to `state`. At RTR it learns its destination: QP `destQpn` of device
 * `destDevice` (this device's cfg.deviceId: loopback; another: RoCEv2 through a port of
 * `portGroup`, PORT_GROUP_*: port `lane` mod the group's size within it, or with
 * PORT_LANE_AUTO (qpn + destQpn) mod the size, which both ends of a pair compute alike).
 */
export function qpModify(dev: Device, qpn: u32, state: u32, destQpn: u32, destDevice: u32, portGroup: u32, lane: u32 = PORT_LANE_AUTO): i32 {
  if (qpn >= dev.cfg.maxQps || !qpAt(dev, qpn).valid) return E_NO_OBJECT;
  const q = qpAt(dev, qpn);
  const from = q.state;
  const t = dev.now;
  // the command comes after the doorbells written before it
  dbqDeliverFor(dev, qpn, t);
  if (state == QP_STATE_ERR) { qpError(dev, qpn, t); return E_OK; }
  if (state == QP_STATE_RESET) {
    if (q.busy) return E_IN_USE;
    qpReset(dev, qpn);
    transportReset(dev, q);
    return E_OK;
  }
  const ok = (from == QP_STATE_RESET && state == QP_STATE_INIT) || (from == QP_STATE_INIT && state == QP_STATE_RTR)
    || (from == QP_STATE_RTR && state == QP_STATE_RTS) || (from == state && from != QP_STATE_ERR);
  if (!ok) return E_TRANSITION;
  if (state == QP_STATE_RTR) {
    const remote = destDevice != dev.cfg.deviceId;
    // a remote QP number is the other device's business: any 24-bit number
    if (destQpn >= (remote ? <u32>0x1000000 : dev.cfg.maxQps) || destDevice > 0xffff) return E_ARGUMENT;
    if (remote) {
      const up = portSplit(dev);
      const first = groupFirst(portGroup, up);
      const count = groupCount(portGroup, up, dev.cfg.ports);
      if (count == 0) return E_ARGUMENT;
      // both ends of the pair compute the same port (and so the same plane) from the two numbers
      q.port = qpPortIn(qpn, destQpn, lane, first, count);
      q.group = portGroup;
      q.lane = lane;
      // the MetaRoCE-like transport: the QP is a stream of the connection to that device, refused
      // when the connection table is full (mrtConnections)
      if (!transportConnect(dev, q, qpn, destDevice, portGroup, first, count)) return E_ARGUMENT;
    }
    q.destQpn = destQpn;
    q.destDevice = destDevice;
    q.remote = remote ? 1 : 0;
  }
  q.state = state;
  if (state == QP_STATE_RTS) startNextRequest(dev, qpn, t);
  return E_OK;
}

/**
 * Destroys a QP: it goes to ERR first, so every posted entry completes once, in order (a request
 * in flight with the outcome it has, or WR_FLUSH_ERR; the rest with WR_FLUSH_ERR).
 */
export function qpDestroy(dev: Device, qpn: u32): i32 {
  if (qpn >= dev.cfg.maxQps || !qpAt(dev, qpn).valid) return E_NO_OBJECT;
  const q = qpAt(dev, qpn);
  const t = dev.now;
  dbqDeliverFor(dev, qpn, t);
  qpError(dev, qpn, t);
  transportClose(dev, q, qpn);
  if (q.startNextPending) {
    // a QP created in this slot starts with no event pending
    unschedule(dev, EventKind.NicStartNext, qpn);
    q.startNextPending = 0;
  }
  q.valid = 0;
  return E_OK;
}

export function cqDestroy(dev: Device, cqn: u32): i32 {
  if (cqn >= dev.cfg.maxCqs || !cqAt(dev, cqn).valid) return E_NO_OBJECT;
  for (let i: u32 = 0; i < dev.cfg.maxQps; i++) {
    const q = qpAt(dev, i);
    if (q.valid && (q.sendCq == cqn || q.recvCq == cqn)) return E_IN_USE;
  }
  cqAt(dev, cqn).valid = 0;
  return E_OK;
}
