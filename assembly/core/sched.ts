// The device event queue: a binary min-heap ordered by (time, insertion sequence), so events
// at the same picosecond run in the order they were scheduled, on every run. An arrival
// (RxArrive) sorts before every other event of its picosecond, whenever it was scheduled: the
// host stages arrivals at the start of the window they fall in, so their place among the
// device's own events of the same picosecond would otherwise move with the window's length (a
// port choosing its next frame at the instant a NAK arrived chose another QP with windows of
// 100 ns than with 500 ns: test/fabric-windows.test.ts).
// Record layout (EVENT_BYTES = 32): time u64 @0, seq u64 @8, kind u32 @16, a u32 @20, b u32 @24.

import { Device, EVENT_BYTES, FATAL_EVENT_OVERFLOW, statAdd } from "./device";
import { NEVER } from "./time";
import { STAT_SCHED_OVERFLOW, STAT_SCHED_PEAK } from "../generated/layouts";

export const enum EventKind {
  Timer = 1, // a: engine, b: wake generation (at most one pending per engine)
  HbmTick = 2, // the HBM model's next flow completion (at most one pending)
  NicPhase = 3, // a: qpn, b: request generation
  NicStartNext = 4, // a: qpn
  Doorbell = 5, // a: ringer index (doorbells.ts): its oldest doorbell has arrived
  Mailbox = 6, // the oldest host mailbox word given for a later time has arrived (engine/mailbox.ts)
  PortTx = 7, // a: port: it is free to send its next frame (nic/transport.ts; at most one pending per port)
  RxArrive = 8, // the receive ring's oldest arrival is due (nic/rx.ts; at most one pending)
  NicTimer = 9, // a: qpn: its transport timer (rocev2/rx.ts; at most one pending per QP, re-armed lazily)
  MrtTimer = 10, // a: connection: its paths' timers (metaroce/tx.ts; at most one pending per connection, re-armed lazily)
  ComputeLoaded = 11, // the matmul grid's tile load has moved its bytes (compute/grid.ts; an HBM flow's end)
  ComputeDone = 12, // b: generation: the matmul grid's tile computing is done (at most one pending)
  ComputeRetry = 13, // a flow has ended: the matmul grid's load, refused a slot, can start (at most one pending)
}

/**
 * The device whose earliest event run.ts is handling (0: none). That event's record stays at
 * the top of the heap while its handler runs: the first event the handler schedules takes its
 * place (one sift down, where a pop and a push cost a sift each way), and if it schedules none
 * the record is popped after it (handled()). Nothing reads the top while a handler runs; the
 * order of events is (time, sequence) either way.
 */
let handling: usize = 0;

/** The top event of `dev` is being handled: it is popped by handled() or replaced by the first schedule(). */
@inline export function handlingTop(dev: Device): void {
  handling = changetype<usize>(dev);
}

/** Its handler has returned: pops the top event unless an event scheduled meanwhile took its place. */
@inline export function handled(dev: Device): void {
  if (handling != 0) {
    handling = 0;
    popEvent(dev);
  }
}

@inline function rec(dev: Device, i: u32): usize {
  return dev.events + <usize>i * EVENT_BYTES;
}

/**
 * Schedules an event. The queue is sized for every event that can be pending at once
 * (create.ts), so a full queue is a bug: the event is counted, the device is marked failed
 * (FATAL_EVENT_OVERFLOW: the step loop stops and the host throws) and false is returned.
 */
export function schedule(dev: Device, time: u64, kind: u32, a: u32, b: u32): bool {
  const seq: u64 = kind == EventKind.RxArrive ? 0 : 1 + dev.seq++;
  if (handling == changetype<usize>(dev)) {
    // in place of the event being handled (popped already, as far as anything can tell)
    handling = 0;
    const p = dev.events;
    store<u64>(p, time);
    store<u64>(p, seq, 8);
    store<u32>(p, kind, 16);
    store<u32>(p, a, 20);
    store<u32>(p, b, 24);
    siftDown(dev, 0);
    return true;
  }
  if (dev.evCount >= dev.evCap) {
    statAdd(dev, STAT_SCHED_OVERFLOW, 1);
    dev.fatal = FATAL_EVENT_OVERFLOW;
    return false;
  }
  const i = dev.evCount++;
  const p = rec(dev, i);
  store<u64>(p, time);
  store<u64>(p, seq, 8);
  store<u32>(p, kind, 16);
  store<u32>(p, a, 20);
  store<u32>(p, b, 24);
  siftUp(dev, i);
  const peak = dev.stats + (<usize>STAT_SCHED_PEAK << 3);
  if (<u64>dev.evCount > load<u64>(peak)) store<u64>(peak, <u64>dev.evCount);
  return true;
}

/**
 * Moves the record at heap index `i` down to where it belongs: the children that sort before it
 * move up into the hole it leaves, and it is written once, where the hole stops.
 */
function siftDown(dev: Device, i: u32): void {
  const n = dev.evCount, base = dev.events;
  const x = base + <usize>i * EVENT_BYTES;
  const t = load<u64>(x), s = load<u64>(x, 8), h0 = v128.load(x), h1 = v128.load(x, 16);
  let hole = x;
  for (;;) {
    const l: u32 = 2 * i + 1;
    if (l >= n) break;
    let c = l, cp = base + <usize>l * EVENT_BYTES, ct = load<u64>(cp);
    if (l + 1 < n) {
      const dp = cp + EVENT_BYTES, dt = load<u64>(dp);
      if (dt < ct || (dt == ct && load<u64>(dp, 8) < load<u64>(cp, 8))) {
        c = l + 1;
        cp = dp;
        ct = dt;
      }
    }
    // sequences differ but between arrival events (all 0; of two at one time, the one run
    // second takes only what is still due): a child that is not earlier is later
    if (ct > t || (ct == t && load<u64>(cp, 8) > s)) break;
    moveEvent(hole, cp);
    hole = cp;
    i = c;
  }
  if (hole != x) {
    v128.store(hole, h0);
    v128.store(hole, h1, 16);
  }
}

/** Moves the record at heap index `i` up to where it belongs (the parents that sort after it move down into its hole). */
function siftUp(dev: Device, i: u32): void {
  const base = dev.events, x = base + <usize>i * EVENT_BYTES;
  const t = load<u64>(x), s = load<u64>(x, 8), h0 = v128.load(x), h1 = v128.load(x, 16);
  let hole = x;
  while (i > 0) {
    const parent = (i - 1) >> 1, pp = base + <usize>parent * EVENT_BYTES, pt = load<u64>(pp);
    if (t > pt || (t == pt && s > load<u64>(pp, 8))) break;
    moveEvent(hole, pp);
    hole = pp;
    i = parent;
  }
  if (hole != x) {
    v128.store(hole, h0);
    v128.store(hole, h1, 16);
  }
}

/**
 * Removes the pending event of `kind` for `a` whose `b` has none of the bits of `keepBits`, if
 * there is one (a scan of the heap). Blocks whose events would otherwise go stale — a timer an
 * engine re-arms, the HBM model's next completion, a destroyed QP's phase — keep at most one
 * pending this way, so the queue's size stays bounded by what is really pending (create.ts
 * sizes it from that bound).
 */
export function unschedule(dev: Device, kind: u32, a: u32, keepBits: u32 = 0): bool {
  // the event being handled is not pending any more
  for (let i: u32 = handling == changetype<usize>(dev) ? 1 : 0; i < dev.evCount; i++) {
    const p = rec(dev, i);
    if (load<u32>(p, 16) != kind || load<u32>(p, 20) != a || (load<u32>(p, 24) & keepBits) != 0) continue;
    const last = --dev.evCount;
    if (i != last) {
      moveEvent(p, rec(dev, last));
      siftDown(dev, i);
      siftUp(dev, i);
    }
    return true;
  }
  return false;
}

/** Copies an event record (EVENT_BYTES, two 16-byte halves; memory.copy would be a call out of wasm). */
@inline function moveEvent(dst: usize, src: usize): void {
  v128.store(dst, v128.load(src));
  v128.store(dst, v128.load(src, 16), 16);
}

/** Time of the earliest event, or NEVER. */
@inline export function nextEventTime(dev: Device): u64 {
  return dev.evCount == 0 ? NEVER : load<u64>(dev.events);
}

/** Removes the earliest event; its fields are read with eventKind/eventA/eventB from the top first. */
export function popEvent(dev: Device): void {
  const last = --dev.evCount;
  if (last == 0) return;
  moveEvent(dev.events, rec(dev, last));
  siftDown(dev, 0);
}

@inline export function topKind(dev: Device): u32 { return load<u32>(dev.events, 16); }
@inline export function topA(dev: Device): u32 { return load<u32>(dev.events, 20); }
@inline export function topB(dev: Device): u32 { return load<u32>(dev.events, 24); }
