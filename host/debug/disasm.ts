// A disassembler of the engines' instructions (RV32IMA + Zicsr, layouts/isa.json through
// host/generated/isa.ts), for the instruction log (`menic fw run --log insn`). Operands are
// written as the RISC-V assembly manual writes them (ABI register names, `imm(rs1)` for memory,
// branch and jump targets as absolute addresses, CSRs by number), without pseudo-instructions,
// so each line names the instruction the engine decoded.

import { ISA, type IsaInsn } from "../generated/isa.js";

/** x0..x31 by their ABI names (RISC-V psABI, "Integer Register Convention"). */
export const ABI_NAMES = [
  "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4", "a5",
  "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6",
] as const;

/** The instruction word `ir` is, or undefined for an illegal one. */
export function decodeInsn(ir: number): IsaInsn | undefined {
  return ISA.find((e) => ((ir & e.mask) >>> 0) === e.match);
}

const hex = (n: number): string => "0x" + (n >>> 0).toString(16);
const signed = (n: number): string => (n < 0 ? "-" : "") + hex(Math.abs(n));

/** `ir` at address `pc` as assembly text, e.g. `addi sp, sp, -0x10`; `.word 0x...` for an illegal word. */
export function disassemble(ir: number, pc: number): string {
  const e = decodeInsn(ir);
  if (!e) return `.word ${hex(ir)}`;
  const r = ABI_NAMES, rd = r[(ir >>> 7) & 31], rs1 = r[(ir >>> 15) & 31], rs2 = r[(ir >>> 20) & 31];
  const immI = ir >> 20;
  const immS = ((ir >> 25) << 5) | ((ir >>> 7) & 31);
  const immB = ((ir >> 31) << 12) | (((ir >>> 7) & 1) << 11) | (((ir >>> 25) & 0x3f) << 5) | (((ir >>> 8) & 15) << 1);
  const immJ = ((ir >> 31) << 20) | (((ir >>> 12) & 0xff) << 12) | (((ir >>> 20) & 1) << 11) | (((ir >>> 21) & 0x3ff) << 1);
  const n = e.name;
  switch (e.cls) {
    case "lui": case "auipc": return `${n} ${rd}, ${hex(ir >>> 12)}`;
    case "jal": return `${n} ${rd}, ${hex(pc + immJ)}`;
    case "jalr": case "load": return `${n} ${rd}, ${signed(immI)}(${rs1})`;
    case "branch": return `${n} ${rs1}, ${rs2}, ${hex(pc + immB)}`;
    case "store": return `${n} ${rs2}, ${signed(immS)}(${rs1})`;
    case "alu_imm": return /^s[lr][la]i$/.test(n) ? `${n} ${rd}, ${rs1}, ${(ir >>> 20) & 31}` : `${n} ${rd}, ${rs1}, ${signed(immI)}`;
    case "alu": case "mul": case "div": return `${n} ${rd}, ${rs1}, ${rs2}`;
    case "lr": return `${n}${ordering(ir)} ${rd}, (${rs1})`;
    case "sc": case "amo": return `${n}${ordering(ir)} ${rd}, ${rs2}, (${rs1})`;
    case "csr": return `${n} ${rd}, ${hex(ir >>> 20)}, ${rs1}`;
    case "csr_imm": return `${n} ${rd}, ${hex(ir >>> 20)}, ${(ir >>> 15) & 31}`;
    default: return n; // fence, fence.i, ecall, ebreak, mret, wfi: their operands change nothing here
  }
}

/** An AMO's acquire and release bits (26, 25) as the mnemonic's suffix. */
function ordering(ir: number): string {
  return ((ir >>> 26) & 1 ? ".aq" : "") + ((ir >>> 25) & 1 ? ".rl" : "");
}
