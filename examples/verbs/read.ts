// RDMA READ: A reads 64 KiB of B's HBM buffer (registered with REMOTE_READ) into host memory.
import { completions, connectedPair, hex, sameBytes } from "./connect.js";

const { ctx, pd, cq, a } = await connectedPair();
const length = 64 << 10;
const remote = ctx.allocHbm(length);
const local = ctx.allocHostMemory(length);
const remoteMr = ctx.regMr(pd, remote, length, ["REMOTE_READ"]);
const localMr = ctx.regMr(pd, local, length, ["LOCAL_WRITE"]);

const data = Uint8Array.from({ length }, (_, i) => (i >> 8) ^ (i & 0xff));
ctx.write(remote, data);
ctx.postSend(a, [{ wrId: 7, opcode: "RDMA_READ", signaled: true, localAddr: local, length, lkey: localMr.lkey, remoteAddr: remote, rkey: remoteMr.rkey }]);
const [wc] = completions(ctx, cq, 1);

const got = ctx.read(local, length);
sameBytes("RDMA READ into host memory", got, data);
console.log(`RDMA READ ${wc.byteLen} bytes HBM -> host memory: ${wc.status}`);
console.log(`host memory: ${hex(got)} ... ${hex(got.subarray(0x1234), 4)} at +0x1234`);
