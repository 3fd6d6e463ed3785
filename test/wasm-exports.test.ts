// The host's list of the core's exports (host/wasm.ts EXPORT_SIGNATURES, which the compiler holds
// to the MenicExports interface) against the built modules (npm run build): the same
// functions, each with as many parameters and the same wasm types.

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

describe.each(Object.keys(FILES) as (keyof typeof FILES)[])("the %s core", (flavor) => {
  it("exports exactly the functions host/wasm.ts lists, each taking as many arguments, and its memory", async () => {
    const core = await instantiateCore(coreModule(flavor));
    const exported = Object.entries(core);
    const arities = Object.fromEntries(exported.filter(([, v]) => typeof v === "function").map(([k, v]) => [k, (v as () => unknown).length]));
    expect(arities).toEqual(Object.fromEntries(Object.entries(EXPORT_SIGNATURES).map(([k, [params]]) => [k, params.length])));
    expect(exported.filter(([, v]) => typeof v !== "function").map(([k]) => k).sort()).toEqual(["memory", "table"]);
    expect(core.memory).toBeInstanceOf(WebAssembly.Memory);
  });

  it("gives each export the wasm parameter and result types host/wasm.ts states", () => {
    const bytes = readFileSync(new URL(`../build/${FILES[flavor]}`, import.meta.url));
    const listed = Object.fromEntries(Object.entries(EXPORT_SIGNATURES).map(([k, [params, result]]) => [k, { params: [...params], result }]));
    expect(exportedSignatures(bytes)).toEqual(listed);
  });
});
