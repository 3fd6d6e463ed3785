// npm run bench -- fabric-core: the fabric and the cluster runner alone, with synthetic
// endpoints in place of devices (issue 7 §8's shape): 64 devices of 12 ports on an 8-plane
// leaf/spine, 8 devices per leaf (8 leaves and 16 spines per plane: planes 0-3 carry two ports of
// each device, so their leaves have 16 ports down and 16 up, non-blocking), timing mode. Each round
// is a permutation: every device writes 1 MiB to its partner in 4 KiB frames sprayed over its
// 12 ports (one UDP source port per port and round); rounds follow each other on every port.
// The figure is packet-hops (a frame serialised onto one link) per host second, endpoints and
// runner included, measured after a warm-up run of 10 rounds (the first run of the code is
// ~20 % slower while V8 compiles it). Env: FABRIC_ROUNDS (default 60), FABRIC_SEED.
import { coreModule } from "../host/platform/node.js";
import { Fabric, ClusterRunner, SyntheticEndpoint, leafSpine, type SyntheticFlow } from "../host/fabric/index.js";
import { RandomStreams } from "../host/fabric/rng.js";
import { figure } from "./lib/report.js";

const DEVICES = 64, PORTS = 12, FRAME_PAYLOAD = 4096, FLOW_BYTES = 1 << 20, PATHS = 16;

/** A permutation of 0..n-1 with no fixed point (Fisher–Yates, redrawn until deranged). */
function derangement(rng: RandomStreams, n: number): number[] {
  for (;;) {
    const a = Array.from({ length: n }, (_, i) => i);
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor((rng.next(0) / 2 ** 32) * (i + 1));
      [a[i], a[j]] = [a[j], a[i]];
    }
    if (a.every((v, i) => v !== i)) return a;
  }
}

export function setup(rounds: number, seed: number) {
  const topo = leafSpine({ devices: DEVICES, ports: PORTS, planes: 8, devicesPerLeaf: 8, spines: 16 });
  const fabric = new Fabric(coreModule(), topo, { seed, mode: "timing" });
  const rng = new RandomStreams(1);
  rng.seed(0, seed, 0);
  const flows: SyntheticFlow[][] = Array.from({ length: DEVICES }, () => []);
  const frames = FLOW_BYTES / FRAME_PAYLOAD;
  for (let r = 0; r < rounds; r++) {
    const perm = derangement(rng, DEVICES);
    for (let d = 0; d < DEVICES; d++)
      for (let p = 0; p < PORTS; p++) {
        const n = Math.floor(frames / PORTS) + (p < frames % PORTS ? 1 : 0);
        // ports start out of step, within one frame time: devices are not synchronised
        const startPs = r === 0 ? Math.floor((rng.next(0) / 2 ** 32) * 42_000) : 0;
        flows[d].push({ port: p, dstDevice: perm[d], bytes: n * FRAME_PAYLOAD, startPs, udpSrcPort: 0xc000 + (((r * PORTS + p) * PATHS) & 0x3fff), paths: PATHS });
      }
  }
  const endpoints = flows.map((f, d) => new SyntheticEndpoint({ device: d, ports: PORTS, flows: f }));
  return { fabric, endpoints, runner: new ClusterRunner(fabric, endpoints) };
}

export async function run(): Promise<void> {
  const rounds = Number(process.env.FABRIC_ROUNDS ?? 60), seed = Number(process.env.FABRIC_SEED ?? 1);
  setup(10, seed + 1).runner.runUntilIdle();
  const { fabric, endpoints, runner } = setup(rounds, seed);
  const t0 = performance.now();
  runner.runUntilIdle();
  const wallS = (performance.now() - t0) / 1000;
  const s = fabric.stats();
  const sent = endpoints.reduce((a, e) => a + e.sentFrames, 0);
  const got = endpoints.reduce((a, e) => a + e.receivedFrames, 0);
  if (got !== sent) throw new Error(`fabric-core: ${sent} frames sent, ${got} received (drops ${JSON.stringify(s.drops)})`);
  figure("fabric.core.hops_per_s", s.hops / wallS, "hops/s", "packet-hops (a frame onto one link) per host second: fabric and runner alone, 64 synthetic devices, 8 planes", { hops: s.hops, frames: got, wallS: Number(wallS.toFixed(3)), packetsPeak: s.packetsPeak });
  figure("fabric.core.sim_per_wall", s.nowPs / 1e12 / wallS, "s/s", "simulated seconds per host second of the same run", { simulatedUs: s.nowPs / 1e6 });
}
