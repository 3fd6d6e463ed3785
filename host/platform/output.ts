// An output file a command writes as it goes (--trace, --pcap) or at its end (--junit), that
// never costs the command its results: a failure to open or write it (a full disk: ENOSPC) is
// kept, not thrown, so the run goes on and prints its results; the command then says which
// option's file failed and why (`--pcap out.pcapng: no space left on device (ENOSPC)`) and
// exits non-zero. A path known to be unwritable is refused before the run, when the options are
// parsed (cli-support.ts checkWritable); the file is created at its first write, so a run
// refused before it writes anything leaves no empty file behind. Node only.

import { closeSync, openSync, writeSync } from "node:fs";

/** A Node error as a user reads it: `no space left on device (ENOSPC)`. */
export function describeFsError(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  if (!err?.code) return (err as Error)?.message ?? String(e);
  // Node writes "ENOSPC: no space left on device, write": the code, what it means, the call
  const what = err.message.replace(new RegExp(`^${err.code}: `), "").replace(/, \w+( '.*')?$/, "");
  return `${what} (${err.code})`;
}

export class OutputFile {
  /** the first failure, as `describeFsError` says it; the file gets nothing after it */
  error: string | null = null;
  private fd: number | null = null;

  /** `path`, given by `option` (`--pcap`): created or emptied at the first write. */
  constructor(readonly option: string, readonly path: string) {}

  /** Appends `chunk`; after a failure, nothing (the failure is kept in `error`). */
  readonly write = (chunk: Uint8Array | string): void => {
    if (this.error !== null) return;
    try {
      this.fd ??= openSync(this.path, "w");
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      for (let at = 0; at < bytes.length;) at += writeSync(this.fd, bytes, at);
    } catch (e) {
      this.error = describeFsError(e);
    }
  };

  /** Closes the file (a failure to is kept like a write's). */
  close(): void {
    if (this.fd === null) return;
    try { closeSync(this.fd); } catch (e) { this.error ??= describeFsError(e); }
    this.fd = null;
  }

  /** The line that says this file failed, or null: `--pcap out.pcapng: no space left on device (ENOSPC)`. */
  failure(): string | null {
    return this.error === null ? null : `${this.option} ${this.path}: ${this.error}`;
  }
}
