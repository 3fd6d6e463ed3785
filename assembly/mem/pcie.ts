// The PCIe link between the host and the device: two FIFO directions, each serialising
// transfers at pcieGbps, plus a fixed latency. Reservations are made when a transfer is
// known, so every arrival time is computed once, deterministically.

import { Device } from "../core/device";
import { maxU64 } from "../core/time";

/** The link's state: when each direction is free again. */
@unmanaged export class Pcie {
  pcieDownBusy: u64;
  pcieUpBusy: u64;
}

@inline export function pcieOf(dev: Device): Pcie { return changetype<Pcie>(dev.pcie); }

export const PCIE_BYTES: usize = (offsetof<Pcie>() + 15) & ~(<usize>15);

export const enum PcieDir {
  Down = 0, // host to device: doorbells, express WQEs, data the NIC reads from host memory
  Up = 1, // device to host: data and completions the NIC writes into host memory
}

/** Picoseconds to move `bytes` at `gbps` Gb/s (rounded up). */
@inline export function serialisePs(bytes: u64, gbps: u64): u64 {
  return (bytes * 8000 + gbps - 1) / gbps;
}

/** Reserves the link for `bytes` starting no earlier than `t`; returns when the last byte has left. */
export function pcieSend(dev: Device, dir: PcieDir, t: u64, bytes: u64): u64 {
  const busyAt = dir == PcieDir.Down ? pcieOf(dev).pcieDownBusy : pcieOf(dev).pcieUpBusy;
  const end = maxU64(t, busyAt) + serialisePs(bytes, <u64>dev.cfg.pcieGbps);
  if (dir == PcieDir.Down) pcieOf(dev).pcieDownBusy = end;
  else pcieOf(dev).pcieUpBusy = end;
  return end;
}

/** A posted write across the link (host MMIO, or a NIC write into host memory): arrival time. */
export function pcieWrite(dev: Device, dir: PcieDir, t: u64, bytes: u64): u64 {
  return pcieSend(dev, dir, t, bytes) + dev.cfg.pcieWriteLatencyPs;
}

/** A NIC read of `bytes` of host memory issued at `t`: when the data has arrived. */
export function pcieRead(dev: Device, t: u64, bytes: u64): u64 {
  return pcieSend(dev, PcieDir.Down, t + dev.cfg.pcieReadLatencyPs, bytes);
}
