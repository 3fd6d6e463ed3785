// The wasm export surface: the only file the host binds to. A device is a handle (the address
// of its arena); every function takes it, and no module-level state exists, so one instance
// may hold several devices. Configuration crosses as one block of u64 slots (layouts/config.json).

import { Device, createDevice, hartAt, TRACE_BYTES } from "./device";
import { CFG_SLOTS, STAT_COUNT } from "./generated/layouts";
import { step as stepDevice, startEngine as start, mailboxPush, mailboxPop } from "./run";
import { rngNext, rngSeed, Rng } from "./rng";
import { fifoPop } from "./fifo";

/** Allocates the block of CFG_SLOTS u64 the host fills before create(). */
export function configAlloc(): usize {
  return heap.alloc(<usize>CFG_SLOTS * 8);
}

/** Allocates host scratch memory (outside any device arena). */
export function scratchAlloc(bytes: u32): usize {
  return heap.alloc(<usize>bytes);
}

export function create(cfg: usize): usize {
  return changetype<usize>(createDevice(cfg));
}

export function step(dev: usize, untilPs: u64): u64 {
  return stepDevice(changetype<Device>(dev), untilPs);
}

export function now(dev: usize): u64 {
  return changetype<Device>(dev).now;
}

export function arenaBase(dev: usize): usize { return changetype<Device>(dev).arenaBase; }
export function arenaBytes(dev: usize): usize { return changetype<Device>(dev).arenaBytes; }
export function sramPtr(dev: usize, i: u32): usize { return hartAt(changetype<Device>(dev), i).sram; }
export function hbmPtr(dev: usize): usize { return changetype<Device>(dev).hbm; }
export function statsPtr(dev: usize): usize { return changetype<Device>(dev).stats; }
export function statCount(): u32 { return STAT_COUNT; }

export function startEngine(dev: usize, i: u32, pc: u32): void { start(changetype<Device>(dev), i, pc); }
export function engineState(dev: usize, i: u32): u32 { return hartAt(changetype<Device>(dev), i).state; }
export function enginePc(dev: usize, i: u32): u32 { return hartAt(changetype<Device>(dev), i).pc; }
export function engineExitCode(dev: usize, i: u32): u32 { return hartAt(changetype<Device>(dev), i).exitCode; }
export function engineMcause(dev: usize, i: u32): u32 { return hartAt(changetype<Device>(dev), i).mcause; }
export function engineMtval(dev: usize, i: u32): u32 { return hartAt(changetype<Device>(dev), i).mtval; }
export function engineInstret(dev: usize, i: u32): u64 { return hartAt(changetype<Device>(dev), i).instret; }
export function engineCycles(dev: usize, i: u32): u64 { return hartAt(changetype<Device>(dev), i).cycle; }
export function engineSleepPs(dev: usize, i: u32): u64 { return hartAt(changetype<Device>(dev), i).sleepPs; }
export function engineReg(dev: usize, i: u32, r: u32): u32 {
  return load<u32>(hartAt(changetype<Device>(dev), i).regs + (<usize>(r & 31) << 2));
}

/** Moves up to `max` console bytes of engine `i` to `dst`; returns how many. */
export function consoleRead(dev: usize, i: u32, dst: usize, max: u32): u32 {
  const h = hartAt(changetype<Device>(dev), i);
  let n: u32 = 0;
  while (n < max && h.console.count != 0) {
    store<u8>(dst + <usize>n, <u8>fifoPop(h.console));
    n++;
  }
  return n;
}

/** Moves up to `max` trace records (16 B each) to `dst`; returns how many. */
export function traceRead(dev: usize, dst: usize, max: u32): u32 {
  const d = changetype<Device>(dev);
  let n: u32 = 0;
  while (n < max && d.trCount != 0) {
    memory.copy(dst + <usize>n * TRACE_BYTES, d.trace + <usize>d.trHead * TRACE_BYTES, TRACE_BYTES);
    d.trHead = d.trHead + 1 == d.trCap ? 0 : d.trHead + 1;
    d.trCount--;
    n++;
  }
  return n;
}

export function mboxPush(dev: usize, i: u32, word: u32): bool { return mailboxPush(changetype<Device>(dev), i, word); }
export function mboxPop(dev: usize, i: u32): i64 { return mailboxPop(changetype<Device>(dev), i); }

/** Value `index` of random stream `stream` of seed `seed`, for tests of stream derivation. */
export function rngSample(scratch: usize, seed: u64, stream: u64, index: u32): u64 {
  const r = changetype<Rng>(scratch);
  rngSeed(r, seed, stream);
  let v: u64 = 0;
  for (let k: u32 = 0; k <= index; k++) v = rngNext(r);
  return v;
}
