// host/wire/ holds wire formats, the bytes a link carries or a capture keeps: the one thing
// "wire" names among menic's folders (the core's checksums are assembly/checksum/).
//
// A pcapng writer for fabric captures: one Section Header Block, one Interface Description Block
// per capture point (link type Ethernet), then an Enhanced Packet Block per frame. Block layouts
// from the pcapng specification (IETF draft-ietf-opsawg-pcapng: §4.1 SHB, §4.2 IDB, §4.3 EPB, §3.5
// options). Timestamps: the emulator's u64 picoseconds, truncated to nanoseconds; every interface
// says if_tsresol = 9 (10^-9 s). Not picoseconds (if_tsresol = 12), though pcapng allows them:
// Wireshark 4.0 (Debian 12's) scales a timestamp's fraction of a second to nanoseconds by
// multiplying first, which overflows 64 bits past 18 ms of fraction, and shows wrong times.
// Every block is little-endian, as the section's byte-order magic tells readers. Streaming:
// blocks collect in a buffer handed to `sink` whenever it fills (and on flush), so a long run
// costs bounded memory and one sink call per buffer, not per packet.
// No Node APIs here: the sink decides where bytes go (a file in host/platform, an array in tests).

const SHB_TYPE = 0x0a0d0d0a;
const IDB_TYPE = 0x00000001;
const EPB_TYPE = 0x00000006;
const BYTE_ORDER_MAGIC = 0x1a2b3c4d;
/** LINKTYPE_ETHERNET: IEEE 802.3 frames without preamble or FCS */
export const LINKTYPE_ETHERNET = 1;
/** if_tsresol value: a power of ten, 10^-9 s */
export const TSRESOL_NANOSECONDS = 9;
const PS_PER_TICK = 1000n;

const OPT_END = 0;
const SHB_USERAPPL = 4;
const IF_NAME = 2;
const IF_DESCRIPTION = 3;
const IF_SPEED = 8;
const IF_TSRESOL = 9;
const EPB_FLAGS = 2;

/** Where a frame was going at its capture point (epb_flags bits 1:0, inbound 01, outbound 10). */
export type Direction = "in" | "out";

/** What {@link PcapngWriter.addInterface} records about a capture point (its IDB options). */
export interface InterfaceOptions {
  /** what the capture point is, e.g. "leaf0 port 3 (plane 1)" */
  description?: string;
  /** link rate in bits per second */
  speedBps?: bigint;
  /** bytes kept of each frame (0: all); frames are cut to this in writePacket */
  snapLen?: number;
}

const pad4 = (n: number) => (n + 3) & ~3;
const encoder = new TextEncoder();

interface Option { code: number; value: Uint8Array }
const optionsBytes = (opts: Option[]) => opts.reduce((n, o) => n + 4 + pad4(o.value.length), 0) + (opts.length ? 4 : 0);

/**
 * Writes a pcapng file (Wireshark, tshark) as it goes: a section header, an interface per
 * capture point, then one packet block per frame with its time (ns) and direction; bytes go to
 * a sink in buffered chunks, so a long capture costs bounded memory.
 */
export class PcapngWriter {
  private buf: Uint8Array;
  private view: DataView;
  private used = 0;
  private interfaces: { snapLen: number }[] = [];

  /**
   * Starts a section; `sink` receives the file's bytes in order, in chunks of up to `bufferBytes`
   * (a chunk is the sink's to keep). `application` goes in the section header (shb_userappl).
   */
  constructor(private readonly sink: (chunk: Uint8Array) => void, application = "menic", private readonly bufferBytes = 1 << 20) {
    this.buf = new Uint8Array(bufferBytes);
    this.view = new DataView(this.buf.buffer);
    const opts = [{ code: SHB_USERAPPL, value: encoder.encode(application) }];
    const len = 28 + optionsBytes(opts);
    const at = this.block(SHB_TYPE, len);
    this.view.setUint32(at + 8, BYTE_ORDER_MAGIC, true);
    this.view.setUint16(at + 12, 1, true); // major version
    this.view.setUint16(at + 14, 0, true); // minor version
    this.view.setBigInt64(at + 16, -1n, true); // section length: not given
    this.options(at + 24, opts);
  }

  /** Adds a capture point; returns its interface id for writePacket. */
  addInterface(name: string, o: InterfaceOptions = {}): number {
    const opts: Option[] = [{ code: IF_NAME, value: encoder.encode(name) }];
    if (o.description) opts.push({ code: IF_DESCRIPTION, value: encoder.encode(o.description) });
    if (o.speedBps !== undefined) {
      const s = new Uint8Array(8);
      new DataView(s.buffer).setBigUint64(0, o.speedBps, true);
      opts.push({ code: IF_SPEED, value: s });
    }
    opts.push({ code: IF_TSRESOL, value: Uint8Array.of(TSRESOL_NANOSECONDS) });
    const snapLen = o.snapLen ?? 0;
    const len = 20 + optionsBytes(opts);
    const at = this.block(IDB_TYPE, len);
    this.view.setUint16(at + 8, LINKTYPE_ETHERNET, true);
    this.view.setUint16(at + 10, 0, true);
    this.view.setUint32(at + 12, snapLen, true);
    this.options(at + 16, opts);
    this.interfaces.push({ snapLen });
    return this.interfaces.length - 1;
  }

  /**
   * Writes one frame seen at `timePs` (emulator picoseconds; the file keeps whole nanoseconds) on
   * interface `iface`. `originalLength` is the frame's length on the wire when `frame` holds only
   * its first bytes (timing mode).
   */
  writePacket(iface: number, timePs: bigint, frame: Uint8Array, originalLength = frame.length, direction?: Direction): void {
    const i = this.interfaces[iface];
    if (!i) throw new RangeError(`pcapng: no interface ${iface}`);
    if (timePs < 0n || timePs >= 1n << 64n) throw new RangeError(`pcapng: time ${timePs} ps is not a u64`);
    const data = i.snapLen && frame.length > i.snapLen ? frame.subarray(0, i.snapLen) : frame;
    const opts: Option[] = [];
    if (direction) {
      const flags = new Uint8Array(4);
      flags[0] = direction === "in" ? 1 : 2;
      opts.push({ code: EPB_FLAGS, value: flags });
    }
    const len = 32 + pad4(data.length) + optionsBytes(opts);
    const at = this.block(EPB_TYPE, len);
    this.view.setUint32(at + 8, iface, true);
    const ticks = timePs / PS_PER_TICK;
    this.view.setUint32(at + 12, Number(ticks >> 32n), true);
    this.view.setUint32(at + 16, Number(ticks & 0xffff_ffffn), true);
    this.view.setUint32(at + 20, data.length, true);
    this.view.setUint32(at + 24, Math.max(originalLength, data.length), true);
    this.buf.set(data, at + 28); // pad bytes are already zero: block() clears them
    this.options(at + 28 + pad4(data.length), opts);
  }

  /** Hands what is buffered to the sink. */
  flush(): void {
    if (!this.used) return;
    this.sink(this.buf.slice(0, this.used));
    this.used = 0;
  }

  /** Reserves a zeroed block of `len` bytes with its type and both length fields; returns its offset. */
  private block(type: number, len: number): number {
    if (this.used + len > this.buf.length) {
      this.flush();
      if (len > this.buf.length) {
        this.buf = new Uint8Array(Math.max(len, this.bufferBytes));
        this.view = new DataView(this.buf.buffer);
      }
    }
    const at = this.used;
    this.buf.fill(0, at, at + len);
    this.view.setUint32(at, type, true);
    this.view.setUint32(at + 4, len, true);
    this.view.setUint32(at + len - 4, len, true);
    this.used += len;
    return at;
  }

  /** Writes options (code, length, value padded to 4) and opt_endofopt at `at`. */
  private options(at: number, opts: Option[]): void {
    for (const o of opts) {
      this.view.setUint16(at, o.code, true);
      this.view.setUint16(at + 2, o.value.length, true);
      this.buf.set(o.value, at + 4);
      at += 4 + pad4(o.value.length);
    }
    if (opts.length) this.view.setUint32(at, OPT_END, true);
  }
}
