// A UDP relay between two served devices that loses a given fraction of their datagrams
// (docs/serve.md, "A lossy link"): each device names the relay as its peer, the relay forwards
// what one side sends to the other, from the same UDP source port, so each device sees its peer
// at the relay's address on its side. Which datagrams are lost is drawn from a seeded stream per
// direction (host/fabric/rng.ts), so a given order of datagrams loses the same ones on every
// run. Node only (its sockets are udp.ts's).

import { RandomStreams, probabilityThreshold } from "../fabric/rng.js";
import { formatUdpAddress, type UdpAddress } from "./addresses.js";
import { UdpPorts, type Datagram } from "./udp.js";

/** One side of the relay: the address its device sends to (the relay as that device's peer), and where that device is. */
export interface RelaySide {
  /** where the relay listens for this side's device (its --peer address for the other device) */
  listen: UdpAddress;
  /** this side's device (where the relay sends what the other side sent) */
  device: UdpAddress;
}

/** What {@link Relay.start} is given. */
export interface RelayOptions {
  /** One side: its device and where the relay listens for it. */
  a: RelaySide;
  /** The other side. */
  b: RelaySide;
  /** the fraction of datagrams lost in each direction, 0..1 */
  loss: number;
  /** the seed of the two directions' loss streams */
  seed: number;
}

/** Datagrams forwarded and lost, per direction. */
export interface RelayCounts {
  /** Datagrams sent on to the other side. */
  forwarded: number;
  /** Datagrams lost on purpose. */
  dropped: number;
}

/** A running relay: its counts per direction (`aToB`, `bToA`) and `close`. */
export class Relay {
  /** What came from side a's device. */
  readonly aToB: RelayCounts = { forwarded: 0, dropped: 0 };
  /** What came from side b's device. */
  readonly bToA: RelayCounts = { forwarded: 0, dropped: 0 };
  private readonly streams = new RandomStreams(2);
  private readonly threshold: number;
  private sides: [UdpPorts, UdpPorts] | null = null;

  private constructor(private readonly o: RelayOptions) {
    if (!(o.loss >= 0 && o.loss <= 1)) throw new RangeError(`relay: loss must be a fraction 0..1, got ${o.loss}`);
    this.threshold = probabilityThreshold(o.loss);
    this.streams.seed(0, o.seed, 0);
    this.streams.seed(1, o.seed, 1);
  }

  /** Binds both sides' addresses (RoCEv2's and the MetaRoCE-like transport's ports) and starts forwarding; rejects naming an address that cannot be bound. */
  static async start(o: RelayOptions): Promise<Relay> {
    const r = new Relay(o);
    const warn = (line: string) => process.stderr.write(`relay: ${line}\n`);
    const a = await UdpPorts.bind([o.a.listen], (d) => r.forward(0, d), warn);
    let b: UdpPorts;
    try {
      b = await UdpPorts.bind([o.b.listen], (d) => r.forward(1, d), warn);
    } catch (e) {
      a.close();
      throw e;
    }
    r.sides = [a, b];
    return r;
  }

  /** A datagram reached side `from`'s address: lost, or sent on from the other side's. */
  private forward(from: 0 | 1, d: Datagram): void {
    const counts = from === 0 ? this.aToB : this.bToA;
    if (!this.sides || this.streams.chance(from, this.threshold)) {
      counts.dropped++;
      return;
    }
    counts.forwarded++;
    const to = from === 0 ? this.o.b.device : this.o.a.device;
    this.sides[1 - from]!.send(0, d.fromPort, to, d.transportPort, d.data);
  }

  /** "127.0.0.3:4791 <-> 127.0.0.4:4791" */
  toString(): string {
    return `${formatUdpAddress(this.o.a.listen)} <-> ${formatUdpAddress(this.o.b.listen)}`;
  }

  /** Stops forwarding and closes the sockets. */
  close(): void {
    for (const s of this.sides ?? []) s.close();
    this.sides = null;
  }
}
