// Two devices joined port to port by cables of one latency, driven in windows no longer than
// it (the fabric and its runner do this for real topologies; this is the smallest harness).
import { Context, type Cq } from "../../host/verbs.js";
import { DevicePorts, type TxFrameRef } from "../../host/ports.js";
import { coreModule } from "../../host/platform/node.js";

export type Fate = "pass" | "drop" | "corrupt";

/** What happens to the n-th frame (0-based, both directions counted together) sent by device `from`; `frame` is valid during the call. */
export type CableFate = (from: number, n: number, frame: TxFrameRef) => Fate;

export interface CableHooks {
  /** Sees every frame sent, after its fate (a corrupted one as it arrives), and when it arrives (if it does); `frame` is valid during the call. */
  tap?: (from: number, frame: TxFrameRef, fate: Fate, arrivalPs: bigint) => void;
  /** Stages more arrivals for device `to` after the cable's of the window ending at `windowEndPs`, before they are handed over. */
  inject?: (to: number, ports: DevicePorts, windowEndPs: bigint) => void;
}

/** A copy of a sent frame's bytes (host/ports.ts). */
export { frameCopy } from "../../host/ports.js";

export async function cabled(config: Record<string, number> = {}, latencyPs = 1_000_000n, fate: CableFate = () => "pass", hooks: CableHooks = {}) {
  const ctxs = [
    await Context.open(coreModule(), { engines: 1, ...config, deviceId: 0 }, { collectTrace: true }),
    await Context.open(coreModule(), { engines: 1, ...config, deviceId: 1 }, { collectTrace: true }),
  ];
  const ports = ctxs.map((c) => new DevicePorts(c.device));
  let frames = 0;
  /** Runs both devices to `untilPs`, a window (the cable latency) at a time. */
  const run = (untilPs: bigint) => {
    let t = ctxs[0]!.nowPs;
    while (t < untilPs) {
      const end = t + latencyPs < untilPs ? t + latencyPs : untilPs;
      for (const c of ctxs) c.run(end);
      // frames sent in this window reach the other device after the cable's latency: in a later window
      for (let d = 0; d < 2; d++) {
        const to = ports[1 - d]!;
        ports[d]!.drain((f) => {
          const what = fate(d, frames++, f);
          if (what === "corrupt") f.mem[f.bodyLen > 0 ? f.bodyAt + 1 : f.hdrAt + f.hdrLen - 1] ^= 0x10; // a bit flips on the way
          hooks.tap?.(d, f, what, BigInt(f.timePs) + latencyPs);
          if (what === "drop") return;
          if (!to.stageArrival(f.timePs + Number(latencyPs), f.port, f.wireLen, d, f.seq, f.mem, f.hdrAt, f.hdrLen, f.mem, f.bodyAt, f.bodyLen)) throw new Error("stage full");
        });
      }
      if (hooks.inject) for (let d = 0; d < 2; d++) hooks.inject(d, ports[d]!, end);
      for (const p of ports) p.commitArrivals();
      t = end;
    }
  };
  return { ctxs, ports, run, frames: () => frames };
}

/** Two devices cabled (cabled's arguments), each with a PD, a CQ of 64 and one RC QP connected to the other's: a on device 0, b on device 1. */
export async function connectedPair(config: Record<string, number> = {}, fate?: CableFate, hooks: CableHooks = {}) {
  const net = await cabled(config, 1_000_000n, fate, hooks);
  const [A, B] = net.ctxs as [Context, Context];
  const mk = (ctx: Context) => {
    const pd = ctx.allocPd();
    const cq = ctx.createCq(64);
    const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 16, maxRecvWr: 16 });
    return { ctx, pd, cq, qp };
  };
  const a = mk(A), b = mk(B);
  for (const [x, y, dev] of [[a, b, 1], [b, a, 0]] as const) {
    x.ctx.modifyQp(x.qp, { state: "INIT" });
    x.ctx.modifyQp(x.qp, { state: "RTR", destQpNum: y.qp.qpn, destDevice: dev });
    x.ctx.modifyQp(x.qp, { state: "RTS" });
  }
  return { net, a, b };
}

/** Runs `net` a microsecond at a time until `n` completions are polled from `cq` of `ctx`, or `limitPs` passed; the completions. */
export function settle(net: Awaited<ReturnType<typeof cabled>>, ctx: Context, cq: Cq, n: number, limitPs = 100_000_000n) {
  const out = [];
  const t0 = ctx.nowPs;
  while (out.length < n && ctx.nowPs < t0 + limitPs) {
    net.run(ctx.nowPs + 1_000_000n);
    out.push(...ctx.pollCq(cq, 64));
  }
  return out;
}
