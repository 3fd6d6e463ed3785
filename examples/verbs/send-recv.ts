// SEND / RECV with immediate data: B posts a receive buffer first, A sends 256 bytes and a
// 32-bit immediate; B's completion says how many bytes arrived and carries the immediate.
import { completions, connectedPair, hex, sameBytes } from "./connect.js";

const { ctx, pd, cq, a, b } = await connectedPair();
const sendBuf = ctx.allocHostMemory(256);
const recvBuf = ctx.allocHbm(1024);
const sendMr = ctx.regMr(pd, sendBuf, 256, ["LOCAL_WRITE"]);
const recvMr = ctx.regMr(pd, recvBuf, 1024, ["LOCAL_WRITE"]);

const message = Uint8Array.from({ length: 256 }, (_, i) => 255 - i);
ctx.write(sendBuf, message);
ctx.postRecv(b, [{ wrId: 10, localAddr: recvBuf, length: 1024, lkey: recvMr.lkey }]);
ctx.postSend(a, [{ wrId: 20, opcode: "SEND_WITH_IMM", imm: 0xc0ffee, signaled: true, localAddr: sendBuf, length: 256, lkey: sendMr.lkey }]);
const wcs = completions(ctx, cq, 2).sort((x, y) => Number(x.wrId - y.wrId));

sameBytes("received message", ctx.read(recvBuf, 256), message);
for (const wc of wcs)
  console.log(`wr ${wc.wrId} on QP ${wc.qpNum === a.qpn ? "A" : "B"}: ${wc.opcode} ${wc.status}, ${wc.byteLen} bytes${wc.imm === undefined ? "" : `, imm 0x${wc.imm.toString(16)}`}`);
console.log(`received: ${hex(ctx.read(recvBuf, 256))} ...`);
