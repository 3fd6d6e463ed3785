// npm run serve (scripts/serve.mjs): the page's static server listens on the loopback address
// unless --host names another, says where it listens (the address the socket is bound to, not
// the one asked for), and refuses bad arguments with exit 2. Needs build/web/ (npm run build).
import { describe, it, expect, afterEach } from "vitest";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";

const SERVE = "scripts/serve.mjs";
const started: ChildProcess[] = [];
afterEach(async () => {
  // each server ends with its test, so no child outlives the file
  await Promise.all(started.splice(0).filter((c) => c.exitCode === null).map((c) => {
    const exited = once(c, "exit");
    c.kill();
    return exited;
  }));
});

/** Start the server with `args` and resolve with the URL it prints once it listens. */
async function serve(args: string[]): Promise<string> {
  const child = spawn(process.execPath, [SERVE, ...args], { stdio: ["ignore", "ignore", "pipe"] });
  started.push(child);
  let err = "";
  child.stderr!.setEncoding("utf8");
  return new Promise((resolve, reject) => {
    child.stderr!.on("data", (chunk: string) => {
      err += chunk;
      const m = /^serving the page at (\S+) /m.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on("exit", (code) => reject(new Error(`serve exited ${code} before listening: ${err}`)));
  });
}

describe("npm run serve", () => {
  it("listens on 127.0.0.1 by default and serves the page there", async () => {
    const url = await serve(["--port", "0"]);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*\/$/);
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/^<!doctype html>/i);
  }, 30_000);

  it("listens where --host says", async () => {
    // another loopback address (Linux routes all of 127/8 to lo), so nothing leaves the machine
    const url = await serve(["--host", "127.0.0.2", "--port", "0"]);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.2:[1-9]\d*\/$/);
    expect((await fetch(url)).status).toBe(200);
  }, 30_000);

  it.each([
    [["--port", "http"], "serve: --port wants a port number in [0, 65535], got http"],
    [["--host"], "serve: --host wants a value"],
    [["--hots", "0.0.0.0"], "serve: unknown argument --hots (--host <address>, --port <n>)"],
  ])("refuses %j with exit 2", (args, message) => {
    // the timeout only ends a server that started instead of refusing (a backstop, not a limit on speed)
    const r = spawnSync(process.execPath, [SERVE, ...args], { encoding: "utf8", timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe(`${message}\n`);
  });
});

