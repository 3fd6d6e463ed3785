// The firmware SDK and `fw build` (host/fw/build.ts): the committed example ELFs match their
// sources byte for byte, build failures carry clang's diagnostics, and 64-bit division links
// against the SDK's own helpers. Tests that need clang are skipped, with the reason in their
// name, on machines without it; the committed ELFs are checked either way.
import { afterAll, describe, expect, it } from "vitest";
import { executorElf } from "../host/generated/executor-elf.js";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { buildFirmware, findClang, sdkRoot } from "../host/fw/build.js";
import { EXAMPLES } from "../host/fw/examples.js";
import { checkImage, parseElf } from "../host/elf.js";
import { lineTableFiles } from "./helpers/dwarf.js";

const root = sdkRoot();
const clang = findClang();
const NO_CLANG = "skipped: clang not found (apt-get install clang lld)";
/** `it` when clang is installed, otherwise `it.skip` with the reason in the test's name. */
const withClang = (name: string, fn: () => void) => (clang === null ? it.skip(`${name} [${NO_CLANG}]`, fn) : it(name, fn));

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
    withClang(`${ex.out} is what its sources build to`, () => {
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
});
