// Node-only glue: where the built core lives on disk. Nothing else in host/ (outside
// host/platform, host/serve and the Node-only CLI pieces) touches Node APIs.

import { readFileSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The package root: the nearest folder above this file holding package.json. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "package.json"))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error("menic: cannot find the package root (package.json)");
    dir = up;
  }
}

const modules = new Map<string, WebAssembly.Module>();

/** The compiled core (release build by default), compiled once per process. */
export function coreModule(flavor: "release" | "debug" = "release"): WebAssembly.Module {
  const file = join(packageRoot(), "build", flavor === "release" ? "menic.wasm" : "menic.debug.wasm");
  let m = modules.get(file);
  if (!m) {
    if (!existsSync(file)) throw new Error(`menic: ${file} is missing: run npm run build`);
    m = new WebAssembly.Module(readFileSync(file));
    modules.set(file, m);
  }
  return m;
}
