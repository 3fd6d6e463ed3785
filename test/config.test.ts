import { describe, it, expect } from "vitest";
import { resolveConfig, ConfigError } from "../host/config.js";
import { Device } from "../host/device.js";
import { coreModule } from "../host/platform/node.js";

describe("config validation", () => {
  it("fills defaults from layouts/config.json", () => {
    const c = resolveConfig({});
    expect(c.get("engines")).toBe(16n);
    expect(c.get("engineClockKhz")).toBe(1370000n);
    expect(c.get("sramBytes")).toBe(131072n);
  });
  it("rejects an unknown field with its name", () => {
    expect(() => resolveConfig({ enignes: 4 })).toThrow(/^config\.enignes: unknown field/);
  });
  it("rejects an out-of-range value with the field and range", () => {
    expect(() => resolveConfig({ engines: 65 })).toThrow("config.engines: must be in [1, 64], got 65");
    expect(() => resolveConfig({ sramBytes: 5000 })).toThrow("config.sramBytes: must be a multiple of 4096, got 5000");
    expect(() => resolveConfig({ engineClockKhz: 1.5 })).toThrow(/config\.engineClockKhz: must be an integer/);
  });
  it("rejects before creating anything", async () => {
    await expect(Device.create(coreModule(), { hbmBytes: 1 })).rejects.toBeInstanceOf(ConfigError);
  });
});
