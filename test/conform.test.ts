import { describe, it, expect } from "vitest";
import { mkdtempSync, writeFileSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { coreModule } from "../host/platform/node.js";
import { loadSuite } from "../host/platform/conform-cli.js";
import { main } from "../host/platform/cli.js";
import { runSuite, runCase } from "../host/conform/run.js";
import { SimTarget } from "../host/conform/sim-target.js";
import type { Target } from "../host/conform/target.js";
import type { Transport, Suite } from "../host/conform/case.js";
import { Broken, mrtEdit } from "./helpers/broken-target.js";
import { mismatch } from "../host/conform/frames.js";
import { parseFrame, buildFrame } from "../host/wire/rocev2.js";
import { MRT, MRT_NAK, AETH_SYNDROME } from "../host/generated/headers.js";
import type { TestSuite } from "../host/test-report.js";

// The conformance suite (conformance/, docs/conformance.md): every case passes against a menic
// device in this process; a target broken on purpose fails the cases that name the behaviour
// it breaks, and those only; a case file that breaks the format is refused saying where.

const suite = loadSuite("conformance");
const failedIds = (rs: TestSuite[]) => rs.flatMap((s) => s.cases.filter((c) => c.status !== "pass").map((c) => c.name.split(":")[0]!)).sort();
const passedIds = (rs: TestSuite[]) => rs.flatMap((s) => s.cases.filter((c) => c.status === "pass").map((c) => c.name.split(":")[0]!));

describe("the conformance suite against menic (--target sim)", () => {
  it("has at least 50 cases over both transports, and every one passes", async () => {
    const rs = await runSuite(suite, new SimTarget(coreModule()));
    const byTransport = Object.fromEntries(rs.map((s) => [s.name.split(" ").at(-1), s.cases.length]));
    expect(suite.cases.length).toBeGreaterThanOrEqual(50);
    expect(byTransport.metaroce).toBeGreaterThanOrEqual(40);
    expect(byTransport.rocev2).toBeGreaterThanOrEqual(15);
    expect(rs.flatMap((s) => s.cases.filter((c) => c.status !== "pass").map((c) => `${c.name}\n${c.messages.join("\n")}`))).toEqual([]);
  });

  it("covers what the issue names: SACKs and their window, retransmission, duplicates, RNR, placement, bad frames, ECN, the hint, giving up", () => {
    const ids = new Set(suite.cases.map((c) => c.id));
    for (const id of ["mrt-sack-holes", "mrt-sack-window-edge", "mrt-beyond-window", "mrt-sack-retransmit-one", "mrt-duplicate-ssn", "mrt-duplicate-psn",
      "mrt-rnr", "mrt-nak-rnr", "mrt-placement-out-of-order", "mrt-bad-crc", "mrt-truncated", "mrt-ecn-echo", "mrt-grant", "mrt-hint-paces", "mrt-give-up",
      "mrt-tail-probe", "roce-psn-sequence-error", "roce-requester-go-back-n", "roce-duplicate", "roce-rnr", "roce-bad-icrc"])
      expect(ids.has(id), id).toBe(true);
  });
});

async function failuresWith(target: Target, ids: string[]): Promise<{ failed: string[]; passed: string[]; rs: TestSuite[] }> {
  const chosen: Suite = { ...suite, cases: suite.cases.filter((c) => ids.includes(c.id)) };
  const rs = await runSuite(chosen, target);
  return { failed: failedIds(rs), passed: passedIds(rs), rs };
}

describe("a case fails when the behaviour it names is broken", () => {
  it("ACKs one PSN too far: the cases that check the cumulative PSN fail, saying which field", async () => {
    const r = await failuresWith(new Broken(mrtEdit((p) => { if (p.frame.type === MRT.TYPE_ACK) p.frame.cum = (p.frame.cum + 1) >>> 0; })),
      ["mrt-write-one-packet", "mrt-sack-hole-filled", "mrt-floor-moves-cum", "mrt-bad-crc", "mrt-request-first"]);
    expect(r.failed).toEqual(["mrt-bad-crc", "mrt-floor-moves-cum", "mrt-sack-hole-filled", "mrt-write-one-packet"]);
    expect(r.passed).toEqual(["mrt-request-first"]);
    expect(r.rs[0]!.cases.find((c) => c.name.startsWith("mrt-write-one-packet"))!.messages[0]).toMatch(/cum 2, expected 1/);
  });

  it("SACKs nothing: the SACK cases fail, a lone packet's ACK does not", async () => {
    const r = await failuresWith(new Broken(mrtEdit((p) => { if (p.frame.type === MRT.TYPE_ACK) p.frame.sack = 0n; })),
      ["mrt-sack-hole", "mrt-sack-holes", "mrt-sack-window-edge", "mrt-write-one-packet", "mrt-duplicate-psn"]);
    expect(r.failed).toEqual(["mrt-sack-hole", "mrt-sack-holes", "mrt-sack-window-edge"]);
  });

  it("never NAKs: the refusal cases fail", async () => {
    const r = await failuresWith(new Broken(mrtEdit((p) => { if (p.frame.type === MRT.TYPE_ACK) p.frame.nakCode = MRT_NAK.NONE; })),
      ["mrt-rnr", "mrt-bad-rkey", "mrt-send-too-long", "mrt-no-remote-write", "mrt-send-into-receive"]);
    expect(r.failed).toEqual(["mrt-bad-rkey", "mrt-no-remote-write", "mrt-rnr", "mrt-send-too-long"]);
  });

  it("retransmits without RETX, or acknowledges what it did not place: the cases that say so fail", async () => {
    const noRetx = await failuresWith(new Broken(mrtEdit((p) => { if (p.frame.type === MRT.TYPE_DATA) p.frame.flags &= ~MRT.FLAG_RETX; })),
      ["mrt-sack-retransmit-one", "mrt-write-after-grant"]);
    expect(noRetx.failed).toEqual(["mrt-sack-retransmit-one"]);
    const noPlace = await failuresWith(new Broken((_, b) => b, () => true, false), ["mrt-write-one-packet", "mrt-placement-out-of-order", "roce-write-multi", "mrt-rnr"]);
    expect(noPlace.failed).toEqual(["mrt-placement-out-of-order", "mrt-write-one-packet", "roce-write-multi"]);
  });

  it("RoCEv2: a responder that ACKs out-of-sequence packets, and a requester deaf to NAKs, fail their cases", async () => {
    const ackAll = (t: Transport, bytes: Uint8Array) => {
      const p = t === "rocev2" ? parseFrame(bytes) : null;
      if (!p?.ok || !p.frame.aeth || (p.frame.aeth.syndrome & AETH_SYNDROME.TYPE_MASK) !== AETH_SYNDROME.NAK) return bytes;
      return buildFrame({ ...p.frame, aeth: { syndrome: AETH_SYNDROME.CREDITS_INVALID, msn: p.frame.aeth.msn } });
    };
    const r = await failuresWith(new Broken(ackAll), ["roce-psn-sequence-error", "roce-bad-rkey", "roce-write-only"]);
    expect(r.failed).toEqual(["roce-bad-rkey", "roce-psn-sequence-error"]);
    const deaf = (t: Transport, bytes: Uint8Array) => {
      const p = t === "rocev2" ? parseFrame(bytes) : null;
      return !(p?.ok && p.frame.aeth && (p.frame.aeth.syndrome & AETH_SYNDROME.TYPE_MASK) !== AETH_SYNDROME.ACK);
    };
    const d = await failuresWith(new Broken((_, b) => b, deaf), ["roce-requester-go-back-n", "roce-requester-rem-access", "roce-requester-write"]);
    expect(d.failed).toEqual(["roce-requester-go-back-n", "roce-requester-rem-access"]);
  });
});

describe("case files that break the format are refused, saying where", () => {
  /** A suite folder holding one MetaRoCE-like case with `steps`. */
  function folder(steps: unknown, extra: Record<string, unknown> = {}): string {
    const dir = mkdtempSync(join(tmpdir(), "menic-conform-"));
    mkdirSync(join(dir, "metaroce"));
    writeFileSync(join(dir, "suite.json"), readFileSync("conformance/suite.json"));
    writeFileSync(join(dir, "metaroce", "x.json"), JSON.stringify({ id: "x", title: "x", transport: "metaroce", spec: "s", steps, ...extra }));
    return dir;
  }
  it("a step of no known kind, a time without its unit, a fragment that does not exist", () => {
    for (const [steps, message] of [
      [[{ sned: {} }], /x\.json step 1: a step has exactly one of send, expect.*\(it has none\)/],
      [[{ expect: { type: "ACK" }, within: "5" }], /x\.json step 1: "within" is a time with its unit, e\.g\. "5us"/],
      [[{ wait: "1us" }, { use: "nope" }], /x\.json step 2: use names a fragment of suite\.json \(mrt-grant\)/],
      [[], /"steps" is a list of at least one step/],
    ] as const) {
      const dir = folder(steps);
      try { expect(() => loadSuite(dir)).toThrow(message); } finally { rmSync(dir, { recursive: true }); }
    }
  });

  it("a value naming an unknown variable is an error of the case, not a failure of the IUT", async () => {
    const dir = folder([{ send: { type: "DATA", path: 0, psn: "$nope", destQp: "$qpn" } }]);
    try {
      const s = loadSuite(dir);
      const r = await runCase(s.cases[0]!, s.fragments, new SimTarget(coreModule()));
      expect(r.status).toBe("error");
      expect(r.messages[0]).toMatch(/x\.json step 1 of 1 \(send\): field psn: \$nope is not known here \(known: \$qpn, \$addr, \$rkey, \$peerQpn, \$peerAddr, \$peerRkey\)/);
    } finally { rmSync(dir, { recursive: true }); }
  });

  it("menic conform: TAP on stdout, exit 1 when a case fails, 2 for a bad suite", async () => {
    const dir = folder([{ expect: { type: "ACK" }, within: "1us" }]);
    const out: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((s: string) => { out.push(s); return true; }) as typeof process.stdout.write;
    try {
      expect(await main(["conform", "--suite", dir])).toBe(1);
      expect(await main(["conform", "--suite", join(dir, "metaroce")])).toBe(2);
    } finally {
      process.stdout.write = write;
      rmSync(dir, { recursive: true });
    }
    expect(out.join("")).toMatch(/^TAP version 13\n1\.\.1\nnot ok 1 - conformance 1\.0\.0 metaroce: x: x\n  ---\n  severity: fail\n  messages:\n    - "step 1 of 1 \(expect\): no frame \{\\"type\\":\\"ACK\\"\} from 5\.000 us to 6\.000 us; the IUT sent nothing"/);
  });
});

describe("sequence numbers in a case wrap as their fields do", () => {
  it("\$p+1 past 2^24 (RoCEv2) and 2^32 (MetaRoCE-like); a SACK across 2^32 matched as a set", () => {
    const vars = new Map([["p", 0xffffff], ["q", 0xffffffff]]);
    expect(mismatch("rocev2", { ok: true, fields: { psn: 0 } }, { psn: "$p+1" }, vars)).toBeNull();
    expect(mismatch("rocev2", { ok: true, fields: { psn: 1 } }, { psn: "$p+1" }, vars)).toBe("psn 1, expected 0");
    expect(mismatch("metaroce", { ok: true, fields: { cum: 0 } }, { cum: "$q+1" }, vars)).toBeNull();
    // the SACK of cum 0xfffffffe lists 0xffffffff, then 1: in sequence order, not numeric
    expect(mismatch("metaroce", { ok: true, fields: { sackPsns: [0xffffffff, 1] } }, { sackPsns: ["$q+2", "$q"] }, vars)).toBeNull();
    expect(mismatch("metaroce", { ok: true, fields: { sackPsns: [0xffffffff, 1] } }, { sackPsns: ["$q"] }, vars)).toMatch(/^sackPsns \[4294967295, 1\], expected \[4294967295\]/);
  });
});
