// A minimal pcapng reader for tests, written from the specification (draft-ietf-opsawg-pcapng)
// apart from host/wire/pcapng.ts, so that it can check the writer: little-endian sections only;
// SHB, IDB and EPB blocks; the options the writer uses. Throws on anything it does not expect.

export interface ReadInterface { linkType: number; snapLen: number; name?: string; description?: string; speedBps?: bigint; tsresol?: number }
export interface ReadPacket { iface: number; time: bigint; originalLength: number; data: Uint8Array; flags?: number }
export interface ReadFile { application?: string; interfaces: ReadInterface[]; packets: ReadPacket[] }

export function readPcapng(bytes: Uint8Array): ReadFile {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const text = (at: number, n: number) => new TextDecoder().decode(bytes.subarray(at, at + n));
  const file: ReadFile = { interfaces: [], packets: [] };
  /** Calls `each(code, at, len)` for the options in [at, end). */
  const options = (at: number, end: number, each: (code: number, at: number, len: number) => void) => {
    while (at + 4 <= end) {
      const code = v.getUint16(at, true), len = v.getUint16(at + 2, true);
      if (code === 0) return;
      each(code, at + 4, len);
      at += 4 + ((len + 3) & ~3);
    }
  };
  let at = 0;
  while (at < bytes.length) {
    const type = v.getUint32(at, true), len = v.getUint32(at + 4, true);
    if (len < 12 || len % 4 || at + len > bytes.length) throw new Error(`block at ${at}: bad length ${len}`);
    if (v.getUint32(at + len - 4, true) !== len) throw new Error(`block at ${at}: trailing length differs`);
    const end = at + len - 4;
    if (type === 0x0a0d0d0a) {
      if (v.getUint32(at + 8, true) !== 0x1a2b3c4d) throw new Error("not a little-endian section");
      if (v.getUint16(at + 12, true) !== 1 || v.getUint16(at + 14, true) !== 0) throw new Error("not pcapng 1.0");
      options(at + 24, end, (code, o, n) => { if (code === 4) file.application = text(o, n); });
    } else if (type === 1) {
      const i: ReadInterface = { linkType: v.getUint16(at + 8, true), snapLen: v.getUint32(at + 12, true) };
      options(at + 16, end, (code, o, n) => {
        if (code === 2) i.name = text(o, n);
        else if (code === 3) i.description = text(o, n);
        else if (code === 8) i.speedBps = v.getBigUint64(o, true);
        else if (code === 9) i.tsresol = bytes[o]!;
      });
      file.interfaces.push(i);
    } else if (type === 6) {
      const captured = v.getUint32(at + 20, true);
      const p: ReadPacket = {
        iface: v.getUint32(at + 8, true),
        time: (BigInt(v.getUint32(at + 12, true)) << 32n) | BigInt(v.getUint32(at + 16, true)),
        originalLength: v.getUint32(at + 24, true),
        data: bytes.slice(at + 28, at + 28 + captured),
      };
      if (p.iface >= file.interfaces.length) throw new Error(`packet on undescribed interface ${p.iface}`);
      options(at + 28 + ((captured + 3) & ~3), end, (code, o) => { if (code === 2) p.flags = v.getUint32(o, true); });
      file.packets.push(p);
    } else throw new Error(`block at ${at}: unexpected type ${type}`);
    at += len;
  }
  return file;
}
