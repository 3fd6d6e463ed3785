// Where a served device's ports and its peers' ports are on the host's network (docs/serve.md):
// an IPv4 address and a base UDP port per device port, RoCEv2 on the base (4791 by default) and
// the MetaRoCE-like transport on base + 1 (4792), as typed on the command line
// (`127.0.0.2`, `127.0.0.2:5791`, `1=127.0.0.2,127.0.1.2`), checked, and the table that maps a
// device and port to an address and an address back to its device. No Node APIs.

import { UDP_PORT, MRT } from "../generated/headers.js";

/** The transports' UDP destination ports, in the order of their offset from a base port: RoCEv2 (4791), the MetaRoCE-like transport (4792). */
export const TRANSPORT_UDP_PORTS: readonly number[] = [UDP_PORT.ROCEV2, MRT.UDP_PORT];

/** The default base port: RoCEv2's own, so that the MetaRoCE-like transport lands on its 4792. */
export const BASE_PORT_DEFAULT: number = UDP_PORT.ROCEV2;

/** Where one device port is: datagrams of transport k go to `host`:`base + k` (TRANSPORT_UDP_PORTS). */
export interface UdpAddress {
  /** IPv4 address, dotted quad */
  host: string;
  /** UDP port of RoCEv2; the MetaRoCE-like transport's is base + 1 */
  base: number;
}

/** A peer device: its id (the `destDevice` a QP names at RTR) and where each of its ports is. */
export interface Peer {
  device: number;
  ports: UdpAddress[];
}

/** An address or list the user typed that is not one; the message says which text and why. */
export class AddressError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AddressError";
  }
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** `host[:port]` as an address; `what` names the text in a refusal (`--bind`, `--peer 1`). */
export function parseUdpAddress(text: string, what: string): UdpAddress {
  const colon = text.lastIndexOf(":");
  const host = colon < 0 ? text : text.slice(0, colon), port = colon < 0 ? undefined : text.slice(colon + 1);
  const m = IPV4.exec(host);
  if (!m || m.slice(1).some((o) => Number(o) > 255)) throw new AddressError(`${what}: ${JSON.stringify(text)}: ${JSON.stringify(host)} is not an IPv4 address (a.b.c.d)`);
  let base = BASE_PORT_DEFAULT;
  if (port !== undefined) {
    base = /^\d{1,5}$/.test(port) ? Number(port) : NaN;
    // the base and base + 1 must both be ports
    if (!(base >= 1 && base <= 0xfffe)) throw new AddressError(`${what}: ${JSON.stringify(text)}: port ${JSON.stringify(port)} must be a whole number 1..65534 (RoCEv2 there, the MetaRoCE-like transport on the next)`);
  }
  return { host, base };
}

/** A comma-separated list of addresses, one per device port. */
export function parseAddressList(text: string, what: string): UdpAddress[] {
  if (text.trim() === "") throw new AddressError(`${what}: no address given`);
  return text.split(",").map((a, i, all) => parseUdpAddress(a.trim(), all.length > 1 ? `${what} (port ${i})` : what));
}

/** `device=host[:port][,host[:port]...]`: a peer device and its ports' addresses. */
export function parsePeer(text: string): Peer {
  const eq = text.indexOf("=");
  const id = eq < 0 ? "" : text.slice(0, eq).trim();
  if (eq < 0 || !/^\d{1,5}$/.test(id) || Number(id) > 0xffff)
    throw new AddressError(`--peer ${JSON.stringify(text)}: want <device>=<host>[:<port>], the device a number 0..65535 (e.g. 1=127.0.0.2)`);
  return { device: Number(id), ports: parseAddressList(text.slice(eq + 1), `--peer ${id}`) };
}

/** "127.0.0.2:4791" for an address's base. */
export const formatUdpAddress = (a: UdpAddress): string => `${a.host}:${a.base}`;

/**
 * A device's peers: the address of device `d`'s port `p`, and the device an address a datagram
 * came from belongs to. A frame leaves port p for the same port of its destination (the
 * addressing of docs/nic.md), so a datagram that reached port p's socket must come from a peer's
 * port p. Built once; refuses a peer named twice, a peer that is the device itself, and a peer
 * with another number of ports, or whose addresses collide with another device's.
 */
export class PeerTable {
  private readonly byDevice = new Map<number, UdpAddress[]>();
  private readonly byHost: Map<string, number>[];

  constructor(self: { device: number; ports: UdpAddress[] }, peers: readonly Peer[]) {
    this.byHost = self.ports.map(() => new Map());
    const owner = (p: number, host: string) => this.byHost[p]!.get(host);
    self.ports.forEach((a, p) => this.byHost[p]!.set(a.host, self.device));
    for (const peer of peers) {
      const what = `--peer ${peer.device}`;
      if (peer.device === self.device) throw new AddressError(`${what}: that is this device's own id (--device ${self.device})`);
      if (this.byDevice.has(peer.device)) throw new AddressError(`${what}: device ${peer.device} is named twice`);
      if (peer.ports.length !== self.ports.length)
        throw new AddressError(`${what}: ${peer.ports.length} address${peer.ports.length === 1 ? "" : "es"} for a device of ${self.ports.length} port${self.ports.length === 1 ? "" : "s"}: give one per port, in port order (a frame leaves port p for the peer's port p)`);
      peer.ports.forEach((a, p) => {
        const other = owner(p, a.host);
        if (other !== undefined) throw new AddressError(`${what}: port ${p}'s address ${a.host} is already device ${other}'s: a datagram's source address must say which device sent it`);
        this.byHost[p]!.set(a.host, peer.device);
      });
      this.byDevice.set(peer.device, peer.ports);
    }
    self.ports.forEach((a, p) => this.byHost[p]!.delete(a.host)); // kept only to refuse a peer on this device's own address
  }

  /** Where device `device`'s port `port` is, or undefined for a device that is no peer. */
  addressOf(device: number, port: number): UdpAddress | undefined {
    return this.byDevice.get(device)?.[port];
  }

  /** The peer whose port `port` is at `host`, or undefined. */
  deviceAt(port: number, host: string): number | undefined {
    return this.byHost[port]?.get(host);
  }

  /** The peers, in the order given. */
  get peers(): Peer[] {
    return [...this.byDevice].map(([device, ports]) => ({ device, ports }));
  }
}
