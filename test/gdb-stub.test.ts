// The GDB remote serial protocol stub (host/debug/gdb.ts, host/debug/rsp.ts) and its run
// (host/fw/gdb.ts), driven packet by packet: the packets GDB sends, the replies it must get,
// and malformed input, which gets an error or a NAK while the emulator runs on.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { spawn, spawnSync } from "node:child_process";
import { connect, createServer, type Socket } from "node:net";
import { once } from "node:events";
import { runFirmwareGdb, type FwGdbResult, type GdbConnection } from "../host/fw/gdb.js";
import { socketConnection } from "../host/platform/gdb-server.js";
import { runFirmware } from "../host/fw/run.js";
import { RspReader, frame, latin1, MAX_PACKET_BYTES } from "../host/debug/rsp.js";
import { Symbolizer } from "../host/debug/symbolize.js";
import { parseElf } from "../host/elf.js";
import { pipe, GdbClient } from "./helpers/gdb-client.js";

const psum = new Uint8Array(readFileSync("firmware/examples/psum.elf"));
const symbols = Symbolizer.fromElf(psum);
const MAIN = symbols.lookup("main")!.start;
const ENTRY = parseElf(psum).entry;
const TOTAL_LO = 0x80000004; // psum.elf's total_lo (llvm-nm)
const ENGINES = 4;

/** A run of psum on 4 engines under the in-memory client. */
function session(): { client: GdbClient; done: Promise<FwGdbResult>; close(): void } {
  const p = pipe();
  const done = runFirmwareGdb(psum, { config: { engines: ENGINES }, connection: p.connection });
  return { client: p.client, done, close: p.close };
}

const le32 = (v: number) => [v, v >>> 8, v >>> 16, v >>> 24].map((b) => (b & 0xff).toString(16).padStart(2, "0")).join("");
const hexText = (s: string) => Buffer.from(s, "latin1").toString("hex");

/** Resolves once `cond()` holds, looking after each turn of the event loop (no clock). */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setImmediate(r));
}

describe("RSP framing", () => {
  it("frames with a modulo-256 checksum and escapes #, $, } and *", () => {
    expect(String.fromCharCode(...frame("OK"))).toBe("$OK#9a");
    expect(String.fromCharCode(...frame(Uint8Array.of(0x23, 0x41)))).toBe("$}\x03A#" + ((0x7d + 0x03 + 0x41) & 0xff).toString(16));
    const r = new RspReader();
    const ev = r.feed(frame(Uint8Array.of(0x7d, 0x23, 0x24, 0x2a, 0x00)));
    expect(ev).toEqual([{ kind: "packet", payload: Uint8Array.of(0x7d, 0x23, 0x24, 0x2a, 0x00) }]);
  });

  it("reports bad checksums, stray bytes, ^C, overlong packets, and keeps a packet split across reads", () => {
    const r = new RspReader();
    expect(r.feed(latin1("$m0,4#00"))).toEqual([{ kind: "bad-checksum", want: 0xfd, got: "00" }]);
    expect(r.feed(latin1("$m0,4#zz"))).toEqual([{ kind: "bad-checksum", want: 0xfd, got: "zz" }]);
    expect(r.feed(latin1("$m0,4#fd")).map((e) => e.kind)).toEqual(["packet"]);
    expect(r.feed(latin1("x+-\x03")).map((e) => e.kind)).toEqual(["garbage", "ack", "nak", "interrupt"]);
    expect(r.feed(latin1("$g#"))).toEqual([]);
    expect(r.feed(latin1("67"))).toEqual([{ kind: "packet", payload: latin1("g") }]);
    expect(r.feed(latin1("$abc$g#67")).map((e) => e.kind)).toEqual(["packet"]); // a packet cut short by a new one
    const long = latin1("$" + "a".repeat(MAX_PACKET_BYTES + 10) + "#00");
    expect(r.feed(long).map((e) => e.kind)).toEqual(["overlong"]);
    expect(r.feed(latin1("$g#67")).map((e) => e.kind)).toEqual(["packet"]); // and the next one is read
    expect(r.feed(latin1("$" + "a".repeat(MAX_PACKET_BYTES + 10) + "$g#67")).map((e) => e.kind)).toEqual(["overlong", "packet"]); // even with no '#' between
  });
});

describe("the GDB stub", () => {
  it("answers the handshake: features, target.xml, threads, stop reason", async () => {
    const { client, done } = session();
    const sup = await client.ask("qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;xmlRegisters=i386");
    expect(sup.split(";")).toEqual(expect.arrayContaining(["PacketSize=4000", "qXfer:features:read+", "swbreak+", "QStartNoAckMode+", "vContSupported+"]));
    expect(client.acks).toBe("+"); // the packet was acknowledged
    expect(await client.ask("vMustReplyEmpty")).toBe("");
    expect(await client.ask("?")).toBe("T05thread:1;");
    expect(await client.ask("qfThreadInfo")).toBe("m1,2,3,4");
    expect(await client.ask("qsThreadInfo")).toBe("l");
    expect(await client.ask("qAttached")).toBe("1");
    expect(await client.ask("qC")).toBe("QC1");
    expect(await client.ask("qThreadExtraInfo,3")).toBe(hexText("engine 2 running"));
    expect(await client.ask("T4")).toBe("OK");
    expect(await client.ask("T5")).toBe("E02");
    expect(await client.ask("T0")).toBe("E02");
    expect(await client.ask("Hg5")).toBe("E02");
    expect(await client.ask("vCont?")).toBe("vCont;c;C;s;S;t");
    // target.xml in small chunks: m... until l...
    let xml = "";
    for (let off = 0; ; off += 100) {
      const r = await client.ask(`qXfer:features:read:target.xml:${off.toString(16)},64`);
      xml += r.slice(1);
      if (r[0] === "l") break;
      expect(r[0]).toBe("m");
      off -= 100 - 0x64; // asked for 0x64 = 100 bytes
    }
    expect(xml).toContain("<architecture>riscv:rv32</architecture>");
    expect(xml).toContain('<feature name="org.gnu.gdb.riscv.cpu">');
    expect(xml.match(/<reg /g)!.length).toBe(33 + 12);
    expect(xml).toContain('<reg name="pc" bitsize="32" type="code_ptr" regnum="32"/>');
    expect(xml).toContain('<reg name="mhartid" bitsize="32" type="int" regnum="44" group="csr"/>');
    expect(await client.ask("qXfer:features:read:other.xml:0,100")).toBe("E00");
    expect(await client.ask("qXfer:features:read:target.xml:zz")).toBe("E01");
    expect(await client.ask("D")).toBe("OK");
    const r = await done;
    expect(r.gdb.end).toBe("detached");
    expect(r.ok).toBe(true);
  });

  it("reads and writes registers, CSRs and memory of the engine Hg selects", async () => {
    const { client, done } = session();
    const g = await client.ask("g");
    expect(g.length).toBe(33 * 8);
    expect(g.slice(32 * 8)).toBe(le32(ENTRY));
    expect(await client.ask("Hg3")).toBe("OK");
    expect(await client.ask("Pa=44332211")).toBe("OK"); // a0 of engine 2
    expect(await client.ask("pa")).toBe("44332211");
    expect(await client.ask("P0=ffffffff")).toBe("OK");
    expect(await client.ask("p0")).toBe("00000000"); // x0 stays 0
    expect(await client.ask("p2c")).toBe(le32(2)); // mhartid
    expect(await client.ask("p21")).toBe(le32(0x1800)); // mstatus at reset: MPP = M
    expect(await client.ask("P21=00000000")).toBe("E16"); // CSRs are read-only
    expect(await client.ask("p2d")).toBe("E16");
    expect(await client.ask("pzz")).toBe("E01");
    expect(await client.ask("Pa=1234")).toBe("E01");
    expect(await client.ask("Hg1")).toBe("OK");
    expect(await client.ask("pa")).toBe("00000000"); // engine 0's a0 untouched
    expect(await client.ask("G" + "00".repeat(4 * 32) + le32(MAIN))).toBe("OK");
    expect(await client.ask("p20")).toBe(le32(MAIN));
    expect(await client.ask("G1234")).toBe("E01");
    expect(await client.ask("P20=" + le32(ENTRY))).toBe("OK");

    // memory: the image's code as loaded, HBM, and what is not memory
    const main4 = (await client.ask(`m${MAIN.toString(16)},4`));
    const img = parseElf(psum);
    const seg = img.segments.find((s) => s.vaddr <= MAIN && MAIN < s.vaddr + s.data.length)!;
    expect(main4).toBe(Buffer.from(seg.data.subarray(MAIN - seg.vaddr, MAIN - seg.vaddr + 4)).toString("hex"));
    expect(await client.ask("m0,4")).toBe("E0e"); // the NULL guard
    expect(await client.ask("m10000000,4")).toBe("E0e"); // MMIO: reading could pop a FIFO
    expect(await client.ask("mc0000000,4")).toBe("E0e"); // past HBM
    expect(await client.ask("m80000100,zz")).toBe("E01");
    expect(await client.ask("M80000100,4:deadbeef")).toBe("OK");
    expect(await client.ask("m80000100,4")).toBe("deadbeef");
    expect(await client.ask("M80000100,4:dead")).toBe("E01");
    expect(await client.ask("M10000000,4:00000000")).toBe("E0e");
    // X: binary, with the four bytes that need escaping
    expect(await client.ask(Uint8Array.from([...latin1("X80000200,5:"), 0x7d, 0x23, 0x24, 0x2a, 0x00]))).toBe("OK");
    expect(await client.ask("m80000200,5")).toBe("7d23242a00");
    expect(await client.ask("X80000200,0:")).toBe("OK");
    expect(await client.ask(Uint8Array.from([...latin1("X80000200,3:"), 1]))).toBe("E01");
    // SRAM is the engine's own: engine 1 does not see engine 0's write
    expect(await client.ask("M2000,2:abcd")).toBe("OK");
    expect(await client.ask("Hg2")).toBe("OK");
    expect(await client.ask("m2000,2")).toBe("0000");
    client.send("k"); // no reply: the run ends
    const r = await done;
    expect(r.gdb.end).toBe("killed");
    expect(r.ok).toBe(false); // killed before the engines ran
  });

  it("stops at breakpoints and watchpoints, steps, switches engines, and ends as a run without it", async () => {
    const plain = await runFirmware(psum, { config: { engines: ENGINES } });
    const { client, done } = session();
    expect(await client.ask(`Z0,${MAIN.toString(16)},4`)).toBe("OK");
    expect(await client.ask("vCont;c")).toBe("T05thread:1;swbreak:;");
    expect(await client.ask("p20")).toBe(le32(MAIN));
    // step engine 0 over its breakpoint as GDB does on RISC-V: remove it, a breakpoint on the
    // next instruction, engine 0 alone (the others stay stopped), put it back
    expect(await client.ask(`z0,${MAIN.toString(16)},4`)).toBe("OK");
    expect(await client.ask(`Z0,${(MAIN + 4).toString(16)},4`)).toBe("OK");
    expect(await client.ask("vCont;c:1")).toBe("T05thread:1;swbreak:;");
    expect(await client.ask("p20")).toBe(le32(MAIN + 4));
    expect(await client.ask(`z0,${(MAIN + 4).toString(16)},4`)).toBe("OK");
    expect(await client.ask("vCont;t:1")).toBe("E01"); // resumes nothing
    // engine 0 alone with nothing to stop it: the device holds when engine 1 is next to run
    expect(await client.ask("vCont;c:1")).toBe("T05thread:1;");
    expect(await client.ask("Hg2")).toBe("OK");
    expect(await client.ask("p20")).toBe(le32(ENTRY)); // engine 1 has not run
    // a step of engine 0 with the others running: engine 1, next in the window, reaches main first
    expect(await client.ask(`Z0,${MAIN.toString(16)},4`)).toBe("OK");
    expect(await client.ask("vCont;s:1;c")).toBe("T05thread:2;swbreak:;");
    expect(await client.ask(`z0,${MAIN.toString(16)},4`)).toBe("OK");
    const pc0 = await client.ask("Hg1").then(() => client.ask("p20"));
    expect(await client.ask("vCont;s:1;c")).toBe("T05thread:1;"); // the step still asked for
    expect(await client.ask("p20")).not.toBe(pc0);
    // a write watchpoint on total_lo: the first amoadd on it stops before it runs
    expect(await client.ask(`Z2,${TOTAL_LO.toString(16)},4`)).toBe("OK");
    const w = await client.ask("vCont;c");
    expect(w).toMatch(/^T05thread:[1-4];watch:80000004;$/);
    const engine = parseInt(/thread:(\d)/.exec(w)![1]!, 16);
    const pc = parseInt((await client.ask("p20")).match(/../g)!.reverse().join(""), 16);
    const ir = parseInt((await client.ask(`m${pc.toString(16)},4`)).match(/../g)!.reverse().join(""), 16);
    expect(ir & 0x7f).toBe(0x2f); // an AMO
    expect(await client.ask("m80000004,4")).toBe("00000000"); // not yet written
    expect(await client.ask(`z2,${TOTAL_LO.toString(16)},4`)).toBe("OK");
    expect(await client.ask(`vCont;s:${engine}`)).toBe(`T05thread:${engine};`);
    expect(await client.ask("m80000004,4")).not.toBe("00000000");
    // the other engines' registers while engine `engine` is stopped
    expect(await client.ask("Hg4")).toBe("OK");
    expect(await client.ask("p2c")).toBe(le32(3));
    expect(await client.ask("Z2,0,0")).toBe("E01"); // a watchpoint of no bytes
    expect(await client.ask(`vCont;c`)).toBe("W00");
    const r = await done;
    expect(r.gdb.end).toBe("exited");
    expect(r.engines).toEqual(plain.engines);
    expect(r.stats).toEqual(plain.stats);
    expect(r.timePs).toBe(plain.timePs);
  });

  it("answers malformed input with a NAK or an error and runs on; ^C stops a running device", async () => {
    const plain = await runFirmware(psum, { config: { engines: ENGINES } });
    const { client, done } = session();
    client.raw("$m0,4#00"); // bad checksum
    client.raw("hello"); // garbage outside a packet
    client.raw("$" + "g".repeat(MAX_PACKET_BYTES + 1) + "#00"); // overlong
    expect(await client.ask("qC")).toBe("QC1");
    expect(client.acks).toBe("--+"); // two NAKs, then the good packet's ACK
    expect(await client.ask("bogus")).toBe(""); // unknown: unsupported
    expect(await client.ask("Z9,0,4")).toBe("E01");
    expect(await client.ask("vCont;x")).toBe("E01");
    expect(await client.ask("vCont;s:9")).toBe("E02");
    expect(await client.ask("Hx1")).toBe("E02");
    expect(await client.ask("c zz")).toBe("E01");
    // a NAK asks for the last reply again
    client.raw("-");
    expect(await client.next()).toBe("E01");
    // noack mode: no more '+'
    expect(await client.ask("QStartNoAckMode")).toBe("OK");
    const acks = client.acks;
    expect(await client.ask("qC")).toBe("QC1");
    expect(client.acks).toBe(acks);
    // ^C while running: a stop with SIGINT at a window boundary, on an engine that runs
    client.raw(Uint8Array.from([...frame("vCont;c"), 0x03])); // ^C right behind the resume
    expect(await client.next()).toMatch(/^T02thread:[1-4];$/);
    expect(client.pending).toBe(0);
    expect(await client.ask("c")).toBe("W00");
    const r = await done;
    expect(r.engines).toEqual(plain.engines);
    expect(r.gdb.errors).toEqual({ badChecksum: 1, overlong: 1, garbage: 5, dropped: 0 });
  });

  it("handles no more packets once a send says the client is behind, and goes on when it has caught up", async () => {
    const p = pipe();
    let behind = false, drained = () => {};
    const connection: GdbConnection = { ...p.connection, write: (b) => p.connection.write(b) && !behind, onDrain: (cb) => (drained = cb) };
    const done = runFirmwareGdb(psum, { config: { engines: ENGINES }, connection });
    const { client } = p;
    expect(await client.ask("qC")).toBe("QC1");
    behind = true;
    client.raw(Uint8Array.from([...frame("p20"), ...frame("qAttached"), ...frame("Hg2")])); // one read
    await until(() => client.pending > 0);
    expect([client.pending, client.acks]).toEqual([1, "++"]); // the packet acknowledged is answered, no other
    behind = false;
    drained();
    expect([await client.next(), await client.next(), await client.next(), client.acks]).toEqual([le32(ENTRY), "1", "OK", "++++"]);
    client.send("k");
    expect((await done).gdb.end).toBe("killed");
  });

  it("a client that goes away in the middle of a packet leaves the run to finish", async () => {
    const plain = await runFirmware(psum, { config: { engines: ENGINES } });
    const { client, done, close } = session();
    expect(await client.ask(`Z0,${MAIN.toString(16)},4`)).toBe("OK");
    expect(await client.ask("c")).toBe("T05thread:1;swbreak:;");
    client.raw("$m80000000,");
    await new Promise((r) => setTimeout(r, 20));
    close();
    const r = await done;
    expect(r.gdb.end).toBe("disconnected");
    expect(r.engines).toEqual(plain.engines);
    expect(r.timePs).toBe(plain.timePs);
  });
});

describe("a client that does not read its replies (back-pressure)", () => {
  it("stops the stub reading requests with little held; once it reads, every reply comes, in order", async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const accepted = once(server, "connection");
    const sock = connect((server.address() as { port: number }).port, "127.0.0.1");
    const [stubSide] = (await accepted) as [Socket];
    server.close();
    stubSide.setNoDelay(true);

    // request i reads `len` bytes at BASE + i: 0x400 (2 KiB of hex) until the stub side stops
    // reading, then 8 (the flood goes on, cheaper to check); all requests have the same length
    const L = 0x400, BASE = 0x80100000, CAP = 60000;
    const request = (i: number, len: number) => frame(`m${(BASE + i).toString(16)},${len.toString(16).padStart(3, "0")}`);
    const REQ_BYTES = request(0, L).length;
    // what the stub side holds in JS: replies not yet taken by the kernel (writableLength), and
    // bytes read from the client not yet answered (each request of the flood gets one reply)
    let flooding = false, replies = 0, readAtStart = 0, maxOut = 0, maxIn = 0;
    const measure = () => {
      maxOut = Math.max(maxOut, stubSide.writableLength);
      if (flooding) maxIn = Math.max(maxIn, stubSide.bytesRead - readAtStart - replies * REQ_BYTES);
    };
    const inner = socketConnection(stubSide);
    const connection: GdbConnection = {
      ...inner,
      write: (bytes) => {
        const ok = inner.write(bytes);
        if (flooding && bytes[0] === 0x24) replies++;
        measure();
        return ok;
      },
      onData: (cb) => inner.onData((bytes) => (cb(bytes), measure())),
    };
    const done = runFirmwareGdb(psum, { config: { engines: ENGINES }, connection });
    const client = new GdbClient((b) => sock.write(b));
    sock.on("data", (b: Buffer) => client.fromStub(new Uint8Array(b)));

    // HBM from BASE holds bytes that make each request's reply its own (the replies to requests
    // i and j differ), so that a reply lost or out of order shows
    const pattern = new Uint8Array(CAP + L);
    for (let i = 0, x = 1; i < pattern.length; i++) pattern[i] = (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
    for (let off = 0; off < pattern.length; off += 0x1000) {
      const part = pattern.subarray(off, off + 0x1000);
      expect(await client.ask(`M${(BASE + off).toString(16)},${part.length.toString(16)}:${Buffer.from(part).toString("hex")}`)).toBe("OK");
    }
    const acksBefore = client.acks.length;

    // the flood: batches of requests, the client reading nothing, until the stub side has
    // stopped reading (its socket paused) and EXTRA more requests have been written after that
    sock.pause();
    flooding = true;
    readAtStart = stubSide.bytesRead;
    const OUT_BOUND = stubSide.writableHighWaterMark + MAX_PACKET_BYTES; // a full buffer, then one reply
    const IN_BOUND = 2 * 0x10000 + stubSide.readableHighWaterMark; // a read the stub holds, a paused socket's buffer and its last read
    const EXTRA = 16384, BATCH = 256; // EXTRA requests: more bytes than IN_BOUND
    const lens: number[] = [];
    let sentPaused = 0;
    while (maxOut <= OUT_BOUND && maxIn <= IN_BOUND && sentPaused < EXTRA && lens.length < CAP) {
      const paused = stubSide.isPaused(), len = paused ? 8 : L, first = lens.length;
      for (let k = 0; k < BATCH; k++) lens.push(len);
      sock.write(Buffer.concat(lens.slice(first).map((n, k) => request(first + k, n))));
      if (paused) sentPaused += BATCH;
      else await until(() => stubSide.isPaused() || stubSide.bytesRead - readAtStart >= lens.length * REQ_BYTES);
    }
    const sent = lens.length;
    expect(maxOut).toBeLessThanOrEqual(OUT_BOUND);
    expect(maxIn).toBeLessThanOrEqual(IN_BOUND);
    expect(sentPaused).toBe(EXTRA);
    expect(stubSide.isPaused()).toBe(true); // still not reading
    expect(replies).toBeLessThanOrEqual(sent - EXTRA); // none of the requests written after the pause answered

    // the client reads: every request gets its '+' and its reply, in order, byte for byte
    sock.resume();
    const want = (i: number) => Buffer.from(pattern.subarray(i, i + lens[i]!)).toString("hex");
    let firstWrong = -1;
    for (let i = 0; i < sent; i++) if ((await client.next()) !== want(i) && firstWrong < 0) firstWrong = i;
    expect(firstWrong).toBe(-1);
    expect(client.acks.slice(acksBefore)).toBe("+".repeat(sent));
    expect(await client.ask("qC")).toBe("QC1"); // and goes on answering
    expect(client.pending).toBe(0);
    client.send("k");
    expect((await done).gdb.end).toBe("killed");
    sock.destroy();
  });
});

describe("menic fw run --gdb over TCP", () => {
  it("prints the port, takes raw malformed packets and a disconnect, and runs to the same end as without --gdb", async () => {
    const args = ["bin/menic.js", "fw", "run", "firmware/examples/psum.elf", "--engines", "4", "--json"];
    const want = JSON.parse(spawnSync("node", args, { encoding: "utf8" }).stdout);
    const proc = spawn("node", [...args, "--gdb", "0"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    proc.stdout.on("data", (b) => (out += b));
    const port = await new Promise<number>((resolve, reject) => {
      proc.stderr.on("data", (b) => {
        err += b;
        const m = /listening on 127\.0\.0\.1:(\d+)/.exec(err);
        if (m) resolve(Number(m[1]));
      });
      proc.on("exit", () => reject(new Error(`menic exited early: ${err}`)));
    });
    expect(port).toBeGreaterThan(0);
    const sock = connect(port, "127.0.0.1");
    const client = new GdbClient((b) => sock.write(b));
    sock.on("data", (b) => client.fromStub(new Uint8Array(b)));
    await new Promise((r) => sock.once("connect", r));
    client.raw("\x00\xff garbage $");
    client.raw("$qC#00"); // bad checksum (after the '$' above began a packet: this one replaces it)
    expect(await client.ask("qC")).toBe("QC1");
    expect(await client.ask("m0,100")).toBe("E0e");
    expect(await client.ask("m10000000,4")).toBe("E0e");
    client.raw("$" + "M80000000,4:".padEnd(MAX_PACKET_BYTES + 100, "0")); // overlong, never finished
    expect(await client.ask("qAttached")).toBe("1");
    expect(client.acks).toBe("-+++-+"); // the bad ones NAKed, the good ones ACKed
    client.raw("$vCont;s:1#"); // cut off mid-packet: the client goes away
    sock.destroy();
    const code = await new Promise<number>((r) => proc.on("exit", (c) => r(c ?? -1)));
    expect(err).toContain("the client went away");
    expect(code).toBe(0);
    const { gdb, ...result } = JSON.parse(out);
    expect(result).toEqual(want);
    expect(gdb).toEqual({ end: "disconnected", errors: { badChecksum: 1, overlong: 1, garbage: 11, dropped: 0 } });
  });

  it("refuses a bad port", () => {
    const r = spawnSync("node", ["bin/menic.js", "fw", "run", "firmware/examples/psum.elf", "--gdb", "70000"], { encoding: "utf8" });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("menic: --gdb 70000: must be in [0, 65535]\n");
  });
});
