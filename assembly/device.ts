// The device: composes the engines, the event queue, statistics, trace ring and memories,
// all carved from one arena so that save/restore is a copy of bytes. It holds no
// instruction or protocol logic: engines execute in exec.ts, the event queue is sched.ts.

import {
  CFG_ENGINES, CFG_ENGINE_CLOCK_KHZ, CFG_SRAM_BYTES, CFG_HBM_BYTES, CFG_INTERLEAVE_QUANTUM_PS, CFG_SEED,
  CFG_CPI_ALU, CFG_CPI_MUL, CFG_CPI_DIV, CFG_CPI_BRANCH_TAKEN, CFG_CPI_JUMP, CFG_CPI_LOAD_SRAM, CFG_CPI_STORE_SRAM,
  CFG_CPI_LOAD_HBM, CFG_CPI_STORE_HBM, CFG_CPI_AMO_HBM, CFG_CPI_MMIO, CFG_CPI_CSR, CFG_CPI_TRAP,
  CFG_EVENT_CAPACITY, CFG_TRACE_RING_ENTRIES, CFG_CONSOLE_RING_BYTES, CFG_MAILBOX_DEPTH, CFG_SLOTS, STAT_COUNT,
  STAT_TRACE_DROPPED,
} from "./generated/layouts";
import { Hart, EngineState, NO_RESERVATION, MSTATUS_MPP } from "./hart";
import { Rng, rngSeed } from "./rng";
import { NEVER } from "./time";
import { Fifo, fifoInit } from "./fifo";

export const EVENT_BYTES: usize = 32;
export const TRACE_BYTES: usize = 16;

@unmanaged export class Device {
  arenaBase: usize;
  arenaBytes: usize;
  cfg: usize; // a copy of the config slots, part of the saved state

  now: u64; // device time (ps); always the end of the last window run
  seq: u64; // tie-break for events at the same time: insertion order
  khz: u64; // engine clock
  quantum: u64; // interleave window (ps)

  engines: u32;
  sramBytes: u32;
  hbmBytes: u32;
  resvCount: u32; // engines holding an LR reservation

  harts: usize; // `engines` Hart structs, HART_STRIDE apart
  regs: usize;
  hbm: usize;
  stats: usize; // STAT_COUNT u64 counters
  rng: usize; // the device's random stream (Rng)

  events: usize; // binary min-heap of EVENT_BYTES records
  evCount: u32;
  evCap: u32;

  trace: usize; // ring of TRACE_BYTES records
  trHead: u32;
  trCount: u32;
  trCap: u32;


  // the CPI table, copied from the config for the interpreter
  cpiAlu: u32;
  cpiMul: u32;
  cpiDiv: u32;
  cpiBranchTaken: u32;
  cpiJump: u32;
  cpiLoadSram: u32;
  cpiStoreSram: u32;
  cpiLoadHbm: u32;
  cpiStoreHbm: u32;
  cpiAmoHbm: u32;
  cpiMmio: u32;
  cpiCsr: u32;
  cpiTrap: u32;
}

@inline export function cfgGet(cfg: usize, slot: u32): u64 {
  return load<u64>(cfg + (<usize>slot << 3));
}

@inline function align16(n: usize): usize {
  return (n + 15) & ~(<usize>15);
}

export const HART_STRIDE: usize = align16(offsetof<Hart>());
const FIFO_STRIDE: usize = align16(offsetof<Fifo>());

@inline export function hartAt(dev: Device, i: u32): Hart {
  return changetype<Hart>(dev.harts + <usize>i * HART_STRIDE);
}

/**
 * Lays out a whole device in one arena: the Device record, the config copy, engines and their
 * registers, consoles and mailboxes, SRAMs, HBM, event heap, trace ring, statistics.
 * The config has been validated by the host; values are trusted here.
 */
export function createDevice(cfgIn: usize): Device {
  const engines = <u32>cfgGet(cfgIn, CFG_ENGINES);
  const sramBytes = <usize>cfgGet(cfgIn, CFG_SRAM_BYTES);
  const hbmBytes = <usize>cfgGet(cfgIn, CFG_HBM_BYTES);
  const evCap = <usize>cfgGet(cfgIn, CFG_EVENT_CAPACITY);
  const trCap = <usize>cfgGet(cfgIn, CFG_TRACE_RING_ENTRIES);
  const conCap = <usize>cfgGet(cfgIn, CFG_CONSOLE_RING_BYTES);
  const depth = <usize>cfgGet(cfgIn, CFG_MAILBOX_DEPTH);
  const n = <usize>engines;

  // offsets within the arena, each block 16-byte aligned (SRAM and HBM 64-byte aligned)
  let off: usize = align16(offsetof<Device>());
  const oCfg = off; off = align16(off + <usize>CFG_SLOTS * 8);
  const oHarts = off; off = align16(off + n * HART_STRIDE);
  const oRegs = off; off = align16(off + n * 128);
  const oFifos = off; off = align16(off + n * 3 * FIFO_STRIDE);
  const oCon = off; off = align16(off + n * conCap);
  const oMbox = off; off = align16(off + n * depth * 8);
  const oStats = off; off = align16(off + <usize>STAT_COUNT * 8);
  const oRng = off; off = align16(off + offsetof<Rng>());
  const oEvents = off; off = align16(off + evCap * EVENT_BYTES);
  const oTrace = off; off = align16(off + trCap * TRACE_BYTES);
  off = (off + 63) & ~(<usize>63);
  const oSram = off; off += n * sramBytes;
  const oHbm = off; off += hbmBytes;

  const base = heap.alloc(off + 64);
  const arena = (base + 63) & ~(<usize>63);
  memory.fill(arena, 0, off);
  const dev = changetype<Device>(arena);
  dev.arenaBase = arena;
  dev.arenaBytes = off;
  dev.cfg = arena + oCfg;
  memory.copy(dev.cfg, cfgIn, <usize>CFG_SLOTS * 8);
  dev.khz = cfgGet(cfgIn, CFG_ENGINE_CLOCK_KHZ);
  dev.quantum = cfgGet(cfgIn, CFG_INTERLEAVE_QUANTUM_PS);
  dev.engines = engines;
  dev.sramBytes = <u32>sramBytes;
  dev.hbmBytes = <u32>hbmBytes;
  dev.resvCount = 0;
  dev.harts = arena + oHarts;
  dev.regs = arena + oRegs;
  dev.hbm = arena + oHbm;
  dev.stats = arena + oStats;
  dev.rng = arena + oRng;
  rngSeed(changetype<Rng>(dev.rng), cfgGet(cfgIn, CFG_SEED), 0);
  dev.events = arena + oEvents;
  dev.evCap = <u32>evCap;
  dev.trace = arena + oTrace;
  dev.trCap = <u32>trCap;

  dev.cpiAlu = <u32>cfgGet(cfgIn, CFG_CPI_ALU);
  dev.cpiMul = <u32>cfgGet(cfgIn, CFG_CPI_MUL);
  dev.cpiDiv = <u32>cfgGet(cfgIn, CFG_CPI_DIV);
  dev.cpiBranchTaken = <u32>cfgGet(cfgIn, CFG_CPI_BRANCH_TAKEN);
  dev.cpiJump = <u32>cfgGet(cfgIn, CFG_CPI_JUMP);
  dev.cpiLoadSram = <u32>cfgGet(cfgIn, CFG_CPI_LOAD_SRAM);
  dev.cpiStoreSram = <u32>cfgGet(cfgIn, CFG_CPI_STORE_SRAM);
  dev.cpiLoadHbm = <u32>cfgGet(cfgIn, CFG_CPI_LOAD_HBM);
  dev.cpiStoreHbm = <u32>cfgGet(cfgIn, CFG_CPI_STORE_HBM);
  dev.cpiAmoHbm = <u32>cfgGet(cfgIn, CFG_CPI_AMO_HBM);
  dev.cpiMmio = <u32>cfgGet(cfgIn, CFG_CPI_MMIO);
  dev.cpiCsr = <u32>cfgGet(cfgIn, CFG_CPI_CSR);
  dev.cpiTrap = <u32>cfgGet(cfgIn, CFG_CPI_TRAP);

  for (let i: u32 = 0; i < engines; i++) {
    const h = hartAt(dev, i);
    h.id = i;
    h.regs = arena + oRegs + <usize>i * 128;
    h.sram = arena + oSram + <usize>i * sramBytes;
    const fifos = arena + oFifos + <usize>i * 3 * FIFO_STRIDE;
    h.console = changetype<Fifo>(fifos);
    h.mboxIn = changetype<Fifo>(fifos + FIFO_STRIDE);
    h.mboxOut = changetype<Fifo>(fifos + 2 * FIFO_STRIDE);
    fifoInit(h.console, arena + oCon + <usize>i * conCap, <u32>conCap, 0);
    const mbox = arena + oMbox + <usize>i * depth * 8;
    fifoInit(h.mboxIn, mbox, <u32>depth, 2);
    fifoInit(h.mboxOut, mbox + depth * 4, <u32>depth, 2);
    h.state = EngineState.Idle;
    h.mstatus = MSTATUS_MPP;
    h.mtimecmp = NEVER;
    h.resvAddr = NO_RESERVATION;
  }
  return dev;
}

@inline export function statAdd(dev: Device, id: u32, n: u64): void {
  const p = dev.stats + (<usize>id << 3);
  store<u64>(p, load<u64>(p) + n);
}

/** Appends a trace record; a full ring drops the record and counts it (the host drains it). */
export function tracePoint(dev: Device, t: u64, point: u16, engine: u32, arg: u32): void {
  if (dev.trCount >= dev.trCap) {
    statAdd(dev, STAT_TRACE_DROPPED, 1);
    return;
  }
  let slot = dev.trHead + dev.trCount;
  if (slot >= dev.trCap) slot -= dev.trCap;
  const p = dev.trace + <usize>slot * TRACE_BYTES;
  store<u64>(p, t);
  store<u16>(p, point, 8);
  store<u16>(p, <u16>engine, 10);
  store<u32>(p, arg, 12);
  dev.trCount++;
}
