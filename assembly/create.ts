// Creates a device: lays out everything it owns in one arena, so that save/restore is a copy
// of bytes. This is the one module that knows every block; each block sizes and initialises
// its own state (enginesBytes/enginesInit, nicBytes/nicInit, ...), and create.ts only places
// them, then the core's own tables, then the memories.

import { Device, Config, EVENT_BYTES, TRACE_BYTES } from "./core/device";
import { rngSeed, rngOf, rngStreamOf, RNG_BLOCKS, RNG_STRIDE } from "./core/rng";
import { enginesBytes, enginesInit } from "./engine/engines";
import { debugBytes, debugInit } from "./engine/debug";
import { Memories, MEMORIES_BYTES } from "./mem/dma";
import { hbmModelBytes, hbmModelInit, FLOW_SLOTS } from "./mem/hbm";
import { PCIE_BYTES } from "./mem/pcie";
import { gridBytes, gridInit } from "./compute/grid";
import { nicBytes, nicInit } from "./nic/layout";
import { portsBytes, portsInit } from "./nic/ports";
import { mrtBytes, mrtInit } from "./metaroce/state";
import { configLoad, STAT_COUNT } from "./generated/layouts";
import { BLOCK_MAXSIZE } from "rt/common";

@inline function align16(n: usize): usize {
  return (n + 15) & ~(<usize>15);
}

/**
 * Events that can be pending at once (ARCHITECTURE.md, event loop): a timer per engine, a
 * doorbell arrival per ringer (engines and the host), a phase or kick and a transport timer
 * per QP, a completion per HBM flow slot, a transmit per port, the HBM tick, the host mailbox
 * queue's head, the receive ring's head, a timer per MetaRoCE-like connection, the matmul
 * grid's tile end and retry (its load's end is an HBM flow's); with a margin.
 */
export function eventBound(c: Config): u32 {
  return 2 * (c.engines + 1) + 2 * c.maxQps + FLOW_SLOTS + c.ports + 5 + (c.transport != 0 ? c.mrtConnections : 0) + 16;
}

/**
 * Lays out a whole device in one arena. The config slots (`cfgIn`, CFG_SLOTS u64) have been
 * validated by the host; values are trusted here. Returns a null device when the arena would
 * not fit one block of the heap.
 */
export function createDevice(cfgIn: usize): Device {
  // the config is read once into a scratch record to size the arena, then copied into it
  const c = changetype<Config>(heap.alloc(offsetof<Config>()));
  configLoad(c, cfgIn);
  const n = <usize>c.engines;
  const evCap = <usize>(c.eventCapacity != 0 ? c.eventCapacity : eventBound(c));

  // offsets within the arena, each block 16-byte aligned (the memories 64-byte aligned)
  let off: usize = align16(offsetof<Device>());
  const oCfg = off; off = align16(off + offsetof<Config>());
  const oEng = off; off = align16(off + enginesBytes(c));
  const oDebug = off; off = align16(off + debugBytes());
  const oMem = off; off += MEMORIES_BYTES;
  const oHbmModel = off; off = align16(off + hbmModelBytes());
  const oPcie = off; off += PCIE_BYTES;
  const oGrid = off; off = align16(off + gridBytes());
  const oNic = off; off = align16(off + nicBytes(c));
  const oPorts = off; off = align16(off + portsBytes(c));
  const oMrt = off; off = align16(off + mrtBytes(c));
  const oStats = off; off = align16(off + <usize>STAT_COUNT * 8);
  const oRng = off; off += <usize>RNG_BLOCKS * RNG_STRIDE;
  const oEvents = off; off = align16(off + evCap * EVENT_BYTES);
  const oTrace = off; off = align16(off + <usize>c.traceRingEntries * TRACE_BYTES);
  off = (off + 63) & ~(<usize>63);
  const oSram = off; off += n * <usize>c.sramBytes;
  const oHbm = off; off += <usize>c.hbmBytes;
  const oHost = off; off += <usize>c.hostMemBytes;

  // one heap block holds at most BLOCK_MAXSIZE bytes (just under 1 GiB) and heap.alloc aborts
  // the instance on more; a null device tells the host the config is too large (the field
  // maxima keep `off` below 4 GiB, 3 GiB of memories and under 256 MiB of tables, so it has
  // not wrapped)
  if (off + 64 > BLOCK_MAXSIZE) { heap.free(changetype<usize>(c)); return changetype<Device>(0); }
  const base = heap.alloc(off + 64);
  const arena = (base + 63) & ~(<usize>63);
  // the bump allocator hands out memory never used before, which wasm zeroes when it grows;
  // clearing the records is cheap insurance, clearing tens of MiB of SRAM, HBM and host
  // memory again is not
  memory.fill(arena, 0, oSram);
  const dev = changetype<Device>(arena);
  dev.arenaBase = arena;
  dev.arenaBytes = off;
  dev.cfg = changetype<Config>(arena + oCfg);
  memory.copy(arena + oCfg, changetype<usize>(c), offsetof<Config>());
  heap.free(changetype<usize>(c));

  dev.stats = arena + oStats;
  dev.rng = arena + oRng;
  for (let b: u32 = 0; b < RNG_BLOCKS; b++) rngSeed(rngOf(dev, b), dev.cfg.seed, rngStreamOf(dev.cfg.deviceId, b));
  dev.events = arena + oEvents;
  dev.evCap = <u32>evCap;
  dev.trace = arena + oTrace;
  dev.trCap = dev.cfg.traceRingEntries;

  enginesInit(dev, arena + oEng, arena + oSram);
  dev.debug = arena + oDebug;
  debugInit(dev.debug);
  dev.mem = arena + oMem;
  const m = changetype<Memories>(dev.mem);
  m.hbm = arena + oHbm;
  m.host = arena + oHost;
  hbmModelInit(dev, arena + oHbmModel);
  dev.pcie = arena + oPcie;
  gridInit(dev, arena + oGrid);
  nicInit(dev, arena + oNic);
  portsInit(dev, arena + oPorts);
  mrtInit(dev, arena + oMrt);
  return dev;
}
