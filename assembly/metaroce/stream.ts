// A QP as a stream of the MetaRoCE-like transport: what the stream's packets read and write of
// it, kept in the stream area of the QP's slot (Qp, nic/verbs.ts: bytes 16 .. 55, in its first
// cache line with the QP's state and destination). A QP of a device running RoCEv2 leaves the
// area zero. Its SSN bitmaps lie beside the table (state.ts).

import { Qp, QP_STREAM_OFFSET, QP_STREAM_BYTES } from "../nic/verbs";

@unmanaged export class MrtStream {
  conn: u32; // the connection it is a stream of (tx.ts streamOpen, at RTR)
  next: u32; // next QP (qpn + 1) in its connection's list of streams with new packets; 0 ends it
  listed: u32; // 1 while in that list
  una: u32; // sender: the oldest SSN not acknowledged (the acked bitmap covers una ..)
  recvNext: u32; // sender: the receive index its next SEND or WRITE_IMM fills
  msn: u32; // sender: messages sent on the stream
  rcum: u32; // receiver: every SSN below this is placed (the placed bitmap covers rcum ..)
  recvBase: u32; // receiver: the receive queue index its peer's receive index 0 stands for
  rnrAt: u64; // sender: RNR-held until this time
}

/** QP `q`'s stream state (in its slot: no load). */
@inline export function streamOf(q: Qp): MrtStream {
  if (offsetof<MrtStream>() > QP_STREAM_BYTES || (QP_STREAM_OFFSET & 7) != 0) ERROR("MrtStream overflows the stream area of Qp, or loses its 8-byte alignment");
  return changetype<MrtStream>(changetype<usize>(q) + QP_STREAM_OFFSET);
}
