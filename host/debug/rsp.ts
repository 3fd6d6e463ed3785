// The GDB remote serial protocol's framing (GDB manual, appendix E.1 "Overview"): packets
// `$payload#cs` with cs the two-hex-digit modulo-256 sum of the payload bytes, '+' / '-'
// acknowledgements, and the lone 0x03 byte that interrupts a running target. Binary data
// escapes '#', '$', '}' and '*' as '}' followed by the byte XOR 0x20. Bytes only: what a packet
// means is host/debug/gdb.ts, where the bytes come from is the platform's socket.

/** Largest payload accepted (and advertised as PacketSize): longer ones are refused with '-'. */
export const MAX_PACKET_BYTES = 0x4000;

export type RspEvent =
  | { kind: "packet"; payload: Uint8Array } // checksum good, escapes undone
  | { kind: "interrupt" } // 0x03 outside a packet
  | { kind: "ack" }
  | { kind: "nak" }
  | { kind: "bad-checksum"; want: number; got: string } // the sender should send it again
  | { kind: "overlong" } // no '#' within MAX_PACKET_BYTES
  | { kind: "garbage"; byte: number }; // a byte outside any packet that means nothing

const DOLLAR = 0x24, HASH = 0x23, ESC = 0x7d, STAR = 0x2a;

/**
 * Splits a byte stream into RSP events, one at a time: `push` keeps the bytes, `next` reads
 * them up to the next event, so that a reader can stop between packets (the stub does while
 * its client is behind on replies) and the bytes after wait, unparsed. A partial packet is kept
 * across pushes in a buffer of MAX_PACKET_BYTES; nothing else grows with the input.
 */
export class RspReader {
  private state: "idle" | "payload" | "sum1" | "sum2" | "skip" | "skipSum1" | "skipSum2" = "idle";
  private buf = new Uint8Array(MAX_PACKET_BYTES);
  private len = 0;
  private sum = 0;
  private sumText = "";
  private readonly input: Uint8Array[] = []; // pushed, not yet read (the caller's arrays, not copies)
  private at = 0; // next byte of input[0]

  /** Keeps `bytes` for `next` (not copied: the caller must not change them afterwards). */
  push(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    this.input.push(bytes);
  }

  /** The next event in the bytes pushed; null once they are all read (a partial packet waits for more). */
  next(): RspEvent | null {
    for (let chunk = this.input[0]; chunk; chunk = this.input[0]) {
      while (this.at < chunk.length) {
        const ev = this.step(chunk[this.at++]!);
        if (ev) return ev;
      }
      this.input.shift();
      this.at = 0;
    }
    return null;
  }

  /** Every event in `bytes` (and in bytes pushed before). */
  feed(bytes: Uint8Array): RspEvent[] {
    this.push(bytes);
    const out: RspEvent[] = [];
    for (let ev = this.next(); ev; ev = this.next()) out.push(ev);
    return out;
  }

  private step(b: number): RspEvent | null {
    switch (this.state) {
      case "idle":
        if (b === DOLLAR) this.begin();
        else if (b === 0x2b) return { kind: "ack" };
        else if (b === 0x2d) return { kind: "nak" };
        else if (b === 0x03) return { kind: "interrupt" };
        else return { kind: "garbage", byte: b };
        break;
      case "payload":
        if (b === HASH) {
          this.state = "sum1";
        } else if (b === DOLLAR) {
          this.begin(); // a packet cut short by a new one: the sender gave up on it
        } else if (this.len >= MAX_PACKET_BYTES) {
          this.state = "skip";
          return { kind: "overlong" };
        } else {
          this.buf[this.len++] = b;
          this.sum = (this.sum + b) & 0xff;
        }
        break;
      case "sum1":
        this.sumText = String.fromCharCode(b);
        this.state = "sum2";
        break;
      case "sum2": {
        this.sumText += String.fromCharCode(b);
        this.state = "idle";
        const got = /^[0-9a-fA-F]{2}$/.test(this.sumText) ? parseInt(this.sumText, 16) : -1;
        if (got !== this.sum) return { kind: "bad-checksum", want: this.sum, got: this.sumText };
        return { kind: "packet", payload: unescape(this.buf.subarray(0, this.len)) };
      }
      case "skip": // the rest of an overlong packet, up to its checksum or a new packet
        if (b === HASH) this.state = "skipSum1";
        else if (b === DOLLAR) this.begin();
        break;
      case "skipSum1":
        this.state = "skipSum2";
        break;
      case "skipSum2":
        this.state = "idle";
        break;
    }
    return null;
  }

  private begin(): void {
    this.state = "payload";
    this.len = 0;
    this.sum = 0;
  }
}

/** Undoes '}'-escapes (only binary data has them; other packets never hold a literal '}'). */
function unescape(raw: Uint8Array): Uint8Array {
  if (!raw.includes(ESC)) return raw.slice();
  const out: number[] = [];
  for (let i = 0; i < raw.length; i++) out.push(raw[i] === ESC && i + 1 < raw.length ? raw[++i]! ^ 0x20 : raw[i]!);
  return Uint8Array.from(out);
}

/** `$payload#cs`, with '#', '$', '}' and '*' escaped. */
export function frame(payload: string | Uint8Array): Uint8Array {
  const raw = typeof payload === "string" ? latin1(payload) : payload;
  const out: number[] = [DOLLAR];
  let sum = 0;
  for (const b of raw) {
    if (b === DOLLAR || b === HASH || b === ESC || b === STAR) {
      out.push(ESC, b ^ 0x20);
      sum += ESC + (b ^ 0x20);
    } else {
      out.push(b);
      sum += b;
    }
  }
  out.push(HASH, ...latin1((sum & 0xff).toString(16).padStart(2, "0")));
  return Uint8Array.from(out);
}

/** One byte per character (the protocol's text is ASCII; binary data is passed as bytes). */
export function latin1(s: string): Uint8Array {
  return Uint8Array.from(s, (c) => c.charCodeAt(0) & 0xff);
}

export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

/** Bytes from an even-length hex string, or null when it is not one. */
export function fromHex(s: string): Uint8Array | null {
  if (s.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(s)) return null;
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}
