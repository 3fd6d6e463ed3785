// What the bad-input fuzz tests of both transports share: staging a record whose descriptor lies,
// the IPv4 fields a mutation must keep agreeing, and the guard over memory no frame may write.
import { xorshift32 } from "./xorshift.js";
import { ipv4Checksum } from "../../host/wire/rocev2.js";
import { PKT } from "../../host/generated/layouts.js";
import type { Context } from "../../host/verbs.js";
import type { DevicePorts } from "../../host/ports.js";

/** A record as the device will read it: its descriptor and its bytes (headers, then the body). */
export interface Arrival { timePs: number; port: number; wire: number; hdrLen: number; bytes: Uint8Array }

/** What a record's descriptor says apart from what stageArrival writes (records only a broken host would stage). */
export type Lie = { hdrLen: number } | { bodyLen: number } | { bodyOff: number };

/** An arrival as the device reads it: the lengths its descriptor gives and the bytes it finds. */
export interface Seen { port: number; wire: number; hdrLen: number; bodyLen: number; bytes: Uint8Array }

/**
 * Stages arrival `a` at `ports`, then makes its descriptor lie as `lie` says, by writing the
 * staged record in place: what only a broken host could stage. Returns the record as the device
 * will read it (`full`: bodies travel; `rxBodyBytes`: the body area, `frameMax`: the largest frame).
 */
export function stageLie(ports: DevicePorts, a: Arrival, lie: Lie | undefined, full: boolean, rxBodyBytes: number, frameMax: number): Seen {
  const body = a.bytes.length - a.hdrLen;
  if (!ports.stageArrival(a.timePs, a.port, a.wire, 0, 0, a.bytes, 0, a.hdrLen, a.bytes, a.hdrLen, body)) throw new Error("the stage is full");
  if (!lie) return { ...a, bodyLen: body };
  const core = ports.device.core;
  const slot = core.rxStage(ports.device.handle) + (Number(ports.device.config.get("rxRingEntries")) - ports.stageRoom.frames - 1) * PKT.SIZE;
  const v = new DataView(core.memory.buffer);
  if ("hdrLen" in lie) {
    v.setUint16(slot + PKT.hdr_len, lie.hdrLen, true);
    return { ...a, hdrLen: lie.hdrLen, bodyLen: body };
  }
  if (!full) return { ...a, bodyLen: 0 }; // no body: what the descriptor says of it is not read
  if ("bodyLen" in lie) {
    v.setUint32(slot + PKT.body_len, lie.bodyLen, true);
    // within the body area, the device copies bodyLen bytes from the stage: what they are does not matter, the length is wrong
    return { ...a, bodyLen: lie.bodyLen, bytes: new Uint8Array(a.hdrLen + Math.min(lie.bodyLen, frameMax)) };
  }
  // a body said to lie beyond the stage: the device takes zeros in its place
  v.setUint32(slot + PKT.body_off, lie.bodyOff, true);
  const seen = a.bytes.slice();
  if (lie.bodyOff + body > rxBodyBytes) seen.fill(0, a.hdrLen);
  return { ...a, bytes: seen, bodyLen: body };
}

/** IPv4 total length and UDP length made to agree with the frame's length (and the IPv4 checksum with them). */
export function fixLengths(b: Uint8Array): void {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (b.length >= 18) v.setUint16(16, (b.length - 14) & 0xffff);
  if (b.length >= 40) v.setUint16(38, (b.length - 34) & 0xffff);
  fixIpv4(b);
}

/** The IPv4 header checksum written again, for a frame long enough to hold the header. */
export function fixIpv4(b: Uint8Array): void {
  if (b.length < 34) return;
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  v.setUint16(24, 0);
  v.setUint16(24, ipv4Checksum(b, 14, 20));
}

/**
 * Fills every byte of `spaces` ([DMA base, bytes]: a device's HBM, host memory, SRAM) that no
 * frame may write with a pattern, and returns a check that says where one changed. `writable`
 * lists [DMA address, bytes].
 */
export function guard(ctx: Context, spaces: [number, number][], writable: [number, number][], seed: number) {
  const next = xorshift32(seed);
  const kept = spaces.map(([base, len]) => {
    const mask = new Uint8Array(len).fill(1);
    for (const [at, n] of writable) if (at >= base && at < base + len) mask.fill(0, at - base, Math.min(len, at - base + n));
    const img = ctx.read(base, len);
    for (let i = 0; i < len; i++) if (mask[i]) img[i] = next() & 0xff;
    ctx.write(base, img);
    return { base, len, mask, img };
  });
  return () => {
    const changed: string[] = [];
    for (const { base, len, mask, img } of kept) {
      const now = ctx.read(base, len);
      for (let i = 0; i < len && changed.length < 8; i++) if (mask[i] && now[i] !== img[i]) changed.push(`0x${(base + i).toString(16)}`);
    }
    return changed;
  };
}
