// One run split over threads: each thread builds its own devices and the whole fabric (the
// same fabric, byte for byte), its devices' ends of the traffic (the threads tell each other
// their QP numbers and regions: host/scenario/traffic-run.ts), then steps only its devices and
// runs only its own planes' frames (assembly/fabric/partition.ts). The threads meet at the
// runner's windows (runner.ts): after their devices have run a window, each hands the others
// the frames its devices sent on their planes; after their fabrics have run to the window's
// end, each hands the others the frames on the wire to their devices, and when it next acts.
// At the end each gives the first thread what its devices and planes did
// (scenario/split-run.ts), and the first reports the run.
//
// Who owns what: device d goes to thread floor(d x n / devices), plane p to thread
// floor(p x n / planes); n is at most the planes.
//
// How they meet: a barrier on shared memory (Atomics), and per thread two mailboxes (growable
// SharedArrayBuffers) used by turns: round r writes mailbox r mod 2, so a thread writing round
// r + 2 cannot overwrite what a slower one still reads of round r (it passed round r + 1's
// barrier, which the slower one reaches only after reading). No Node APIs: a browser's workers
// could share these as well.

/** What the threads of one run share: made by makePartitions, handed to each thread. */
export interface PartitionShared {
  /** the threads */
  count: number;
  /** the barrier: arrivals, generation, and a failure flag */
  sync: SharedArrayBuffer;
  /** per thread, two mailboxes */
  boxes: SharedArrayBuffer[][];
}

/** Room a mailbox starts with, and the most it grows to. */
const BOX_START = 1 << 20, BOX_MAX = 2 ** 32 - 65536;

/** A SharedArrayBuffer that grows (ES2024; Node 20 has it, TypeScript's lib here does not). */
interface Growable extends SharedArrayBuffer { grow(bytes: number): void }
const Growable = SharedArrayBuffer as unknown as new (bytes: number, o: { maxByteLength: number }) => Growable;

/** The shared memory of a run split over `count` threads. */
export function makePartitions(count: number): PartitionShared {
  if (!(Number.isInteger(count) && count >= 1 && count <= 64)) throw new RangeError(`a run splits over 1 to 64 threads, got ${count}`);
  return {
    count,
    sync: new SharedArrayBuffer(16),
    boxes: Array.from({ length: count }, () => [0, 1].map(() => new Growable(BOX_START, { maxByteLength: BOX_MAX }))),
  };
}

/** What one thread handed over in a round: its numbers and its byte sections (views of shared memory, valid until the round after next). */
export interface Handed {
  nums: Float64Array;
  sections: Uint8Array[];
}

/** Thrown in every thread of a run when one of them failed (it said why). */
export class PartitionAborted extends Error {
  constructor() {
    super("another thread of the run failed");
  }
}

/** This thread's part of a run split over threads. */
export class Partition {
  readonly count: number;
  private readonly sync: Int32Array;
  private round = 0;
  /** the meetings this thread reached before the last of the others, and the milliseconds it waited at them */
  readonly waited = { meetings: 0, ms: 0 };

  constructor(readonly index: number, readonly shared: PartitionShared) {
    this.count = shared.count;
    if (!(Number.isInteger(index) && index >= 0 && index < this.count)) throw new RangeError(`thread ${index} of a run over ${this.count}`);
    this.sync = new Int32Array(shared.sync);
  }

  /** The thread device `d` of `devices` runs on. */
  deviceThread(d: number, devices: number): number {
    return Math.floor((d * this.count) / devices);
  }

  /** The thread plane `p` of `planes` runs on. */
  planeThread(p: number, planes: number): number {
    return Math.floor((p * this.count) / planes);
  }

  /** Tells every thread the run failed here: each throws PartitionAborted at its next meeting. */
  abort(): void {
    abortPartitions(this.shared);
  }

  /** Waits until every thread has arrived (throws PartitionAborted when one failed). */
  private barrier(): void {
    const s = this.sync, g = Atomics.load(s, 1);
    if (Atomics.load(s, 2) !== 0) throw new PartitionAborted();
    if (Atomics.add(s, 0, 1) === this.count - 1) {
      Atomics.store(s, 0, 0);
      Atomics.add(s, 1, 1);
      Atomics.notify(s, 1);
      return;
    }
    const t0 = performance.now();
    this.waited.meetings++;
    // the others are most often close behind: a short spin before sleeping
    for (let i = 0; i < 4000 && Atomics.load(s, 1) === g; i++);
    while (Atomics.load(s, 1) === g) {
      if (Atomics.load(s, 2) !== 0) throw new PartitionAborted();
      Atomics.wait(s, 1, g, 1000);
    }
    this.waited.ms += performance.now() - t0;
  }

  /**
   * One meeting: this thread hands over `nums` and `sections` and gets every thread's (its own
   * too, at its index), once all have handed theirs.
   */
  exchange(nums: ArrayLike<number>, sections: readonly Uint8Array[]): Handed[] {
    const parity = this.round++ & 1;
    if (this.count === 1) return [{ nums: Float64Array.from(nums), sections: [...sections] }];
    const box = this.shared.boxes[this.index]![parity]!;
    const head = 8 + 4 * sections.length, numsAt = Math.ceil(head / 8) * 8;
    let size = numsAt + 8 * nums.length;
    for (const s of sections) size += s.length;
    if (size > box.byteLength) {
      if (size > BOX_MAX) throw new RangeError(`a thread of the run hands over ${size} bytes at once, more than ${BOX_MAX}`);
      (box as Growable).grow(Math.min(BOX_MAX, Math.max(size, 2 * box.byteLength)));
    }
    const dv = new DataView(box), u8 = new Uint8Array(box);
    dv.setUint32(0, nums.length, true);
    dv.setUint32(4, sections.length, true);
    sections.forEach((s, i) => dv.setUint32(8 + 4 * i, s.length, true));
    for (let i = 0; i < nums.length; i++) dv.setFloat64(numsAt + 8 * i, nums[i]!, true);
    let at = numsAt + 8 * nums.length;
    for (const s of sections) { u8.set(s, at); at += s.length; }
    this.barrier();
    return this.shared.boxes.map((boxes) => read(boxes[parity]!));
  }

  /** The sum of every thread's `x`. */
  sum(x: number): number {
    return this.exchange([x], []).reduce((s, h) => s + h.nums[0]!, 0);
  }
}

/** Tells every thread of the run that shares `shared` that it failed. */
export function abortPartitions(shared: PartitionShared): void {
  const s = new Int32Array(shared.sync);
  Atomics.store(s, 2, 1);
  Atomics.notify(s, 1);
}

function read(box: SharedArrayBuffer): Handed {
  const dv = new DataView(box);
  const nNums = dv.getUint32(0, true), nSections = dv.getUint32(4, true);
  const numsAt = Math.ceil((8 + 4 * nSections) / 8) * 8;
  const nums = new Float64Array(nNums);
  for (let i = 0; i < nNums; i++) nums[i] = dv.getFloat64(numsAt + 8 * i, true);
  const sections: Uint8Array[] = [];
  let at = numsAt + 8 * nNums;
  for (let i = 0; i < nSections; i++) {
    const len = dv.getUint32(8 + 4 * i, true);
    sections.push(new Uint8Array(box, at, len));
    at += len;
  }
  return { nums, sections };
}
