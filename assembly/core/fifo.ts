// Fixed-capacity FIFOs of bytes or 32-bit words, as plain data in the device arena: the engine
// consoles and the two mailbox directions. A push to a full FIFO is refused (the caller counts
// it); nothing allocates.

@unmanaged export class Fifo {
  buf: usize;
  head: u32;
  count: u32;
  cap: u32; // elements
  shift: u32; // log2 of the element size: 0 bytes, 2 words
}

export function fifoInit(f: Fifo, buf: usize, cap: u32, shift: u32): void {
  f.buf = buf;
  f.head = 0;
  f.count = 0;
  f.cap = cap;
  f.shift = shift;
}

/** Appends `v` (its low byte for a byte FIFO); false when full. */
export function fifoPush(f: Fifo, v: u32): bool {
  if (f.count >= f.cap) return false;
  let slot = f.head + f.count;
  if (slot >= f.cap) slot -= f.cap;
  const p = f.buf + (<usize>slot << f.shift);
  if (f.shift == 0) store<u8>(p, <u8>v);
  else store<u32>(p, v);
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
