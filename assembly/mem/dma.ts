// DMA addresses (layouts/memmap.json "dma"): the one address space the NIC's DMA reaches —
// engines' SRAM at DMA_SRAM_BASE (one SRAM_WINDOW each), HBM at DMA_HBM_BASE, host memory at
// DMA_HOST_BASE — and the wasm address behind each.

import { nicOf } from "../nic/state";
import { Device, Config } from "../core/device";
import { hartAt } from "../engine/engines";
import { jitSramWrite } from "../engine/jit-cache";
import { aheadTouch } from "../engine/ahead";

/** Where the device's memories are in the arena (create.ts places them last, 64-byte aligned). */
@unmanaged export class Memories {
  hbm: usize; // cfg.hbmBytes
  host: usize; // cfg.hostMemBytes: host memory reached over PCIe
}

@inline export function memOf(dev: Device): Memories { return changetype<Memories>(dev.mem); }

export const MEMORIES_BYTES: usize = (offsetof<Memories>() + 15) & ~(<usize>15);
import { DMA_SRAM_BASE, SRAM_WINDOW, DMA_HBM_BASE, DMA_HOST_BASE } from "../generated/layouts";

@inline export function dmaIsHbm(dev: Device, addr: u64, len: u64): bool {
  return addr >= DMA_HBM_BASE && addr - DMA_HBM_BASE <= <u64>dev.cfg.hbmBytes && len <= <u64>dev.cfg.hbmBytes - (addr - DMA_HBM_BASE);
}

@inline export function dmaIsHost(dev: Device, addr: u64, len: u64): bool {
  return addr >= DMA_HOST_BASE && addr - DMA_HOST_BASE <= <u64>dev.cfg.hostMemBytes && len <= <u64>dev.cfg.hostMemBytes - (addr - DMA_HOST_BASE);
}

/** Is [addr, addr + len) inside one engine's SRAM (DMA_SRAM_BASE + engine x SRAM_WINDOW)? */
@inline export function dmaIsSram(dev: Device, addr: u64, len: u64): bool {
  if (addr < DMA_SRAM_BASE) return false;
  const rel = addr - DMA_SRAM_BASE;
  const e = rel / <u64>SRAM_WINDOW, off = rel % <u64>SRAM_WINDOW;
  return e < <u64>dev.cfg.engines && off <= <u64>dev.cfg.sramBytes && len <= <u64>dev.cfg.sramBytes - off;
}

/**
 * The HBM bytes behind its addresses: hbmBytes, or none when config hbmBacking is 0 (timing mode
 * only: HBM is addresses for memory regions and their bounds, and payloads carry no bytes).
 * An engine's loads and stores reach these; the arena holds these.
 */
@inline export function hbmMapped(c: Config): u32 {
  return c.hbmBacking != 0 ? c.hbmBytes : 0;
}

/**
 * Wasm address of DMA range [addr, addr + len), or 0 when it is not wholly in one memory or has
 * no bytes behind it (HBM without backing).
 */
export function dmaPtr(dev: Device, addr: u64, len: u64): usize {
  if (dmaIsHbm(dev, addr, len)) return dev.cfg.hbmBacking != 0 ? memOf(dev).hbm + <usize>(addr - DMA_HBM_BASE) : 0;
  if (dmaIsHost(dev, addr, len)) return memOf(dev).host + <usize>(addr - DMA_HOST_BASE);
  if (dmaIsSram(dev, addr, len)) {
    const rel = addr - DMA_SRAM_BASE;
    const e = <u32>(rel / <u64>SRAM_WINDOW), off = <u32>(rel % <u64>SRAM_WINDOW);
    // an engine running ahead of the windows is put back where they have it (engine/ahead.ts)
    aheadTouch(dev, e);
    // the caller may write: translated code read from there is dropped (engine/jit-cache.ts)
    jitSramWrite(dev, e, off, <u32>len);
    return hartAt(dev, e).sram + <usize>off;
  }
  return 0;
}

/**
 * Copies checked DMA range [src, src + len) to [dst, dst + len): nothing when either is HBM
 * without bytes (config hbmBacking 0: the device is in timing mode, where payloads carry none).
 */
export function dmaCopy(dev: Device, dst: u64, src: u64, len: u64): void {
  const to = dmaPtr(dev, dst, len), from = dmaPtr(dev, src, len);
  if (to != 0 && from != 0) memory.copy(to, from, <usize>len);
}

/** The DMA address of an address in engine `e`'s own view: its SRAM window or HBM. */
export function engineToDma(e: u32, addr: u32): u64 {
  return addr < SRAM_WINDOW ? DMA_SRAM_BASE + <u64>e * <u64>SRAM_WINDOW + <u64>addr : <u64>addr;
}


/** Time for the NIC to move `len` bytes through an engine's SRAM interface, at its DMA rate. */
@inline export function sramDmaPs(dev: Device, len: u64): u64 {
  return <u64>Math.ceil(<f64>len / nicOf(dev).nicDmaBytesPerPs);
}
