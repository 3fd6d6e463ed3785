// The conformance target in this process: a menic device (full mode, one port) whose one QP is
// connected to the tester, which stands for device 1 on the other end of the port's cable.
// The tester's frames reach the port at the device's present; the device runs in steps no
// longer than STEP_PS (so the tester sees a frame at most that long after it left, and answers
// it no later), and what its port sent is read back with its time.

import { Context, type Qp, type Cq, type Mr } from "../verbs.js";
import { DevicePorts, frameCopy } from "../ports.js";
import { frameHeaderBytes } from "../wire/split.js";
import { bytesOf } from "./values.js";
import type { IutSetup, Transport, WorkRequest } from "./case.js";
import { CASE_BASE_CONFIG, completionOf, sendWrOf, transportCounters, type IutCompletion, type IutInfo, type SentFrame, type Target, type TesterPeer } from "./target.js";

/** The longest the device runs at once: how late, at most, the tester sees a frame and answers it. */
export const STEP_PS = 10_000n;

/** The config every case's device starts from: one engine, one port (the tester's cable), the transport's connections. */
const BASE_CONFIG = { ...CASE_BASE_CONFIG, ports: 1, scaleUpPorts: 1, deviceId: 0, timingMode: 0 };

export class SimTarget implements Target {
  readonly stepPs = STEP_PS;
  private ctx: Context | null = null;
  private ports: DevicePorts | null = null;
  private qp: Qp | null = null;
  private cq: Cq | null = null;
  private mr: Mr | null = null;
  private addr = 0;
  private t0 = 0n;
  private seq = 0;
  private peerDevice = 1;

  constructor(private readonly module: WebAssembly.Module) {}

  async open(transport: Transport, setup: IutSetup, peer: TesterPeer): Promise<IutInfo> {
    const ctx = await Context.open(this.module, { ...BASE_CONFIG, ...setup.config, transport: transport === "metaroce" ? 1 : 0 });
    const pd = ctx.allocPd();
    const cq = ctx.createCq(256);
    const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 64, maxRecvWr: 64 });
    ctx.modifyQp(qp, { state: "INIT" });
    ctx.modifyQp(qp, { state: "RTR", destQpNum: peer.qpn, destDevice: peer.device });
    ctx.modifyQp(qp, { state: "RTS" });
    const bytes = setup.region?.bytes ?? 65536;
    const addr = ctx.allocHbm(bytes);
    const mr = ctx.regMr(pd, addr, bytes, setup.region?.access ?? ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
    if (setup.region?.init) ctx.write(addr, bytesOf(setup.region.init, "iut.region.init"));
    Object.assign(this, { ctx, qp, cq, mr, addr, ports: new DevicePorts(ctx.device), t0: ctx.nowPs, seq: 0, peerDevice: peer.device });
    return { device: 0, qpn: qp.qpn, addr, rkey: mr.rkey, regionBytes: bytes };
  }

  private get c(): Context {
    if (!this.ctx) throw new Error("conformance target: no case is open");
    return this.ctx;
  }

  now(): bigint { return this.c.nowPs - this.t0; }

  async send(frame: Uint8Array): Promise<void> {
    const ports = this.ports!, hdrLen = frameHeaderBytes(frame);
    if (!ports.stageArrival(Number(this.c.nowPs), 0, frame.length, this.peerDevice, this.seq++, frame, 0, hdrLen, frame, hdrLen, frame.length - hdrLen))
      throw new Error("conformance target: the device's receive stage is full");
    ports.commitArrivals();
  }

  async advance(untilPs: bigint): Promise<SentFrame[]> {
    const out: SentFrame[] = [];
    const until = untilPs + this.t0;
    while (this.c.nowPs < until) {
      const end = this.c.nowPs + STEP_PS < until ? this.c.nowPs + STEP_PS : until;
      this.c.run(end);
      this.ports!.drain((f) => out.push({ bytes: frameCopy(f), timePs: BigInt(f.timePs) - this.t0, port: f.port }));
    }
    return out;
  }

  async post(wr: WorkRequest, peer: TesterPeer): Promise<void> {
    this.c.postSend(this.qp!, [sendWrOf(wr, peer, this.addr + wr.offset, this.mr!.lkey)]);
  }

  async postRecv(wrId: number, offset: number, length: number): Promise<void> {
    this.c.postRecv(this.qp!, [{ wrId, localAddr: this.addr + offset, length, lkey: this.mr!.lkey }]);
  }

  async poll(): Promise<IutCompletion[]> {
    return this.c.pollCq(this.cq!, 64).map(completionOf);
  }

  async read(offset: number, length: number): Promise<Uint8Array> { return this.c.read(this.addr + offset, length); }

  async counters(): Promise<Record<string, number>> {
    return transportCounters(this.c.device.stats());
  }

  async close(): Promise<void> {
    this.ctx = null;
    this.ports = null;
  }
}
