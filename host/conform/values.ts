// The values a conformance case writes, resolved at run time: numbers, names a field knows
// (an opcode, a NAK code), hex, and "$var" expressions over what the run knows (the IUT's QP
// number, region and key; values an expect step captured). Bytes by fill, pattern or hex.

import type { Bytes, Value } from "./case.js";

/** What a run knows by name: the IUT's and the tester's numbers, and what expect steps captured. */
export type Vars = Map<string, number>;

/** A value that cannot be resolved: what, in the caller's terms. */
export class ValueError extends Error {}

const EXPR = /^\$([A-Za-z_][A-Za-z0-9_]*)\s*(?:([+-])\s*(0x[0-9a-fA-F]+|\d+))?$/;

/** `v` as a number: a number, a name of `names`, "0x..", or "$var[+-N]" over `vars`. */
export function resolve(v: Value, vars: Vars, names: Readonly<Record<string, number>> = {}, what = "value"): number {
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new ValueError(`${what}: ${v} is not a number`);
    return v;
  }
  if (Object.hasOwn(names, v)) return names[v]!;
  if (/^0x[0-9a-fA-F]+$/.test(v)) return Number.parseInt(v.slice(2), 16);
  const m = EXPR.exec(v.trim());
  if (m) {
    const base = vars.get(m[1]!);
    if (base === undefined) throw new ValueError(`${what}: $${m[1]} is not known here (known: ${[...vars.keys()].map((k) => `$${k}`).join(", ")})`);
    const n = m[3] === undefined ? 0 : Number(m[3]);
    return m[2] === "-" ? base - n : base + n;
  }
  const known = Object.keys(names);
  throw new ValueError(`${what}: ${JSON.stringify(v)} is not a number, "0x..", "$var[+-N]"${known.length ? ` or one of ${known.join(", ")}` : ""}`);
}

/** The bytes `b` describes. */
export function bytesOf(b: Bytes, what = "bytes"): Uint8Array {
  if ("hex" in b) {
    const hex = b.hex.replace(/\s+/g, "");
    if (!/^([0-9a-fA-F]{2})*$/.test(hex)) throw new ValueError(`${what}: hex is pairs of hex digits`);
    return Uint8Array.from(hex.match(/../g) ?? [], (h) => Number.parseInt(h, 16));
  }
  if (!Number.isInteger(b.length) || b.length < 0) throw new ValueError(`${what}: length is a whole number of bytes`);
  if ("fill" in b) return new Uint8Array(b.length).fill(b.fill);
  if ("pattern" in b) return Uint8Array.from({ length: b.length }, (_, i) => (i * 7 + b.pattern) & 0xff);
  throw new ValueError(`${what}: bytes are {fill, length}, {pattern, length} or {hex}`);
}

/** Where two byte strings first differ, as text ("equal" when they do not). */
export function firstDifference(got: Uint8Array, want: Uint8Array): string {
  const n = Math.min(got.length, want.length);
  for (let i = 0; i < n; i++) if (got[i] !== want[i]) return `byte ${i}: 0x${got[i]!.toString(16)}, expected 0x${want[i]!.toString(16)}`;
  return got.length === want.length ? "equal" : `${got.length} bytes, expected ${want.length}`;
}
