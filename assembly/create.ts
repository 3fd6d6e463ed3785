// Creates a device: lays out everything it owns in one arena, so that save/restore is a copy
// of bytes. This is the one module that knows every block; each block sizes and initialises
// its own state (enginesBytes/enginesInit, nicBytes/nicInit, ...), and create.ts only places
// them, then the core's own tables, then the memories.

import { Device, Config, EVENT_BYTES, TRACE_BYTES } from "./core/device";
import { rngSeed, rngOf, rngStreamOf, RNG_BLOCKS, RNG_STRIDE } from "./core/rng";
import { enginesBytes, enginesInit } from "./engine/engines";
import { debugBytes, debugInit } from "./engine/debug";
import { Memories, MEMORIES_BYTES, hbmMapped } from "./mem/dma";
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
 * doorbell arrival per ringer (engines and the host), a phase or NicStartNext and a transport timer
 * per QP, a completion per HBM flow slot, a transmit per port, the HBM tick, the host mailbox
 * queue's head, the receive ring's head, a timer per MetaRoCE-like connection, the matmul
 * grid's tile end and retry (its load's end is an HBM flow's); with a margin.
 */
export function eventBound(c: Config): u32 {
  return 2 * (c.engines + 1) + 2 * c.maxQps + FLOW_SLOTS + c.ports + 5 + (c.transport != 0 ? c.mrtConnections : 0) + 16;
}

/**
 * Where each block of a device goes in its arena (bytes from the arena's start), and the
 * arena's size: createDevice lays a device out by it, and the host asks for `bytes`
 * (index.ts arenaBytesFor) to size a cluster before it builds one.
 */
@unmanaged export class Layout {
  cfg: usize;
  eng: usize;
  debug: usize;
  mem: usize;
  hbmModel: usize;
  pcie: usize;
  grid: usize;
  nic: usize;
  ports: usize;
  mrt: usize;
  stats: usize;
  rng: usize;
  events: usize;
  evCap: usize;
  trace: usize;
  sram: usize;
  hbm: usize;
  host: usize;
  bytes: usize;
}

/** The layout of a device configured by `c`: each block 16-byte aligned, the memories 64-byte aligned, last. */
export function layoutOf(c: Config, L: Layout): void {
  const n = <usize>c.engines;
  L.evCap = <usize>(c.eventCapacity != 0 ? c.eventCapacity : eventBound(c));
  let off: usize = align16(offsetof<Device>());
  L.cfg = off; off = align16(off + offsetof<Config>());
  L.eng = off; off = align16(off + enginesBytes(c));
  L.debug = off; off = align16(off + debugBytes());
  L.mem = off; off += MEMORIES_BYTES;
  L.hbmModel = off; off = align16(off + hbmModelBytes());
  L.pcie = off; off += PCIE_BYTES;
  L.grid = off; off = align16(off + gridBytes());
  L.nic = off; off = align16(off + nicBytes(c));
  L.ports = off; off = align16(off + portsBytes(c));
  L.mrt = off; off = align16(off + mrtBytes(c));
  L.stats = off; off = align16(off + <usize>STAT_COUNT * 8);
  L.rng = off; off += <usize>RNG_BLOCKS * RNG_STRIDE;
  L.events = off; off = align16(off + L.evCap * EVENT_BYTES);
  L.trace = off; off = align16(off + <usize>c.traceRingEntries * TRACE_BYTES);
  off = (off + 63) & ~(<usize>63);
  L.sram = off; off += n * <usize>c.sramBytes;
  L.hbm = off; off += <usize>hbmMapped(c); // (none without backing: config hbmBacking)
  L.host = off; off += <usize>c.hostMemBytes;
  L.bytes = off;
}

/** The scratch block createDevice and arenaBytesFor read a config into: the Config, then its Layout. */
const SCRATCH_LAYOUT = align16(offsetof<Config>());
const SCRATCH_BYTES = SCRATCH_LAYOUT + offsetof<Layout>();

/** The one scratch block (made at first use, kept: the core frees nothing, see createDevice). */
let scratch: usize = 0;

/** The config slots `cfgIn` read into the scratch block, with room for its Layout. */
function scratchConfig(cfgIn: usize): Config {
  if (scratch == 0) scratch = heap.alloc(SCRATCH_BYTES);
  const c = changetype<Config>(scratch);
  configLoad(c, cfgIn);
  return c;
}

/** The layout of the device scratch config `c` describes, in its scratch block. */
function scratchLayout(c: Config): Layout {
  const L = changetype<Layout>(changetype<usize>(c) + SCRATCH_LAYOUT);
  layoutOf(c, L);
  return L;
}

/** The bytes of the arena a device configured by the slots `cfgIn` would take (the host sizes a cluster by it). */
export function arenaBytesFor(cfgIn: usize): usize {
  const c = scratchConfig(cfgIn);
  return scratchLayout(c).bytes;
}

/** The events a device configured by the slots `cfgIn` can have pending at once (eventBound): the least eventCapacity that cannot overflow. */
export function eventBoundFor(cfgIn: usize): u32 {
  const c = scratchConfig(cfgIn);
  return eventBound(c);
}

/** Why createDevice last returned a null device: its arena exceeds one heap block, or the instance has no room left for it. */
export const REFUSED_TOO_LARGE: u32 = 1, REFUSED_INSTANCE_FULL: u32 = 2;
let refusal: u32 = 0;

/** Why the last createDevice that returned a null device did (REFUSED_*), 0 before any did. */
export function createRefusal(): u32 { return refusal; }

/**
 * The most memory a core instance has: asconfig.json's maximumMemory, 65,535 pages, a page
 * short of 4 GiB. At 65,536 pages the stub allocator's page arithmetic (pages << 16, in 32
 * bits) wraps to 0 and every allocation after it traps: a 64-device cluster whose heap doubled
 * onto exactly 4 GiB stopped at its first allocation after.
 */
const MEMORY_MAX_BYTES: u64 = <u64>65535 << 16;

/**
 * Lays out a whole device in one arena. The config slots (`cfgIn`, CFG_SLOTS u64) have been
 * validated by the host; values are trusted here. Returns a null device when the arena would
 * not fit one block of the heap.
 */
export function createDevice(cfgIn: usize): Device {
  // the config is read once into a scratch record to size the arena, then copied into it; the
  // layout goes in the same scratch block
  const c = scratchConfig(cfgIn);
  const L = scratchLayout(c);
  const off = L.bytes;

  // one heap block holds at most BLOCK_MAXSIZE bytes (just under 1 GiB) and heap.alloc aborts
  // the instance on more; a null device tells the host the config is too large (the field
  // maxima keep `off` below 4 GiB, 3 GiB of memories and under 256 MiB of tables, so it has
  // not wrapped)
  if (off + 64 > BLOCK_MAXSIZE) { refusal = REFUSED_TOO_LARGE; return changetype<Device>(0); }
  // nor one the instance cannot hold beside what it holds (its memory stops a page short of
  // 4 GiB, MEMORY_MAX_BYTES; the allocator's arithmetic wraps past 2^32 and hands out a block
  // at the bottom of memory): where the allocator is now (a block of no bytes, kept: the core
  // frees nothing), and the arena's block after it
  const top = <u64>heap.alloc(0);
  if (top + <u64>off + 128 > MEMORY_MAX_BYTES) { refusal = REFUSED_INSTANCE_FULL; return changetype<Device>(0); }
  // The arena is zero and untouched: the bump allocator (runtime "stub") hands out memory no
  // block was ever given before, which wasm zeroes when it grows, and the core frees nothing
  // (the stub gives a freed last block out again; test/architecture.test.ts holds the core to
  // no heap.free). Clearing it, as this did, wrote every page of a device's records, megabytes
  // with the default config: 1,024 of the fabric bench's devices held 2.7 GiB resident, 0.6 now.
  const base = heap.alloc(off + 64);
  const arena = (base + 63) & ~(<usize>63);
  const dev = changetype<Device>(arena);
  dev.arenaBase = arena;
  dev.arenaBytes = off;
  dev.cfg = changetype<Config>(arena + L.cfg);
  memory.copy(arena + L.cfg, changetype<usize>(c), offsetof<Config>());

  dev.stats = arena + L.stats;
  dev.rng = arena + L.rng;
  for (let b: u32 = 0; b < RNG_BLOCKS; b++) rngSeed(rngOf(dev, b), dev.cfg.seed, rngStreamOf(dev.cfg.deviceId, b));
  dev.events = arena + L.events;
  dev.evCap = <u32>L.evCap;
  dev.trace = arena + L.trace;
  dev.trCap = dev.cfg.traceRingEntries;

  enginesInit(dev, arena + L.eng, arena + L.sram);
  dev.debug = arena + L.debug;
  debugInit(dev.debug);
  dev.mem = arena + L.mem;
  const m = changetype<Memories>(dev.mem);
  m.hbm = arena + L.hbm;
  m.host = arena + L.host;
  hbmModelInit(dev, arena + L.hbmModel);
  dev.pcie = arena + L.pcie;
  gridInit(dev, arena + L.grid);
  nicInit(dev, arena + L.nic);
  portsInit(dev, arena + L.ports);
  mrtInit(dev, arena + L.mrt);
  return dev;
}
