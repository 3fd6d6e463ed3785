// The doorbell micro-benchmark (seed 000: "express doorbell ... saving roughly eight hundred
// nanoseconds per operation"), in simulated time. One operation is an 8-byte RDMA WRITE from
// HBM to HBM on a loopback QP; its latency runs from the first posting action to the moment
// the NIC has written the completion where its owner can see it. Operations do not overlap.
//   host:   the QP's rings and CQ are in host memory; the host writes the WQE into the ring and
//           rings the doorbell over PCIe (classic), or writes the WQE itself over PCIe (express);
//   engine: firmware/bench/doorbell.elf on engine 0, rings in HBM.

import { Context, type Qp, type Cq } from "../verbs.js";
import type { Device } from "../device.js";

export interface DoorbellFigures { classicNs: number; expressNs: number }

function connectSelf(ctx: Context, qp: Qp): void {
  ctx.modifyQp(qp, { state: "INIT" });
  ctx.modifyQp(qp, { state: "RTR", destQpNum: qp.qpn });
  ctx.modifyQp(qp, { state: "RTS" });
}

const doneTimes = (dev: Device) => dev.traceRecords.filter((r) => r.point === "nic.wqe_done").map((r) => r.timePs);

/** Host path: mean simulated ns per operation over `ops` operations of each kind. */
export async function hostDoorbell(module: WebAssembly.Module, config: Record<string, number> = {}, ops = 8): Promise<DoorbellFigures> {
  const ctx = await Context.open(module, { engines: 1, ...config }, { collectTrace: true });
  const pd = ctx.allocPd();
  const cq: Cq = ctx.createCq(64);
  const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 64, maxRecvWr: 1 });
  connectSelf(ctx, qp);
  const buf = ctx.allocHbm(128);
  const mr = ctx.regMr(pd, buf, 128, ["LOCAL_WRITE", "REMOTE_WRITE"]);
  const measure = (doorbell: "classic" | "express") => {
    let total = 0n;
    for (let i = 0; i < ops; i++) {
      const t0 = ctx.nowPs;
      ctx.postSend(qp, [{ wrId: i, opcode: "RDMA_WRITE", signaled: true, localAddr: buf, length: 8, lkey: mr.lkey, remoteAddr: buf + 64, rkey: mr.rkey }], { doorbell });
      ctx.run(t0 + 100_000_000n);
      const wcs = ctx.pollCq(cq);
      if (wcs.length !== 1 || wcs[0].status !== "SUCCESS") throw new Error(`doorbell: ${doorbell} operation ${i} did not complete`);
      const done = doneTimes(ctx.device);
      total += done[done.length - 1] - t0;
    }
    return Number(total) / ops / 1000;
  };
  return { classicNs: measure("classic"), expressNs: measure("express") };
}

/** Engine path: firmware/bench/doorbell.elf posts 8 operations of each kind from engine 0. */
export async function engineDoorbell(module: WebAssembly.Module, elf: Uint8Array, config: Record<string, number> = {}): Promise<DoorbellFigures> {
  const ops = 8;
  const ctx = await Context.open(module, { engines: 1, ...config }, { collectTrace: true });
  const dev = ctx.device;
  const img = dev.loadElf(elf);
  const pd = ctx.allocPd();
  const cq = ctx.createCq(64, { engine: 0 });
  const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 64, maxRecvWr: 1, engine: 0 });
  connectSelf(ctx, qp);
  const buf = ctx.allocHbm(128);
  const mr = ctx.regMr(pd, buf, 128, ["LOCAL_WRITE", "REMOTE_WRITE"]);
  dev.start(img.entry);
  for (const w of [qp.qpn, qp.sqRing, qp.sqDepth, cq.cqn, cq.ring, cq.depth, buf, mr.lkey, mr.rkey]) dev.mailboxPush(0, w);
  dev.run(1_000_000_000n);
  const e = dev.engine(0);
  if (e.state !== "exited" || e.exitCode !== 0) throw new Error(`doorbell: engine 0 ended ${e.state} ${e.exitCode}`);
  const khz = Number(dev.config.get("engineClockKhz"));
  const starts: number[] = [];
  for (let v = dev.mailboxPop(0); v !== null; v = dev.mailboxPop(0)) starts.push((v * 1e9) / khz); // mtime low word -> ps (runs are short)
  const done = doneTimes(dev).map(Number);
  if (starts.length !== 2 * ops || done.length !== 2 * ops) throw new Error(`doorbell: ${starts.length} posts, ${done.length} completions`);
  const mean = (from: number) => done.slice(from, from + ops).reduce((s, d, k) => s + d - starts[from + k], 0) / ops / 1000;
  return { classicNs: mean(0), expressNs: mean(ops) };
}
