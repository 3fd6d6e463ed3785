// A GDB remote serial protocol stub for the message engines (GDB manual, appendix E): each
// engine is a thread (thread id = engine + 1), the device one all-stop process. Packets come
// in as bytes (host/debug/rsp.ts frames them) and replies go out through `send`; running is the
// host's job (host/fw/gdb.ts): the stub asks for it with `resume` and is told where it stopped.
// No Node APIs, no sockets: test/gdb-stub.test.ts drives it with bytes.
//
// Supported: qSupported (PacketSize, qXfer:features:read, swbreak, hwbreak, vContSupported,
// QStartNoAckMode), target.xml (riscv32: x0..x31, pc, and machine CSRs read-only), ?, g/G,
// p/P, m/M/X over the engine's memory map, Z0/Z1 breakpoints and Z2/Z3/Z4 watchpoints, c/s/C/S
// and vCont (c, C, s, S, t), ^C and vCtrlC, H, T, qC, qfThreadInfo/qsThreadInfo,
// qThreadExtraInfo, qAttached, D, k and vKill. Anything else gets the empty reply (unsupported).

import { RspReader, type RspEvent, frame, toHex, fromHex, latin1, MAX_PACKET_BYTES } from "./rsp.js";
import { PC_REGNUM, type EngineDebugger, type DebugStopEvent, type WatchKind } from "./target.js";

/** What the stub asks of the host that runs the device. */
export interface GdbHost {
  /**
   * Bytes for the client. False when the client is behind (its unread replies are over the
   * connection's limit): the stub then handles no more packets, the bytes after wait in the
   * stub unread, until `GdbStub.drained`.
   */
  send(bytes: Uint8Array): boolean;
  /**
   * Run until the debugger's checks stop the device (step: stop once that engine has executed
   * one instruction; only: the engines resumed, null for all: EngineDebugger.only).
   */
  resume(step: number | null, only: number[] | null): void;
  /** ^C while running: stop as soon as possible and call `stopped` with signal SIGINT. */
  interrupt(): void;
  /** Forget breakpoints and the client; the run goes on to its end. */
  detach(): void;
  /** End the run now. */
  kill(): void;
}

/** Where the device stopped, for the stop reply. */
export interface GdbStop {
  engine: number;
  signal: number;
  /** The core's reason, when the debugger's checks stopped it (null: interrupt or the initial stop). */
  event?: DebugStopEvent;
}

export const SIGINT = 2, SIGILL = 4, SIGTRAP = 5, SIGBUS = 7, SIGSEGV = 11;

// mcause -> signal for an engine that faulted (privileged spec table 3.6)
const FAULT_SIGNALS: Record<number, number> = { 0: SIGBUS, 1: SIGSEGV, 2: SIGILL, 3: SIGTRAP, 4: SIGBUS, 5: SIGSEGV, 6: SIGBUS, 7: SIGSEGV };
export function faultSignal(mcause: number): number {
  return FAULT_SIGNALS[mcause] ?? SIGSEGV;
}

/** ABI names of x0..x31 and the GDB types the riscv feature gives them. */
const GPR_NAMES = ["zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "fp", "s1", "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7",
  "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6"];
/** The machine CSRs shown, read-only, after pc (regnums 33 up). */
export const CSRS: readonly (readonly [string, number])[] = [
  ["mstatus", 0x300], ["misa", 0x301], ["mie", 0x304], ["mtvec", 0x305], ["mscratch", 0x340], ["mepc", 0x341],
  ["mcause", 0x342], ["mtval", 0x343], ["mip", 0x344], ["mcycle", 0xb00], ["minstret", 0xb02], ["mhartid", 0xf14],
];

function targetXml(): string {
  const type = (r: number) => (r === 1 ? "code_ptr" : r === 2 ? "data_ptr" : "int");
  const gprs = GPR_NAMES.map((n, r) => `    <reg name="${n}" bitsize="32" type="${type(r)}" regnum="${r}"/>`).join("\n");
  const csrs = CSRS.map(([n], k) => `    <reg name="${n}" bitsize="32" type="int" regnum="${PC_REGNUM + 1 + k}" group="csr"/>`).join("\n");
  return `<?xml version="1.0"?>
<!DOCTYPE target SYSTEM "gdb-target.dtd">
<target version="1.0">
  <architecture>riscv:rv32</architecture>
  <feature name="org.gnu.gdb.riscv.cpu">
${gprs}
    <reg name="pc" bitsize="32" type="code_ptr" regnum="${PC_REGNUM}"/>
  </feature>
  <feature name="org.gnu.gdb.riscv.csr">
${csrs}
  </feature>
</target>
`;
}

/** A 32-bit value as the target's bytes (little-endian) in hex. */
function hex32(v: number): string {
  return toHex(Uint8Array.of(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff));
}

function parse32(hex: string): number | null {
  const b = hex.length === 8 ? fromHex(hex) : null;
  return b ? (b[0]! | (b[1]! << 8) | (b[2]! << 16) | (b[3]! << 24)) >>> 0 : null;
}

/** A hex number of at most 8 digits, or null. */
function num(s: string | undefined): number | null {
  return s !== undefined && /^[0-9a-fA-F]{1,8}$/.test(s) ? parseInt(s, 16) : null;
}

const E_SYNTAX = "E01", E_THREAD = "E02", E_MEMORY = "E0e", E_FULL = "E1c", E_REGISTER = "E16";
const WATCH_KINDS: Record<string, WatchKind> = { "2": "write", "3": "read", "4": "access" };
const STOP_KEYS: Record<string, string> = { "watch-write": "watch", "watch-read": "rwatch", "watch-access": "awatch" };
/** Packets kept while the device runs (all-stop: GDB sends nothing but ^C then; more are dropped). */
const QUEUE_LIMIT = 64;

export class GdbStub {
  private readonly reader = new RspReader();
  private noAck = false;
  private lastSent: Uint8Array = new Uint8Array();
  private running = false;
  private ended = false;
  private blocked = false; // a send returned false: wait for drained()
  private readonly queue: Uint8Array[] = [];
  private lastStop: GdbStop = { engine: 0, signal: SIGTRAP };
  private gThread = 0; // engine that g/G/p/P/m/M act on
  private cThread = 0; // engine legacy c/s act on
  private readonly xml = latin1(targetXml());
  private readonly breakpoints = new Set<number>(); // Z0/Z1 addresses set
  /** Protocol errors seen: the client's bad packets (checksums, overlong, stray bytes). */
  readonly errors = { badChecksum: 0, overlong: 0, garbage: 0, dropped: 0 };

  constructor(private readonly target: EngineDebugger, private readonly host: GdbHost) {}

  get isRunning(): boolean {
    return this.running;
  }

  /**
   * Bytes from the client (kept, not copied). They are handled packet by packet while the
   * client takes the replies; once it is behind they wait here, and the host should stop
   * reading from the client (host/platform/gdb-server.ts pauses the socket) until `drained`.
   */
  receive(bytes: Uint8Array): void {
    this.reader.push(bytes);
    this.work();
  }

  /** The client has taken the replies sent: go on with the packets that wait. */
  drained(): void {
    this.blocked = false;
    this.work();
  }

  /** Handles what came, one event at a time, until there is nothing left or the client is behind. */
  private work(): void {
    while (!this.blocked) {
      if (!this.running && !this.ended && this.queue.length) {
        this.handle(this.queue.shift()!);
        continue;
      }
      const ev = this.reader.next();
      if (!ev) return;
      this.event(ev);
    }
  }

  private event(ev: RspEvent): void {
    switch (ev.kind) {
      case "packet":
        if (!this.noAck) this.send(latin1("+"));
        if (this.running) {
          if (this.queue.length < QUEUE_LIMIT) this.queue.push(ev.payload);
          else this.errors.dropped++;
        } else this.handle(ev.payload);
        break;
      case "interrupt":
        if (this.running) this.host.interrupt();
        break;
      case "nak":
        if (!this.noAck && this.lastSent.length) this.send(this.lastSent);
        break;
      case "ack":
        break;
      case "bad-checksum":
        this.errors.badChecksum++;
        if (!this.noAck) this.send(latin1("-"));
        break;
      case "overlong":
        this.errors.overlong++;
        if (!this.noAck) this.send(latin1("-"));
        break;
      case "garbage":
        this.errors.garbage++;
        break;
    }
  }

  /** The device stopped (for the debugger, a fault, or ^C): reply to the resume, then handle what came meanwhile. */
  stopped(stop: GdbStop): void {
    this.running = false;
    this.lastStop = stop;
    this.gThread = this.cThread = stop.engine;
    this.reply(this.stopReply(stop)); // sent even when the client is behind: one reply, to a packet handled
    this.work();
  }

  /** The run ended with `code` (the process's exit status). */
  exited(code: number): void {
    this.running = false;
    this.ended = true;
    this.reply(`W${(code & 0xff).toString(16).padStart(2, "0")}`);
  }

  private stopReply(s: GdbStop): string {
    let r = `T${s.signal.toString(16).padStart(2, "0")}thread:${(s.engine + 1).toString(16)};`;
    const ev = s.event;
    // held: the resumed engine stopped where GDB's single-step breakpoint usually is: say so
    if (ev?.reason === "breakpoint" || (ev?.reason === "held" && this.breakpoints.has(this.target.registers(s.engine)[PC_REGNUM]!))) r += "swbreak:;";
    else if (ev && STOP_KEYS[ev.reason]) r += `${STOP_KEYS[ev.reason]}:${ev.addr.toString(16)};`;
    return r;
  }

  private reply(text: string | Uint8Array): void {
    this.lastSent = frame(text);
    this.send(this.lastSent);
  }

  private send(bytes: Uint8Array): void {
    if (!this.host.send(bytes)) this.blocked = true;
  }

  private run(step: number | null, only: number[] | null = null): void {
    this.running = true;
    this.host.resume(step, only);
  }

  private handle(payload: Uint8Array): void {
    if (this.ended) return this.reply(E_SYNTAX);
    if (payload[0] === 0x58) return this.reply(this.writeBinary(payload)); // X: binary data
    const r = this.command(String.fromCharCode(...payload));
    if (r !== null) this.reply(r);
  }

  /** The reply to one packet; null when there is none (resumed: the stop reply comes later; killed). */
  private command(p: string): string | null {
    const c = p[0];
    switch (c) {
      case "?":
        return this.stopReply(this.lastStop);
      case "g":
        return this.target.registers(this.gThread).map(hex32).join("");
      case "G":
        return this.writeAllRegisters(p.slice(1));
      case "p": {
        const r = num(p.slice(1));
        if (r === null) return E_SYNTAX;
        if (r <= PC_REGNUM) return hex32(this.target.registers(this.gThread)[r]!);
        const csr = CSRS[r - PC_REGNUM - 1];
        if (!csr) return E_REGISTER;
        return hex32(this.target.csr(this.gThread, csr[1]) ?? 0);
      }
      case "P": {
        const m = /^P([0-9a-fA-F]{1,8})=([0-9a-fA-F]{8})$/.exec(p);
        if (!m) return E_SYNTAX;
        const r = parseInt(m[1]!, 16);
        if (r > PC_REGNUM) return E_REGISTER; // CSRs are read-only here
        this.target.setRegister(this.gThread, r, parse32(m[2]!)!);
        return "OK";
      }
      case "m": {
        const m = /^m([0-9a-fA-F]{1,8}),([0-9a-fA-F]{1,8})$/.exec(p);
        if (!m) return E_SYNTAX;
        const len = Math.min(parseInt(m[2]!, 16), (MAX_PACKET_BYTES - 4) >> 1);
        const bytes = this.target.readMemory(this.gThread, parseInt(m[1]!, 16), len);
        return bytes ? toHex(bytes) : E_MEMORY;
      }
      case "M": {
        const m = /^M([0-9a-fA-F]{1,8}),([0-9a-fA-F]{1,8}):([0-9a-fA-F]*)$/.exec(p);
        const data = m ? fromHex(m[3]!) : null;
        if (!m || !data || data.length !== parseInt(m[2]!, 16)) return E_SYNTAX;
        return this.target.writeMemory(this.gThread, parseInt(m[1]!, 16), data) ? "OK" : E_MEMORY;
      }
      case "Z":
      case "z":
        return this.point(c === "Z", p.slice(1));
      case "c":
      case "s":
      case "C":
      case "S":
        return this.legacyResume(p);
      case "H": {
        const t = this.thread(p.slice(2), true);
        if (t === null || (p[1] !== "g" && p[1] !== "c")) return E_THREAD;
        if (t >= 0) {
          if (p[1] === "g") this.gThread = t;
          else this.cThread = t;
        }
        return "OK";
      }
      case "T":
        return this.thread(p.slice(1), false) !== null ? "OK" : E_THREAD;
      case "D":
        this.reply("OK");
        this.host.detach();
        return null;
      case "k":
        this.ended = true;
        this.host.kill();
        return null;
      case "q":
      case "Q":
        return this.query(p);
      case "v":
        return this.vPacket(p);
      default:
        return "";
    }
  }

  /** An engine from a thread id: -1 "all" and 0 "any" give -1 when allowed, a bad one null. */
  private thread(s: string, allowAll: boolean): number | null {
    if (allowAll && (s === "-1" || s === "0")) return -1;
    const t = num(s);
    return t !== null && t >= 1 && t <= this.target.engines ? t - 1 : null;
  }

  private writeAllRegisters(hex: string): string {
    if (hex.length < 8 * (PC_REGNUM + 1) || hex.length % 8 !== 0) return E_SYNTAX;
    const values: number[] = [];
    for (let r = 0; r <= PC_REGNUM; r++) {
      const v = parse32(hex.slice(8 * r, 8 * r + 8));
      if (v === null) return E_SYNTAX;
      values.push(v);
    }
    values.forEach((v, r) => this.target.setRegister(this.gThread, r, v)); // CSRs after pc, if sent, are ignored
    return "OK";
  }

  private writeBinary(payload: Uint8Array): string {
    const colon = payload.indexOf(0x3a);
    const m = colon > 0 ? /^X([0-9a-fA-F]{1,8}),([0-9a-fA-F]{1,8})$/.exec(String.fromCharCode(...payload.subarray(0, colon))) : null;
    if (!m) return E_SYNTAX;
    const data = payload.subarray(colon + 1);
    if (data.length !== parseInt(m[2]!, 16)) return E_SYNTAX;
    if (data.length === 0) return "OK"; // the client's probe for X support
    return this.target.writeMemory(this.gThread, parseInt(m[1]!, 16), data) ? "OK" : E_MEMORY;
  }

  /** Z/z type,addr,kind: 0 and 1 breakpoints (all engines), 2..4 watchpoints of `kind` bytes. */
  private point(set: boolean, args: string): string {
    const m = /^([0-4]),([0-9a-fA-F]{1,8}),([0-9a-fA-F]{1,8})$/.exec(args);
    if (!m) return E_SYNTAX;
    const addr = parseInt(m[2]!, 16), kind = parseInt(m[3]!, 16);
    const isBreak = m[1] === "0" || m[1] === "1";
    if (!isBreak && kind === 0) return E_SYNTAX; // a watchpoint of no bytes
    const ok = isBreak ? this.target.setBreakpoint(addr, set) : this.target.setWatchpoint(WATCH_KINDS[m[1]!]!, addr, kind, set);
    if (isBreak && ok) {
      if (set) this.breakpoints.add(addr);
      else this.breakpoints.delete(addr);
    }
    return ok ? "OK" : set ? E_FULL : "OK"; // removing what is not there is no error
  }

  /** c [addr], s [addr], C sig[;addr], S sig[;addr] on the thread Hc chose. */
  private legacyResume(p: string): string | null {
    const m = /^([cs])([0-9a-fA-F]{1,8})?$/.exec(p) ?? /^([CS])[0-9a-fA-F]{1,2}(?:;([0-9a-fA-F]{1,8}))?$/.exec(p);
    if (!m) return E_SYNTAX;
    if (m[2] !== undefined) this.target.setRegister(this.cThread, PC_REGNUM, parseInt(m[2], 16));
    this.run(m[1]!.toLowerCase() === "s" ? this.cThread : null);
    return null;
  }

  private vPacket(p: string): string | null {
    if (p === "vCont?") return "vCont;c;C;s;S;t";
    if (p === "vCtrlC") {
      if (this.running) this.host.interrupt();
      return "OK";
    }
    if (p.startsWith("vKill")) {
      this.reply("OK");
      this.ended = true;
      this.host.kill();
      return null;
    }
    if (p.startsWith("vCont;")) {
      // the first step action names the engine to step; the engines that any c/s action names
      // are resumed (an action without a thread: all), the others stay stopped as far as the
      // device's order allows (EngineDebugger.only; docs/engine.md)
      let step: number | null = null;
      let only: number[] | null = [];
      for (const action of p.slice(6).split(";")) {
        const m = /^([cCsSt])(?:[0-9a-fA-F]{2})?(?::(.+))?$/.exec(action);
        if (!m) return E_SYNTAX;
        const t = m[2] === undefined ? -1 : this.thread(m[2], true);
        if (t === null) return E_THREAD;
        if (m[1] === "t") continue;
        if ((m[1] === "s" || m[1] === "S") && step === null) step = t >= 0 ? t : this.cThread;
        if (t < 0) only = null;
        else only?.push(t);
      }
      if (only?.length === 0) return E_SYNTAX; // nothing to resume
      this.run(step, only);
      return null;
    }
    return ""; // vMustReplyEmpty, vFile, vRun, ...: not supported
  }

  private query(p: string): string | null {
    if (p.startsWith("qSupported")) return `PacketSize=${MAX_PACKET_BYTES.toString(16)};qXfer:features:read+;swbreak+;hwbreak+;vContSupported+;QStartNoAckMode+`;
    if (p === "QStartNoAckMode") {
      this.reply("OK");
      this.noAck = true;
      return null;
    }
    if (p === "qAttached") return "1";
    if (p === "qC") return `QC${(this.gThread + 1).toString(16)}`;
    if (p === "qfThreadInfo") return "m" + Array.from({ length: this.target.engines }, (_, e) => (e + 1).toString(16)).join(",");
    if (p === "qsThreadInfo") return "l";
    if (p.startsWith("qThreadExtraInfo,")) {
      const t = this.thread(p.slice(17), false);
      return t === null ? E_THREAD : toHex(latin1(this.target.describe(t)));
    }
    if (p === "qSymbol::") return "OK";
    if (p.startsWith("qXfer:features:read:")) {
      const m = /^qXfer:features:read:([^:]*):([0-9a-fA-F]{1,8}),([0-9a-fA-F]{1,8})$/.exec(p);
      if (!m) return E_SYNTAX;
      if (m[1] !== "target.xml") return "E00";
      const off = parseInt(m[2]!, 16), len = Math.min(parseInt(m[3]!, 16), MAX_PACKET_BYTES - 8);
      const part = this.xml.subarray(off, off + len);
      return (off + len >= this.xml.length ? "l" : "m") + String.fromCharCode(...part);
    }
    return "";
  }
}
