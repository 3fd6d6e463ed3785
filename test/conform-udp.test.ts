// The conformance suite over real UDP (`menic conform --target udp://`, docs/conformance.md):
// `menic serve --pace step` spawned as its own process for each transport, the tester on its
// own sockets as the served device's peer device 1. Every case the host network can carry
// passes, as on --target sim; those it cannot are skipped, each with its reason, and they are
// exactly the cases whose frames set the IPv4 header otherwise than a datagram arrives. A break
// on the way back fails the same cases over UDP as in process.
import { describe, it, expect, afterAll } from "vitest";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadSuite } from "../host/platform/conform-cli.js";
import { runSuite, TESTER } from "../host/conform/run.js";
import { UdpTarget, parseUdpTarget } from "../host/conform/udp-target.js";
import type { Suite } from "../host/conform/case.js";
import type { TestSuite } from "../host/test-report.js";
import { MRT } from "../host/generated/headers.js";
import { spawnServe, type Served } from "./helpers/serve.js";
import { Broken, mrtEdit } from "./helpers/broken-target.js";

const suite = loadSuite("conformance");
const TESTER_AT = "127.0.6.2";
const served: Served[] = [];
afterAll(async () => { for (const s of served) if (s.child.exitCode === null) await s.stop(); });

/** `menic serve --pace step` of `transport` at `host`, its peer device 1 the tester's address. */
async function serve(transport: string, host: string): Promise<Served> {
  const s = await spawnServe(["--device", "0", "--transport", transport, "--bind", host, "--peer", `1=${TESTER_AT}`, "--pace", "step"]);
  served.push(s);
  return s;
}

const target = (s: Served) => UdpTarget.connect({ iut: { host: s.addresses.ports[0]!.host, base: 4791 }, controlPort: s.addresses.control.port, tester: { host: TESTER_AT, base: 4791 } }, TESTER);
const ids = (rs: TestSuite[], status: string) => rs.flatMap((s) => s.cases.filter((c) => c.status === status).map((c) => c.name.split(":")[0]!)).sort();

/** The cases no datagram can give: a CE mark, a damaged or resealed IPv4 header, another device's address. */
const SKIPPED = {
  metaroce: ["mrt-bad-ip-checksum", "mrt-ecn-echo", "mrt-ip-length", "mrt-not-mine", "mrt-unknown-peer"],
  rocev2: ["roce-cnp-on-ce"],
};

describe("the conformance suite against menic serve, over UDP", () => {
  for (const transport of ["metaroce", "rocev2"] as const) {
    it(`${transport}: every case passes but those a datagram cannot give, which are skipped saying why`, async () => {
      const s = await serve(transport, transport === "metaroce" ? "127.0.6.1" : "127.0.6.3");
      const t = await target(s);
      let rs: TestSuite[];
      try {
        rs = await runSuite(suite, t, (c) => c.transport === transport);
      } finally {
        await t.shutdown();
        await s.stop();
      }
      const all = suite.cases.filter((c) => c.transport === transport).map((c) => c.id).sort();
      expect(rs.flatMap((r) => r.cases.filter((c) => c.status === "fail" || c.status === "error").map((c) => `${c.name}\n${c.messages.join("\n")}`))).toEqual([]);
      expect(ids(rs, "skip")).toEqual(SKIPPED[transport]);
      expect(ids(rs, "pass")).toEqual(all.filter((id) => !SKIPPED[transport].includes(id)));
      const why = Object.fromEntries(rs[0]!.cases.filter((c) => c.status === "skip").map((c) => [c.name.split(":")[0], c.messages[0]]));
      if (transport === "metaroce") {
        expect(why["mrt-ecn-echo"]).toMatch(/sets its IPv4 DSCP and ECN as no UDP socket's datagram arrives/);
        expect(why["mrt-bad-ip-checksum"]).toMatch(/IPv4 header checksum/);
        expect(why["mrt-unknown-peer"]).toMatch(/comes from 10\.0\.0\.7, not the tester's 10\.0\.0\.1/);
        expect(why["mrt-not-mine"]).toMatch(/goes to 10\.0\.0\.5, not the IUT's 10\.0\.0\.0/);
      }
    });
  }

  it("a break on the way back fails the same cases over UDP as in process: ACKs one PSN too far", async () => {
    const s = await serve("metaroce", "127.0.6.6");
    const chosen: Suite = { ...suite, cases: suite.cases.filter((c) => ["mrt-write-one-packet", "mrt-sack-hole-filled", "mrt-floor-moves-cum", "mrt-bad-crc", "mrt-request-first"].includes(c.id)) };
    const plusOne = mrtEdit((p) => { if (p.frame.type === MRT.TYPE_ACK) p.frame.cum = (p.frame.cum + 1) >>> 0; });
    const t = await target(s);
    let udp: TestSuite[];
    try {
      udp = await runSuite(chosen, new Broken(plusOne, () => true, true, t));
    } finally {
      await t.shutdown();
      await s.stop();
    }
    const sim = await runSuite(chosen, new Broken(plusOne));
    expect(ids(udp, "fail")).toEqual(["mrt-bad-crc", "mrt-floor-moves-cum", "mrt-sack-hole-filled", "mrt-write-one-packet"]);
    expect(ids(udp, "fail")).toEqual(ids(sim, "fail"));
    // the same words: the IUT's frames, their times, its counters
    expect(udp[0]!.cases.map((c) => c.messages.join("\n"))).toEqual(sim[0]!.cases.map((c) => c.messages.join("\n")));
  });
});

describe("menic conform --target udp://", () => {
  it("runs the cases of the transport the IUT speaks: TAP with SKIP lines, JUnit with skipped, exit 0", async () => {
    const iut = await serve("rocev2", "127.0.6.7");
    const dir = mkdtempSync(join(tmpdir(), "menic-conform-udp-"));
    try {
      const r = await cli(["conform", "--target", `udp://${iut.addresses.ports[0]!.host}:4791`, "--control", String(iut.addresses.control.port), "--tester", TESTER_AT, "--junit", join(dir, "out.xml")]);
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      const tap = r.stdout.split("\n");
      expect(tap.slice(0, 2)).toEqual(["TAP version 13", "1..21"]);
      expect(tap.filter((l) => / # SKIP /.test(l))).toEqual([
        "ok 3 - conformance 1.0.0 rocev2: roce-cnp-on-ce: a CE-marked packet draws a CNP (DCQCN) back to its sender's QP # SKIP step 1 of 2 (send): the tester's frame sets its IPv4 DSCP and ECN as no UDP socket's datagram arrives: the tester gives the IUT a UDP payload only, and the IUT rebuilds the rest (docs/conformance.md, \"Over UDP\")",
      ]);
      expect(tap.filter((l) => l.startsWith("not ok"))).toEqual([]);
      expect(readFileSync(join(dir, "out.xml"), "utf8")).toMatch(/<testsuites name="menic conform" tests="21" failures="0" errors="0" skipped="1">/);
    } finally {
      rmSync(dir, { recursive: true });
      await iut.stop();
    }
  });

  it("refuses a target it cannot use, saying what to do", async () => {
    expect(parseUdpTarget("udp://127.0.0.1")).toEqual({ host: "127.0.0.1", base: 4791 });
    expect(parseUdpTarget("udp://127.0.0.1:5791")).toEqual({ host: "127.0.0.1", base: 5791 });
    expect(parseUdpTarget("udp://localhost:4791")).toBeNull();
    expect(parseUdpTarget("udp://127.0.0.1:65535")).toBeNull();
    let r = await cli(["conform", "--target", "udp://127.0.6.1"]);
    expect([r.code, r.stderr.split("\n")[0]]).toEqual([2, "menic: --target udp://127.0.6.1 needs --control <port>: the IUT's control channel (menic serve prints it)"]);
    r = await cli(["conform", "--target", "tcp://127.0.6.1", "--control", "1"]);
    expect([r.code, r.stderr.split("\n")[0]]).toEqual([2, "menic: --target tcp://127.0.6.1: want sim or udp://HOST[:PORT]"]);
    // a device paced by the wall, and one that does not know the tester
    const wall = await spawnServe(["--device", "0", "--bind", "127.0.6.4", "--peer", `1=${TESTER_AT}`, "--pace", "fast"]);
    served.push(wall);
    await expect(UdpTarget.connect({ iut: { host: "127.0.6.4", base: 4791 }, controlPort: wall.addresses.control.port, tester: { host: TESTER_AT, base: 4791 } }, TESTER))
      .rejects.toThrow(/paces its time by the wall clock \(--pace fast\): .* needs it stepped \(menic serve --pace step\)/);
    const stranger = await spawnServe(["--device", "0", "--bind", "127.0.6.5", "--peer", "1=127.0.6.9", "--pace", "step"]);
    served.push(stranger);
    await expect(UdpTarget.connect({ iut: { host: "127.0.6.5", base: 4791 }, controlPort: stranger.addresses.control.port, tester: { host: TESTER_AT, base: 4791 } }, TESTER))
      .rejects.toThrow(/does not know the tester as device 1 at 127\.0\.6\.2:4791 \(it has device 1 at 127\.0\.6\.9:4791\): start it with --peer 1=127\.0\.6\.2:4791/);
  });
});

/** `menic <args>` as its own process: exit status, stdout, stderr. */
function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["bin/menic.js", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "", stderr = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => { stdout += s; });
    child.stderr.setEncoding("utf8").on("data", (s: string) => { stderr += s; });
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}
