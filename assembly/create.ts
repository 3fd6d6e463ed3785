// Creates a device: lays out everything it owns in one arena, so that save/restore is a copy
// of bytes. This is the one module that knows every block; the blocks know only core/.

import {
  CFG_ENGINES, CFG_ENGINE_CLOCK_KHZ, CFG_SRAM_BYTES, CFG_HBM_BYTES, CFG_INTERLEAVE_QUANTUM_PS, CFG_SEED,
  CFG_CPI_ALU, CFG_CPI_MUL, CFG_CPI_DIV, CFG_CPI_BRANCH_TAKEN, CFG_CPI_JUMP, CFG_CPI_LOAD_SRAM, CFG_CPI_STORE_SRAM,
  CFG_CPI_LOAD_HBM, CFG_CPI_STORE_HBM, CFG_CPI_AMO_HBM, CFG_CPI_MMIO, CFG_CPI_EXPRESS, CFG_CPI_CSR, CFG_CPI_TRAP,
  CFG_EVENT_CAPACITY, CFG_TRACE_RING_ENTRIES, CFG_CONSOLE_RING_BYTES, CFG_MAILBOX_DEPTH, CFG_SLOTS, STAT_COUNT,
  CFG_HOST_MEM_BYTES, CFG_MAX_PDS, CFG_MAX_MRS, CFG_MAX_CQS, CFG_MAX_QPS, CFG_PCIE_GBPS, CFG_PCIE_WRITE_LATENCY_PS,
  CFG_PCIE_READ_LATENCY_PS, CFG_NIC_DOORBELL_LATENCY_PS, CFG_NIC_WQE_LATENCY_PS, CFG_NIC_COMMAND_PS, CFG_NIC_SRAM_LATENCY_PS, CFG_NIC_DMA_GBPS, CFG_HBM_GBPS,
  CFG_HBM_LATENCY_PS, CFG_HBM_QUEUING_PCT, CFG_REDUCE_SETUP_PS, CFG_REDUCE_BYTES_PER_CYCLE, CFG_RNR_TIMER_PS, CFG_RNR_RETRIES,
  CFG_TRANSPORT_TIMEOUT_PS, CFG_TRANSPORT_RETRIES, CFG_HOST_DOORBELL_QUEUE, CFG_ENGINE_DOORBELL_QUEUE, WQE_SIZE,
  STAT_TRACE_DROPPED,
} from "./generated/layouts";
import { Hart, EngineState, NO_RESERVATION, MSTATUS_MPP, HART_STRIDE, NIC_IRQ_DEPTH, hartAt } from "./engine/hart";
import { Rng, rngSeed } from "./core/rng";
import { NEVER } from "./core/time";
import { Fifo, fifoInit } from "./core/fifo";
import { Mr, Cq, Qp, MR_STRIDE, CQ_STRIDE, QP_STRIDE, QP_RANGE_BYTES, NOT_ARMED, OWNER_HOST } from "./nic/verbs";
import { FLOW_BYTES, FLOW_CLASSES, FLOW_SLOTS } from "./mem/hbm";
import { PACKET_STRIDE } from "./nic/packet";
import { DbQueue, DBQ_STRIDE, dbqBytes, dbqInit } from "./nic/doorbells";
import { Device, cfgGet, EVENT_BYTES, TRACE_BYTES } from "./core/device";
import { BLOCK_MAXSIZE } from "rt/common";


@inline function align16(n: usize): usize {
  return (n + 15) & ~(<usize>15);
}

const FIFO_STRIDE: usize = align16(offsetof<Fifo>());

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
  const hostBytes = <usize>cfgGet(cfgIn, CFG_HOST_MEM_BYTES);
  const maxPds = <usize>cfgGet(cfgIn, CFG_MAX_PDS), maxMrs = <usize>cfgGet(cfgIn, CFG_MAX_MRS);
  const maxCqs = <usize>cfgGet(cfgIn, CFG_MAX_CQS), maxQps = <usize>cfgGet(cfgIn, CFG_MAX_QPS);
  const oFifos = off; off = align16(off + n * 4 * FIFO_STRIDE);
  const oIrq = off; off = align16(off + n * <usize>NIC_IRQ_DEPTH * 4);
  const oPds = off; off = align16(off + maxPds * 4);
  const oMrs = off; off = align16(off + maxMrs * MR_STRIDE);
  const oCqs = off; off = align16(off + maxCqs * CQ_STRIDE);
  const oQps = off; off = align16(off + maxQps * QP_STRIDE);
  const oRanges = off; off = align16(off + maxQps * QP_RANGE_BYTES);
  const oQpWqes = off; off = align16(off + maxQps * <usize>WQE_SIZE);
  const oBlocks = off; off = align16(off + n * 4);
  const oReduceSrcs = off; off = align16(off + 32);
  const oPackets = off; off = align16(off + 2 * PACKET_STRIDE);
  const hostDbCap = <usize>cfgGet(cfgIn, CFG_HOST_DOORBELL_QUEUE), engDbCap = <usize>cfgGet(cfgIn, CFG_ENGINE_DOORBELL_QUEUE);
  const oDbqs = off; off = align16(off + (n + 1) * DBQ_STRIDE);
  const oDbMem = off; off = align16(off + n * dbqBytes(engDbCap) + dbqBytes(hostDbCap));
  const oEngExpress = off; off = align16(off + n * <usize>WQE_SIZE);
  const oCmd = off; off = align16(off + n * 48);
  const oFlows = off; off = align16(off + <usize>FLOW_SLOTS * FLOW_BYTES);
  const oServed = off; off = align16(off + <usize>FLOW_CLASSES * 8);
  const oCon = off; off = align16(off + n * conCap);
  const oMbox = off; off = align16(off + n * depth * 8);
  const oStats = off; off = align16(off + <usize>STAT_COUNT * 8);
  const oRng = off; off = align16(off + offsetof<Rng>());
  const oEvents = off; off = align16(off + evCap * EVENT_BYTES);
  const oTrace = off; off = align16(off + trCap * TRACE_BYTES);
  off = (off + 63) & ~(<usize>63);
  const oSram = off; off += n * sramBytes;
  const oHbm = off; off += hbmBytes;
  const oHost = off; off += hostBytes;

  // one heap block holds at most BLOCK_MAXSIZE bytes (just under 1 GiB) and heap.alloc aborts
  // the instance on more; a null device tells the host the config is too large (the field
  // maxima keep `off` below 4 GiB, 3 GiB of memories and under 256 MiB of tables, so it has
  // not wrapped)
  if (off + 64 > BLOCK_MAXSIZE) return changetype<Device>(0);
  const base = heap.alloc(off + 64);
  const arena = (base + 63) & ~(<usize>63);
  // the bump allocator hands out memory never used before, which wasm zeroes when it grows;
  // clearing the records is cheap insurance, clearing tens of MiB of SRAM, HBM and host
  // memory again is not
  memory.fill(arena, 0, oSram);
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

  dev.host = arena + oHost;
  dev.hostBytes = <u32>hostBytes;
  dev.maxPds = <u32>maxPds;
  dev.maxMrs = <u32>maxMrs;
  dev.maxCqs = <u32>maxCqs;
  dev.maxQps = <u32>maxQps;
  dev.pds = arena + oPds;
  dev.mrs = arena + oMrs;
  dev.cqs = arena + oCqs;
  dev.qps = arena + oQps;
  dev.qpRanges = arena + oRanges;
  dev.qpWqes = arena + oQpWqes;
  dev.blocks = arena + oBlocks;
  dev.reduceSrcs = arena + oReduceSrcs;
  dev.packets = arena + oPackets;
  dev.dbqs = arena + oDbqs;
  for (let i: u32 = 0; i < engines; i++) {
    dbqInit(changetype<DbQueue>(dev.dbqs + <usize>i * DBQ_STRIDE), arena + oDbMem + <usize>i * dbqBytes(engDbCap), <u32>engDbCap, i);
  }
  dbqInit(changetype<DbQueue>(dev.dbqs + n * DBQ_STRIDE), arena + oDbMem + n * dbqBytes(engDbCap), <u32>hostDbCap, OWNER_HOST);
  dev.engExpress = arena + oEngExpress;
  dev.flows = arena + oFlows;
  dev.flowCap = FLOW_SLOTS;
  dev.hbmTickAt = NEVER;
  dev.hbmServed = arena + oServed;
  // rates: Gb/s is 1e9 bits per 1e12 ps, i.e. gbps / 8000 bytes per ps
  dev.hbmBytesPerPs = <f64>cfgGet(cfgIn, CFG_HBM_GBPS) / 8000;
  dev.nicDmaBytesPerPs = <f64>cfgGet(cfgIn, CFG_NIC_DMA_GBPS) / 8000;
  // reduceBytesPerCycle at the engine clock: B/cycle x kHz x 1e3 cycles/s / 1e12 ps/s
  dev.reduceBytesPerPs = <f64>cfgGet(cfgIn, CFG_REDUCE_BYTES_PER_CYCLE) * <f64>dev.khz / 1e9;
  dev.pcieGbps = cfgGet(cfgIn, CFG_PCIE_GBPS);
  dev.pcieWriteLatencyPs = cfgGet(cfgIn, CFG_PCIE_WRITE_LATENCY_PS);
  dev.pcieReadLatencyPs = cfgGet(cfgIn, CFG_PCIE_READ_LATENCY_PS);
  dev.nicDoorbellLatencyPs = cfgGet(cfgIn, CFG_NIC_DOORBELL_LATENCY_PS);
  dev.nicWqeLatencyPs = cfgGet(cfgIn, CFG_NIC_WQE_LATENCY_PS);
  dev.nicCommandPs = cfgGet(cfgIn, CFG_NIC_COMMAND_PS);
  dev.nicSramLatencyPs = cfgGet(cfgIn, CFG_NIC_SRAM_LATENCY_PS);
  dev.hbmLatencyPs = cfgGet(cfgIn, CFG_HBM_LATENCY_PS);
  dev.reduceSetupPs = cfgGet(cfgIn, CFG_REDUCE_SETUP_PS);
  dev.rnrTimerPs = cfgGet(cfgIn, CFG_RNR_TIMER_PS);
  dev.rnrRetries = <u32>cfgGet(cfgIn, CFG_RNR_RETRIES);
  dev.transportTimeoutPs = cfgGet(cfgIn, CFG_TRANSPORT_TIMEOUT_PS);
  dev.transportRetries = <u32>cfgGet(cfgIn, CFG_TRANSPORT_RETRIES);

  dev.cpiAlu = <u32>cfgGet(cfgIn, CFG_CPI_ALU);
  dev.cpiMul = <u32>cfgGet(cfgIn, CFG_CPI_MUL);
  dev.cpiDiv = <u32>cfgGet(cfgIn, CFG_CPI_DIV);
  dev.cpiBranchTaken = <u32>cfgGet(cfgIn, CFG_CPI_BRANCH_TAKEN);
  dev.cpiJump = <u32>cfgGet(cfgIn, CFG_CPI_JUMP);
  dev.cpiLoadSram = <u32>cfgGet(cfgIn, CFG_CPI_LOAD_SRAM);
  dev.cpiStoreSram = <u32>cfgGet(cfgIn, CFG_CPI_STORE_SRAM);
  dev.cpiLoadHbm = <u32>cfgGet(cfgIn, CFG_CPI_LOAD_HBM);
  dev.cpiLoadHbmNow = dev.cpiLoadHbm;
  dev.cpiStoreHbm = <u32>cfgGet(cfgIn, CFG_CPI_STORE_HBM);
  dev.cpiAmoHbm = <u32>cfgGet(cfgIn, CFG_CPI_AMO_HBM);
  dev.cpiAmoHbmNow = dev.cpiAmoHbm;
  dev.hbmQueuing = <f64>cfgGet(cfgIn, CFG_HBM_QUEUING_PCT) / 100;
  dev.cpiMmio = <u32>cfgGet(cfgIn, CFG_CPI_MMIO);
  dev.cpiExpress = <u32>cfgGet(cfgIn, CFG_CPI_EXPRESS);
  dev.cpiCsr = <u32>cfgGet(cfgIn, CFG_CPI_CSR);
  dev.cpiTrap = <u32>cfgGet(cfgIn, CFG_CPI_TRAP);

  for (let i: u32 = 0; i < engines; i++) {
    const h = hartAt(dev, i);
    h.id = i;
    h.regs = arena + oRegs + <usize>i * 128;
    h.sram = arena + oSram + <usize>i * sramBytes;
    const fifos = arena + oFifos + <usize>i * 4 * FIFO_STRIDE;
    h.console = changetype<Fifo>(fifos);
    h.mboxIn = changetype<Fifo>(fifos + FIFO_STRIDE);
    h.mboxOut = changetype<Fifo>(fifos + 2 * FIFO_STRIDE);
    fifoInit(h.console, arena + oCon + <usize>i * conCap, <u32>conCap, 0);
    const mbox = arena + oMbox + <usize>i * depth * 8;
    fifoInit(h.mboxIn, mbox, <u32>depth, 2);
    fifoInit(h.mboxOut, mbox + depth * 4, <u32>depth, 2);
    h.cmd = arena + oCmd + <usize>i * 48;
    h.nicIrq = changetype<Fifo>(fifos + 3 * FIFO_STRIDE);
    fifoInit(h.nicIrq, arena + oIrq + <usize>i * <usize>NIC_IRQ_DEPTH * 4, NIC_IRQ_DEPTH, 2);
    h.state = EngineState.Idle;
    h.mstatus = MSTATUS_MPP;
    h.mtimecmp = NEVER;
    h.resvAddr = NO_RESERVATION;
  }
  for (let i: u32 = 0; i < <u32>maxCqs; i++) changetype<Cq>(dev.cqs + <usize>i * CQ_STRIDE).armEngine = NOT_ARMED;
  for (let i: u32 = 0; i < <u32>maxQps; i++) changetype<Qp>(dev.qps + <usize>i * QP_STRIDE).waitBlock = NOT_ARMED;
  return dev;
}

