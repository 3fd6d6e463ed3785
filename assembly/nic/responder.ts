// The responder half of the NIC: what a QP does with the request packets that reach it. It
// checks each against the QP's state, its memory keys and its posted receives, places the
// bytes, completes its own side (the receive a SEND or WRITE_WITH_IMM consumes) and answers.
// A QP that is not ready to receive (not RTR or RTS, or gone) stays silent: the requester's
// transport timer tells it so. Errors follow the IB spec: a bad remote key is a remote access
// error with nothing consumed; a SEND too long for its receive or into a receive with a bad
// key fails that receive too, and the QP goes to error (IB spec 9.9.3).

import { Device } from "../core/device";
import { qpAt } from "./verbs";
import { dmaPtr } from "../mem/dma";
import { qpError } from "./queues";
import { recvPosted, remoteGrants, recvAddr, recvFits, recvComplete, recvFail } from "./receive";
import { Packet, PacketKind } from "./packet";
import {
  OPCODE_RDMA_WRITE, OPCODE_RDMA_WRITE_WITH_IMM, OPCODE_SEND, OPCODE_RDMA_READ, OPCODE_RECV,
  STATUS_SUCCESS, STATUS_LOC_LEN_ERR, STATUS_REM_INV_REQ_ERR, STATUS_REM_ACCESS_ERR, STATUS_REM_OP_ERR,
  STATUS_RNR_RETRY_EXC_ERR, ACCESS_REMOTE_WRITE, ACCESS_REMOTE_READ, QP_STATE_RTR, QP_STATE_RTS,
} from "../generated/layouts";

@inline function answer(a: Packet, p: Packet, kind: PacketKind, status: u32): bool {
  a.kind = kind;
  a.op = p.op;
  a.srcQpn = p.destQpn;
  a.destQpn = p.srcQpn;
  a.status = status;
  a.length = p.length;
  return true;
}

/**
 * Request packet `p` reached QP p.destQpn at `t`. Fills answer `a` and returns true, or
 * returns false when the QP stays silent.
 */
export function respond(dev: Device, p: Packet, t: u64, a: Packet): bool {
  const qpn = p.destQpn;
  if (qpn >= dev.cfg.maxQps) return false;
  const d = qpAt(dev, qpn);
  if (!d.valid || (d.state != QP_STATE_RTR && d.state != QP_STATE_RTS)) return false;
  const op = p.op;
  const len = <u64>p.length;
  const isRead = op == OPCODE_RDMA_READ;
  if (op == OPCODE_RDMA_WRITE || op == OPCODE_RDMA_WRITE_WITH_IMM || isRead) {
    if (!remoteGrants(dev, d, p.rkey, p.raddr, len, isRead ? ACCESS_REMOTE_READ : ACCESS_REMOTE_WRITE)) return answer(a, p, PacketKind.Nak, STATUS_REM_ACCESS_ERR);
  }
  const consumesRecv = !isRead && op != OPCODE_RDMA_WRITE;
  // SEND, SEND_WITH_IMM and WRITE_WITH_IMM consume the next posted receive
  if (consumesRecv && !recvPosted(d, d.rqCi)) return answer(a, p, PacketKind.Nak, STATUS_RNR_RETRY_EXC_ERR);
  const isSend = consumesRecv && op != OPCODE_RDMA_WRITE_WITH_IMM;
  const dst = isSend ? recvAddr(dev, d, d.rqCi, 0) : p.raddr;
  if (p.kind == PacketKind.ReqFirst) {
    answer(a, p, PacketKind.Accept, STATUS_SUCCESS);
    a.placeAddr = dst;
    return true;
  }
  // ReqLast: the receive is chosen now, so two requesters each fill their own
  if (isSend) {
    const fits = recvFits(dev, d, d.rqCi, 0, p.length);
    if (fits != STATUS_SUCCESS) {
      recvFail(dev, d, qpn, fits, t);
      qpError(dev, qpn, t);
      return answer(a, p, PacketKind.Nak, fits == STATUS_LOC_LEN_ERR ? STATUS_REM_INV_REQ_ERR : STATUS_REM_OP_ERR);
    }
  }
  if (isRead) {
    answer(a, p, PacketKind.ReadResponse, STATUS_SUCCESS);
    a.payload = p.raddr;
    return true;
  }
  if (len > 0) memory.copy(dmaPtr(dev, dst, len), dmaPtr(dev, p.payload, len), <usize>len);
  if (consumesRecv) recvComplete(dev, d, qpn, p.length, p.imm, op != OPCODE_SEND, op == OPCODE_RDMA_WRITE_WITH_IMM ? OPCODE_RDMA_WRITE_WITH_IMM : OPCODE_RECV, t);
  return answer(a, p, PacketKind.Ack, STATUS_SUCCESS);
}
