// What an engine run leaves behind, as plain data to compare: the JIT against the interpreter
// (test/jit.test.ts, the differential fuzz of test/jit-fuzz.test.ts and npm run soak).
import type { Device } from "../../host/device.js";

/** Everything an engine run leaves behind that a mode could change. */
export function endState(dev: Device) {
  const mem = new Uint8Array(dev.core.memory.buffer);
  const engines = Array.from({ length: dev.engines }, (_, e) => {
    const sram = dev.core.sramPtr(dev.handle, e) >>> 0;
    return {
      report: dev.engine(e),
      regs: Array.from({ length: 32 }, (_, r) => dev.core.engineReg(dev.handle, e, r) >>> 0),
      // the x0 slot as the register block holds it: the interpreter leaves an instruction's write there until the next
      sramHash: hash(mem.subarray(sram, sram + dev.sramBytes)),
      console: dev.console(e),
    };
  });
  const hbm = dev.core.hbmPtr(dev.handle) >>> 0;
  return { engines, hbmHash: hash(mem.subarray(hbm, hbm + dev.hbmBytes)), stats: dev.stats(), nowPs: dev.nowPs };
}

/** FNV-1a over bytes: a cheap fingerprint, so a mismatch reports a number, not megabytes. */
export function hash(b: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i], 16777619) >>> 0;
  return h;
}
