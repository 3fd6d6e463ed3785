import { describe, it, expect } from "vitest";
import { Device } from "../host/device.js";
import { Context } from "../host/verbs.js";
import { coreModule } from "../host/platform/node.js";
import { writeElf, R, I, S, B, J } from "./helpers/rv.js";
import { WQE, MMIO, REGIONS } from "../host/generated/layouts.js";

// A small deterministic generator (xorshift32) so that a failure replays exactly.
function rng(seed: number) {
  let x = seed >>> 0 || 1;
  return () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), x >>> 0);
}

const WFI = 0x10500073, ECALL = 0x00000073, EBREAK = 0x00100073, MRET = 0x30200073;

/**
 * Random code that runs for a while: mostly well-formed instructions over eight registers with
 * short jumps, region bases loaded by LUI (so loads and stores reach SRAM, HBM and MMIO), a
 * store to EXIT now and then, and an arbitrary word one time in 64. Wholly random words fault
 * at the first instruction (3 in 4 do not even end in 0b11), which tests almost nothing.
 */
function garbage(next: () => number, words: number): Uint32Array {
  const out: number[] = [];
  const pick = <T>(a: T[]) => a[next() % a.length];
  while (out.length < words) {
    const r = next();
    const rd = (r >>> 7) & 7, rs1 = (r >>> 15) & 7, rs2 = (r >>> 20) & 7;
    const small = (next() % 64) - 32;
    const k = next() % 64;
    if (k < 1) out.push(r);
    else if (k < 2) out.push(((MMIO.SYS.EXIT & ~0xfff) | (rs1 << 7) | 0x37) >>> 0, S(MMIO.SYS.EXIT & 0xfff, rs2, rs1, next() % 3, 0x23));
    else if (k < 20) out.push(I(next() % 2 ? small : r >>> 20, rs1, pick([0, 2, 3, 4, 6, 7]), rd, 0x13)); // OP-IMM
    else if (k < 30) { // OP and M
      const f3 = next() % 8, f7 = pick(f3 === 0 || f3 === 5 ? [0, 0x20, 1] : [0, 1]);
      out.push(R(f7, rs2, rs1, f3, rd, 0x33));
    } else if (k < 36) out.push(((pick([REGIONS.MMIO.base, REGIONS.MMIO.base, REGIONS.HBM.base, 0, r]) & 0xfffff000) | (rd << 7) | 0x37) >>> 0);
    else if (k < 41) out.push(I((small + 32) * 4, rs1, pick([0, 1, 2, 4, 5]), rd, 0x03));
    else if (k < 46) out.push(S(pick([(small + 32) * 4, 4, 4, 0]), rs2, rs1, pick([0, 1, 2]), 0x23));
    else if (k < 52) out.push(B(small * 4, rs2, rs1, pick([0, 1, 4, 5, 6, 7])));
    else if (k < 54) out.push(J(small * 4, rd));
    else if (k < 55) out.push(I(next() % 2 ? small * 4 : small, rs1, 0, rd, 0x67)); // JALR, sometimes misaligned
    else if (k < 57) out.push(R(pick([0, 1, 2, 3, 4, 8, 12, 16, 20, 24, 28]) << 2, rs2, rs1, 2, rd, 0x2f)); // AMO and LR/SC (funct5, aq = rl = 0)
    else if (k < 58) out.push(pick([WFI, ECALL, EBREAK, MRET]));
    else if (k < 60) out.push(I(pick([0x300, 0x304, 0x305, 0x340, 0x341, 0x342, 0x343, 0x344, 0xb00, 0xf14]), rs1, pick([1, 2, 3, 5, 6, 7]), rd, 0x73));
    else out.push(((r & 0xfffff000) | (rd << 7) | 0x17) >>> 0); // AUIPC
  }
  return Uint32Array.from(out.slice(0, words));
}

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
