// What two `menic serve` processes put on the loopback interface, as tshark captures it there
// (`tshark -i lo`; .ci/run installs tshark and runs as root), against what each device's own
// capture says it sent and took (`menic serve --pcap`, the pcapng writer of host/wire/pcapng.ts):
// every datagram on lo is one frame a device sent, in the order sent, with the frame's UDP
// payload byte for byte, its UDP source port and its transport's destination port; and the peer
// took each as the frame that was sent, its envelope rebuilt (10.p.d addresses). For RoCEv2,
// Wireshark's InfiniBand dissector reads the same opcodes, QPs and PSNs on lo as in the devices'
// files. Skipped, saying why, where packets cannot be captured.
import { describe, it, expect, afterAll } from "vitest";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readPcapng } from "./helpers/pcapng-read.js";
import { hasTshark, readCapture, removeCaptures } from "./helpers/tshark.js";
import { spawnServe, connectServed, writeTransfer, quietStats, type Served } from "./helpers/serve.js";

/** Addresses of this file alone (test files run side by side; each device owns its address's 4791 and 4792). */
const A = "127.0.2.1", B = "127.0.2.2";
const dir = mkdtempSync(join(tmpdir(), "menic-serve-tshark-"));

/** Why packets cannot be captured on lo here, or null when they can (a second's trial capture). */
function captureRefused(): string | null {
  if (!hasTshark) return "tshark is not installed (apt-get install tshark)";
  const r = spawnSync("tshark", ["-i", "lo", "-a", "duration:1", "-q", "-w", join(dir, "trial.pcapng")], { encoding: "utf8" });
  return r.status === 0 ? null : `tshark -i lo cannot capture here (${r.status}): ${r.stderr.trim().split("\n").pop()}`;
}
const refused = captureRefused();
if (refused) console.warn(`test/serve-tshark: skipped: ${refused}`);

const running: (Served | ChildProcess)[] = [];
afterAll(async () => {
  for (const r of running.splice(0)) {
    if ("stop" in r) await r.stop();
    else if (r.exitCode === null) { r.kill("SIGINT"); await once(r, "exit"); }
  }
  removeCaptures(dir);
});

/** A UDP datagram of a capture: its addresses, ports, payload (hex) and, in a device's capture, its direction. */
interface Seen { src: string; dst: string; sport: number; dport: number; payload: string; dir?: number }

/** Every IPv4/UDP packet of a device's own capture (menic's pcapng writer), with its direction. */
function datagrams(file: string): Seen[] {
  return readPcapng(readFileSync(file)).packets.map((p) => {
    const d = p.data, v = new DataView(d.buffer, d.byteOffset, d.byteLength);
    const ip = (at: number) => `${d[at]}.${d[at + 1]}.${d[at + 2]}.${d[at + 3]}`;
    expect(v.getUint16(12)).toBe(0x0800); // IPv4
    return { src: ip(26), dst: ip(30), sport: v.getUint16(34), dport: v.getUint16(36), payload: Buffer.from(d.subarray(42, 14 + v.getUint16(16))).toString("hex"), dir: p.flags! & 3 };
  });
}

/** Every UDP datagram of a capture as tshark reads it: addresses, ports, payload. */
function onWire(file: string): Seen[] {
  const lines = readCapture(file, ["-T", "fields", "-e", "ip.src", "-e", "ip.dst", "-e", "udp.srcport", "-e", "udp.dstport", "-e", "udp.payload"]).split("\n").filter((l) => l !== "");
  return lines.map((l) => {
    const [src, dst, sport, dport, payload] = l.split("\t");
    return { src: src!, dst: dst!, sport: Number(sport), dport: Number(dport), payload: payload!.replaceAll(":", "") };
  });
}

const OUT = 2, IN = 1; // epb_flags direction bits

describe.skipIf(refused !== null).each([
  { transport: "rocev2", port: 4791, extra: [] as string[] },
  { transport: "metaroce", port: 4792, extra: ["--set", "mrtConnections=2"] },
])("tshark -i lo against the served devices' own captures: $transport", ({ transport, port, extra }) => {
  it("sees each frame a device sent, once, as its UDP payload from its source port, and the peer took it as sent", async () => {
    const lo = join(dir, `lo-${transport}.pcapng`), pa = join(dir, `a-${transport}.pcapng`), pb = join(dir, `b-${transport}.pcapng`);
    const cap = spawn("tshark", ["-i", "lo", "-q", "-w", lo, "-f", `udp and host ${A} and host ${B}`], { stdio: ["ignore", "ignore", "pipe"] });
    running.push(cap);
    let capErr = "";
    await new Promise<void>((resolve, reject) => {
      cap.stderr!.setEncoding("utf8").on("data", (s: string) => { capErr += s; if (/Capturing on/.test(capErr)) resolve(); });
      cap.once("exit", (code) => reject(new Error(`tshark -i lo exited ${code}: ${capErr}`)));
    });
    const common = ["--transport", transport, "--pace", "fast", "--scale", "0.001", ...extra];
    const a = await spawnServe(["--device", "0", "--bind", A, "--peer", `1=${B}`, "--pcap", pa, ...common]);
    running.push(a);
    const b = await spawnServe(["--device", "1", "--bind", B, "--peer", `0=${A}`, "--pcap", pb, ...common]);
    running.push(b);
    const [qa, qb] = await connectServed({ client: a.client, device: 0 }, { client: b.client, device: 1 }, 16, 64);
    // three WRITEs of 10,000 bytes: 3 packets each, the last with a pad (RoCEv2)
    const t = await writeTransfer(qa, qb, { wrs: 3, wrBytes: 10_000, window: 3, seed: 9, limitMs: 120_000 });
    expect(t.completions.map((c) => c.status)).toEqual(["SUCCESS", "SUCCESS", "SUCCESS"]);
    expect(Buffer.from(t.read).equals(Buffer.from(t.written))).toBe(true);
    // what each device itself counted: a frame per datagram each way
    const counted = await Promise.all([a, b].map((s) => quietStats(s.client)));
    for (const s of [a, b]) expect((await s.stop()).code).toBe(0); // each flushes its capture as it stops
    await new Promise((r) => setTimeout(r, 500)); // the last datagrams reach tshark's buffer
    cap.kill("SIGINT");
    await once(cap, "exit");

    const wire = onWire(lo), ofA = datagrams(pa), ofB = datagrams(pb);
    for (const [from, to, own, peer, srcDev, dstDev] of [[A, B, ofA, ofB, "10.0.0.0", "10.0.0.1"], [B, A, ofB, ofA, "10.0.0.1", "10.0.0.0"]] as const) {
      const onLo = wire.filter((d) => d.src === from && d.dst === to);
      const sent = own.filter((d) => d.dir === OUT), took = peer.filter((d) => d.dir === IN);
      expect(onLo.length).toBeGreaterThan(0);
      // every datagram on lo is a frame the device sent, in its order: payload, source port, transport port
      expect(onLo.map((d) => [d.payload, d.sport, d.dport])).toEqual(sent.map((d) => [d.payload, d.sport, port]));
      // the frames carried the device's own source ports (0xC000 and up), not the sockets' transport port
      expect(sent.every((d) => d.sport >= 0xc000)).toBe(true);
      expect(sent.every((d) => d.src === srcDev && d.dst === dstDev)).toBe(true);
      // the peer took the same frames, in the same order, rebuilt with the sender's addresses and ports
      expect(took.map((d) => [d.src, d.dst, d.sport, d.dport, d.payload])).toEqual(sent.map((d) => [d.src, d.dst, d.sport, d.dport, d.payload]));
    }
    expect(wire.length).toBe(ofA.filter((d) => d.dir === OUT).length + ofB.filter((d) => d.dir === OUT).length);
    for (const [s, own] of [[counted[0]!, ofA], [counted[1]!, ofB]] as const) {
      expect(s.device["port.tx_packets"]).toBe(own.filter((d) => d.dir === OUT).length);
      expect(s.device["port.rx_packets"]).toBe(own.filter((d) => d.dir === IN).length);
    }

    if (transport === "rocev2") {
      // Wireshark's own reading: the InfiniBand headers on lo are those of the devices' frames
      const fields = ["-T", "fields", "-e", "udp.srcport", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn"];
      const onLo = readCapture(lo, fields).trim().split("\n");
      const inFiles = [pa, pb].flatMap((f) => readCapture(f, [...fields, "-Y", `frame.packet_flags_direction == ${OUT}`]).trim().split("\n"));
      expect(onLo.length).toBe(wire.length);
      expect(onLo.every((l) => /^\d+\t\d+\t0x[0-9a-f]{6}\t\d+$/.test(l))).toBe(true); // port, opcode, QP (hex), PSN: every one read as InfiniBand
      expect([...onLo].sort()).toEqual([...inFiles].sort());
    }
  });
});
