// REDUCE: the NIC's reduction block sums three f32 vectors in HBM into a fourth (2 to 8
// sources, each an address in HBM with the lkey of a region covering it; the destination is
// localAddr/lkey and needs LOCAL_WRITE; length is in bytes, a multiple of the element size).
// Other operations: MAX, MIN, PROD; element types: F32, F16, BF16, I32.
import { completions, connectedPair, sameBytes } from "./connect.js";

const { ctx, pd, cq, a } = await connectedPair();
const count = 1024, length = count * 4;
const area = ctx.allocHbm(4 * length);
const mr = ctx.regMr(pd, area, 4 * length, ["LOCAL_WRITE"]);
const sources = [0, 1, 2].map((k) => ({ addr: area + k * length, lkey: mr.lkey }));
const dst = area + 3 * length;

// source k, element i: (i mod 17) * (k + 1) + 0.25 * k: sums are exact in f32
const vectors = [0, 1, 2].map((k) => Float32Array.from({ length: count }, (_, i) => (i % 17) * (k + 1) + 0.25 * k));
vectors.forEach((v, k) => ctx.write(sources[k].addr, new Uint8Array(v.buffer)));
ctx.postSend(a, [{ wrId: 3, opcode: "REDUCE", signaled: true, localAddr: dst, length, lkey: mr.lkey, reduce: { op: "SUM", dtype: "F32", sources } }]);
const [wc] = completions(ctx, cq, 1);

const want = Float32Array.from({ length: count }, (_, i) => vectors[0][i] + vectors[1][i] + vectors[2][i]);
const got = new Float32Array(ctx.read(dst, length).buffer);
sameBytes("REDUCE result", new Uint8Array(got.buffer), new Uint8Array(want.buffer));
console.log(`REDUCE SUM F32 of 3 x ${count} elements: ${wc.status}, ${wc.byteLen} bytes`);
console.log(`result[0..5]: ${Array.from(got.subarray(0, 5)).join(", ")}; result[16]: ${got[16]}; result[1023]: ${got[1023]}`);
