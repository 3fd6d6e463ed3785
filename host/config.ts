// Device configuration: validation against layouts/config.json (through the generated table)
// and packing into the u64 slots that cross into wasm. Errors name the field's path.

import { CONFIG_FIELDS, type ConfigField } from "./generated/layouts.js";

export type DeviceConfig = { [name: string]: number | bigint };

export class ConfigError extends Error {
  constructor(readonly path: string, message: string) {
    super(`${path}: ${message}`);
    this.name = "ConfigError";
  }
}

const byName = new Map<string, ConfigField>(CONFIG_FIELDS.map((f) => [f.name, f]));

/** Full configuration with defaults filled in; throws ConfigError naming the first bad field. */
export function resolveConfig(partial: unknown, path = "config"): Map<string, bigint> {
  if (partial === undefined || partial === null) partial = {};
  if (typeof partial !== "object" || Array.isArray(partial)) throw new ConfigError(path, "must be an object");
  const out = new Map<string, bigint>();
  for (const f of CONFIG_FIELDS) out.set(f.name, BigInt(f.default));
  for (const [key, raw] of Object.entries(partial as Record<string, unknown>)) {
    const f = byName.get(key);
    const at = `${path}.${key}`;
    if (!f) throw new ConfigError(at, `unknown field (known: ${CONFIG_FIELDS.map((x) => x.name).join(", ")})`);
    let v: bigint;
    if (typeof raw === "bigint") v = raw;
    else if (typeof raw === "number" && Number.isInteger(raw)) v = BigInt(raw);
    else if (typeof raw === "string" && /^(0x[0-9a-f]+|\d+)$/i.test(raw)) v = BigInt(raw);
    else throw new ConfigError(at, `must be an integer${f.unit ? ` (${f.unit})` : ""}, got ${JSON.stringify(raw)}`);
    const lo = BigInt(f.min), hi = f.max >= Number.MAX_SAFE_INTEGER ? (1n << 64n) - 1n : BigInt(f.max);
    if (v < lo || v > hi) throw new ConfigError(at, `must be in [${f.min}, ${hi}]${f.unit ? ` ${f.unit}` : ""}, got ${v}`);
    if (f.multipleOf && v % BigInt(f.multipleOf) !== 0n) throw new ConfigError(at, `must be a multiple of ${f.multipleOf}, got ${v}`);
    out.set(key, v);
  }
  return out;
}

/** The config as the slots the core reads (slot order of layouts/config.json). */
export function packConfig(cfg: Map<string, bigint>): BigUint64Array {
  const slots = new BigUint64Array(CONFIG_FIELDS.length);
  for (const f of CONFIG_FIELDS) slots[f.slot] = cfg.get(f.name)!;
  return slots;
}
