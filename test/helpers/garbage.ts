// Random RISC-V code for the tests that run engines on garbage (test/fuzz.test.ts: nothing takes
// the emulator down; test/jit.test.ts: the JIT and the interpreter end identically).
import { R, I, S, B, J } from "./rv.js";
import { MMIO, REGIONS } from "../../host/generated/layouts.js";

// A small deterministic generator (xorshift32) so that a failure replays exactly.
export function rng(seed: number) {
  let x = seed >>> 0 || 1;
  return () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), x >>> 0);
}

export const WFI = 0x10500073, ECALL = 0x00000073, EBREAK = 0x00100073, MRET = 0x30200073;

/**
 * Random code that runs for a while: mostly well-formed instructions over eight registers with
 * short jumps, region bases loaded by LUI (so loads and stores reach SRAM, HBM and MMIO), a
 * store to EXIT now and then, and an arbitrary word one time in 64. Wholly random words fault
 * at the first instruction (3 in 4 do not even end in 0b11), which tests almost nothing.
 */
export function garbage(next: () => number, words: number): Uint32Array {
  const out: number[] = [];
  const pick = <T>(a: T[]) => a[next() % a.length];
  while (out.length < words) {
    const r = next();
    const rd = (r >>> 7) & 7, rs1 = (r >>> 15) & 7, rs2 = (r >>> 20) & 7;
    const small = (next() % 64) - 32;
    const k = next() % 64;
    if (k < 1) out.push(r);
    else if (k < 2) out.push(((MMIO.SYS.EXIT & ~0xfff) | (rs1 << 7) | 0x37) >>> 0, S(MMIO.SYS.EXIT & 0xfff, rs2, rs1, next() % 3, 0x23));
    else if (k < 20) out.push(I(next() % 2 ? small : r >>> 20, rs1, pick([0, 2, 3, 4, 6, 7]), rd, 0x13)); // OP-IMM
    else if (k < 30) { // OP and M
      const f3 = next() % 8, f7 = pick(f3 === 0 || f3 === 5 ? [0, 0x20, 1] : [0, 1]);
      out.push(R(f7, rs2, rs1, f3, rd, 0x33));
    } else if (k < 36) out.push(((pick([REGIONS.MMIO.base, REGIONS.MMIO.base, REGIONS.HBM.base, 0, r]) & 0xfffff000) | (rd << 7) | 0x37) >>> 0);
    else if (k < 41) out.push(I((small + 32) * 4, rs1, pick([0, 1, 2, 4, 5]), rd, 0x03));
    else if (k < 46) out.push(S(pick([(small + 32) * 4, 4, 4, 0]), rs2, rs1, pick([0, 1, 2]), 0x23));
    else if (k < 52) out.push(B(small * 4, rs2, rs1, pick([0, 1, 4, 5, 6, 7])));
    else if (k < 54) out.push(J(small * 4, rd));
    else if (k < 55) out.push(I(next() % 2 ? small * 4 : small, rs1, 0, rd, 0x67)); // JALR, sometimes misaligned
    else if (k < 57) out.push(R(pick([0, 1, 2, 3, 4, 8, 12, 16, 20, 24, 28]) << 2, rs2, rs1, 2, rd, 0x2f)); // AMO and LR/SC (funct5, aq = rl = 0)
    else if (k < 58) out.push(pick([WFI, ECALL, EBREAK, MRET]));
    else if (k < 60) out.push(I(pick([0x300, 0x304, 0x305, 0x340, 0x341, 0x342, 0x343, 0x344, 0xb00, 0xf14]), rs1, pick([1, 2, 3, 5, 6, 7]), rd, 0x73));
    else out.push(((r & 0xfffff000) | (rd << 7) | 0x17) >>> 0); // AUIPC
  }
  return Uint32Array.from(out.slice(0, words));
}

