// The fabric: links, switches and the one event queue that moves frames between device ports.
// Its event loop runs in the core (assembly/fabric/fabric.ts), in a core instance of its own;
// this class builds it (the topology's tables, the switches' parameters, the random streams'
// seeds), hands frames over in blocks of PKT records (a device's transmit ring, copied at once;
// or one frame at a time from a TxSink), takes the frames that reach a device, keeps the fault
// schedule, and reads the statistics out of the core's memory. docs/fabric.md describes the
// model; assembly/fabric/fabric.ts describes a frame's life.

import { ArrivalBatch, type TxSink } from "./batch.js";
import { probabilityThreshold } from "./rng.js";
import { resolveFabricConfig, type FabricConfig, type FabricOptions } from "./config.js";
import { type Topology } from "./topology.js";
import { ConfigError } from "../config.js";
import { instantiateCoreSync, CoreInstance, type MenicExports } from "../wasm.js";
import { FAB, FCH, PKT, DROP_REASON, FAULT, FBUF, XFER } from "../generated/layouts.js";
import { putPktDescriptor } from "../pkt.js";

/** Why the fabric dropped a frame (layouts/fabric.json DROP_REASON, in lower case); each is counted per channel, per switch and in total. */
export type DropReason = Lowercase<keyof typeof DROP_REASON>;
/** The drop reasons in the order of their numbers: buffer_full, port_cap, no_route, link_down, random_loss, ge_loss, bad_frame. */
export const DROP_REASONS: readonly DropReason[] = (Object.keys(DROP_REASON) as (keyof typeof DROP_REASON)[])
  .sort((a, b) => DROP_REASON[a] - DROP_REASON[b])
  .map((k) => k.toLowerCase() as DropReason);
const R_BAD = DROP_REASON.BAD_FRAME;
const NR = DROP_REASONS.length;
/** The header's counters a partition's fabric adds to the others' (Fabric.counters). */
const TOTAL_SUMS = [FAB.injected, FAB.delivered, FAB.hops, FAB.pfc_resumes, FAB.late_tx, FAB.unordered_tx, FAB.ev_pushed];

// fault kinds
const F_DOWN = FAULT.DOWN, F_UP = FAULT.UP;
const NONE = -1;
/** Bytes of a PKT record's header room: a frame's headers may be at most this long. */
const HDR_ROOM = PKT.SIZE - PKT.hdr;

/** Gilbert–Elliott bursty loss on a link (per frame, each direction its own chain). */
export interface GilbertElliott {
  /** per frame, probability the channel moves from good to bad */
  pGoodToBad: number;
  /** per frame, probability it moves from bad to good: bursts last 1 / pBadToGood frames on average */
  pBadToGood: number;
  /** loss probability in the good state (default 0) */
  lossGood?: number;
  /** loss probability in the bad state (default 1) */
  lossBad?: number;
}

export interface LossSpec {
  /** independent per-frame loss probability */
  random?: number;
  gilbertElliott?: GilbertElliott | null;
}

export interface ChannelStats {
  from: string;
  to: string;
  packets: number;
  bytes: number;
  drops: Record<DropReason, number>;
  ecnMarks: number;
  queuePeakBytes: number;
  /** PFC pause frames this channel's transmitter received */
  pauses: number;
}

export interface LinkStats {
  id: number;
  name: string;
  up: boolean;
  /** end a → end b (device port → leaf, leaf → spine) and back */
  ab: ChannelStats;
  ba: ChannelStats;
}

export interface SwitchStats {
  name: string;
  bufferBytes: number;
  bufferPeakBytes: number;
  /** the largest any one output queue of this switch grew */
  queuePeakBytes: number;
  ecnMarks: number;
  pfcPausesSent: number;
  drops: Record<DropReason, number>;
}

/** The fabric's counters as a whole (Fabric.totals): FabricStats without its per-switch and per-link parts. */
export type FabricTotals = Omit<FabricStats, "switches" | "links">;

export interface FabricStats {
  nowPs: number;
  injected: number;
  delivered: number;
  /** frames serialised onto a channel (a frame crossing 4 links makes 4 hops) */
  hops: number;
  drops: Record<DropReason, number>;
  ecnMarks: number;
  pfcPauses: number;
  pfcResumes: number;
  /** frames a device handed over with a departure before the fabric's time (sent at that time) */
  lateTx: number;
  /** frames a device port handed over with a departure before its previous frame's (sent at that one's) */
  unorderedTx: number;
  packetsPeak: number;
  eventsPeak: number;
  events: number;
  switches: SwitchStats[];
  links: LinkStats[];
}

function dropRecord(a: Float64Array, at: number): Record<DropReason, number> {
  return Object.fromEntries(DROP_REASONS.map((r, i) => [r, a[at + i]])) as Record<DropReason, number>;
}

export class Fabric {
  readonly config: FabricConfig;
  readonly topology: Topology;
  readonly devices: number;
  readonly ports: number;

  /** PFC is on: a switch pauses the links into an ingress that holds too much (devices' too). */
  readonly pfc: boolean;
  /** @internal the core instance it runs in */
  readonly core: MenicExports;
  /** @internal the fabric's header in the core's memory */
  readonly fab: number;
  private readonly full: boolean;
  private readonly nCh: number;
  private readonly nSw: number;
  private readonly nLinks: number;
  /** per link with a scheduled outage: [down, up, down, up, ...] sorted */
  private readonly outages = new Map<number, number[]>();

  // views of the core's memory, made again when it grows (which empties them)
  private u8 = new Uint8Array(0);
  private dv: DataView<ArrayBuffer> = new DataView(new ArrayBuffer(0));
  private pendMin = new Float64Array(0);
  /** TxSink frames written into the inbox and not yet ingested, and their device */
  private pending = 0;
  private pendingBody = 0;
  private pendingDevice = -1;

  /**
   * Builds the fabric of `topology` in a new instance of the core `module` (the same module
   * the devices run on: host/platform's coreModule(), or the browser bundle's), or in the
   * instance given, beside its devices (their window loop then runs in the core: runner.ts).
   */
  constructor(module: WebAssembly.Module | CoreInstance, topology: Topology, options: FabricOptions = {}) {
    const cfg = resolveFabricConfig(options);
    this.config = cfg;
    this.topology = topology;
    const t = topology;
    this.devices = t.devices;
    this.ports = t.ports;
    this.full = cfg.mode === "full";
    if (cfg.payloadSlotBytes > 2 ** 24) throw new ConfigError("fabric.payloadSlotBytes", `must be at most ${2 ** 24}, got ${cfg.payloadSlotBytes}`);
    const core = (this.core = module instanceof CoreInstance ? module.exports : instantiateCoreSync(module));
    const fab = (this.fab = core.fabricNew() >>> 0);
    const nLinks = (this.nLinks = t.links.length), nCh = (this.nCh = 2 * nLinks), nSw = (this.nSw = t.switches.length);
    const leaves = t.leavesPerPlane, spines = t.spinesPerPod, supers = t.superSpinesPerGroup;
    const firstSpine = t.planes * leaves, firstSuper = firstSpine + t.planes * t.spinesPerPlane;
    const e = cfg.switch.ecn, p = cfg.switch.pfc;
    this.pfc = p.enabled;
    this.views();
    const put32 = (f: number, v: number) => this.dv.setUint32(fab + f, v, true);
    const putF = (f: number, v: number) => this.dv.setFloat64(fab + f, v, true);
    put32(FAB.devices, t.devices); put32(FAB.ports, t.ports); put32(FAB.n_ch, nCh); put32(FAB.n_sw, nSw); put32(FAB.n_links, nLinks);
    put32(FAB.planes, t.planes); put32(FAB.leaves, leaves); put32(FAB.spines, spines); put32(FAB.first_spine, firstSpine);
    put32(FAB.pods, t.pods); put32(FAB.leaves_per_pod, t.leavesPerPod); put32(FAB.supers, supers); put32(FAB.first_super, firstSuper);
    put32(FAB.full, this.full ? 1 : 0); put32(FAB.pfc_on, p.enabled ? 1 : 0); put32(FAB.ecn_on, e.enabled ? 1 : 0);
    put32(FAB.payload_slot_bytes, cfg.payloadSlotBytes);
    putF(FAB.overhead, cfg.frameOverheadBytes); putF(FAB.kmin, e.kminBytes); putF(FAB.kmax, e.kmaxBytes); putF(FAB.pmax, e.pmax);
    putF(FAB.xoff, p.xoffBytes); putF(FAB.xon, p.xonBytes); putF(FAB.failure_detect_ps, cfg.failureDetectionPs);
    // most events are due within the longest hop: a frame's serialisation plus latencies
    let horizon = 0;
    for (const L of t.links) horizon = Math.max(horizon, Math.ceil(((HDR_ROOM + cfg.payloadSlotBytes + cfg.frameOverheadBytes) * 8000) / L.gbps) + L.latencyPs);
    core.fabricInit(fab, 4096, 1024, horizon + cfg.switch.latencyPs);
    // the tables exist now: the views are made again (in an instance that did not grow for
    // them, beside its devices, the old ones would still look valid and miss pend_min)
    this.u8 = new Uint8Array(0);
    this.views();
    const swLat = cfg.switch.latencyPs;
    const i32 = (f: number) => new Int32Array(this.u8.buffer, this.ptr(f), (this.u8.length - this.ptr(f)) >> 2);
    const f64 = (f: number) => new Float64Array(this.u8.buffer, this.ptr(f), (this.u8.length - this.ptr(f)) >> 3);
    const u8 = (f: number) => this.u8.subarray(this.ptr(f));
    const linkUp = u8(FAB.link_up), knownUp = u8(FAB.link_known_up), linkFabric = u8(FAB.link_fabric), linkPlane = i32(FAB.link_plane);
    for (let l = 0; l < nLinks; l++) {
      const L = t.links[l];
      linkUp[l] = knownUp[l] = 1;
      linkFabric[l] = L.tier === "fabric" ? 1 : 0;
      linkPlane[l] = L.plane;
      for (let dir = 0; dir < 2; dir++) {
        const c = 2 * l + dir, at = this.chanAt(c);
        const from = dir === 0 ? L.aSwitch : L.bSwitch;
        const to = dir === 0 ? L.bSwitch : L.aSwitch;
        this.dv.setFloat64(at + FCH.gbps, L.gbps, true);
        this.dv.setFloat64(at + FCH.lat, L.latencyPs, true);
        this.dv.setFloat64(at + FCH.delay, L.latencyPs + (to === NONE ? 0 : swLat), true);
        this.dv.setInt32(at + FCH.src_sw, from, true);
        this.dv.setInt32(at + FCH.dst_sw, to, true);
        if (to === NONE) this.dv.setInt32(at + FCH.dst_ep, L.device * t.ports + L.port, true);
      }
    }
    // switches
    const swPorts = new Int32Array(nSw);
    for (const L of t.links) {
      if (L.aSwitch >= 0) swPorts[L.aSwitch]++;
      swPorts[L.bSwitch]++;
    }
    // every random stream and ECMP seed, seeded in the core (as host/fabric/rng.ts seeds them)
    core.fabricSeed(fab, cfg.seed);
    const role = u8(FAB.sw_role);
    const local = i32(FAB.sw_local), plane = i32(FAB.sw_plane), pod = i32(FAB.sw_pod), bufCap = f64(FAB.buf_cap), portCap = f64(FAB.port_cap);
    for (let s = 0; s < nSw; s++) {
      const S = t.switches[s];
      role[s] = S.role === "leaf" ? 0 : S.role === "spine" ? 1 : 2;
      // within its pod (a leaf, a spine), its plane (a super-spine)
      local[s] = S.role === "leaf" ? S.index % t.leavesPerPod : S.role === "spine" ? S.index % spines : S.index;
      plane[s] = S.plane;
      pod[s] = S.pod;
      bufCap[s] = cfg.switch.bufferBytesPerPort * swPorts[s];
      portCap[s] = Math.min(cfg.switch.portCapFraction * bufCap[s], cfg.switch.portCapBytes);
    }
    // routing tables: each uplink, and the downlink it is the other direction of
    const downCh = i32(FAB.down_ch), linkOf = i32(FAB.fabric_link_of);
    for (let l = 0; l < firstSpine; l++)
      for (let j = 0; j < spines; j++) {
        const link = t.fabricLinkOf[l * spines + j];
        linkOf[l * spines + j] = link;
        if (link < 0) continue;
        downCh[(t.links[link].bSwitch - firstSpine) * t.leavesPerPod + local[l]] = 2 * link + 1;
      }
    const superDown = i32(FAB.super_down_ch), superOf = i32(FAB.super_link_of);
    for (let k = 0; k < firstSuper - firstSpine; k++)
      for (let z = 0; z < supers; z++) {
        const link = t.superLinkOf[k * supers + z];
        superOf[k * supers + z] = link;
        if (link < 0) continue;
        superDown[(t.links[link].bSwitch - firstSuper) * t.pods + pod[firstSpine + k]] = 2 * link + 1;
      }
    for (let pl = 0; pl < t.planes; pl++) core.fabricRebuildGroups(fab, pl);
    const upCh = i32(FAB.ep_up_ch), downEp = i32(FAB.ep_down_ch), leaf = i32(FAB.ep_leaf);
    for (let ep = 0; ep < t.devices * t.ports; ep++) {
      const link = t.hostLinkOf[ep];
      if (link < 0) continue;
      upCh[ep] = 2 * link;
      downEp[ep] = 2 * link + 1;
      leaf[ep] = t.links[link].bSwitch;
    }
  }

  /** Views of the core's memory (again, when it has grown: growing empties the old ones). */
  private views(): void {
    if (this.u8.length !== 0) return;
    const buf = this.core.memory.buffer;
    this.u8 = new Uint8Array(buf);
    this.dv = new DataView(buf);
    const pm = this.dv.getUint32(this.fab + FAB.pend_min, true);
    if (pm !== 0) this.pendMin = new Float64Array(buf, pm, this.devices);
  }

  /** The address a header field holds (a table's). */
  private ptr(field: number): number {
    return this.dv.getUint32(this.fab + field, true);
  }

  private chanAt(c: number): number {
    return this.ptr(FAB.ch) + c * FCH.SIZE;
  }

  private f64At(field: number): number {
    return this.dv.getFloat64(this.fab + field, true);
  }

  /** The time every event before which has run. */
  get nowPs(): number {
    this.views();
    return this.f64At(FAB.now_ps);
  }

  // ---- frames in -------------------------------------------------------------------------

  /**
   * A frame from port `port` of device `device`: see TxSink.send. Frames handed over in one
   * batch may come from the devices in any order: they enter the fabric ordered by
   * (departPs, device, port, order of hand-over on that port).
   */
  send(device: number, port: number, departPs: number, wireLen: number, bytes: Uint8Array, hdrOff: number, hdrLen: number, payloadOff = 0, payloadLen = 0): void {
    if (!(device >= 0 && device < this.devices && port >= 0 && port < this.ports)) throw new RangeError(`no port ${port} of device ${device} in the fabric`);
    if (!Number.isInteger(departPs) || departPs < 0) throw new RangeError(`a frame's departure must be a whole, non-negative number of picoseconds, got ${departPs}`);
    if (hdrLen > HDR_ROOM || hdrLen > wireLen || hdrLen < 0 || (this.full && payloadLen > this.config.payloadSlotBytes)) {
      this.views();
      this.dv.setFloat64(this.fab + FAB.drops + 8 * R_BAD, this.f64At(FAB.drops + 8 * R_BAD) + 1, true);
      return;
    }
    if (this.pendingDevice !== device) this.flush();
    const body = this.full ? payloadLen : 0;
    this.views();
    if (this.pending === this.dv.getUint32(this.fab + FAB.inbox_cap, true) || this.pendingBody + body > this.dv.getUint32(this.fab + FAB.inbox_body_cap, true)) {
      this.flush();
      this.inbox(256, body);
    }
    this.pendingDevice = device;
    this.views();
    const at = this.ptr(FAB.inbox) + this.pending * PKT.SIZE, dv = this.dv;
    putPktDescriptor(dv, at, departPs, wireLen, port, hdrLen, body, this.pendingBody, 0, device);
    this.u8.set(bytes.subarray(hdrOff, hdrOff + hdrLen), at + PKT.hdr);
    if (body > 0) this.u8.set(bytes.subarray(payloadOff, payloadOff + body), this.ptr(FAB.inbox_body) + this.pendingBody);
    this.pending++;
    this.pendingBody += body;
  }

  /**
   * `n` frames sent by device `device`, as PKT records of its transmit ring (a ring of
   * `ringEntries` records at `recsAt` in `mem`, from entry `head`): each record's time is when
   * its last bit left, so it departed (wire_len + txOverheadBytes) bytes at `psPerByte`
   * earlier. In full mode a record's body is at `bodiesAt` + its body_off in `mem`. The
   * records are copied into the fabric in at most two blocks.
   */
  sendRecords(device: number, mem: Uint8Array, recsAt: number, head: number, n: number, ringEntries: number, psPerByte: number, txOverheadBytes: number, bodiesAt: number): void {
    if (n === 0) return;
    this.flush();
    let bodyBytes = 0;
    const src = new DataView(mem.buffer, mem.byteOffset, mem.byteLength);
    if (this.full) for (let k = 0; k < n; k++) bodyBytes += src.getUint32(recsAt + ((head + k) % ringEntries) * PKT.SIZE + PKT.body_len, true);
    this.inbox(n, bodyBytes);
    this.views();
    const inbox = this.ptr(FAB.inbox);
    const first = Math.min(n, ringEntries - head);
    this.u8.set(mem.subarray(recsAt + head * PKT.SIZE, recsAt + (head + first) * PKT.SIZE), inbox);
    if (first < n) this.u8.set(mem.subarray(recsAt, recsAt + (n - first) * PKT.SIZE), inbox + first * PKT.SIZE);
    if (this.full) {
      const bodies = this.ptr(FAB.inbox_body), dv = this.dv;
      let at = 0;
      for (let k = 0; k < n; k++) {
        const r = inbox + k * PKT.SIZE, len = dv.getUint32(r + PKT.body_len, true), off = dv.getUint32(r + PKT.body_off, true);
        this.u8.set(mem.subarray(bodiesAt + off, bodiesAt + off + len), bodies + at);
        dv.setUint32(r + PKT.body_off, at, true);
        at += len;
      }
    }
    this.core.fabricIngest(this.fab, device, n, psPerByte, txOverheadBytes);
  }

  /** Room in the inbox for `records` and `bodyBytes`. */
  private inbox(records: number, bodyBytes: number): void {
    this.views();
    if (records <= this.dv.getUint32(this.fab + FAB.inbox_cap, true) && bodyBytes <= this.dv.getUint32(this.fab + FAB.inbox_body_cap, true)) return;
    // the core grows either area only when it is smaller than asked
    this.core.fabricInbox(this.fab, records, bodyBytes);
    this.views();
  }

  /** @internal Hands the frames TxSinks wrote into the inbox to the core. */
  flush(): void {
    if (this.pending === 0) return;
    const n = this.pending;
    this.pending = 0;
    this.pendingBody = 0;
    this.core.fabricIngest(this.fab, this.pendingDevice, n, 0, 0);
  }

  /** A TxSink that sends as device `device` (one per device; reusable). */
  sink(device: number): TxSink {
    return {
      send: (port, departPs, wireLen, bytes, hdrOff, hdrLen, payloadOff, payloadLen) => this.send(device, port, departPs, wireLen, bytes, hdrOff, hdrLen, payloadOff, payloadLen),
      sendRecords: (mem, recsAt, head, n, ringEntries, psPerByte, txOverheadBytes, bodiesAt) => this.sendRecords(device, mem, recsAt, head, n, ringEntries, psPerByte, txOverheadBytes, bodiesAt),
    };
  }

  // ---- the event loop --------------------------------------------------------------------

  /** True while port `port` of device `device` is paused: its link into the fabric (PFC), as of the fabric's time. */
  portPaused(device: number, port: number): boolean {
    return this.pfc && this.core.fabricEpPaused(this.fab, device * this.ports + port) !== 0;
  }

  /** Time of the next event, Infinity when there is none. */
  nextEventPs(): number {
    this.flush();
    return this.core.fabricNextEvent(this.fab);
  }

  /** Runs every event before `endPs`; the fabric's time is then endPs. */
  runTo(endPs: number): void {
    this.flush();
    this.core.fabricRunTo(this.fab, endPs);
  }

  // ---- one partition of a run split over threads (partition.ts) ---------------------------

  /**
   * @internal Makes this fabric one partition's of a run split over threads: it runs the planes
   * of the ports `ports` marks (1 per port) beside the devices `devices` marks (1 per device).
   * Frames its devices send on another plane are then diverted (diverted), and frames on the
   * wire to another partition's device moved out (moveOut). Once per fabric.
   */
  partition(ports: Uint8Array, devices: Uint8Array): void {
    if (ports.length !== this.ports || devices.length !== this.devices) throw new RangeError(`a partition marks ${this.ports} ports and ${this.devices} devices`);
    this.flush();
    this.core.fabricPartition(this.fab);
    this.u8 = new Uint8Array(0);
    this.views();
    this.u8.set(ports, this.ptr(FAB.port_owned));
    this.u8.set(devices, this.ptr(FAB.dev_owned));
  }

  /** A partition buffer's records (`size` bytes each) and bodies, as views of the core's memory (valid until it next runs). */
  private partBuffer(field: number, size: number): { n: number; recs: Uint8Array; bodies: Uint8Array } {
    this.views();
    const b = this.ptr(field), dv = this.dv;
    const n = dv.getUint32(b + FBUF.n, true), recs = dv.getUint32(b + FBUF.recs, true), body = dv.getUint32(b + FBUF.body, true);
    return { n, recs: this.u8.subarray(recs, recs + n * size), bodies: this.u8.subarray(body, body + dv.getUint32(b + FBUF.body_n, true)) };
  }

  /**
   * @internal The frames this partition's devices sent on other partitions' planes since the
   * last call: PKT records (time: departure; src_device: sender) and their bodies, as views
   * of the core's memory valid until `clearDiverted`.
   */
  diverted(): { n: number; recs: Uint8Array; bodies: Uint8Array } {
    this.flush();
    return this.partBuffer(FAB.part_divert, PKT.SIZE);
  }

  /** @internal Empties the buffer `diverted` gave. */
  clearDiverted(): void {
    this.views();
    const b = this.ptr(FAB.part_divert);
    this.dv.setUint32(b + FBUF.n, 0, true);
    this.dv.setUint32(b + FBUF.body_n, 0, true);
  }

  /** @internal Another partition's `diverted` frames: those on this partition's planes enter. */
  ingestDiverted(n: number, recs: Uint8Array, bodies: Uint8Array): void {
    if (n === 0) return;
    this.flush();
    this.inbox(n, bodies.length);
    this.u8.set(recs, this.dv.getUint32(this.fab + FAB.inbox, true));
    if (bodies.length) this.u8.set(bodies, this.dv.getUint32(this.fab + FAB.inbox_body, true));
    this.core.fabricIngestDiverted(this.fab, n);
  }

  /**
   * @internal Moves out the frames on the wire to other partitions' devices: XFER records and
   * their bodies (views valid until the fabric next runs), and the earliest arrival among them.
   */
  moveOut(): { min: number; n: number; recs: Uint8Array; bodies: Uint8Array } {
    this.flush();
    const min = this.core.fabricMoveOut(this.fab);
    this.u8 = new Uint8Array(0);
    return { min, ...this.partBuffer(FAB.part_out, XFER.SIZE) };
  }

  /** @internal Another partition's `moveOut` frames: those for this partition's devices wait on their last hops here. */
  adopt(n: number, recs: Uint8Array, bodies: Uint8Array): void {
    if (n === 0) return;
    const b = this.core.fabricPartIn(this.fab, n, bodies.length) >>> 0;
    this.u8 = new Uint8Array(0);
    this.views();
    this.u8.set(recs, this.dv.getUint32(b + FBUF.recs, true));
    if (bodies.length) this.u8.set(bodies, this.dv.getUint32(b + FBUF.body, true));
    this.core.fabricAdopt(this.fab, n);
  }

  /**
   * @internal The counters a partition's fabric kept of its own planes and devices: the
   * totals, then per switch and per channel (counterSlots' order), as (slot, value) pairs of
   * those not 0, after the number of slots. Every partition's fabric has every link and switch,
   * each counted only where it runs, so adding them up (absorbCounters) gives the whole run's;
   * peaks are each partition's own, and the larger is kept. Pairs, not every slot: at 16,384
   * devices there are 10 M slots (82 MB), most of them 0 or another partition's.
   */
  counters(): Float64Array {
    this.flush();
    this.views();
    const out: number[] = [0];
    let k = 0;
    for (const { n, at, u32 } of this.counterSlots())
      for (let i = 0; i < n; i++, k++) {
        const v = u32 ? this.dv.getUint32(at(i), true) : this.dv.getFloat64(at(i), true);
        if (v !== 0) out.push(k, v);
      }
    out[0] = k;
    return Float64Array.from(out);
  }

  /** @internal Adds another partition's `counters` to this fabric's (the larger of two peaks). */
  absorbCounters(pairs: Float64Array): void {
    this.flush();
    this.views();
    const slots = this.counterSlots(), total = slots.reduce((s, x) => s + x.n, 0);
    if (pairs[0] !== total) throw new RangeError(`a partition's fabric has ${pairs[0]} counters, this one ${total}`);
    const dv = this.dv;
    let seg = 0, first = 0;
    for (let p = 1; p < pairs.length; p += 2) {
      const k = pairs[p]!, v = pairs[p + 1]!;
      while (k >= first + slots[seg]!.n) first += slots[seg++]!.n;
      const { at, u32, max } = slots[seg]!, where = at(k - first);
      const mine = u32 ? dv.getUint32(where, true) : dv.getFloat64(where, true);
      const sum = max ? Math.max(mine, v) : mine + v;
      if (u32) dv.setUint32(where, sum, true);
      else dv.setFloat64(where, sum, true);
    }
  }

  /** The counters a partition hands over (counters), in order: how many, the address of each, whether a u32 (else an f64), and whether a peak. */
  private counterSlots(): { n: number; at: (i: number) => number; u32?: boolean; max?: boolean }[] {
    const fab = this.fab, nCh = this.nCh, nSw = this.nSw;
    const table = (f: number, n: number, max = false) => ({ n, at: (i: number) => this.ptr(f) + 8 * i, max });
    const chan = (f: number, max = false) => ({ n: nCh, at: (c: number) => this.chanAt(c) + f, max });
    return [
      ...TOTAL_SUMS.map((f) => ({ n: 1, at: () => fab + f })),
      { n: NR, at: (r: number) => fab + FAB.drops + 8 * r },
      { n: 1, at: () => fab + FAB.pkt_peak, u32: true, max: true },
      { n: 1, at: () => fab + FAB.ev_peak, u32: true, max: true },
      table(FAB.ch_drops, nCh * NR), table(FAB.ch_marks, nCh), table(FAB.ch_pauses, nCh),
      table(FAB.sw_drops, nSw * NR), table(FAB.sw_marks, nSw), table(FAB.sw_pauses, nSw), table(FAB.buf_peak, nSw, true),
      chan(FCH.pkts), chan(FCH.bytes), chan(FCH.qpeak, true),
    ];
  }

  // ---- faults ----------------------------------------------------------------------------

  /** Sets link `link`'s loss, both directions (each with its own random stream and state). */
  setLoss(link: number, loss: LossSpec): void {
    this.checkLink(link);
    const r = loss.random ?? 0;
    if (!(r >= 0 && r <= 1)) throw new ConfigError(`links[${link}].loss.random`, `must be in [0, 1], got ${r}`);
    const ge = loss.gilbertElliott;
    const probs = ge ? [ge.pGoodToBad, ge.pBadToGood, ge.lossGood ?? 0, ge.lossBad ?? 1] : [0, 0, 0, 0];
    probs.forEach((v, i) => {
      if (!(v >= 0 && v <= 1)) throw new ConfigError(`links[${link}].loss.gilbertElliott.${["pGoodToBad", "pBadToGood", "lossGood", "lossBad"][i]}`, `must be in [0, 1], got ${v}`);
    });
    this.views();
    const dv = this.dv;
    for (const c of [2 * link, 2 * link + 1]) {
      const at = this.chanAt(c);
      dv.setFloat64(at + FCH.loss, probabilityThreshold(r), true);
      this.u8[this.ptr(FAB.ge_on) + c] = ge ? 1 : 0;
      this.u8[this.ptr(FAB.ge_bad) + c] = 0;
      dv.setUint8(at + FCH.lossy, r > 0 || ge ? 1 : 0);
      probs.forEach((v, i) => dv.setFloat64(this.ptr(FAB.ge_thr) + 8 * (4 * c + i), probabilityThreshold(v), true));
    }
  }

  /**
   * Link `link` fails at `downPs` and recovers at `upPs` (never, by default). Frames queued
   * for it, sent on it while it is down, or on the wire when it fails are lost ('link_down');
   * ECMP leaves it out from downPs + failureDetectionPs until upPs + failureDetectionPs.
   * Schedule a failure before frames that could be on the wire at downPs start: frames
   * already sent are judged by the outages known when they started.
   */
  failLink(link: number, downPs: number, upPs = Infinity): void {
    this.checkLink(link);
    if (!(downPs >= this.nowPs) || !(upPs > downPs)) throw new ConfigError(`links[${link}]`, `an outage needs now (${this.nowPs}) ≤ down (${downPs}) < up (${upPs})`);
    const o = this.outages.get(link) ?? [];
    o.push(downPs, upPs);
    const pairs: number[][] = [];
    for (let i = 0; i < o.length; i += 2) pairs.push([o[i], o[i + 1]]);
    pairs.sort((a, b) => a[0] - b[0]);
    const flat = pairs.flat();
    this.outages.set(link, flat);
    const at = this.core.fabricOutages(this.fab, link, pairs.length) >>> 0;
    this.views();
    new Float64Array(this.u8.buffer, at, flat.length).set(flat);
    this.core.fabricSchedule(this.fab, link, F_DOWN, downPs);
    if (upPs !== Infinity) this.core.fabricSchedule(this.fab, link, F_UP, upPs);
  }

  /** Every link of plane `plane` (host and fabric) fails at downPs and recovers at upPs. */
  failPlane(plane: number, downPs: number, upPs = Infinity): void {
    this.topology.links.forEach((L, i) => {
      if (L.plane === plane) this.failLink(i, downPs, upPs);
    });
  }

  /** True while link `link` is up. */
  linkIsUp(link: number): boolean {
    this.views();
    return this.u8[this.ptr(FAB.link_up) + link] === 1;
  }

  /** True while port `port` of device `device` has a working link (what its PHY would say). */
  portIsUp(device: number, port: number): boolean {
    const link = this.topology.hostLinkOf[device * this.ports + port];
    return link >= 0 && this.linkIsUp(link);
  }

  private checkLink(link: number): void {
    if (!Number.isInteger(link) || link < 0 || link >= this.topology.links.length) throw new RangeError(`no link ${link} (the topology has ${this.topology.links.length})`);
  }

  // ---- frames out ------------------------------------------------------------------------

  /** The earliest known arrival at device `device` not yet delivered, Infinity when none. */
  nextArrivalPs(device: number): number {
    if (this.pending !== 0) this.flush();
    this.views();
    return this.pendMin[device];
  }

  /**
   * Fills `batch` with every frame reaching device `device` before `endPs`, sorted by
   * (arrivalPs, source device, source port, sequence on that port), and returns how many.
   * Frames arriving later stay. The batch points into the fabric's memory (no copy): it is
   * valid until releaseDelivered(), which frees these frames. Without `columns` only its PKT
   * records are written (its columns are then stale).
   */
  takeArrivals(device: number, endPs: number, batch: ArrivalBatch, columns = true): number {
    this.flush();
    const n = this.core.fabricTake(this.fab, device, endPs, columns ? 1 : 0);
    this.views();
    batch.bind(this.dv, this.fab, n, this.full);
    batch.device = device;
    return n;
  }

  /** Frees the frames of the last takeArrivals (their batch is then stale). */
  releaseDelivered(): void {
    this.core.fabricRelease(this.fab);
  }

  // ---- observation -----------------------------------------------------------------------

  /** Bytes waiting in channel `c`'s queue (the frame being sent not included). */
  queueBytes(c: number): number {
    this.flush();
    if (!this.config.switch.pfc.enabled) this.core.fabricCatchUp(this.fab, c, this.nowPs);
    this.views();
    return this.dv.getFloat64(this.chanAt(c) + FCH.qbytes, true);
  }

  /** Frames inside the fabric (queued, on the wire, or waiting for delivery). */
  packetsInFlight(): number {
    this.flush();
    this.views();
    return this.dv.getUint32(this.fab + FAB.pkt_live, true);
  }

  /** The counters of the whole fabric: stats() without the per-switch and per-link records (cheap to ask often). */
  totals(): FabricTotals {
    // no channel's catching up (queueBytes) changes any of these
    this.flush();
    this.views();
    const dv = this.dv, nSw = this.nSw;
    const swMarks = new Float64Array(this.u8.buffer, this.ptr(FAB.sw_marks), nSw), swPauses = new Float64Array(this.u8.buffer, this.ptr(FAB.sw_pauses), nSw);
    let marks = 0, pauses = 0;
    for (let s = 0; s < nSw; s++) {
      marks += swMarks[s];
      pauses += swPauses[s];
    }
    return {
      nowPs: this.f64At(FAB.now_ps), injected: this.f64At(FAB.injected), delivered: this.f64At(FAB.delivered), hops: this.f64At(FAB.hops),
      drops: dropRecord(new Float64Array(this.u8.buffer, this.fab + FAB.drops, NR), 0), ecnMarks: marks, pfcPauses: pauses, pfcResumes: this.f64At(FAB.pfc_resumes),
      lateTx: this.f64At(FAB.late_tx), unorderedTx: this.f64At(FAB.unordered_tx), packetsPeak: dv.getUint32(this.fab + FAB.pkt_peak, true),
      eventsPeak: dv.getUint32(this.fab + FAB.ev_peak, true), events: this.f64At(FAB.ev_pushed),
    };
  }

  /** Frames and bytes channel `c` (2 x link + direction) has sent, as stats() gives them, without the objects stats() makes for every link. */
  channelSent(c: number): { packets: number; bytes: number } {
    if (!(c >= 0 && c < this.nCh)) throw new RangeError(`no channel ${c} in the fabric (it has ${this.nCh})`);
    this.views();
    const at = this.chanAt(c);
    return { packets: this.dv.getFloat64(at + FCH.pkts, true), bytes: this.dv.getFloat64(at + FCH.bytes, true) };
  }

  stats(): FabricStats {
    const t = this.topology, nCh = this.nCh, nSw = this.nSw;
    const totals = this.totals();
    const buf = this.u8.buffer, dv = this.dv;
    const col = (f: number, n: number) => new Float64Array(buf, this.ptr(f), n).slice();
    const chDrops = col(FAB.ch_drops, nCh * NR), chMarks = col(FAB.ch_marks, nCh), chPauses = col(FAB.ch_pauses, nCh);
    const swDrops = col(FAB.sw_drops, nSw * NR), swMarks = col(FAB.sw_marks, nSw), swPauses = col(FAB.sw_pauses, nSw);
    const bufCap = col(FAB.buf_cap, nSw), bufPeak = col(FAB.buf_peak, nSw);
    const chF = (c: number, f: number) => dv.getFloat64(this.chanAt(c) + f, true);
    const chI = (c: number, f: number) => dv.getInt32(this.chanAt(c) + f, true);
    const endName = (sw: number, L: (typeof t.links)[number]) => (sw >= 0 ? t.switches[sw].name : `dev${L.device}.port${L.port}`);
    const chan = (c: number, L: (typeof t.links)[number]): ChannelStats => ({
      from: endName(chI(c, FCH.src_sw), L), to: endName(chI(c, FCH.dst_sw), L),
      packets: chF(c, FCH.pkts), bytes: chF(c, FCH.bytes), drops: dropRecord(chDrops, c * NR),
      ecnMarks: chMarks[c], queuePeakBytes: chF(c, FCH.qpeak), pauses: chPauses[c],
    });
    const qPeakSw = new Float64Array(nSw);
    for (let c = 0; c < nCh; c++) {
      const s = chI(c, FCH.src_sw);
      if (s >= 0 && chF(c, FCH.qpeak) > qPeakSw[s]) qPeakSw[s] = chF(c, FCH.qpeak);
    }
    const linkUp = this.u8.slice(this.ptr(FAB.link_up), this.ptr(FAB.link_up) + this.nLinks);
    return {
      ...totals,
      switches: t.switches.map((S, s) => ({
        name: S.name, bufferBytes: bufCap[s], bufferPeakBytes: bufPeak[s], queuePeakBytes: qPeakSw[s],
        ecnMarks: swMarks[s], pfcPausesSent: swPauses[s], drops: dropRecord(swDrops, s * NR),
      })),
      links: t.links.map((L, l) => ({ id: l, name: L.name, up: linkUp[l] === 1, ab: chan(2 * l, L), ba: chan(2 * l + 1, L) })),
    };
  }
}

