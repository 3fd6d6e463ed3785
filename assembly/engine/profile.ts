// The cycle profiler (config field `profile`): runs an engine one instruction per call into the
// interpreter and charges each instruction's cycles to its address, in a table of one entry per
// SRAM word per engine (engines.ts: cycles u64, instructions u32, calls u32), which the host
// folds into functions with the image's symbols (host/debug/profile.ts). Calls (JAL/JALR
// linking ra) and returns (JALR x0, 0(ra)) are also trace points, for the Perfetto trace's
// function spans.
// Same results as an unprofiled run: the run loop checks for interrupts before each instruction
// instead of only where `execute` returns, and between two instructions nothing can make one
// takeable that does not also end `execute` (interrupts come from events, between windows, from
// CSR and MMIO instructions, which end it, or from the timer, where it stops anyway).

import { Device, tracePoint } from "../core/device";
import { Hart, EngineState } from "./hart";
import { engOf, PROFILE_ENTRY_BYTES } from "./engines";
import { execute } from "./exec";
import { psOfCycle } from "../core/time";
import { TP_ENGINE_CALL, TP_ENGINE_RET } from "../generated/layouts";
import { InsnClass, insnClass, rdOf, rs1Of } from "../generated/isa";
import { immI } from "./decode";

const RA: u32 = 1;

/** Engine `h`'s profile entry for SRAM word address `pc`, or 0 when pc is outside SRAM. */
@inline function entryOf(dev: Device, h: Hart, pc: u32): usize {
  if (pc >= dev.cfg.sramBytes) return 0;
  return engOf(dev).profile + (<usize>h.id * (<usize>dev.cfg.sramBytes >> 2) + <usize>(pc >> 2)) * PROFILE_ENTRY_BYTES;
}

/** Executes one instruction (if the engine's cycle is below `stop`), charging it to its address. */
export function executeProfiled(dev: Device, h: Hart, stop: u64): void {
  if (h.state != EngineState.Running || h.cycle >= stop) return;
  const pc = h.pc, cycle = h.cycle, instret = h.instret;
  const at = entryOf(dev, h, pc);
  const ir = at != 0 ? load<u32>(h.sram + <usize>pc) : 0;
  execute(dev, h, cycle + 1); // one instruction: every instruction costs at least one cycle
  if (at == 0) return; // the fetch faulted
  store<u64>(at, load<u64>(at) + (h.cycle - cycle));
  if (h.instret == instret) return; // it trapped or stalled: not retired
  store<u32>(at + 8, load<u32>(at + 8) + 1);
  const cls = insnClass(ir), rd = rdOf(ir);
  if ((cls == InsnClass.Jal || cls == InsnClass.Jalr) && rd == RA) { // linking ra: a call
    const target = entryOf(dev, h, h.pc);
    if (target != 0) store<u32>(target + 12, load<u32>(target + 12) + 1);
    tracePoint(dev, psOfCycle(cycle, dev.cfg.engineClockKhz), TP_ENGINE_CALL, h.id, h.pc);
  } else if (cls == InsnClass.Jalr && rd == 0 && rs1Of(ir) == RA && immI(ir) == 0) { // jalr x0, 0(ra): a return
    tracePoint(dev, psOfCycle(cycle, dev.cfg.engineClockKhz), TP_ENGINE_RET, h.id, h.pc);
  }
}
