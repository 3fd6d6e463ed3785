/**
 * `fw build`: compiles message-engine firmware (C and assembly) with the menic SDK into an
 * ELF the loader accepts.
 *
 * This is the one Node-specific file of the firmware tooling: it
 * spawns clang and touches the file system, so it must not be imported by code that also
 * runs in a browser.
 *
 * The toolchain is Debian's stock clang and lld: clang targets riscv32 out of the box, and
 * the SDK supplies everything a hosted toolchain would (crt0, link script, a small libc and
 * the 64-bit division helpers that Debian's missing riscv32 compiler-rt would provide), except
 * floating point: the engines have no F or D extension, so float and double arithmetic compiles
 * to calls (__addsf3, __muldf3, ...) into a soft-float runtime, which is libgcc of Debian's
 * gcc-riscv64-unknown-elf (findSoftFloat), linked when it is installed. Without it, a build
 * that needs those calls fails with a message that says so (softFloatMissing).
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { delimiter, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

export type OptLevel = "0" | "1" | "2" | "3" | "s" | "z" | "g";
export const OPT_LEVELS: readonly OptLevel[] = ["0", "1", "2", "3", "s", "z", "g"];

export interface BuildOptions {
  /** C (.c) and assembly (.S, .s) files; relative paths resolve against `cwd`. */
  sources: string[];
  /** Where to write the ELF; its directory is created if missing. */
  out: string;
  /** Optimisation level, default "2" (the committed example ELFs are built with -O2). */
  optLevel?: OptLevel;
  /** Preprocessor definitions, passed as -DNAME=VALUE. */
  defines?: Record<string, string>;
  /** Include directories, searched in this order before the SDK's (-I). */
  includes?: string[];
  /** Emit DWARF debug information (-g): the line table lets faults and the profiler name file and line. */
  debug?: boolean;
  /** More clang arguments, passed verbatim after the SDK's flags (`menic fw build ... -- <flags>`). */
  extra?: string[];
  /** The clang to run, default findClang(). */
  clang?: string;
  /** The directory the build runs in, default the current one: relative paths (sources, `out`,
   * `includes`) resolve against it, and a -g build names the SDK's files, and those below it,
   * relative to it, so gdb started there finds them (the SDK's under node_modules/menic/ when
   * menic is installed in that project). */
  cwd?: string;
  /** The soft-float runtime to link (a libgcc.a for rv32im/ilp32), default findSoftFloat();
   * null links none, and firmware that computes with float or double then fails to link. */
  softFloat?: string | null;
}

export interface BuildResult {
  /** The ELF as written to `out`. */
  elf: Uint8Array;
  /** The exact command that ran: argv[0] is clang. */
  command: string[];
}

const CLANG_MISSING = "clang not found: install Debian's clang and lld (apt-get install clang lld)";
const LLD_MISSING = "ld.lld not found: install Debian's clang and lld (apt-get install clang lld)";

/**
 * Target and code-generation flags (FIRMWARE_CODEGEN_FLAGS, which also build the benchmark
 * kernels for QEMU: bench/engines.ts), then the link's; the source of truth for how firmware is compiled.
 * - rv32ima/ilp32: the engine is RV32IMA + Zicsr (docs/engine.md). clang 14 accepts csr
 *   instructions under plain rv32ima and rejects `_zicsr` in -march.
 * - freestanding, no stdlib, no builtins: the SDK's libc is the only library, and -fno-builtin
 *   keeps clang from turning libc's own loops into calls to memset/memcpy.
 * - -mno-relax: no linker relaxation, so nothing is gp-relative and crt0 need not set gp.
 * - per-function/data sections + --gc-sections: unused libc code costs no SRAM.
 * - --discard-locals drops the assembler's .L labels from the symbol table (functions and
 *   statics stay), so a faulting pc symbolises to its function.
 * - max-page-size=16: engines have no pages; the default 4 KiB alignment would only pad the
 *   file with zeros between segments.
 * - --orphan-handling=error: every input section must be placed by link.ld, so a section
 *   the SDK does not support (.init_array, .tdata) fails the build instead of landing
 *   somewhere the loader or crt0 does not expect.
 * - no build id, and -ffile-prefix-map: the ELF holds no path or timestamp of the build
 *   machine, only paths relative to the directory the build ran in (BuildOptions.cwd), so it is
 *   byte-reproducible (test/firmware-build.test.ts checks that); -g is opt-in
 *   (BuildOptions.debug) and keeps that property.
 */
export const FIRMWARE_CODEGEN_FLAGS: readonly string[] = [
  "--target=riscv32-unknown-elf",
  "-march=rv32ima",
  "-mabi=ilp32",
  "-ffreestanding",
  "-nostdlib",
  "-fno-builtin",
  "-mno-relax",
  "-ffunction-sections",
  "-fdata-sections",
];
const TARGET_FLAGS = [
  ...FIRMWARE_CODEGEN_FLAGS,
  "-fuse-ld=lld",
  "-Wl,--gc-sections",
  "-Wl,--build-id=none",
  "-Wl,--discard-locals",
  "-Wl,-z,max-page-size=16",
  "-Wl,--orphan-handling=error",
];

/** Where Debian's gcc-riscv64-unknown-elf installs libgcc, one directory per GCC version. */
const LIBGCC_ROOT = "/usr/lib/gcc/riscv64-unknown-elf";
/** Its multilib for the engines: rv32im code runs on RV32IMA (the package builds no rv32ima
 * variant; the A extension adds nothing soft-float uses) and ilp32 is the SDK's ABI (floats
 * passed in integer registers). */
const LIBGCC_MULTILIB = join("rv32im", "ilp32", "libgcc.a");

/** libgcc.a of the newest gcc-riscv64-unknown-elf installed under `dir` for rv32im/ilp32, or
 * null. Its soft-fp routines (IEEE 754 binary32 and binary64, round to nearest even, no
 * exception flags: no CSR access) are what float and double compile to on the engines. */
export function findSoftFloat(dir: string = LIBGCC_ROOT): string | null {
  let versions: string[];
  try {
    versions = readdirSync(dir);
  } catch {
    return null;
  }
  const newestFirst = versions
    .filter((v) => /^\d+(\.\d+)*$/.test(v) && existsSync(join(dir, v, LIBGCC_MULTILIB)))
    .sort((a, b) => {
      const x = a.split(".").map(Number), y = b.split(".").map(Number);
      for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (y[i] ?? 0) - (x[i] ?? 0);
      return 0;
    });
  return newestFirst.length > 0 ? join(dir, newestFirst[0]!, LIBGCC_MULTILIB) : null;
}

/** The soft-float helpers among lld's undefined symbols: libgcc's names for IEEE arithmetic,
 * comparison and conversion carry the mode (sf: float, df: double, tf: long double; sc/dc/tc:
 * complex), e.g. __addsf3, __fixdfsi, __extendsfdf2, __mulsc3. */
function softFloatSymbols(lldErrors: string): string[] {
  const names = [...lldErrors.matchAll(/undefined symbol: (__[a-z]+\d?)\b/g)].map((m) => m[1]!);
  return [...new Set(names.filter((n) => /(sf|df|tf|sc3|dc3|tc3)/.test(n.slice(2))))].sort();
}

/** Why a build that calls soft-float helpers (`symbols`) did not link: no runtime installed. */
function softFloatMissing(symbols: readonly string[]): string {
  return (
    `floating point needs a soft-float runtime, and none is installed: the engines are RV32IMA, with no F or D ` +
    `extension (no FPU), so clang compiles float and double arithmetic to calls to helper functions ` +
    `(here: ${symbols.join(", ")}), which menic fw build links from libgcc of Debian's gcc-riscv64-unknown-elf ` +
    `(${join(LIBGCC_ROOT, "<version>", LIBGCC_MULTILIB)}); install it: apt-get install gcc-riscv64-unknown-elf`
  );
}

/** Candidate clang names: Debian's `clang` package installs `clang`; the versioned packages
 * alone install only `clang-N`. */
const CLANG_NAMES = ["clang", ...[20, 19, 18, 17, 16, 15, 14].map((v) => `clang-${v}`)];

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first clang on PATH, or null if there is none. */
export function findClang(): string | null {
  const dirs = (process.env.PATH ?? "").split(delimiter).filter((d) => d !== "");
  for (const name of CLANG_NAMES) {
    for (const dir of dirs) {
      const candidate = join(dir, name);
      if (isExecutable(candidate)) return candidate;
    }
  }
  return null;
}

/**
 * The package root holding the firmware SDK: the nearest directory above this module with a
 * package.json and firmware/sdk/link.ld. Searching upward from import.meta.url makes it work
 * both from host/fw/build.ts (vitest) and from a bundled file under dist/ or node_modules/.
 */
export function sdkRoot(from: string = fileURLToPath(import.meta.url)): string {
  let dir = dirname(from);
  for (;;) {
    if (existsSync(join(dir, "package.json")) && existsSync(join(dir, "firmware", "sdk", "link.ld"))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error(`menic firmware SDK not found: no package.json with firmware/sdk/link.ld above ${from}`);
    dir = up;
  }
}

/** Compile `opts.sources` with crt0 and the SDK's libc, link with the SDK's link script,
 * write the ELF to `opts.out` and return it. Throws an Error carrying clang's diagnostics
 * when the build fails. */
export function buildFirmware(opts: BuildOptions): BuildResult {
  const clang = opts.clang ?? findClang();
  if (clang === null) throw new Error(CLANG_MISSING);

  // clang runs in the build's directory and names the SDK's files relative to it, so a -g build
  // records no absolute path (the assembler's DWARF for crt0.S would otherwise keep the absolute
  // one, which -ffile-prefix-map does not rewrite) and gdb started there finds the SDK's sources:
  // under node_modules/menic/firmware/sdk/ in a project that installed menic, under
  // firmware/sdk/ in the checkout
  const cwd = resolve(opts.cwd ?? process.cwd());
  const pkg = relative(cwd, sdkRoot());
  const sdk = join(pkg, "firmware", "sdk");
  const libcDir = join(sdk, "libc");
  // Sorted so the link order, and so the ELF, does not depend on directory order.
  const libc = readdirSync(resolve(cwd, libcDir))
    .filter((f) => /\.(c|S|s)$/.test(f))
    .sort()
    .map((f) => join(libcDir, f));
  const defines = Object.entries(opts.defines ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `-D${name}=${value}`);
  const out = resolve(cwd, opts.out);
  const sources = opts.sources.map((s) => resolve(cwd, s));
  const below = cwd.endsWith(sep) ? cwd : cwd + sep;
  const softFloat = opts.softFloat === undefined ? findSoftFloat() : opts.softFloat;

  const command = [
    clang,
    ...TARGET_FLAGS,
    `-O${opts.optLevel ?? "2"}`,
    // the compilation directory too (the assembler's as well), for reproducible -g builds; and
    // frame pointers, so a fault's backtrace walks the whole call chain (host/debug/backtrace.ts)
    ...(opts.debug ? ["-g", `-fdebug-prefix-map=${cwd}=.`, "-fdebug-compilation-dir=.", "-fno-omit-frame-pointer"] : []),
    `-ffile-prefix-map=${below}=`,
    ...(opts.includes ?? []).map((d) => `-I${resolve(cwd, d)}`),
    `-I${join(pkg, "firmware", "include")}`,
    ...defines,
    ...(opts.extra ?? []),
    `-Wl,-T,${join(sdk, "link.ld")}`,
    "-o",
    out,
    join(sdk, "crt0.S"),
    ...sources,
    ...libc,
    // an archive: lld takes from it only the members that resolve a call, so firmware without
    // floating point links exactly as without it
    ...(softFloat !== null ? [softFloat] : []),
  ];

  mkdirSync(dirname(out), { recursive: true });
  const run = spawnSync(command[0]!, command.slice(1), { encoding: "utf8", cwd });
  if (run.error !== undefined) {
    const code = (run.error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "EACCES") throw new Error(`${CLANG_MISSING} (tried ${clang})`);
    throw run.error;
  }
  if (run.status !== 0) {
    const stderr = run.stderr.trim();
    // clang reports a missing linker as an unusable -fuse-ld value or a failed exec.
    if (/invalid linker name|unable to execute command.*ld\.lld|ld\.lld.*not found/.test(stderr)) {
      throw new Error(`${LLD_MISSING}\n${stderr}`);
    }
    const missing = softFloat === null ? softFloatSymbols(stderr) : [];
    if (missing.length > 0) throw new Error(`${softFloatMissing(missing)}\n${stderr}`);
    const how = run.status === null ? `killed by ${run.signal}` : `exit code ${run.status}`;
    throw new Error(`firmware build failed (clang ${how}):\n${stderr}`);
  }
  return { elf: new Uint8Array(readFileSync(out)), command };
}
