// The loopback: where a request packet to a QP of this same device goes. The packet reaches
// this device's responder at once and its answer comes back at once. A QP to another device
// sends frames through its ports instead (rocev2/tx.ts, metaroce/tx.ts), which take time to
// cross the fabric, and its answers arrive as frames of their own.

import { Device } from "../core/device";
import { Packet } from "./packet";
import { respond } from "./responder";

/** Sends request `p` at `t`; true with the answer in `a`, false when the destination is silent. */
export function loopbackRequest(dev: Device, p: Packet, t: u64, a: Packet): bool {
  return respond(dev, p, t, a);
}
