import { describe, it, expect } from "vitest";
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { programElf } from "./helpers/rv.js";

// The browser bundle embeds the core and touches no Node API, so it also loads in Node.
describe("browser bundle", () => {
  it("opens a device from dist/menic.browser.js and runs a program", async () => {
    const lib = await import(pathToFileURL(join(process.cwd(), "dist/menic.browser.js")).href);
    const dev = await lib.openDevice({ engines: 2 });
    dev.start(dev.loadElf(programElf("li t0, 0x10000004\nli t1, 7\nsw t1, 0(t0)")).entry);
    dev.run(1_000_000n);
    expect(dev.engine(1)).toMatchObject({ state: "exited", exitCode: 7, instructions: 5 });
  });
});
