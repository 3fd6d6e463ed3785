import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runScenario, type ScenarioResult } from "../host/scenario/run.js";
import { ClusterCapture } from "../host/cluster/capture.js";
import { PcapngWriter } from "../host/wire/pcapng.js";
import { parseMetaroceFrame, type MetaroceFrame } from "../host/wire/metaroce.js";
import { MRT } from "../host/generated/headers.js";
import { coreModule } from "../host/platform/node.js";
import { readPcapng } from "./helpers/pcapng-read.js";
import { hasTshark } from "./helpers/tshark.js";
import { checkMetaroceCapture } from "./helpers/metaroce-tshark.js";

// A capture of a lossy sprayed run of the MetaRoCE-like transport, read by Wireshark with the
// repository's dissector: every field it shows equals what the emulator sent (SACK bitmaps and
// rate hints included), and nothing is malformed.

const scenario = () => {
  const s = JSON.parse(readFileSync("examples/scenarios/roce-loss.json", "utf8"));
  s.transport = "metaroce";
  s.traffic = { ...s.traffic, messages: 2, messageBytes: 65536 };
  s.faults[0].random = 0.03;
  return s;
};

const dir = mkdtempSync(join(tmpdir(), "menic-mrt-capture-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a capture of a lossy MetaRoCE-like run", () => {
  let r: ScenarioResult;
  let frames: MetaroceFrame[];
  /** the frames as they left a port (a capture also holds them as they arrived) */
  let sent: MetaroceFrame[];
  const file = join(dir, "run.pcapng");

  beforeAll(async () => {
    const chunks: Uint8Array[] = [];
    const capture = new ClusterCapture(new PcapngWriter((c) => chunks.push(c), "menic test", 1 << 16));
    r = await runScenario(coreModule(), scenario(), { onBuilt: (c) => capture.attach(c.endpoints), onProgress: (nowPs) => capture.flush(nowPs) });
    capture.flush();
    const bytes = Buffer.concat(chunks);
    writeFileSync(file, bytes);
    const packets = readPcapng(bytes).packets;
    frames = packets.map((p, k) => {
      const parsed = parseMetaroceFrame(p.data);
      if (!parsed.ok) throw new Error(`frame ${k + 1}: ${parsed.error}`);
      return parsed.frame;
    });
    sent = frames.filter((_, k) => packets[k]!.flags === 2);
  });

  it("holds sprayed data, retransmissions, probes or SACK holes, and ACKs with hints: the run was lossy", () => {
    expect(r.finished).toBe(true);
    expect(r.fabric.drops.random_loss).toBeGreaterThan(0);
    const data = sent.filter((f) => f.type === MRT.TYPE_DATA), acks = sent.filter((f) => f.type === MRT.TYPE_ACK);
    expect(new Set(data.map((f) => f.path)).size).toBe(8);
    // every packet sent again is marked so on the wire, and only those
    expect(data.filter((f) => f.flags & MRT.FLAG_RETX).length).toBe(r.metaroce!.tx_retransmits);
    expect(r.metaroce!.tx_retransmits).toBeGreaterThan(0);
    expect(data.length).toBe(r.metaroce!.tx_data + r.metaroce!.tx_retransmits);
    // an ACK with a hole: SACK bits set above a cumulative PSN that did not arrive
    expect(acks.some((f) => "sack" in f && f.sack !== 0n)).toBe(true);
    expect(acks.every((f) => "hint" in f && f.hint > 0)).toBe(true);
  });

  it.skipIf(!hasTshark)("every frame decodes with the dissector, each field as sent, none malformed", () => {
    checkMetaroceCapture(file, frames);
  });
});
