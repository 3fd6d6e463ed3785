// `menic fw run --gdb <port>`: the firmware run of host/fw/run.ts with a GDB client attached
// (host/debug/gdb.ts). The device starts stopped before the first instruction; the client
// resumes it, and the run goes on in slices of simulated time (host/debug/target.ts) so that
// the client's ^C is seen, until the device stops for the debugger or the program ends, which
// the client hears as a stop reply or W<status>. A client that detaches or goes away leaves the
// run to finish without it; kill ends it where it is.

import type { Device } from "../device.js";
import { EngineDebugger, type DebugStopEvent } from "../debug/target.js";
import { GdbStub, SIGINT, SIGTRAP, faultSignal } from "../debug/gdb.js";
import { startFirmware, finishFirmware, DEFAULT_UNTIL_PS, type FwRunOptions, type FwRunResult } from "./run.js";

/**
 * A client's byte stream: the platform's socket (host/platform/gdb-server.ts) or a test's pipe.
 * Back-pressure: `write` returns false once the client is behind on reading (the socket's
 * write buffer is full); the connection then delivers no more data until it has called
 * `onDrain`'s callback (the socket stops reading, so the client's own writes block), and the
 * stub sends nothing more meanwhile but the reply to a packet it already handled.
 */
export interface GdbConnection {
  write(bytes: Uint8Array): boolean;
  onData(cb: (bytes: Uint8Array) => void): void;
  /** The client has caught up after a write returned false. */
  onDrain(cb: () => void): void;
  onClose(cb: () => void): void;
  close(): void;
}

export interface FwGdbOptions extends FwRunOptions {
  connection: GdbConnection;
  /** One line for each thing that happens to the debugging session (default: nothing). */
  log?: (line: string) => void;
}

export interface FwGdbResult extends FwRunResult {
  /** How the session ended, and the client's protocol errors (bad checksums, overlong packets, stray bytes). */
  gdb: { end: "exited" | "detached" | "disconnected" | "killed"; errors: GdbStub["errors"] };
}

/** Wall time run between two looks at the client's bytes (ms). */
const SLICE_WALL_MS = 20;

export async function runFirmwareGdb(elf: Uint8Array, opts: FwGdbOptions): Promise<FwGdbResult> {
  const dev = await startFirmware(elf, opts);
  const until = BigInt(opts.untilPs ?? DEFAULT_UNTIL_PS);
  const dbg = new EngineDebugger(dev);
  const conn = opts.connection;
  const log = opts.log ?? (() => {});

  return new Promise<FwGdbResult>((resolve, reject) => {
    // stopped: the client has the device; running: for the client; free: without a client; done
    let state: "stopped" | "running" | "free" | "done" = "stopped";
    let end: FwGdbResult["gdb"]["end"] = "exited";
    let interrupt = false;
    let pumping = false;

    const finish = () => {
      if (state === "done") return;
      state = "done";
      const r = finishFirmware(dev, elf, dev.nowPs, opts);
      if (end === "exited") stub.exited(r.ok ? 0 : 1);
      conn.close();
      resolve({ ...r, gdb: { end, errors: stub.errors } });
    };
    const fail = (e: unknown) => {
      state = "done";
      conn.close();
      reject(e);
    };
    const release = (why: "detached" | "disconnected") => {
      if (state === "done" || end !== "exited") return;
      end = why;
      log(why === "detached" ? "gdb: detached; the run goes on to its end" : "gdb: the client went away; the run goes on to its end");
      dbg.detach();
      state = "free";
      schedule();
    };

    const stub = new GdbStub(dbg, {
      send: (bytes) => conn.write(bytes),
      resume: (step, only) => {
        dbg.step(step);
        dbg.only(only);
        state = "running";
        schedule();
      },
      interrupt: () => {
        interrupt = true;
      },
      detach: () => release("detached"),
      kill: () => {
        end = "killed";
        log("gdb: killed; the run ends here");
        finish();
      },
    });

    /** Runs slices until the device stops, the run ends or SLICE_WALL_MS have passed. */
    const pump = () => {
      pumping = false;
      try {
        const t0 = performance.now();
        while (state === "running" || state === "free") {
          if (state === "running" && interrupt) {
            interrupt = false;
            state = "stopped";
            stub.stopped({ engine: firstLive(dev), signal: SIGINT });
            return;
          }
          const r = dbg.run(until);
          if (r.kind === "stopped") {
            state = "stopped";
            stub.stopped({ engine: r.stop.engine, signal: signalOf(dev, r.stop), event: r.stop });
            return;
          }
          if (r.kind === "ended") return finish();
          if (performance.now() - t0 > SLICE_WALL_MS) return schedule();
        }
      } catch (e) {
        fail(e);
      }
    };
    const schedule = () => {
      if (pumping) return;
      pumping = true;
      setTimeout(pump, 0);
    };

    const guarded = (f: () => void) => {
      if (state === "done") return;
      try {
        f();
      } catch (e) {
        fail(e);
      }
    };
    conn.onData((bytes) => guarded(() => stub.receive(bytes)));
    conn.onDrain(() => guarded(() => stub.drained()));
    conn.onClose(() => release("disconnected"));
  });
}

function signalOf(dev: Device, stop: DebugStopEvent): number {
  return stop.reason === "fault" ? faultSignal(dev.engine(stop.engine).mcause ?? 0) : SIGTRAP;
}

/** The engine a ^C stop names: the first one still running or asleep (else engine 0). */
function firstLive(dev: Device): number {
  for (let e = 0; e < dev.engines; e++) {
    const s = dev.engine(e).state;
    if (s === "running" || s === "sleeping") return e;
  }
  return 0;
}
