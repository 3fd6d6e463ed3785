// The receive side of verbs, one module for every responder: the loopback one (nic/responder.ts),
// RoCEv2's (rocev2/rx.ts) and the MetaRoCE-like transport's (metaroce/rx.ts). What a request may
// do to this device's memory (its remote key), what a SEND may put into the receive it fills
// (length, local key), and how a receive completes or fails (IB spec 9.9.3: a receive that cannot
// take its SEND completes in error, counted as nic.errors, and its QP goes to error). Each
// responder decides when (per packet or per message) and what its peer is told: the
// MetaRoCE-like one refuses a sprayed packet its receive cannot take with a NAK and fails nothing
// here (docs/protocol.md, Receiver).

import { Device, statAdd } from "../core/device";
import { Qp, rqSlot, mrCheck } from "./verbs";
import { cqPush } from "./completions";
import { qpError } from "./queues";
import {
  OPCODE_RECV, STATUS_SUCCESS, STATUS_LOC_LEN_ERR, STATUS_LOC_PROT_ERR, ACCESS_LOCAL_WRITE,
  WQE_WR_ID, WQE_LADDR, WQE_LENGTH, WQE_LKEY, STAT_NIC_ERRORS,
} from "../generated/layouts";

/** Is receive number `i` (counting every receive posted to QP `q`) posted and not yet completed? */
@inline export function recvPosted(q: Qp, i: u32): bool {
  return i - q.rqCi < q.rqPi - q.rqCi;
}

/** Does remote key `rkey` grant QP `q`'s peer `access` (ACCESS_REMOTE_*) to `len` bytes at `addr`? */
@inline export function remoteGrants(dev: Device, q: Qp, rkey: u32, addr: u64, len: u64, access: u32): bool {
  return mrCheck(dev, rkey, true, q.pd, addr, len, access);
}

/** Where byte `off` of receive number `i` of QP `q` lands. */
@inline export function recvAddr(dev: Device, q: Qp, i: u32, off: u32): u64 {
  return load<u64>(rqSlot(dev, q, i) + WQE_LADDR) + <u64>off;
}

/** The length of receive number `i` of QP `q`. */
@inline export function recvLength(dev: Device, q: Qp, i: u32): u32 {
  return load<u32>(rqSlot(dev, q, i) + WQE_LENGTH);
}

/**
 * Can `len` bytes of a SEND land at byte `off` of receive number `i` of QP `q`? STATUS_SUCCESS,
 * STATUS_LOC_LEN_ERR (past the receive's end) or STATUS_LOC_PROT_ERR (its local key does not
 * grant them).
 */
export function recvFits(dev: Device, q: Qp, i: u32, off: u32, len: u32): u32 {
  const r = rqSlot(dev, q, i);
  if (<u64>off + <u64>len > <u64>load<u32>(r + WQE_LENGTH)) return STATUS_LOC_LEN_ERR;
  const dst = load<u64>(r + WQE_LADDR) + <u64>off;
  if (!mrCheck(dev, load<u32>(r + WQE_LKEY), false, q.pd, dst, <u64>len, ACCESS_LOCAL_WRITE)) return STATUS_LOC_PROT_ERR;
  return STATUS_SUCCESS;
}

/**
 * The oldest receive of QP `qpn` completes: `byteLen` bytes, `op` (OPCODE_RECV, or
 * OPCODE_RDMA_WRITE_WITH_IMM for the receive a WRITE with immediate consumes), its immediate if
 * `withImm`. False when its CQ had no room: the QP is then in error.
 */
export function recvComplete(dev: Device, q: Qp, qpn: u32, byteLen: u32, imm: u32, withImm: bool, op: u32, t: u64): bool {
  const r = rqSlot(dev, q, q.rqCi);
  q.rqCi++;
  if (cqPush(dev, q.recvCq, t, load<u64>(r + WQE_WR_ID), byteLen, imm, withImm, qpn, STATUS_SUCCESS, op)) return true;
  qpError(dev, qpn, t);
  return false;
}

/**
 * The oldest receive of QP `qpn` fails with `status` (a local error: counted as nic.errors). The
 * caller then puts the QP in error (qpError), after telling its peer if it does.
 */
export function recvFail(dev: Device, q: Qp, qpn: u32, status: u32, t: u64): void {
  const r = rqSlot(dev, q, q.rqCi);
  q.rqCi++;
  cqPush(dev, q.recvCq, t, load<u64>(r + WQE_WR_ID), 0, 0, false, qpn, status, OPCODE_RECV);
  statAdd(dev, STAT_NIC_ERRORS, 1);
}
