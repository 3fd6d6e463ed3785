// Verbs commands from firmware (NIC.CMD): the control path an engine uses to make its own
// protection domains, regions, CQs and QPs. Arguments are written to NIC.CMD_ARG0..7, the
// opcode to NIC.CMD runs the command at once, and NIC.CMD_RESULT holds the outcome; the
// engine stalls nicCommandPs, as firmware does waiting on a real NIC's command interface.
// CQs and QPs it creates are owned by the calling engine, their rings in its SRAM or HBM.

import { Device } from "../core/device";
import { Hart } from "../engine/hart";
import { pdAlloc, pdFree, pdOwnedBy, mrReg, mrDereg, mrOf, cqCreate, cqAt, qpAt } from "./verbs";
import { engineToDma, dmaIsHbm, dmaIsSram } from "../mem/dma";
import { qpCreate, qpModify, qpDestroy, cqDestroy, E_OK, E_NO_OBJECT, E_ARGUMENT } from "./verbs-control";
import { cyclesCeil } from "../core/time";
import { portSplitSet } from "./port-groups";
import {
  CMD_ALLOC_PD, CMD_DEALLOC_PD, CMD_REG_MR, CMD_DEREG_MR, CMD_CREATE_CQ, CMD_DESTROY_CQ, CMD_CREATE_QP, CMD_MODIFY_QP,
  CMD_DESTROY_QP, CMD_MODIFY_QP_REMOTE, CMD_SET_PORT_GROUPS, QP_STATE_RTR, SRAM_WINDOW,
} from "../generated/layouts";

@inline function arg(h: Hart, k: u32): u32 {
  return load<u32>(h.cmd + (<usize>k << 2));
}

export function cmdArg(h: Hart, k: u32, v: u32): void {
  store<u32>(h.cmd + (<usize>k << 2), v);
}

export function cmdResult(h: Hart): u32 {
  return load<u32>(h.cmd + 32);
}

// Each command acts only on the calling engine's own objects: a PD it allocated, a region in
// one of its PDs, a CQ or QP it owns. Another engine's or the host's object is answered as if
// it did not exist (CMD_ERR_NO_OBJECT) and is left as it was. An engine registers only memory
// it can reach itself: its own SRAM and HBM — not another engine's SRAM, not host memory.

/** May engine `e` act on QP `qpn`? Only its owner may. */
@inline function ownsQp(dev: Device, e: u32, qpn: u32): bool {
  return qpn < dev.cfg.maxQps && qpAt(dev, qpn).valid != 0 && qpAt(dev, qpn).owner == e;
}

/** May engine `e` act on CQ `cqn`? Only its owner may. */
@inline export function ownsCq(dev: Device, e: u32, cqn: u32): bool {
  return cqn < dev.cfg.maxCqs && cqAt(dev, cqn).valid != 0 && cqAt(dev, cqn).owner == e;
}

/** Is the region that `key` names one of engine `e`'s? */
function ownsMr(dev: Device, e: u32, key: u32): bool {
  const m = mrOf(dev, key);
  return m != null && pdOwnedBy(dev, m.pd, e);
}

/** The DMA address engine `e` names with (lo, hi), or NO_DMA when it is not memory the engine may register. */
function engineRegion(dev: Device, e: u32, lo: u32, hi: u32, length: u64): u64 {
  // hi == 0: an address in the engine's own view (its SRAM or HBM); otherwise a DMA address,
  // which must still be HBM or the engine's own SRAM window
  const base = hi == 0 ? engineToDma(e, lo) : (<u64>hi << 32) | <u64>lo;
  const own = engineToDma(e, 0);
  if (dmaIsHbm(dev, base, length)) return base;
  if (base >= own && dmaIsSram(dev, base, length) && base - own < <u64>SRAM_WINDOW) return base;
  return NO_DMA;
}
const NO_DMA: u64 = 0xffffffffffffffff;

/** Runs command `op` for engine `h`; the result goes to CMD_RESULT. Returns the engine's stall in cycles. */
export function nicCommand(dev: Device, h: Hart, op: u32): u64 {
  const e = h.id;
  let r: i32;
  switch (op) {
    case CMD_ALLOC_PD: r = pdAlloc(dev, e); break;
    case CMD_DEALLOC_PD: r = pdOwnedBy(dev, arg(h, 0), e) && pdFree(dev, arg(h, 0)) ? E_OK : E_NO_OBJECT; break;
    case CMD_REG_MR: {
      if (!pdOwnedBy(dev, arg(h, 0), e)) { r = E_NO_OBJECT; break; }
      const base = engineRegion(dev, e, arg(h, 1), arg(h, 2), <u64>arg(h, 3));
      const lkey = base == NO_DMA ? 0 : mrReg(dev, arg(h, 0), base, <u64>arg(h, 3), arg(h, 4));
      r = lkey == 0 ? E_ARGUMENT : <i32>lkey;
      break;
    }
    case CMD_DEREG_MR: r = ownsMr(dev, e, arg(h, 0)) && mrDereg(dev, arg(h, 0)) ? E_OK : E_NO_OBJECT; break;
    case CMD_CREATE_CQ: r = cqCreate(dev, engineToDma(e, arg(h, 0)), arg(h, 1), e); break;
    case CMD_DESTROY_CQ: r = ownsCq(dev, e, arg(h, 0)) ? cqDestroy(dev, arg(h, 0)) : E_NO_OBJECT; break;
    case CMD_CREATE_QP:
      if (!pdOwnedBy(dev, arg(h, 0), e) || !ownsCq(dev, e, arg(h, 1)) || !ownsCq(dev, e, arg(h, 2))) { r = E_NO_OBJECT; break; }
      r = qpCreate(dev, arg(h, 0), arg(h, 1), arg(h, 2), engineToDma(e, arg(h, 3)), arg(h, 4), engineToDma(e, arg(h, 5)), arg(h, 6), e, arg(h, 7));
      break;
    case CMD_MODIFY_QP: r = ownsQp(dev, e, arg(h, 0)) ? qpModify(dev, arg(h, 0), arg(h, 1), arg(h, 2), dev.cfg.deviceId, 0) : E_NO_OBJECT; break;
    case CMD_MODIFY_QP_REMOTE: r = ownsQp(dev, e, arg(h, 0)) ? qpModify(dev, arg(h, 0), QP_STATE_RTR, arg(h, 1), arg(h, 2), arg(h, 3)) : E_NO_OBJECT; break;
    case CMD_DESTROY_QP: r = ownsQp(dev, e, arg(h, 0)) ? qpDestroy(dev, arg(h, 0)) : E_NO_OBJECT; break;
    // the split is the device's, not an engine's object: any engine may change it
    case CMD_SET_PORT_GROUPS: r = portSplitSet(dev, arg(h, 0)); break;
    default: r = E_ARGUMENT; break;
  }
  store<i32>(h.cmd + 32, r);
  return cyclesCeil(dev.cfg.nicCommandPs, dev.cfg.engineClockKhz);
}
