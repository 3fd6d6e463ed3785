// Architectural state of one message engine (a RV32IMA + Zicsr hart in M-mode) and the
// constants of the privileged spec it uses. Plain data: the interpreter (exec.ts), the
// CSR file (csr.ts) and trap logic (trap.ts) act on it; save/restore copies it as bytes.

import { Fifo } from "../core/fifo";
import { ENGINE_STATE_IDLE, ENGINE_STATE_RUNNING, ENGINE_STATE_SLEEPING, ENGINE_STATE_EXITED, ENGINE_STATE_FAULTED } from "../generated/layouts";

export const enum EngineState {
  Idle = ENGINE_STATE_IDLE, // no image started
  Running = ENGINE_STATE_RUNNING,
  Sleeping = ENGINE_STATE_SLEEPING, // in wfi
  Exited = ENGINE_STATE_EXITED,
  Faulted = ENGINE_STATE_FAULTED, // trapped with no handler installed
}

// mcause values (privileged spec table 3.6)
export const CAUSE_MISALIGNED_FETCH: u32 = 0;
export const CAUSE_FETCH_ACCESS: u32 = 1;
export const CAUSE_ILLEGAL: u32 = 2;
export const CAUSE_BREAKPOINT: u32 = 3;
export const CAUSE_MISALIGNED_LOAD: u32 = 4;
export const CAUSE_LOAD_ACCESS: u32 = 5;
export const CAUSE_MISALIGNED_STORE: u32 = 6;
export const CAUSE_STORE_ACCESS: u32 = 7;
export const CAUSE_ECALL_M: u32 = 11;
export const CAUSE_INTERRUPT: u32 = 0x80000000;
export const IRQ_SOFTWARE: u32 = 3;
export const IRQ_TIMER: u32 = 7;
export const IRQ_EXTERNAL: u32 = 11;

// mstatus / mie / mip bits
export const MSTATUS_MIE: u32 = 1 << 3;
export const MSTATUS_MPIE: u32 = 1 << 7;
export const MSTATUS_MPP: u32 = 3 << 11; // always M
export const MIP_MTIP: u32 = 1 << IRQ_TIMER;
export const MIP_MEIP: u32 = 1 << IRQ_EXTERNAL;
export const MIP_MSIP: u32 = 1 << IRQ_SOFTWARE;
export const MIE_MASK: u32 = MIP_MSIP | MIP_MTIP | MIP_MEIP;

// misa: MXL = 1 (RV32), extensions A (bit 0), I (bit 8), M (bit 12)
export const MISA: u32 = 0x40000000 | (1 << 0) | (1 << 8) | (1 << 12);

export const NO_RESERVATION: u32 = 0xffffffff;

@unmanaged export class Hart {
  // --- registers x0..x31 live in the 128 bytes at `regs`
  regs: usize;
  sram: usize; // host address of this engine's private SRAM
  console: Fifo; // bytes printed, drained by the host
  consoleLines: Fifo; // u64 ps: when each line in `console` began (engine/console.ts)
  mboxIn: Fifo; // host -> engine words
  mboxInflight: u32; // host words given for a later time, not yet in mboxIn (engine/mailbox.ts)
  mboxOut: Fifo; // engine -> host words
  nicIrq: Fifo; // numbers of armed CQs that completed (IRQ_CQN)

  id: u32;
  state: u32; // EngineState
  pc: u32;
  exitCode: u32;

  cycle: u64; // engine clock cycles since reset: the engine's local time
  instret: u64;
  mcycleOffset: u64; // mcycle = cycle + mcycleOffset (mcycle is writable)
  mtimecmp: u64;
  sleepPs: u64; // total time asleep in wfi
  sleepStart: u64; // when the current sleep began
  consoleLinePs: u64; // when the console line being printed began; NEVER after a newline (engine/console.ts)
  wakeGen: u32; // invalidates timer events of earlier sleeps
  timerPending: u32; // a Timer event of this engine is in the event queue
  cmd: usize; // NIC command arguments (8 words) and result (1 word)

  mstatus: u32;
  mie: u32;
  mtvec: u32;
  mscratch: u32;
  mepc: u32;
  mcause: u32;
  mtval: u32;
  resvAddr: u32; // LR reservation (engine address of an aligned word) or NO_RESERVATION
  msip: u32; // machine software interrupt pending (SWI.MSIP: another engine raised it)
}

/** Completion interrupts an engine can have pending. */
export const NIC_IRQ_DEPTH: u32 = 64;

export const HART_STRIDE: usize = (offsetof<Hart>() + 15) & ~(<usize>15);
