// A Chrome trace-event JSON file (what ui.perfetto.dev and chrome://tracing open) written as it
// goes: `{"traceEvents":[` first, then each event as it is added, then the closing. Events
// collect in one buffer of `chunkBytes`, handed to the sink whenever it fills, so a trace costs
// that buffer however long the run; no string of the whole file is ever built (V8 refuses
// strings past about 512 MiB: "Invalid string length").
//
// Bounded: past `maxBytes` in all (the closing included) the writer adds nothing more and closes
// the file with a note of where it stopped, so a trace cut short is still a whole JSON document
// that opens, holding every event up to that point in the order they came.
// No Node APIs here: the sink decides where bytes go (a file in host/platform, Blob parts in the
// page, an array in tests).

/** Receives the file's bytes in order; a chunk is the sink's to keep. */
export type TraceSink = (chunk: Uint8Array) => void;

/**
 * The default bound on a trace file's size (`menic run --trace-max-bytes`, the page's trace):
 * 256 MiB, about what ui.perfetto.dev opens in a browser tab, whose memory (2 GiB is typical)
 * must hold the parsed trace, several times the file.
 */
export const TRACE_MAX_BYTES_DEFAULT = 256 * 1024 * 1024;
/** The smallest bound a writer takes: room for its opening, its closing and a few events. */
export const TRACE_MAX_BYTES_MIN = 1024;
const CHUNK_BYTES_DEFAULT = 1 << 20;

const HEAD = '{"traceEvents":[\n';
const TAIL = '\n],"displayTimeUnit":"ns"}\n';
/** kept free for the closing and the truncation note (its name holds the bound's digits) */
const TAIL_RESERVE = 512;

import type { TraceEvent } from "./perfetto.js";

const encoder = new TextEncoder();

export interface TraceWriterOptions {
  /** The file's size bound in bytes, closing included (at least {@link TRACE_MAX_BYTES_MIN}); Infinity: none. Default {@link TRACE_MAX_BYTES_DEFAULT}. */
  maxBytes?: number;
  /** Bytes buffered before each hand-over to the sink. Default 1 MiB. */
  chunkBytes?: number;
}

/** Streams trace events to a sink as one JSON document, within a size bound. */
export class TraceWriter {
  /** events written (the truncation note not counted) */
  events = 0;
  /** bytes of the file so far, handed to the sink or buffered */
  bytes = 0;
  /** chunks handed to the sink so far */
  chunks = 0;
  /** the simulated time (ps) of the first event left out for want of room; null while none was */
  truncatedAtPs: number | null = null;
  readonly maxBytes: number;
  private buf: Uint8Array;
  private used = 0;
  /** staged text that outgrew a chunk */
  private big: Uint8Array | null = null;
  private closed = false;

  constructor(private readonly sink: TraceSink, o: TraceWriterOptions = {}) {
    this.maxBytes = o.maxBytes ?? TRACE_MAX_BYTES_DEFAULT;
    if (!(this.maxBytes >= TRACE_MAX_BYTES_MIN)) throw new RangeError(`a trace's size bound must be at least ${TRACE_MAX_BYTES_MIN} bytes, got ${this.maxBytes}`);
    this.buf = new Uint8Array(o.chunkBytes ?? CHUNK_BYTES_DEFAULT);
    this.put(HEAD);
  }

  /**
   * Adds one event seen at `atPs` (simulated time) unless the bound is reached; gives whether it
   * was added. Once one is left out, every later one is too: the file is a prefix of the trace.
   */
  add(event: object, atPs: number): boolean {
    if (this.closed) throw new Error("trace: add after close");
    if (this.truncatedAtPs !== null) return false;
    const n = this.stage((this.events ? ",\n" : "") + JSON.stringify(event));
    if (this.bytes + n + TAIL_RESERVE > this.maxBytes) {
      this.big = null; // staged, not taken
      this.truncatedAtPs = atPs;
      return false;
    }
    this.commit(n);
    this.events++;
    return true;
  }

  /** Writes the closing (and the truncation note, when the bound was reached) and hands everything to the sink. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.truncatedAtPs !== null) {
      const note: TraceEvent = { name: `trace truncated: its size bound (${this.maxBytes} bytes) reached`, ph: "i", s: "g", ts: this.truncatedAtPs / 1e6, pid: 0, tid: 0 };
      this.put((this.events ? ",\n" : "") + JSON.stringify(note));
    }
    this.put(TAIL);
    this.flush();
  }

  private put(text: string): void {
    this.commit(this.stage(text));
  }

  /**
   * Encodes `text` after what the buffer holds, without taking it yet (commit does); when it
   * lacks room, hands the buffer over first; text bigger than a whole chunk is kept on its own.
   * Gives its bytes.
   */
  private stage(text: string): number {
    let r = encoder.encodeInto(text, this.buf.subarray(this.used));
    if (r.read < text.length) {
      this.flush();
      r = encoder.encodeInto(text, this.buf);
      if (r.read < text.length) {
        this.big = encoder.encode(text);
        return this.big.length;
      }
    }
    return r.written;
  }

  /** Takes the `n` bytes staged last. */
  private commit(n: number): void {
    if (this.big) { this.hand(this.big); this.big = null; }
    else this.used += n;
    this.bytes += n;
  }

  private flush(): void {
    if (this.used === 0) return;
    this.hand(this.buf.slice(0, this.used));
    this.used = 0;
  }

  private hand(chunk: Uint8Array): void {
    this.chunks++;
    this.sink(chunk);
  }
}
