// Two devices on one switch, RoCEv2 between them: device 0 WRITEs 64 KiB into device 1's HBM,
// SENDs 256 bytes into a receive buffer device 1 posted, and READs 4 KiB of device 1's HBM back,
// each as frames across the fabric. The cluster runs both devices and the switch together until
// the completions arrive; every byte that landed is checked.
import { openCluster, type Context, type Cq, type Wc } from "menic";
import { hex, sameBytes } from "./connect.js";

const cluster = await openCluster({ devices: { count: 2 }, transport: "rocev2", fabric: { topology: { kind: "single-switch" } } });
const [a, b] = [cluster.context(0), cluster.context(1)];
const pdA = a.allocPd(), pdB = b.allocPd();
const cqA = a.createCq(16), cqB = b.createCq(16);
const qpA = a.createQp(pdA, { sendCq: cqA, recvCq: cqA, maxSendWr: 8, maxRecvWr: 8 });
const qpB = b.createQp(pdB, { sendCq: cqB, recvCq: cqB, maxSendWr: 8, maxRecvWr: 8 });
// INIT, RTR (each the other's destination, on device and QP number) and RTS at both ends
cluster.connect({ device: 0, qp: qpA }, { device: 1, qp: qpB });

/** Runs the cluster until `n` completions arrived on `cq` (at most 1 ms of simulated time). */
function completions(ctx: Context, cq: Cq, n: number): Wc[] {
  const wcs: Wc[] = [];
  const end = cluster.runUntil(() => (wcs.push(...ctx.pollCq(cq)), wcs.length >= n), cluster.nowPs + 1_000_000_000n);
  if (end !== "done") throw new Error(`only ${wcs.length} of ${n} completions (${end})`);
  for (const wc of wcs) if (wc.status !== "SUCCESS") throw new Error(`work request ${wc.wrId}: ${wc.status}`);
  return wcs;
}

// RDMA WRITE: device 0's host memory -> device 1's HBM
const writeBytes = 64 << 10;
const src = a.allocHostMemory(writeBytes), dst = b.allocHbm(writeBytes);
const srcMr = a.regMr(pdA, src, writeBytes, ["LOCAL_WRITE"]);
const dstMr = b.regMr(pdB, dst, writeBytes, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
const written = Uint8Array.from({ length: writeBytes }, (_, i) => (i * 7 + 3) & 0xff);
a.write(src, written);
a.postSend(qpA, [{ wrId: 1, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: writeBytes, lkey: srcMr.lkey, remoteAddr: dst, rkey: dstMr.rkey }]);
const [w] = completions(a, cqA, 1);
sameBytes("device 1's HBM after the WRITE", b.read(dst, writeBytes), written);
console.log(`RDMA WRITE ${w.byteLen} bytes device 0 -> device 1: ${w.status}; device 1 HBM: ${hex(b.read(dst, 8))} ...`);

// SEND / RECV: device 1 posts a receive buffer first, then device 0 sends into it
const message = Uint8Array.from({ length: 256 }, (_, i) => 255 - i);
const recvBuf = b.allocHbm(1024), recvMr = b.regMr(pdB, recvBuf, 1024, ["LOCAL_WRITE"]);
b.postRecv(qpB, [{ wrId: 10, localAddr: recvBuf, length: 1024, lkey: recvMr.lkey }]);
a.write(src, message);
a.postSend(qpA, [{ wrId: 2, opcode: "SEND_WITH_IMM", imm: 0xc0ffee, signaled: true, localAddr: src, length: message.length, lkey: srcMr.lkey }]);
const [s] = completions(a, cqA, 1), [r] = completions(b, cqB, 1);
sameBytes("device 1's receive buffer", b.read(recvBuf, message.length), message);
console.log(`SEND ${s.byteLen} bytes: ${s.status}; device 1 RECV ${r.byteLen} bytes, imm 0x${r.imm?.toString(16)}: ${hex(b.read(recvBuf, 8))} ...`);

// RDMA READ: device 1's HBM (what device 1 wrote there itself) -> device 0's host memory
const readBytes = 4096;
const remote = Uint8Array.from({ length: readBytes }, (_, i) => (i >> 4) ^ (i & 0xff));
b.write(dst, remote);
const local = a.allocHostMemory(readBytes), localMr = a.regMr(pdA, local, readBytes, ["LOCAL_WRITE"]);
a.postSend(qpA, [{ wrId: 3, opcode: "RDMA_READ", signaled: true, localAddr: local, length: readBytes, lkey: localMr.lkey, remoteAddr: dst, rkey: dstMr.rkey }]);
const [rd] = completions(a, cqA, 1);
sameBytes("device 0's host memory after the READ", a.read(local, readBytes), remote);
console.log(`RDMA READ ${rd.byteLen} bytes device 1 -> device 0: ${rd.status}; device 0 host memory: ${hex(a.read(local + 0x100, 8))} ... at +0x100`);
