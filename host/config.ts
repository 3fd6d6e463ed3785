// Device configuration: validation against layouts/config.json (through the generated table)
// and packing into the u64 slots that cross into wasm. Errors name the field's path.

import { CONFIG_FIELDS, type ConfigField } from "./generated/layouts.js";
import { unknownField } from "./user-input.js";

// the fields by name, each with its doc, default and range (written from layouts/config.json)
export type { DeviceConfig } from "./generated/layouts.js";

/** A config or scenario field (or an input file) is bad: the message starts with its path (`config.engines: must be in [1, 64], got 99`). */
export class ConfigError extends Error {
  constructor(
    /** Where: `config.engines`, `scenario.faults[0].links`, a file's name. */
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
    this.name = "ConfigError";
  }
}

/**
 * The core lays a whole device out in one block of its heap (assembly/device.ts createDevice),
 * and AssemblyScript's largest block is just under 1 GiB (BLOCK_MAXSIZE, rt/common.ts).
 */
export const ARENA_LIMIT_BYTES = 2 ** 30;

const byName = new Map<string, ConfigField>(CONFIG_FIELDS.map((f) => [f.name, f]));
/** The most HBM a device can have (config.hbmBytes' maximum, layouts/config.json). */
export const HBM_MAX_BYTES = byName.get("hbmBytes")!.max;

/** Config field `name`'s default (layouts/config.json): for a host constant that must agree with the core's. */
export function configDefault(name: string): number {
  const f = byName.get(name);
  if (!f) throw new Error(`no config field ${name}`);
  return Number(f.default);
}

/** Full configuration with defaults filled in; throws ConfigError naming the first bad field (or the fields that overfill the arena). */
export function resolveConfig(partial: unknown, path = "config"): Map<string, bigint> {
  if (partial === undefined || partial === null) partial = {};
  if (typeof partial !== "object" || Array.isArray(partial)) throw new ConfigError(path, "must be an object");
  const out = new Map<string, bigint>();
  for (const f of CONFIG_FIELDS) out.set(f.name, BigInt(f.default));
  for (const [key, raw] of Object.entries(partial as Record<string, unknown>)) {
    const f = byName.get(key);
    const at = `${path}.${key}`;
    if (!f) throw new ConfigError(at, unknownField(key, CONFIG_FIELDS.map((x) => x.name)));
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
  if (out.get("nullGuardBytes")! >= out.get("sramBytes")!)
    throw new ConfigError(`${path}.nullGuardBytes`, `must be less than sramBytes (${out.get("sramBytes")}), got ${out.get("nullGuardBytes")}: the guard would leave no SRAM`);
  if (out.get("hbmBacking") === 0n && out.get("timingMode") === 0n)
    throw new ConfigError(`${path}.hbmBacking`, "0 (HBM without bytes) needs timingMode 1: in full mode payloads land in HBM");
  // the memories alone must fit in the arena; whether the tables beside them do is the
  // core's answer (Device.create), so the layout is written down once, in assembly/create.ts
  if (memoryBytes(out) > ARENA_LIMIT_BYTES) throw arenaTooLarge(out, path);
  return out;
}

/** HBM bytes that hold data: hbmBytes, or none when hbmBacking is 0 (addresses without bytes; assembly/mem/dma.ts hbmMapped). */
export function hbmDataBytes(cfg: Map<string, bigint>): bigint {
  return cfg.get("hbmBacking") !== 0n ? cfg.get("hbmBytes")! : 0n;
}

/** The bytes of a device's memories (HBM, host memory, the engines' SRAM): most of its arena. */
export function memoryBytes(cfg: Map<string, bigint>): bigint {
  return hbmDataBytes(cfg) + cfg.get("hostMemBytes")! + cfg.get("engines")! * cfg.get("sramBytes")!;
}

/** The error for a config whose device does not fit in one arena, naming the fields that fill it. */
export function arenaTooLarge(cfg: Map<string, bigint>, path = "config"): ConfigError {
  const f = (name: string) => `${name} ${cfg.get(name)}`;
  return new ConfigError(path,
    `the device must fit in one arena of less than ${ARENA_LIMIT_BYTES} B (1 GiB): ` +
    `${f("hbmBytes")} + ${f("hostMemBytes")} + ${f("engines")} x ${f("sramBytes")} = ${memoryBytes(cfg)} B, ` +
    "plus the tables sized by the other fields (eventCapacity, traceRingEntries, consoleRingBytes, maxQps, ...); " +
    "make hbmBytes, hostMemBytes or sramBytes smaller");
}

/**
 * A device refused by a core instance that many devices share (a CoreInstance): a wasm32
 * instance addresses 4 GiB, and `memory` has too little of it left for an arena of `arenaBytes`.
 */
export function instanceFull(memory: WebAssembly.Memory, arenaBytes: number): RangeError {
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  return new RangeError(
    `this core instance has no room for another device: its devices and tables hold ${mib(memory.buffer.byteLength)} of the 4 GiB a wasm32 instance addresses, ` +
    `and the device needs an arena of ${mib(arenaBytes)}; create it in an instance of its own (Device.create with the compiled module, not a shared CoreInstance), ` +
    "or give the devices smaller memories (hbmBytes, hostMemBytes, sramBytes)");
}

/** The config as the slots the core reads (slot order of layouts/config.json). */
export function packConfig(cfg: Map<string, bigint>): BigUint64Array {
  const slots = new BigUint64Array(CONFIG_FIELDS.length);
  for (const f of CONFIG_FIELDS) slots[f.slot] = cfg.get(f.name)!;
  return slots;
}
