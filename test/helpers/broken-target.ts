// A conformance target broken on purpose (test/conform.test.ts, test/conform-udp.test.ts): the
// IUT's answers rewritten one way on their way out, the tester's frames dropped on their way in,
// or its memory never placed. Each break should fail exactly the cases that name its behaviour.
import { coreModule } from "../../host/platform/node.js";
import { SimTarget } from "../../host/conform/sim-target.js";
import type { IutCompletion, SentFrame, Target, TesterPeer, IutInfo } from "../../host/conform/target.js";
import type { IutSetup, Transport, WorkRequest } from "../../host/conform/case.js";
import { parseMetaroceFrame, buildMetaroceFrame } from "../../host/wire/metaroce.js";

/** A menic device whose answers are broken one way on their way out, or whose tester frames are dropped on their way in. */
export class Broken implements Target {
  readonly stepPs: bigint;
  transport: Transport = "metaroce";
  constructor(
    private readonly out: (t: Transport, bytes: Uint8Array) => Uint8Array,
    private readonly keepIn: (t: Transport, bytes: Uint8Array) => boolean = () => true,
    private readonly places = true,
    /** the IUT broken: a menic device in this process unless given */
    private readonly inner: Target = new SimTarget(coreModule()),
  ) {
    this.stepPs = this.inner.stepPs;
  }
  open(t: Transport, setup: IutSetup, peer: TesterPeer): Promise<IutInfo> { this.transport = t; return this.inner.open(t, setup, peer); }
  now(): bigint { return this.inner.now(); }
  async send(frame: Uint8Array): Promise<void> { if (this.keepIn(this.transport, frame)) await this.inner.send(frame); }
  async advance(untilPs: bigint): Promise<SentFrame[]> { return (await this.inner.advance(untilPs)).map((f) => ({ ...f, bytes: this.out(this.transport, f.bytes) })); }
  post(wr: WorkRequest, peer: TesterPeer): Promise<void> { return this.inner.post(wr, peer); }
  postRecv(wrId: number, offset: number, length: number): Promise<void> { return this.inner.postRecv(wrId, offset, length); }
  poll(): Promise<IutCompletion[]> { return this.inner.poll(); }
  async read(offset: number, length: number): Promise<Uint8Array> { return this.places ? this.inner.read(offset, length) : new Uint8Array(length); }
  counters(): Promise<Record<string, number>> { return this.inner.counters(); }
  close(): Promise<void> { return this.inner.close(); }
}

/** Rewrites the IUT's MetaRoCE-like frames through `edit` (a well-formed frame again, CRC and all). */
export const mrtEdit = (edit: (f: ReturnType<typeof parseMetaroceFrame> & { ok: true }) => void) => (t: Transport, bytes: Uint8Array) => {
  if (t !== "metaroce") return bytes;
  const p = parseMetaroceFrame(bytes);
  if (!p.ok) return bytes;
  edit(p);
  return buildMetaroceFrame(p.frame);
};
