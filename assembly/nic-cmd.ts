// Verbs commands from firmware (NIC.CMD): the control path an engine uses to make its own
// protection domains, regions, CQs and QPs. Arguments are written to NIC.CMD_ARG0..7, the
// opcode to NIC.CMD runs the command at once, and NIC.CMD_RESULT holds the outcome; the
// engine stalls nicCommandPs, as firmware does waiting on a real NIC's command interface.
// CQs and QPs it creates are owned by the calling engine, their rings in HBM.

import { Device } from "./device";
import { Hart } from "./hart";
import { pdAlloc, pdFree, mrReg, mrDereg, cqCreate, qpAt, OWNER_HOST, engineToDma } from "./verbs";
import { qpCreate, qpModify, qpDestroy, cqDestroy, E_OK, E_NO_OBJECT, E_ARGUMENT } from "./verbs-control";
import {
  CMD_ALLOC_PD, CMD_DEALLOC_PD, CMD_REG_MR, CMD_DEREG_MR, CMD_CREATE_CQ, CMD_DESTROY_CQ, CMD_CREATE_QP, CMD_MODIFY_QP,
  CMD_DESTROY_QP,
} from "./generated/layouts";
import { cyclesCeil } from "./time";

@inline function arg(h: Hart, k: u32): u32 {
  return load<u32>(h.cmd + (<usize>k << 2));
}

export function cmdArg(h: Hart, k: u32, v: u32): void {
  store<u32>(h.cmd + (<usize>k << 2), v);
}

export function cmdResult(h: Hart): u32 {
  return load<u32>(h.cmd + 32);
}

/** May engine `e` change QP `qpn`? Only its owner may. */
@inline function owns(dev: Device, e: u32, qpn: u32): bool {
  return qpn < dev.maxQps && qpAt(dev, qpn).valid != 0 && qpAt(dev, qpn).owner == e && qpAt(dev, qpn).owner != OWNER_HOST;
}

/** Runs command `op` for engine `h`; the result goes to CMD_RESULT. Returns the engine's stall in cycles. */
export function nicCommand(dev: Device, h: Hart, op: u32): u64 {
  let r: i32;
  switch (op) {
    case CMD_ALLOC_PD: r = pdAlloc(dev); break;
    case CMD_DEALLOC_PD: r = pdFree(dev, arg(h, 0)) ? E_OK : E_NO_OBJECT; break;
    case CMD_REG_MR: {
      const hi = arg(h, 2);
      const base = hi == 0 ? engineToDma(h.id, arg(h, 1)) : (<u64>hi << 32) | <u64>arg(h, 1);
      const lkey = mrReg(dev, arg(h, 0), base, <u64>arg(h, 3), arg(h, 4));
      r = lkey == 0 ? E_ARGUMENT : <i32>lkey;
      break;
    }
    case CMD_DEREG_MR: r = mrDereg(dev, arg(h, 0)) ? E_OK : E_NO_OBJECT; break;
    case CMD_CREATE_CQ: r = cqCreate(dev, engineToDma(h.id, arg(h, 0)), arg(h, 1), h.id); break;
    case CMD_DESTROY_CQ: r = cqDestroy(dev, arg(h, 0)); break;
    case CMD_CREATE_QP:
      r = qpCreate(dev, arg(h, 0), arg(h, 1), arg(h, 2), engineToDma(h.id, arg(h, 3)), arg(h, 4), engineToDma(h.id, arg(h, 5)), arg(h, 6), h.id, arg(h, 7));
      break;
    case CMD_MODIFY_QP: r = owns(dev, h.id, arg(h, 0)) ? qpModify(dev, arg(h, 0), arg(h, 1), arg(h, 2)) : E_NO_OBJECT; break;
    case CMD_DESTROY_QP: r = owns(dev, h.id, arg(h, 0)) ? qpDestroy(dev, arg(h, 0)) : E_NO_OBJECT; break;
    default: r = E_ARGUMENT; break;
  }
  store<i32>(h.cmd + 32, r);
  return cyclesCeil(dev.nicCommandPs, dev.khz);
}
