// The firmware SDK and `fw build` (host/fw/build.ts): the committed example ELFs match their
// sources byte for byte, build failures carry clang's diagnostics, and 64-bit division links
// against the SDK's own helpers. Tests that need clang are skipped, with the reason in their
// name, on machines without it; the committed ELFs are checked either way.
import { afterAll, describe, expect, it } from "vitest";
import { executorElf } from "../host/generated/executor-elf.js";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { buildFirmware, findClang, findSoftFloat, sdkRoot } from "../host/fw/build.js";
import { runFirmware } from "../host/fw/run.js";
import { EXAMPLES } from "../host/fw/examples.js";
import { checkImage, parseElf } from "../host/elf.js";
import { lineTableFiles } from "./helpers/dwarf.js";

const root = sdkRoot();
const clang = findClang();
const NO_CLANG = "skipped: clang not found (apt-get install clang lld)";
/** `it` when clang is installed, otherwise `it.skip` with the reason in the test's name. */
const withClang = (name: string, fn: () => void) => (clang === null ? it.skip(`${name} [${NO_CLANG}]`, fn) : it(name, fn));
const softFloat = findSoftFloat();
const NO_SOFT_FLOAT = "skipped: no soft-float runtime (apt-get install gcc-riscv64-unknown-elf)";

const tmp = mkdtempSync(join(tmpdir(), "menic-fw-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Write a C source into the temp dir and return its path. */
function source(name: string, text: string): string {
  const path = join(tmp, name);
  writeFileSync(path, text);
  return path;
}

describe("the graph executor the host carries", () => {
  it("host/generated/executor-elf.ts holds the bytes of firmware/graph/executor.elf", () => {
    const committed = readFileSync(join(root, "firmware", "graph", "executor.elf"));
    expect(Buffer.compare(Buffer.from(executorElf()), committed), "host/generated/executor-elf.ts is stale: run npm run fw:examples").toBe(0);
  });
});

describe("committed example firmware", () => {
  for (const ex of EXAMPLES) {
    const build = ex.softFloat && softFloat === null ? (name: string, fn: () => void) => it.skip(`${name} [${NO_SOFT_FLOAT}]`, fn) : withClang;
    build(`${ex.out} is what its sources build to`, () => {
      const fresh = buildFirmware({ sources: ex.sources, out: join(tmp, `${ex.name}.elf`), optLevel: "2", debug: ex.debug, defines: ex.defines, cwd: root }).elf;
      const committed = readFileSync(join(root, ex.out));
      expect(Buffer.compare(Buffer.from(fresh), committed), `${ex.out} differs from a fresh build of its sources: run npm run fw:examples`).toBe(0);
    });

    it(`${ex.out} is an RV32 executable the loader accepts, entered at _start = 0x4400, above the 16 KiB stack and the NULL guard`, () => {
      const img = parseElf(new Uint8Array(readFileSync(join(root, ex.out))));
      expect(() => checkImage(img, 128 * 1024, 16 << 20, 1024)).not.toThrow();
      expect(img.entry).toBe(0x400 + 16 * 1024);
      // One SRAM segment above the stack (code first), plus one HBM segment for the images with shared data.
      expect(img.segments[0]!.vaddr).toBe(0x400 + 16 * 1024);
      const shared = ex.name === "psum" || ex.name === "nic" || ex.name === "pingpong" || ex.name === "graph-executor";
      expect(img.segments.map((s) => s.vaddr >= 0x80000000)).toEqual(shared ? [false, true] : [false]);
    });
  }
});

describe("buildFirmware", () => {
  it("names the fix when clang is missing", () => {
    expect(() => buildFirmware({ sources: [], out: join(tmp, "none.elf"), clang: join(tmp, "no-such-clang") })).toThrow(
      "clang not found: install Debian's clang and lld (apt-get install clang lld)",
    );
  });

  withClang("reports a syntax error with clang's diagnostic", () => {
    const bad = source("bad.c", "int main(void) {\n  return 0\n}\n");
    expect(() => buildFirmware({ sources: [bad], out: join(tmp, "bad.elf") })).toThrow(/bad\.c:2:11: error: expected ';' after return statement/);
  });

  withClang("links 64-bit division and remainder through the SDK's helpers", () => {
    // volatile operands keep clang from folding the divisions away at compile time.
    const src = source(
      "div64.c",
      [
        "#include <menic.h>",
        "volatile uint64_t ua = 0xfedcba9876543210ull, ub = 0x123456789ull;",
        "volatile int64_t sa = -0x123456789abcdll, sb = 1000003;",
        "int main(void) { return (int)(ua / ub + ua % ub + (uint64_t)(sa / sb) + (uint64_t)(sa % sb)); }",
        "",
      ].join("\n"),
    );
    const { elf, command } = buildFirmware({ sources: [src], out: join(tmp, "div64.elf"), optLevel: "s" });
    expect(command).toContain("-Os");
    const symbols = Buffer.from(elf).toString("latin1");
    for (const helper of ["__udivdi3", "__umoddi3", "__divdi3", "__moddi3"]) expect(symbols).toContain(`\0${helper}\0`);
  });

  withClang("a -g build names every source, the SDK's too, relative to the directory it ran in, so gdb started there finds them", () => {
    // a project outside the checkout, as a user's: its own source, the SDK wherever menic is
    const app = join(tmp, "app");
    mkdirSync(join(app, "src"), { recursive: true });
    writeFileSync(join(app, "src", "main.c"), '#include <menic.h>\nint main(void) { printf("%d\\n", 42); return 0; }\n');
    const { elf } = buildFirmware({ sources: ["src/main.c"], out: "out/main.elf", debug: true, cwd: app });
    expect(existsSync(join(app, "out", "main.elf"))).toBe(true);
    const files = lineTableFiles(elf);
    const pkg = relative(app, root); // node_modules/menic in a project that installed menic
    for (const f of ["src/main.c", `${pkg}/firmware/sdk/crt0.S`, `${pkg}/firmware/sdk/libc/printf.c`]) expect(files).toContain(f);
    for (const f of files) expect(existsSync(resolve(app, f)), `${f}, from ${app}`).toBe(true);
  });

  withClang("a program using float and double without a soft-float runtime fails, naming the helpers and saying why", () => {
    const src = source("nofpu.c", "volatile float f = 1.5f; volatile double d = 2.0;\nint main(void) { return (int)(f * 3.0f + d / 3.0); }\n");
    expect(() => buildFirmware({ sources: [src], out: join(tmp, "nofpu.elf"), softFloat: null })).toThrow(
      "floating point needs a soft-float runtime, and none is installed: the engines are RV32IMA, with no F or D extension (no FPU), " +
        "so clang compiles float and double arithmetic to calls to helper functions (here: __adddf3, __divdf3, __extendsfdf2, __fixdfsi, __mulsf3), " +
        "which menic fw build links from libgcc of Debian's gcc-riscv64-unknown-elf (/usr/lib/gcc/riscv64-unknown-elf/<version>/rv32im/ilp32/libgcc.a); " +
        "install it: apt-get install gcc-riscv64-unknown-elf\nld.lld: error: undefined symbol: ",
    );
    // integer code links without one, as before
    expect(buildFirmware({ sources: [join(root, "firmware/examples/hello.c")], out: join(tmp, "hello.elf"), softFloat: null }).elf).toEqual(
      new Uint8Array(readFileSync(join(root, "firmware/examples/hello.elf"))),
    );
  });
});

describe("floating point (the soft-float runtime)", () => {
  it("findSoftFloat takes the newest GCC version's rv32im/ilp32 libgcc.a, and null when there is none", () => {
    const gcc = join(tmp, "gcc");
    for (const v of ["9.5.0", "12.2.0", "12.10.0", "13.1.0-nolib", "latest"]) {
      mkdirSync(join(gcc, v, "rv32im", "ilp32"), { recursive: true });
      if (v !== "13.1.0-nolib") writeFileSync(join(gcc, v, "rv32im", "ilp32", "libgcc.a"), "!<arch>\n");
    }
    mkdirSync(join(gcc, "14.1.0", "rv32ia", "ilp32"), { recursive: true }); // another multilib only
    writeFileSync(join(gcc, "14.1.0", "rv32ia", "ilp32", "libgcc.a"), "!<arch>\n");
    expect(findSoftFloat(gcc)).toBe(join(gcc, "12.10.0", "rv32im", "ilp32", "libgcc.a"));
    expect(findSoftFloat(join(tmp, "no-gcc"))).toBeNull();
  });

  it("firmware/examples/float.elf computes with float and double exactly as IEEE 754 arithmetic does", async () => {
    const bits32 = (f: number) => { const b = Buffer.alloc(4); b.writeFloatBE(f); return b.toString("hex"); };
    const bits64 = (d: number) => { const b = Buffer.alloc(8); b.writeDoubleBE(d); return b.toString("hex"); };
    const decimal = (d: number) => `${Math.trunc(d)}.${String(Math.trunc((d - Math.trunc(d)) * 1e6)).padStart(6, "0")}`;
    /** What engine k prints, computed on the host: Math.fround rounds each float operation (exact
     * for + and /: binary64 has more than twice binary32's precision, so rounding twice is rounding once). */
    const expected = (k: number) => {
      const n = 100 * (k + 1);
      let hf = 0, hd = 0;
      for (let i = 1; i <= n; i++) {
        hf = Math.fround(hf + Math.fround(1 / i));
        hd += 1 / i;
      }
      const x = k + 2;
      let root = 1;
      for (let i = 0; i < 6; i++) root = 0.5 * (root + x / root);
      const ulp = parseInt(bits32(hf), 16) - parseInt(bits32(Math.fround(hd)), 16);
      return `H(${n}) = ${decimal(hd)} (double 0x${bits64(hd)}); in float ${decimal(hf)} (float 0x${bits32(hf)}, ${ulp} ulp from the double's)\n` +
        `sqrt(${x}) = ${decimal(root)} (0x${bits64(root)}), squared ${root * root === x ? "==" : "!="} ${x}\n`;
    };
    const r = await runFirmware(new Uint8Array(readFileSync(join(root, "firmware/examples/float.elf"))), { config: { engines: 3 } });
    expect(r.engines.map((e) => [e.state, e.exitCode])).toEqual([["exited", 0], ["exited", 0], ["exited", 0]]);
    expect(r.engines.map((e) => e.console)).toEqual([0, 1, 2].map(expected));
    // the float sum drifts from the double one, and sqrt(4) comes out exact: the values are not all alike
    expect(r.engines[0]!.console).toContain("H(100) = 5.187377 (double 0x4014bfdfe4591243); in float 5.187377 (float 0x40a5ff00, 1 ulp from the double's)");
    expect(r.engines[2]!.console).toContain("sqrt(4) = 2.000000 (0x4000000000000000), squared == 4");
  });
});
