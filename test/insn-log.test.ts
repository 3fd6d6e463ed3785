// The instruction log (`menic fw run --log insn`, host/debug/insn-log.ts over the core's
// executeLogged): exact lines for known code, every retired instruction once, the limit, the
// engine filter, traps, and a logged run computing what an unlogged one does.

import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { runFirmware } from "../host/fw/run.js";
import { programElf, CODE_BASE } from "./helpers/rv.js";
import { disassemble } from "../host/debug/disasm.js";

const hello = new Uint8Array(readFileSync("firmware/examples/hello.elf"));
const psum = new Uint8Array(readFileSync("firmware/examples/psum.elf"));

describe("the instruction log", () => {
  it("prints pc, bytes, disassembly and the register written for hello.elf's first instructions", async () => {
    const r = await runFirmware(hello, { config: { engines: 1 }, insnLog: {} });
    expect(r.insnLog!.lines.slice(0, 12)).toEqual([
      "e0 0x00004400 (0x00000117) auipc sp, 0x0                 sp 0x00004400",
      "e0 0x00004404 (0x00010113) addi sp, sp, 0x0              sp 0x00004400",
      "e0 0x00004408 (0x00001297) auipc t0, 0x1                 t0 0x00005408",
      "e0 0x0000440c (0x04028293) addi t0, t0, 0x40             t0 0x00005448",
      "e0 0x00004410 (0x00001317) auipc t1, 0x1                 t1 0x00005410",
      "e0 0x00004414 (0x03830313) addi t1, t1, 0x38             t1 0x00005448",
      "e0 0x00004418 (0x0062f863) bgeu t0, t1, 0x4428",
      "e0 0x00004428 (0x00000097) auipc ra, 0x0                 ra 0x00004428",
      "e0 0x0000442c (0x010080e7) jalr ra, 0x10(ra)             ra 0x00004430",
      "e0 0x00004438 (0xff010113) addi sp, sp, -0x10            sp 0x000043f0",
      "e0 0x0000443c (0x00112623) sw ra, 0xc(sp)",
      "e0 0x00004440 (0xf14025f3) csrrs a1, 0xf14, zero         a1 0x00000000",
    ]);
    // every instruction the engine retired, once (hello traps on none)
    expect(r.insnLog!.total).toBe(r.engines[0]!.instructions);
    expect(r.insnLog!.lines.length).toBe(r.insnLog!.total);
  });

  it("changes nothing the program computes (the translator is on without the log)", async () => {
    const plain = await runFirmware(psum, { config: { engines: 4 } });
    const logged = await runFirmware(psum, { config: { engines: 4 }, insnLog: { engines: [1, 3], limit: 1_000_000 } });
    expect(logged.engines).toEqual(plain.engines);
    expect(logged.timePs).toBe(plain.timePs);
    expect(logged.stats).toEqual(plain.stats);
    // only engines 1 and 3, all of their instructions
    const lines = logged.insnLog!.lines;
    expect(lines.filter((l) => l.startsWith("e1 ")).length).toBe(plain.engines[1]!.instructions);
    expect(lines.filter((l) => l.startsWith("e3 ")).length).toBe(plain.engines[3]!.instructions);
    expect(lines.length).toBe(plain.engines[1]!.instructions + plain.engines[3]!.instructions);
  });

  it("logs a trapping instruction with its mcause", async () => {
    const r = await runFirmware(programElf("li t0, 0\nlw t1, 0(t0)"), { config: { engines: 1 }, insnLog: {} });
    expect(r.insnLog!.lines.at(-1)).toBe(`e0 0x${(CODE_BASE + 8).toString(16).padStart(8, "0")} (0x0002a303) lw t1, 0x0(t0)`.padEnd(56) + " trap mcause 5");
  });

  it("--log-limit stops the log at exactly n lines and says so", () => {
    const out = spawnSync(process.execPath, ["bin/menic.js", "fw", "run", "firmware/examples/hello.elf", "--engines", "1", "--log", "insn=0", "--log-limit", "7"], { encoding: "utf8" });
    expect(out.status).toBe(0);
    const lines = out.stdout.split("\n");
    expect(lines.filter((l) => /^e0 0x/.test(l)).length).toBe(7);
    expect(lines).toContain("insn log: stopped at --log-limit 7 lines; the engines ran 763 more logged instructions");
    const bad = spawnSync(process.execPath, ["bin/menic.js", "fw", "run", "firmware/examples/hello.elf", "--log", "insn=2-1"], { encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--log insn=2-1: engines "2-1"');
    const beyond = spawnSync(process.execPath, ["bin/menic.js", "fw", "run", "firmware/examples/hello.elf", "--engines", "2", "--log", "insn=5"], { encoding: "utf8" });
    expect(beyond.status).toBe(2);
    expect(beyond.stderr).toContain("--log insn: engine 5 is not one of the device's engines 0-1");
  });

  it("disassembles each kind of operand", () => {
    expect(disassemble(0x40b50533, 0)).toBe("sub a0, a0, a1");
    expect(disassemble(0x4045d593, 0)).toBe("srai a1, a1, 4");
    expect(disassemble(0xfe0718e3, 0x100)).toBe("bne a4, zero, 0xf0");
    expect(disassemble(0x04b5252f, 0)).toBe("amoadd.w.aq a0, a1, (a0)");
    expect(disassemble(0x30529073, 0)).toBe("csrrw zero, 0x305, t0");
    expect(disassemble(0x10500073, 0)).toBe("wfi");
    expect(disassemble(0x0000, 0)).toBe(".word 0x0");
  });
});
