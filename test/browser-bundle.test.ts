import { describe, it, expect } from "vitest";
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { programElf } from "./helpers/rv.js";

// The browser bundle embeds the core and touches no Node API, so it also loads in Node.
describe("browser bundle", () => {
  it("opens a device from dist/menic.browser.js and runs a program", async () => {
    const lib = await import(pathToFileURL(join(process.cwd(), "dist/menic.browser.js")).href);
    const dev = (await lib.openDevice({ engines: 2 })).device;
    dev.start(dev.loadElf(programElf("li t0, 0x10000004\nli t1, 7\nsw t1, 0(t0)")).entry);
    dev.run(1_000_000n);
    expect(dev.engine(1)).toMatchObject({ state: "exited", exitCode: 7, instructions: 5 });
  });

  it("runs verbs: an RDMA WRITE between two QPs of the device", async () => {
    const lib = await import(pathToFileURL(join(process.cwd(), "dist/menic.browser.js")).href);
    const ctx = await lib.openDevice({ engines: 1 });
    const pd = ctx.allocPd(), cq = ctx.createCq(4);
    const qp = ctx.createQp(pd, { sendCq: cq, recvCq: cq, maxSendWr: 4, maxRecvWr: 4 });
    ctx.modifyQp(qp, { state: "INIT" });
    ctx.modifyQp(qp, { state: "RTR", destQpNum: qp.qpn });
    ctx.modifyQp(qp, { state: "RTS" });
    const buf = ctx.allocHbm(64);
    const mr = ctx.regMr(pd, buf, 64, ["LOCAL_WRITE", "REMOTE_WRITE"]);
    ctx.write(buf, Uint8Array.from([1, 2, 3, 4]));
    ctx.postSend(qp, [{ wrId: 3, opcode: "RDMA_WRITE", signaled: true, localAddr: buf, length: 4, lkey: mr.lkey, remoteAddr: buf + 32, rkey: mr.rkey }]);
    ctx.run(10_000_000n);
    expect(ctx.pollCq(cq).map((w: { status: string }) => w.status)).toEqual(["SUCCESS"]);
    expect(Array.from(ctx.read(buf + 32, 4))).toEqual([1, 2, 3, 4]);
  });

  it("checks a scenario against its schema and runs it (no ajv, no Function at run time)", async () => {
    const lib = await import(pathToFileURL(join(process.cwd(), "dist/menic.browser.js")).href);
    const scenario = { devices: { count: 2, config: { ports: 1, scaleUpPorts: 1 } }, traffic: { pattern: "pairs", messageBytes: 8192, messages: 2 } };
    expect(() => lib.resolveScenario({ ...scenario, traffic: { pattern: "ring" } })).toThrow(
      'scenario.traffic.pattern: must be one of pairs, permutation, incast, all-to-all, workload, got "ring"');
    const r = await lib.runScenario(await lib.coreModule(), scenario);
    expect([r.ended, r.totalBytes]).toEqual(["finished", 2 * 8192]);
    expect(lib.formatResult(r)).toContain("0 → 1");
    const bundle = readFileSync(join(process.cwd(), "dist/menic.browser.js"), "utf8");
    expect(bundle).not.toMatch(/new Function\(|\brequire\(/);
  });
});
