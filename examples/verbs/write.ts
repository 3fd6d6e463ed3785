// RDMA WRITE: 4 KiB from a host-memory buffer into HBM, through two connected queue pairs of
// one device. The target buffer is registered with REMOTE_WRITE; the source with LOCAL_WRITE
// is enough. Prints what landed, and throws if one byte differs.
import { completions, connectedPair, hex, sameBytes } from "./connect.js";

const { ctx, pd, cq, a } = await connectedPair();
const length = 4096;
const src = ctx.allocHostMemory(length);
const dst = ctx.allocHbm(length);
const srcMr = ctx.regMr(pd, src, length, ["LOCAL_WRITE"]);
const dstMr = ctx.regMr(pd, dst, length, ["LOCAL_WRITE", "REMOTE_WRITE"]);

const data = Uint8Array.from({ length }, (_, i) => (i * 7 + 3) & 0xff);
ctx.write(src, data);
ctx.postSend(a, [{ wrId: 1, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length, lkey: srcMr.lkey, remoteAddr: dst, rkey: dstMr.rkey }]);
const [wc] = completions(ctx, cq, 1);

const landed = ctx.read(dst, length);
sameBytes("RDMA WRITE target", landed, data);
console.log(`RDMA WRITE ${wc.byteLen} bytes host memory -> HBM: ${wc.status} (${wc.opcode})`);
console.log(`HBM 0x${dst.toString(16)}: ${hex(landed)} ... ${hex(landed.subarray(length - 4), 4)}`);
