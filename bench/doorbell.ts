// npm run bench -- doorbell: simulated ns per operation, classic vs express doorbell, from the
// host (over PCIe) and from an engine (host/scenarios/doorbell.ts defines the operation).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { coreModule, packageRoot } from "../host/platform/node.js";
import { hostDoorbell, engineDoorbell } from "../host/scenarios/doorbell.js";
import { figure } from "./lib/report.js";

export async function run(): Promise<void> {
  const host = await hostDoorbell(coreModule());
  figure("doorbell.host.classic.ns", host.classicNs, "ns");
  figure("doorbell.host.express.ns", host.expressNs, "ns");
  figure("doorbell.host.saving.ns", host.classicNs - host.expressNs, "ns");
  const engine = await engineDoorbell(coreModule(), readFileSync(join(packageRoot(), "firmware/bench/doorbell.elf")));
  figure("doorbell.engine.classic.ns", engine.classicNs, "ns");
  figure("doorbell.engine.express.ns", engine.expressNs, "ns");
}
