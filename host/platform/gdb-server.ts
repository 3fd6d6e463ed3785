// Node-only glue for `menic fw run --gdb <port>`: a TCP listener on the loopback interface that
// takes one GDB client and hands its bytes to the stub's run (host/fw/gdb.ts) as a
// GdbConnection. Port 0 picks a free port.

import { createServer, type Server, type Socket } from "node:net";
import { runFirmwareGdb, type GdbConnection, type FwGdbResult } from "../fw/gdb.js";
import type { FwRunOptions } from "../fw/run.js";

export class GdbListener {
  private constructor(private readonly server: Server, readonly port: number) {}

  /** Listens on 127.0.0.1:`port` (0: any free port); rejects when the port is taken or not allowed. */
  static listen(port: number): Promise<GdbListener> {
    return new Promise((resolve, reject) => {
      const server = createServer();
      server.once("error", (e: NodeJS.ErrnoException) => reject(new Error(`--gdb ${port}: cannot listen on 127.0.0.1:${port}: ${e.code ?? e.message}`)));
      server.listen(port, "127.0.0.1", () => {
        const addr = server.address();
        resolve(new GdbListener(server, typeof addr === "object" && addr ? addr.port : port));
      });
    });
  }

  /** Waits for one client, then stops listening (one debugger per run). */
  accept(): Promise<GdbConnection> {
    return new Promise((resolve) => {
      this.server.once("connection", (socket: Socket) => {
        this.server.close();
        socket.setNoDelay(true);
        resolve(socketConnection(socket));
      });
    });
  }

  close(): void {
    this.server.close();
  }
}

/**
 * A connected socket as a GdbConnection, with back-pressure: once socket.write says its buffer
 * is full (the client is not reading), the socket stops reading until 'drain', so that the
 * client's requests wait in the kernel's buffers (and then the client's) rather than replies
 * piling up here: what is held stays under the socket's writableHighWaterMark plus one reply.
 */
export function socketConnection(socket: Socket): GdbConnection {
  let closed = false;
  const onClose: (() => void)[] = [];
  const close = () => {
    if (closed) return;
    closed = true;
    for (const cb of onClose) cb();
  };
  socket.on("close", close);
  socket.on("error", () => socket.destroy()); // a reset connection ends as a close
  const onDrain: (() => void)[] = [];
  socket.on("drain", () => {
    for (const cb of onDrain) cb();
    if (!socket.writableNeedDrain) socket.resume(); // unless the callbacks filled it again
  });
  return {
    write: (bytes) => {
      if (closed || !socket.writable) return true; // nobody to wait for
      if (socket.write(bytes)) return true;
      socket.pause();
      return false;
    },
    onData: (cb) => socket.on("data", (b: Buffer) => cb(new Uint8Array(b.buffer, b.byteOffset, b.length))),
    onDrain: (cb) => onDrain.push(cb),
    onClose: (cb) => onClose.push(cb),
    close: () => socket.end(),
  };
}

/**
 * `menic fw run --gdb <port>`: listens, says where on stderr (the port chosen when `port` is 0),
 * waits for the client, and runs the firmware under it.
 */
export async function runFirmwareListening(elf: Uint8Array, port: number, opts: FwRunOptions): Promise<FwGdbResult> {
  const listener = await GdbListener.listen(port);
  const log = (line: string) => process.stderr.write(`menic fw run: ${line}\n`);
  log(`GDB stub listening on 127.0.0.1:${listener.port} (engines are threads 1..; connect with: target remote :${listener.port})`);
  const connection = await listener.accept();
  log("gdb: client connected");
  return runFirmwareGdb(elf, { ...opts, connection, log });
}
