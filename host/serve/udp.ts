// The UDP sockets of a served device's ports (Node: node:dgram). Each port receives on its
// address at the transports' ports (base: RoCEv2, base + 1: the MetaRoCE-like transport), and
// sends each datagram from the frame's own UDP source port: a socket bound to that port on the
// port's address, made the first time a frame uses it (a RoCEv2 QP's 0xC000 | qpn, a
// MetaRoCE-like path's 0xC000 | k << 6 | device; docs/protocol.md). The receiver rebuilds the frame
// with the port it sees, and RoCEv2's ICRC covers it. Those sockets are bound with SO_REUSEADDR
// (they only send); one that cannot be bound (the port taken by a socket without it) falls back to
// the transport's socket, counted: its frames then reach the peer under another source port.

import { createSocket, type Socket, type RemoteInfo } from "node:dgram";
import { TRANSPORT_UDP_PORTS, formatUdpAddress, type UdpAddress } from "./addresses.js";

/** Kernel receive buffer asked for each receiving socket (Linux grants at most net.core.rmem_max). */
export const RECV_BUFFER_BYTES = 4 << 20;

/** A socket a source port sends from: `ready` once bound; `fallback` when it is a transport's, standing in for one that could not be bound. */
interface Sender {
  socket: Socket;
  fallback: boolean;
  ready: boolean;
}

/** A datagram that reached one of the device's ports. */
export interface Datagram {
  /** the device port whose socket it reached */
  port: number;
  /** the transport port it was sent to, as the device knows it (4791, 4792), whatever the base */
  transportPort: number;
  /** where it came from */
  fromHost: string;
  fromPort: number;
  data: Buffer;
}

/** What the sockets counted (the served device counts the rest: ServeCounters). */
export interface UdpCounters {
  /** send calls that failed (the callback's error) */
  txErrors: number;
  /** datagrams sent from a transport's socket because their source port could not be bound */
  txSrcPortFallback: number;
  /** datagrams that reached a socket bound only to send from (a source port): dropped */
  rxStray: number;
}

/** The sockets of all of a device's ports. `bind` makes them; `close` ends them. */
export class UdpPorts {
  readonly counters: UdpCounters = { txErrors: 0, txSrcPortFallback: 0, rxStray: 0 };
  /** per port, the socket each source port sends from (a receive socket where the source port is a transport's, or stands in for one that could not be bound) */
  private readonly senders: Map<number, Sender>[];
  /** per port, datagrams waiting behind a source port's socket that is still being bound, in the order sent */
  private readonly waiting: { s: Sender; payload: Uint8Array; udpPort: number; host: string }[][];
  private readonly warned = new Set<string>();
  private readonly onSent = (e: Error | null) => { if (e) this.counters.txErrors++; };

  private constructor(
    readonly addresses: readonly UdpAddress[],
    /** per port, its receive socket per transport (TRANSPORT_UDP_PORTS order) */
    private readonly receivers: Socket[][],
    private readonly warn: (line: string) => void,
  ) {
    this.senders = addresses.map((a, p) => new Map(receivers[p]!.map((socket, k) => [a.base + k, { socket, fallback: false, ready: true }])));
    this.waiting = addresses.map(() => []);
  }

  /**
   * Binds the receiving sockets of each port (`addresses[p]`), handing every datagram to
   * `received`; rejects with an Error naming the address that could not be bound (in use, not
   * an address of this host).
   */
  static async bind(addresses: readonly UdpAddress[], received: (d: Datagram) => void, warn: (line: string) => void): Promise<UdpPorts> {
    const all: Socket[][] = [];
    try {
      for (const [p, a] of addresses.entries()) {
        const row: Socket[] = [];
        all.push(row);
        for (const [k, transportPort] of TRANSPORT_UDP_PORTS.entries()) {
          const s = await bound(a.host, a.base + k, `port ${p}: ${a.host}:${a.base + k}`);
          row.push(s);
          s.on("message", (data: Buffer, r: RemoteInfo) => received({ port: p, transportPort, fromHost: r.address, fromPort: r.port, data }));
          s.on("error", (e) => warn(`menic serve: port ${p} ${a.host}:${a.base + k}: ${e.message}`));
          try { s.setRecvBufferSize(RECV_BUFFER_BYTES); } catch { /* the kernel's default then */ }
        }
      }
    } catch (e) {
      for (const s of all.flat()) s.close();
      throw e;
    }
    return new UdpPorts(addresses, all, warn);
  }

  /**
   * Sends `payload` from port `port`'s address and UDP port `srcUdpPort` to `to`'s transport port
   * `transportPort` (4791 or 4792). Datagrams leave in the order given: while a new source port's
   * socket is being bound, those after it wait behind it.
   */
  send(port: number, srcUdpPort: number, to: UdpAddress, transportPort: number, payload: Uint8Array): void {
    const s = this.sender(port, srcUdpPort), q = this.waiting[port]!;
    const udpPort = to.base + TRANSPORT_UDP_PORTS.indexOf(transportPort);
    if (!s.ready || q.length > 0) q.push({ s, payload, udpPort, host: to.host });
    else this.emit(s, payload, udpPort, to.host);
  }

  private emit(s: Sender, payload: Uint8Array, udpPort: number, host: string): void {
    if (s.fallback) this.counters.txSrcPortFallback++;
    s.socket.send(payload, udpPort, host, this.onSent);
  }

  /** Sends port `port`'s waiting datagrams, in order, up to the first whose socket is still being bound. */
  private flush(port: number): void {
    const q = this.waiting[port]!;
    let i = 0;
    for (; i < q.length && q[i]!.s.ready; i++) this.emit(q[i]!.s, q[i]!.payload, q[i]!.udpPort, q[i]!.host);
    q.splice(0, i);
  }

  /** The socket that sends from `srcUdpPort` on port `port`'s address, made at its first use. */
  private sender(port: number, srcUdpPort: number): Sender {
    const known = this.senders[port]!.get(srcUdpPort);
    if (known) return known;
    const a = this.addresses[port]!;
    const s = createSocket({ type: "udp4", reuseAddr: true });
    const made: Sender = { socket: s, fallback: false, ready: false };
    s.on("message", () => { this.counters.rxStray++; });
    s.on("error", (e) => {
      // the bind failed (the only error a socket that only sends reports): send from the transport's socket instead
      made.socket = this.receivers[port]![0]!;
      made.fallback = true;
      made.ready = true;
      s.close();
      this.flush(port);
      const key = `${port}:${srcUdpPort}`;
      if (!this.warned.has(key)) {
        this.warned.add(key);
        this.warn(`menic serve: port ${port}: cannot send from ${a.host}:${srcUdpPort} (${(e as NodeJS.ErrnoException).code ?? e.message}): its frames go from ${formatUdpAddress(a)} instead, and a RoCEv2 peer will find their ICRC wrong`);
      }
    });
    s.bind({ address: a.host, port: srcUdpPort }, () => {
      made.ready = true;
      this.flush(port);
    });
    this.senders[port]!.set(srcUdpPort, made);
    return made;
  }

  /** Closes every socket. */
  close(): void {
    const all = new Set([...this.receivers.flat(), ...this.senders.flatMap((m) => [...m.values()].map((x) => x.socket))]);
    for (const s of all) {
      try { s.close(); } catch { /* closed already: a source port whose bind failed */ }
    }
  }
}

/** Binds a UDP socket to `host`:`port`; rejects naming `what` when it cannot. */
function bound(host: string, port: number, what: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    // no SO_REUSEADDR: a second process on the same address and port is refused, not shadowed
    const s = createSocket({ type: "udp4" });
    const fail = (e: NodeJS.ErrnoException) => {
      s.close();
      const why = e.code === "EADDRINUSE" ? "in use (another process serves it? each device needs its own address)"
        : e.code === "EADDRNOTAVAIL" ? "not an address of this host" : e.code ?? e.message;
      reject(new Error(`cannot bind ${what}: ${why}`));
    };
    s.once("error", fail);
    s.bind({ address: host, port }, () => {
      s.off("error", fail);
      resolve(s);
    });
  });
}
