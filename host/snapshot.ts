// The snapshot format of a device (Device.save / Device.restore): byte access and its checks.
// A snapshot read from disk or the network may be cut short, padded or damaged; every such
// fault is found here, before a device is created or a byte of wasm memory is written.
//
//    0  u64  magic "MENICSNP"
//    8  u32  version
//   12  u32  config slots (n)
//   16  u32  arena base (its address in wasm memory)
//   20  u32  arena bytes (m)
//   24  u32  FNV-1a 32 of every byte of the snapshot but this field
//   28  u32  0
//   32  u64 x n  the config slots (layouts/config.json order)
//   32 + 8n     the arena, m bytes

import { CONFIG_FIELDS } from "./generated/layouts.js";

const MAGIC = 0x504e5343494e454dn; // "MENICSNP" little-endian
/** 2: the checksum field (version 1 had none). */
const VERSION = 2;
const HEADER_BYTES = 32;
const CHECKSUM_AT = 24;

/** A snapshot given to `Device.restore` is damaged, truncated or of another build: the message says which. */
export class SnapshotError extends Error {
  constructor(message: string) {
    super(`snapshot: ${message}`);
    this.name = "SnapshotError";
  }
}

export interface SnapshotContents {
  /** The config slots, by name. */
  config: Record<string, bigint>;
  arenaBase: number;
  /** A view into the snapshot. */
  arena: Uint8Array;
}

// FNV-1a, 32 bits (Fowler, Noll, Vo; offset basis 2166136261 and prime 16777619 as in the IETF
// draft draft-eastlake-fnv): cheap, and enough to tell a damaged snapshot from an intact one.
function fnv1a(bytes: Uint8Array, h = 0x811c9dc5): number {
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return h >>> 0;
}

function checksum(snapshot: Uint8Array): number {
  return fnv1a(snapshot.subarray(CHECKSUM_AT + 4), fnv1a(snapshot.subarray(0, CHECKSUM_AT)));
}

/** A snapshot of an arena at `arenaBase` (its bytes are copied) with the given config slots. */
export function writeSnapshot(slots: BigUint64Array, arenaBase: number, arena: Uint8Array): Uint8Array {
  const configAt = HEADER_BYTES, arenaAt = configAt + 8 * slots.length;
  const out = new Uint8Array(arenaAt + arena.length);
  const dv = new DataView(out.buffer);
  dv.setBigUint64(0, MAGIC, true);
  dv.setUint32(8, VERSION, true);
  dv.setUint32(12, slots.length, true);
  dv.setUint32(16, arenaBase, true);
  dv.setUint32(20, arena.length, true);
  slots.forEach((v, k) => dv.setBigUint64(configAt + 8 * k, v, true));
  out.set(arena, arenaAt);
  dv.setUint32(CHECKSUM_AT, checksum(out), true);
  return out;
}

/** Checks a snapshot's header, size and checksum; throws SnapshotError saying what is wrong. */
export function readSnapshot(snapshot: Uint8Array): SnapshotContents {
  const dv = new DataView(snapshot.buffer, snapshot.byteOffset, snapshot.byteLength);
  if (snapshot.length < 8 || dv.getBigUint64(0, true) !== MAGIC) throw new SnapshotError("not a menic snapshot (bad magic)");
  if (snapshot.length < HEADER_BYTES) throw new SnapshotError(`truncated: ${snapshot.length} bytes, shorter than the ${HEADER_BYTES}-byte header`);
  const version = dv.getUint32(8, true);
  if (version !== VERSION) throw new SnapshotError(`version ${version}, this build reads version ${VERSION}`);
  const slots = dv.getUint32(12, true);
  if (slots !== CONFIG_FIELDS.length) throw new SnapshotError(`${slots} config slots, this build has ${CONFIG_FIELDS.length}`);
  const arenaAt = HEADER_BYTES + 8 * slots, arenaBytes = dv.getUint32(20, true);
  const expected = arenaAt + arenaBytes;
  if (snapshot.length < expected) throw new SnapshotError(`truncated: ${snapshot.length} bytes, the header says ${expected}`);
  if (snapshot.length > expected) throw new SnapshotError(`${snapshot.length - expected} bytes after the end the header gives (${expected} bytes)`);
  const stored = dv.getUint32(CHECKSUM_AT, true), actual = checksum(snapshot);
  if (stored !== actual)
    throw new SnapshotError(`checksum mismatch (stored 0x${stored.toString(16)}, computed 0x${actual.toString(16)}): the snapshot is damaged`);
  const config: Record<string, bigint> = {};
  CONFIG_FIELDS.forEach((f) => (config[f.name] = dv.getBigUint64(HEADER_BYTES + 8 * f.slot, true)));
  return { config, arenaBase: dv.getUint32(16, true), arena: snapshot.subarray(arenaAt) };
}
