// The fabric: links, switches and the one event queue that moves frames between device ports.
// State is typed arrays: a record per packet (packets.ts), columns per channel, per switch and
// per device port; the only objects are made when the fabric is built and by stats(). Time is
// passed in (runTo) and never read. docs/fabric.md describes the model.
//
// A frame's life. It enters at its device port's transmitter (the NIC's egress: no buffer
// limit, no marking) at the time the device began to send it. On every channel (one direction
// of a link) it waits in the transmitter's FIFO, then is serialised (wireLen +
// frameOverheadBytes at the link's rate) and propagates (the link's latency). A switch has it
// whole when its last bit arrives (store and forward) and after the switch latency routes it,
// admits it to the shared buffer (or drops it), marks it, and queues it at the output port.
// On the last hop the arrival time at the device is known when the last transmission starts;
// the frame then waits on its channel's list until the runner delivers it.
//
// Decisions made when a transmission starts: buffer bytes are released (a queue holds frames
// waiting, not the one on the wire); random and Gilbert–Elliott loss are drawn; a frame on a
// link that goes down (as scheduled) before its last bit arrives is lost.

import { EventQueue } from "./events.js";
import {
  PacketPool, HDR_SLOT_BYTES, grown, F_ARRIVE_PS, F_SEQ, F_NEXT_TIME, F_NEXT_KEY,
  I_NEXT, I_IN_CH, I_SRC_EP, I_DST_EP, I_HASH, I_WIRE_LEN, I_META, I_PAYLOAD, META_HDR_LEN, META_ECT, META_CE,
} from "./packets.js";
import { ArrivalBatch, type TxSink } from "./batch.js";
import { readFrame, newFrameFields, markCe, FRAME_OK } from "./frame.js";
import { IPV4_ECN } from "../generated/headers.js";
import { RandomStreams, STREAM, streamId, derive32, probabilityThreshold, hashTuple, ecmpPick } from "./rng.js";
import { resolveFabricConfig, type FabricConfig, type FabricOptions } from "./config.js";
import { type Topology } from "./topology.js";
import { ConfigError } from "../config.js";

/** Why the fabric dropped a frame; each is counted per channel, per switch and in total. */
export const DROP_REASONS = ["buffer_full", "port_cap", "no_route", "link_down", "random_loss", "ge_loss", "bad_frame"] as const;
export type DropReason = (typeof DROP_REASONS)[number];
const R_BUFFER = 0, R_PORT_CAP = 1, R_NO_ROUTE = 2, R_LINK_DOWN = 3, R_RANDOM = 4, R_GE = 5, R_BAD = 6;
const NR = DROP_REASONS.length;

// Events: kind in the low 3 bits, an index (device port, channel or fault) above. A frame
// has no event of its own: a device port's frames waiting to enter and a channel's frames on
// the wire are FIFOs (in time order, since a port sends one frame after another and a
// channel's latency is fixed), and only each FIFO's head has an event.
const EV_INJECT = 0, EV_ARRIVE = 1, EV_TX_DONE = 2, EV_PAUSE = 3, EV_RESUME = 4, EV_FAULT = 5;
const EV_BITS = 3, EV_MASK = 7;

const F_DOWN = 0, F_UP = 1, F_KNOWN_DOWN = 2, F_KNOWN_UP = 3;

const NONE = -1;

// A channel's state: one 128-byte record, as 16 float64 (cf[16c + C_*]) and 32 int32
// (ci[32c + CI_*]) over one buffer. A hop reads and writes some 20 fields of two channels;
// in a column per field each is a cache line of its own, and with thousands of channels
// and 10^5 packets in flight those lines do not stay in cache.
const C_BUSY = 0; //         the transmitter is busy until (ps)
const C_QBYTES = 1; //       bytes waiting in its queue (the frame on the wire not counted)
const C_DELAY = 2; //        after serialisation until the next holder has the frame: the
//                           link's latency, plus the switch latency into a switch
const C_LAT = 3; //          the link's latency
const C_GBPS = 4; //         the link's rate
const C_LOSS = 5; //         random loss threshold out of 2^32 (0: none)
const C_PKTS = 6; //         frames sent
const C_BYTES = 7; //        bytes sent
const C_QPEAK = 8; //        the largest the queue grew
const C_IN_BYTES = 9; //     PFC: bytes this channel brought into its switch, still there
const CI_QHEAD = 20; //      the queue, oldest first (linked by the packets' NEXT)
const CI_QTAIL = 21;
const CI_FLHEAD = 22; //     frames on the wire into a switch, oldest first
const CI_FLTAIL = 23;
const CI_SRC_SW = 24; //     the switch it leaves, -1 for a device port
const CI_DST_SW = 25; //     the switch it enters, -1 for a device port
const CI_DST_EP = 26; //     the device port it enters (device * ports + port), or -1
const CI_PAUSED = 27; //     1 while PFC holds its transmitter
const CI_DONE = 28; //       1 while a transmitter-finished event is pending
const CI_LOSSY = 29; //      1 with random or Gilbert–Elliott loss
const CI_WAIT_HEAD = 30; //  a device port without PFC: its frames waiting to start, a ring of
const CI_WAIT_COUNT = 31; // (start, bytes) in portWait[c] (see send)

const EMPTY = new Float64Array(0);

/**
 * The event key of frame `seq` of device port `ep`, for its entry and its arrivals at
 * switches: below every ordinary key, ordered by (device, port, frame number). So frames
 * meeting at one picosecond are taken in an order fixed by the frames (not by the order in
 * which devices were stepped or events scheduled), and before transmitters finishing then.
 */
const entryKey = (ep: number, seq: number): number => -(2 ** 52) + ep * 2 ** 24 + (seq & 0xff_ffff); // & is mod 2^24 below 2^53
const ROLE_LEAF = 0, ROLE_SPINE = 1;
const NOT_LOST = -1, LOST_ON_ENTRY = -2;

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
  /** the time every event before which has run */
  nowPs = 0;

  private readonly pool: PacketPool;
  private readonly events: EventQueue;
  private readonly rng: RandomStreams;
  private readonly full: boolean;
  private readonly overhead: number;
  private readonly fields = newFrameFields();
  /** a view of the buffer the last frame handed over lives in */
  private srcBuffer: ArrayBufferLike = new ArrayBuffer(0);
  private srcView = new DataView(this.srcBuffer);
  private srcWords: Uint32Array<ArrayBufferLike> = new Uint32Array(0);

  // channels: c = 2 * link + direction (0: end a → end b)
  private readonly nCh: number;
  private readonly cf: Float64Array;
  private readonly ci: Int32Array;
  /** per device port's channel, without PFC: frames handed over and not yet started, (start, bytes) */
  private readonly portWait: Float64Array[];
  private readonly geOn: Uint8Array;
  private readonly geBad: Uint8Array;
  /** PFC: 1 while this channel's sender is paused by the switch it enters */
  private readonly pauseSent: Uint8Array;
  /** per channel: pGoodToBad, pBadToGood, lossGood, lossBad as thresholds */
  private readonly geThr: Float64Array;
  private readonly chDrops: Float64Array;
  private readonly chMarks: Float64Array;
  private readonly chPauses: Float64Array;

  // links
  private readonly linkUp: Uint8Array;
  private readonly linkKnownUp: Uint8Array;
  /** per link with a scheduled outage: [down, up, down, up, ...] sorted */
  private readonly outages = new Map<number, number[]>();
  private readonly hasOutage: Uint8Array;
  private readonly faultLink: number[] = [];
  private readonly faultKind: number[] = [];

  // switches
  private readonly nSw: number;
  private readonly swRole: Uint8Array;
  private readonly swSeed: Uint32Array;
  private readonly swLocal: Int32Array;
  private readonly swPlane: Int32Array;
  private readonly bufUsed: Float64Array;
  private readonly bufCap: Float64Array;
  private readonly bufPeak: Float64Array;
  private readonly portCap: Float64Array;
  private readonly swDrops: Float64Array;
  private readonly swMarks: Float64Array;
  private readonly swPauses: Float64Array;
  private readonly ecnOn: boolean;
  private readonly kmin: number;
  private readonly kmax: number;
  private readonly pmax: number;
  private readonly pfcOn: boolean;
  private readonly xoff: number;
  private readonly xon: number;
  private readonly leaves: number;
  private readonly spines: number;
  private readonly firstSpine: number;
  /** spine s's downlink channel to leaf i of its plane: downCh[(s - firstSpine) * leaves + i] */
  private readonly downCh: Int32Array;
  /** ECMP group of leaf l towards leaf i of its plane: members grp[(l * leaves + i) * spines + k], count grpN[l * leaves + i] */
  private readonly grp: Int32Array;
  private readonly grpN: Int32Array;

  // device ports: ep = device * ports + port
  private readonly epUpCh: Int32Array;
  private readonly epLeaf: Int32Array;
  private readonly epDownCh: Int32Array;
  private readonly epSeq: Float64Array;
  private readonly lastDepart: Float64Array;
  /** frames handed over by a device port, waiting for their departure time */
  private readonly injHead: Int32Array;
  private readonly injTail: Int32Array;

  // Frames on their last hop wait on their channel's wire list (CI_FLHEAD) until delivered;
  // the list's head's arrival and key are kept here, so a delivery merges the lists of a
  // device's ports touching only the frames it takes.
  private readonly lastHeadPs: Float64Array;
  private readonly lastHeadKey: Float64Array;
  /** per device: its earliest known arrival not yet delivered */
  private readonly pendMin: Float64Array;
  /** frames of the last delivery, freed by releaseDelivered */
  private held = new Int32Array(256);
  private heldN = 0;

  private injected = 0;
  private delivered = 0;
  private hops = 0;
  private lateTx = 0;
  private unorderedTx = 0;
  private pfcResumes = 0;
  private readonly drops = new Float64Array(NR);

  constructor(topology: Topology, options: FabricOptions = {}) {
    const cfg = resolveFabricConfig(options);
    this.config = cfg;
    this.topology = topology;
    const t = topology;
    this.devices = t.devices;
    this.ports = t.ports;
    this.full = cfg.mode === "full";
    this.overhead = cfg.frameOverheadBytes;
    this.pool = new PacketPool(cfg.payloadSlotBytes, 4096);
    // most events are due within the longest hop: a full slot's serialisation plus latencies
    let horizon = 0;
    for (const L of t.links) horizon = Math.max(horizon, Math.ceil(((HDR_SLOT_BYTES + cfg.payloadSlotBytes + cfg.frameOverheadBytes) * 8000) / L.gbps) + L.latencyPs);
    this.events = new EventQueue(horizon + cfg.switch.latencyPs);

    const nLinks = t.links.length, nCh = 2 * nLinks, nSw = t.switches.length;
    this.nCh = nCh;
    this.nSw = nSw;
    this.cf = new Float64Array(16 * nCh);
    this.ci = new Int32Array(this.cf.buffer);
    this.portWait = Array.from({ length: nCh }, () => EMPTY);
    this.geOn = new Uint8Array(nCh);
    this.geBad = new Uint8Array(nCh);
    this.pauseSent = new Uint8Array(nCh);
    for (let c = 0; c < nCh; c++) for (const k of [CI_QHEAD, CI_QTAIL, CI_FLHEAD, CI_FLTAIL, CI_DST_EP]) this.ci[(c << 5) + k] = NONE;
    this.geThr = new Float64Array(4 * nCh);
    this.chDrops = new Float64Array(nCh * NR);
    this.chMarks = new Float64Array(nCh);
    this.chPauses = new Float64Array(nCh);
    this.linkUp = new Uint8Array(nLinks).fill(1);
    this.linkKnownUp = new Uint8Array(nLinks).fill(1);
    this.hasOutage = new Uint8Array(nLinks);

    const swLat = cfg.switch.latencyPs;
    for (let l = 0; l < nLinks; l++) {
      const L = t.links[l];
      for (let dir = 0; dir < 2; dir++) {
        const c = 2 * l + dir;
        this.cf[(c << 4) + C_GBPS] = L.gbps;
        this.cf[(c << 4) + C_LAT] = L.latencyPs;
        const from = dir === 0 ? L.aSwitch : L.bSwitch;
        const to = dir === 0 ? L.bSwitch : L.aSwitch;
        this.ci[(c << 5) + CI_SRC_SW] = from;
        this.ci[(c << 5) + CI_DST_SW] = to;
        if (to === NONE) this.ci[(c << 5) + CI_DST_EP] = L.device * t.ports + L.port;
        this.cf[(c << 4) + C_DELAY] = L.latencyPs + (to === NONE ? 0 : swLat);
      }
    }

    // switches
    this.swRole = new Uint8Array(nSw);
    this.swSeed = new Uint32Array(nSw);
    this.swLocal = new Int32Array(nSw);
    this.swPlane = new Int32Array(nSw);
    this.bufUsed = new Float64Array(nSw);
    this.bufCap = new Float64Array(nSw);
    this.bufPeak = new Float64Array(nSw);
    this.portCap = new Float64Array(nSw);
    this.swDrops = new Float64Array(nSw * NR);
    this.swMarks = new Float64Array(nSw);
    this.swPauses = new Float64Array(nSw);
    const swPorts = new Int32Array(nSw);
    for (const L of t.links) {
      if (L.aSwitch >= 0) swPorts[L.aSwitch]++;
      swPorts[L.bSwitch]++;
    }
    this.rng = new RandomStreams(nCh + nSw);
    for (let c = 0; c < nCh; c++) this.rng.seed(c, cfg.seed, streamId(STREAM.LINK_LOSS, c));
    for (let s = 0; s < nSw; s++) {
      const S = t.switches[s];
      this.swRole[s] = S.role === "leaf" ? ROLE_LEAF : ROLE_SPINE;
      this.swLocal[s] = S.index;
      this.swPlane[s] = S.plane;
      this.swSeed[s] = derive32(cfg.seed, streamId(STREAM.SWITCH_ECMP, s));
      this.rng.seed(nCh + s, cfg.seed, streamId(STREAM.SWITCH_ECN, s));
      this.bufCap[s] = cfg.switch.bufferBytesPerPort * swPorts[s];
      this.portCap[s] = Math.min(cfg.switch.portCapFraction * this.bufCap[s], cfg.switch.portCapBytes);
    }
    const e = cfg.switch.ecn, p = cfg.switch.pfc;
    this.ecnOn = e.enabled;
    this.kmin = e.kminBytes;
    this.kmax = e.kmaxBytes;
    this.pmax = e.pmax;
    this.pfcOn = p.enabled;
    this.xoff = p.xoffBytes;
    this.xon = p.xonBytes;

    // routing tables
    const leaves = t.leavesPerPlane, spines = t.spinesPerPlane;
    const firstSpine = t.planes * leaves;
    this.leaves = leaves;
    this.spines = spines;
    this.firstSpine = firstSpine;
    this.downCh = new Int32Array(t.planes * spines * leaves).fill(NONE);
    for (let l = 0; l < firstSpine; l++)
      for (let j = 0; j < spines; j++) {
        const link = t.fabricLinkOf[l * spines + j];
        if (link < 0) continue;
        this.downCh[(t.links[link].bSwitch - firstSpine) * leaves + this.swLocal[l]] = 2 * link + 1;
      }
    this.grp = new Int32Array(firstSpine * leaves * Math.max(1, spines));
    this.grpN = new Int32Array(firstSpine * leaves);
    for (let pl = 0; pl < t.planes; pl++) this.rebuildGroups(pl);

    const nEp = t.devices * t.ports;
    this.epUpCh = new Int32Array(nEp).fill(NONE);
    this.epDownCh = new Int32Array(nEp).fill(NONE);
    this.epLeaf = new Int32Array(nEp).fill(NONE);
    this.epSeq = new Float64Array(nEp);
    this.lastDepart = new Float64Array(nEp);
    this.injHead = new Int32Array(nEp).fill(NONE);
    this.injTail = new Int32Array(nEp).fill(NONE);
    for (let ep = 0; ep < nEp; ep++) {
      const link = t.hostLinkOf[ep];
      if (link < 0) continue;
      this.epUpCh[ep] = 2 * link;
      this.epDownCh[ep] = 2 * link + 1;
      this.epLeaf[ep] = t.links[link].bSwitch;
    }
    this.lastHeadPs = new Float64Array(nCh);
    this.lastHeadKey = new Float64Array(nCh);
    this.pendMin = new Float64Array(t.devices).fill(Infinity);
  }

  // ---- frames in -------------------------------------------------------------------------

  /**
   * A frame from port `port` of device `device`: see TxSink.send. Frames handed over in one
   * batch may come from the devices in any order: they enter the fabric ordered by
   * (departPs, device, port, order of hand-over on that port).
   */
  send(device: number, port: number, departPs: number, wireLen: number, bytes: Uint8Array, hdrOff: number, hdrLen: number, payloadOff = 0, payloadLen = 0): void {
    const pool = this.pool;
    if (!(device >= 0 && device < this.devices && port >= 0 && port < this.ports)) throw new RangeError(`no port ${port} of device ${device} in the fabric`);
    const ep = device * this.ports + port;
    if (hdrLen > HDR_SLOT_BYTES || hdrLen > wireLen || (this.full && payloadLen > pool.payloadSlotBytes)) {
      this.drops[R_BAD]++;
      return;
    }
    const f = this.fields;
    // read the headers where the endpoint has them (in cache), then copy them: reading
    // them back from the slot just written waits for the slot's cache line
    if (bytes.buffer !== this.srcBuffer) {
      this.srcBuffer = bytes.buffer;
      this.srcView = new DataView(bytes.buffer);
      this.srcWords = new Uint32Array(bytes.buffer, 0, bytes.buffer.byteLength >> 2);
    }
    if (readFrame(this.srcView, bytes.byteOffset + hdrOff, hdrLen, f) !== FRAME_OK) {
      this.drops[R_BAD]++;
      return;
    }
    const id = pool.alloc();
    const at = bytes.byteOffset + hdrOff, words = (hdrLen + 3) >> 2;
    if ((at & 3) === 0 && (at >> 2) + words <= this.srcWords.length) {
      // word-aligned headers (a device's rings): copy 32 bits at a time (a slot is 128 bytes)
      const from = at >> 2, to = (id * HDR_SLOT_BYTES) >> 2, hdr32 = pool.hdr32;
      for (let k = 0; k < words; k++) hdr32[to + k] = this.srcWords[from + k];
    } else pool.hdr.set(bytes.subarray(hdrOff, hdrOff + hdrLen), id * HDR_SLOT_BYTES); // a view, but faster than a byte loop
    const f64 = pool.f64, i32 = pool.i32, i = id << 4, d = id << 3;
    const ect = f.ecn === IPV4_ECN.ECT0 || f.ecn === IPV4_ECN.ECT1 ? META_ECT : 0;
    i32[i + I_META] = hdrLen | ect;
    i32[i + I_WIRE_LEN] = wireLen;
    if (this.full && payloadLen > 0) {
      const slot = pool.allocPayload(id, payloadLen); // may grow the slab: take pool.payload after it
      pool.payload.set(bytes.subarray(payloadOff, payloadOff + payloadLen), slot);
    }
    i32[i + I_SRC_EP] = ep;
    i32[i + I_DST_EP] = this.addressEp(f.dst);
    i32[i + I_HASH] = hashTuple(f.src, f.dst, f.sport, f.dport, f.proto, 0);
    if (departPs < this.nowPs) {
      this.lateTx++;
      departPs = this.nowPs;
    }
    if (departPs < this.lastDepart[ep]) {
      this.unorderedTx++;
      departPs = this.lastDepart[ep];
    }
    this.lastDepart[ep] = departPs;
    const seq = this.epSeq[ep]++;
    f64[d + F_SEQ] = seq;
    i32[i + I_NEXT] = NONE;
    i32[i + I_IN_CH] = NONE;
    if (!this.pfcOn) {
      // Without PFC nothing but the port's own frames and the fault schedule decides when
      // its transmitter starts a frame, so the frame goes on the wire now (its arrival event
      // keyed by the frame, as an entry would be), not through an entry event.
      this.injected++;
      const c = this.epUpCh[ep];
      if (c === NONE) {
        this.drops[R_NO_ROUTE]++;
        pool.release(id);
        return;
      }
      // the port's queue: the frames before it that start after it is handed over
      this.portCatchUp(c, departPs);
      const start = Math.max(departPs, this.cf[(c << 4) + C_BUSY]);
      const flushed = this.hasOutage[c >> 1] !== 0 ? this.lostWaiting(c >> 1, departPs, start) : NOT_LOST;
      if (flushed === LOST_ON_ENTRY) return this.dropAt(c, id, R_LINK_DOWN);
      if ((flushed >= 0 ? flushed : start) > departPs) this.portWaits(c, flushed >= 0 ? flushed : start, wireLen);
      if (flushed >= 0) this.dropAt(c, id, R_LINK_DOWN);
      else this.transmit(c, id, start);
      return;
    }
    // With PFC a pause may hold the transmitter: the frame enters at its departure time.
    const tail = this.injTail[ep];
    if (tail === NONE) {
      this.injHead[ep] = id;
      this.events.pushKeyed(departPs, entryKey(ep, seq), (ep << EV_BITS) | EV_INJECT);
    } else {
      i32[(tail << 4) + I_NEXT] = id;
      f64[(tail << 3) + F_NEXT_TIME] = departPs;
      f64[(tail << 3) + F_NEXT_KEY] = entryKey(ep, seq);
    }
    this.injTail[ep] = id;
  }

  /** A TxSink that sends as device `device` (one per device; reusable). */
  sink(device: number): TxSink {
    return { send: (port, departPs, wireLen, bytes, hdrOff, hdrLen, payloadOff, payloadLen) => this.send(device, port, departPs, wireLen, bytes, hdrOff, hdrLen, payloadOff, payloadLen) };
  }

  /** The device port (device * ports + port) an IPv4 address names (topology.portAddress), or -1. */
  private addressEp(addr: number): number {
    if (addr >>> 24 !== 10) return NONE;
    const port = (addr >>> 16) & 0xff, device = addr & 0xffff;
    return device < this.devices && port < this.ports ? device * this.ports + port : NONE;
  }

  // ---- the event loop --------------------------------------------------------------------

  /** Time of the next event, Infinity when there is none. */
  nextEventPs(): number {
    return this.events.nextTime();
  }

  /** Runs every event before `endPs`; the fabric's time is then endPs. */
  runTo(endPs: number): void {
    const events = this.events;
    for (;;) {
      const ev = events.popBefore(endPs);
      if (ev < 0) break;
      const now = events.lastTime;
      const x = ev >>> EV_BITS;
      switch (ev & EV_MASK) {
        case EV_ARRIVE: this.arrive(x, now); break;
        case EV_TX_DONE: this.txDone(x, now); break;
        case EV_INJECT: this.inject(x, now); break;
        case EV_PAUSE: this.pause(x); break;
        case EV_RESUME: this.resume(x, now); break;
        case EV_FAULT: this.fault(x, now); break;
      }
    }
    if (endPs > this.nowPs) this.nowPs = endPs;
  }

  /** The head frame of device port `ep` enters the fabric at its departure time. */
  private inject(ep: number, now: number): void {
    const f64 = this.pool.f64, i32 = this.pool.i32;
    const p = this.injHead[ep], i = p << 4, d = p << 3;
    const next = (this.injHead[ep] = i32[i + I_NEXT]);
    if (next === NONE) this.injTail[ep] = NONE;
    else this.events.pushKeyed(f64[d + F_NEXT_TIME], f64[d + F_NEXT_KEY], (ep << EV_BITS) | EV_INJECT);
    this.injected++;
    const c = this.epUpCh[ep];
    if (c === NONE) {
      this.drops[R_NO_ROUTE]++;
      this.pool.release(p);
      return;
    }
    this.enqueue(c, p, now);
  }

  /** The oldest frame on channel `cin` is in the switch at its end: route, admit, mark, queue. */
  private arrive(cin: number, now: number): void {
    const f64 = this.pool.f64, i32 = this.pool.i32, ci = this.ci, o = cin << 5;
    const p = ci[o + CI_FLHEAD], i = p << 4;
    const next = (ci[o + CI_FLHEAD] = i32[i + I_NEXT]);
    if (next === NONE) ci[o + CI_FLTAIL] = NONE;
    else this.events.pushKeyed(f64[(p << 3) + F_NEXT_TIME], f64[(p << 3) + F_NEXT_KEY], (cin << EV_BITS) | EV_ARRIVE);
    const s = ci[o + CI_DST_SW];
    i32[i + I_IN_CH] = cin;
    const out = this.route(s, i32[i + I_DST_EP], i32[i + I_HASH]);
    if (out === NONE) {
      this.dropAt(cin, p, R_NO_ROUTE);
      this.swDrops[s * NR + R_NO_ROUTE]++;
      return;
    }
    this.enqueue(out, p, now);
  }

  /** The output channel of switch `s` for a frame to device port `dst` whose tuple hashes to `hash`, or NONE. */
  private route(s: number, dst: number, hash: number): number {
    if (dst === NONE) return NONE;
    const dl = this.epLeaf[dst];
    if (dl === s) return this.epDownCh[dst];
    if (dl === NONE || this.swPlane[dl] !== this.swPlane[s]) return NONE;
    const leaves = this.leaves;
    if (this.swRole[s] === ROLE_SPINE) return this.downCh[(s - this.firstSpine) * leaves + this.swLocal[dl]];
    const g = s * leaves + this.swLocal[dl];
    const n = this.grpN[g];
    if (n === 0) return NONE;
    return this.grp[g * this.spines + ecmpPick(hash >>> 0, this.swSeed[s], n)];
  }

  /** Frame `p` joins the queue of channel `c` (or starts at once on an idle transmitter). */
  private enqueue(c: number, p: number, now: number): void {
    const i32 = this.pool.i32, i = p << 4, cf = this.cf, ci = this.ci, of = c << 4, oi = c << 5;
    const len = i32[i + I_WIRE_LEN];
    const s = ci[oi + CI_SRC_SW];
    if (this.linkUp[c >> 1] === 0) {
      this.dropAt(c, p, R_LINK_DOWN);
      return;
    }
    if (s !== NONE) {
      const used = this.bufUsed[s] + len;
      if (used > this.bufCap[s]) {
        this.dropAt(c, p, R_BUFFER);
        this.swDrops[s * NR + R_BUFFER]++;
        return;
      }
      const q = cf[of + C_QBYTES];
      if (q + len > this.portCap[s]) {
        this.dropAt(c, p, R_PORT_CAP);
        this.swDrops[s * NR + R_PORT_CAP]++;
        return;
      }
      if (this.ecnOn && q > this.kmin) this.maybeMark(s, c, p, q);
      this.bufUsed[s] = used;
      if (used > this.bufPeak[s]) this.bufPeak[s] = used;
      if (this.pfcOn) this.holdAtIngress(s, i32[i + I_IN_CH], len, now);
    }
    if (ci[oi + CI_QHEAD] === NONE && ci[oi + CI_PAUSED] === 0 && now >= cf[of + C_BUSY]) {
      this.transmit(c, p, now);
      return;
    }
    i32[i + I_NEXT] = NONE;
    if (ci[oi + CI_QHEAD] === NONE) ci[oi + CI_QHEAD] = p;
    else i32[(ci[oi + CI_QTAIL] << 4) + I_NEXT] = p;
    ci[oi + CI_QTAIL] = p;
    const q = (cf[of + C_QBYTES] += len);
    if (q > cf[of + C_QPEAK]) cf[of + C_QPEAK] = q;
    if (ci[oi + CI_PAUSED] === 0 && ci[oi + CI_DONE] === 0) {
      ci[oi + CI_DONE] = 1;
      this.events.push(Math.max(now, cf[of + C_BUSY]), (c << EV_BITS) | EV_TX_DONE);
    }
  }

  /** PFC: switch `s` now holds `len` more bytes that came in by channel `cin`; at XOFF it pauses that channel's sender. */
  private holdAtIngress(s: number, cin: number, len: number, now: number): void {
    const held = (this.cf[(cin << 4) + C_IN_BYTES] += len);
    if (held >= this.xoff && this.pauseSent[cin] === 0) {
      this.pauseSent[cin] = 1;
      this.swPauses[s]++;
      this.events.push(now + this.cf[(cin << 4) + C_LAT], (cin << EV_BITS) | EV_PAUSE);
    }
  }

  /**
   * RED-style marking on the instantaneous queue `q` (bytes waiting, before this frame). The
   * mark is kept in the record and written into the header (markCe) when the frame is
   * delivered: no switch reads the header, and a queued frame's header slot is out of cache
   * (its record line is not), so the header is touched once, by the delivery that reads it.
   */
  private maybeMark(s: number, c: number, p: number, q: number): void {
    const i32 = this.pool.i32, m = (p << 4) + I_META;
    if ((i32[m] & META_ECT) === 0) return;
    if (q < this.kmax) {
      const prob = (this.pmax * (q - this.kmin)) / (this.kmax - this.kmin);
      if (this.rng.next(this.nCh + s) >= prob * 4294967296) return;
    }
    i32[m] = (i32[m] & ~META_ECT) | META_CE;
    this.chMarks[c]++;
    this.swMarks[s]++;
  }

  private txDone(c: number, now: number): void {
    const ci = this.ci, oi = c << 5, busy = this.cf[(c << 4) + C_BUSY];
    ci[oi + CI_DONE] = 0;
    if (ci[oi + CI_PAUSED] !== 0 || ci[oi + CI_QHEAD] === NONE) return;
    if (now < busy) {
      ci[oi + CI_DONE] = 1;
      this.events.push(busy, (c << EV_BITS) | EV_TX_DONE);
      return;
    }
    this.transmit(c, this.unlink(c), now);
  }

  /** Takes the head frame off channel `c`'s queue. */
  private unlink(c: number): number {
    const i32 = this.pool.i32, ci = this.ci, oi = c << 5;
    const p = ci[oi + CI_QHEAD], i = p << 4;
    if ((ci[oi + CI_QHEAD] = i32[i + I_NEXT]) === NONE) ci[oi + CI_QTAIL] = NONE;
    this.cf[(c << 4) + C_QBYTES] -= i32[i + I_WIRE_LEN];
    return p;
  }

  /** Frame `p` leaves the switch's buffer (a NIC's has no limit) for the wire of channel `c`. */
  private release(c: number, p: number, now: number): void {
    const s = this.ci[(c << 5) + CI_SRC_SW];
    if (s === NONE) return;
    const i32 = this.pool.i32, i = p << 4;
    const len = i32[i + I_WIRE_LEN];
    this.bufUsed[s] -= len;
    if (!this.pfcOn) return;
    // PFC: at XON the sender on the frame's ingress resumes
    const cin = i32[i + I_IN_CH];
    if ((this.cf[(cin << 4) + C_IN_BYTES] -= len) <= this.xon && this.pauseSent[cin] !== 0) {
      this.pauseSent[cin] = 0;
      this.pfcResumes++;
      this.events.push(now + this.cf[(cin << 4) + C_LAT], (cin << EV_BITS) | EV_RESUME);
    }
  }

  /** Channel `c` begins to send frame `p` at `now` (the transmitter is idle). */
  private transmit(c: number, p: number, now: number): void {
    const f64 = this.pool.f64, i32 = this.pool.i32, i = p << 4, cf = this.cf, ci = this.ci, of = c << 4, oi = c << 5;
    const link = c >> 1;
    this.release(c, p, now);
    const len = i32[i + I_WIRE_LEN];
    const end = now + Math.ceil(((len + this.overhead) * 8000) / cf[of + C_GBPS]);
    cf[of + C_BUSY] = end;
    cf[of + C_PKTS]++;
    cf[of + C_BYTES] += len;
    this.hops++;
    if (ci[oi + CI_QHEAD] !== NONE && ci[oi + CI_DONE] === 0) {
      ci[oi + CI_DONE] = 1;
      this.events.push(end, (c << EV_BITS) | EV_TX_DONE);
    }
    if (ci[oi + CI_LOSSY] !== 0) {
      if (cf[of + C_LOSS] !== 0 && this.rng.next(c) < cf[of + C_LOSS]) return this.dropAt(c, p, R_RANDOM);
      if (this.geOn[c] !== 0 && this.geLost(c)) return this.dropAt(c, p, R_GE);
    }
    const tail = end + cf[of + C_LAT];
    if (this.hasOutage[link] !== 0 && this.failsDuring(link, now, tail)) return this.dropAt(c, p, R_LINK_DOWN);
    // join the channel's frames on the wire: into a switch, the list's head has an event;
    // to a device, the frames wait there for the runner
    i32[i + I_NEXT] = NONE;
    const ep = ci[oi + CI_DST_EP];
    const at = (f64[(p << 3) + F_ARRIVE_PS] = ep === NONE ? end + cf[of + C_DELAY] : tail);
    const key = entryKey(i32[i + I_SRC_EP], f64[(p << 3) + F_SEQ]);
    if (ci[oi + CI_FLHEAD] === NONE) {
      ci[oi + CI_FLHEAD] = p;
      if (ep === NONE) this.events.pushKeyed(at, key, (c << EV_BITS) | EV_ARRIVE);
      else {
        this.lastHeadPs[c] = at;
        this.lastHeadKey[c] = key;
        const d = (ep / this.ports) | 0;
        if (at < this.pendMin[d]) this.pendMin[d] = at;
      }
    } else {
      const t = ci[oi + CI_FLTAIL];
      i32[(t << 4) + I_NEXT] = p;
      f64[(t << 3) + F_NEXT_TIME] = at;
      f64[(t << 3) + F_NEXT_KEY] = key;
    }
    ci[oi + CI_FLTAIL] = p;
  }

  /** One Gilbert–Elliott step of channel `c`: loss drawn in the current state, then the state moves. */
  private geLost(c: number): boolean {
    const g = 4 * c, bad = this.geBad[c];
    const lossThr = this.geThr[g + 2 + bad];
    const lost = lossThr >= 4294967296 || (lossThr > 0 && this.rng.next(c) < lossThr);
    if (this.rng.next(c) < this.geThr[g + bad]) this.geBad[c] = bad ^ 1;
    return lost;
  }

  /**
   * By the outage schedule, is a frame that joins the queue of link `link` at `joined` and
   * would start at `start` lost before it starts? LOST_ON_ENTRY if the link went down before
   * it joined and is not up again (an entry at the recovery's picosecond comes before it);
   * the time of the failure if the link fails while it waits (the failure flushes the queue;
   * a failure at its start comes first, unless it did not wait); NOT_LOST otherwise. What
   * the event loop does with a frame that enters by an event, for the frames entering at
   * hand-over.
   */
  private lostWaiting(link: number, joined: number, start: number): number {
    const o = this.outages.get(link)!;
    for (let i = 0; i < o.length; i += 2) {
      if (o[i] < joined && joined <= o[i + 1]) return LOST_ON_ENTRY;
      if (o[i] >= joined && (o[i] < start || (o[i] === start && start > joined))) return o[i];
    }
    return NOT_LOST;
  }

  /** A frame of `len` bytes waits in device port channel `c`'s queue until `until`. */
  private portWaits(c: number, until: number, len: number): void {
    const ci = this.ci, cf = this.cf, oi = c << 5, of = c << 4;
    let ring = this.portWait[c];
    const n = ci[oi + CI_WAIT_COUNT];
    if (2 * n === ring.length) {
      // grow (rarely: only a device handing over frames faster than its link sends them)
      const bigger = new Float64Array(Math.max(64, 2 * ring.length)), head = ci[oi + CI_WAIT_HEAD], cap = ring.length >> 1;
      for (let k = 0; k < n; k++) {
        bigger[2 * k] = ring[2 * ((head + k) & (cap - 1))];
        bigger[2 * k + 1] = ring[2 * ((head + k) & (cap - 1)) + 1];
      }
      ci[oi + CI_WAIT_HEAD] = 0;
      ring = this.portWait[c] = bigger;
    }
    const at = (ci[oi + CI_WAIT_HEAD] + n) & ((ring.length >> 1) - 1);
    ring[2 * at] = until;
    ring[2 * at + 1] = len;
    ci[oi + CI_WAIT_COUNT] = n + 1;
    const q = (cf[of + C_QBYTES] += len);
    if (q > cf[of + C_QPEAK]) cf[of + C_QPEAK] = q;
  }

  /** Removes from device port channel `c`'s queue the frames that started before `t` (one starting at `t` still counts). */
  private portCatchUp(c: number, t: number): void {
    const ci = this.ci, oi = c << 5;
    let n = ci[oi + CI_WAIT_COUNT];
    if (n === 0) return;
    const ring = this.portWait[c], mask = (ring.length >> 1) - 1;
    let head = ci[oi + CI_WAIT_HEAD];
    while (n > 0 && ring[2 * head] < t) {
      this.cf[(c << 4) + C_QBYTES] -= ring[2 * head + 1];
      head = (head + 1) & mask;
      n--;
    }
    ci[oi + CI_WAIT_HEAD] = head;
    ci[oi + CI_WAIT_COUNT] = n;
  }

  /** True when an outage of link `link` begins during [from, to]: a frame on the wire then is lost. */
  private failsDuring(link: number, from: number, to: number): boolean {
    const o = this.outages.get(link)!;
    for (let i = 0; i < o.length; i += 2) if (o[i] >= from && o[i] <= to) return true;
    return false;
  }

  private dropAt(c: number, p: number, reason: number): void {
    this.chDrops[c * NR + reason]++;
    this.drops[reason]++;
    this.pool.release(p);
  }

  private pause(c: number): void {
    this.ci[(c << 5) + CI_PAUSED] = 1;
    this.chPauses[c]++;
  }

  private resume(c: number, now: number): void {
    this.ci[(c << 5) + CI_PAUSED] = 0;
    if (this.ci[(c << 5) + CI_QHEAD] !== NONE && this.ci[(c << 5) + CI_DONE] === 0) {
      this.ci[(c << 5) + CI_DONE] = 1;
      this.events.push(Math.max(now, this.cf[(c << 4) + C_BUSY]), (c << EV_BITS) | EV_TX_DONE);
    }
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
    for (const c of [2 * link, 2 * link + 1]) {
      this.cf[(c << 4) + C_LOSS] = probabilityThreshold(r);
      this.geOn[c] = ge ? 1 : 0;
      this.geBad[c] = 0;
      this.ci[(c << 5) + CI_LOSSY] = r > 0 || ge ? 1 : 0;
      probs.forEach((v, i) => (this.geThr[4 * c + i] = probabilityThreshold(v)));
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
    this.outages.set(link, pairs.flat());
    this.hasOutage[link] = 1;
    this.schedule(link, F_DOWN, downPs);
    if (upPs !== Infinity) this.schedule(link, F_UP, upPs);
  }

  /** Every link of plane `plane` (host and fabric) fails at downPs and recovers at upPs. */
  failPlane(plane: number, downPs: number, upPs = Infinity): void {
    this.topology.links.forEach((L, i) => {
      if (L.plane === plane) this.failLink(i, downPs, upPs);
    });
  }

  /** True while link `link` is up. */
  linkIsUp(link: number): boolean {
    return this.linkUp[link] === 1;
  }

  /** True while port `port` of device `device` has a working link (what its PHY would say). */
  portIsUp(device: number, port: number): boolean {
    const link = this.topology.hostLinkOf[device * this.ports + port];
    return link >= 0 && this.linkUp[link] === 1;
  }

  private checkLink(link: number): void {
    if (!Number.isInteger(link) || link < 0 || link >= this.topology.links.length) throw new RangeError(`no link ${link} (the topology has ${this.topology.links.length})`);
  }

  private schedule(link: number, kind: number, atPs: number): void {
    const f = this.faultLink.length;
    this.faultLink.push(link);
    this.faultKind.push(kind);
    this.events.push(atPs, (f << EV_BITS) | EV_FAULT);
  }

  private fault(f: number, now: number): void {
    const link = this.faultLink[f], kind = this.faultKind[f];
    const detect = this.config.failureDetectionPs;
    if (kind === F_DOWN || kind === F_UP) {
      this.linkUp[link] = kind === F_UP ? 1 : 0;
      if (kind === F_DOWN) for (const c of [2 * link, 2 * link + 1]) this.flush(c, now);
      if (detect === 0) this.known(link, kind === F_UP);
      else this.schedule(link, kind === F_UP ? F_KNOWN_UP : F_KNOWN_DOWN, now + detect);
    } else this.known(link, kind === F_KNOWN_UP);
  }

  /** Drops every frame queued on channel `c` (its link went down). */
  private flush(c: number, now: number): void {
    while (this.ci[(c << 5) + CI_QHEAD] !== NONE) {
      const p = this.unlink(c);
      this.release(c, p, now);
      this.dropAt(c, p, R_LINK_DOWN);
    }
  }

  private known(link: number, up: boolean): void {
    this.linkKnownUp[link] = up ? 1 : 0;
    const L = this.topology.links[link];
    if (L.tier === "fabric") this.rebuildGroups(L.plane);
  }

  /** ECMP groups of plane `pl`: leaf → leaf i over every spine both links to which are known up. */
  private rebuildGroups(pl: number): void {
    const t = this.topology, leaves = t.leavesPerPlane, spines = t.spinesPerPlane;
    for (let a = 0; a < leaves; a++) {
      const la = pl * leaves + a;
      for (let b = 0; b < leaves; b++) {
        const lb = pl * leaves + b, g = la * leaves + b;
        let n = 0;
        for (let j = 0; j < spines; j++) {
          const up = t.fabricLinkOf[la * spines + j], down = t.fabricLinkOf[lb * spines + j];
          if (up >= 0 && down >= 0 && this.linkKnownUp[up] === 1 && this.linkKnownUp[down] === 1) this.grp[g * spines + n++] = 2 * up;
        }
        this.grpN[g] = n;
      }
    }
  }

  // ---- frames out ------------------------------------------------------------------------

  /** The earliest known arrival at device `device` not yet delivered, Infinity when none. */
  nextArrivalPs(device: number): number {
    return this.pendMin[device];
  }

  /**
   * Fills `batch` with every frame reaching device `device` before `endPs`, sorted by
   * (arrivalPs, source device, source port, sequence on that port), and returns how many.
   * Frames arriving later stay. The batch points into the fabric's own slabs (no copy): it
   * is valid until releaseDelivered(), which frees these frames.
   */
  takeArrivals(device: number, endPs: number, batch: ArrivalBatch): number {
    this.releaseDelivered();
    batch.device = device;
    batch.n = 0;
    if (this.pendMin[device] >= endPs) return 0;
    const f64 = this.pool.f64, i32 = this.pool.i32, ci = this.ci, ports = this.ports;
    const headPs = this.lastHeadPs, headKey = this.lastHeadKey;
    // merge the due frames of the device's ports' last-hop lists in (arrival, key) order
    let n = 0;
    for (;;) {
      let best = NONE;
      for (let ep = device * ports; ep < (device + 1) * ports; ep++) {
        const c = this.epDownCh[ep];
        if (c === NONE || ci[(c << 5) + CI_FLHEAD] === NONE || headPs[c] >= endPs) continue;
        if (best === NONE || headPs[c] < headPs[best] || (headPs[c] === headPs[best] && headKey[c] < headKey[best])) best = c;
      }
      if (best === NONE) break;
      const p = ci[(best << 5) + CI_FLHEAD];
      const next = (ci[(best << 5) + CI_FLHEAD] = i32[(p << 4) + I_NEXT]);
      if (next === NONE) ci[(best << 5) + CI_FLTAIL] = NONE;
      else {
        headPs[best] = f64[(p << 3) + F_NEXT_TIME];
        headKey[best] = f64[(p << 3) + F_NEXT_KEY];
      }
      if (n === this.held.length) this.held = grown(this.held, 2 * n);
      this.held[n++] = p;
    }
    this.heldN = n;
    let min = Infinity;
    for (let ep = device * ports; ep < (device + 1) * ports; ep++) {
      const c = this.epDownCh[ep];
      if (c !== NONE && ci[(c << 5) + CI_FLHEAD] !== NONE && headPs[c] < min) min = headPs[c];
    }
    this.pendMin[device] = min;
    const pool = this.pool, ids = this.held;
    batch.reserve(n);
    batch.hdr = pool.hdr;
    batch.payload = pool.payload;
    for (let k = 0; k < n; k++) {
      const p = ids[k], i = p << 4, d = p << 3;
      const src = i32[i + I_SRC_EP];
      batch.arrivalPs[k] = f64[d + F_ARRIVE_PS];
      batch.port[k] = i32[i + I_DST_EP] % ports;
      batch.srcDevice[k] = (src / ports) | 0;
      batch.srcPort[k] = src % ports;
      batch.seq[k] = f64[d + F_SEQ];
      batch.wireLen[k] = i32[i + I_WIRE_LEN];
      batch.hdrOff[k] = p * HDR_SLOT_BYTES;
      const meta = i32[i + I_META];
      batch.hdrLen[k] = meta & META_HDR_LEN;
      if ((meta & META_CE) !== 0) markCe(pool.view, p * HDR_SLOT_BYTES);
      const slot = i32[i + I_PAYLOAD];
      batch.payloadOff[k] = slot === NONE ? 0 : slot * pool.payloadSlotBytes;
      batch.payloadLen[k] = slot === NONE ? 0 : pool.payloadLen[slot];
    }
    batch.n = n;
    this.delivered += n;
    return n;
  }

  /** Frees the frames of the last takeArrivals (their batch is then stale). */
  releaseDelivered(): void {
    for (let k = 0; k < this.heldN; k++) this.pool.release(this.held[k]);
    this.heldN = 0;
  }

  // ---- observation -----------------------------------------------------------------------

  /** Bytes waiting in channel `c`'s queue (the frame being sent not included). */
  queueBytes(c: number): number {
    if (!this.pfcOn) this.portCatchUp(c, this.nowPs);
    return this.cf[(c << 4) + C_QBYTES];
  }

  /** Frames inside the fabric (queued, on the wire, or waiting for delivery). */
  packetsInFlight(): number {
    return this.pool.live;
  }

  stats(): FabricStats {
    const t = this.topology;
    if (!this.pfcOn) for (let c = 0; c < this.nCh; c++) this.portCatchUp(c, this.nowPs);
    const endName = (sw: number, L: (typeof t.links)[number]) => (sw >= 0 ? t.switches[sw].name : `dev${L.device}.port${L.port}`);
    const chan = (c: number, L: (typeof t.links)[number]): ChannelStats => ({
      from: endName(this.ci[(c << 5) + CI_SRC_SW], L), to: endName(this.ci[(c << 5) + CI_DST_SW], L),
      packets: this.cf[(c << 4) + C_PKTS], bytes: this.cf[(c << 4) + C_BYTES], drops: dropRecord(this.chDrops, c * NR),
      ecnMarks: this.chMarks[c], queuePeakBytes: this.cf[(c << 4) + C_QPEAK], pauses: this.chPauses[c],
    });
    const qPeakSw = new Float64Array(this.nSw);
    for (let c = 0; c < this.nCh; c++) {
      const s = this.ci[(c << 5) + CI_SRC_SW];
      if (s >= 0 && this.cf[(c << 4) + C_QPEAK] > qPeakSw[s]) qPeakSw[s] = this.cf[(c << 4) + C_QPEAK];
    }
    let marks = 0, pauses = 0;
    for (let s = 0; s < this.nSw; s++) {
      marks += this.swMarks[s];
      pauses += this.swPauses[s];
    }
    return {
      nowPs: this.nowPs, injected: this.injected, delivered: this.delivered, hops: this.hops,
      drops: dropRecord(this.drops, 0), ecnMarks: marks, pfcPauses: pauses, pfcResumes: this.pfcResumes,
      lateTx: this.lateTx, unorderedTx: this.unorderedTx, packetsPeak: this.pool.peak, eventsPeak: this.events.peak, events: this.events.pushed,
      switches: t.switches.map((S, s) => ({
        name: S.name, bufferBytes: this.bufCap[s], bufferPeakBytes: this.bufPeak[s], queuePeakBytes: qPeakSw[s],
        ecnMarks: this.swMarks[s], pfcPausesSent: this.swPauses[s], drops: dropRecord(this.swDrops, s * NR),
      })),
      links: t.links.map((L, l) => ({ id: l, name: L.name, up: this.linkUp[l] === 1, ab: chan(2 * l, L), ba: chan(2 * l + 1, L) })),
    };
  }
}
