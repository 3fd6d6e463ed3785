// esbuild's binary loader turns an imported ELF into its bytes (web/firmware.ts).
declare module "*.elf" {
  const bytes: Uint8Array;
  export default bytes;
}

// The shipped scenarios (examples/scenarios/*.json, in file-name order), read when the page is
// built (scripts/build-web.mjs): [file name without .json, the scenario].
declare module "menic:scenarios" {
  const scenarios: [string, Record<string, unknown>][];
  export default scenarios;
}
