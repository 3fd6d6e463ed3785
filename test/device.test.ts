import { describe, it, expect } from "vitest";
import { Device } from "../host/device.js";
import { coreModule } from "../host/platform/node.js";
import { runFirmware } from "../host/fw/run.js";
import { toPerfetto } from "../host/trace/perfetto.js";
import { programElf, CODE_BASE } from "./helpers/rv.js";

const CONSOLE = 0x10000000, EXIT = 0x10000004, MTIME = 0x10001000, MTIMECMP = 0x10001008;
const MBOX_OUT = 0x10002000, MBOX_IN = 0x10002008;

/** Sleeps until a mailbox word comes, answers it plus one, exits. */
const MAILBOX_ECHO = `
  li t3, 2048          # MEIE
  csrw mie, t3
  wfi
  li t0, ${MBOX_IN}
  lw t1, 0(t0)
  addi t1, t1, 1
  li t0, ${MBOX_OUT}
  sw t1, 0(t0)
  li t0, ${EXIT}
  sw zero, 0(t0)
`;

// 100000 iterations of addi + mul + taken bne: 7 cycles each with the default CPI table
const LOOP = `
  csrr a0, mhartid
  li t1, 0
  li t2, 100000
loop:
  addi t1, t1, 1
  mul t3, t1, t1
  bne t1, t2, loop
  li t0, ${EXIT}
  sw a0, 0(t0)
`;

describe("engine timing and exit", () => {
  it("counts instructions and cycles exactly by the CPI table", async () => {
    const r = await runFirmware(programElf(LOOP), { config: { engines: 3 } });
    for (const e of r.engines) {
      expect(e.state).toBe("exited");
      expect(e.exitCode).toBe(e.id);
      // csrr + 2 li (2 instructions each) + 3 x 100000 + li + sw
      expect(e.instructions).toBe(1 + 4 + 300000 + 2 + 1);
      // csrr 2, li 4 x 1, loop 7 x 100000 - 2 (last bne not taken: 1 instead of 3), li 2, sw to MMIO 8
      expect(e.cycles).toBe(2 + 4 + 700000 - 2 + 2 + 8);
    }
    expect(r.ok).toBe(false); // engines 1 and 2 exit non-zero
  });

  it("follows the engine clock: twice the clock, half the simulated time", async () => {
    const slow = await runFirmware(programElf(LOOP), { config: { engines: 1, engineClockKhz: 1000000 } });
    const fast = await runFirmware(programElf(LOOP), { config: { engines: 1, engineClockKhz: 2000000 } });
    expect(slow.engines[0].cycles).toBe(fast.engines[0].cycles);
    // 700012 cycles at 1 GHz = 700.012 us, run in 200 ns windows
    expect(slow.timePs).toBe(700_200_000);
    expect(fast.timePs).toBe(350_200_000);
  });
});

describe("faults", () => {
  it("stops a faulting engine with pc, mcause and mtval; the others keep running", async () => {
    const src = `
      csrr a0, mhartid
      li t0, 2
      bne a0, t0, fine
      li t1, 0x0f000000
      lw t2, 0(t1)        # engine 2: load access fault at pc CODE_BASE + 0x18
    fine:
      li t0, ${EXIT}
      sw zero, 0(t0)
    `;
    const r = await runFirmware(programElf(src), { config: { engines: 4 } });
    expect(r.engines.map((e) => e.state)).toEqual(["exited", "exited", "faulted", "exited"]);
    expect(r.engines[2]).toMatchObject({ pc: CODE_BASE + 0x18, mcause: 5, mtval: 0x0f000000 });
    expect(r.stats["engine.faults"]).toBe(1);
  });

  it("reports an illegal instruction with its bits", async () => {
    const r = await runFirmware(programElf(`nop\n.word 0xffffffff`), { config: { engines: 1 } });
    expect(r.engines[0]).toMatchObject({ state: "faulted", pc: CODE_BASE + 4, mcause: 2, mtval: 0xffffffff });
  });
});

describe("wfi, timer and mailbox", () => {
  // sleep until mtime + 13700 cycles (10 us at 1.37 GHz) with MTIE enabled and MIE off, then exit
  const SLEEP = `
    li t0, ${MTIME}
    lw t1, 0(t0)
    li t2, 13700
    add t1, t1, t2
    li t0, ${MTIMECMP}
    sw zero, 4(t0)
    sw t1, 0(t0)
    li t3, 128
    csrw mie, t3
    wfi
    li t0, ${EXIT}
    sw zero, 0(t0)
  `;
  it("sleeps in wfi until the timer and counts the time asleep", async () => {
    const r = await runFirmware(programElf(SLEEP), { config: { engines: 16 }, collectTrace: true });
    for (const e of r.engines) {
      expect(e.state).toBe("exited");
      // slept from just after the wfi (cycle 2+2+1+... ) to the cycle mtimecmp: ~10 us
      expect(e.sleepPs).toBeGreaterThan(9_900_000);
      expect(e.sleepPs).toBeLessThan(10_000_000);
    }
    expect(r.stats["engine.wakeups"]).toBe(16);
    const sleeps = r.trace!.filter((t) => t.point === "engine.sleep").length;
    expect(sleeps).toBe(16);
  });

  it("wakes on a host mailbox word and echoes it back", async () => {
    const src = MAILBOX_ECHO;
    const dev = await Device.create(coreModule(), { engines: 2 });
    const img = dev.loadElf(programElf(src));
    dev.start(img.entry);
    dev.run(5_000_000n); // 5 us: both asleep
    expect(dev.engine(0).state).toBe("sleeping");
    expect(dev.mailboxPush(1, 41)).toBe(true);
    dev.run(10_000_000n);
    expect(dev.engine(1).state).toBe("exited");
    expect(dev.engine(0).state).toBe("sleeping");
    expect(dev.mailboxPop(1)).toBe(42);
    expect(dev.mailboxPop(1)).toBe(null);
  });
});

describe("software interrupts between engines", () => {
  const SWI_MSIP = 0x10004000, SWI_RAISE = 0x10004004;
  // engine 0 counts to 1000, raises engine 2, then engine 9 (there is none), and exits; the
  // others sleep with MSIE; a woken engine exits with 16 x (mip & MSIP) + 10 x SWI.MSIP + SWI.MSIP
  // after clearing it: 128 + 10 + 0
  const SRC = `
    csrr a0, mhartid
    bne a0, zero, sleeper
    li t1, 0
    li t2, 1000
  spin:
    addi t1, t1, 1
    bne t1, t2, spin
    li t0, ${SWI_RAISE}
    li t3, 2
    sw t3, 0(t0)
    li t3, 9
    sw t3, 0(t0)
    li t0, ${EXIT}
    sw zero, 0(t0)
  sleeper:
    li t3, 8
    csrw mie, t3
    wfi
    csrr t6, mip
    andi t6, t6, 8
    li t0, ${SWI_MSIP}
    lw t4, 0(t0)
    sw zero, 0(t0)
    lw t5, 0(t0)
    li t1, 10
    mul t4, t4, t1
    add t4, t4, t5
    slli t6, t6, 4
    add t4, t4, t6
    li t0, ${EXIT}
    sw t4, 0(t0)
  `;
  it("wakes only the engine raised, at the raiser's time; a number that is no engine is counted", async () => {
    const r = await runFirmware(programElf(SRC), { config: { engines: 4 } });
    expect(r.engines.map((e) => e.state)).toEqual(["exited", "sleeping", "exited", "sleeping"]);
    expect(r.engines[2].exitCode).toBe(138);
    expect(r.stats["engine.wakeups"]).toBe(1);
    expect(r.stats["engine.bad_raise"]).toBe(1);
    // engine 0's store to RAISE executes at cycle 4009: csrr (2) + bne not taken (1) + 2 li (4)
    // + 1000 x (addi 1 + taken bne 3) - 2 (the last bne falls through) + 2 li (4). Engine 2
    // wakes at that time, which is cycle 4010 on its clock (cycle c lies at ceil(c x 10^9 / kHz)
    // ps, a little past c: the wake takes the cycle at or after it), then runs csrr 2, andi 1,
    // li 2, lw/sw/lw to MMIO 3 x 8, li 2, mul 3, add 1, slli 1, add 1, li 2, sw 8 = 47
    expect(r.engines[2].cycles).toBe(4010 + 47);
    // engine 0: the raise (8), li (2), the bad raise (8), li (2), exit (8)
    expect(r.engines[0].cycles).toBe(4009 + 28);
  });
});

// Engines race on one HBM counter with amoadd and print; the result depends on interleaving.
const RACE = `
  li s0, 0x80000000
  li s1, 2000
  li s2, ${CONSOLE}
  csrr a0, mhartid
loop:
  li t1, 1
  amoadd.w t2, t1, (s0)
  andi t3, t2, 63
  addi t3, t3, 48
  sb t3, 0(s2)
  addi s1, s1, -1
  bne s1, zero, loop
  li t0, ${EXIT}
  sw zero, 0(t0)
`;

async function raceDevice() {
  const dev = await Device.create(coreModule(), { engines: 16, interleaveQuantumPs: 50000 }, { collectTrace: true });
  dev.start(dev.loadElf(programElf(RACE)).entry);
  return dev;
}

describe("determinism and save/restore", () => {
  it("gives byte-identical results after save, restore into a new instance, and continue", async () => {
    const whole = await raceDevice();
    whole.run(1_000_000_000n);
    const endState = whole.save();

    const first = await raceDevice();
    // stop mid-run on a grid line (a multiple of the 50 ns quantum): windows end there anyway
    expect(first.run(750_000n)).toBe(750_000n);
    const snap = first.save();
    const second = await Device.restore(coreModule(), snap);
    second.run(1_000_000_000n);
    expect(Buffer.compare(second.save(), endState)).toBe(0);
    // the console text printed after the restore is the tail of the uninterrupted run's text
    for (let e = 0; e < 16; e++) expect(whole.console(e).endsWith(second.console(e))).toBe(true);
    expect(Array.from(whole.readHbm(0, 4))).toEqual([0x00, 0x7d, 0x00, 0x00]); // 32000 increments
  });

  it("stops exactly where asked, mid-window, the same way on every run", async () => {
    // 777_777 ps is not on the 50 ns grid: the window is cut there, and each engine's clock
    // passes it by less than one instruction (at most an HBM amoadd: 150 cycles at 1.37 GHz)
    const runs = await Promise.all([raceDevice(), raceDevice()]);
    const psOfCycles = (c: number) => (c * 1e9) / 1_370_000;
    for (const dev of runs) {
      expect(dev.run(777_777n)).toBe(777_777n);
      for (let e = 0; e < 16; e++) {
        const ps = psOfCycles(dev.engine(e).cycles);
        expect(ps).toBeGreaterThanOrEqual(777_777);
        expect(ps).toBeLessThan(777_777 + psOfCycles(150));
      }
      dev.run(1_000_000_000n);
    }
    expect(Buffer.compare(runs[0]!.save(), runs[1]!.save())).toBe(0);
  });

  it("produces the same trace bytes on every run", async () => {
    const a = await raceDevice(), b = await raceDevice();
    const ta = a.run(1_000_000_000n), tb = b.run(1_000_000_000n);
    const ja = JSON.stringify(toPerfetto(a.traceRecords, 16, ta));
    expect(JSON.stringify(toPerfetto(b.traceRecords, 16, tb))).toBe(ja);
    expect(a.console(5)).toBe(b.console(5));
    expect(a.console(5).length).toBe(2000);
  });
});

describe("scheduler", () => {
  it("runs events due at the same time in the order they were scheduled", async () => {
    // engine i waits (15 - i) x 1000 loop turns, then sleeps until the same absolute mtimecmp:
    // engine 15 schedules its timer event first, engine 0 last; all fall due at one picosecond
    const src = `
      csrr a0, mhartid
      li t0, 15
      sub t0, t0, a0
      li t1, 1000
      mul t0, t0, t1
    delay:
      beq t0, zero, go
      addi t0, t0, -1
      j delay
    go:
      li t0, ${MTIMECMP}
      li t1, 2000000
      sw zero, 4(t0)
      sw t1, 0(t0)
      li t3, 128
      csrw mie, t3
      wfi
      li t0, ${EXIT}
      sw zero, 0(t0)
    `;
    const r = await runFirmware(programElf(src), { config: { engines: 16 }, collectTrace: true });
    const wakes = r.trace!.filter((t) => t.point === "engine.wake");
    expect(new Set(wakes.map((w) => w.timePs)).size).toBe(1);
    expect(wakes.map((w) => w.engine)).toEqual([15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
  });

  it("spends no windows on engines asleep in wfi", async () => {
    const { readFileSync } = await import("node:fs");
    const r = await runFirmware(readFileSync("firmware/bench/idle.elf"), { config: { engines: 16 }, untilPs: 100_000_000_000 });
    // a 1 kHz tick for 100 ms: 99 wake-ups per engine, each a few windows of work; running
    // every 200 ns window instead would be 500000 windows
    expect(r.stats["engine.wakeups"]).toBe(16 * 99);
    expect(r.stats["sched.windows"]).toBeLessThan(2 * 16 * 99);
    expect(r.engines.every((e) => e.state === "sleeping")).toBe(true);
  });
});

describe("console lines", () => {
  it("keep a UTF-8 character whole when its bytes are drained in two steps", async () => {
    const src = `
      li t0, ${CONSOLE}
      li t1, 0xc3
      sb t1, 0(t0)          # first byte of U+00E9
      li t2, 1000
    wait:
      addi t2, t2, -1
      bne t2, zero, wait
      li t1, 0xa9
      sb t1, 0(t0)          # second byte, microseconds later
      li t1, 10
      sb t1, 0(t0)
      li t0, ${EXIT}
      sw zero, 0(t0)
    `;
    const lines: string[] = [];
    const dev = await Device.create(coreModule(), { engines: 1 }, { onConsoleLine: (_e, l) => lines.push(l) });
    dev.start(dev.loadElf(programElf(src)).entry);
    dev.run(400_000n); // the first byte is drained here
    expect(dev.console(0)).toBe("\ufffd");
    dev.run(1_000_000_000n);
    expect(lines).toEqual(["\u00e9"]);
    expect(dev.console(0)).toBe("\u00e9\n");
  });
});

describe("time a cluster can drive", () => {
  it("moves an idle device's clock to exactly where it is asked", async () => {
    const dev = await Device.create(coreModule(), { engines: 2 });
    expect(dev.nextActivityPs).toBeNull(); // nothing will ever happen
    expect(dev.advance(5_000_123n)).toBe(5_000_123n);
    expect(dev.nowPs).toBe(5_000_123n);
    expect(dev.advance(7_000_000n)).toBe(7_000_000n);
  });

  it("says when something next happens: now while an engine runs, its timer while it sleeps", async () => {
    // engine 0 sets mtimecmp to 2000 cycles, enables the timer and sleeps in wfi
    const dev = await Device.create(coreModule(), { engines: 1, engineClockKhz: 1_000_000 });
    dev.start(dev.loadElf(programElf(`
      li t0, ${MTIMECMP}
      li t1, 2000
      sw t1, 0(t0)
      sw zero, 4(t0)
      li t1, 0x80
      csrw mie, t1
      wfi
      li t0, ${EXIT}
      sw zero, 0(t0)
    `)).entry);
    expect(dev.nextActivityPs).toBe(0n); // running
    dev.advance(1_000_000n); // 1 us: asleep, timer at 2000 cycles = 2 us
    expect(dev.engine(0).state).toBe("sleeping");
    expect(dev.nextActivityPs).toBe(2_000_000n);
    dev.advance(3_000_000n);
    expect(dev.engine(0).state).toBe("exited");
    expect(dev.nextActivityPs).toBeNull();
  });

  it("takes a mailbox word for a later time: the engine wakes exactly then", async () => {
    const src = MAILBOX_ECHO;
    const dev = await Device.create(coreModule(), { engines: 2, mailboxDepth: 2 }, { collectTrace: true });
    dev.start(dev.loadElf(programElf(src)).entry);
    dev.advance(1_000_000n);
    expect(dev.mailboxPush(0, 7, 3_000_000n)).toBe(true);
    expect(dev.mailboxPush(0, 8, 2_000_000n)).toBe(true); // no earlier than the word before it
    expect(dev.mailboxPush(0, 9, 5_000_000n)).toBe(false); // depth 2: both places are taken
    expect(() => dev.mailboxPush(1, 1, 999_999n)).toThrow(RangeError);
    dev.advance(2_999_999n);
    expect(dev.engine(0).state).toBe("sleeping");
    dev.run(10_000_000n);
    const wakes = dev.traceRecords.filter((r) => r.point === "engine.wake").map((r) => [r.engine, Number(r.timePs)]);
    // the wake is stamped at the engine's next cycle edge at or after 3 us (1.37 GHz: 4110 cycles)
    expect(wakes).toEqual([[0, Math.ceil((4110 * 1e9) / 1_370_000)]]);
    expect(dev.mailboxPop(0)).toBe(8); // the first word, plus one
    expect(dev.engine(0).state).toBe("exited");
    expect(dev.stats()["mbox.in_overflow"]).toBe(1);
  });
});
