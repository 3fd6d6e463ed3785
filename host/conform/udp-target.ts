// The conformance target over UDP (`menic conform --target udp://HOST:PORT`): an implementation
// in another process, on real sockets. Its frames are datagrams (docs/serve.md, "Datagrams"):
// the tester's go from its own sockets, bound at the address the IUT knows as device 1, from
// each frame's UDP source port; the IUT's come back to them and are rebuilt into frames.
// The rest goes over the IUT's control channel (JSON lines over TCP, as `menic serve` speaks
// it): a `reset` with the case's config before each case, the verbs, and the IUT's time, which
// moves only when the tester asks (`advance`, `menic serve --pace step`): the tester says how
// many datagrams it has sent, and the IUT stages them before it runs, then says when it sent
// each of its own. Every bound of a case is judged in the IUT's simulated time, so a busy
// machine slows the run but cannot change its verdicts. Node only (node:dgram, node:net).

import { ServeClient, type ServeInfo, type ServeSent } from "../serve/client.js";
import { UdpPorts, type Datagram } from "../serve/udp.js";
import { CountWait } from "../serve/count-wait.js";
import { TRANSPORT_UDP_PORTS, formatUdpAddress, type UdpAddress } from "../serve/addresses.js";
import { UDP_IPV4_BYTES } from "../wire/udp-ipv4.js";
import { writeDeviceEnvelope } from "../serve/datagram.js";
import { formatIpv4, portAddress } from "../fabric/topology.js";
import * as H from "../generated/headers.js";
import { bytesOf } from "./values.js";
import type { IutSetup, Transport, WorkRequest } from "./case.js";
import { CASE_BASE_CONFIG, TargetLimit, completionOf, sendWrOf, transportCounters, type IutCompletion, type IutInfo, type SentFrame, type Target, type TesterPeer } from "./target.js";
import { STEP_PS } from "./sim-target.js";

/** How long (wall time) the tester waits for a datagram the IUT said it sent, or the IUT for one the tester sent. */
export const DATAGRAM_WAIT_MS = 10_000;

/** Where a UDP target is and where the tester stands. */
export interface UdpTargetOptions {
  /** the IUT's port: RoCEv2 datagrams to its base, the MetaRoCE-like transport's to base + 1 */
  iut: UdpAddress;
  /** the IUT's control channel, a TCP port on 127.0.0.1 */
  controlPort: number;
  /** the tester's address: the IUT's peer device 1 (`menic serve --peer 1=127.0.0.2`) */
  tester: UdpAddress;
  /** what the tester's sockets have to say (a source port it could not bind: its frames then fail RoCEv2's ICRC) */
  warn?: (line: string) => void;
}

/** `udp://HOST:PORT` as an address (PORT: the IUT's RoCEv2 port, 4791 when left out); null when the text is not one. */
export function parseUdpTarget(text: string): UdpAddress | null {
  const m = /^udp:\/\/(\d{1,3}(?:\.\d{1,3}){3})(?::(\d{1,5}))?\/?$/.exec(text);
  if (!m || m[1]!.split(".").some((o) => Number(o) > 255)) return null;
  const base = m[2] === undefined ? H.UDP_PORT.ROCEV2 : Number(m[2]);
  return base >= 1 && base <= 0xfffe ? { host: m[1]!, base } : null;
}

/** The names of the envelope's bytes, for a frame the host network cannot carry. */
const ENVELOPE_FIELDS: [number, string][] = [
  [6, "Ethernet destination"], [12, "Ethernet source"], [14, "EtherType"], [15, "IPv4 version and header length"], [16, "IPv4 DSCP and ECN"],
  [18, "IPv4 total length"], [20, "IPv4 identification"], [22, "IPv4 flags and fragment offset"], [23, "IPv4 TTL"], [24, "IPv4 protocol"],
  [26, "IPv4 header checksum"], [30, "IPv4 source"], [34, "IPv4 destination"], [36, "UDP source port"], [38, "UDP destination port"], [40, "UDP length"], [42, "UDP checksum"],
];

export class UdpTarget implements Target {
  readonly stepPs = STEP_PS;
  private qp = 0;
  private cq = 0;
  private lkey = 0;
  private addr = 0;
  private device = 0;
  /** the IUT's time, and its time at the case's start */
  private nowPs = 0n;
  private t0 = 0n;
  /** datagrams the tester has sent the IUT since its reset, and those the IUT has been told of */
  private sentCount = 0;
  private toldCount = 0;
  /** the IUT's datagrams not yet paired with what its advance said it sent */
  private inbox: Datagram[] = [];
  private readonly arrived = new CountWait(() => this.inbox.length);
  /** datagrams from elsewhere than the IUT's port: ignored */
  strays = 0;

  private constructor(
    private readonly o: UdpTargetOptions,
    private readonly client: ServeClient,
    readonly info: ServeInfo,
    private readonly testerDevice: number,
    private udp: UdpPorts | null,
  ) {}

  /**
   * Reaches the IUT's control channel, checks that it steps its time and knows the tester as its
   * peer device 1, and binds the tester's sockets; rejects saying what is missing.
   */
  static async connect(o: UdpTargetOptions, tester: TesterPeer): Promise<UdpTarget> {
    const client = await ServeClient.connect(o.controlPort);
    try {
      const info = await client.info();
      const where = `the IUT at ${formatUdpAddress(o.iut)} (control port ${o.controlPort})`;
      if (info.pace.mode !== "step") throw new Error(`${where} paces its time by the wall clock (--pace ${info.pace.mode}): the tester judges time in the IUT's own, and needs it stepped (menic serve --pace step)`);
      const port = info.ports[0];
      if (!port || port.host !== o.iut.host || port.rocev2 !== o.iut.base) throw new Error(`${where}: its control channel serves a device at ${port ? `${port.host}:${port.rocev2}` : "no port"}, not ${formatUdpAddress(o.iut)}`);
      const me = info.peers.find((p) => p.device === tester.device);
      if (!me || me.ports[0] !== formatUdpAddress(o.tester))
        throw new Error(`${where} does not know the tester as device ${tester.device} at ${formatUdpAddress(o.tester)}${me ? ` (it has device ${tester.device} at ${me.ports[0]})` : ""}: start it with --peer ${tester.device}=${formatUdpAddress(o.tester)}`);
      const t = new UdpTarget(o, client, info, tester.device, null);
      t.udp = await UdpPorts.bind([o.tester], (d) => t.receive(d), o.warn ?? (() => {}));
      return t;
    } catch (e) {
      await client.close();
      throw e;
    }
  }

  /** The transport the IUT speaks: the cases it can run. */
  get transport(): Transport {
    return this.info.transport;
  }

  private receive(d: Datagram): void {
    if (d.fromHost !== this.o.iut.host) { this.strays++; return; }
    this.inbox.push(d);
    this.arrived.grew();
  }

  async open(transport: Transport, setup: IutSetup, peer: TesterPeer): Promise<IutInfo> {
    if (transport !== this.transport) throw new TargetLimit(`the IUT speaks ${this.transport}, not ${transport}`);
    const c = this.client;
    await c.reset({ ...CASE_BASE_CONFIG, ...setup.config });
    this.inbox = [];
    this.sentCount = this.toldCount = 0;
    const pd = await c.allocPd();
    const cq = await c.createCq(256);
    const qp = await c.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 64, maxRecvWr: 64 });
    await c.modifyQp(qp, { state: "INIT" });
    await c.modifyQp(qp, { state: "RTR", destQpNum: peer.qpn, destDevice: peer.device });
    await c.modifyQp(qp, { state: "RTS" });
    const bytes = setup.region?.bytes ?? 65536;
    const addr = await c.allocHbm(bytes);
    const mr = await c.regMr(pd, addr, bytes, setup.region?.access ?? ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
    if (setup.region?.init) await c.write(addr, bytesOf(setup.region.init, "iut.region.init"));
    const now = (await c.stats()).nowPs;
    Object.assign(this, { qp, cq, lkey: mr.lkey, addr, device: this.info.device, nowPs: now, t0: now });
    return { device: this.info.device, qpn: qp, addr, rkey: mr.rkey, regionBytes: bytes };
  }

  now(): bigint { return this.nowPs - this.t0; }

  async send(frame: Uint8Array): Promise<void> {
    const v = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
    if (frame.length < UDP_IPV4_BYTES) throw new TargetLimit(`the tester's frame is cut inside its Ethernet, IPv4 and UDP headers (${frame.length} bytes): a UDP socket sends none such`);
    const udp = H.ETH_SIZE + H.IPV4_SIZE;
    const srcPort = H.getUdpSrcPort(v, udp), dstPort = H.getUdpDstPort(v, udp), udpLen = H.getUdpLength(v, udp);
    if (!TRANSPORT_UDP_PORTS.includes(dstPort)) throw new TargetLimit(`the tester's frame goes to UDP port ${dstPort}, which is no transport's`);
    const from = H.getIpv4Src(v, H.ETH_SIZE), to = H.getIpv4Dst(v, H.ETH_SIZE);
    const tester = portAddress(this.testerDevice, 0), iut = portAddress(this.device, 0);
    if (from !== tester) throw new TargetLimit(`the tester's frame comes from ${formatIpv4(from)}, not the tester's ${formatIpv4(tester)}: a datagram's source is its socket's address, and the IUT knows only the tester's`);
    if (to !== iut) throw new TargetLimit(`the tester's frame goes to ${formatIpv4(to)}, not the IUT's ${formatIpv4(iut)}: whatever reaches the IUT's socket is for the IUT`);
    // what the IUT rebuilds around the datagram: the frame it is given must be that
    const want = new Uint8Array(UDP_IPV4_BYTES);
    writeDeviceEnvelope(want, 0, this.testerDevice, this.device, 0, srcPort, dstPort, Math.max(0, udpLen - H.UDP_SIZE));
    for (let i = 0; i < UDP_IPV4_BYTES; i++) {
      if (want[i] === frame[i]) continue;
      const field = ENVELOPE_FIELDS.find(([end]) => i < end)![1];
      throw new TargetLimit(`the tester's frame sets its ${field} as no UDP socket's datagram arrives: the tester gives the IUT a UDP payload only, and the IUT rebuilds the rest (docs/conformance.md, "Over UDP")`);
    }
    this.udp!.send(0, srcPort, this.o.iut, dstPort, frame.subarray(UDP_IPV4_BYTES));
    this.sentCount++;
  }

  async advance(untilPs: bigint): Promise<SentFrame[]> {
    // a time past is now: nothing to run, unless the IUT is yet to stage what the tester sent
    const until = untilPs + this.t0 > this.nowPs ? untilPs + this.t0 : this.nowPs;
    if (until === this.nowPs && this.sentCount === this.toldCount) return [];
    const r = await this.client.advance(until, { received: this.sentCount, waitMs: DATAGRAM_WAIT_MS });
    this.toldCount = this.sentCount;
    this.nowPs = r.nowPs;
    await this.arrived.reach(r.sent.length, DATAGRAM_WAIT_MS,
      (got) => `the IUT said it sent ${r.sent.length} datagrams; ${got} reached the tester at ${formatUdpAddress(this.o.tester)} within ${DATAGRAM_WAIT_MS} ms`);
    const frames = r.sent.map((s, k) => this.frameOf(s, this.inbox[k]!, k));
    this.inbox.splice(0, frames.length);
    return frames;
  }

  /** The frame the IUT's `k`th datagram of an advance was, with the time the IUT gave it. */
  private frameOf(s: ServeSent, d: Datagram, k: number): SentFrame {
    if (d.fromPort !== s.srcUdpPort || d.data.length !== s.bytes)
      throw new Error(`the IUT's datagram ${k + 1} of this step came from port ${d.fromPort} with ${d.data.length} bytes; it said ${s.srcUdpPort} and ${s.bytes} (reordered or lost on the host?)`);
    const bytes = new Uint8Array(UDP_IPV4_BYTES + d.data.length);
    writeDeviceEnvelope(bytes, 0, this.device, this.testerDevice, 0, d.fromPort, d.transportPort, d.data.length);
    bytes.set(d.data, UDP_IPV4_BYTES);
    return { bytes, timePs: s.timePs - this.t0, port: s.port };
  }

  async post(wr: WorkRequest, peer: TesterPeer): Promise<void> {
    await this.client.postSend(this.qp, [sendWrOf(wr, peer, this.addr + wr.offset, this.lkey)]);
  }

  async postRecv(wrId: number, offset: number, length: number): Promise<void> {
    await this.client.postRecv(this.qp, [{ wrId, localAddr: this.addr + offset, length, lkey: this.lkey }]);
  }

  async poll(): Promise<IutCompletion[]> {
    return (await this.client.pollCq(this.cq, { max: 64 })).map(completionOf);
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    return this.client.read(this.addr + offset, length);
  }

  async counters(): Promise<Record<string, number>> {
    return transportCounters((await this.client.stats()).device);
  }

  /** Ends a case: the datagrams it sent that no advance waited for are waited for now, so none reaches the next case's device. */
  async close(): Promise<void> {
    if (this.sentCount > this.toldCount) await this.advance(this.now());
  }

  /** Closes the tester's sockets and the control connection. */
  async shutdown(): Promise<void> {
    this.udp?.close();
    await this.client.close();
  }
}
