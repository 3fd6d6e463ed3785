// `menic serve` as a library (docs/serve.md): a device whose ports are UDP sockets and whose
// verbs a control channel drives, put together from the parts of host/serve: the device and its
// loop (served-device.ts), its sockets (udp.ts), its peers (addresses.ts), its pacing
// (pacer.ts), the control channel (control.ts, ops.ts). Node only; the wall clock is read here.

import { Context } from "../verbs.js";
import { ConfigError, type DeviceConfig } from "../config.js";
import { PcapngWriter } from "../wire/pcapng.js";
import { formatIpv4, portAddress } from "../fabric/topology.js";
import { PeerTable, formatUdpAddress, type Peer, type UdpAddress } from "./addresses.js";
import { ServedDevice } from "./served-device.js";
import { UdpPorts } from "./udp.js";
import { ControlOps } from "./ops.js";
import { ControlServer } from "./control.js";
import type { PaceOptions } from "./pacer.js";

/** The transports a device runs, by the names `--transport` takes, and their config value. */
export const TRANSPORTS = { rocev2: 0, metaroce: 1 } as const;
export type TransportName = keyof typeof TRANSPORTS;

/** Config fields the serve options set themselves: a --set of one is refused. */
const OWN_FIELDS: Record<string, string> = { deviceId: "--device", ports: "--bind (one address per port)", transport: "--transport", timingMode: "(a served device runs in full mode: its frames carry their bytes)" };

/** What `serve` is given. */
export interface ServeOptions {
  /** the compiled core */
  module: WebAssembly.Module;
  /** this device's id (config deviceId): its ports are 10.p.(id >> 8).(id & 255), and a peer's QP names it at RTR */
  device: number;
  transport: TransportName;
  /** where each of its ports is, one address per port */
  bind: UdpAddress[];
  /** the devices it may send to and receive from */
  peers: Peer[];
  /** more device config fields (docs/memory-map.md), but not those the options above set */
  config?: Record<string, number | string>;
  pace: PaceOptions;
  /** TCP port of the control channel on 127.0.0.1 (0: any free one) */
  controlPort: number;
  /** where a pcapng capture of every frame the ports send and take goes (a file's writer), or none */
  pcap?: (chunk: Uint8Array) => void;
  /** a line to say to the user (a source port that could not be bound, a socket's error) */
  warn?: (line: string) => void;
}

/** Where a served device listens: what `menic serve` prints. */
export interface ServeAddresses {
  device: number;
  transport: TransportName;
  /** per port: its address in the emulated network, and the UDP sockets it has on the host */
  ports: { port: number; address: string; host: string; rocev2: number; metaroce: number }[];
  control: { host: string; port: number };
}

/** A running served device (`serve`): its addresses, its parts, and `close`. */
export class Server {
  private closed: Promise<void> | null = null;

  private constructor(
    readonly addresses: ServeAddresses,
    /** The device now: a `reset` replaces it. */
    public device: ServedDevice,
    private readonly make: (config: Record<string, number | string>, capturePs: bigint) => Promise<ServedDevice>,
    private readonly udp: UdpPorts,
    private readonly control: ControlServer,
    private readonly capture: PcapngWriter | null,
  ) {}

  /** Builds the device, binds its sockets and the control channel, and starts its loop; rejects with what could not be done. */
  static async start(o: ServeOptions): Promise<Server> {
    const warn = o.warn ?? (() => {});
    const ports = o.bind.length;
    const peers = new PeerTable({ device: o.device, ports: o.bind }, o.peers);
    const capture = o.pcap ? new PcapngWriter(o.pcap, "menic serve") : null;
    // one capture interface per port, made with the first device and kept across resets
    const ifaces: number[] = [];
    const make = async (config: Record<string, number | string>, capturePs: bigint) => {
      for (const k of Object.keys(config)) if (Object.hasOwn(OWN_FIELDS, k)) throw new ConfigError(`config.${k}`, `is set by ${OWN_FIELDS[k]}`);
      const ctx = await Context.open(o.module, { scaleUpPorts: ports, ...config, deviceId: o.device, ports, transport: TRANSPORTS[o.transport], timingMode: 0 } as DeviceConfig);
      const speedBps = ctx.device.config.get("portGbps")! * 1_000_000_000n;
      for (let p = ifaces.length; p < ports && capture; p++) {
        ifaces.push(capture.addInterface(`dev${o.device}.port${p}`, { description: `device ${o.device} port ${p}, ${formatIpv4(portAddress(o.device, p))}, served at ${formatUdpAddress(o.bind[p]!)}`, speedBps }));
      }
      return new ServedDevice(ctx, peers, o.pace, () => process.hrtime.bigint(), capture && { writer: capture, ifaces, basePs: capturePs });
    };
    const first = await make(o.config ?? {}, 0n);
    let server: Server | null = null;
    const udp = await UdpPorts.bind(o.bind, (d) => server?.device.receive(d), warn);
    let control: ControlServer;
    const addresses: ServeAddresses = {
      device: o.device, transport: o.transport,
      ports: o.bind.map((a, p) => ({ port: p, address: formatIpv4(portAddress(o.device, p)), host: a.host, rocev2: a.base, metaroce: a.base + 1 })),
      control: { host: "127.0.0.1", port: 0 },
    };
    const dev = () => server!.device;
    const ops = new ControlOps({
      get ctx() { return dev().ctx; },
      info: () => ({
        ...addresses, nowPs: dev().ctx.nowPs.toString(),
        peers: peers.peers.map((p) => ({ device: p.device, ports: p.ports.map(formatUdpAddress) })),
        pace: o.pace,
      }),
      stats: () => ({
        nowPs: dev().ctx.nowPs.toString(), serve: server!.counters(), device: dev().ctx.device.stats(),
        ...(o.transport === "metaroce" ? { paths: dev().ctx.device.metarocePaths() } : {}),
      }),
      follow: () => dev().follow(),
      wake: () => dev().wake(),
      onStep: (l) => dev().onStep(l),
      advance: (untilPs, received, waitMs) => (o.pace.mode === "step" ? dev().advance(untilPs, received, waitMs) : null),
      reset: (config) => server!.reset(config),
    });
    try {
      control = await ControlServer.listen(ops, o.controlPort);
    } catch (e) {
      udp.close();
      throw e;
    }
    addresses.control.port = control.port;
    server = new Server(addresses, first, make, udp, control, capture);
    first.start(server.sender);
    return server;
  }

  private readonly sender = (port: number, src: number, to: UdpAddress, transportPort: number, payload: Uint8Array) => this.udp.send(port, src, to, transportPort, payload);

  /**
   * Replaces the device with a new one, made as the first was but with `config` in place of
   * --config and --set (its time starts at 0; its handles, memory and counters are new; datagrams
   * waiting for the old one are dropped); rejects, the old device kept, when the config is refused.
   */
  async reset(config: Record<string, number | string>): Promise<void> {
    const old = this.device;
    const next = await this.make(config, old.capturePs + old.ctx.nowPs);
    this.device = next; // first: the old device's end is then no end of the server (ended)
    await old.stop();
    next.start(this.sender);
  }

  /** Every counter of the server: the device's datagrams, its sockets', its pacing (ps as decimal strings). */
  counters(): Record<string, number | string> {
    const p = this.device.pacer.counts;
    return { ...this.device.counters, ...this.udp.counters, lagPs: p.lagPs.toString(), skips: p.skips, skippedPs: p.skippedPs.toString() };
  }

  /** Resolves when the device's loop ends by itself: the device failed (`device.failure`); a reset's end of the old device is not one. */
  get ended(): Promise<void> {
    return (async () => {
      for (;;) {
        const d = this.device;
        await d.ended;
        if (d.failure || this.device === d) return;
      }
    })();
  }

  /** Stops the device, closes its sockets and the control channel, and flushes the capture. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      await this.device.stop();
      this.udp.close();
      await this.control.close();
      this.capture?.flush();
    })();
    return this.closed;
  }
}
