// The traffic people study (issue 29, §2): a scenario's messages as WRITE, WRITE_WITH_IMM, SEND
// (into receives the scenario posts; RNR when they run out) and READ (the bytes flow back), or a
// mix by weight; an open-loop workload's flows and their FCT slowdown against an ideal computed
// here independently. Each figure is checked against something the model counts on its own: the
// links' bytes per direction, the transport's NAKs and retries, the RNR timer.
import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { coreModule } from "../host/platform/node.js";
import { runScenario, type ScenarioResult, type ScenarioInput } from "../host/scenario/run.js";
import { inlineWorkloadFiles } from "../host/scenario/workload.js";
import type { Fabric } from "../host/fabric/fabric.js";

type Traffic = Omit<NonNullable<ScenarioInput["traffic"]>, "pattern">;
const pair = (traffic: Traffic, o: { transport?: ScenarioInput["transport"]; config?: Record<string, number>; mode?: "full" | "timing" } = {}): ScenarioInput => ({
  name: "verbs", seed: 3, until: "10ms", transport: o.transport ?? "rocev2",
  devices: { count: 2, config: { ports: 1, scaleUpPorts: 1, ...o.config } }, fabric: { mode: o.mode ?? "full" },
  traffic: { pattern: "pairs", ...traffic },
});

/** Runs `sc`; its result and the bytes each device's link carried towards the switch (device → fabric). */
async function run(sc: ScenarioInput, opts = {}): Promise<{ r: ScenarioResult; sent: number[] }> {
  let fabric: Fabric | null = null;
  const r = await runScenario(coreModule(), sc, { ...opts, onBuilt: (c) => { fabric = c.fabric; } });
  const links = (fabric as unknown as Fabric).stats().links;
  return { r, sent: [0, 1].map((d) => links[d]!.ab.bytes) };
}

describe("verbs in a scenario", () => {
  it("a READ's bytes flow from the receiver back to the sender, and count as what it read", async () => {
    const MiB = 1 << 20;
    const { r, sent } = await run(pair({ verb: "READ", messageBytes: MiB, messages: 4 }));
    expect(r.ended).toBe("finished");
    expect(r.verbs).toEqual({ READ: { messages: 4, completed: 4, failed: 0, bytes: 4 * MiB } });
    expect([r.flows[0]!.bytes, r.totalBytes]).toEqual([4 * MiB, 4 * MiB]);
    expect(r.flows[0]!.goodputGbps).toBeCloseTo((4 * MiB * 8000) / r.flows[0]!.durationPs, 9);
    // device 1 sent the data (4 MiB and its headers), device 0 only its 4 READ requests
    expect(sent[1]!).toBeGreaterThan(4 * MiB);
    expect(sent[0]!).toBe(4 * 74); // Ethernet, IPv4, UDP, BTH, RETH, ICRC: 74 bytes each
    // a WRITE moves them the other way
    const w = await run(pair({ verb: "WRITE", messageBytes: MiB, messages: 4 }));
    expect(w.sent[0]!).toBeGreaterThan(4 * MiB);
    expect(w.sent[1]!).toBeLessThan(64 * 1024);
  });

  it.each(["rocev2", "metaroce"] as const)("%s: SENDs fill the receives posted, then RNR: the sender waits the RNR timer rnrRetries times and fails", async (transport) => {
    // 4 one-packet SENDs, 2 receives: the first two land, the third finds none (an RNR NAK, as does
    // the fourth, in flight behind it); each retry waits rnrTimerPs, and after rnrRetries (3) the
    // third fails RNR_RETRY_EXC_ERR and the fourth is flushed
    const at = async (rnrTimerPs: number) => (await run(pair({ verb: "SEND", messageBytes: 4096, messages: 4, receives: 2 }, { transport, config: { rnrTimerPs } }))).r;
    const slow = await at(10_000_000), fast = await at(1_000_000);
    for (const r of [slow, fast]) {
      expect(r.ended).toBe("failed");
      expect(r.verbs).toEqual({ SEND: { messages: 4, completed: 2, failed: 2, bytes: 8192 } });
      expect([r.flows[0]!.status, r.flows[0]!.completed, r.flows[0]!.failed]).toEqual(["RNR_RETRY_EXC_ERR", 2, 2]);
      // the receives' own completions are not messages
      expect(r.messages).toEqual({ total: 4, completed: 4, failed: 2 });
      // 2 messages refused on each of 1 + 3 tries
      expect(r.naksSent).toBe(2 * 4);
      expect(r.retransmitCauses.rnr).toBe(transport === "rocev2" ? 3 : 8);
    }
    // three waits of the RNR timer, each 9 us longer
    expect(slow.endPs - fast.endPs).toBe(3 * 9_000_000);
  });

  it("rnrRetries bounds the tries: 1 retry, 2 NAKs per try", async () => {
    const { r } = await run(pair({ verb: "SEND", messageBytes: 4096, messages: 4, receives: 2 }, { config: { rnrRetries: 1 } }));
    expect([r.naksSent, r.retransmitCauses.rnr, r.flows[0]!.status]).toEqual([2 * 2, 1, "RNR_RETRY_EXC_ERR"]);
  });

  it.each(["SEND", "WRITE_WITH_IMM"] as const)("%s with enough receives (the default: one per message) completes every message, and without any fails the first", async (verb) => {
    const ok = (await run(pair({ verb, messageBytes: 65536, messages: 8 }))).r;
    expect([ok.ended, ok.verbs![verb as "SEND"]]).toEqual(["finished", { messages: 8, completed: 8, failed: 0, bytes: 8 * 65536 }]);
    expect(ok.naksSent).toBe(0);
    const none = (await run(pair({ verb, messageBytes: 65536, messages: 8, receives: 0 }))).r;
    expect([none.flows[0]!.completed, none.flows[0]!.status]).toEqual([0, "RNR_RETRY_EXC_ERR"]);
  });

  it("a mix by weight draws each message's verb from the seed: counts near 3:1, each verb's bytes where it sends them", async () => {
    const n = 400, bytes = 65536;
    const { r, sent } = await run(pair({ verbs: { WRITE: 3, READ: 1 }, messageBytes: bytes, messages: n }, { mode: "timing" }));
    expect(r.ended).toBe("finished");
    const w = r.verbs!.WRITE!, rd = r.verbs!.READ!;
    expect(w.messages + rd.messages).toBe(n);
    // binomial: 300 WRITEs expected, standard deviation sqrt(400 x 3/4 x 1/4) = 8.7
    expect(Math.abs(w.messages - 300)).toBeLessThan(35);
    expect([w.completed, w.bytes, rd.completed, rd.bytes]).toEqual([w.messages, w.messages * bytes, rd.messages, rd.messages * bytes]);
    expect(r.totalBytes).toBe(n * bytes);
    // the WRITEs' payload left device 0, the READs' device 1 (each with 58 to 74 bytes of headers per 4 KiB)
    expect(sent[0]!).toBeGreaterThan(w.bytes);
    expect(sent[0]!).toBeLessThan(w.bytes * 1.02 + 100_000);
    expect(sent[1]!).toBeGreaterThan(rd.bytes);
    expect(sent[1]!).toBeLessThan(rd.bytes * 1.02 + 100_000);
    // the same seed draws the same mix
    expect((await run(pair({ verbs: { WRITE: 3, READ: 1 }, messageBytes: bytes, messages: n }, { mode: "timing" }))).r.verbs).toEqual(r.verbs);
  });
});

describe("an open-loop workload", () => {
  it("one flow alone: its ideal is its frames store-and-forward over two 800 Gb/s links and back, its slowdown at least 1", async () => {
    const size = 1_000_000;
    const { r } = await run({
      name: "one", seed: 1, devices: { count: 2, config: { ports: 1, scaleUpPorts: 1 } }, fabric: { mode: "timing" },
      traffic: { pattern: "workload", workload: { sizes: { text: `${size} 1` }, flows: 1 } },
    });
    const f = r.flows[0]!;
    // RoCEv2 frames of a 1 MB WRITE: 245 packets of 4096 B, the last 576 B; 58 B of Ethernet, IPv4,
    // UDP, BTH and ICRC each, and a RETH (16 B) on the first; 24 B of preamble, FCS and gap on the
    // wire: at 800 Gb/s a byte takes 10 ps
    const n = Math.ceil(size / 4096), last = size - (n - 1) * 4096;
    const frames = [58 + 16 + 4096, ...new Array<number>(n - 2).fill(58 + 4096), 58 + last];
    const ser = (b: number) => (b + 24) * 10;
    // two links of 200 ns and a switch of 400 ns: the last frame arrives after every frame's time on
    // the first link, the largest frame's on the second (max-plus: the one each later frame waited
    // behind), and the latencies; then the ACK (62 B: BTH, AETH, ICRC) comes back the same way
    const data = frames.reduce((a, b) => a + ser(b), 0) + Math.max(...frames.map(ser)) + 2 * 200_000 + 400_000;
    const ack = 2 * ser(62) + 2 * 200_000 + 400_000;
    expect(f.idealPs).toBe(data + ack);
    expect([f.verb, f.messages, f.completed, f.bytes]).toEqual(["WRITE", 1, 1, size]);
    expect(f.slowdown).toBe(f.durationPs / f.idealPs!);
    // at least 1; the rest is the NIC's own time (doorbell, fetch, reading HBM, completion: 2.36 us at 1 MB)
    expect(f.slowdown!).toBeGreaterThanOrEqual(1);
    expect(f.slowdown!).toBeLessThan(1.25);
    expect(r.workload!.slowdown.all).toEqual({ fromBytes: 1, toBytes: null, flows: 1, completed: 1, p50: f.slowdown, p99: f.slowdown });
  });

  it.each([["rocev2", 1], ["metaroce", 4]] as const)("%s over %i ports: every flow arrives, completes, and takes at least its ideal; the table counts them by size", async (transport, ports) => {
    const sc = inlineWorkloadFiles({
      name: "hadoop", seed: 5, transport, devices: { count: 6, config: { ports, scaleUpPorts: ports } }, fabric: { mode: "timing", switch: { pfc: { enabled: true } } },
      traffic: { pattern: "workload", workload: { sizes: { file: "hadoop.cdf" }, load: 0.6, flows: 300, buckets: [1000, 100_000] } },
    }, (f) => readFileSync(`examples/workloads/${f}`, "utf8")) as ScenarioInput;
    const { r } = await run(sc);
    expect(r.ended).toBe("finished");
    expect(r.flows).toHaveLength(300);
    expect(r.flows.every((f, i) => f.src !== f.dst && f.completed === 1 && (i === 0 || f.startPs! >= r.flows[i - 1]!.startPs!))).toBe(true);
    // the ideal is a lower bound under load too (for the MetaRoCE-like transport, of a flow sprayed over 4 ports)
    expect(Math.min(...r.flows.map((f) => f.slowdown!))).toBeGreaterThanOrEqual(1);
    const b = r.workload!.slowdown.buckets;
    expect(b.map((x) => [x.fromBytes, x.toBytes])).toEqual([[1, 1000], [1001, 100_000], [100_001, null]]);
    expect(b.map((x) => x.flows)).toEqual([
      r.flows.filter((f) => f.bytes <= 1000).length, r.flows.filter((f) => f.bytes > 1000 && f.bytes <= 100_000).length, r.flows.filter((f) => f.bytes > 100_000).length,
    ]);
    const sorted = r.flows.filter((f) => f.bytes <= 1000).map((f) => f.slowdown!).sort((x, y) => x - y);
    expect(b[0]!.p50).toBe(sorted[Math.ceil(sorted.length / 2) - 1]);
    expect(b[0]!.p99).toBe(sorted[Math.ceil(0.99 * sorted.length) - 1]);
    expect(r.workload!.hostGbps).toBe(800 * ports);
  });

  it("posts its flows at their own times: a run that stops every microsecond (--timeline) gives the same result", async () => {
    const sc: ScenarioInput = {
      name: "wl", seed: 9, devices: { count: 4, config: { ports: 1, scaleUpPorts: 1 } }, fabric: { mode: "timing" },
      traffic: { pattern: "workload", verbs: { WRITE: 1, SEND: 1, READ: 1 }, workload: { sizes: { text: "1000 0.5\n200000 1" }, load: 0.7, flows: 120 } },
    };
    const plain = await runScenario(coreModule(), sc);
    const { timeline, ...sampled } = await runScenario(coreModule(), sc, { timelinePs: 1_000_000 });
    expect(sampled).toEqual(plain);
    expect(plain.verbs!.SEND!.completed + plain.verbs!.READ!.completed + plain.verbs!.WRITE!.completed).toBe(120);
    // its bytes placed over time end at every byte (a READ's once it completed)
    expect(timeline!.placedBytes.at(-1)).toBe(plain.totalBytes);
  });
});
