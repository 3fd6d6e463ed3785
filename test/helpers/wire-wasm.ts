// Builds a small test-only wasm module around the core's wire-format code (the ICRC of
// assembly/checksum/, the generated header views) so tests can call it directly:
// assembly/index.ts stays the device's only export file. The entry is written into build/test-wire/ at test time, never committed. It exports a
// scratch buffer, the ICRC functions, opcodeFlags/opcodeExtBytes, and a get/set pair per header
// field named get_<Header>_<field> / set_<Header>_<field> (u64 in and out, so BigInt in JS).

import asc from "assemblyscript/asc";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HEADER_LAYOUTS } from "../../host/generated/headers.js";

/** Bytes of the scratch buffer the module exports (big enough for a jumbo frame). */
export const SCRATCH_BYTES = 65536;

export interface WireWasm {
  memory: WebAssembly.Memory;
  scratch(): number;
  crc32Update(crc: number, p: number, len: number): number;
  icrcIpv4(ip: number, ipLen: number): number;
  opcodeFlags(op: number): number;
  opcodeExtBytes(op: number): number;
  [accessor: string]: unknown;
}

const cap = (s: string) => s[0]!.toUpperCase() + s.slice(1);

function entrySource(): string {
  const L = [
    "// written by test/helpers/wire-wasm.ts: a test-only entry around the core's wire-format code",
    'export { crc32Update, icrcIpv4 } from "../../assembly/checksum/icrc";',
    'export { opcodeFlags, opcodeExtBytes } from "../../assembly/generated/headers";',
    'import * as H from "../../assembly/generated/headers";',
    `const SCRATCH = memory.data(${SCRATCH_BYTES}, 16);`,
    "export function scratch(): usize { return SCRATCH; }",
  ];
  for (const h of HEADER_LAYOUTS) for (const f of h.fields) {
    const fn = `${h.name}${cap(f.name)}`;
    const t = f.bits > 32 ? "u64" : "u32";
    L.push(`export function get_${h.name}_${f.name}(p: usize): u64 { return <u64>H.get${fn}(p); }`);
    L.push(`export function set_${h.name}_${f.name}(p: usize, v: u64): void { H.set${fn}(p, <${t}>v); }`);
  }
  return L.join("\n") + "\n";
}

/** Compiles the test entry (release settings, ~1 s) and instantiates it. */
export async function buildWireWasm(): Promise<WireWasm> {
  const dir = join("build", "test-wire");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "entry.ts"), entrySource());
  // an empty config of its own, so asc does not pick up the device's asconfig.json entries
  writeFileSync(join(dir, "asconfig.json"), "{}\n");
  let binary: Uint8Array | null = null;
  const { error, stderr } = await asc.main([
    join(dir, "entry.ts"), "--config", join(dir, "asconfig.json"), "--outFile", "wire.wasm",
    "--runtime", "stub", "--optimizeLevel", "3", "--noAssert",
  ], {
    writeFile(name: string, contents: Uint8Array | string) {
      if (name.endsWith(".wasm") && typeof contents !== "string") binary = contents;
    },
  });
  if (error) throw new Error(`asc failed on the wire test entry: ${error.message}\n${stderr.toString()}`);
  if (!binary) throw new Error("asc wrote no wasm for the wire test entry");
  const { instance } = await WebAssembly.instantiate(binary, { env: { abort: () => { throw new Error("abort in wire wasm"); } } });
  return instance.exports as unknown as WireWasm;
}
