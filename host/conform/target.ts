// What a conformance run needs of an implementation under test (IUT), wherever it runs: set up
// one connection to the tester, take the tester's frames at times, say what it sent and when,
// and let the tester post, poll and read through its verbs. host/conform/sim-target.ts is a
// menic device in this process; a target over UDP speaks the same calls to another process.

import type { IutSetup, Transport, WorkRequest } from "./case.js";
import type { SendWr, Wc } from "../verbs.js";

/** The tester's side of the connection: the device it claims to be and the QP and region it answers for. */
export interface TesterPeer {
  /** the device id the tester's frames come from (its IPv4 address: 10.0.(id >> 8).(id & 255)) */
  device: number;
  qpn: number;
  /** the tester's region: where the IUT's WRITEs and READs go, and its key */
  addr: number;
  rkey: number;
}

/** What the IUT set up: its device, its QP, and its region's address and key. */
export interface IutInfo {
  device: number;
  qpn: number;
  addr: number;
  rkey: number;
  regionBytes: number;
}

/** A frame the IUT sent: its bytes (Ethernet header to trailer) and when its last bit left, ps from the case's start. */
export interface SentFrame {
  bytes: Uint8Array;
  timePs: bigint;
  port: number;
}

/** A completion the IUT wrote, in the terms cases use. */
export interface IutCompletion {
  wrId: number;
  status: string;
  opcode: string;
  byteLen: number;
  imm?: number;
}

/**
 * A case's stimulus this target cannot give the IUT (a frame whose IPv4 header says what no UDP
 * socket can): the case is skipped, not failed, with this message.
 */
export class TargetLimit extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TargetLimit";
  }
}

/** The device config every case's IUT starts from, before the case's own: one engine, the transport's connections few. */
export const CASE_BASE_CONFIG = { engines: 1, mrtConnections: 2 } as const;

/** A device's transport counters that are not zero (the `mrt.`, `roce.` and `nic.` of its stats), for a failed case's message. */
export const transportCounters = (stats: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.entries(stats).filter(([k, v]) => v !== 0 && /^(mrt|roce|nic)\./.test(k)));

/** A case's work request as the IUT's verbs take it: its bytes at `localAddr` (key `lkey`) of the IUT's region, a WRITE's or READ's in the tester's, signaled. */
export function sendWrOf(wr: WorkRequest, peer: TesterPeer, localAddr: number, lkey: number): SendWr {
  const remote = wr.opcode === "RDMA_WRITE" || wr.opcode === "RDMA_WRITE_WITH_IMM" || wr.opcode === "RDMA_READ";
  return {
    wrId: wr.wrId, opcode: wr.opcode, signaled: true, localAddr, length: wr.length, lkey,
    ...(remote ? { remoteAddr: peer.addr + (wr.remoteOffset ?? 0), rkey: peer.rkey } : {}),
    ...(wr.imm !== undefined ? { imm: wr.imm } : {}),
  };
}

/** A completion in the terms cases use. */
export const completionOf = (w: Wc): IutCompletion =>
  ({ wrId: Number(w.wrId), status: w.status, opcode: w.opcode, byteLen: w.byteLen, ...(w.imm !== undefined ? { imm: w.imm } : {}) });

export interface Target {
  /** How far the tester lets the IUT run before it looks again: how late it may see a frame, and answer it. */
  readonly stepPs: bigint;
  /** Sets the IUT up for one case: its config, a QP connected to the tester's `peer` (RTS), its region and receives. */
  open(transport: Transport, setup: IutSetup, peer: TesterPeer): Promise<IutInfo>;
  /** The IUT's time, ps from the case's start. */
  now(): bigint;
  /** Hands the tester's frame (Ethernet header to trailer) to the IUT, arriving now; a TargetLimit when it cannot. */
  send(frame: Uint8Array): Promise<void>;
  /** Runs the IUT up to `untilPs` or a little past it; the frames it sent meanwhile, oldest first. */
  advance(untilPs: bigint): Promise<SentFrame[]>;
  post(wr: WorkRequest, peer: TesterPeer): Promise<void>;
  postRecv(wrId: number, offset: number, length: number): Promise<void>;
  /** Completions written since the last poll, in order. */
  poll(): Promise<IutCompletion[]>;
  /** Bytes of the IUT's region. */
  read(offset: number, length: number): Promise<Uint8Array>;
  /** What the IUT counted (its non-zero transport counters, by name), for a failed case's message; empty when it cannot say. */
  counters(): Promise<Record<string, number>>;
  /** Ends the case: frees what open made. */
  close(): Promise<void>;
}
