// The host's mailbox to each engine (MBOX.IN_*): words the host writes, now or for a later time.
// A word for a later time waits in one device-wide queue, in the order given, with one event
// for its head; room in the engine's FIFO is reserved when it is given, so it always fits
// when it arrives (the FIFO only empties meanwhile). Arrival wakes a sleeping engine.

import { Device, statAdd } from "../core/device";
import { engOf, hartAt, MBOX_TIMED_BYTES } from "./engines";
import { interruptEngine } from "./wake";
import { fifoPush, fifoPop } from "../core/fifo";
import { schedule, EventKind } from "../core/sched";
import { maxU64 } from "../core/time";
import { STAT_MBOX_IN_OVERFLOW } from "../generated/layouts";

@inline function rec(dev: Device, k: u32): usize {
  const e = engOf(dev);
  let slot = e.mboxTimedHead + k;
  if (slot >= e.mboxTimedCap) slot -= e.mboxTimedCap;
  return e.mboxTimed + <usize>slot * MBOX_TIMED_BYTES;
}

/**
 * Host to engine `i`: `word` arrives at max(at, now, the previous timed word's arrival). False
 * (and counted) when the engine's FIFO, with the words still on their way, has no room.
 */
export function mailboxPush(dev: Device, i: u32, word: u32, at: u64): bool {
  const h = hartAt(dev, i);
  if (h.mboxIn.count + h.mboxInflight >= h.mboxIn.cap) {
    statAdd(dev, STAT_MBOX_IN_OVERFLOW, 1);
    return false;
  }
  const e = engOf(dev);
  if (at <= dev.now && e.mboxTimedCount == 0) {
    fifoPush(h.mboxIn, word);
    interruptEngine(dev, i, dev.now);
    return true;
  }
  let t = maxU64(at, dev.now);
  if (e.mboxTimedCount > 0) t = maxU64(t, load<u64>(rec(dev, e.mboxTimedCount - 1)));
  const p = rec(dev, e.mboxTimedCount);
  store<u64>(p, t);
  store<u32>(p, i, 8);
  store<u32>(p, word, 12);
  e.mboxTimedCount++;
  h.mboxInflight++;
  if (e.mboxTimedCount == 1) schedule(dev, t, EventKind.Mailbox, 0, 0);
  return true;
}

/** The Mailbox event: the timed words due by `t` reach their engines. */
export function mailboxArrive(dev: Device, t: u64): void {
  const e = engOf(dev);
  while (e.mboxTimedCount > 0 && load<u64>(rec(dev, 0)) <= t) {
    const p = rec(dev, 0);
    const i = load<u32>(p, 8);
    const h = hartAt(dev, i);
    h.mboxInflight--;
    fifoPush(h.mboxIn, load<u32>(p, 12));
    e.mboxTimedHead = e.mboxTimedHead + 1 == e.mboxTimedCap ? 0 : e.mboxTimedHead + 1;
    e.mboxTimedCount--;
    interruptEngine(dev, i, t);
  }
  if (e.mboxTimedCount > 0) schedule(dev, load<u64>(rec(dev, 0)), EventKind.Mailbox, 0, 0);
}

/** Engine to host mailbox: the oldest word, or -1 when empty. */
export function mailboxPop(dev: Device, i: u32): i64 {
  const h = hartAt(dev, i);
  return h.mboxOut.count == 0 ? -1 : <i64>fifoPop(h.mboxOut);
}
