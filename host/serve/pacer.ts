// How far a served device's simulated time may go, given the wall clock (docs/serve.md, "Time").
// Time is an argument: the caller reads the clock and passes it in; this file reads none.
//
// `wall`: simulated time runs at `scale` × wall time and never ahead of it. A device with work
// before the wall's time runs to it in steps of at most STEP_PS (between steps the server reads
// datagrams and requests); one with nothing to do before then follows the wall there at once and
// waits until the wall reaches its next event, or until something arrives. A device
// the host cannot keep up with runs as fast as it can, and when it falls more than MAX_LAG_NS of
// wall time behind, the time it lost is given up (the clock's origin moves) rather than run
// through in a burst.
// `fast`: the same while the device has something to do; when it waits for an event that the
// wall would bring only after `idleMs`, and nothing arrives within `idleMs`, its time skips to
// that event (the origin moves forward). A transport's timer then costs `idleMs` of wall time,
// not its length ÷ scale: the peer has `idleMs` to answer before time moves on.
// `step`: no pacing; time moves only when a client asks (served-device.ts `advance`), and the
// wall clock plays no part: a tester in lockstep with the device (`menic conform --target udp://`).

/** Longest step of simulated time between two looks at the sockets: 1 µs (about 24 frames of 4 KiB at 800 Gb/s). */
export const STEP_PS = 1_000_000n;
/** How far (wall time) a device may fall behind before the lost time is given up. */
export const MAX_LAG_NS = 10_000_000n;

/**
 * What the device does next: run to `untilPs` (it has something to do before the wall's time);
 * or, having nothing to do before then, follow the wall to `followPs` (no event lies before it)
 * and wait `wallMs` (Infinity: until something arrives), then, if nothing arrived, skip to
 * `skipToPs`.
 */
export type Plan =
  | { kind: "run"; untilPs: bigint }
  | { kind: "wait"; followPs: bigint; wallMs: number; skipToPs?: bigint };

/** The pacing of a served device (`--pace`). */
export interface PaceOptions {
  mode: "wall" | "fast" | "step";
  /** simulated time per wall time (1: real time; 0.001: a millisecond of wall time is a microsecond) */
  scale: number;
  /** fast: wall milliseconds without a datagram or request after which a waiting device skips to its next event */
  idleMs: number;
}

/** Counts of what the pacing gave up or skipped, for the server's counters. */
export interface PaceCounts {
  /** simulated ps given up because the device fell behind the wall */
  lagPs: bigint;
  /** fast: skips to the next event, and the simulated ps they skipped */
  skips: number;
  skippedPs: bigint;
}

export class Pacer {
  /** The wall time (ns) at which simulated time was `originPs`; target(wall) = originPs + (wall - originNs) × scale. */
  private originNs: bigint;
  private originPs: bigint;
  /** scale as simulated ps per wall ns, as a fraction num / DEN: exact bigint arithmetic */
  private readonly num: bigint;
  private static readonly DEN = 1_000_000n;
  readonly counts: PaceCounts = { lagPs: 0n, skips: 0, skippedPs: 0n };

  constructor(readonly options: PaceOptions, startNs: bigint, startPs = 0n) {
    if (!(options.scale > 0) || !Number.isFinite(options.scale)) throw new RangeError(`pace: scale must be a number > 0, got ${options.scale}`);
    // ps per ns = 1000 × scale; kept to 6 significant decimals below 1 ps per ns
    this.num = BigInt(Math.max(1, Math.round(options.scale * 1000 * Number(Pacer.DEN))));
    this.originNs = startNs;
    this.originPs = startPs;
  }

  /** The simulated time the wall clock says at `wallNs`. */
  targetPs(wallNs: bigint): bigint {
    return this.originPs + ((wallNs - this.originNs) * this.num) / Pacer.DEN;
  }

  /** The wall time (ns) at which the target reaches `ps`. */
  private wallNsAt(ps: bigint): bigint {
    return this.originNs + ((ps - this.originPs) * Pacer.DEN + this.num - 1n) / this.num;
  }

  /** What the device does next: its time `nowPs`, its next event `nextPs` (null: none ever), the wall clock `wallNs`. */
  plan(nowPs: bigint, nextPs: bigint | null, wallNs: bigint): Plan {
    let target = this.targetPs(wallNs);
    const lagMax = (MAX_LAG_NS * this.num) / Pacer.DEN;
    if (target - nowPs > lagMax) {
      // behind by more than the bound: the wall time lost is given up
      const lost = target - nowPs - lagMax;
      this.originPs -= lost;
      this.counts.lagPs += lost;
      target -= lost;
    }
    // something to do before the wall's time: through it, a step at a time
    if (nextPs !== null && nextPs < target) return { kind: "run", untilPs: min(target, max(nextPs, nowPs) + STEP_PS) };
    const followPs = max(target, nowPs);
    if (nextPs === null) return { kind: "wait", followPs, wallMs: Infinity };
    // until the wall reaches the next event (one due now, ahead of the wall: until it passes now)
    const due = nextPs > followPs ? nextPs : followPs + 1n;
    const wallMs = Number(this.wallNsAt(due) - wallNs) / 1e6;
    if (this.options.mode === "fast" && wallMs > this.options.idleMs) return { kind: "wait", followPs, wallMs: this.options.idleMs, skipToPs: due };
    return { kind: "wait", followPs, wallMs };
  }

  /** The device waited `idleMs` for nothing (fast): its time goes on from `toPs` at `wallNs`. */
  skip(toPs: bigint, wallNs: bigint): void {
    const from = this.targetPs(wallNs);
    if (toPs <= from) return;
    this.counts.skips++;
    this.counts.skippedPs += toPs - from;
    this.originPs += toPs - from;
  }
}

const min = (a: bigint, b: bigint) => (a < b ? a : b);
const max = (a: bigint, b: bigint) => (a > b ? a : b);
