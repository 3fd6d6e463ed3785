#!/usr/bin/env node
// The `menic` command: the CLI is bundled into dist/ by `npm run build`.
import { existsSync } from "node:fs";
const cli = new URL("../dist/cli.js", import.meta.url);
if (!existsSync(cli)) {
  console.error("menic: dist/cli.js is missing: run `npm run build` first");
  process.exit(2);
}
const { main } = await import(cli.href);
process.exitCode = await main(process.argv.slice(2));
