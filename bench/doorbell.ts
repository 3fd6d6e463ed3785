// npm run bench -- doorbell: simulated ns per operation, classic vs express doorbell, from the
// host (over PCIe) and from an engine (host/scenarios/doorbell.ts defines the operation).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { coreModule, packageRoot } from "../host/platform/node.js";
import { hostDoorbell, engineDoorbell } from "../host/scenarios/doorbell.js";
import { figure } from "./lib/report.js";

export async function run(): Promise<void> {
  const host = await hostDoorbell(coreModule());
  figure("doorbell.host.classic.ns", host.classicNs, "ns", "simulated latency of one 8-byte WRITE posted by the host: WQE in a host ring, doorbell over PCIe, until its completion is visible");
  figure("doorbell.host.express.ns", host.expressNs, "ns", "the same with an express doorbell: the host writes the WQE itself over PCIe");
  figure("doorbell.host.saving.ns", host.classicNs - host.expressNs, "ns", "classic minus express from the host (seed 000: roughly 800 ns)");
  const engine = await engineDoorbell(coreModule(), readFileSync(join(packageRoot(), "firmware/bench/doorbell.elf")));
  figure("doorbell.engine.classic.ns", engine.classicNs, "ns", "simulated latency of one 8-byte WRITE posted by engine 0 (rings in HBM), classic doorbell");
  figure("doorbell.engine.express.ns", engine.expressNs, "ns", "the same from engine 0 with an express doorbell");
}
