// Running Debian's tshark (Wireshark) on a capture, and the checks the tshark tests share: the
// fields of its JSON output, and an ICRC recomputed apart from menic's own code. .ci/run
// installs tshark; a machine without it skips the Wireshark checks (hasTshark).
import { spawnSync } from "node:child_process";
import { crc32 as zlibCrc32 } from "node:zlib";

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
export const readCapture = (file: string, args: string[]) =>
  tshark(["-r", file, "-o", "ip.check_checksum:TRUE", "--disable-protocol", "rpcordma", ...args]);

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
