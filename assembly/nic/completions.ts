// Completion queues seen from the NIC: writing a completion entry (CQE), and when an entry
// written at some time becomes visible to its consumer. An armed CQ interrupts its engine at
// its next completion. Both halves of the NIC (requester and responder) complete through here.

import { Device, statAdd, tracePoint } from "../core/device";
import { hartAt } from "../engine/engines";
import { interruptEngine } from "../engine/wake";
import { fifoPush } from "../core/fifo";
import { cqAt, NOT_ARMED } from "./verbs";
import { dmaPtr, dmaIsHost, dmaIsSram } from "../mem/dma";
import { pcieWrite, PcieDir } from "../mem/pcie";
import {
  CQE_SIZE, CQE_WR_ID, CQE_BYTE_LEN, CQE_IMM, CQE_QPN, CQE_STATUS, CQE_OPCODE, CQE_FLAGS, CQE_OWNER, CQE_TIMESTAMP, STAT_CQ_OVERRUN, TP_NIC_CQE,
} from "../generated/layouts";

/** Writes a CQE; false when the CQ is (or just became) overrun. */
export function cqPush(dev: Device, cqn: u32, t: u64, wrId: u64, byteLen: u32, imm: u32, hasImm: bool, qpn: u32, status: u32, opcode: u32): bool {
  if (cqn >= dev.cfg.maxCqs) return false;
  const c = cqAt(dev, cqn);
  if (!c.valid) return false;
  if (c.overrun || c.pi - c.ci >= c.depth) {
    c.overrun = 1;
    statAdd(dev, STAT_CQ_OVERRUN, 1);
    return false;
  }
  const p = dmaPtr(dev, c.base + <u64>(c.pi % c.depth) * CQE_SIZE, CQE_SIZE);
  store<u64>(p + CQE_WR_ID, wrId);
  store<u32>(p + CQE_BYTE_LEN, byteLen);
  store<u32>(p + CQE_IMM, hasImm ? imm : 0);
  store<u32>(p + CQE_QPN, qpn);
  store<u8>(p + CQE_STATUS, <u8>status);
  store<u8>(p + CQE_OPCODE, <u8>opcode);
  store<u8>(p + CQE_FLAGS, hasImm ? 1 : 0);
  store<u64>(p + CQE_TIMESTAMP, t);
  store<u8>(p + CQE_OWNER, ((c.pi / c.depth) & 1) == 0 ? 1 : 0);
  c.pi++;
  tracePoint(dev, t, TP_NIC_CQE, 0xffff, cqn);
  if (c.armEngine != NOT_ARMED) {
    const e = c.armEngine;
    c.armEngine = NOT_ARMED;
    if (e < dev.cfg.engines) {
      fifoPush(hartAt(dev, e).nicIrq, cqn);
      interruptEngine(dev, e, t);
    }
  }
  return true;
}

/** Time a completion written at `t` into CQ `cqn` becomes visible to its consumer. */
export function cqeVisible(dev: Device, cqn: u32, t: u64): u64 {
  if (cqn >= dev.cfg.maxCqs) return t;
  const c = cqAt(dev, cqn);
  if (dmaIsHost(dev, c.base, CQE_SIZE)) return pcieWrite(dev, PcieDir.Up, t, CQE_SIZE);
  return t + (dmaIsSram(dev, c.base, CQE_SIZE) ? dev.cfg.nicSramLatencyPs : dev.cfg.hbmLatencyPs);
}
