// The fabric's parameters: every number a named field with its default and where it comes
// from (docs/fabric.md repeats the table). resolveFabricConfig fills defaults and refuses a
// value out of range with a ConfigError naming its path.

import { ConfigError } from "../config.js";

export type PayloadMode = "timing" | "full";

/** Payload slot bytes unless configured: a 4096 B payload, pad and ICRC, with room to spare. */
export const PAYLOAD_SLOT_BYTES_DEFAULT = 4608;

/** RED-style marking on the instantaneous output queue (RFC 3168 CE; DCQCN's switch side). */
/** RED-style ECN marking on a switch's instantaneous output queue (RFC 3168 CE; DCQCN's switch side). */
export interface EcnConfig {
  /** mark ECN-capable frames */
  enabled: boolean;
  /** at or below: never mark */
  kminBytes: number;
  /** at or above: always mark */
  kmaxBytes: number;
  /** marking probability just below kmax (linear from 0 at kmin) */
  pmax: number;
}

/** IEEE 802.1Qbb priority flow control, one class, per ingress port. */
/** IEEE 802.1Qbb priority flow control, one class, per ingress port. */
export interface PfcConfig {
  /** pause senders when an ingress holds too much */
  enabled: boolean;
  /** bytes from one ingress held in the switch at which it pauses the sender */
  xoffBytes: number;
  /** bytes at or below which a paused ingress resumes the sender */
  xonBytes: number;
}

/** Every switch's parameters. */
export interface SwitchConfig {
  /** store-and-forward pipeline: from the last bit in to eligible for the output queue */
  latencyPs: number;
  /** shared buffer per port of the switch; the switch's buffer is this × its ports */
  bufferBytesPerPort: number;
  /** a port's queue may hold at most min(portCapFraction × buffer, portCapBytes) */
  portCapFraction: number;
  /** a port's queue may hold at most this many bytes (Infinity: no cap but the fraction) */
  portCapBytes: number;
  /** ECN marking */
  ecn: EcnConfig;
  /** priority flow control */
  pfc: PfcConfig;
}

export interface FabricConfig {
  /** the scenario seed every random stream of the fabric derives from */
  seed: number;
  /** full: payload bytes travel; timing: headers and lengths only */
  mode: PayloadMode;
  /** bytes a link spends per frame beyond wireLen: FCS, preamble and SFD, inter-frame gap */
  frameOverheadBytes: number;
  /** from a link's failure or recovery until the switches' ECMP groups know it */
  failureDetectionPs: number;
  /** the largest frame tail (bytes after the header slot) `full` mode carries */
  payloadSlotBytes: number;
  switch: SwitchConfig;
}

/** Switch parameters as given: any subset, the defaults for the rest. */
export type SwitchOptions = Partial<Omit<SwitchConfig, "ecn" | "pfc">> & {
  /** ECN marking, any subset of its fields */
  ecn?: Partial<EcnConfig>;
  /** priority flow control, any subset of its fields */
  pfc?: Partial<PfcConfig>;
};

export type FabricOptions = Partial<Omit<FabricConfig, "switch">> & {
  switch?: SwitchOptions;
};

export const FABRIC_DEFAULTS: FabricConfig = {
  seed: 1,
  mode: "timing",
  // IEEE 802.3: 4 B FCS + 7 B preamble + 1 B SFD + 12 B minimum inter-packet gap
  frameOverheadBytes: 24,
  // instant: switches learn a failure when it happens (loss of signal); set it to model
  // BFD or routing convergence
  failureDetectionPs: 0,
  payloadSlotBytes: PAYLOAD_SLOT_BYTES_DEFAULT,
  switch: {
    // 51.2 Tb/s Ethernet switch ASICs quote port-to-port latencies of a few hundred ns
    latencyPs: 400_000,
    // Broadcom Tomahawk 5: 165.2 MB of shared packet buffer for 64 × 800G ports
    bufferBytesPerPort: 2_581_250,
    portCapFraction: 1,
    portCapBytes: Infinity,
    // DCQCN (Zhu et al., SIGCOMM 2015, §5): Kmin 5 KB, Kmax 200 KB, Pmax 1 % (chosen for 40 Gb/s)
    ecn: { enabled: true, kminBytes: 5_000, kmaxBytes: 200_000, pmax: 0.01 },
    // off by default (MetaRoCE runs lossy); XOFF above one 800 Gb/s × 1.2 µs round trip of
    // leaf-spine in-flight bytes (120 KB), XON at half of it
    pfc: { enabled: false, xoffBytes: 131_072, xonBytes: 65_536 },
  },
};

function num(path: string, v: number, lo: number, hi: number, integer = false): number {
  if (typeof v !== "number" || Number.isNaN(v) || v < lo || v > hi || (integer && Number.isFinite(v) && !Number.isInteger(v)))
    throw new ConfigError(path, `must be ${integer ? "an integer" : "a number"} in [${lo}, ${hi}], got ${v}`);
  return v;
}

/** `o` without its undefined fields: a field given as undefined takes its default. */
function given<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** The full configuration for `o`: defaults filled in, every field checked. */
export function resolveFabricConfig(o: FabricOptions = {}): FabricConfig {
  const d = FABRIC_DEFAULTS;
  const s = o.switch ?? {};
  const c: FabricConfig = {
    ...d, ...given(o),
    switch: { ...d.switch, ...given(s), ecn: { ...d.switch.ecn, ...given(s.ecn ?? {}) }, pfc: { ...d.switch.pfc, ...given(s.pfc ?? {}) } },
  };
  num("seed", c.seed, 0, Number.MAX_SAFE_INTEGER, true);
  if (c.mode !== "timing" && c.mode !== "full") throw new ConfigError("mode", `must be "timing" or "full", got ${JSON.stringify(c.mode)}`);
  num("frameOverheadBytes", c.frameOverheadBytes, 0, 1024, true);
  num("failureDetectionPs", c.failureDetectionPs, 0, 1e15, true);
  num("payloadSlotBytes", c.payloadSlotBytes, 64, 1 << 20, true);
  num("switch.latencyPs", c.switch.latencyPs, 0, 1e12, true);
  num("switch.bufferBytesPerPort", c.switch.bufferBytesPerPort, 0, 1e12);
  num("switch.portCapFraction", c.switch.portCapFraction, 0, 1);
  num("switch.portCapBytes", c.switch.portCapBytes, 0, Infinity);
  const e = c.switch.ecn;
  num("switch.ecn.kminBytes", e.kminBytes, 0, 1e12);
  num("switch.ecn.kmaxBytes", e.kmaxBytes, e.kminBytes, 1e12);
  num("switch.ecn.pmax", e.pmax, 0, 1);
  const p = c.switch.pfc;
  num("switch.pfc.xoffBytes", p.xoffBytes, 0, 1e12);
  num("switch.pfc.xonBytes", p.xonBytes, 0, p.xoffBytes);
  return c;
}
