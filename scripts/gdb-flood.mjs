#!/usr/bin/env node
// node scripts/gdb-flood.mjs [--requests N] [--packet m|g|bad|garbage]   (Linux: reads /proc)
//
// A GDB client that does not read: starts `menic fw run firmware/examples/psum.elf --gdb 0`
// (npm run build first), connects, writes N requests at once and reads nothing until the stub
// has gone idle (no CPU time used for a second: it has answered everything, or stopped reading
// because the client is behind); prints the stub process's resident memory (VmRSS) before the
// flood and then, and its peak (VmHWM); then reads every reply and counts them.
//   m (default): reads of 0x1ffe bytes of HBM, each answered by 16 KiB of hex
//   g: register reads (264 hex digits); bad: packets with a bad checksum (a one-byte NAK each);
//   garbage: N bytes outside any packet (no replies)
// A stub that honours back-pressure stops reading requests once the client is behind, so what
// it holds stays small whatever N; one that answers regardless holds every reply.

import { spawn } from "node:child_process";
import { connect } from "node:net";
import { readFileSync } from "node:fs";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const N = Number(arg("--requests", "6000"));
const kind = arg("--packet", "m");

const frame = (p) => {
  let s = 0;
  for (const c of p) s += c.charCodeAt(0);
  return `$${p}#${(s & 0xff).toString(16).padStart(2, "0")}`;
};
const status = (pid, key) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))[1]) / 1024;
const cpu = (pid) => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ").slice(11, 13).map(Number).reduce((a, b) => a + b);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const idle = async (pid) => {
  for (let t = cpu(pid); ; ) {
    await sleep(1000);
    const u = cpu(pid);
    if (u === t) return;
    t = u;
  }
};

const proc = spawn("node", ["bin/menic.js", "fw", "run", "firmware/examples/psum.elf", "--gdb", "0"], { stdio: ["ignore", "ignore", "pipe"] });
let err = "";
const port = await new Promise((resolve, reject) => {
  proc.stderr.on("data", (b) => {
    err += b;
    const m = /listening on 127\.0\.0\.1:(\d+)/.exec(err);
    if (m) resolve(Number(m[1]));
  });
  proc.on("exit", () => reject(new Error(`menic exited: ${err}`)));
});
const sock = connect(port, "127.0.0.1");
await new Promise((r) => sock.once("connect", r));
sock.pause(); // read nothing
await idle(proc.pid);
const before = status(proc.pid, "VmRSS");

const { req, replyText } = {
  m: { req: frame("m80000000,1ffe"), replyText: `${0x1ffe * 2} hex digits` },
  g: { req: frame("g"), replyText: "264 hex digits" },
  bad: { req: "$#01", replyText: "a '-'" },
  garbage: { req: "x", replyText: "none" },
}[kind];
sock.write(req.repeat(N));
await idle(proc.pid);
const after = status(proc.pid, "VmRSS"), peak = status(proc.pid, "VmHWM");
console.log(`${N} x ${JSON.stringify(req)} (${((N * req.length) / 1024).toFixed(0)} KiB), each answered by ${replyText}`);
console.log(`stub RSS before: ${before.toFixed(1)} MiB; client not reading, stub idle: ${after.toFixed(1)} MiB (+${(after - before).toFixed(1)}); peak ${peak.toFixed(1)} MiB`);

// now read everything: every request gets its '+' and its reply
let got = 0, text = "";
const end = () => {
  console.log(`replies read: ${got} of ${kind === "garbage" ? 0 : N}`);
  sock.destroy();
  proc.kill();
};
sock.on("data", (b) => {
  text += b.toString("latin1");
  if (kind === "bad") {
    got += text.split("-").length - 1;
    text = "";
  }
  for (let i; (i = text.indexOf("#")) >= 0 && text.length >= i + 3; text = text.slice(i + 3)) got++;
  if (got === N) end();
});
sock.resume();
if (kind === "garbage") setTimeout(end, 1000);
