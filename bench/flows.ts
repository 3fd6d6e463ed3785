// npm run bench -- flows: many QPs streaming through HBM at once, more than the flow table's
// 512 slots (issue 6, finding 13). Requests beyond the table wait for a flow to end; the figure
// that matters is host time per simulated request and events per request, which polling
// for a slot every nanosecond once made explode (1,000 QPs x 1 MiB: 33.6 s, 85 M events).
import { Context } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";
import { figure } from "./lib/report.js";

export async function run(): Promise<void> {
  const qps = 1000, bytes = 1 << 20;
  const ctx = await Context.open(coreModule(), { engines: 2, maxQps: 1024, hbmBytes: 64 << 20 });
  const pd = ctx.allocPd();
  const cq = ctx.createCq(1024);
  const src = ctx.allocHbm(bytes), dst = ctx.allocHbm(bytes);
  const smr = ctx.regMr(pd, src, bytes), dmr = ctx.regMr(pd, dst, bytes, ["REMOTE_WRITE"]);
  const all = Array.from({ length: qps }, () => ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 1, maxRecvWr: 1 }));
  for (const qp of all) {
    ctx.modifyQp(qp, { state: "INIT" });
    ctx.modifyQp(qp, { state: "RTR", destQpNum: qp.qpn });
    ctx.modifyQp(qp, { state: "RTS" });
  }
  const t0 = performance.now();
  all.forEach((qp, i) => ctx.postSend(qp, [{ wrId: i, opcode: "RDMA_WRITE", signaled: true, localAddr: src, length: bytes, lkey: smr.lkey, remoteAddr: dst, rkey: dmr.rkey }], { doorbell: "express" }));
  let done = 0;
  while (done < qps) {
    ctx.run(ctx.nowPs + 100_000_000n);
    done += ctx.pollCq(cq, 1024).length;
  }
  const hostMs = performance.now() - t0;
  const s = ctx.device.stats();
  figure("flows.qps", qps, "QPs", "QPs each writing one message at once, more than the HBM flow table's 512 slots (the setup, not a result)", { bytesEach: bytes });
  figure("flows.simulated_us", Number(ctx.nowPs) / 1e6, "us", "simulated time until every WRITE completed");
  figure("flows.host_ms", hostMs, "ms", "host time that took (once 33.6 s, when waiting requests polled for a slot)");
  figure("flows.events_per_request", s["sched.events"] / qps, "events", "scheduler events per request (once 85,000)");
  figure("flows.waited", s["hbm.flow_full"], "requests", "requests that found the flow table full and waited for a slot");
  figure("flows.event_overflow", s["sched.overflow"], "events", "events the scheduler could not hold (must be 0)");
}
