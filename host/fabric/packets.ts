// Packets in flight through the fabric, without an object per packet: a fixed-size record per
// packet id in one typed-array slab, and a free list, so the steady state allocates nothing.
// The slab grows (doubling) only when a frame enters the fabric and none is free, never
// inside the event loop, so views taken for one run of events stay valid during it.
//
// One 64-byte record per packet (a cache line) rather than a column per field: a hop touches
// seven fields of a packet that has not been touched for a microsecond, and with 10^5
// packets in flight separate columns cost one cache miss per field (measured: bench/
// fabric-core.ts ran 25 % slower with 64 devices than with 16 in the columnar layout).
//
//   f64[8p + 0]  ARRIVE_PS   when the next holder has it: a switch (its last bit in, plus the
//                            switch latency) or the destination device (its last bit in)
//   f64[8p + 1]  SEQ         the sending port's frame number (from 0; the last delivery sort key)
//   f64[8p + 2]  NEXT_TIME   the time and event key of the packet after it in its list
//   f64[8p + 3]  NEXT_KEY    (departure in a port's list, arrival on a channel's wire), so that
//                            scheduling the next head does not touch the next packet's record
//   i32[16p + 8]  NEXT       the next packet in its list (a queue, a channel's frames on the
//                            wire, a port's or a device's waiting frames, the free list)
//   i32[16p + 9]  IN_CH      the channel it entered its current switch by, -1 at a NIC
//   i32[16p + 10] SRC_EP     the sending device port, device * ports + port
//   i32[16p + 11] DST_EP     the device port its IPv4 destination names, -1 when none
//   i32[16p + 12] HASH       MurmurHash3 of its 5-tuple (seed 0), read once at entry
//   i32[16p + 13] WIRE_LEN   frame bytes, Ethernet header to ICRC, no FCS
//   i32[16p + 14] META       header bytes (bits 7:0) | ECN-capable and not yet marked (bit 8)
//                            | marked CE, its header not yet rewritten (bit 9: see Fabric.maybeMark)
//   i32[16p + 15] PAYLOAD    its payload slot (full mode), -1 when none
//
// Times are float64 picoseconds: integers are exact below 2^53 ps ≈ 9,007 s ≈ 2.5 h of
// simulated time, far beyond any run (a 1 MiB flow at 800 Gb/s takes ~10 µs).
//
// Header bytes (Ethernet through the last transport header, at most HDR_SLOT_BYTES) sit in
// fixed slots of one slab; in `full` mode the rest of the frame (payload, pad, ICRC) sits in
// a slot of a second slab, allocated only for frames that have such bytes.

/** Bytes of a header slot: enough for Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ImmDt 4 = 74, with room for options. */
export const HDR_SLOT_BYTES = 128;

/** Payload slot bytes unless configured: a 4096 B payload, pad and ICRC, with room to spare. */
export const PAYLOAD_SLOT_BYTES_DEFAULT = 4608;

// record fields: f64 index 8p + F_*, i32 index 16p + I_*
export const F_ARRIVE_PS = 0, F_SEQ = 1, F_NEXT_TIME = 2, F_NEXT_KEY = 3;
export const I_NEXT = 8, I_IN_CH = 9, I_SRC_EP = 10, I_DST_EP = 11, I_HASH = 12, I_WIRE_LEN = 13, I_META = 14, I_PAYLOAD = 15;
export const META_HDR_LEN = 0xff, META_ECT = 0x100, META_CE = 0x200;

const NONE = -1;

/** A copy of `a` with `n` elements (the rest zero): how every slab here grows. */
export function grown<T extends Float64Array | Int32Array | Uint32Array | Uint16Array | Uint8Array>(a: T, n: number): T {
  const b = new (a.constructor as new (n: number) => T)(n);
  b.set(a);
  return b;
}

export class PacketPool {
  capacity = 0;
  /** packets in use */
  live = 0;
  /** the most packets ever in use at once */
  peak = 0;

  /** the records, as float64 (8 per packet) and int32 (16 per packet) over one buffer */
  f64 = new Float64Array(0);
  i32 = new Int32Array(0);
  hdr = new Uint8Array(0);
  /** `hdr` as 32-bit words */
  hdr32 = new Uint32Array(0);
  view = new DataView(this.hdr.buffer);
  private free = NONE;

  payload = new Uint8Array(0);
  /** payload bytes of each payload slot */
  payloadLen = new Int32Array(0);
  private payloadFree = NONE;
  private payloadSlots = 0;
  private payloadNext = new Int32Array(0);

  constructor(readonly payloadSlotBytes = PAYLOAD_SLOT_BYTES_DEFAULT, initial = 1024) {
    this.grow(initial);
  }

  /** A free packet id (growing the pool when none is free), with no payload slot. */
  alloc(): number {
    if (this.free === NONE) this.grow(this.capacity * 2);
    const id = this.free;
    const i = id << 4;
    this.free = this.i32[i + I_NEXT];
    this.i32[i + I_NEXT] = NONE;
    this.i32[i + I_PAYLOAD] = NONE;
    if (++this.live > this.peak) this.peak = this.live;
    return id;
  }

  release(id: number): void {
    const i = id << 4;
    const slot = this.i32[i + I_PAYLOAD];
    if (slot !== NONE) {
      this.payloadNext[slot] = this.payloadFree;
      this.payloadFree = slot;
    }
    this.i32[i + I_NEXT] = this.free;
    this.free = id;
    this.live--;
  }

  /** Gives packet `id` a payload slot for `len` bytes and returns its byte offset in `payload`. */
  allocPayload(id: number, len: number): number {
    if (this.payloadFree === NONE) this.growPayload(Math.max(64, this.payloadSlots * 2));
    const slot = this.payloadFree;
    this.payloadFree = this.payloadNext[slot];
    this.i32[(id << 4) + I_PAYLOAD] = slot;
    this.payloadLen[slot] = len;
    return slot * this.payloadSlotBytes;
  }

  private grow(n: number): void {
    const old = this.capacity;
    this.f64 = grown(this.f64, n * 8);
    this.i32 = new Int32Array(this.f64.buffer);
    this.hdr = grown(this.hdr, n * HDR_SLOT_BYTES);
    this.hdr32 = new Uint32Array(this.hdr.buffer);
    this.view = new DataView(this.hdr.buffer);
    for (let id = n - 1; id >= old; id--) {
      this.i32[(id << 4) + I_NEXT] = this.free;
      this.free = id;
    }
    this.capacity = n;
  }

  private growPayload(n: number): void {
    this.payload = grown(this.payload, n * this.payloadSlotBytes);
    this.payloadLen = grown(this.payloadLen, n);
    this.payloadNext = grown(this.payloadNext, n);
    for (let i = n - 1; i >= this.payloadSlots; i--) {
      this.payloadNext[i] = this.payloadFree;
      this.payloadFree = i;
    }
    this.payloadSlots = n;
  }
}
