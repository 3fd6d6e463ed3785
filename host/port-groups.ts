// The split of a device's ports into its scale-up and scale-out groups, as the host sees it
// (Device.portGroups, Device.setPortGroups, Device.portGroupsBlocker; the core's side is
// assembly/nic/port-groups.ts, docs/nic.md "Port groups"): the split now, the check of a new one,
// and what a refusal says.

import { PORT_SPLIT_BLOCK } from "./generated/layouts.js";
import { ConfigError } from "./config.js";

/** A device's ports split into its two groups: ports 0 .. scaleUpPorts - 1 are scale-up, the rest scale-out. */
export interface PortGroups {
  /** Ports in the scale-up group, ports 0 .. scaleUpPorts - 1. */
  scaleUpPorts: number;
  /** Ports in the scale-out group, ports scaleUpPorts .. ports - 1. */
  scaleOutPorts: number;
}

/** Why a re-split is refused now: the first connected QP, or MetaRoCE-like connection, that is not quiescent. */
export interface PortSplitBlocker {
  /**
   * `send`: the QP has send work posted, executing, or sent and not yet acknowledged;
   * `answer`: it is receiving a message or owes an answer (ACK, NAK, READ response, CNP);
   * `paths`: the connection has packets in flight, to send again, a probe out, or ACKs owed;
   * `empty-group`: the QP's port group would have no ports (waiting does not cure it).
   */
  reason: "send" | "answer" | "paths" | "empty-group";
  /** The device at the other end. */
  peer: number;
  /** The QP (`send`, `answer`, `empty-group`). */
  qpn?: number;
  /** The connection's index (`paths`). */
  connection?: number;
  /** The same, in words. */
  message: string;
}

/** A re-split refused because something is not quiescent ({@link PortSplitBlocker}); the split is unchanged. */
export class PortSplitError extends Error {
  constructor(
    /** What was in the way. */
    readonly blocker: PortSplitBlocker,
    /** The device's time, ps. */
    readonly atPs: bigint,
  ) {
    super(`setPortGroups: refused at ${atPs} ps: ${blocker.message}; a re-split needs every connected QP and connection quiescent (run until portGroupsBlocker() is null)`);
    this.name = "PortSplitError";
  }
}

/** The scale-up port count `g` asks for, checked against a device of `ports` ports: a ConfigError naming the field otherwise. */
export function checkSplit(g: unknown, ports: number): number {
  if (typeof g !== "object" || g === null) throw new ConfigError("setPortGroups", `takes { scaleUpPorts }, got ${JSON.stringify(g)}`);
  const extra = Object.keys(g).filter((k) => k !== "scaleUpPorts");
  if (extra.length) throw new ConfigError(`setPortGroups.${extra[0]}`, "is not a field (the split is given by scaleUpPorts alone; the rest of the ports are scale-out)");
  const up = (g as { scaleUpPorts?: unknown }).scaleUpPorts;
  if (typeof up !== "number" || !Number.isInteger(up) || up < 0 || up > ports) {
    throw new ConfigError("setPortGroups.scaleUpPorts", `must be a whole number of ports from 0 to ${ports} (the device's ports), got ${JSON.stringify(up)}`);
  }
  return up;
}

const REASONS: Record<number, PortSplitBlocker["reason"]> = {
  [PORT_SPLIT_BLOCK.SEND]: "send", [PORT_SPLIT_BLOCK.ANSWER]: "answer", [PORT_SPLIT_BLOCK.PATHS]: "paths", [PORT_SPLIT_BLOCK.EMPTY_GROUP]: "empty-group",
};

/** The core's answer (portSplitBlocker: reason << 56 | peer << 32 | id) as a blocker, null for none. */
export function decodeBlocker(v: bigint, up: number): PortSplitBlocker | null {
  const w = BigInt.asUintN(64, v);
  if (w === 0n) return null;
  const reason = REASONS[Number(w >> 56n)] ?? "send";
  const peer = Number((w >> 32n) & 0xffffffn), id = Number(w & 0xffffffffn);
  const qp = `QP ${id} (to device ${peer})`;
  switch (reason) {
    case "send": return { reason, peer, qpn: id, message: `${qp} has send work posted, executing or not yet acknowledged` };
    case "answer": return { reason, peer, qpn: id, message: `${qp} is receiving a message or owes an answer (ACK, NAK, READ response, CNP)` };
    case "paths": return { reason, peer, connection: id, message: `the MetaRoCE-like connection ${id} (to device ${peer}) has packets in flight, to send again, a probe out or ACKs owed` };
    case "empty-group": return { reason, peer, qpn: id, message: `${qp} is bound to a port group that ${up} scale-up ports would leave with no ports` };
  }
}
