// Compute interference (scenario `collective.interference`, docs/compute.md): a matmul-like load
// on every device's compute grid (assembly/compute/grid.ts) starts with each size's collective;
// its completion time alongside the collective is compared with the same load run alone on a
// device of the same config. Two ways for communication to take place:
// - `engines`: the collective runs on the message engines (what it runs anyway): it costs the
//   grid nothing but its HBM traffic, which the HBM model shares with the grid's tile loads;
// - `gpu-style`: as on a GPU, communication kernels hold `commUnits` of the grid's units from
//   the collective's start until the device's final signal (they run the reductions and spin
//   waiting for data the rest of the time); the traffic is the same.
// No Node APIs.

import { Context } from "../verbs.js";
import type { Device } from "../device.js";
import type { InterferenceSpec } from "./scenario.js";
import { maxOf } from "../extremes.js";

/** What a matmul load did alongside one size's collective ({@link CollectiveRow.interference}). */
export interface InterferenceRow {
  /** How communication took its resources. */
  mode: InterferenceSpec["mode"];
  /** gpu-style: the units the communication kernels held (engines: 0). */
  commUnits: number;
  /** The load alone on one device, start to end, ps. */
  alonePs: number;
  /** The load alongside the collective on the slowest device, start to end, ps. */
  alongsidePs: number;
  /** alongsidePs / alonePs - 1. */
  slowdown: number;
  /** (alongsidePs - alonePs) / the collective's time: the share of the grid's time the collective cost while it ran. */
  lostPerCollectiveTime: number;
  /** HBM bytes the collective moved on that device (NIC DMA and reductions) while the load ran. */
  collectiveHbmBytes: number;
  /** Per device, the load's time alongside the collective, ps. */
  devicesPs: number[];
}

/** The load's time alone: one device of `config`, nothing else running (the same for every size). */
export async function matmulAlonePs(coreModule: WebAssembly.Module, config: Record<string, number>, spec: InterferenceSpec, untilPs: number): Promise<number> {
  const ctx = await Context.open(coreModule, config);
  ctx.device.startMatmul(spec);
  const step = 1_000_000n;
  while (ctx.device.matmul().endPs === null && ctx.nowPs < BigInt(untilPs)) ctx.run(ctx.nowPs + step);
  const end = ctx.device.matmul().endPs;
  if (end === null) throw new Error(`the matmul load alone did not end within the scenario's limit (${untilPs} ps): fewer tiles, or a longer until`);
  return end;
}

/** The load alongside one collective run: started with it, the units taken and given back per device. */
export class Alongside {
  private readonly released: boolean[];
  private readonly hbmAtStart: number[];
  private readonly hbmAtEnd: (number | null)[];

  constructor(private readonly devices: readonly Device[], private readonly spec: InterferenceSpec) {
    this.released = devices.map(() => spec.mode !== "gpu-style");
    this.hbmAtStart = devices.map((d) => collectiveHbm(d));
    this.hbmAtEnd = devices.map(() => null);
  }

  /** Call right after the collective's doorbells: the load starts on every device now. */
  start(): void {
    for (const d of this.devices) {
      d.startMatmul(this.spec);
      if (this.spec.mode === "gpu-style") d.reserveComputeUnits(this.spec.commUnits);
    }
  }

  /**
   * After each step of the runner: gives device d's units back once its collective has ended
   * (`ended(d)`), at the step's end: a GPU's communication kernel would free them at its final
   * signal, so they are held at most one step too long (docs/compute.md).
   */
  poll(ended: (d: number) => boolean): void {
    this.devices.forEach((dev, d) => {
      if (!this.released[d] && ended(d)) {
        dev.reserveComputeUnits(0);
        this.released[d] = true;
      }
      if (this.hbmAtEnd[d] === null && dev.matmul().endPs !== null) this.hbmAtEnd[d] = collectiveHbm(dev);
    });
  }

  /** Every device's load has ended. */
  get done(): boolean {
    return this.devices.every((d) => d.matmul().endPs !== null);
  }

  /** The row, once done, against the load's time alone and the collective's time. */
  row(alonePs: number, collectivePs: number): InterferenceRow {
    const devicesPs = this.devices.map((d) => {
      const m = d.matmul();
      return m.endPs! - m.startPs;
    });
    const slowest = devicesPs.indexOf(maxOf(devicesPs));
    const alongsidePs = devicesPs[slowest]!;
    return {
      mode: this.spec.mode, commUnits: this.spec.mode === "gpu-style" ? this.spec.commUnits : 0,
      alonePs, alongsidePs, slowdown: alongsidePs / alonePs - 1, lostPerCollectiveTime: (alongsidePs - alonePs) / collectivePs,
      collectiveHbmBytes: Math.round(this.hbmAtEnd[slowest]! - this.hbmAtStart[slowest]!), devicesPs,
    };
  }
}

/** HBM bytes served so far to the collective's traffic: NIC DMA and reductions. */
function collectiveHbm(d: Device): number {
  const s = d.hbmServed();
  return s.nic + s.reduce;
}
