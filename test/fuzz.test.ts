import { describe, it, expect } from "vitest";
import { Device } from "../host/device.js";
import { Context } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";
import { writeElf } from "./helpers/rv.js";
import { rng, garbage, WFI, ECALL, EBREAK } from "./helpers/garbage.js";
import { WQE, MMIO, REGIONS } from "../host/generated/layouts.js";

// Decoding the instruction an engine stopped at, to check its report against it.
const sext = (v: number, bits: number) => (v << (32 - bits)) >> (32 - bits);
const immI = (w: number) => w >> 20;
const immS = (w: number) => ((w >> 25) << 5) | ((w >>> 7) & 31);
const immB = (w: number) => sext((((w >>> 31) & 1) << 12) | (((w >>> 7) & 1) << 11) | (((w >>> 25) & 0x3f) << 5) | (((w >>> 8) & 0xf) << 1), 13);
const immJ = (w: number) => sext((((w >>> 31) & 1) << 20) | (((w >>> 12) & 0xff) << 12) | (((w >>> 20) & 1) << 11) | (((w >>> 21) & 0x3ff) << 1), 21);

// How the 256 engines of the random-code test end, by state and fault cause (mcause).
const EXPECTED_ENDS = {
  exited: 38, running: 37, sleeping: 9,
  "faulted:0": 13, // misaligned fetch (a jump or branch target)
  "faulted:1": 12, // fetch access (pc outside SRAM)
  "faulted:2": 48, // illegal instruction
  "faulted:3": 6, // breakpoint
  "faulted:4": 18, // misaligned load
  "faulted:5": 20, // load access
  "faulted:6": 24, // misaligned store
  "faulted:7": 16, // store access
  "faulted:11": 15, // ecall from M-mode
};

describe("garbage never takes the emulator down", () => {
  it("random code: every engine ends running, asleep in wfi, exited by a store to EXIT, or faulted where its instruction says", async () => {
    const seen = new Map<string, number>();
    for (let seed = 1; seed <= 16; seed++) {
      const next = rng(seed);
      // the garbage is linked at 0, so no NULL guard (test/fw-debug.test.ts covers the guard)
      const dev = await Device.create(coreModule(), { engines: 16, nullGuardBytes: 0 });
      dev.loadElf(writeElf(0, [{ vaddr: 0, data: new Uint8Array(garbage(next, 4096).buffer), flags: 7 }]));
      // each engine starts somewhere else in the garbage
      for (let e = 0; e < 16; e++) dev.core.startEngine(dev.handle, e, (next() % 4096) * 4);
      const untilPs = 20_000_000n;
      dev.run(untilPs);
      const khz = dev.config.get("engineClockKhz")!, sram = dev.sramBytes;
      const hbm = (a: number) => a >= REGIONS.HBM.base && a < REGIONS.HBM.base + dev.hbmBytes;
      let faulted = 0;
      for (let e = 0; e < 16; e++) {
        const r = dev.engine(e), pc = r.pc;
        const where = `seed ${seed} engine ${e}: ${r.state} cause ${r.mcause} mtval 0x${r.mtval?.toString(16)} pc 0x${pc.toString(16)}`;
        const x = (n: number) => dev.reg(e, n);
        // the engine's own SRAM as it is now (it may have stored over its code before stopping)
        const word = (a: number) => new DataView(dev.core.memory.buffer).getUint32(dev.core.sramPtr(dev.handle, e) + a, true);
        const end = r.mcause === null ? r.state : `${r.state}:${r.mcause}`;
        seen.set(end, (seen.get(end) ?? 0) + 1);
        expect(pc % 4, where).toBe(0);
        if (r.state !== "faulted") expect([r.mcause, r.mtval], where).toEqual([null, null]);
        if (r.state !== "exited") expect(r.exitCode, where).toBeNull();
        switch (r.state) {
          case "running": // it ran to the end of the run (an engine may end a little past it)
            expect(BigInt(r.cycles) * 1_000_000_000n >= untilPs * khz, where).toBe(true);
            expect(pc, where).toBeLessThan(sram);
            break;
          case "sleeping": // pc is past the wfi
            expect(word(pc - 4), where).toBe(WFI);
            break;
          case "exited": { // stopped at a store to EXIT, with the stored register's low bytes as the code
            const w = word(pc), f3 = (w >>> 12) & 7;
            expect(w & 0x7f, where).toBe(0x23);
            expect((x((w >>> 15) & 31) + immS(w)) >>> 0, where).toBe(MMIO.SYS.EXIT);
            expect(r.exitCode, where).toBe(f3 === 2 ? x((w >>> 20) & 31) : x((w >>> 20) & 31) & ((1 << (8 << f3)) - 1));
            break;
          }
          case "faulted": {
            faulted++;
            const cause = r.mcause!, tval = r.mtval!;
            if (cause === 1) { // fetch outside SRAM: engines fetch only from SRAM
              expect([pc >= sram, tval], where).toEqual([true, pc]);
              break;
            }
            expect(pc, where).toBeLessThan(sram);
            const w = word(pc), op = w & 0x7f, f3 = (w >>> 12) & 7, base = x((w >>> 15) & 31);
            const lr = op === 0x2f && w >>> 27 === 2, amo = op === 0x2f;
            const outside = (a: number) => a >= sram && !hbm(a); // neither SRAM nor HBM: MMIO or nothing
            switch (cause) {
              case 2: expect(tval, where).toBe(w); break; // illegal: mtval holds the instruction
              case 3: expect([w, tval], where).toEqual([EBREAK, pc]); break;
              case 11: expect([w, tval], where).toEqual([ECALL, 0]); break;
              case 0: { // a jump or taken branch to a target that is not 4-aligned
                const a = base, b = x((w >>> 20) & 31);
                const taken = [a === b, a !== b, false, false, (a | 0) < (b | 0), (a | 0) >= (b | 0), a < b, a >= b][f3];
                expect(op === 0x6f || op === 0x67 || (op === 0x63 && taken), where).toBe(true); // JAL, JALR, a taken branch
                const target = op === 0x6f ? pc + immJ(w) : op === 0x67 ? (base + immI(w)) & ~1 : pc + immB(w);
                expect(tval, where).toBe(target >>> 0);
                expect(tval % 4, where).not.toBe(0);
                break;
              }
              case 4: case 5: { // a load (or LR) misaligned, or outside SRAM and HBM
                expect(op === 0x03 || lr, where).toBe(true);
                const addr = op === 0x03 ? (base + immI(w)) >>> 0 : base, size = op === 0x03 ? 1 << (f3 & 3) : 4;
                expect(tval, where).toBe(addr);
                if (cause === 4) expect(addr % size, where).not.toBe(0);
                else expect([addr % size, outside(addr)], where).toEqual([0, true]);
                break;
              }
              case 6: case 7: { // a store (or SC or AMO) misaligned, or outside SRAM and HBM
                expect(op === 0x23 || (amo && !lr), where).toBe(true);
                const addr = op === 0x23 ? (base + immS(w)) >>> 0 : base, size = op === 0x23 ? 1 << f3 : 4;
                expect(tval, where).toBe(addr);
                if (cause === 6) expect(addr % size, where).not.toBe(0);
                else expect([addr % size, outside(addr)], where).toEqual([0, true]);
                break;
              }
              default: expect.unreachable(`${where}: no such cause`);
            }
            break;
          }
          default: expect.unreachable(`${where}: every engine was started`);
        }
      }
      expect(dev.stats()["engine.faults"], `seed ${seed}`).toBe(faulted);
    }
    // the generator reaches every end an engine can come to, and every cause of a fault; the
    // counts replay exactly (fixed seeds): a change here is a change in the interpreter to explain
    expect(Object.fromEntries(seen)).toEqual(EXPECTED_ENDS);
  });

  it("random work requests: each completes with some status and nothing lands outside registered memory", async () => {
    const next = rng(7);
    const ctx = await Context.open(coreModule(), { engines: 2, transportTimeoutPs: 100_000, rnrTimerPs: 100_000 });
    const pd = ctx.allocPd();
    const cq = ctx.createCq(256);
    const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 128, maxRecvWr: 16 });
    ctx.modifyQp(qp, { state: "INIT" });
    ctx.modifyQp(qp, { state: "RTR", destQpNum: qp.qpn });
    ctx.modifyQp(qp, { state: "RTS" });
    // one registered HBM region with guards, and everything else in HBM filled with a pattern
    const hbmBytes = Number(ctx.device.config.get("hbmBytes"));
    const all = ctx.view(0x80000000, hbmBytes);
    all.fill(0x5a);
    const region = 0x80000000 + (1 << 20);
    const mr = ctx.regMr(pd, region, 4096, ["LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ"]);
    let completed = 0;
    const statuses = new Map<string, number>();
    for (let i = 0; i < 128; i++) {
      if (ctx.qpState(qp) === "ERR") {
        ctx.modifyQp(qp, { state: "RESET" });
        ctx.modifyQp(qp, { state: "INIT" });
        ctx.modifyQp(qp, { state: "RTR", destQpNum: qp.qpn });
        ctx.modifyQp(qp, { state: "RTS" });
      }
      ctx.postSend(qp, [{ wrId: i, opcode: "RDMA_WRITE", signaled: true }]);
      // scribble random bytes over the entry just written, keeping only its wr_id
      const slot = ctx.view(qp.sqRing + ((qp.sqPosted - 1) % qp.sqDepth) * WQE.SIZE, WQE.SIZE);
      const id = slot.slice(WQE.wr_id, WQE.wr_id + 8);
      for (let b = 0; b < WQE.SIZE; b++) slot[b] = next() & 0xff;
      const dv = new DataView(slot.buffer, slot.byteOffset, WQE.SIZE);
      // aim most addresses and keys at the region, so that many requests are valid or nearly so
      if (next() % 4) { dv.setBigUint64(WQE.laddr, BigInt(region + (next() % 4096)), true); dv.setUint32(WQE.lkey, mr.lkey, true); }
      if (next() % 4) { dv.setBigUint64(WQE.raddr, BigInt(region + (next() % 4096)), true); dv.setUint32(WQE.rkey, next() % 4 ? mr.rkey : mr.lkey, true); }
      if (next() % 4) dv.setUint8(WQE.opcode, [0, 4, 17, 16, 1, 2][next() % 6]);
      dv.setUint32(WQE.length, next() % 2 ? next() % 512 : next() % 8192, true);
      dv.setUint8(WQE.flags, 1);
      slot.set(id, WQE.wr_id);
      ctx.run(ctx.nowPs + 50_000_000n);
      const wcs = ctx.pollCq(cq, 256);
      expect(wcs.map((w) => w.wrId)).toEqual([BigInt(i)]);
      statuses.set(wcs[0].status, (statuses.get(wcs[0].status) ?? 0) + 1);
      completed += wcs.length;
    }
    expect(completed).toBe(128); // every request completed exactly once
    // some requests were valid and moved bytes; outside the registered region HBM is untouched
    // (the queues and the CQ live in host memory)
    expect(statuses.get("SUCCESS") ?? 0).toBeGreaterThan(4);
    expect(statuses.size).toBeGreaterThan(3); // and several kinds of failure
    const outside = [...all.subarray(0, 1 << 20), ...all.subarray((1 << 20) + 4096)];
    expect(outside.every((b) => b === 0x5a)).toBe(true);
  });
});
