// The setup every verbs example shares: a device, a protection domain, one completion queue,
// and two queue pairs of the device connected to each other (A's destination is B, B's is A),
// moved through INIT, RTR and RTS as ibverbs requires.
import { openDevice, type Context, type Cq, type Pd, type Qp } from "menic";

export interface Loopback { ctx: Context; pd: Pd; cq: Cq; a: Qp; b: Qp }

export async function connectedPair(config: Record<string, number> = { engines: 1 }): Promise<Loopback> {
  const ctx = await openDevice(config);
  const pd = ctx.allocPd();
  const cq = ctx.createCq(16);
  const a = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 8, maxRecvWr: 8 });
  const b = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 8, maxRecvWr: 8 });
  for (const [qp, peer] of [[a, b], [b, a]]) {
    ctx.modifyQp(qp, { state: "INIT" });
    ctx.modifyQp(qp, { state: "RTR", destQpNum: peer.qpn });
    ctx.modifyQp(qp, { state: "RTS" });
  }
  return { ctx, pd, cq, a, b };
}

/** Runs the device 10 us at a time until `n` completions arrived (at most 1 ms of device time). */
export function completions(ctx: Context, cq: Cq, n: number) {
  const wcs = [];
  while (wcs.length < n) {
    if (ctx.nowPs > 1_000_000_000n) throw new Error(`only ${wcs.length} of ${n} completions after 1 ms`);
    ctx.run(ctx.nowPs + 10_000_000n);
    wcs.push(...ctx.pollCq(cq));
  }
  for (const wc of wcs) if (wc.status !== "SUCCESS") throw new Error(`work request ${wc.wrId}: ${wc.status}`);
  return wcs;
}

/** The first `n` bytes of `bytes` in hex. */
export const hex = (bytes: Uint8Array, n = 8) => Array.from(bytes.subarray(0, n), (x) => x.toString(16).padStart(2, "0")).join(" ");

/** Throws unless `got` equals `want` byte for byte, naming the first difference. */
export function sameBytes(what: string, got: Uint8Array, want: Uint8Array): void {
  if (got.length !== want.length) throw new Error(`${what}: ${got.length} bytes, expected ${want.length}`);
  const i = got.findIndex((x, k) => x !== want[k]);
  if (i >= 0) throw new Error(`${what}: byte ${i} is 0x${got[i].toString(16)}, expected 0x${want[i].toString(16)}`);
}
