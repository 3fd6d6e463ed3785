// A served device (docs/serve.md): one device in full mode whose ports' frames leave as UDP
// datagrams and whose arrivals are the datagrams its peers send, run in steps paced to the wall
// clock (pacer.ts). The one loop here is the device's only interleave point with the outside:
// each turn runs the device as far as the pacer allows, sends what its ports sent, stages what
// arrived at the device's time, then yields to Node's event loop, where datagrams and control
// requests come in. It reads the wall clock through the `clock` it is given. Under `--pace step`
// there is no loop: the device's time moves only when a client asks (`advance`), and the turns
// are taken then, in the same order.

import type { Context } from "../verbs.js";
import { DevicePorts, type TxFrameRef } from "../ports.js";
import type { PcapngWriter } from "../wire/pcapng.js";
import { ArrivalBuilder, FrameDatagrams, copyUdpPayload } from "./datagram.js";
import { Pacer, STEP_PS, type PaceOptions } from "./pacer.js";
import { TRANSPORT_UDP_PORTS, type PeerTable, type UdpAddress } from "./addresses.js";
import type { Datagram } from "./udp.js";
import { CountWait } from "./count-wait.js";

/** Datagrams kept between two steps at most (the device's receive ring holds 2,048 frames by default); more are dropped, counted. */
export const INBOX_MAX = 8192;

/** What a served device counted of its datagrams (the device's own counters are its `stats()`). */
export interface ServeCounters {
  /** datagrams sent, and their bytes of UDP payload */
  txDatagrams: number;
  txBytes: number;
  /** frames to a device that no --peer names: dropped */
  txNoPeer: number;
  /** datagrams received on the transports' ports, and their bytes */
  rxDatagrams: number;
  rxBytes: number;
  /** from an address that is no peer's address for the port it reached: dropped */
  rxUnknownSource: number;
  /** too short for its transport's headers and trailer, or of an opcode or type the device does not know: dropped */
  rxMalformed: number;
  /** found INBOX_MAX datagrams waiting: dropped */
  rxInboxFull: number;
  /** datagrams staged into the device as frames */
  rxStaged: number;
}

/** Sends one datagram (udp.ts UdpPorts.send). */
export type SendDatagram = (port: number, srcUdpPort: number, to: UdpAddress, transportPort: number, payload: Uint8Array) => void;

/** A datagram the device sent during an `advance` (step pacing): when its frame's last bit left, from which port and source port, and its bytes of UDP payload. */
export interface SentDatagram {
  timePs: bigint;
  port: number;
  srcUdpPort: number;
  bytes: number;
}

/** Where a served device's frames are captured: the writer and one interface per port, and the capture time of the device's time 0 (a reset device's time starts again at 0). */
export interface ServeCapture {
  writer: PcapngWriter;
  ifaces: readonly number[];
  basePs: bigint;
}

/** A datagram waiting to be staged, with the device it came from. */
interface Waiting extends Datagram {
  srcDevice: number;
}

export class ServedDevice {
  readonly counters: ServeCounters = {
    txDatagrams: 0, txBytes: 0, txNoPeer: 0, rxDatagrams: 0, rxBytes: 0, rxUnknownSource: 0, rxMalformed: 0, rxInboxFull: 0, rxStaged: 0,
  };
  readonly pacer: Pacer;
  /** Why the loop ended when the device failed (DeviceFailedError), else null. */
  failure: Error | null = null;
  private readonly ports: DevicePorts;
  private readonly routes = new FrameDatagrams();
  private readonly arrivals = new ArrivalBuilder();
  private readonly deviceId: number;
  private inbox: Waiting[] = [];
  private seq = 0;
  private send: SendDatagram = () => {};
  private readonly stepListeners = new Set<() => void>();
  private wakeUp: (() => void) | null = null;
  private stopping = false;
  private loopDone: Promise<void> | null = null;
  /** Resolves when the device has ended (stopped, or failed: `failure`), started or not. */
  readonly ended: Promise<void>;
  private frameBuf = new Uint8Array(1 << 16);
  /** during an advance: what the device sends */
  private sentLog: SentDatagram[] | null = null;
  /** an advance waiting for datagrams to arrive */
  private readonly rx = new CountWait(() => this.counters.rxDatagrams);
  private loopEnd!: () => void;

  constructor(
    readonly ctx: Context,
    readonly peers: PeerTable,
    pace: PaceOptions,
    /** the wall clock, ns */
    private readonly clock: () => bigint,
    private readonly capture: ServeCapture | null = null,
  ) {
    this.ports = new DevicePorts(ctx.device);
    this.deviceId = Number(ctx.device.config.get("deviceId"));
    this.pacer = new Pacer(pace, clock(), ctx.nowPs);
    this.ended = new Promise<void>((r) => { this.loopEnd = r; });
  }

  /** The capture time of the device's time 0 (0 for the first device; a reset device's goes on from its predecessor's end). */
  get capturePs(): bigint {
    return this.capture?.basePs ?? 0n;
  }

  /** Starts the loop; datagrams the device sends go to `send`. */
  start(send: SendDatagram): void {
    this.send = send;
    // stepped: no loop, only an end (stop, or a failure in an advance)
    if (this.pacer.options.mode !== "step") this.loopDone ??= this.loop().then(() => this.loopEnd());
  }

  /** Ends the loop after its current turn; resolves when it has ended. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    if (this.loopDone) await this.loopDone;
    this.loopEnd();
  }

  /** Something changed outside the device (a request posted work): a waiting loop plans again. */
  wake(): void {
    this.wakeUp?.();
  }

  /**
   * Brings the device's time to the wall's, when nothing it has to do lies before (an idle
   * device's clock stands where it last looked): a request then acts at the time the wall says.
   * A device behind the wall is left to its loop.
   */
  follow(): void {
    if (this.stopping || this.failure || this.pacer.options.mode === "step") return;
    const target = this.pacer.targetPs(this.clock()), next = this.ctx.device.nextActivityPs;
    if (target > this.ctx.nowPs && (next === null || next > target)) this.ctx.run(target);
  }

  /** Calls `listener` after every turn that ran the device or staged arrivals; returns its removal. */
  onStep(listener: () => void): () => void {
    this.stepListeners.add(listener);
    return () => this.stepListeners.delete(listener);
  }

  /** A datagram reached port `d.port`: kept for the next step if it comes from a peer. */
  receive(d: Datagram): void {
    const c = this.counters;
    c.rxDatagrams++;
    c.rxBytes += d.data.length;
    const srcDevice = this.peers.deviceAt(d.port, d.fromHost);
    if (srcDevice === undefined) { c.rxUnknownSource++; return; }
    if (this.inbox.length >= INBOX_MAX) { c.rxInboxFull++; return; }
    const w = d as Waiting;
    w.srcDevice = srcDevice;
    this.inbox.push(w);
    this.wake();
    this.rx.grew();
  }

  /**
   * Step pacing: once `received` datagrams have reached the device (counting from its start;
   * waiting up to `waitMs` of wall time for them), stages what arrived at the device's time and
   * runs it to `untilPs`, a turn of at most STEP_PS at a time; what it sent meanwhile, in order.
   * Rejects, the device unchanged, when the datagrams do not come or the time is past.
   */
  async advance(untilPs: bigint, received: number, waitMs: number): Promise<SentDatagram[]> {
    if (this.failure) throw this.failure;
    if (this.stopping) throw new Error("advance: the device is stopping");
    if (untilPs < this.ctx.nowPs) throw new Error(`advance: untilPs ${untilPs} is before the device's time, ${this.ctx.nowPs} ps`);
    await this.rx.reach(received, waitMs, (got) => `advance: ${received} datagrams were to have reached the device; ${got} did within ${waitMs} ms`);
    const sent: SentDatagram[] = [];
    this.sentLog = sent;
    try {
      do {
        this.stage();
        const end = this.ctx.nowPs + STEP_PS < untilPs ? this.ctx.nowPs + STEP_PS : untilPs;
        this.ctx.run(end);
        this.transmit();
        for (const l of this.stepListeners) l();
      } while (this.ctx.nowPs < untilPs);
    } catch (e) {
      this.failure = e as Error;
      this.loopEnd();
      throw e;
    } finally {
      this.sentLog = null;
    }
    return sent;
  }

  private async loop(): Promise<void> {
    try {
      while (!this.stopping) {
        const plan = this.pacer.plan(this.ctx.nowPs, this.ctx.device.nextActivityPs, this.clock());
        // a wait follows the wall first: arrivals are staged at the time the wall says
        this.ctx.run(plan.kind === "run" ? plan.untilPs : plan.followPs);
        this.transmit();
        const staged = this.stage();
        if (plan.kind === "run" || staged > 0) {
          for (const l of this.stepListeners) l();
          await new Promise<void>((r) => setImmediate(r));
          continue;
        }
        const woken = await this.sleep(plan.wallMs);
        if (!woken && plan.skipToPs !== undefined) {
          // nothing came: time goes on from the next event (none lies before it)
          this.pacer.skip(plan.skipToPs, this.clock());
          this.ctx.run(plan.skipToPs);
        }
      }
    } catch (e) {
      this.failure = e as Error;
    }
  }

  /** Waits `ms` of wall time (below 1: a turn of the event loop; Infinity: until woken); true when woken. */
  private sleep(ms: number): Promise<boolean> {
    if (this.stopping || this.inbox.length > 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      let cancel = () => {};
      const done = (woken: boolean) => {
        if (this.wakeUp !== wake) return; // ended already
        this.wakeUp = null;
        cancel();
        resolve(woken);
      };
      const wake = () => done(true);
      this.wakeUp = wake;
      if (ms < 1) {
        const t = setImmediate(() => done(false));
        cancel = () => clearImmediate(t);
      } else if (ms !== Infinity) {
        const t = setTimeout(() => done(false), Math.min(ms, 2 ** 31 - 1));
        cancel = () => clearTimeout(t);
      }
    });
  }

  /** Sends every frame the ports sent as a datagram to its peer. */
  private transmit(): void {
    this.ports.drain((f) => {
      const c = this.counters, r = this.routes.routeOf(f);
      const to = r ? this.peers.addressOf(r.dstDevice, r.port) : undefined;
      if (!r || !to || !TRANSPORT_UDP_PORTS.includes(r.dstUdpPort)) { c.txNoPeer++; return; }
      const payload = Buffer.allocUnsafe(r.bytes); // handed to the socket, which may send it later
      copyUdpPayload(f, payload);
      this.send(r.port, r.srcUdpPort, to, r.dstUdpPort, payload);
      c.txDatagrams++;
      c.txBytes += r.bytes;
      this.sentLog?.push({ timePs: BigInt(f.timePs), port: r.port, srcUdpPort: r.srcUdpPort, bytes: r.bytes });
      if (this.capture) this.captureOut(f);
    });
  }

  /** Stages the datagrams waiting, at the device's time, as many as its receive stage takes; returns how many. */
  private stage(): number {
    if (this.inbox.length === 0) return 0;
    const now = Number(this.ctx.nowPs), c = this.counters;
    let staged = 0, k = 0;
    for (; k < this.inbox.length; k++) {
      const d = this.inbox[k]!;
      const a = this.arrivals.rebuild(d.data, d.srcDevice, this.deviceId, d.port, d.fromPort, d.transportPort);
      if (!a) { c.rxMalformed++; continue; }
      const bodyLen = d.data.length - a.bodyAt;
      if (!this.ports.stageArrival(now, d.port, a.wireLen, d.srcDevice, this.seq, a.hdr, 0, a.hdrLen, d.data, a.bodyAt, bodyLen)) {
        if (staged > 0) break; // the stage is full: the rest wait for the next step
        c.rxMalformed++; // larger than the whole stage: it can never be staged
        continue;
      }
      this.seq = (this.seq + 1) >>> 0;
      staged++;
      if (this.capture) this.captureIn(now, d.port, a.hdr, a.hdrLen, d.data, a.bodyAt, bodyLen);
    }
    this.inbox = k === this.inbox.length ? [] : this.inbox.slice(k);
    c.rxStaged += staged;
    if (staged > 0) this.ports.commitArrivals();
    return staged;
  }

  /** A buffer of at least `n` bytes to put a captured frame together in. */
  private frame(n: number): Uint8Array {
    if (this.frameBuf.length < n) this.frameBuf = new Uint8Array(n);
    return this.frameBuf;
  }

  private captureOut(f: TxFrameRef): void {
    const b = this.frame(f.hdrLen + f.bodyLen);
    b.set(f.mem.subarray(f.hdrAt, f.hdrAt + f.hdrLen));
    b.set(f.mem.subarray(f.bodyAt, f.bodyAt + f.bodyLen), f.hdrLen);
    const c = this.capture!;
    c.writer.writePacket(c.ifaces[f.port]!, c.basePs + BigInt(f.timePs), b.subarray(0, f.hdrLen + f.bodyLen), f.wireLen, "out");
  }

  private captureIn(timePs: number, port: number, hdr: Uint8Array, hdrLen: number, body: Uint8Array, bodyAt: number, bodyLen: number): void {
    const b = this.frame(hdrLen + bodyLen);
    b.set(hdr.subarray(0, hdrLen));
    b.set(body.subarray(bodyAt, bodyAt + bodyLen), hdrLen);
    const c = this.capture!;
    c.writer.writePacket(c.ifaces[port]!, c.basePs + BigInt(timePs), b.subarray(0, hdrLen + bodyLen), hdrLen + bodyLen, "in");
  }
}
