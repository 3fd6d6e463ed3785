// RISC-V immediates, decoded from an instruction word (unprivileged spec, 2.3 "Immediate
// Encoding Variants"): the interpreter (exec.ts) and the JIT (jit.ts) read them alike.

@inline export function immI(ir: u32): u32 { return <u32>(<i32>ir >> 20); }
@inline export function immS(ir: u32): u32 { return <u32>((<i32>ir >> 25) << 5) | ((ir >> 7) & 31); }
@inline export function immB(ir: u32): u32 {
  return <u32>((<i32>ir >> 31) << 12) | ((ir << 4) & 0x800) | ((ir >> 20) & 0x7e0) | ((ir >> 7) & 0x1e);
}
@inline export function immJ(ir: u32): u32 {
  return <u32>((<i32>ir >> 31) << 20) | (ir & 0xff000) | ((ir >> 9) & 0x800) | ((ir >> 20) & 0x7fe);
}
