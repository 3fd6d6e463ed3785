// Work handed out to worker threads (Node): `count` workers started on one module, each given one
// item at a time and answering it with one message, the next item handed to whichever worker
// answered. The sweep's runs (sweep-pool.ts, `menic run --jobs`) and the fidelity sheet's
// (bench/fidelity.ts) go through it; each module answers its own items.

import { Worker } from "node:worker_threads";

/**
 * Hands `items` out in order to `count` worker threads started on the module at `file` with
 * `workerData`, and gives each answer to `answer` as it comes (its item beside it). `halt` is
 * asked before each item is handed out (with the number of items still being worked on): true
 * hands out no more. Resolves once every item handed out is answered; rejects when `answer`
 * throws or a worker fails. The workers are ended either way.
 */
export async function onWorkers<T, A>(file: string, workerData: unknown, count: number, items: readonly T[], answer: (item: T, a: A) => void,
  halt: (busy: number) => boolean = () => false): Promise<void> {
  const queue = [...items];
  const workers = Array.from({ length: Math.min(count, queue.length) }, () => new Worker(file, { workerData }));
  try {
    await new Promise<void>((resolve, reject) => {
      let busy = 0;
      const next = (w: Worker) => {
        const item = halt(busy) ? undefined : queue.shift();
        if (item === undefined) { if (busy === 0) resolve(); return; }
        busy++;
        w.once("message", (a: A) => {
          busy--;
          try { answer(item, a); } catch (e) { reject(e); return; }
          next(w);
        });
        w.postMessage(item);
      };
      if (workers.length === 0) resolve();
      for (const w of workers) { w.on("error", reject); next(w); }
    });
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
