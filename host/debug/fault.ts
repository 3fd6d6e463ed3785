// What a faulted engine's mcause and mtval mean in a firmware engineer's words, when the
// guards explain them (docs/engine.md, "Guards"): an access near sp while sp is below the
// bottom of the stack is a stack overflow; one inside the NULL guard, a NULL dereference; a jump there,
// a call through a NULL function pointer. Anything else is the cause's name.

import { causeName } from "../trace/perfetto.js";

const CAUSE_FETCH_ACCESS = 1, CAUSE_LOAD_ACCESS = 5, CAUSE_STORE_ACCESS = 7;
/** sp this close below 2^32 has wrapped below address 0 (a frame larger than the guard). */
const WRAPPED = 0xfff00000;

export interface FaultFacts {
  engine: number;
  mcause: number;
  mtval: number;
  /** x2 at the fault */
  sp: number;
  /** config nullGuardBytes: the SDK's stack grows down to it */
  nullGuardBytes: number;
}

const hex = (n: number) => "0x" + (n >>> 0).toString(16);

/** A one-line explanation: `stack overflow on engine 3 (...)`, `NULL pointer dereference (...)`, or the cause's name. */
export function explainFault(f: FaultFacts): string {
  const access = f.mcause === CAUSE_LOAD_ACCESS ? "load from" : f.mcause === CAUSE_STORE_ACCESS ? "store to" : null;
  const guard = `the NULL guard [0, ${hex(f.nullGuardBytes)})`;
  const sp = f.sp >>> 0, at = f.mtval >>> 0;
  // sp below the stack's bottom (0 is sp never set: no stack at all), and the access within
  // reach of sp (a load or store offset is a signed 12-bit immediate)
  const nearSp = ((at - sp) | 0) >= -2048 && ((at - sp) | 0) < 2048;
  if (access && f.nullGuardBytes > 0 && sp !== 0 && (sp < f.nullGuardBytes || sp >= WRAPPED) && nearSp)
    return `stack overflow on engine ${f.engine} (${access} ${hex(at)} with sp ${hex(sp)}, below the stack's bottom ${hex(f.nullGuardBytes)})`;
  if (access && at < f.nullGuardBytes) return `NULL pointer dereference (${access} ${hex(at)}, inside ${guard})`;
  if (f.mcause === CAUSE_FETCH_ACCESS && at < f.nullGuardBytes) return `call through a NULL function pointer (fetch at ${hex(at)}, inside ${guard})`;
  return causeName(f.mcause);
}
