// A device as the cluster runner's endpoint (host/fabric/runner.ts): it runs to the window's
// end, hands the frames it sent to the fabric and takes the frames that reach it, a few calls
// into the core per window and no object per frame (host/ports.ts does the ring work).

import type { Device } from "../device.js";
import { DevicePorts } from "../ports.js";
import type { Endpoint, CoreDevice } from "../fabric/runner.js";
import type { MenicExports } from "../wasm.js";
import type { TxSink, ArrivalBatch } from "../fabric/batch.js";
import { WIRE_OVERHEAD_BYTES } from "../generated/layouts.js";

/** Bytes a frame spends on the wire beyond its own: preamble and delimiter, FCS, gap (assembly/nic/ports.ts WIRE_OVERHEAD). */
export const FRAME_OVERHEAD_BYTES = WIRE_OVERHEAD_BYTES;

/**
 * Sees every frame a device exchanges with the fabric, at its port (a pcap capture, a test).
 * `sent`: a frame whose last bit left `port` at `timePs`; its bytes are `bytes[hdrOff, hdrOff +
 * hdrLen)` and then (full mode) `bytes[bodyOff, bodyOff + bodyLen)`, `wireLen` in all, valid
 * during the call only. `delivered`: the frames reaching the device in the window it is about to
 * run, as the runner hands them over (before the device stages them; the batch is valid during
 * the call only). A device's frames come in time order; different devices' interleave by window.
 */
export interface FrameTap {
  sent(port: number, timePs: number, wireLen: number, bytes: Uint8Array, hdrOff: number, hdrLen: number, bodyOff: number, bodyLen: number): void;
  delivered(batch: ArrivalBatch): void;
}

export class DeviceEndpoint implements Endpoint {
  readonly ports: DevicePorts;
  /** picoseconds per byte at the device's port rate */
  private readonly psPerByte: number;
  /** arrivals lost because a window's batch was full */
  stageDrops = 0;
  /** sees every frame sent and delivered, when set */
  tap: FrameTap | null = null;

  constructor(readonly device: Device) {
    this.ports = new DevicePorts(device);
    this.psPerByte = 8000 / Number(device.config.get("portGbps"));
  }

  stepTo(tPs: number): void {
    this.device.advance(BigInt(tPs));
  }

  nextActivityPs(): number {
    const t = this.device.nextActivityPs;
    return t === null ? Infinity : Number(t);
  }

  drainTx(sink: TxSink): void {
    const tap = this.tap;
    if (tap) this.ports.frames((f) => tap.sent(f.port, f.timePs, f.wireLen, f.mem, f.hdrAt, f.hdrLen, f.bodyAt, f.bodyLen));
    // the device stamps a frame with when its last bit left; the fabric wants its first
    this.ports.drainRing((mem, recsAt, head, n, entries, bodiesAt) => sink.sendRecords(mem, recsAt, head, n, entries, this.psPerByte, FRAME_OVERHEAD_BYTES, bodiesAt));
  }

  /** The records are all it copies; a tap reads the columns. */
  get wantsColumns(): boolean {
    return this.tap !== null;
  }

  /** The core steps it when it lives in the fabric's instance, nothing watches its frames, and its output is read only when there is some. */
  inCore(core: MenicExports): CoreDevice | null {
    const d = this.device;
    if (d.core !== core || this.tap !== null || d.readsEveryStep) return null;
    return { handle: d.handle, psPerByte: this.psPerByte, overheadBytes: FRAME_OVERHEAD_BYTES };
  }

  pause(port: number, paused: boolean, atPs: number): void {
    this.device.portPaused(port, paused, atPs);
  }

  attend(): void {
    this.device.afterStep();
  }

  deliver(b: ArrivalBatch): void {
    this.tap?.delivered(b);
    this.stageDrops += this.ports.stageRecords(b.mem, b.recordsAt, b.n, b.bodiesAt);
    this.ports.commitArrivals();
  }
}
