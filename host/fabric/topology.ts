// Addresses and topologies of the fabric: which device port has which IPv4 address and MAC,
// and the builders that say which switches exist and which links join what. A Topology is
// plain data, made once; the Fabric (fabric.ts) turns it into typed arrays and routing tables.
//
// Link ends: a host link joins a device port (end a) to a leaf (end b); a fabric link joins a
// leaf (end a) to a spine (end b), or a spine (end a) to a super-spine (end b). Link L carries
// two directed channels: 2L from a to b, 2L+1 from b to a, each with its own transmitter,
// queue, loss stream and counters.

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
/** Spine ↔ super-spine: 800 Gb/s; 1.1 µs ≈ 200 m of fibre between halls (1 µs) plus PHY and FEC. */
export const SUPER_LINK_DEFAULT: LinkSpec = { gbps: 800, latencyPs: 1_100_000 };

export type SwitchRole = "leaf" | "spine" | "super-spine";

export interface TopoSwitch {
  name: string;
  role: SwitchRole;
  plane: number;
  /** index among the switches of its role in its plane */
  index: number;
  /** a leaf's or spine's pod (0 with two tiers); a super-spine's group: the index, within their pods, of the spines it links */
  pod: number;
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
  kind: "single-switch" | "leaf-spine" | "three-tier";
  devices: number;
  ports: number;
  planes: number;
  /** the plane of each port index; -1: the port is not connected */
  portPlane: readonly number[];
  leavesPerPlane: number;
  spinesPerPlane: number;
  /** pods per plane: 1 with two tiers (every leaf and spine of a plane in one pod) */
  pods: number;
  leavesPerPod: number;
  /** a leaf's uplinks: it links to every spine of its pod */
  spinesPerPod: number;
  /** super-spines per group, a spine's uplinks (0 with two tiers): spine j of every pod of a plane links to every super-spine of the plane's group j */
  superSpinesPerGroup: number;
  /** leaves (plane by plane, pod by pod), then spines (plane by plane, pod by pod), then super-spines (plane by plane, group by group) */
  switches: TopoSwitch[];
  /** host links in (device, port) order, then leaf-spine links (plane, leaf, spine), then spine-super-spine links (plane, spine, super-spine) */
  links: TopoLink[];
  /** link id of device port ep = device * ports + port, or -1 */
  hostLinkOf: Int32Array;
  /** link id of leaf l's uplink to spine j of its pod: fabricLinkOf[l * spinesPerPod + j] */
  fabricLinkOf: Int32Array;
  /** link id of the uplink of spine k (counted from the first spine) to super-spine z of its group: superLinkOf[k * superSpinesPerGroup + z] */
  superLinkOf: Int32Array;
}

/** The switch id of leaf `leaf` of plane `plane` (leaves counted across the plane's pods). */
export const leafId = (t: Topology, plane: number, leaf: number): number => plane * t.leavesPerPlane + leaf;
/** The switch id of spine `spine` of plane `plane` (spines counted across the plane's pods). */
export const spineId = (t: Topology, plane: number, spine: number): number =>
  t.planes * t.leavesPerPlane + plane * t.spinesPerPlane + spine;
/** The switch id of super-spine `z` of group `group` of plane `plane`. */
export const superSpineId = (t: Topology, plane: number, group: number, z: number): number =>
  t.planes * (t.leavesPerPlane + t.spinesPerPlane) + (plane * t.spinesPerPod + group) * t.superSpinesPerGroup + z;
/** The link id of port `port` of device `device`, or -1 when the port is not connected. */
export const hostLink = (t: Topology, device: number, port: number): number => t.hostLinkOf[device * t.ports + port];
/** The link id between leaf `leaf` of plane `plane` and spine `spine` of its pod. */
export const fabricLink = (t: Topology, plane: number, leaf: number, spine: number): number =>
  t.fabricLinkOf[leafId(t, plane, leaf) * t.spinesPerPod + spine];
/** The link id between spine `spine` of plane `plane` (counted across its pods) and super-spine `z` of its group. */
export const superLink = (t: Topology, plane: number, spine: number, z: number): number =>
  t.superLinkOf[(plane * t.spinesPerPlane + spine) * t.superSpinesPerGroup + z];

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
    leavesPerPlane: 1, spinesPerPlane: 0, pods: 1, leavesPerPod: 1, spinesPerPod: 0, superSpinesPerGroup: 0,
    switches: [{ name: "sw0", role: "leaf", plane: 0, index: 0, pod: 0 }],
    links: [], hostLinkOf: new Int32Array(devices * ports).fill(-1), fabricLinkOf: new Int32Array(0), superLinkOf: new Int32Array(0),
  };
  for (let d = 0; d < devices; d++)
    for (let p = 0; p < ports; p++) {
      t.hostLinkOf[d * ports + p] = t.links.length;
      t.links.push({ name: `dev${d}.port${p}-sw0`, tier: "host", plane: 0, aSwitch: -1, bSwitch: 0, device: d, port: p, ...link });
    }
  return t;
}

/** What every Clos has: the devices and how their ports spread over planes, and the host and leaf-spine links. */
interface ClosOptions {
  devices: number;
  ports?: number;
  /** 1..8 planes; every port is on one plane */
  planes: number;
  /** the plane of each port (length `ports`; -1 leaves a port unconnected); default port p on plane p % planes */
  portPlane?: readonly number[];
  hostLink?: Partial<LinkSpec>;
  fabricLink?: Partial<LinkSpec>;
}

export interface LeafSpineOptions extends ClosOptions {
  /** devices under one leaf (default: devices / leaves, rounded up) */
  devicesPerLeaf?: number;
  /** leaves per plane (default: devices / devicesPerLeaf, rounded up) */
  leaves?: number;
  /** spines per plane */
  spines: number;
}

/**
 * A multi-plane two-tier Clos: in each plane, `leaves` leaves and `spines` spines, every leaf
 * linked to every spine of its plane. Device d sits under leaf ⌊d / devicesPerLeaf⌋ of every
 * plane; each of its ports on plane p links to that plane's leaf. Planes share nothing.
 */
export function leafSpine(o: LeafSpineOptions): Topology {
  const devices = intIn("devices", o.devices, 1, 65536);
  const spines = intIn("spines", o.spines, 1, 4096);
  if (o.devicesPerLeaf === undefined && o.leaves === undefined) throw new ConfigError("leaves", "give leaves or devicesPerLeaf");
  const perLeaf = intIn("devicesPerLeaf", o.devicesPerLeaf ?? Math.ceil(devices / o.leaves!), 1, 65536);
  const leaves = intIn("leaves", o.leaves ?? Math.ceil(devices / perLeaf), Math.ceil(devices / perLeaf), 65536);
  return clos("leaf-spine", o, perLeaf, leaves, 1, spines, 0, SUPER_LINK_DEFAULT);
}

export interface ThreeTierOptions extends ClosOptions {
  /** devices under one leaf */
  devicesPerLeaf: number;
  /** leaves in a pod */
  leavesPerPod: number;
  /** spines in a pod: every leaf of a pod links to every spine of it */
  spinesPerPod: number;
  /** super-spines per group: spine j of every pod links to every super-spine of group j (spinesPerPod groups) */
  superSpines: number;
  /** pods per plane (default: as many as the devices fill, devices / (devicesPerLeaf x leavesPerPod) rounded up) */
  pods?: number;
  /** links between a spine and a super-spine */
  superLink?: Partial<LinkSpec>;
}

/**
 * A multi-plane three-tier Clos (leaf/spine/super-spine): in each plane, `pods` pods of
 * `leavesPerPod` leaves and `spinesPerPod` spines, every leaf linked to every spine of its pod;
 * and `spinesPerPod` groups of `superSpines` super-spines, spine j of every pod linked to every
 * super-spine of group j. Device d sits under leaf ⌊d / devicesPerLeaf⌋ of every plane (leaves
 * numbered pod by pod). Oversubscription is in the counts and the links' rates: a leaf has
 * devicesPerLeaf ports down and spinesPerPod up; a spine leavesPerPod down and superSpines up.
 */
export function threeTier(o: ThreeTierOptions): Topology {
  const devices = intIn("devices", o.devices, 1, 65536);
  const perLeaf = intIn("devicesPerLeaf", o.devicesPerLeaf, 1, 65536);
  const perPod = intIn("leavesPerPod", o.leavesPerPod, 1, 4096);
  const spines = intIn("spinesPerPod", o.spinesPerPod, 1, 4096);
  const supers = intIn("superSpines", o.superSpines, 1, 4096);
  const needed = Math.ceil(Math.ceil(devices / perLeaf) / perPod);
  const pods = intIn("pods", o.pods ?? needed, needed, 4096);
  return clos("three-tier", o, perLeaf, pods * perPod, pods, spines, supers, { ...SUPER_LINK_DEFAULT, ...o.superLink });
}

export interface FatTreeOptions extends ClosOptions {
  /** switch radix, even: k pods of k/2 leaves and k/2 spines, (k/2)² super-spines, k/2 devices per leaf: k³/4 devices at most */
  k: number;
  superLink?: Partial<LinkSpec>;
}

/** A k-ary fat tree's counts (k even): k/2 devices per leaf, k/2 leaves and k/2 spines per pod, k/2 super-spines per group. */
export function fatTreeCounts(k: number): Pick<ThreeTierOptions, "devicesPerLeaf" | "leavesPerPod" | "spinesPerPod" | "superSpines"> {
  const h = k / 2;
  return { devicesPerLeaf: h, leavesPerPod: h, spinesPerPod: h, superSpines: h };
}

/** A k-ary fat tree (Al-Fares et al., 2008), per plane: the three-tier Clos of k-port switches, with as many pods as the devices fill. */
export function fatTree(o: FatTreeOptions): Topology {
  const k = intIn("k", o.k, 2, 256);
  if (k % 2 !== 0) throw new ConfigError("k", `must be even, got ${k}`);
  if (o.devices > (k * k * k) / 4) throw new ConfigError("devices", `a ${k}-ary fat tree holds at most k³/4 = ${(k * k * k) / 4} devices, got ${o.devices}`);
  return threeTier({ ...o, ...fatTreeCounts(k) });
}

/**
 * The Clos both builders make: `leaves` leaves per plane, `perLeaf` devices under each, in
 * `pods` pods of `spines` spines; with `supers` > 0, groups of super-spines over the spines.
 */
function clos(kind: Topology["kind"], o: ClosOptions, perLeaf: number, leaves: number, pods: number, spines: number, supers: number, sl: LinkSpec): Topology {
  const devices = o.devices;
  const ports = intIn("ports", o.ports ?? PORTS_DEFAULT, 1, 256);
  const planes = intIn("planes", o.planes, 1, 8);
  const portPlane = o.portPlane ? [...o.portPlane] : Array.from({ length: ports }, (_, p) => p % planes);
  if (portPlane.length !== ports) throw new ConfigError("portPlane", `must have one entry per port (${ports}), got ${portPlane.length}`);
  portPlane.forEach((pl, p) => intIn(`portPlane[${p}]`, pl, -1, planes - 1));
  const hl = checkLink("hostLink", { ...HOST_LINK_DEFAULT, ...o.hostLink });
  const fl = checkLink("fabricLink", { ...FABRIC_LINK_DEFAULT, ...o.fabricLink });
  if (supers > 0) checkLink("superLink", sl);
  const perPod = leaves / pods, three = supers > 0;
  const t: Topology = {
    kind, devices, ports, planes, portPlane, leavesPerPlane: leaves, spinesPerPlane: pods * spines,
    pods, leavesPerPod: perPod, spinesPerPod: spines, superSpinesPerGroup: supers,
    switches: [], links: [],
    hostLinkOf: new Int32Array(devices * ports).fill(-1), fabricLinkOf: new Int32Array(planes * leaves * spines).fill(-1),
    superLinkOf: new Int32Array(planes * pods * spines * supers).fill(-1),
  };
  const at = (pl: number, pod: number) => (three ? `p${pl}.pod${pod}.` : `p${pl}.`);
  for (let pl = 0; pl < planes; pl++)
    for (let i = 0; i < leaves; i++) {
      const pod = Math.floor(i / perPod);
      t.switches.push({ name: `${at(pl, pod)}leaf${three ? i % perPod : i}`, role: "leaf", plane: pl, index: i, pod });
    }
  for (let pl = 0; pl < planes; pl++)
    for (let j = 0; j < pods * spines; j++) {
      const pod = Math.floor(j / spines);
      t.switches.push({ name: `${at(pl, pod)}spine${three ? j % spines : j}`, role: "spine", plane: pl, index: j, pod });
    }
  for (let pl = 0; pl < planes; pl++)
    for (let g = 0; g < spines && three; g++)
      for (let z = 0; z < supers; z++) t.switches.push({ name: `p${pl}.super${g}.${z}`, role: "super-spine", plane: pl, index: g * supers + z, pod: g });
  for (let d = 0; d < devices; d++)
    for (let p = 0; p < ports; p++) {
      const pl = portPlane[p];
      if (pl < 0) continue;
      const leaf = leafId(t, pl, Math.floor(d / perLeaf));
      t.hostLinkOf[d * ports + p] = t.links.length;
      t.links.push({ name: `dev${d}.port${p}-${t.switches[leaf].name}`, tier: "host", plane: pl, aSwitch: -1, bSwitch: leaf, device: d, port: p, ...hl });
    }
  const join = (a: number, b: number, spec: LinkSpec, pl: number) =>
    t.links.push({ name: `${t.switches[a].name}-${t.switches[b].name}`, tier: "fabric", plane: pl, aSwitch: a, bSwitch: b, device: -1, port: -1, ...spec }) - 1;
  for (let pl = 0; pl < planes; pl++)
    for (let i = 0; i < leaves; i++)
      for (let j = 0; j < spines; j++) {
        const leaf = leafId(t, pl, i);
        t.fabricLinkOf[leaf * spines + j] = join(leaf, spineId(t, pl, Math.floor(i / perPod) * spines + j), fl, pl);
      }
  for (let pl = 0; pl < planes && three; pl++)
    for (let k = 0; k < pods * spines; k++)
      for (let z = 0; z < supers; z++)
        t.superLinkOf[(pl * pods * spines + k) * supers + z] = join(spineId(t, pl, k), superSpineId(t, pl, k % spines, z), sl, pl);
  return t;
}
