// Waiting, for at most a time of the wall clock, until a count that events raise reaches a
// number: a stepped device waits for the datagrams its client says it sent (served-device.ts
// advance), the conformance tester for those the device says it sent (host/conform/udp-target.ts).
// One waiter at a time.

export class CountWait {
  private check: (() => void) | null = null;

  constructor(private readonly count: () => number) {}

  /** The count may have grown: a waiter looks again. */
  grew(): void {
    this.check?.();
  }

  /** Resolves once the count is at least `n`; after `waitMs` rejects with an Error whose message `why(count)` gives. */
  reach(n: number, waitMs: number, why: (got: number) => string): Promise<void> {
    if (this.count() >= n) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.check = null;
        reject(new Error(why(this.count())));
      }, waitMs);
      this.check = () => {
        if (this.count() < n) return;
        this.check = null;
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
