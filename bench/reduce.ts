// npm run bench -- reduce
//   reduce.<dtype>.sum.k<k>.gbps: host speed of the reduction kernel (assembly/reduce.ts) on k
//     source buffers of 32 MiB, in GB/s (10^9 bytes) of memory traffic: bytes read plus bytes
//     written, (k + 1) x 32 MiB per call;
//   memcpy.gbps: the same machine's copy speed, measured in the same run in the same engine:
//     wasm memory.copy (the core's memcopy export) of one 32 MiB buffer to another, counted the
//     same way, 2 x 32 MiB per call;
//   reduce.f32.sum.k2.ratio_memcpy: reduce.f32.sum.k2.gbps / memcpy.gbps (target >= 0.5).
// Buffers of 32 MiB (nine of them) leave the caches: at 8 MiB, memory.copy's 16 MiB fitted in
// the last-level cache of the machine this was written on and ran at twice DRAM speed. Every
// figure is the median of 31 timed calls after warm-up; the measurements take turns, so
// drifts of the host's clock and load touch every figure alike.
import { instantiateCore, type MenicExports } from "../host/wasm.js";
import { coreModule } from "../host/platform/node.js";
import { ReduceOp, ReduceType, reduceReference } from "../host/reduce/reference.js";
import { figure, median } from "./lib/report.js";

const BUF = 32 << 20;
const SAMPLES = 31;
const WARMUP = 3;

// memcopy is exported by assembly/index.ts for this benchmark only
type Core = MenicExports;

interface Case {
  name: string;
  bytesPerCall: number;
  call(): void;
  check?(): void;
}

export async function run(): Promise<void> {
  const core = (await instantiateCore(coreModule())) as Core;
  const table = core.scratchAlloc(8 * 4);
  const base = core.scratchAlloc(9 * BUF + 16);
  const buf = (j: number) => ((base + 15) & ~15) + j * BUF; // 8 sources, then the destination
  const dst = buf(8);

  // Every u32 is two bf16 values in [1, 2) side by side, which as one f32 is also in [1, 2):
  // normal numbers for both dtypes (no subnormal slow paths), the same bytes for both.
  const mem = new Uint8Array(core.memory.buffer);
  const words = new Uint32Array(core.memory.buffer, buf(0), (8 * BUF) / 4);
  let seed = 0x9e3779b9;
  for (let i = 0; i < words.length; i++) {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0; // LCG: any fill will do, but a fixed one
    words[i] = ((0x3f80 | (seed >>> 25)) << 16) | 0x3f80 | ((seed >>> 9) & 0x7f);
  }
  mem.fill(0, dst, dst + BUF); // touch the destination's pages before timing
  const tv = new DataView(core.memory.buffer);
  for (let j = 0; j < 8; j++) tv.setUint32(table + 4 * j, buf(j), true);

  const reduceCase = (dtype: ReduceType, name: string, k: number): Case => ({
    name: `reduce.${name}.sum.k${k}`,
    bytesPerCall: (k + 1) * BUF,
    call: () => core.reduceKernel(dst, table, k, BUF, ReduceOp.Sum, dtype),
    // the first 4 KiB against the reference: a fast wrong kernel is no figure
    check: () => {
      const m = new Uint8Array(core.memory.buffer);
      const want = reduceReference(Array.from({ length: k }, (_, j) => m.slice(buf(j), buf(j) + 4096)), ReduceOp.Sum, dtype);
      if (Buffer.compare(m.subarray(dst, dst + 4096), want) !== 0) throw new Error(`bench: ${name} k=${k} disagrees with the reference`);
    },
  });
  const cases: Case[] = [
    { name: "memcpy", bytesPerCall: 2 * BUF, call: () => core.memcopy(dst, buf(0), BUF) },
    reduceCase(ReduceType.F32, "f32", 2),
    reduceCase(ReduceType.F32, "f32", 8),
    reduceCase(ReduceType.Bf16, "bf16", 2),
    reduceCase(ReduceType.Bf16, "bf16", 8),
  ];

  const seconds = new Map<string, number[]>(cases.map((c) => [c.name, []]));
  for (const c of cases) {
    for (let w = 0; w < WARMUP; w++) c.call();
    c.check?.();
  }
  for (let s = 0; s < SAMPLES; s++) {
    for (const c of cases) {
      const t0 = performance.now();
      c.call();
      seconds.get(c.name)!.push((performance.now() - t0) / 1000);
    }
  }

  const gbps = new Map<string, number>();
  for (const c of cases) {
    const v = c.bytesPerCall / median(seconds.get(c.name)!) / 1e9;
    gbps.set(c.name, v);
    figure(`${c.name}.gbps`, v, "GB/s", c.name === "memcpy" ? "host copy speed (wasm memory.copy), 32 MiB buffers: bytes read + written per second (median of 31)" : `host speed of the reduction kernel, ${c.name.replace(/^reduce\.(\w+)\.sum\.k(\d+)$/, "$1 sum of $2 sources")}: bytes read + written per second, 32 MiB buffers (median of 31)`, { bufferBytes: BUF, bytesPerCall: c.bytesPerCall });
  }
  figure("reduce.f32.sum.k2.ratio_memcpy", gbps.get("reduce.f32.sum.k2")! / gbps.get("memcpy")!, "ratio", "reduce.f32.sum.k2.gbps over memcpy.gbps (target at least 0.5)");
}
