// What the two halves of the NIC say to each other. A requester (the send queue running a
// request) sends request packets to the responder of its destination QP; the responder answers.
// Today a message is two request packets, each answered at once by the loopback
// (loopback.ts): its First packet carries the request's header (RETH-like: remote address, key,
// length) and is checked by the responder, its Last packet comes when the source bytes have
// been read and is where the responder places them and completes its side. The packets are
// plain records in the arena; nothing here knows a wire format.

export const enum PacketKind {
  ReqFirst = 1, // request header: the responder checks it, places nothing
  ReqLast = 2, // the rest of the message: the responder checks again and places it
  Accept = 3, // answer to ReqFirst: the request may go on; placeAddr says where bytes will land
  Ack = 4, // answer to ReqLast: placed and completed at the responder
  Nak = 5, // answer to either: status says why (RNR when status is RNR_RETRY_EXC_ERR)
  ReadResponse = 6, // answer to a READ's ReqLast: payload is where the bytes come from
}

@unmanaged export class Packet {
  raddr: u64; // request: the remote address (WRITE, READ)
  payload: u64; // DMA address of the bytes the packet carries, at their source
  placeAddr: u64; // Accept: where the responder will place the bytes
  kind: u32; // PacketKind
  op: u32; // the message's verbs opcode (OPCODE_*)
  srcQpn: u32; // the requester's QP: where answers go
  destQpn: u32;
  rkey: u32;
  length: u32;
  imm: u32;
  status: u32; // Nak: the requester's completion status (STATUS_*)
}

export const PACKET_STRIDE: usize = (offsetof<Packet>() + 15) & ~(<usize>15);

/** The device's outgoing packet record (a request, or an answer being built). */
@inline export function packetOut(base: usize): Packet { return changetype<Packet>(base); }
/** The answer record, beside it. */
@inline export function packetIn(base: usize): Packet { return changetype<Packet>(base + PACKET_STRIDE); }
