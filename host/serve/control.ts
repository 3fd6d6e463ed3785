// A served device's control channel (docs/serve.md, "Control"): JSON lines over TCP on the
// loopback address. Each line a client sends is one request, a JSON object with an `id` of its
// choice and an `op`; each gets one reply line, `{"id": ..., "ok": true, ...}` or
// `{"id": ..., "ok": false, "error": "..."}`, in the order the requests came on that connection.
// A line that is not a JSON object, or longer than MAX_LINE_BYTES, gets an error reply (id null)
// that gives its line number; no request takes the server down. Node only (node:net).

import { createServer, type Server, type Socket } from "node:net";
import { parseJson, JsonTextError } from "../user-input.js";
import type { ControlOps } from "./ops.js";

/** The longest request line taken (a `write` of ops.ts MAX_DATA_BYTES is 11.2 MB of base64). */
export const MAX_LINE_BYTES = 16 << 20;

export class ControlServer {
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server, readonly host: string, readonly port: number) {}

  /** Listens on `host`:`port` (0: any free port) and serves `ops` to every connection; rejects when it cannot listen. */
  static listen(ops: ControlOps, port: number, host = "127.0.0.1"): Promise<ControlServer> {
    return new Promise((resolve, reject) => {
      const server = createServer();
      server.once("error", (e: NodeJS.ErrnoException) => reject(new Error(`cannot listen for control on ${host}:${port}: ${e.code ?? e.message}`)));
      server.listen(port, host, () => {
        const addr = server.address();
        const c = new ControlServer(server, host, typeof addr === "object" && addr ? addr.port : port);
        server.on("connection", (s) => c.serve(s, ops));
        resolve(c);
      });
    });
  }

  /** One connection: its lines, run one after another. */
  private serve(socket: Socket, ops: ControlOps): void {
    this.sockets.add(socket);
    socket.setNoDelay(true);
    socket.on("close", () => this.sockets.delete(socket));
    socket.on("error", () => socket.destroy()); // a reset connection ends as a close
    let line = 0;
    let parts: Buffer[] = [], held = 0, skipping = false;
    let queue = Promise.resolve();
    const reply = (r: Record<string, unknown>) => {
      if (!socket.writable) return;
      if (!socket.write(JSON.stringify(r) + "\n")) socket.pause(); // back-pressure: read on once the client reads
    };
    socket.on("drain", () => socket.resume());
    const request = (text: string, n: number) => {
      queue = queue.then(() => handle(ops, text, n)).then(reply);
    };
    socket.on("data", (chunk: Buffer) => {
      let at = 0;
      for (let nl = chunk.indexOf(10, at); nl >= 0; nl = chunk.indexOf(10, at)) {
        line++;
        const piece = chunk.subarray(at, nl);
        at = nl + 1;
        if (skipping) { skipping = false; parts = []; held = 0; continue; }
        const text = (parts.length ? Buffer.concat([...parts, piece]) : piece).toString("utf8");
        parts = [];
        held = 0;
        if (text.trim() !== "") request(text, line);
      }
      if (at < chunk.length && !skipping) {
        parts.push(chunk.subarray(at));
        held += chunk.length - at;
        if (held > MAX_LINE_BYTES) {
          // too long: refused once, the rest of it skipped up to its newline
          skipping = true;
          parts = [];
          held = 0;
          const n = line + 1;
          queue = queue.then(() => reply({ id: null, ok: false, error: `line ${n}: longer than ${MAX_LINE_BYTES} bytes: not read (a write of more than 8 MiB is several requests)` }));
        }
      }
    });
  }

  /** Stops listening and closes every connection. */
  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** One request line `text` (line `n` of its connection): its reply. */
async function handle(ops: ControlOps, text: string, n: number): Promise<Record<string, unknown>> {
  let req: unknown;
  try {
    req = parseJson(text);
  } catch (e) {
    const where = e instanceof JsonTextError ? `line ${n}, column ${e.column}` : `line ${n}`;
    return { id: null, ok: false, error: `${where}: not JSON: ${e instanceof JsonTextError ? e.detail : (e as Error).message}` };
  }
  if (typeof req !== "object" || req === null || Array.isArray(req)) return { id: null, ok: false, error: `line ${n}: a request is a JSON object ({"id": 1, "op": "info"}), got ${Array.isArray(req) ? "an array" : JSON.stringify(req)}` };
  const r = req as Record<string, unknown>;
  const id = typeof r.id === "number" || typeof r.id === "string" ? r.id : null;
  if (r.id !== undefined && id === null) return { id: null, ok: false, error: `line ${n}: id must be a number or a string, got ${JSON.stringify(r.id)}` };
  try {
    return { id, ok: true, ...(await ops.run(r)) };
  } catch (e) {
    if (!(e instanceof Error)) throw e;
    return { id, ok: false, error: `line ${n}: ${e.message}` };
  }
}
