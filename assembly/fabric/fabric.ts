// The fabric's event loop in the core: links, switches and the one event queue that moves
// frames between device ports (docs/fabric.md describes the model). The host builds the
// fabric (host/fabric/fabric.ts: topology, tables, seeds, faults as scheduled, statistics)
// in a core instance of its own and hands frames over in blocks of PKT records; everything a
// frame meets on its way runs here, without a call across the boundary per frame.
//
// A frame's life. It enters at its device port's transmitter (the NIC's egress: no buffer
// limit, no marking) at the time the device began to send it. On every channel (one direction
// of a link) it waits in the transmitter's FIFO, then is serialised (wireLen + overhead at the
// link's rate) and propagates (the link's latency). A switch has it whole when its last bit
// arrives (store and forward) and after the switch latency routes it, admits it to the shared
// buffer (or drops it), marks it, and queues it at the output port. On the last hop the arrival
// time at the device is known when the last transmission starts; the frame then waits in its
// channel's ring until the host takes it (fabricTake).
//
// A channel keeps its frames in one ring of 32-byte entries (FRING_ENTRY), oldest first: those
// on the wire, then those waiting in its queue (a channel sends and delivers in one order). An
// entry holds what every hop reads (arrival time, event key, destination, tuple hash, length,
// ECN bits), so that a hop touches the channel's ring, not the packet's own record: a frame's
// record is written when it enters and read when the host takes it.
//
// Decisions made when a transmission starts: buffer bytes are released (a queue holds frames
// waiting, not the one on the wire); random and Gilbert–Elliott loss are drawn; a frame on a
//
// The parts, each a module of its own, lowest first: tables.ts (table access and the encodings
// the parts share), build.ts (the tables made), ring.ts (a channel's ring), buffer.ts (what a
// switch holds, PFC, drops), faults.ts (links down and up, the outage schedule), transmit.ts (a
// channel's transmitter), loop.ts (the event loop), ingest.ts (frames in), deliver.ts (frames
// out) and partition.ts (a fabric running some of a run's planes: a run split over threads).
// This module is the front: what the export surface (index.ts) and the cluster's window loop
// (cluster.ts) call, and the parts that tests reach.

import { FAB_FRAME } from "../generated/layouts";
import { draw } from "./tables";
import { eventsPushKeyed, eventsPopBefore } from "./events";
import { FrameFields, readFrame, markCe } from "./frame";
import { ecmpPick, hashTuple } from "./rng";

export { fabricNew, fabricInit, fabricSeed, fabricInbox, fabricFull, fabricOutbox } from "./build";
export { fabricOutages, fabricSchedule, fabricRebuildGroups } from "./faults";
export { fabricEpPaused, fabricNextEvent, fabricRunTo } from "./loop";
export { fabricIngest, fabricIngestDiverted, ingestRing, portCatchUp } from "./ingest";
export { fabricPartition, fabricMoveOut, fabricPartIn, fabricAdopt } from "./partition";
export { fabricTake, takeDue, heldBodyBytes, writeHeld, fabricRelease } from "./deliver";

// ---- the parts, for tests (test/fabric-parts.test.ts) -------------------------------------

/** Reads the frame whose first `len` bytes are at `at` into the header's scratch FrameFields (FAB.frame); FRAME_*. */
export function fabricReadFrame(fab: usize, at: usize, len: u32): i32 {
  return readFrame(at, len, changetype<FrameFields>(load<usize>(fab + FAB_FRAME)));
}

/** Sets CE in the frame at `at` (markCe). */
export function fabricMarkCe(at: usize): void {
  markCe(at);
}

/** The next draw of random stream `i` (channels, then switches). */
export function fabricDraw(fab: usize, i: i32): u32 {
  return <u32>draw(fab, i);
}

/** The ECMP member of `count` a switch seeded `seed` picks for a tuple hash. */
export function fabricEcmpPick(hash: u32, seed: u32, count: u32): u32 {
  return ecmpPick(hash, seed, count);
}

/** MurmurHash3 of a 5-tuple (hashTuple). */
export function fabricHashTuple(src: u32, dst: u32, sport: u32, dport: u32, proto: u32): u32 {
  return hashTuple(src, dst, sport, dport, proto);
}

/** Schedules event `ev` at (`time`, `key`): the queue alone. */
export function fabricEventPush(fab: usize, time: f64, key: f64, ev: i32): void {
  eventsPushKeyed(fab, time, key, ev);
}

/** Pops the earliest event before `limit` (-1: none); its time is in FAB.ev_last_time. */
export function fabricEventPop(fab: usize, limit: f64): i32 {
  return eventsPopBefore(fab, limit);
}
