// The host's list of the core's exports (EXPORT_SIGNATURES, which scripts/gen-exports.mjs writes
// from assembly/index.ts into host/generated/exports.ts and the compiler holds to the
// MenicExports interface) against the built modules (npm run build): the same functions, each
// with as many parameters and the same wasm types. And the generator itself: what it maps, and
// that it refuses an export it cannot map rather than leave it out.

import { describe, it, expect } from "vitest";
import { readFileSync } from "node:fs";
import { EXPORT_SIGNATURES, instantiateCore } from "../host/wasm.js";
import { coreModule } from "../host/platform/node.js";

const FILES = { release: "menic.wasm", debug: "menic.debug.wasm" } as const;

/** Value type encodings (WebAssembly core spec 5.3.1 and 5.3.3). */
const VALTYPES: Record<number, string> = { 0x7f: "i32", 0x7e: "i64", 0x7d: "f32", 0x7c: "f64", 0x7b: "v128" };

interface Sig { params: string[]; result: string }

/**
 * Each exported function's signature, read from the module's type (1), import (2), function (3)
 * and export (7) sections (WebAssembly core spec 5.5). Imports other than functions are not
 * expected (the core imports only env.abort).
 */
function exportedSignatures(bytes: Uint8Array): Record<string, Sig> {
  let at = 8; // magic and version
  const leb = () => {
    let v = 0, shift = 0, b: number;
    do { b = bytes[at++]; v += (b & 0x7f) * 2 ** shift; shift += 7; } while (b & 0x80);
    return v;
  };
  const vec = <T>(item: () => T): T[] => Array.from({ length: leb() }, item);
  const name = () => {
    const n = leb();
    at += n;
    return new TextDecoder().decode(bytes.subarray(at - n, at));
  };
  const valtype = () => VALTYPES[bytes[at++]] ?? "unknown";
  let types: Sig[] = [];
  const funcTypes: number[] = []; // the function index space: imports first
  const out: Record<string, Sig> = {};
  while (at < bytes.length) {
    const id = bytes[at++], size = leb(), end = at + size;
    if (id === 1) {
      types = vec(() => {
        if (bytes[at++] !== 0x60) throw new Error("a type that is not a function type");
        const params = vec(valtype), results = vec(valtype);
        return { params, result: results.length ? results.join(" ") : "void" };
      });
    } else if (id === 2) {
      vec(() => {
        const what = `${name()}.${name()}`;
        if (bytes[at++] !== 0x00) throw new Error(`import ${what} is not a function`);
        funcTypes.push(leb());
      });
    } else if (id === 3) {
      funcTypes.push(...vec(leb));
    } else if (id === 7) {
      vec(() => {
        const n = name(), kind = bytes[at++], index = leb();
        if (kind === 0x00) out[n] = types[funcTypes[index]];
      });
    }
    at = end;
  }
  return out;
}

interface Parsed { name: string; params: { name: string; ts: string; wasm: string }[]; result: { ts: string; wasm: string }; doc: string[]; at: string }
type Parse = (text: string, file: string, read?: (path: string) => string) => Parsed[];
const { parseExports } = (await import("../scripts/gen-exports.mjs" as string)) as { parseExports: Parse };

describe("scripts/gen-exports.mjs", () => {
  it("maps each exported function's parameters and result, its doc comment, and a module's functions exported under a name", () => {
    const index = [
      'import { g } from "./m";',
      "/** Does f. */",
      "export function f(dev: usize, at: u64, on: bool, x: f32): f64 { return 0; }",
      "// not a doc comment",
      "export function h(): void {}",
      'export { g, k as kk } from "./sub/m";',
      'export { dd as outer } from "./sub/front";',
    ].join("\n");
    const modules: Record<string, string> = {
      "assembly/sub/m.ts": [
        "/**",
        " * Does g,",
        " * over two lines.",
        " */",
        "export function g(a: i64): u32 { return 0; }",
        "function helper(a: Thing): void {}",
        "export function k(): i32 { return 0; }",
      ].join("\n"),
      // a front module that re-exports what another defines (as assembly/fabric/fabric.ts does)
      "assembly/sub/front.ts": 'export { other } from "./m";\nexport { deep as dd } from "./deep";',
      "assembly/sub/deep.ts": "export function deep(a: u32): void {}",
    };
    const got = parseExports(index, "assembly/index.ts", (path) => modules[path]!);
    expect(got.map((f) => [f.name, f.params.map((p) => `${p.name}: ${p.ts} ${p.wasm}`), `${f.result.ts} ${f.result.wasm}`, f.doc, f.at])).toEqual([
      ["f", ["dev: number i32", "at: bigint i64", "on: number i32", "x: number f32"], "number f64", ["Does f."], "assembly/index.ts:3"],
      ["h", [], "void void", [], "assembly/index.ts:5"],
      ["g", ["a: bigint i64"], "number i32", ["Does g,", "over two lines."], "assembly/sub/m.ts:5"],
      ["kk", [], "number i32", [], "assembly/sub/m.ts:7"],
      ["outer", ["a: number i32"], "void void", [], "assembly/sub/deep.ts:1"],
    ]);
  });

  it.each([
    ["a parameter of a type with no wasm value", "export function f(x: SomeStruct): void {}", /^x\.ts:2: f: parameter x has type SomeStruct/],
    ["a result of a type with no wasm value", "export function f(x: u32): Device {", /^x\.ts:2: f: result type Device/],
    ["a parameter with a default", "export function f(x: u32 = 0): void {}", /^x\.ts:2: f: cannot map parameter `x: u32 = 0`/],
    ["an exported constant", "export const X: u32 = 1;", /^x\.ts:2: cannot map this export/],
    ["an exported class", "export class C {}", /^x\.ts:2: cannot map this export/],
    ["a decorated export", "@inline export function f(): void {}", /^x\.ts:2: cannot map this export/],
    ["a re-export without a module", "export { a as b };", /^x\.ts:2: cannot map this export/],
    ["a re-export of what the module does not export as a function", 'export { nope } from "./m";', /^x\.ts:2: nope is not an `export function` of m\.ts \(nor of a module it re-exports it from\)/],
  ])("refuses %s, naming file and line", (_, line, error) => {
    const text = `/** a comment */\n${line}\n`;
    expect(() => parseExports(text, "x.ts", () => "export function a(): void {}\n")).toThrow(error);
  });

  it("refuses an export name given twice", () => {
    expect(() => parseExports('export function f(): void {}\nexport { f } from "./m";', "x.ts", () => "export function f(): void {}"))
      .toThrow(/^m\.ts:1: f is exported twice \(also x\.ts:1\)/);
  });
});

describe.each(Object.keys(FILES) as (keyof typeof FILES)[])("the %s core", (flavor) => {
  it("exports exactly the functions EXPORT_SIGNATURES lists, each taking as many arguments, and its memory", async () => {
    const core = await instantiateCore(coreModule(flavor));
    const exported = Object.entries(core);
    const arities = Object.fromEntries(exported.filter(([, v]) => typeof v === "function").map(([k, v]) => [k, (v as () => unknown).length]));
    expect(arities).toEqual(Object.fromEntries(Object.entries(EXPORT_SIGNATURES).map(([k, [params]]) => [k, params.length])));
    expect(exported.filter(([, v]) => typeof v !== "function").map(([k]) => k).sort()).toEqual(["memory", "table"]);
    expect(core.memory).toBeInstanceOf(WebAssembly.Memory);
  });

  it("gives each export the wasm parameter and result types EXPORT_SIGNATURES states", () => {
    const bytes = readFileSync(new URL(`../build/${FILES[flavor]}`, import.meta.url));
    const listed = Object.fromEntries(Object.entries(EXPORT_SIGNATURES).map(([k, [params, result]]) => [k, { params: [...params], result }]));
    expect(exportedSignatures(bytes)).toEqual(listed);
  });
});
