#!/usr/bin/env node
// npm run serve [-- --port N] [-- --host ADDR]: serves the page (build/web/, written by npm run
// build) on http://127.0.0.1:8080/ with a tiny static file server; any other static server does
// as well. Only files inside build/web/ are served, GET and HEAD only. It listens on the loopback
// address unless --host names another (--host 0.0.0.0: every interface), so the page is not
// offered to the network by default.
import { createServer } from "node:http";
import { createReadStream, existsSync, statSync } from "node:fs";
import { extname, join, normalize, sep, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "build", "web");
const TYPES = {
  ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
  ".map": "application/json", ".json": "application/json", ".wasm": "application/wasm", ".png": "image/png",
};

/** A server of build/web/; `listen(port)` it yourself (port 0: any free port). */
export function webServer() {
  return createServer((req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    let path;
    try {
      path = decodeURIComponent(new URL(req.url ?? "/", "http://localhost").pathname);
    } catch {
      res.writeHead(400).end("bad path");
      return;
    }
    const file = normalize(join(root, path.endsWith("/") ? `${path}index.html` : path));
    if (!file.startsWith(root + sep) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404, { "content-type": "text/plain" }).end(`not found: ${path}`);
      return;
    }
    res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream", "cache-control": "no-cache" });
    if (req.method === "HEAD") res.end();
    else createReadStream(file).pipe(res);
  });
}

/** The address and port `npm run serve` listens on, from its arguments: `--host` (default
 * 127.0.0.1) and `--port` (default 8080; 0: any free port). A bad value is an Error naming it. */
export function serveOptions(argv) {
  const given = { host: "127.0.0.1", port: "8080" };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i];
    if (name !== "--host" && name !== "--port") throw new Error(`unknown argument ${name} (--host <address>, --port <n>)`);
    if (argv[i + 1] === undefined) throw new Error(`${name} wants a value`);
    given[name.slice(2)] = argv[i + 1];
  }
  const port = Number(given.port);
  if (!/^\d+$/.test(given.port) || port > 65535) throw new Error(`--port wants a port number in [0, 65535], got ${given.port}`);
  return { host: given.host, port };
}

/** The URL a listening server answers on, from its bound address (IPv6 in brackets). */
export function serverUrl(server) {
  const { address, family, port } = server.address();
  return `http://${family === "IPv6" ? `[${address}]` : address}:${port}/`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  let opts;
  try {
    opts = serveOptions(process.argv.slice(2));
  } catch (e) {
    console.error(`serve: ${e.message}`);
    process.exit(2);
  }
  if (!existsSync(join(root, "index.html"))) {
    console.error("serve: build/web/index.html is missing: run npm run build");
    process.exit(2);
  }
  const server = webServer();
  server.on("error", (e) => {
    console.error(`serve: cannot listen on ${opts.host} port ${opts.port}: ${e.message}`);
    process.exit(2);
  });
  server.listen(opts.port, opts.host, () => console.error(`serving the page at ${serverUrl(server)} (Ctrl-C stops)`));
}
