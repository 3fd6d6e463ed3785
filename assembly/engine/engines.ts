// The engines block's own state: the Hart records and register files, and what the block keeps
// for all engines (LR reservations held, HBM access costs under the current load). Each
// engine's console (bytes and line times), mailboxes, command area and completion-interrupt FIFO are carved here too.

import { Device, Config } from "../core/device";
import { Fifo, fifoInit } from "../core/fifo";
import { Hart, EngineState, NO_RESERVATION, MSTATUS_MPP, HART_STRIDE, NIC_IRQ_DEPTH } from "./hart";
import { NEVER } from "../core/time";
import { consoleLineSlots } from "./console";
import { PROFILE_ENTRY_BYTES as PROFILE_ENTRY } from "../generated/layouts";

@unmanaged export class Engines {
  harts: usize; // cfg.engines Hart records, HART_STRIDE apart
  regs: usize; // 32 registers per engine
  resvCount: u32; // engines holding an LR reservation
  cpiLoadHbmNow: u32; // cpiLoadHbm under the current HBM load (mem/hbm.ts)
  cpiAmoHbmNow: u32; // cpiAmoHbm likewise
  mboxTimed: usize; // host mailbox words given for a later time: MBOX_TIMED_BYTES records (mailbox.ts)
  mboxTimedHead: u32;
  mboxTimedCount: u32;
  mboxTimedCap: u32; // engines x mailboxDepth: each engine's words in flight fit its FIFO
  profile: usize; // with cfg.profile: PROFILE_ENTRY_BYTES per SRAM word per engine (profile.ts), else 0
}

/** A profile entry per SRAM word (engine/profile.ts): cycles u64, instructions u32, calls u32 (layouts/device.json). */
export const PROFILE_ENTRY_BYTES: usize = <usize>PROFILE_ENTRY;

/** Bytes of one engine's profile: an entry per word of its SRAM (0 without cfg.profile). */
export function profileBytes(c: Config): usize {
  return c.profile != 0 ? (<usize>c.sramBytes >> 2) * PROFILE_ENTRY_BYTES : 0;
}

/** A host mailbox word on its way: arrival ps u64, engine u32, word u32. */
export const MBOX_TIMED_BYTES: usize = 16;

@inline export function engOf(dev: Device): Engines { return changetype<Engines>(dev.eng); }

@inline export function hartAt(dev: Device, i: u32): Hart {
  return changetype<Hart>(engOf(dev).harts + <usize>i * HART_STRIDE);
}

@inline function align16(n: usize): usize { return (n + 15) & ~(<usize>15); }

const FIFO_STRIDE: usize = align16(offsetof<Fifo>());
/** Bytes of one engine's command area (NIC.CMD_ARG0..7 and the result: nic/commands.ts). */
const CMD_BYTES: usize = 48;

/** Arena bytes the block needs besides the engines' SRAM (placed by create.ts). */
export function enginesBytes(c: Config): usize {
  const n = <usize>c.engines;
  return align16(offsetof<Engines>()) + n * HART_STRIDE + n * 128 + n * 5 * FIFO_STRIDE + n * <usize>NIC_IRQ_DEPTH * 4
    + n * CMD_BYTES + align16(n * <usize>c.consoleRingBytes) + n * <usize>consoleLineSlots(c.consoleRingBytes) * 8 + n * <usize>c.mailboxDepth * 8
    + n * <usize>c.mailboxDepth * MBOX_TIMED_BYTES + n * profileBytes(c);
}

/** Lays the block out at `base` (16-byte aligned, enginesBytes long, zeroed); engine i's SRAM at sram + i x sramBytes. */
export function enginesInit(dev: Device, base: usize, sram: usize): void {
  const c = dev.cfg;
  const n = <usize>c.engines;
  const e = changetype<Engines>(base);
  dev.eng = base;
  let off = base + align16(offsetof<Engines>());
  e.harts = off; off += n * HART_STRIDE;
  e.regs = off; off += n * 128;
  const fifos = off; off += n * 5 * FIFO_STRIDE;
  const irqs = off; off += n * <usize>NIC_IRQ_DEPTH * 4;
  const cmds = off; off += n * CMD_BYTES;
  const con = off; off += align16(n * <usize>c.consoleRingBytes);
  const lineSlots = consoleLineSlots(c.consoleRingBytes);
  const conLines = off; off += n * <usize>lineSlots * 8;
  const mbox = off; off += n * <usize>c.mailboxDepth * 8;
  e.mboxTimed = off; off += n * <usize>c.mailboxDepth * MBOX_TIMED_BYTES;
  e.profile = profileBytes(c) != 0 ? off : 0;
  e.mboxTimedCap = c.engines * c.mailboxDepth;
  e.cpiLoadHbmNow = c.cpiLoadHbm;
  e.cpiAmoHbmNow = c.cpiAmoHbm;
  const depth = <usize>c.mailboxDepth;
  for (let i: u32 = 0; i < c.engines; i++) {
    const h = hartAt(dev, i);
    h.id = i;
    h.regs = e.regs + <usize>i * 128;
    h.sram = sram + <usize>i * <usize>c.sramBytes;
    const f = fifos + <usize>i * 5 * FIFO_STRIDE;
    h.console = changetype<Fifo>(f);
    h.mboxIn = changetype<Fifo>(f + FIFO_STRIDE);
    h.mboxOut = changetype<Fifo>(f + 2 * FIFO_STRIDE);
    h.nicIrq = changetype<Fifo>(f + 3 * FIFO_STRIDE);
    h.consoleLines = changetype<Fifo>(f + 4 * FIFO_STRIDE);
    fifoInit(h.console, con + <usize>i * <usize>c.consoleRingBytes, c.consoleRingBytes, 0);
    fifoInit(h.consoleLines, conLines + <usize>i * <usize>lineSlots * 8, lineSlots, 3);
    const mb = mbox + <usize>i * depth * 8;
    fifoInit(h.mboxIn, mb, <u32>depth, 2);
    fifoInit(h.mboxOut, mb + depth * 4, <u32>depth, 2);
    fifoInit(h.nicIrq, irqs + <usize>i * <usize>NIC_IRQ_DEPTH * 4, NIC_IRQ_DEPTH, 2);
    h.cmd = cmds + <usize>i * CMD_BYTES;
    h.state = EngineState.Idle;
    h.mstatus = MSTATUS_MPP;
    h.mtimecmp = NEVER;
    h.consoleLinePs = NEVER;
    h.resvAddr = NO_RESERVATION;
    h.msip = 0;
  }
}
