// The NIC's local operations, which run on a send queue like transfers but have no responder:
// COPY between two of the QP's own regions, and REDUCE of 2..8 HBM sources into an HBM
// destination on a reduction block (mem/reduce.ts holds the arithmetic).

import { nicOf } from "./state";
import { Device } from "../core/device";
import { Qp, qpAt, mrCheck, OWNER_HOST, NOT_ARMED } from "./verbs";
import { dmaPtr, dmaIsHbm } from "../mem/dma";
import { reduceKernel, reduceElementBytes, reduceOpKnown } from "../mem/reduce";
import {
  STATUS_SUCCESS, STATUS_LOC_LEN_ERR, STATUS_LOC_QP_OP_ERR, STATUS_LOC_PROT_ERR, ACCESS_LOCAL_WRITE,
  WQE_DTYPE, WQE_REDOP, WQE_LADDR, WQE_LENGTH, WQE_LKEY, WQE_RADDR, WQE_RKEY, WQE_NSRC, WQE_SRC_ADDR, WQE_SRC_LKEY, WQE_SRC_ADDR_STRIDE,
} from "../generated/layouts";

export const REDUCE_MAX_SOURCES: u32 = 8;

/** Checks a COPY from [raddr, +len) under rkey (a local key here) to [laddr, +len) under lkey. */
export function checkCopy(dev: Device, q: Qp, w: usize): u32 {
  const len = <u64>load<u32>(w + WQE_LENGTH);
  if (!mrCheck(dev, load<u32>(w + WQE_RKEY), false, q.pd, load<u64>(w + WQE_RADDR), len, 0)) return STATUS_LOC_PROT_ERR;
  if (!mrCheck(dev, load<u32>(w + WQE_LKEY), false, q.pd, load<u64>(w + WQE_LADDR), len, ACCESS_LOCAL_WRITE)) return STATUS_LOC_PROT_ERR;
  return STATUS_SUCCESS;
}

/** Checks a REDUCE's operands: LOC_QP_OP_ERR, LOC_LEN_ERR or LOC_PROT_ERR, else SUCCESS. */
export function checkReduce(dev: Device, q: Qp, w: usize): u32 {
  const nsrc = <u32>load<u8>(w + WQE_NSRC);
  const dtype = <u32>load<u8>(w + WQE_DTYPE), redop = <u32>load<u8>(w + WQE_REDOP);
  const len = <u64>load<u32>(w + WQE_LENGTH);
  const esize = reduceElementBytes(dtype);
  if (nsrc < 2 || nsrc > REDUCE_MAX_SOURCES || esize == 0 || !reduceOpKnown(redop)) return STATUS_LOC_QP_OP_ERR;
  if (len % esize != 0) return STATUS_LOC_LEN_ERR;
  const dst = load<u64>(w + WQE_LADDR);
  // the reduction block sits beside HBM: every operand must be there
  if (!dmaIsHbm(dev, dst, len) || !mrCheck(dev, load<u32>(w + WQE_LKEY), false, q.pd, dst, len, ACCESS_LOCAL_WRITE)) return STATUS_LOC_PROT_ERR;
  for (let i: u32 = 0; i < nsrc; i++) {
    const a = <u64>load<u32>(w + WQE_SRC_ADDR + i * WQE_SRC_ADDR_STRIDE);
    if (!dmaIsHbm(dev, a, len) || !mrCheck(dev, load<u32>(w + WQE_SRC_LKEY + i * WQE_SRC_ADDR_STRIDE), false, q.pd, a, len, 0)) return STATUS_LOC_PROT_ERR;
  }
  return STATUS_SUCCESS;
}

/** The reduction block a QP's REDUCE runs on: its engine's, or for a host QP one chosen by its number. */
export function reduceBlockOf(dev: Device, q: Qp, qpn: u32): u32 {
  return q.owner == OWNER_HOST ? qpn % dev.cfg.engines : q.owner;
}

/**
 * Frees reduction block `block`. Returns the first QP (in QP order) whose request waits for it,
 * which waits no longer and is the caller's to restart, or -1.
 */
export function freeBlock(dev: Device, block: u32): i32 {
  store<u32>(nicOf(dev).blocks + (<usize>block << 2), 0);
  for (let i: u32 = 0; i < dev.cfg.maxQps; i++) {
    const q = qpAt(dev, i);
    if (q.valid && q.busy && q.waitBlock == block) {
      q.waitBlock = NOT_ARMED;
      return <i32>i;
    }
  }
  return -1;
}

/** Computes a checked REDUCE (its WQE at `w`) into its destination. */
export function placeReduce(dev: Device, w: usize): void {
  if (dev.cfg.hbmBacking == 0) return; // (its operands, all in HBM, have no bytes: timing mode)
  const len = load<u32>(w + WQE_LENGTH);
  const nsrc = <u32>load<u8>(w + WQE_NSRC);
  for (let i: u32 = 0; i < nsrc; i++) {
    store<u32>(nicOf(dev).reduceSrcs + (<usize>i << 2), <u32>dmaPtr(dev, <u64>load<u32>(w + WQE_SRC_ADDR + i * WQE_SRC_ADDR_STRIDE), <u64>len));
  }
  reduceKernel(<u32>dmaPtr(dev, load<u64>(w + WQE_LADDR), <u64>len), nicOf(dev).reduceSrcs, nsrc, len, load<u8>(w + WQE_REDOP), load<u8>(w + WQE_DTYPE));
}
