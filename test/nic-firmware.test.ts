import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { runFirmware } from "../host/fw/run.js";
import { MMIO } from "../host/generated/layouts.js";

/** Assembly for one verbs command from firmware: its arguments into NIC.CMD_ARG0.., the command
 * into NIC.CMD (address in t0), its answer to the host mailbox (OUT_DATA address in t2). */
const cmd = (op: number, args: number[]) => [
  ...args.map((v, i) => `li t1, ${v}\nli t3, ${MMIO.NIC.CMD_ARG0 + 4 * i}\nsw t1, 0(t3)`),
  `li t1, ${op}`, "sw t1, 0(t0)", "lw a0, 4(t0)", "sw a0, 0(t2)",
].join("\n");

// firmware/examples/nic.c: each engine makes its own PD, MR, CQ and QP with verbs commands,
// posts an express RDMA WRITE and a classic REDUCE, and sleeps in wfi until each completion.
const elf = readFileSync("firmware/examples/nic.elf");

describe("engines drive the NIC from firmware", () => {
  it("16 engines set up their own verbs objects, write, reduce and check the bytes", async () => {
    const r = await runFirmware(elf, { config: { engines: 16 } });
    for (const e of r.engines) {
      expect(e.state).toBe("exited");
      expect(e.exitCode).toBe(0);
      expect(e.console).toMatch(new RegExp(`^engine ${e.id}: qp ${e.id}: express write status 0 in \\d+ cycles, classic reduce status 0 in \\d+ cycles, 0 wrong\\n$`));
    }
    expect(r.stats["nic.wqes"]).toBe(32);
    expect(r.stats["nic.errors"]).toBe(0);
    expect(r.stats["engine.wakeups"]).toBe(32); // each wait ends with the completion interrupt
  });

  it("takes the NIC time the models give, on an idle device", async () => {
    const r = await runFirmware(elf, { config: { engines: 1 }, collectTrace: true });
    expect(r.ok).toBe(true);
    const start = r.trace!.filter((t) => t.point === "nic.wqe_start").map((t) => Number(t.timePs));
    const done = r.trace!.filter((t) => t.point === "nic.wqe_done").map((t) => Number(t.timePs));
    // write:  20 ns decode + 100 ns HBM latency + 1 KiB read + 1 KiB written at 1.2 TB/s + 100 ns CQE into HBM
    // reduce: 20 ns decode + 20 ns setup + 100 ns HBM latency + 2 KiB of sources at 128 B/cycle
    //         x 1.37 GHz (the 1 KiB written rides along) + 100 ns CQE
    expect(done.map((d, k) => d - start[k])).toEqual([
      20_000 + 100_000 + Math.ceil(2048 / (9600 / 8000)) + 100_000,
      20_000 + 20_000 + 100_000 + Math.ceil(3072 / (((128 * 1.37e6) / 1e9) * 1.5)) + 100_000,
    ]);
    // seven verbs commands (PD, MR, CQ, QP and three modifies) stall the engine 1 us each
    expect(r.engines[0].cycles).toBeGreaterThan(7 * 1370);
  });
});

describe("verbs commands from firmware", () => {
  it("answer bad commands with a negative CMD_ERR and stall the engine nicCommandPs each", async () => {
    const { programElf } = await import("./helpers/rv.js");
    const { Device } = await import("../host/device.js");
    const { coreModule } = await import("../host/platform/node.js");
    const { CMD_ERR, CMD, MMIO } = await import("../host/generated/layouts.js");
    const src = `
      li t0, ${MMIO.NIC.CMD}
      li t2, ${MMIO.MBOX.OUT_DATA}
      li t1, 99
      sw t1, 0(t0)           # unknown command
      lw a0, 4(t0)
      sw a0, 0(t2)
      li t3, ${MMIO.NIC.CMD_ARG0}
      li t1, 5
      sw t1, 0(t3)           # MODIFY_QP of QP 5, which does not exist
      li t1, ${CMD.MODIFY_QP}
      sw t1, 0(t0)
      lw a0, 4(t0)
      sw a0, 0(t2)
      li t1, ${CMD.ALLOC_PD}
      sw t1, 0(t0)
      lw a0, 4(t0)
      sw a0, 0(t2)
      li t0, ${MMIO.SYS.EXIT}
      sw zero, 0(t0)
    `;
    const dev = await Device.create(coreModule(), { engines: 1, nicCommandPs: 2_000_000 });
    dev.start(dev.loadElf(programElf(src)).entry);
    dev.run(1_000_000_000n);
    expect([dev.mailboxPop(0), dev.mailboxPop(0), dev.mailboxPop(0)]).toEqual([CMD_ERR.ARGUMENT >>> 0, CMD_ERR.NO_OBJECT >>> 0, 0]);
    // three commands of 2 us = 3 x 2740 cycles, besides the instructions' own cycles
    expect(dev.engine(0).cycles).toBeGreaterThan(3 * 2740);
    expect(dev.engine(0).cycles).toBeLessThan(3 * 2740 + 200);
  });
});

describe("engines talk to each other", () => {
  // firmware/examples/pingpong.c: pairs of engines connect their QPs and echo 64-byte SENDs
  it("pairs of engines exchange SEND and SEND_WITH_IMM through posted receives", async () => {
    const r = await runFirmware(readFileSync("firmware/examples/pingpong.elf"), { config: { engines: 7 } });
    expect(r.engines.map((e) => [e.state, e.exitCode])).toEqual(new Array(7).fill(["exited", 0]));
    for (const pair of [0, 2, 4]) {
      expect(r.engines[pair].console).toMatch(new RegExp(`^engines ${pair}-${pair + 1}: 8 round trips of 64 bytes, mean \\d+ cycles, 0 wrong\\n$`));
    }
    expect(r.engines[6].console).toBe(""); // no partner
    // 3 pairs x 8 rounds x 2 SENDs, every receive consumed, no retries needed
    expect(r.stats["nic.wqes"]).toBe(48);
    expect(r.stats["nic.rnr_retries"] + r.stats["nic.transport_retries"] + r.stats["nic.errors"]).toBe(0);
  });
});

describe("firmware connects a QP to another device", () => {
  it("MODIFY_QP_REMOTE moves its own INIT QP to RTR; a bad port group is ARGUMENT, another's QP NO_OBJECT", async () => {
    const { programElf } = await import("./helpers/rv.js");
    const { Context } = await import("../host/verbs.js");
    const { coreModule } = await import("../host/platform/node.js");
    const { CMD_ERR, CMD, MMIO, QP_STATE, PORT_GROUP } = await import("../host/generated/layouts.js");
    const ctx = await Context.open(coreModule(), { engines: 1, deviceId: 3 });
    const pd = ctx.allocPd(), cq = ctx.createCq(8);
    const hostQp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 }); // QP 0: the host's
    // the engine makes a CQ and a QP in its SRAM (QP 1), then connects it to QP 7 of device 5
    const src = [
      `li t0, ${MMIO.NIC.CMD}`, `li t2, ${MMIO.MBOX.OUT_DATA}`,
      cmd(CMD.ALLOC_PD, []),
      cmd(CMD.CREATE_CQ, [0x8000, 8]),
      cmd(CMD.CREATE_QP, [1, 1, 1, 0x9000, 4, 0xa000, 4, 0]),
      cmd(CMD.MODIFY_QP, [1, QP_STATE.INIT, 0]),
      cmd(CMD.MODIFY_QP_REMOTE, [1, 7, 5, 9]), // no such port group
      cmd(CMD.MODIFY_QP_REMOTE, [0, 7, 5, PORT_GROUP.SCALE_OUT]), // the host's QP
      cmd(CMD.MODIFY_QP_REMOTE, [1, 7, 5, PORT_GROUP.SCALE_OUT]),
      `li t0, ${MMIO.SYS.EXIT}`, "sw zero, 0(t0)",
    ].join("\n");
    const dev = ctx.device;
    dev.start(dev.loadElf(programElf(src)).entry);
    dev.run(1_000_000_000n);
    const out = Array.from({ length: 7 }, () => dev.mailboxPop(0));
    expect(out).toEqual([1, 1, 1, 0, CMD_ERR.ARGUMENT >>> 0, CMD_ERR.NO_OBJECT >>> 0, 0]);
    expect(dev.core.qpState(dev.handle, 1)).toBe(QP_STATE.RTR);
    expect(dev.core.qpState(dev.handle, hostQp.qpn)).toBe(QP_STATE.RESET);
  });

  it("SET_PORT_GROUPS re-splits the device's ports: more than the ports is ARGUMENT, emptying a connected QP's group IN_USE", async () => {
    const { programElf } = await import("./helpers/rv.js");
    const { Context } = await import("../host/verbs.js");
    const { coreModule } = await import("../host/platform/node.js");
    const { CMD_ERR, CMD, MMIO, QP_STATE, PORT_GROUP } = await import("../host/generated/layouts.js");
    const ctx = await Context.open(coreModule(), { engines: 1, deviceId: 3, ports: 12, scaleUpPorts: 10 });
    // the engine connects its QP 0 to QP 7 of device 5 on the scale-out group, then re-splits
    const src = [
      `li t0, ${MMIO.NIC.CMD}`, `li t2, ${MMIO.MBOX.OUT_DATA}`,
      cmd(CMD.ALLOC_PD, []),
      cmd(CMD.CREATE_CQ, [0x8000, 8]),
      cmd(CMD.CREATE_QP, [0, 0, 0, 0x9000, 4, 0xa000, 4, 0]),
      cmd(CMD.MODIFY_QP, [0, QP_STATE.INIT, 0]),
      cmd(CMD.MODIFY_QP_REMOTE, [0, 7, 5, PORT_GROUP.SCALE_OUT]),
      cmd(CMD.SET_PORT_GROUPS, [13]), // more than the 12 ports
      cmd(CMD.SET_PORT_GROUPS, [12]), // the scale-out group, which QP 0 uses, would have none
      cmd(CMD.SET_PORT_GROUPS, [4]),
      `li t0, ${MMIO.SYS.EXIT}`, "sw zero, 0(t0)",
    ].join("\n");
    const dev = ctx.device;
    dev.start(dev.loadElf(programElf(src)).entry);
    dev.run(1_000_000_000n);
    const out = Array.from({ length: 8 }, () => dev.mailboxPop(0));
    expect(out).toEqual([0, 0, 0, 0, 0, CMD_ERR.ARGUMENT >>> 0, CMD_ERR.IN_USE >>> 0, 0]);
    expect(dev.portGroups()).toEqual({ scaleUpPorts: 4, scaleOutPorts: 8 });
  });
});
