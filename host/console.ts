// One engine's console as the host sees it: the bytes drained from the core's console ring,
// kept up to a cap (a firmware print loop must not exhaust the host's memory) with the rest
// counted, and cut into lines for a streaming reader, who sees every byte whatever the cap.

/** A line longer than this many characters reaches the line reader in pieces of this length. */
export const CONSOLE_LINE_MAX = 64 * 1024;

export class EngineConsole {
  /** Kept bytes in [0, keptBytes); grows by doubling up to the cap. */
  private kept = new Uint8Array(0);
  private keptBytes = 0;
  private droppedBytes = 0;
  private partialLine = "";
  /** A streaming decoder: a UTF-8 character split across two drains stays whole. */
  private readonly lineDecoder = new TextDecoder("utf-8");

  constructor(
    private readonly keepBytes: number,
    private readonly onLine?: (line: string) => void,
  ) {}

  /** Bytes drained after the cap was reached: printed, streamed, not kept. */
  get dropped(): number {
    return this.droppedBytes;
  }

  /** Takes bytes just drained from the core (the view is only valid during the call). */
  write(bytes: Uint8Array): void {
    const keep = Math.min(bytes.length, this.keepBytes - this.keptBytes);
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
    if (this.onLine) this.emitLines(this.lineDecoder.decode(bytes, { stream: true }));
  }

  private emitLines(decoded: string): void {
    const text = this.partialLine + decoded;
    let from = 0;
    for (;;) {
      const nl = text.indexOf("\n", from), end = nl < 0 ? text.length : nl;
      // a line that never ends would otherwise grow (and be rescanned) without bound
      for (; end - from > CONSOLE_LINE_MAX; from += CONSOLE_LINE_MAX) this.onLine!(text.slice(from, from + CONSOLE_LINE_MAX));
      if (nl < 0) break;
      this.onLine!(text.slice(from, nl));
      from = nl + 1;
    }
    this.partialLine = text.slice(from);
  }

  /** Hands text that did not end with a newline to the line reader. */
  flush(): void {
    if (!this.onLine) return;
    const t = this.partialLine + this.lineDecoder.decode();
    if (t) this.onLine(t);
    this.partialLine = "";
  }

  /** The kept text: everything printed, up to the cap (a character cut by the cap decodes as U+FFFD). */
  text(): string {
    return new TextDecoder("utf-8").decode(this.kept.subarray(0, this.keptBytes));
  }
}
