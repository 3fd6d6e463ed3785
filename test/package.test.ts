// The package as a user gets it: `npm pack`, then, in a new project outside the checkout that
// installs only the tarball (offline: menic has no dependencies), the verbs examples (one device;
// two devices across a fabric; an all-reduce from code) type-check against the package's own
// declarations (skipLibCheck off, so every .d.ts is checked) and run in Node; bundled by esbuild
// for the browser, the same programs run from the browser build and print the same bytes. The
// installed `menic` command runs a shipped firmware example.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { spawnSync, type SpawnSyncOptions } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { findClang } from "../host/fw/build.js";
import { lineTableFiles } from "./helpers/dwarf.js";

const root = process.cwd();
const tmp = mkdtempSync(join(tmpdir(), "menic-pack-"));
const app = join(tmp, "app");
// a clean environment: nothing from the npm run that started the tests (npm_config_*, npm_package_*)
const env = { PATH: process.env.PATH ?? "", HOME: tmp, npm_config_cache: join(tmp, "npm-cache"), NO_COLOR: "1" };
const EXAMPLES = ["write", "send-recv", "read", "reduce", "two-devices", "all-reduce"];
const haveClang = findClang() !== null;
const haveGdb = spawnSync("gdb-multiarch", ["--version"]).status === 0;

function sh(cmd: string, args: string[], opts: SpawnSyncOptions = {}) {
  const r = spawnSync(cmd, args, { encoding: "utf8", env, ...opts });
  return { status: r.status, stdout: String(r.stdout), stderr: String(r.stderr) };
}
function ok(what: string, r: ReturnType<typeof sh>) {
  if (r.status !== 0) throw new Error(`${what} exited ${r.status}\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

let files: string[] = [];

beforeAll(() => {
  // `npm test` has just built dist/ and dist/types/ (the prepack step is that same build)
  expect(existsSync(join(root, "dist/types/index.d.ts")), "run npm run build first").toBe(true);
  const packed = JSON.parse(ok("npm pack", sh("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", tmp], { cwd: root })));
  files = packed[0].files.map((f: { path: string }) => f.path);
  mkdirSync(join(app, "src"), { recursive: true });
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
  ok("npm install", sh("npm", ["install", "--offline", "--ignore-scripts", "--no-audit", "--no-fund", join(tmp, packed[0].filename)], { cwd: app }));
  for (const f of readdirSync(join(root, "examples/verbs"))) copyFileSync(join(root, "examples/verbs", f), join(app, "src", f));
  writeFileSync(join(app, "tsconfig.json"), JSON.stringify({
    compilerOptions: {
      target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, skipLibCheck: false,
      lib: ["ES2022", "DOM"], types: [], outDir: "out", rootDir: "src",
    },
    include: ["src"],
  }));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("npm pack", () => {
  it("ships the built library, its declarations, the core, the CLI, the firmware SDK, the licence, the design and the dissector, and no sources or tests", () => {
    for (const f of ["LICENSE", "NOTICE", "README.md", "ARCHITECTURE.md", "tools/wireshark/metaroce.lua",
      "dist/menic.js", "dist/menic.browser.js", "dist/cli.js", "dist/types/index.d.ts", "dist/types/browser.d.ts",
      "build/menic.wasm", "build/menic.debug.wasm", "bin/menic.js", "firmware/sdk/link.ld", "firmware/include/menic.h",
      "firmware/examples/hello.elf", "schemas/scenario.schema.json", "examples/scenarios/roce-pair.json"])
      expect(files, f).toContain(f);
    expect(files.filter((f) => /^(host|test|assembly|bench)\//.test(f))).toEqual([]);
    // package.json's "license": Apache-2.0, and the licence text itself beside it
    expect(readFileSync(join(app, "node_modules/menic/LICENSE"), "utf8")).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004\n/);
  });

  it("type-checks the examples against the installed package's declarations (tsc, skipLibCheck off)", () => {
    const tsc = createRequire(join(root, "package.json")).resolve("typescript/bin/tsc");
    expect(ok("tsc", sh(process.execPath, [tsc, "-p", app], { cwd: app }))).toBe("");
    // and a wrong call is caught by those declarations
    writeFileSync(join(app, "src", "wrong.ts"), 'import { openDevice } from "menic";\nconst ctx = await openDevice();\nctx.postSend(ctx.allocPd(), []);\n');
    const wrong = sh(process.execPath, [tsc, "-p", app, "--noEmit"], { cwd: app });
    expect(wrong.stdout).toMatch(/src\/wrong\.ts\(3,14\): error TS2345: Argument of type 'Pd' is not assignable to parameter of type 'Qp'/);
    rmSync(join(app, "src", "wrong.ts"));
    // and so is a misspelt field of a cluster's, a scenario's or a device's input (typed from the schema and the config layout)
    writeFileSync(join(app, "src", "misspelt.ts"), [
      'import { openCluster, openDevice, runScenario, coreModule } from "menic";',
      'await openCluster({ devices: { count: 2 }, fabric: { mdoe: "timing" } });',
      'await runScenario(await coreModule(), { devices: { count: 2 }, traffic: { pattern: "pairs", mesages: 4 } });',
      'await openDevice({ enignes: 2 });',
      "",
    ].join("\n"));
    const misspelt = sh(process.execPath, [tsc, "-p", app, "--noEmit"], { cwd: app });
    expect(misspelt.stdout.match(/src\/misspelt\.ts\(\d+,\d+\): error TS\d+: Object literal may only specify known properties, (?:and|but) '(\w+)' does not exist/g)).toEqual([
      expect.stringContaining("'mdoe'"), expect.stringContaining("'mesages'"), expect.stringContaining("'enignes'"),
    ]);
    rmSync(join(app, "src", "misspelt.ts"));
  });

  const expected: Record<string, string> = {
    "write": "RDMA WRITE 4096 bytes host memory -> HBM: SUCCESS (RDMA_WRITE)\n",
    "send-recv": "wr 10 on QP B: RECV SUCCESS, 256 bytes, imm 0xc0ffee\nwr 20 on QP A: SEND_WITH_IMM SUCCESS, 256 bytes\nreceived: ff fe fd fc fb fa f9 f8 ...\n",
    "read": "RDMA READ 65536 bytes HBM -> host memory: SUCCESS\nhost memory: 00 01 02 03 04 05 06 07 ... 26 27 24 25 at +0x1234\n",
    // 6 (i mod 17) + 0.75: 1023 mod 17 = 3
    "reduce": "REDUCE SUM F32 of 3 x 1024 elements: SUCCESS, 4096 bytes\nresult[0..5]: 0.75, 6.75, 12.75, 18.75, 24.75; result[16]: 96.75; result[1023]: 18.75\n",
    // across the fabric: (i * 7 + 3) & 0xff written; 255 - i sent; (i >> 4) ^ (i & 0xff) read back, at i = 0x100
    "two-devices": "RDMA WRITE 65536 bytes device 0 -> device 1: SUCCESS; device 1 HBM: 03 0a 11 18 1f 26 2d 34 ...\n" +
      "SEND 256 bytes: SUCCESS; device 1 RECV 256 bytes, imm 0xc0ffee: ff fe fd fc fb fa f9 f8 ...\n" +
      "RDMA READ 4096 bytes device 1 -> device 0: SUCCESS; device 0 host memory: 10 11 12 13 14 15 16 17 ... at +0x100\n",
    // the sum of d + (i mod 7) over 4 devices: 6 + 4 (i mod 7); 65535 mod 7 = 1
    "all-reduce": "all-reduce (ring, sum, 4 engines) of 65536 f32 on 4 devices over metaroce: done, every device's result is the reference's\n" +
      "result[0..7]: 6, 10, 14, 18, 22, 26, 30, 6; result[65535]: 10\n",
  };
  const nodeOut: Record<string, string> = {};

  it.each(EXAMPLES)("runs examples/verbs/%s.ts in Node from the installed package and prints the checked bytes", (name) => {
    const out = ok(name, sh(process.execPath, [join("out", `${name}.js`)], { cwd: app }));
    if (name === "write") {
      // (i * 7 + 3) & 0xff from the start, and the last 4 bytes (i = 4092..4095)
      expect(out).toMatch(/^RDMA WRITE .*\nHBM 0x[0-9a-f]+: 03 0a 11 18 1f 26 2d 34 \.\.\. e7 ee f5 fc\n$/);
      expect(out.startsWith(expected.write)).toBe(true);
    } else expect(out).toBe(expected[name]);
    nodeOut[name] = out;
  });

  it.each(EXAMPLES)("bundles examples/verbs/%s.ts for the browser (the package's browser build) with the same output", async (name) => {
    const outfile = join(app, "out", `${name}.browser.mjs`);
    await build({ entryPoints: [join(app, "src", `${name}.ts`)], absWorkingDir: app, bundle: true, platform: "browser", format: "esm", outfile, logLevel: "silent" });
    const bundle = readFileSync(outfile, "utf8");
    expect(bundle).toContain('__toBinary("AGFzbQ'); // the embedded core ("\0asm" in base64), not a file read
    expect(bundle).not.toMatch(/from ["']node:|readFileSync/);
    expect(ok(name, sh(process.execPath, [outfile], { cwd: app }))).toBe(nodeOut[name] ?? "(the Node run failed)");
  });

  it("installs the menic command, which runs a shipped firmware example", () => {
    const r = sh(join(app, "node_modules/.bin/menic"), ["fw", "run", "node_modules/menic/firmware/examples/hello.elf", "--engines", "3"], { cwd: app });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("[e02] hello from engine 2 of 3\n");
  });

  it.skipIf(!haveClang)("builds firmware with -g whose SDK sources gdb finds under node_modules/menic/, from the project", () => {
    writeFileSync(join(app, "fw.c"), '#include <menic.h>\nint main(void) { printf("%d\\n", 42); return 0; }\n');
    ok("menic fw build", sh(join(app, "node_modules/.bin/menic"), ["fw", "build", "fw.c", "-o", "fw.elf", "-g"], { cwd: app }));
    const files = lineTableFiles(new Uint8Array(readFileSync(join(app, "fw.elf"))));
    for (const f of ["fw.c", "node_modules/menic/firmware/sdk/crt0.S", "node_modules/menic/firmware/sdk/libc/printf.c"]) expect(files).toContain(f);
    for (const f of files) expect(existsSync(join(app, f)) || existsSync(f), f).toBe(true);
    if (!haveGdb) return; // the line table is checked; gdb itself where it is installed
    // gdb, started in the project, lists the SDK's printf from the installed package's source
    const listed = ok("gdb-multiarch", sh("gdb-multiarch", ["-batch", "-nx", "-ex", "list vprintf", "fw.elf"], { cwd: app }));
    expect(listed).toMatch(/^\d+\tint vprintf\(const char \*fmt, va_list ap\) \{$/m);
  });
});
