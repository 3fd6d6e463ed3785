// Addresses and topologies of the fabric: which device port has which IPv4 address and MAC,
// and the builders that say which switches exist and which links join what. A Topology is
// plain data, made once; the Fabric (fabric.ts) turns it into typed arrays and routing tables.
//
// Link ends: a host link joins a device port (end a) to a leaf (end b); a fabric link joins a
// leaf (end a) to a spine (end b). Link L carries two directed channels: 2L from a to b, 2L+1
// from b to a, each with its own transmitter, queue, loss stream and counters.

import { ConfigError, configDefault } from "../config.js";
import { macForIpv4 } from "../wire/rocev2.js";

/** Ports per device unless a topology says otherwise: the config's (layouts/config.json ports: 12 × 800 Gb/s). */
export const PORTS_DEFAULT = configDefault("ports");

/**
 * The one addressing rule: port p of device d has the IPv4 address 10.p.(d >> 8).(d & 255),
 * so the second octet is the port (and with it the plane) and the last two are the device
 * (devices 0..65535, ports 0..255). Written once here; everything else calls these.
 */
export function portAddress(device: number, port: number): number {
  // 10.p.(d >> 8).(d & 255) is the device number in the low 16 bits
  return ((10 << 24) | (port << 16) | device) >>> 0;
}

/** The device and port an address names under `portAddress`, or null when it names none. */
export function addressPort(addr: number): { device: number; port: number } | null {
  if (addr >>> 24 !== 10) return null;
  return { device: addr & 0xffff, port: (addr >>> 16) & 0xff };
}

/**
 * The MAC of port p of device d: host/wire's rule for an address (macForIpv4), locally
 * administered unicast 02:00 followed by the IPv4 address: 02:00:0a:pp:dd:dd.
 */
export function portMac(device: number, port: number): number {
  return macForIpv4(portAddress(device, port));
}

/** "10.3.0.17" for an address as u32. */
export function formatIpv4(addr: number): string {
  return [addr >>> 24, (addr >>> 16) & 255, (addr >>> 8) & 255, addr & 255].join(".");
}

/** One direction's physical parameters, and a link's. */
export interface LinkSpec {
  /** line rate, Gb/s (bits per ns) */
  gbps: number;
  /** propagation and PHY latency, ps: from the last bit sent to the last bit received, minus serialisation */
  latencyPs: number;
}

/**
 * Device port ↔ leaf: 800 Gb/s (DESIGN §1); 200 ns ≈ a 3 m copper cable (≈ 15 ns at 5 ns/m)
 * plus 800GBASE PCS/PMA and RS(544,514) FEC at both ends (order 90 ns each). Also the
 * single-switch builder's link.
 */
export const HOST_LINK_DEFAULT: LinkSpec = { gbps: 800, latencyPs: 200_000 };
/** Leaf ↔ spine: 800 Gb/s; 600 ns ≈ 100 m of fibre (500 ns) plus PHY and FEC. */
export const FABRIC_LINK_DEFAULT: LinkSpec = { gbps: 800, latencyPs: 600_000 };

export type SwitchRole = "leaf" | "spine";

export interface TopoSwitch {
  name: string;
  role: SwitchRole;
  plane: number;
  /** index among the switches of its role in its plane */
  index: number;
}

export type LinkTier = "host" | "fabric";

export interface TopoLink {
  name: string;
  tier: LinkTier;
  plane: number;
  /** end a: a switch id, or -1 for a device port (host links) */
  aSwitch: number;
  /** end b: always a switch id */
  bSwitch: number;
  /** for host links: the device and port at end a; -1 otherwise */
  device: number;
  port: number;
  gbps: number;
  latencyPs: number;
}

export interface Topology {
  kind: "single-switch" | "leaf-spine";
  devices: number;
  ports: number;
  planes: number;
  /** the plane of each port index; -1: the port is not connected */
  portPlane: readonly number[];
  leavesPerPlane: number;
  spinesPerPlane: number;
  /** leaves (plane by plane), then spines (plane by plane) */
  switches: TopoSwitch[];
  /** host links in (device, port) order, then fabric links (plane, leaf, spine) */
  links: TopoLink[];
  /** link id of device port ep = device * ports + port, or -1 */
  hostLinkOf: Int32Array;
  /** link id of leaf l's uplink to spine s of its plane: fabricLinkOf[l * spinesPerPlane + s] */
  fabricLinkOf: Int32Array;
}

/** The switch id of leaf `leaf` of plane `plane`. */
export const leafId = (t: Topology, plane: number, leaf: number): number => plane * t.leavesPerPlane + leaf;
/** The switch id of spine `spine` of plane `plane`. */
export const spineId = (t: Topology, plane: number, spine: number): number =>
  t.planes * t.leavesPerPlane + plane * t.spinesPerPlane + spine;
/** The link id of port `port` of device `device`, or -1 when the port is not connected. */
export const hostLink = (t: Topology, device: number, port: number): number => t.hostLinkOf[device * t.ports + port];
/** The link id between leaf `leaf` and spine `spine` of plane `plane`. */
export const fabricLink = (t: Topology, plane: number, leaf: number, spine: number): number =>
  t.fabricLinkOf[leafId(t, plane, leaf) * t.spinesPerPlane + spine];

function intIn(path: string, v: number, lo: number, hi: number): number {
  if (!Number.isInteger(v) || v < lo || v > hi) throw new ConfigError(path, `must be an integer in [${lo}, ${hi}], got ${v}`);
  return v;
}

function checkLink(path: string, l: LinkSpec): LinkSpec {
  if (!(l.gbps > 0) || !Number.isFinite(l.gbps)) throw new ConfigError(`${path}.gbps`, `must be a positive number, got ${l.gbps}`);
  intIn(`${path}.latencyPs`, l.latencyPs, 1, 1e12);
  return { gbps: l.gbps, latencyPs: l.latencyPs };
}

export interface SingleSwitchOptions {
  devices: number;
  ports?: number;
  link?: Partial<LinkSpec>;
}

/** Every port of every device on one switch (a leaf with no uplinks). */
export function singleSwitch(o: SingleSwitchOptions): Topology {
  const devices = intIn("devices", o.devices, 1, 65536);
  const ports = intIn("ports", o.ports ?? PORTS_DEFAULT, 1, 256);
  const link = checkLink("link", { ...HOST_LINK_DEFAULT, ...o.link });
  const t: Topology = {
    kind: "single-switch", devices, ports, planes: 1, portPlane: new Array<number>(ports).fill(0),
    leavesPerPlane: 1, spinesPerPlane: 0,
    switches: [{ name: "sw0", role: "leaf", plane: 0, index: 0 }],
    links: [], hostLinkOf: new Int32Array(devices * ports).fill(-1), fabricLinkOf: new Int32Array(0),
  };
  for (let d = 0; d < devices; d++)
    for (let p = 0; p < ports; p++) {
      t.hostLinkOf[d * ports + p] = t.links.length;
      t.links.push({ name: `dev${d}.port${p}-sw0`, tier: "host", plane: 0, aSwitch: -1, bSwitch: 0, device: d, port: p, ...link });
    }
  return t;
}

export interface LeafSpineOptions {
  devices: number;
  ports?: number;
  /** 1..8 planes; every port is on one plane */
  planes: number;
  /** the plane of each port (length `ports`; -1 leaves a port unconnected); default port p on plane p % planes */
  portPlane?: readonly number[];
  /** devices under one leaf (default: devices / leaves, rounded up) */
  devicesPerLeaf?: number;
  /** leaves per plane (default: devices / devicesPerLeaf, rounded up) */
  leaves?: number;
  /** spines per plane */
  spines: number;
  hostLink?: Partial<LinkSpec>;
  fabricLink?: Partial<LinkSpec>;
}

/**
 * A multi-plane two-tier Clos: in each plane, `leaves` leaves and `spines` spines, every leaf
 * linked to every spine of its plane. Device d sits under leaf ⌊d / devicesPerLeaf⌋ of every
 * plane; each of its ports on plane p links to that plane's leaf. Planes share nothing.
 */
export function leafSpine(o: LeafSpineOptions): Topology {
  const devices = intIn("devices", o.devices, 1, 65536);
  const ports = intIn("ports", o.ports ?? PORTS_DEFAULT, 1, 256);
  const planes = intIn("planes", o.planes, 1, 8);
  const spines = intIn("spines", o.spines, 1, 4096);
  if (o.devicesPerLeaf === undefined && o.leaves === undefined) throw new ConfigError("leaves", "give leaves or devicesPerLeaf");
  const perLeaf = intIn("devicesPerLeaf", o.devicesPerLeaf ?? Math.ceil(devices / o.leaves!), 1, 65536);
  const leaves = intIn("leaves", o.leaves ?? Math.ceil(devices / perLeaf), Math.ceil(devices / perLeaf), 65536);
  const portPlane = o.portPlane ? [...o.portPlane] : Array.from({ length: ports }, (_, p) => p % planes);
  if (portPlane.length !== ports) throw new ConfigError("portPlane", `must have one entry per port (${ports}), got ${portPlane.length}`);
  portPlane.forEach((pl, p) => intIn(`portPlane[${p}]`, pl, -1, planes - 1));
  const hl = checkLink("hostLink", { ...HOST_LINK_DEFAULT, ...o.hostLink });
  const fl = checkLink("fabricLink", { ...FABRIC_LINK_DEFAULT, ...o.fabricLink });

  const t: Topology = {
    kind: "leaf-spine", devices, ports, planes, portPlane, leavesPerPlane: leaves, spinesPerPlane: spines,
    switches: [], links: [],
    hostLinkOf: new Int32Array(devices * ports).fill(-1), fabricLinkOf: new Int32Array(planes * leaves * spines).fill(-1),
  };
  for (let pl = 0; pl < planes; pl++)
    for (let i = 0; i < leaves; i++) t.switches.push({ name: `p${pl}.leaf${i}`, role: "leaf", plane: pl, index: i });
  for (let pl = 0; pl < planes; pl++)
    for (let j = 0; j < spines; j++) t.switches.push({ name: `p${pl}.spine${j}`, role: "spine", plane: pl, index: j });
  for (let d = 0; d < devices; d++)
    for (let p = 0; p < ports; p++) {
      const pl = portPlane[p];
      if (pl < 0) continue;
      const leaf = leafId(t, pl, Math.floor(d / perLeaf));
      t.hostLinkOf[d * ports + p] = t.links.length;
      t.links.push({ name: `dev${d}.port${p}-${t.switches[leaf].name}`, tier: "host", plane: pl, aSwitch: -1, bSwitch: leaf, device: d, port: p, ...hl });
    }
  for (let pl = 0; pl < planes; pl++)
    for (let i = 0; i < leaves; i++)
      for (let j = 0; j < spines; j++) {
        const leaf = leafId(t, pl, i), spine = spineId(t, pl, j);
        t.fabricLinkOf[leaf * spines + j] = t.links.length;
        t.links.push({ name: `${t.switches[leaf].name}-${t.switches[spine].name}`, tier: "fabric", plane: pl, aSwitch: leaf, bSwitch: spine, device: -1, port: -1, ...fl });
      }
  return t;
}
