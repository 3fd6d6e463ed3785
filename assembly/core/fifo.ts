// Fixed-capacity FIFOs of bytes, 32-bit words or 64-bit words, as plain data in the device
// arena: the engine consoles (bytes, and the times their lines began), the two mailbox directions. A push to a full FIFO is refused (the caller counts
// it); nothing allocates.

@unmanaged export class Fifo {
  buf: usize;
  head: u32;
  count: u32;
  cap: u32; // elements
  shift: u32; // log2 of the element size: 0 bytes, 2 words, 3 u64
}

export function fifoInit(f: Fifo, buf: usize, cap: u32, shift: u32): void {
  f.buf = buf;
  f.head = 0;
  f.count = 0;
  f.cap = cap;
  f.shift = shift;
}

/** Where the next element goes; the caller has checked that count < cap. */
@inline function tail(f: Fifo): usize {
  let slot = f.head + f.count;
  if (slot >= f.cap) slot -= f.cap;
  return f.buf + (<usize>slot << f.shift);
}

/** Appends `v` (its low byte for a byte FIFO); false when full. */
export function fifoPush(f: Fifo, v: u32): bool {
  if (f.count >= f.cap) return false;
  const p = tail(f);
  if (f.shift == 0) store<u8>(p, <u8>v);
  else store<u32>(p, v);
  f.count++;
  return true;
}

/** Appends `v` to a FIFO of u64 (shift 3); false when full. */
export function fifoPush64(f: Fifo, v: u64): bool {
  if (f.count >= f.cap) return false;
  store<u64>(tail(f), v);
  f.count++;
  return true;
}

/** Removes and returns the oldest element; the caller has checked that count > 0. */
export function fifoPop(f: Fifo): u32 {
  const p = f.buf + (<usize>f.head << f.shift);
  const v = f.shift == 0 ? <u32>load<u8>(p) : load<u32>(p);
  f.head = f.head + 1 == f.cap ? 0 : f.head + 1;
  f.count--;
  return v;
}

/** Removes and returns the oldest element of a FIFO of u64; the caller has checked that count > 0. */
export function fifoPop64(f: Fifo): u64 {
  const v = load<u64>(f.buf + (<usize>f.head << 3));
  f.head = f.head + 1 == f.cap ? 0 : f.head + 1;
  f.count--;
  return v;
}
