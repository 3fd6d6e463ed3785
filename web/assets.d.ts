// esbuild's binary loader turns an imported ELF into its bytes (web/firmware.ts).
declare module "*.elf" {
  const bytes: Uint8Array;
  export default bytes;
}
