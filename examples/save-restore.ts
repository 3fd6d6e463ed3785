// Drive a device from TypeScript: run the parallel-sum firmware halfway, save the device,
// restore it into a new wasm instance, finish there, and compare with an uninterrupted run.
// Run: npm run build && npx esbuild examples/save-restore.ts --bundle --platform=node \
//        --format=esm --packages=external --outfile=build/ex.mjs && node build/ex.mjs
import { readFileSync } from "node:fs";
import { Device } from "../host/device.js";
import { coreModule, packageRoot } from "../host/platform/node.js";

const elf = readFileSync(`${packageRoot()}/firmware/examples/psum.elf`);

const whole = await Device.create(coreModule(), { engines: 16 });
whole.start(whole.loadElf(elf).entry);
const tWhole = whole.run(1_000_000_000_000n);

const half = await Device.create(coreModule(), { engines: 16 });
half.start(half.loadElf(elf).entry);
half.run(tWhole / 2n);
const snapshot = half.save();
const resumed = await Device.restore(coreModule(), snapshot);
const tResumed = resumed.run(1_000_000_000_000n);

console.log(`snapshot at ${tWhole / 2n} ps: ${snapshot.length} bytes`);
console.log(`uninterrupted: ${tWhole} ps, resumed: ${tResumed} ps`);
console.log(`engine 0 printed after the restore: ${JSON.stringify(resumed.console(0))}`);
console.log(`final states identical: ${Buffer.compare(whole.save(), resumed.save()) === 0}`);
