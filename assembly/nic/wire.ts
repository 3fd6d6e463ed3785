// Where a request packet goes. Today every QP's destination is a QP of this device, so the
// wire is a wire to myself: the packet reaches this device's responder at once and its answer
// comes back at once. Ports and a fabric replace this with packets that take time to cross,
// and answers that arrive as packets of their own.

import { Device } from "../core/device";
import { Packet } from "./packet";
import { respond } from "./responder";

/** Sends request `p` at `t`; true with the answer in `a`, false when the destination is silent. */
export function wireRequest(dev: Device, p: Packet, t: u64, a: Packet): bool {
  return respond(dev, p, t, a);
}
