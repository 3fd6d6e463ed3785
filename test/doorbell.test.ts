import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { coreModule } from "../host/platform/node.js";
import { hostDoorbell, engineDoorbell } from "../host/scenarios/doorbell.js";

describe("doorbells (seed 000: express saves ~800 ns per operation on the host path)", () => {
  it("saves the NIC's WQE fetch over PCIe: 800 ns read latency + an 8-byte doorbell's serialisation", async () => {
    const f = await hostDoorbell(coreModule());
    // classic: 8 B doorbell (0.125 ns at 512 Gb/s) + 300 ns, then the fetch: 800 ns + 128 B (2 ns);
    // express: 128 B (2 ns) + 300 ns. Both then run the same 8-byte write and host-memory CQE.
    expect(f.classicNs - f.expressNs).toBeCloseTo(800.125, 3);
    expect(f.expressNs).toBeCloseTo(302 + 20 + 100 + 16 / 1.2 / 1000 + 0.5 + 300, 0);
  });

  it("follows the configured PCIe read latency", async () => {
    const f = await hostDoorbell(coreModule(), { pcieReadLatencyPs: 400_000 });
    expect(f.classicNs - f.expressNs).toBeCloseTo(400.125, 3);
  });

  it("is faster from an engine through the express window than through the HBM ring", async () => {
    const f = await engineDoorbell(coreModule(), readFileSync("firmware/bench/doorbell.elf"));
    // classic pays writing the WQE into HBM (4 cycles a word) and the NIC's fetch (100 ns);
    // express writes the window at 1 cycle a word
    expect(f.classicNs - f.expressNs).toBeGreaterThan(200);
    expect(f.expressNs).toBeGreaterThan(250); // at least the NIC's own 20 + 100 + 100 ns and the posting
  });
});
