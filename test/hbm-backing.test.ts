// HBM without bytes (config hbmBacking 0, timing mode only): its addresses bound memory regions,
// and nothing may move a byte through it. A timing-mode traffic run gives its devices such HBM
// (host/scenario/traffic.ts), and its results must be what they are with HBM that holds bytes.
import { describe, it, expect } from "vitest";
import { Device } from "../host/device.js";
import { Context, VerbsError } from "../host/verbs.js";
import { ConfigError, resolveConfig } from "../host/config.js";
import { coreModule } from "../host/platform/node.js";
import { runScenario } from "../host/scenario/run.js";
import { deviceLayout } from "../host/scenario/cluster.js";
import { runFirmware } from "../host/fw/run.js";
import { programElf, CODE_BASE } from "./helpers/rv.js";
import { MMIO, REGIONS } from "../host/generated/layouts.js";
import type { ScenarioInput } from "../host/scenario/run.js";

const TIMING = { timingMode: 1, hbmBacking: 0, engines: 1, hbmBytes: 8 << 20, hostMemBytes: 1 << 20 };

describe("HBM without bytes", () => {
  it("is refused outside timing mode, naming the field", async () => {
    await expect(Device.create(coreModule(), { hbmBacking: 0 })).rejects.toThrow(ConfigError);
    await expect(Device.create(coreModule(), { hbmBacking: 0 })).rejects.toThrow(/^config\.hbmBacking: 0 .*needs timingMode 1/);
  });

  it("in a scenario: refused in full mode and beside a collective, by the field's path", async () => {
    const sc = (mode: "timing" | "full", more: object): ScenarioInput => ({
      name: "x", seed: 1, until: "1ms", devices: { count: 2, config: { hbmBacking: 0 } }, fabric: { mode, topology: { kind: "single-switch" } }, ...more,
    } as ScenarioInput);
    const traffic = { traffic: { pattern: "pairs", messageBytes: 4096, messages: 1 } };
    await expect(runScenario(coreModule(), sc("full", traffic))).rejects.toThrow(/^scenario\.devices\.config\.hbmBacking: 0 .*needs timingMode 1/);
    const collective = { collective: { op: "all-reduce", algorithm: "ring", sizes: [4096], dtype: "f32", redop: "sum" } };
    await expect(runScenario(coreModule(), sc("timing", collective))).rejects.toThrow(/^scenario\.devices\.config\.hbmBacking: 0 .*a collective's engines/);
    expect((await runScenario(coreModule(), sc("timing", traffic))).ended).toBe("finished");
  });

  it("costs the arena nothing: 8 MiB of addresses take less than 64 KiB that hold bytes", () => {
    const arena = (c: Record<string, number>) => deviceLayout(coreModule(), resolveConfig(c)).arenaBytes;
    const without = arena(TIMING), with64k = arena({ ...TIMING, hbmBacking: 1, hbmBytes: 1 << 16 });
    expect(without).toBeLessThan(with64k);
  });

  it("an engine's load from HBM faults there with its pc; with bytes it reads", async () => {
    const src = `
      li t0, ${REGIONS.HBM.base}
      lw t1, 0(t0)        # pc CODE_BASE + 8
      li t0, ${MMIO.SYS.EXIT}
      sw t1, 0(t0)
    `;
    const none = await runFirmware(programElf(src), { config: TIMING });
    expect(none.engines[0]).toMatchObject({ state: "faulted", pc: CODE_BASE + 8, mcause: 5, mtval: REGIONS.HBM.base });
    const some = await runFirmware(programElf(src), { config: { ...TIMING, hbmBacking: 1 } });
    expect(some.engines[0]).toMatchObject({ state: "exited", exitCode: 0 });
  });

  it("the host's views refuse it, and rings placed there are refused by name; regions over it are taken", async () => {
    const ctx = await Context.open(coreModule(), { ...TIMING, engines: 2 });
    const pd = ctx.allocPd();
    const buf = ctx.allocHbm(1 << 20);
    const mr = ctx.regMr(pd, buf, 1 << 20, ["LOCAL_WRITE", "REMOTE_WRITE"]);
    expect(mr.lkey).toBeGreaterThan(0);
    expect(() => ctx.view(buf, 64)).toThrow(VerbsError);
    expect(() => ctx.device.readHbm(0, 64)).toThrow();
    // an engine's CQ has its ring in HBM
    expect(() => ctx.createCq(16, { engine: 1 })).toThrow(/^createCq: its ring .* in HBM, which has no bytes here \(config hbmBacking 0/);
    const cq = ctx.createCq(16); // the host's: in host memory
    expect(() => ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4, engine: 1 })).toThrow(/^createQp: its ring .* in HBM/);
  });
});

describe("a timing-mode traffic run with HBM without bytes gives the results it gives with bytes", () => {
  const base = (transport: "rocev2" | "metaroce", verbs: Record<string, number>): ScenarioInput => ({
    name: `hbm-${transport}`, seed: 7311, until: "50ms", transport,
    // (RoCEv2's local ACK timeout at its tuned low 65.5 us, as examples/scenarios/roce-loss.json)
    devices: { count: 8, config: { engines: 1, ports: 4, scaleUpPorts: 4, transportTimeoutPs: 65536000 } },
    fabric: { mode: "timing", topology: { kind: "leaf-spine", planes: 2, spines: 2, devicesPerLeaf: 4 } },
    traffic: { pattern: "permutation", messageBytes: 256 << 10, messages: 4, verbs },
    faults: [{ kind: "loss", links: "fabric", random: 0.01 }],
  } as ScenarioInput);

  for (const transport of ["rocev2", "metaroce"] as const) {
    it(`${transport}: WRITEs, SENDs and READs with 1 % loss, every figure alike`, async () => {
      const sc = base(transport, { WRITE: 2, SEND: 1, READ: 1, WRITE_WITH_IMM: 1 });
      let without = 0, withBytes = 0;
      const backed = (hbmBacking: number) => ({ ...sc, devices: { ...sc.devices, config: { ...sc.devices.config, hbmBacking } } });
      const a = await runScenario(coreModule(), backed(0), { onBuilt: (c) => { without = c.contexts[0]!.device.hbmDataBytes; } });
      const b = await runScenario(coreModule(), backed(1), { onBuilt: (c) => { withBytes = c.contexts[0]!.device.hbmDataBytes; } });
      expect(without).toBe(0);
      expect(withBytes).toBeGreaterThan(256 << 10);
      expect(a.ended).toBe("finished");
      expect(JSON.stringify(a)).toBe(JSON.stringify(b));
      expect((a as { fabric: { drops: Record<string, number> } }).fabric.drops.random_loss).toBeGreaterThan(0);
    });
  }
});

describe("a traffic's devices are sized by it", () => {
  it("the fabric bench's 1,024 devices share one instance: HBM without bytes, a doorbell per QP; devices.config still decides", async () => {
    const { scenario } = await import("../bench/fabric.js");
    const built = async (n: number, config: Record<string, number> = {}) => {
      const sc = scenario(n, "timing", 1, "rocev2");
      let seen: { shared: boolean; queue: bigint; backing: bigint } | null = null;
      await runScenario(coreModule(), { ...sc, devices: { ...sc.devices, config: { ...sc.devices.config, ...config } } }, {
        onBuilt: (c) => { const d = c.contexts[n - 1]!.device; seen = { shared: !(c.home instanceof WebAssembly.Module), queue: d.config.get("hostDoorbellQueue")!, backing: d.config.get("hbmBacking")! }; },
        shouldStop: () => true,
      });
      return seen!;
    };
    // a permutation with 8 flows per pair: 16 QPs a device
    expect(await built(1024)).toEqual({ shared: true, queue: 16n, backing: 0n });
    expect(await built(64, { hostDoorbellQueue: 8192, hbmBacking: 1 })).toEqual({ shared: true, queue: 8192n, backing: 1n });
  });
});
