// Two devices joined port to port by cables of one latency, driven in windows no longer than
// it (the fabric and its runner do this for real topologies; this is the smallest harness).
import { Context } from "../../host/verbs.js";
import { DevicePorts } from "../../host/ports.js";
import { coreModule } from "../../host/platform/node.js";

/** What happens to the n-th frame (0-based, both directions counted together) sent by device `from`. */
export type CableFate = (from: number, n: number) => "pass" | "drop" | "corrupt";

export async function cabled(config: Record<string, number> = {}, latencyPs = 1_000_000n, fate: CableFate = () => "pass") {
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
          const what = fate(d, frames++);
          if (what === "drop") return;
          if (what === "corrupt") f.mem[f.bodyLen > 0 ? f.bodyAt + 1 : f.hdrAt + f.hdrLen - 1] ^= 0x10; // a bit flips on the way
          if (!to.stageArrival(f.timePs + latencyPs, f.port, f.wireLen, d, f.seq, f.mem, f.hdrAt, f.hdrLen, f.mem, f.bodyAt, f.bodyLen)) throw new Error("stage full");
        });
      }
      for (const p of ports) p.commitArrivals();
      t = end;
    }
  };
  return { ctxs, ports, run, frames: () => frames };
}
