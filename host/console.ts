// One engine's console as the host sees it: the bytes drained from the core's console ring,
// kept up to a cap (a firmware print loop must not exhaust the host's memory) with the rest
// counted, and cut into lines for a streaming reader, who sees every byte whatever the cap.
// The core also gives the simulated time each line began (assembly/engine/console.ts), so
// every line carries its time, and the lines of all engines can be put in time order
// (TimeOrderedLines).

/** A line longer than this many characters reaches the line reader in pieces of this length. */
export const CONSOLE_LINE_MAX = 64 * 1024;

/** A console line and when (simulated time, ps) the engine printed its first byte. */
export interface ConsoleLine {
  engine: number;
  timePs: bigint;
  text: string;
}

const NEWLINE = 10;

export class EngineConsole {
  /** Kept bytes in [0, keptBytes); grows by doubling up to the cap. */
  private kept = new Uint8Array(0);
  private keptBytes = 0;
  private droppedBytes = 0;
  /** When each line that begins in the kept bytes began. */
  private keptLineTimes: bigint[] = [];
  private partialLine = "";
  /** Times of the lines given to write() and not yet ended; [0] is the line being read now. */
  private openLineTimes: bigint[] = [];
  /** The next byte written begins a line. */
  private atLineStart = true;
  /** A streaming decoder: a UTF-8 character split across two drains stays whole. */
  private readonly lineDecoder = new TextDecoder("utf-8");

  constructor(
    private readonly keepBytes: number,
    private readonly onLine?: (line: string, timePs: bigint) => void,
  ) {}

  /**
   * The next bytes continue a line that began at `timePs` before this console saw any byte
   * (a device restored from a snapshot taken mid-line).
   */
  continueLine(timePs: bigint): void {
    this.atLineStart = false;
    this.keptLineTimes.push(timePs);
    if (this.onLine) this.openLineTimes.push(timePs);
  }

  /** Bytes drained after the cap was reached: printed, streamed, not kept. */
  get dropped(): number {
    return this.droppedBytes;
  }

  /** When the line the reader has part of began (its first bytes were drained, its newline not yet); null if none. */
  get openLineSincePs(): bigint | null {
    return this.atLineStart ? null : (this.openLineTimes[0] ?? null);
  }

  /**
   * Takes bytes just drained from the core (the view is only valid during the call) and the
   * times of the lines drained, one per line begun, in order, the first for these bytes at
   * `lineTimes[from]`. Returns the index after the last time used.
   */
  write(bytes: Uint8Array, lineTimes: ArrayLike<bigint>, from = 0): number {
    const keep = Math.max(0, Math.min(bytes.length, this.keepBytes - this.keptBytes));
    let t = from;
    for (let k = 0; k < bytes.length; k++) {
      if (this.atLineStart) {
        if (t >= lineTimes.length) throw new Error(`console: a line begins at byte ${k} of ${bytes.length} drained but the core gave only ${lineTimes.length} line times`);
        const time = lineTimes[t++]!;
        if (k < keep) this.keptLineTimes.push(time);
        if (this.onLine) this.openLineTimes.push(time);
      }
      this.atLineStart = bytes[k] === NEWLINE;
    }
    if (keep > 0) {
      if (this.keptBytes + keep > this.kept.length) {
        const grown = new Uint8Array(Math.min(this.keepBytes, Math.max(4096, 2 * (this.keptBytes + keep))));
        grown.set(this.kept.subarray(0, this.keptBytes));
        this.kept = grown;
      }
      this.kept.set(bytes.subarray(0, keep), this.keptBytes);
      this.keptBytes += keep;
    }
    this.droppedBytes += bytes.length - keep;
    if (this.onLine && bytes.length > 0) this.emitLines(this.lineDecoder.decode(bytes, { stream: true }));
    return t;
  }

  private emitLines(decoded: string): void {
    const text = this.partialLine + decoded;
    let from = 0;
    for (;;) {
      const nl = text.indexOf("\n", from), end = nl < 0 ? text.length : nl;
      const time = this.openLineTimes[0]!;
      // a line that never ends would otherwise grow (and be rescanned) without bound
      for (; end - from > CONSOLE_LINE_MAX; from += CONSOLE_LINE_MAX) this.onLine!(text.slice(from, from + CONSOLE_LINE_MAX), time);
      if (nl < 0) break;
      this.onLine!(text.slice(from, nl), time);
      this.openLineTimes.shift();
      from = nl + 1;
    }
    this.partialLine = text.slice(from);
  }

  /**
   * Hands text that did not end with a newline to the line reader (with its line's time; if
   * the engine goes on with the line, the rest arrives as another line with the same time).
   */
  flush(): void {
    if (!this.onLine) return;
    const t = this.partialLine + this.lineDecoder.decode();
    if (t) this.onLine(t, this.openLineTimes[0]!);
    this.partialLine = "";
  }

  /** The kept text: everything printed, up to the cap (a character cut by the cap decodes as U+FFFD). */
  text(): string {
    return new TextDecoder("utf-8").decode(this.kept.subarray(0, this.keptBytes));
  }

  /** The kept text as lines with the time each began (a last line without its newline included). */
  lines(): { timePs: bigint; text: string }[] {
    const text = this.text();
    const parts = text.split("\n");
    if (parts[parts.length - 1] === "") parts.pop();
    return parts.map((line, k) => ({ timePs: this.keptLineTimes[k]!, text: line }));
  }
}

/**
 * Lines of many engines put in simulated-time order (ties: engine, then the order printed):
 * a line is released once no line still to come can begin before it, that is when its time is
 * before `horizonPs`, which the caller keeps at most the earliest time anything not yet seen
 * can have (Device: its time now, and the beginning of any line it has only part of).
 */
export class TimeOrderedLines {
  private held: (ConsoleLine & { seq: number })[] = [];
  private seq = 0;

  constructor(private readonly emit: (line: ConsoleLine) => void) {}

  add(line: ConsoleLine): void {
    this.held.push({ ...line, seq: this.seq++ });
  }

  /** Emits, in order, every held line that began before `horizonPs` (every one when null). */
  release(horizonPs: bigint | null): void {
    if (this.held.length === 0) return;
    this.held.sort((a, b) => (a.timePs < b.timePs ? -1 : a.timePs > b.timePs ? 1 : a.engine - b.engine || a.seq - b.seq));
    let n = 0;
    while (n < this.held.length && (horizonPs === null || this.held[n]!.timePs < horizonPs)) n++;
    const out = this.held.splice(0, n);
    for (const { seq: _seq, ...line } of out) this.emit(line);
  }
}
