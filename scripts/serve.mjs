#!/usr/bin/env node
// npm run serve [-- --port N]: serves the page (build/web/, written by npm run build) on
// http://localhost:N/ (default 8080) with a tiny static file server; any other static server
// does as well. Only files inside build/web/ are served, GET and HEAD only.
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

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const at = process.argv.indexOf("--port");
  const port = at > 0 ? Number(process.argv[at + 1]) : 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`serve: --port wants a port number, got ${process.argv[at + 1]}`);
    process.exit(2);
  }
  if (!existsSync(join(root, "index.html"))) {
    console.error("serve: build/web/index.html is missing: run npm run build");
    process.exit(2);
  }
  webServer().listen(port, () => console.error(`serving the page at http://localhost:${port}/ (Ctrl-C stops)`));
}
