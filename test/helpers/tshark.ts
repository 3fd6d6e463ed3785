// Running Debian's tshark (Wireshark) on a capture, and the checks the tshark tests share: the
// fields of its JSON output, and an ICRC recomputed apart from menic's own code. .ci/run
// installs tshark; a machine without it skips the Wireshark checks (hasTshark).
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { crc32 as zlibCrc32 } from "node:zlib";
import { expect } from "vitest";
import { OPCODES } from "../../host/generated/headers.js";
import type { RoceFrame } from "../../host/wire/rocev2.js";

export const hasTshark = spawnSync("tshark", ["--version"], { stdio: "ignore" }).status === 0;

export const tshark = (args: string[]) => {
  const r = spawnSync("tshark", args, { encoding: "utf8", maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new Error(`tshark ${args.join(" ")} failed (${r.status}): ${r.stderr}`);
  return r.stdout;
};

/**
 * tshark reading `file` with IPv4 header checksums verified and Wireshark's RPC-over-RDMA
 * dissector off: its guess at whether an InfiniBand payload is RPC-over-RDMA throws on a
 * zero-byte SEND in 4.0 ("Malformed Packet: RPCoRDMA"), which says nothing of the InfiniBand
 * headers. Other payload guesses stay on; a frame.protocols check sees any that fires.
 */
export const readCapture = (file: string, args: string[]) => tshark(["-r", file, ...TSHARK_SETTINGS, ...args]);
/** readCapture's settings. */
export const TSHARK_SETTINGS = ["-o", "ip.check_checksum:TRUE", "--disable-protocol", "rpcordma"];

/** Every field of a tshark -T json packet as name → values (a field can repeat). */
export function fieldsOf(layers: unknown): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const walk = (o: unknown) => {
    if (!o || typeof o !== "object") return;
    for (const [k, v] of Object.entries(o)) {
      const vals = Array.isArray(v) ? v : [v];
      for (const x of vals) {
        if (typeof x === "string") out.set(k, [...(out.get(k) ?? []), x]);
        else walk(x);
      }
    }
  };
  walk(layers);
  return out;
}

/** Every packet of `file` as tshark dissects it (readCapture's settings): its fields by name. */
export const tsharkPackets = (file: string) =>
  (JSON.parse(readCapture(file, ["-T", "json", "--no-duplicate-keys"])) as { _source: { layers: unknown } }[]).map((p) => fieldsOf(p._source.layers));

/** Removes a test's capture folder, or keeps it (and says where) when KEEP_PCAP is set. */
export function removeCaptures(dir: string): void {
  if (!dir) return;
  if (process.env.KEEP_PCAP) console.warn(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}

/**
 * The ICRC recomputed from the standards' byte offsets with zlib's CRC-32 (Ethernet, IPv4
 * without options): 8 bytes of ones for the LRH, then IPv4 with ToS, TTL and checksum as ones,
 * UDP with its checksum as ones, the BTH with its fifth byte (FECN, BECN, reserved) as ones
 * (IBA vol. 1 Annex A17.3.3), the rest as it is, up to the ICRC.
 */
export function independentIcrc(frame: Uint8Array): number {
  const c = Buffer.concat([Buffer.alloc(8, 0xff), Buffer.from(frame.subarray(14, frame.length - 4))]);
  const ip = 8, udp = ip + 20, bth = udp + 8;
  for (const i of [ip + 1, ip + 8, ip + 10, ip + 11, udp + 6, udp + 7, bth + 4]) c[i] = 0xff; // ToS, TTL, checksum; UDP checksum; BTH byte 4
  return zlibCrc32(c);
}

export const colonHex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join(":");

/** The first value of field `name` in dissected packet `p`, which must have it (`at` names the packet). */
export function field(p: Map<string, string[]>, name: string, at: string): string {
  const v = p.get(name);
  expect(v, `${at}: ${name}`).toBeDefined();
  return v![0]!;
}

/** Wireshark dissected in `p` the BTH, RETH, AETH and ImmDt of frame `f`, field by field; a header `f` lacks is not there. */
export function expectHeaders(p: Map<string, string[]>, f: RoceFrame, at: string): void {
  const one = (name: string) => field(p, name, at);
  expect(Number(one("infiniband.bth.opcode")), at).toBe(f.opcode);
  expect(Number(one("infiniband.bth.destqp")), at).toBe(f.destQp);
  expect(Number(one("infiniband.bth.psn")), at).toBe(f.psn);
  expect(Number(one("infiniband.bth.p_key")), at).toBe(f.pKey);
  expect(one("infiniband.bth.se"), at).toBe(f.se ? "1" : "0");
  expect(one("infiniband.bth.m"), at).toBe(f.migReq ? "1" : "0");
  expect(one("infiniband.bth.a"), at).toBe(f.ackReq ? "1" : "0");
  expect(one("infiniband.bth.tver"), at).toBe("0");
  expect(Number(one("infiniband.bth.padcnt")), at).toBe((4 - ((OPCODES.get(f.opcode)!.extBytes + f.payload.length) & 3)) & 3);
  if (f.reth) {
    expect(BigInt(one("infiniband.reth.va")), at).toBe(f.reth.va);
    expect(Number(one("infiniband.reth.r_key")), at).toBe(f.reth.rkey);
    expect(Number(one("infiniband.reth.dmalen")), at).toBe(f.reth.dmaLength);
  } else expect(p.has("infiniband.reth.va"), at).toBe(false);
  if (f.aeth) {
    expect(Number(one("infiniband.aeth.syndrome")), at).toBe(f.aeth.syndrome);
    expect(Number(one("infiniband.aeth.msn")), at).toBe(f.aeth.msn);
    expect(Number(one("infiniband.aeth.syndrome.opcode")), at).toBe((f.aeth.syndrome >> 5) & 3);
  } else expect(p.has("infiniband.aeth.msn"), at).toBe(false);
  if (f.immDt !== undefined) {
    const imm = new Uint8Array(4);
    new DataView(imm.buffer).setUint32(0, f.immDt);
    expect(one("infiniband.immdt"), at).toBe(colonHex(imm));
  } else expect(p.has("infiniband.immdt"), at).toBe(false);
}
