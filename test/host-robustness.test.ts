// The host under hostile input (adversarial review, issue 6): firmware that prints forever,
// configs at their documented maxima, damaged snapshots, engine indices that do not exist.
// None of them may take the process down or write device state it should not.

import { describe, it, expect } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Device, SnapshotError } from "../host/device.js";
import { ConfigError, ARENA_LIMIT_BYTES } from "../host/config.js";
import { writeSnapshot } from "../host/snapshot.js";
import { runFirmware } from "../host/fw/run.js";
import { coreModule } from "../host/platform/node.js";
import { MMIO } from "../host/generated/layouts.js";
import { assemble, programElf, CODE_BASE } from "./helpers/rv.js";

const MiB = 1024 * 1024;

// Prints lines of 63 characters and a newline, forever; s1 counts the bytes stored so far.
const PRINT_FOREVER = `
  li s2, ${MMIO.SYS.CONSOLE_TX}
  li s1, 0
  li t4, 63
loop:
  andi t3, s1, 63
  addi t1, t3, 48       # '0' + column
  bne t3, t4, put
  addi t1, zero, 10     # column 63: newline
put:
  sb t1, 0(s2)
counted:
  addi s1, s1, 1
  j loop
`;
/** Where an engine stopped between its store and the count of it. */
const COUNTED_PC = CODE_BASE + assemble(PRINT_FOREVER.slice(0, PRINT_FOREVER.indexOf("counted:"))).length * 4;

/** Bytes engine `e` of `dev` (running PRINT_FOREVER) has stored to its console. */
function printed(dev: Device, e: number): number {
  return dev.reg(e, 9) + (dev.engine(e).pc === COUNTED_PC ? 1 : 0);
}

describe("a firmware print loop", () => {
  it("keeps console text up to the cap, counts the rest, streams every line, and stays in bounded memory", async () => {
    let lines = 0, lineBytes = 0, badLines = 0;
    const dev = await Device.create(coreModule(), { engines: 1 }, {
      onConsoleLine: (_e, line) => {
        lines++;
        lineBytes += line.length + 1;
        if (line.length !== 63) badLines++;
      },
    });
    dev.start(dev.loadElf(programElf(PRINT_FOREVER)).entry);
    const before = process.memoryUsage();
    dev.run(120_000_000_000n); // 120 ms: 16 cycles a byte at 1.37 GHz, about 10 MiB
    const after = process.memoryUsage();

    const total = printed(dev, 0);
    expect(total).toBeGreaterThan(8 * MiB);
    expect(dev.stats()["console.dropped"]).toBe(0); // the core's ring never overflowed: the host saw every byte
    const text = dev.console(0);
    expect(text.length).toBe(MiB); // the default cap, to the byte (ASCII)
    expect(text.slice(0, 64)).toBe("0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmn\n");
    expect(dev.consoleDropped(0)).toBe(total - MiB);
    // the line reader saw every complete line, cap or not
    expect(lines).toBe(Math.floor(total / 64));
    expect(lineBytes).toBe(lines * 64);
    expect(badLines).toBe(0);
    // a number[] per console (the old keeping) grows by well over 100 MB for 10 MiB
    const grown = after.heapUsed + after.arrayBuffers - (before.heapUsed + before.arrayBuffers);
    expect(grown).toBeLessThan(24 * MiB);
  });

  it("honours consoleKeepBytes, and a line that never ends reaches the line reader in pieces", async () => {
    const src = `
      li s2, ${MMIO.SYS.CONSOLE_TX}
      li t1, 120            # 'x', never a newline
    loop:
      sb t1, 0(s2)
      j loop
    `;
    const pieces: number[] = [];
    const dev = await Device.create(coreModule(), { engines: 2 }, { consoleKeepBytes: 1000, onConsoleLine: (e, l) => e === 1 && pieces.push(l.length) });
    dev.start(dev.loadElf(programElf(src)).entry);
    dev.run(20_000_000_000n); // 20 ms: 10 cycles a byte, about 2.7 MB an engine
    dev.flushConsole();
    expect(dev.console(1)).toBe("x".repeat(1000));
    const total = pieces.reduce((a, b) => a + b, 0);
    expect(total).toBe(1000 + dev.consoleDropped(1));
    expect(total).toBeGreaterThan(2_000_000);
    expect(pieces.slice(0, -1).every((n) => n === 65536)).toBe(true);
  });

  it("reports dropped console bytes in menic fw run --json and in its summary table", () => {
    const dir = mkdtempSync(join(tmpdir(), "menic-robust-"));
    const elf = join(dir, "print.elf");
    writeFileSync(elf, programElf(PRINT_FOREVER));
    const run = (...args: string[]) => spawnSync("node", ["bin/menic.js", "fw", "run", elf, "--engines", "1", "--until", "30ms", ...args], { encoding: "utf8", maxBuffer: 64 * MiB });
    const json = run("--json");
    expect(json.status).toBe(1); // still running at the time limit
    const out = JSON.parse(json.stdout);
    expect(out.engines[0].console.length).toBe(MiB);
    expect(out.engines[0].consoleDropped).toBeGreaterThan(MiB); // 30 ms print about 2.5 MB
    const text = run();
    // every line went to stdout while it ran, not just the kept ones
    const streamed = text.stdout.split("\n").filter((l) => l.startsWith("[e00] ")).length;
    expect(streamed).toBe(Math.ceil((MiB + out.engines[0].consoleDropped) / 64)); // the last, partial line is flushed at the end
    expect(text.stdout).toMatch(/asleep\s+console dropped\n/);
    expect(text.stdout).toMatch(new RegExp(`running\\s+pc 0x[0-9a-f]+\\s+\\d+\\s+\\d+\\s+0 ps\\s+${out.engines[0].consoleDropped}\\n`));
  });
});

describe("configs at the documented maxima", () => {
  const tooLarge = [
    { hbmBytes: 1073741824 },
    { hbmBytes: 512 * MiB, hostMemBytes: 512 * MiB },
    { engines: 64, sramBytes: 16 * MiB },
  ];
  for (const config of tooLarge) {
    it(`refuses ${JSON.stringify(config)} with a ConfigError naming the arena's fields`, async () => {
      const err = await Device.create(coreModule(), config).catch((e) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect(err.message).toMatch(/hbmBytes \d+ \+ hostMemBytes \d+ \+ engines \d+ x sramBytes \d+ = \d+ B/);
      expect(err.message).toContain(String(ARENA_LIMIT_BYTES));
    });
  }

  it("leaves the tables to the core: memories that fit alone but not with the tables are refused, not aborted", async () => {
    // hbm + host + 16 x 128 KiB SRAM is exactly the limit: the host's check passes, the core's refuses
    const config = { hbmBytes: ARENA_LIMIT_BYTES - 16 * MiB - 2 * MiB };
    await expect(Device.create(coreModule(), config)).rejects.toThrow(/^config: the device must fit in one arena/);
  });

  it("creates a device just under the limit, and the process lives on after refusals", async () => {
    const small = await Device.create(coreModule(), {});
    const arena = small.core.arenaBytes(small.handle);
    const tables = arena - 16 * MiB - 16 * MiB - 2 * MiB; // everything but the default memories
    // the largest HBM (a multiple of 64 KiB) that fits beside the defaults: the core allocates
    // arena + 64 bytes (alignment) in a block of at most 2^30 - 4 bytes (its 4-byte header)
    const hbmBytes = Math.floor((ARENA_LIMIT_BYTES - 4 - 64 - tables - 18 * MiB) / 65536) * 65536;
    const big = await Device.create(coreModule(), { hbmBytes });
    expect(big.core.arenaBytes(big.handle)).toBe(tables + 18 * MiB + hbmBytes);
    expect(ARENA_LIMIT_BYTES - big.core.arenaBytes(big.handle)).toBeLessThan(65536 + 68);
    await expect(Device.create(coreModule(), { hbmBytes: hbmBytes + 65536 })).rejects.toBeInstanceOf(ConfigError);
    const r = await runFirmware(readFileSync("firmware/examples/hello.elf"), { config: { engines: 2 } });
    expect(r.engines.map((e) => e.console)).toEqual(["hello from engine 0 of 2\n", "hello from engine 1 of 2\n"]);
  });
});

describe("restoring a damaged snapshot", () => {
  const SRC = `
    li s0, 0x80000000
    csrr a0, mhartid
  loop:
    li t1, 1
    amoadd.w t2, t1, (s0)
    j loop
  `;
  async function snapshot() {
    const dev = await Device.create(coreModule(), { engines: 2, hbmBytes: 65536, hostMemBytes: 65536, sramBytes: 4096 });
    dev.start(dev.loadElf(programElf(SRC)).entry);
    dev.run(1_000_000n);
    return { dev, snap: dev.save() };
  }
  const CONFIG_AT = 32, HEADER_BYTES = 32;

  const flip = (snap: Uint8Array, at: number) => {
    const copy = snap.slice();
    copy[at] ^= 0x10;
    return copy;
  };
  async function refusal(bytes: Uint8Array): Promise<Error> {
    const err = await Device.restore(coreModule(), bytes).then(() => null, (e) => e);
    expect(err).toBeInstanceOf(SnapshotError);
    expect(err).not.toBeInstanceOf(TypeError);
    expect(err).not.toBeInstanceOf(RangeError);
    expect(err).not.toBeInstanceOf(WebAssembly.RuntimeError);
    return err;
  }

  it("says what is wrong: magic, version, config slots, sizes, checksum", async () => {
    const { snap } = await snapshot();
    const arenaAt = snap.length - new DataView(snap.buffer).getUint32(20, true);
    expect((await refusal(flip(snap, 0))).message).toBe("snapshot: not a menic snapshot (bad magic)");
    expect((await refusal(flip(snap, 8))).message).toMatch(/^snapshot: version 18, this build reads version 2$/);
    expect((await refusal(flip(snap, 12))).message).toMatch(/^snapshot: \d+ config slots, this build has \d+$/);
    expect((await refusal(flip(snap, 16))).message).toMatch(/^snapshot: checksum mismatch/); // the arena's address
    expect((await refusal(flip(snap, 20))).message).toMatch(/^snapshot: (truncated|\d+ bytes after the end)/); // its size
    expect((await refusal(flip(snap, 23))).message).toMatch(/^snapshot: truncated: \d+ bytes, the header says \d+$/);
    expect((await refusal(flip(snap, 24))).message).toMatch(/^snapshot: checksum mismatch/); // the checksum itself
    expect((await refusal(flip(snap, CONFIG_AT))).message).toMatch(/^snapshot: checksum mismatch/); // engines
    expect((await refusal(flip(snap, arenaAt + 5000))).message).toMatch(/^snapshot: checksum mismatch/);
    expect((await refusal(flip(snap, snap.length - 1))).message).toMatch(/^snapshot: checksum mismatch/);
    expect((await refusal(snap.subarray(0, snap.length - 1))).message).toMatch(/^snapshot: truncated/);
    expect((await refusal(snap.subarray(0, HEADER_BYTES + 3))).message).toMatch(/^snapshot: truncated/);
    expect((await refusal(snap.subarray(0, 20))).message).toMatch(/^snapshot: truncated: 20 bytes, shorter than the 32-byte header$/);
    expect((await refusal(snap.subarray(0, 4))).message).toBe("snapshot: not a menic snapshot (bad magic)");
    expect((await refusal(new Uint8Array(0))).message).toBe("snapshot: not a menic snapshot (bad magic)");
    const longer = new Uint8Array(snap.length + 3);
    longer.set(snap);
    expect((await refusal(longer)).message).toBe(`snapshot: 3 bytes after the end the header gives (${snap.length} bytes)`);
  });

  it("refuses an intact snapshot of an arena this build lays out elsewhere", async () => {
    const { snap } = await snapshot();
    const dv = new DataView(snap.buffer);
    const slots = dv.getUint32(12, true), base = dv.getUint32(16, true);
    const config = new BigUint64Array(snap.slice(CONFIG_AT, CONFIG_AT + 8 * slots).buffer);
    const arena = snap.subarray(CONFIG_AT + 8 * slots);
    expect((await refusal(writeSnapshot(config, base + 64, arena))).message).toMatch(/^snapshot: arena layout mismatch: \d+ bytes at 0x[0-9a-f]+, this build lays the device out in \d+ bytes at 0x/);
    expect((await refusal(writeSnapshot(config, base, arena.subarray(64)))).message).toMatch(/^snapshot: arena layout mismatch/);
    // a well-formed snapshot of a config this build refuses names the field
    config[0] = 99n; // engines
    await expect(Device.restore(coreModule(), writeSnapshot(config, base, arena))).rejects.toThrow("snapshot.config.engines: must be in [1, 64], got 99");
  });

  it("restores an intact snapshot that continues like the original", async () => {
    const { dev, snap } = await snapshot();
    const copy = await Device.restore(coreModule(), snap);
    dev.run(3_000_000n);
    copy.run(3_000_000n);
    expect(Buffer.compare(copy.save(), dev.save())).toBe(0);
    expect(copy.readHbm(0, 4)).toEqual(dev.readHbm(0, 4));
  });
});

describe("engine indices and addresses", () => {
  async function device() {
    const dev = await Device.create(coreModule(), { engines: 2, hbmBytes: 65536, hostMemBytes: 65536 });
    dev.loadElf(programElf(`li t0, ${MMIO.SYS.EXIT}\nsw zero, 0(t0)`));
    return dev;
  }
  const bad = [2, 3, 64, 1000, -1, 0.5, NaN, Infinity];

  it("refuses an engine that does not exist, naming the argument and the range, and changes nothing", async () => {
    const dev = await device();
    const before = dev.save();
    for (const i of bad) {
      const msg = `engine must be an integer in [0, 1], got ${i}`;
      expect(() => dev.engine(i)).toThrow(msg);
      expect(() => dev.console(i)).toThrow(msg);
      expect(() => dev.consoleDropped(i)).toThrow(msg);
      expect(() => dev.reg(i, 1)).toThrow(msg);
      expect(() => dev.mailboxPush(i, 0xdeadbeef)).toThrow(msg);
      expect(() => dev.mailboxPop(i)).toThrow(msg);
    }
    expect(() => dev.reg(0, 32)).toThrow("r must be an integer in [0, 31], got 32");
    expect(Buffer.compare(dev.save(), before)).toBe(0);
  });

  it("refuses a start count past the engines and an entry that is not a u32, starting nothing", async () => {
    const dev = await device();
    const before = dev.save();
    for (const count of [3, 65, -1, 1.5, NaN]) expect(() => dev.start(0, count)).toThrow(`count must be an integer in [0, 2], got ${count}`);
    for (const entry of [-4, 2 ** 32, 0.5, NaN]) expect(() => dev.start(entry)).toThrow(`entry must be an integer in [0, 4294967295], got ${entry}`);
    expect(Buffer.compare(dev.save(), before)).toBe(0);
    expect([dev.engine(0).state, dev.engine(1).state]).toEqual(["idle", "idle"]);
    // a bad entry that is a u32 is the engine's business: it faults
    dev.start(0x0f000000, 1);
    dev.run(1_000_000n);
    expect(dev.engine(0)).toMatchObject({ state: "faulted", mcause: 1 });
    expect(dev.engine(1).state).toBe("idle");
  });

  it("refuses an HBM read outside HBM", async () => {
    const dev = await device();
    expect(dev.readHbm(65536 - 4, 4)).toHaveLength(4);
    expect(() => dev.readHbm(65536 - 4, 5)).toThrow("length must be an integer in [0, 4], got 5");
    expect(() => dev.readHbm(-1, 1)).toThrow("offset must be an integer in [0, 65536], got -1");
  });
});
