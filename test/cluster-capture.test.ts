import { describe, it, expect, beforeAll } from "vitest";
import { readFileSync } from "node:fs";
import { runScenario, type ScenarioResult } from "../host/scenario/run.js";
import { ClusterCapture } from "../host/cluster/capture.js";
import { PcapngWriter } from "../host/wire/pcapng.js";
import { parseFrame } from "../host/wire/rocev2.js";
import type { Fabric } from "../host/fabric/fabric.js";
import { coreModule } from "../host/platform/node.js";
import { readPcapng, type ReadFile } from "./helpers/pcapng-read.js";
import { independentIcrc } from "./helpers/tshark.js";

// The endpoint tap (host/cluster/endpoint.ts) and the capture built on it (host/cluster/capture.ts):
// every frame a device port sends and every frame the runner delivers to one, as Ethernet frames in
// pcapng, one interface per port, in time order. Under 2% loss per link, lost frames leave and never
// arrive, and the counts match the fabric's own; a capture changes nothing in the run.

const scenario = () => {
  const s = JSON.parse(readFileSync("examples/scenarios/roce-loss.json", "utf8"));
  s.traffic = { ...s.traffic, messages: 4, messageBytes: 65536 };
  s.faults[0].random = 0.02;
  return s;
};

describe("a capture of a cluster run (ClusterCapture on the endpoints' taps)", () => {
  let file: ReadFile;
  let r: ScenarioResult;
  let injected = 0, written = 0;

  beforeAll(async () => {
    const chunks: Uint8Array[] = [];
    const capture = new ClusterCapture(new PcapngWriter((c) => chunks.push(c), "menic test", 1 << 16));
    let fabric: Fabric | undefined;
    r = await runScenario(coreModule(), scenario(), {
      onBuilt: (c) => { fabric = c.fabric; capture.attach(c.endpoints); },
      onProgress: (nowPs) => capture.flush(nowPs),
    });
    capture.flush();
    written = capture.written;
    injected = fabric!.stats().injected;
    file = readPcapng(Buffer.concat(chunks));
  });

  it("changes nothing in the run", async () => {
    expect(JSON.stringify(await runScenario(coreModule(), scenario()))).toBe(JSON.stringify(r));
  });

  it("has one interface per device port and every frame sent (out) and delivered (in)", () => {
    expect(file.interfaces.map((i) => [i.name, i.description, i.linkType, i.speedBps])).toEqual([
      ["dev0.port0", "device 0 port 0, 10.0.0.0", 1, 800_000_000_000n], ["dev1.port0", "device 1 port 0, 10.0.0.1", 1, 800_000_000_000n]]);
    const out = file.packets.filter((p) => p.flags === 2), inn = file.packets.filter((p) => p.flags === 1);
    expect([out.length + inn.length, written]).toEqual([file.packets.length, file.packets.length]);
    expect(out.length).toBe(injected);
    expect(inn.length).toBe(r.fabric.delivered);
    expect(r.fabric.drops.random_loss).toBeGreaterThan(0);
    expect(out.length - inn.length).toBe(Object.values(r.fabric.drops).reduce((a, b) => a + b, 0)); // a lost frame only leaves
    expect(r.retransmits).toBeGreaterThan(0);
  });

  it("writes frames in time order, whole, each arriving as it left (its ICRC recomputed apart)", () => {
    for (let k = 1; k < file.packets.length; k++) expect(file.packets[k]!.time >= file.packets[k - 1]!.time, `frame ${k}`).toBe(true);
    const left = new Map<string, bigint>();
    const key = (d: Uint8Array) => Buffer.from(d).toString("base64");
    file.packets.forEach((p, k) => {
      expect(p.data.length, `frame ${k}`).toBe(p.originalLength);
      const parsed = parseFrame(p.data);
      expect(parsed.ok, `frame ${k}`).toBe(true);
      if (parsed.ok) expect(independentIcrc(p.data), `frame ${k}`).toBe(parsed.icrc);
      // the same bytes arrive at the other device's port after they left (retransmissions repeat bytes: the latest departure)
      if (p.flags === 2) left.set(`${1 - p.iface}:${key(p.data)}`, p.time);
      else expect(left.get(`${p.iface}:${key(p.data)}`)! < p.time, `frame ${k} arrives after it left`).toBe(true);
    });
  });
});
