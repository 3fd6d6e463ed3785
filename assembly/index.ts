// The wasm export surface: the only file the host binds to. A device is a handle (the address
// of its arena); every function takes it, and no module-level state exists, so one instance
// may hold several devices. Configuration crosses as one block of u64 slots (layouts/config.json).

import { aheadStatsTo, aheadSetEnabled } from "./engine/ahead";
import { Device, TRACE_BYTES } from "./core/device";
import { memOf } from "./mem/dma";
import { createDevice, createRefusal as refusalOf, arenaBytesFor as arenaBytesOf, eventBoundFor as eventBoundOf } from "./create";
import { hartAt, engOf, profileBytes } from "./engine/engines";
import { csrRead } from "./engine/csr";
import { debugOf, debugAttach as attach, debugBreak as brk, debugWatch as watch, debugStep as stepOne, debugOnly as only, debugResume as resume, insnLogSet } from "./engine/debug";
import { nextActivity, step as stepDevice, startEngine as start, hasOutput as deviceHasOutput } from "./run";
import { mailboxPush, mailboxPop } from "./engine/mailbox";
import { rngNext, rngSeed, rngOf, Rng, RNG_BLOCKS } from "./core/rng";
import { fifoPop, fifoPop64 } from "./core/fifo";
import { reduceKernel as reduce } from "./mem/reduce";
import { pdAlloc as pdAllocV, pdFree as pdFreeV, mrReg as mrRegV, mrDereg as mrDeregV, cqCreate as cqCreateV, cqSetCi, cqAt, qpAt, OWNER_HOST } from "./nic/verbs";
import { rcOf } from "./rocev2/qp";
import { dmaPtr } from "./mem/dma";
import { qpCreate as qpCreateV, qpModify as qpModifyV, qpDestroy as qpDestroyV, cqDestroy as cqDestroyV } from "./nic/verbs-control";
import { DbKind, dbqPush, dbqRoom, hostDbq } from "./nic/doorbells";
import { pcieWrite, PcieDir } from "./mem/pcie";
import { hbmSetCompute, hbmServed as served } from "./mem/hbm";
import { jitNewEpoch, jitCacheIfAny, jitSetHot as cacheSetHot, codePagesOf, JIT_PAGE_SHIFT } from "./engine/jit-cache";
import { gridOf, gridStart, gridReserve } from "./compute/grid";
import { CFG_SLOTS, STAT_COUNT, LAYOUT_HASH } from "./generated/layouts";
import { insnClass } from "./generated/isa";

/** Allocates the block of CFG_SLOTS u64 the host fills before create(). */
export function configAlloc(): usize {
  return heap.alloc(<usize>CFG_SLOTS * 8);
}

/** Allocates host scratch memory (outside any device arena). */
export function scratchAlloc(bytes: u32): usize {
  return heap.alloc(<usize>bytes);
}

/** The layouts this core was built from (host/device.ts refuses another). */
export function layoutHash(): u32 { return LAYOUT_HASH; }

/** A device of config slots `cfg`, or 0 when the core refuses it (createRefusal says why). */
export function create(cfg: usize): usize {
  return changetype<usize>(createDevice(cfg));
}

/** Why the last create() that returned 0 did: 1 its arena exceeds one heap block (1 GiB), 2 this instance's 4 GiB have no room for it. */
export function createRefusal(): u32 { return refusalOf(); }

/** The arena create() would lay out for config slots `cfg`, in bytes, without creating it (the host sizes a cluster by it). */
export function arenaBytesFor(cfg: usize): usize { return arenaBytesOf(cfg); }

/** The least eventCapacity with which a device of config slots `cfg` cannot overflow its event queue. */
export function eventBoundFor(cfg: usize): u32 { return eventBoundOf(cfg); }

/** Advances device `dev` to `untilPs` (see run.ts; flags: STEP_STOP_WHEN_QUIESCENT = 1). */
export function step(dev: usize, untilPs: u64, flags: u32): u64 {
  jitNewEpoch(changetype<Device>(dev)); // the host may have written SRAM since the last step
  return stepDevice(changetype<Device>(dev), untilPs, flags);
}

/** Port `port` of device `dev` is paused by its link partner's PFC (paused 1) or free again (0), from `atPs` (nic/ports.ts portPause). */
export function portPaused(dev: usize, port: u32, paused: u32, atPs: u64): void {
  const d = changetype<Device>(dev);
  if (port < d.cfg.ports) portPause(d, port, paused != 0, atPs > d.now ? atPs : d.now);
}

/** When something next happens in the device (ps): its time while an engine runs; u64 max when nothing ever will. */
export function nextActivityPs(dev: usize): u64 {
  return nextActivity(changetype<Device>(dev));
}

/** 0, or why the device failed and runs no more (FATAL_* in layouts/device.json: 1 the event queue overflowed). */
export function fatal(dev: usize): u32 {
  return changetype<Device>(dev).fatal;
}

export function now(dev: usize): u64 {
  return changetype<Device>(dev).now;
}

export function arenaBase(dev: usize): usize { return changetype<Device>(dev).arenaBase; }
export function arenaBytes(dev: usize): usize { return changetype<Device>(dev).arenaBytes; }
export function sramPtr(dev: usize, i: u32): usize { return hartAt(changetype<Device>(dev), i).sram; }
export function hbmPtr(dev: usize): usize { return memOf(changetype<Device>(dev)).hbm; }
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
/** Engine `i`'s profile table (engine/profile.ts: an entry per SRAM word), or 0 when the config's profile is off. */
export function profilePtr(dev: usize, i: u32): usize {
  const d = changetype<Device>(dev);
  const base = engOf(d).profile;
  return base == 0 ? 0 : base + <usize>i * profileBytes(d.cfg);
}
/** CSR `csr` of engine `i` as the engine would read it, or -1 if the engine has no such CSR. */
export function engineCsr(dev: usize, i: u32, csr: u32): i64 { return csrRead(hartAt(changetype<Device>(dev), i), csr & 0xfff); }
/** The class layouts/isa.json gives instruction word `ir` (generated/isa.ts InsnClass, 0: illegal): what the JIT translates by; for test/isa-table.test.ts. */
export function insnClassOf(ir: u32): u32 { return insnClass(ir); }

// ---- a debugger (host/debug/gdb.ts through host/debug/target.ts; engine/debug.ts)
export function debugAttach(dev: usize, on: u32): void { attach(changetype<Device>(dev), on); }
/** Sets (set 1) or clears a breakpoint; false when the table is full or holds no such one. */
export function debugBreak(dev: usize, addr: u32, set: u32): bool { return brk(changetype<Device>(dev), addr, set != 0); }
/** Sets or clears a watchpoint (kind 0 write, 1 read, 2 access) on [addr, addr + len). */
export function debugWatch(dev: usize, addr: u32, len: u32, kind: u32, set: u32): bool { return watch(changetype<Device>(dev), addr, len, kind, set != 0); }
/** Stops the device once engine `i` has executed one instruction (0xffffffff: no step). */
export function debugStep(dev: usize, i: u32): void { stepOne(changetype<Device>(dev), i); }
/** Resumes only the engines of `mask` (bit i: engine i; engine/debug.ts debugOnly); all ones: every engine. */
export function debugOnly(dev: usize, mask: u64): void { only(changetype<Device>(dev), mask); }
export function debugResume(dev: usize): void { resume(changetype<Device>(dev)); }
/** Why the device is stopped for the debugger (engine/debug.ts DebugStop; 0: it is not). */
export function debugStopReason(dev: usize): u32 { return debugOf(changetype<Device>(dev)).stop; }
export function debugStopEngine(dev: usize): u32 { return debugOf(changetype<Device>(dev)).stopEngine; }
export function debugStopAddr(dev: usize): u32 { return debugOf(changetype<Device>(dev)).stopAddr; }
/** Writes register `r` (1..31; x0 stays 0) of engine `i`. */
export function engineSetReg(dev: usize, i: u32, r: u32, v: u32): void {
  if ((r & 31) != 0) store<u32>(hartAt(changetype<Device>(dev), i).regs + (<usize>(r & 31) << 2), v);
}
export function engineSetPc(dev: usize, i: u32, pc: u32): void { hartAt(changetype<Device>(dev), i).pc = pc; }

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

/** Moves up to `max` line times (u64 ps, when each line engine `i` printed began) to `dst`; returns how many. */
export function consoleLinesRead(dev: usize, i: u32, dst: usize, max: u32): u32 {
  const h = hartAt(changetype<Device>(dev), i);
  let n: u32 = 0;
  while (n < max && h.consoleLines.count != 0) {
    store<u64>(dst + (<usize>n << 3), fifoPop64(h.consoleLines));
    n++;
  }
  return n;
}

/** When the console line engine `i` is printing began (its newline not yet printed); u64 max when none is. */
export function consoleOpenLinePs(dev: usize, i: u32): u64 { return hartAt(changetype<Device>(dev), i).consoleLinePs; }

/** True when an engine's console or the trace ring holds something for the host to read (consoleRead, consoleLinesRead, traceRead). */
export function hasOutput(dev: usize): bool {
  return deviceHasOutput(changetype<Device>(dev));
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

/** Host to engine `i`: `word` arrives at max(atPs, now); false when its FIFO (with the words on their way) is full. */
export function mboxPush(dev: usize, i: u32, word: u32, atPs: u64): bool { return mailboxPush(changetype<Device>(dev), i, word, atPs); }
export function mboxPop(dev: usize, i: u32): i64 { return mailboxPop(changetype<Device>(dev), i); }

/** The next value of device `dev`'s random stream for `block` (RNG_BLOCK_*): for tests, and for host-side draws that belong to the device. */
export function rngNextOf(dev: usize, block: u32): u64 {
  return block < RNG_BLOCKS ? rngNext(rngOf(changetype<Device>(dev), block)) : 0;
}

/** Value `index` of random stream `stream` of seed `seed`, for tests of stream derivation. */
export function rngSample(scratch: usize, seed: u64, stream: u64, index: u32): u64 {
  const r = changetype<Rng>(scratch);
  rngSeed(r, seed, stream);
  let v: u64 = 0;
  for (let k: u32 = 0; k <= index; k++) v = rngNext(r);
  return v;
}

// reduction kernel (tests and benchmarks call it directly)

/** Reduces k source buffers (their u32 addresses at `srcs`) into `dst`: see assembly/mem/reduce.ts. */
export function reduceKernel(dst: usize, srcs: usize, k: u32, bytes: u32, op: u32, dtype: u32): void {
  reduce(dst, srcs, k, bytes, op, dtype);
}

/** wasm memory.copy of `n` bytes, the yardstick of the reduction benchmark (bench/reduce.ts). */
export function memcopy(dst: usize, src: usize, n: u32): void {
  memory.copy(dst, src, <usize>n);
}

// ---- verbs and doorbells (host side of the NIC: the driver's view). Numbers and keys are
// returned, -1 / 0 on failure; the host wrapper (host/verbs.ts) turns failures into errors.
import { WQE_SIZE, WQE_QPN } from "./generated/layouts";

export function hostPtr(dev: usize): usize { return memOf(changetype<Device>(dev)).host; }
/** Wasm address of a DMA range, 0 when it is not wholly in HBM or host memory. */
export function dmaAddr(dev: usize, addr: u64, len: u64): usize { return dmaPtr(changetype<Device>(dev), addr, len); }

export function pdAlloc(dev: usize): i32 { return pdAllocV(changetype<Device>(dev), OWNER_HOST); }
export function pdFree(dev: usize, pd: u32): bool { return pdFreeV(changetype<Device>(dev), pd); }
export function mrReg(dev: usize, pd: u32, base: u64, length: u64, access: u32): u32 {
  return mrRegV(changetype<Device>(dev), pd, base, length, access);
}
export function mrDereg(dev: usize, lkey: u32): bool { return mrDeregV(changetype<Device>(dev), lkey); }
export function cqCreate(dev: usize, base: u64, depth: u32, owner: u32): i32 {
  return cqCreateV(changetype<Device>(dev), base, depth, owner);
}
export function cqDestroy(dev: usize, cqn: u32): i32 { return cqDestroyV(changetype<Device>(dev), cqn); }
export function cqUpdateCi(dev: usize, cqn: u32, ci16: u32): void { cqSetCi(changetype<Device>(dev), cqn, ci16); }
/** Entries the NIC has written into CQ `cqn` (free-running). */
export function cqProduced(dev: usize, cqn: u32): u32 { return cqAt(changetype<Device>(dev), cqn).pi; }
export function cqOverrun(dev: usize, cqn: u32): bool { return cqAt(changetype<Device>(dev), cqn).overrun != 0; }
export function qpCreate(dev: usize, pd: u32, sendCq: u32, recvCq: u32, sqBase: u64, sqDepth: u32, rqBase: u64, rqDepth: u32, owner: u32, sigAll: u32): i32 {
  return qpCreateV(changetype<Device>(dev), pd, sendCq, recvCq, sqBase, sqDepth, rqBase, rqDepth, owner, sigAll);
}
/** Moves a QP to `state`; at RTR its destination is QP `destQpn` of device `destDevice` (this one: loopback) over port group `portGroup`. */
export function qpModify(dev: usize, qpn: u32, state: u32, destQpn: u32, destDevice: u32, portGroup: u32, lane: u32): i32 {
  return qpModifyV(changetype<Device>(dev), qpn, state, destQpn, destDevice, portGroup, lane);
}
export function qpDestroy(dev: usize, qpn: u32): i32 { return qpDestroyV(changetype<Device>(dev), qpn); }
export function qpState(dev: usize, qpn: u32): u32 { return qpAt(changetype<Device>(dev), qpn).state; }
/** RoCEv2 QP `qpn`'s sending rate under DCQCN, Mb/s: 0 while it is not limited (line rate). */
export function qpRateMbps(dev: usize, qpn: u32): f64 { return rcOf(qpAt(changetype<Device>(dev), qpn)).rateMbps; }
/** RoCEv2 QP `qpn`'s request payload bytes sent (retransmissions included) and, as a responder, accepted in order. */
export function qpTxBytes(dev: usize, qpn: u32): f64 { return <f64>qpAt(changetype<Device>(dev), qpn).txBytes; }
export function qpRxBytes(dev: usize, qpn: u32): f64 { return <f64>qpAt(changetype<Device>(dev), qpn).rxBytes; }

// ---- the MetaRoCE-like transport's paths, for observers (metaroce/state.ts)
import { mrtPathCount as mrtPathCountV, mrtPathRead as mrtPathReadV } from "./metaroce/state";
/** Paths of the device's MetaRoCE-like connections (0 on a RoCEv2 device). */
export function mrtPathCount(dev: usize): u32 { return mrtPathCountV(changetype<Device>(dev)); }
/** Writes path `g`'s MRT_PATH record at `dst` (MRT_PATH_SIZE bytes); false when there is no such path. */
export function mrtPathRead(dev: usize, g: u32, dst: usize): bool { return mrtPathReadV(changetype<Device>(dev), g, dst); }

// ---- the split of the ports into scale-up and scale-out groups, changed at run time (nic/port-groups.ts)
import { portSplit as portSplitV, portSplitBlocker as portSplitBlockerV, portSplitSet as portSplitSetV } from "./nic/port-groups";
/** Ports 0 .. portSplit - 1 are the scale-up group now, the rest the scale-out group. */
export function portSplit(dev: usize): u32 { return portSplitV(changetype<Device>(dev)); }
/** What stops a re-split to `up` scale-up ports now: 0 (nothing), or PORT_SPLIT_BLOCK_* << 56 | peer << 32 | QP number or connection. */
export function portSplitBlocker(dev: usize, up: u32): u64 { return portSplitBlockerV(changetype<Device>(dev), up); }
/** Re-splits the ports at the device's time: 0, CMD_ERR_ARGUMENT (more than the ports) or CMD_ERR_IN_USE (not quiescent: portSplitBlocker). */
export function portSplitSet(dev: usize, up: u32): i32 { return portSplitSetV(changetype<Device>(dev), up); }

/** Host doorbells (classic or express) that may still be written before time advances. */
export function hostDoorbellRoom(dev: usize): u32 { return dbqRoom(hostDbq(changetype<Device>(dev))); }

/**
 * The host rings a classic doorbell: a posted 8-byte write across PCIe, leaving at
 * max(atPs, now) (behind the host's earlier writes). False (nothing sent) when
 * hostDoorbellRoom is 0.
 */
export function hostSqDoorbell(dev: usize, qpn: u32, pi16: u32, atPs: u64): bool { return hostDoorbell(changetype<Device>(dev), DbKind.Sq, qpn, pi16, 0, atPs); }
export function hostRqDoorbell(dev: usize, qpn: u32, pi16: u32, atPs: u64): bool { return hostDoorbell(changetype<Device>(dev), DbKind.Rq, qpn, pi16, 0, atPs); }
/** The host writes a whole WQE (at wasm address `wqe`) into the express window at max(atPs, now). False (nothing sent) when hostDoorbellRoom is 0. */
export function hostExpress(dev: usize, wqe: usize, atPs: u64): bool {
  return hostDoorbell(changetype<Device>(dev), DbKind.Express, load<u32>(wqe + WQE_QPN), 0, wqe, atPs);
}
function hostDoorbell(d: Device, kind: DbKind, qpn: u32, pi16: u32, wqe: usize, at: u64): bool {
  if (dbqRoom(hostDbq(d)) == 0) return false;
  const arrival = pcieWrite(d, PcieDir.Down, at > d.now ? at : d.now, wqe != 0 ? <u64>WQE_SIZE : 8);
  return dbqPush(d, d.cfg.engines, arrival, kind, qpn, pi16 & 0xffff, wqe);
}

/** The compute-load generator's HBM demand, in Gb/s (0 stops it). */
export function setComputeLoad(dev: usize, gbps: f64): void {
  const d = changetype<Device>(dev);
  hbmSetCompute(d, d.now, gbps / 8000);
}
/**
 * Starts the matmul grid's load now (compute/grid.ts): `tiles` tiles of `tileBytes` HBM bytes
 * and `tileFlops` flops each. False while a load runs, or for an empty load.
 */
export function computeStart(dev: usize, tiles: u32, tileBytes: u64, tileFlops: f64): bool {
  const d = changetype<Device>(dev);
  return gridStart(d, d.now, tiles, tileBytes, tileFlops);
}
/** Takes `units` compute units away from the load from now (0 gives them back); false unless below computeUnits. */
export function computeReserve(dev: usize, units: u32): bool {
  const d = changetype<Device>(dev);
  if (units >= d.cfg.computeUnits) return false;
  gridReserve(d, d.now, units);
  return true;
}
/** The matmul grid's load: 0 tiles, 1 tiles done, 2 start (ps), 3 end (ps; NEVER while it runs), 4 time computing (ps), 5 time stalled on a load (ps). */
export function computeState(dev: usize, field: u32): u64 {
  const g = gridOf(changetype<Device>(dev));
  switch (field) {
    case 0: return g.tiles;
    case 1: return g.done;
    case 2: return g.startPs;
    case 3: return g.doneAt;
    case 4: return g.computePs;
    case 5: return g.stallPs;
    default: return 0;
  }
}
/** HBM bytes served so far to flow class `cls` (0 NIC, 1 reduction, 2 compute). */
export function hbmServed(dev: usize, cls: u32): f64 {
  const d = changetype<Device>(dev);
  return served(d, d.now, cls);
}
/**
 * Send entries of QP `qpn` the NIC has finished with (free-running, in the numbering of the
 * poster's own producer index): the poster may fill the ring up to this plus its depth.
 */
export function qpSqDone(dev: usize, qpn: u32): u32 { return qpAt(changetype<Device>(dev), qpn).sqCi; }
/** Receive entries of QP `qpn` the NIC has finished with (free-running). */
export function qpRqDone(dev: usize, qpn: u32): u32 { return qpAt(changetype<Device>(dev), qpn).rqCi; }

// ---- ports: the device/fabric boundary (nic/ports.ts). The host drains the transmit ring and
// fills the receive ring a window at a time.
import { portsOf, txRing, ringConsume, portPause, portsUnblock } from "./nic/ports";
import { rxPut as rxPutV } from "./nic/rx";

/** Wasm address of the transmit ring's records (txRingEntries of PKT_SIZE). */
export function txRecords(dev: usize): usize { return txRing(changetype<Device>(dev)).recs; }
/** Wasm address of the transmit ring's body area (full mode). */
export function txBodies(dev: usize): usize { return txRing(changetype<Device>(dev)).body; }
/** Slot of the oldest record in the transmit ring. */
export function txHead(dev: usize): u32 { return txRing(changetype<Device>(dev)).head; }
/** Records waiting in the transmit ring. */
export function txCount(dev: usize): u32 { return txRing(changetype<Device>(dev)).count; }
/** The host has taken the `n` oldest records: their room is free again, and ports that waited for it send on. */
export function txConsume(dev: usize, n: u32): void {
  const d = changetype<Device>(dev);
  ringConsume(txRing(d), n);
  portsUnblock(d, d.now);
}
/** Wasm address where the host stages arrivals for rxPut (rxRingEntries records of PKT_SIZE). */
export function rxStage(dev: usize): usize { return portsOf(changetype<Device>(dev)).stage; }
/** Wasm address of the staged arrivals' body area (rxBodyBytes; a record's body_off is relative to it). */
export function rxStageBodies(dev: usize): usize { return portsOf(changetype<Device>(dev)).stageBody; }
/** Takes `n` staged arrivals (sorted by time) into the receive ring; returns how many fitted. */
export function rxPut(dev: usize, n: u32): u32 { return rxPutV(changetype<Device>(dev), n); }

/**
 * The JIT's counters for device `dev` into `dst` (9 u64: regions translated, cache flushes,
 * invalidations by stores into translated code, wasm bytes emitted, translations the host could
 * not compile, calls into translations, those that jumped out of their region, those that left an
 * instruction to the interpreter, instructions retired in translated code); all 0 without a cache.
 */
export function jitStats(dev: usize, dst: usize): void {
  const c = jitCacheIfAny(changetype<Device>(dev));
  const any = changetype<usize>(c) != 0;
  store<u64>(dst, any ? <u64>c.translated : 0);
  store<u64>(dst, any ? <u64>c.flushes : 0, 8);
  store<u64>(dst, any ? <u64>c.invalidations : 0, 16);
  store<u64>(dst, any ? c.emittedBytes : 0, 24);
  store<u64>(dst, any ? <u64>c.compileFailures : 0, 32);
  store<u64>(dst, any ? c.calls : 0, 40);
  store<u64>(dst, any ? c.jumpsOut : 0, 48);
  store<u64>(dst, any ? c.sideExits : 0, 56);
  store<u64>(dst, any ? c.retired : 0, 64);
}

/**
 * Run-ahead's counters for this instance (all its devices) into `dst` (3 u64: engines that went
 * ahead of their window, instructions they retired ahead, settles: an engine put back and run
 * again because the NIC reached its SRAM while it was ahead; engine/ahead.ts).
 */
export function aheadStats(dst: usize): void { aheadStatsTo(dst); }

/** Run-ahead on (1, the default) or off (0) for every device of this instance: a speed setting (results are the same). */
export function aheadEnable(on: u32): void { aheadSetEnabled(on != 0); }

/** 1 when a translation engine `e` of device `dev` runs was made from its SRAM word at `pc` (that code runs translated), else 0. */
export function jitTranslatedAt(dev: usize, e: u32, pc: u32): u32 {
  const c = jitCacheIfAny(changetype<Device>(dev));
  if (changetype<usize>(c) == 0 || c.codePages == 0 || e >= c.engines || (pc >> 2) >= c.words) return 0;
  return load<u8>(codePagesOf(c, e) + <usize>(pc >> JIT_PAGE_SHIFT)) != 0 ? 1 : 0;
}

/** Device `dev`'s JIT translates a block start at its `landings`-th landing (1..255; 255 unless set); 0 when it runs interpreted. */
export function jitSetHot(dev: usize, landings: u32): u32 { return cacheSetHot(changetype<Device>(dev), landings) ? 1 : 0; }

/** Logs the instructions of the engines in `mask` into `cap` records of 16 bytes at `buf` (engine/debug.ts; cap 0: no log). */
export function insnLog(dev: usize, buf: usize, cap: u32, mask: u64): void { insnLogSet(changetype<Device>(dev), buf, cap, mask); }
/** Instructions the log saw since insnLog, including those past its capacity. */
export function insnLogCount(dev: usize): u64 { return debugOf(changetype<Device>(dev)).logCount; }

/** Sets device `dev`'s `jit` config field (Device.restore: a snapshot taken in one mode continues in the other). */
export function configSetJit(dev: usize, on: u32): void {
  changetype<Device>(dev).cfg.jit = on != 0 ? 1 : 0;
}

// ---- the fabric (assembly/fabric/: a fabric is a handle too, in a core instance of its own or in
// the instance of its devices)
export {
  fabricNew, fabricInit, fabricSeed, fabricInbox, fabricIngest, fabricNextEvent, fabricRunTo, fabricTake, fabricRelease, fabricEpPaused,
  fabricOutages, fabricSchedule, fabricRebuildGroups, portCatchUp as fabricCatchUp,
  fabricReadFrame, fabricMarkCe, fabricDraw, fabricEcmpPick, fabricHashTuple, fabricEventPush, fabricEventPop,
  fabricPartition, fabricMoveOut, fabricPartIn, fabricAdopt, fabricIngestDiverted,
} from "./fabric/fabric";

// ---- a cluster: the fabric and the devices of its instance, their window loop in the core (cluster.ts)
export { clusterNew, clusterSetDevice, clusterRun, clusterAttention, clusterBegin, clusterDevices, clusterNextLocal } from "./cluster";
