// A minimal GDB remote-protocol client for tests: frames packets, collects the stub's replies
// (parsed with the stub's own framing reader, host/debug/rsp.ts) and its bare '+' / '-' bytes.
import { RspReader, frame, latin1 } from "../../host/debug/rsp.js";
import type { GdbConnection } from "../../host/fw/gdb.js";

export class GdbClient {
  private readonly reader = new RspReader();
  private readonly replies: string[] = [];
  private waiters: (() => void)[] = [];
  /** Every '+' and '-' the stub sent, in order. */
  acks = "";

  constructor(private readonly write: (bytes: Uint8Array) => void) {}

  /** Feed the stub's bytes here. */
  fromStub(bytes: Uint8Array): void {
    for (const ev of this.reader.feed(bytes)) {
      if (ev.kind === "packet") this.replies.push(String.fromCharCode(...ev.payload));
      else if (ev.kind === "ack") this.acks += "+";
      else if (ev.kind === "nak") this.acks += "-";
    }
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Sends raw bytes (a malformed packet, ^C, garbage). */
  raw(bytes: string | Uint8Array): void {
    this.write(typeof bytes === "string" ? latin1(bytes) : bytes);
  }

  send(payload: string | Uint8Array): void {
    this.write(frame(payload));
  }

  /** The next reply packet (waits up to `ms`: by default as long as it takes, the test's timeout being the backstop for a hang). */
  async next(ms = Infinity): Promise<string> {
    const deadline = Date.now() + ms;
    while (this.replies.length === 0) {
      if (Date.now() > deadline) throw new Error("gdb client: no reply");
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    return this.replies.shift()!;
  }

  /** Sends a packet and returns the reply to it. */
  async ask(payload: string | Uint8Array): Promise<string> {
    this.send(payload);
    return this.next();
  }

  /** Replies not yet taken. */
  get pending(): number {
    return this.replies.length;
  }
}

/** A stub connection and a client joined in memory (no socket). */
export function pipe(): { connection: GdbConnection; client: GdbClient; close(): void } {
  let onData: ((b: Uint8Array) => void) | null = null;
  const early: Uint8Array[] = []; // bytes sent before the stub listens, as a socket keeps them
  const onClose: (() => void)[] = [];
  let closed = false;
  const client = new GdbClient((bytes) => {
    const copy = bytes.slice();
    if (!closed) setTimeout(() => (onData ? onData(copy) : early.push(copy)), 0);
  });
  const close = () => {
    if (closed) return;
    closed = true;
    for (const cb of onClose) cb();
  };
  const connection: GdbConnection = {
    write: (bytes) => {
      if (!closed) client.fromStub(bytes.slice());
      return true; // taken at once: never behind
    },
    onDrain: () => {},
    onData: (cb) => {
      onData = cb;
      for (const b of early.splice(0)) cb(b);
    },
    onClose: (cb) => onClose.push(cb),
    close,
  };
  return { connection, client, close };
}
