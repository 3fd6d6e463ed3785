// A tiny RV32 encoder and ELF32 writer for tests that need exact programs without a toolchain.
// Encodings from the RISC-V unprivileged spec, chapter 2 (base formats) and 34 (opcode map).

export const reg = (name: string): number => {
  const abi = ["zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7",
    "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6"];
  const i = name.startsWith("x") ? Number(name.slice(1)) : abi.indexOf(name);
  if (!(i >= 0 && i < 32)) throw new Error(`bad register ${name}`);
  return i;
};

export const R = (f7: number, rs2: number, rs1: number, f3: number, rd: number, op: number) =>
  ((f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op) >>> 0;
export const I = (imm: number, rs1: number, f3: number, rd: number, op: number) =>
  (((imm & 0xfff) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op) >>> 0;
export const S = (imm: number, rs2: number, rs1: number, f3: number, op: number) =>
  ((((imm >> 5) & 0x7f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((imm & 31) << 7) | op) >>> 0;
export const B = (imm: number, rs2: number, rs1: number, f3: number) =>
  ((((imm >> 12) & 1) << 31) | (((imm >> 5) & 0x3f) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) |
    (((imm >> 1) & 0xf) << 8) | (((imm >> 11) & 1) << 7) | 0x63) >>> 0;
export const J = (imm: number, rd: number) =>
  ((((imm >> 20) & 1) << 31) | (((imm >> 1) & 0x3ff) << 21) | (((imm >> 11) & 1) << 20) | (((imm >> 12) & 0xff) << 12) | (rd << 7) | 0x6f) >>> 0;

/** Assembles a list of lines in a tiny subset of RISC-V assembly, with labels ("name:") and `li`. */
export function assemble(src: string, base = 0): Uint32Array {
  const lines = src.split("\n").map((l) => l.replace(/#.*/, "").trim()).filter(Boolean);
  const labels = new Map<string, number>();
  const body: { op: string; args: string[]; pc: number }[] = [];
  let pc = base;
  for (const l of lines) {
    if (l.endsWith(":")) { labels.set(l.slice(0, -1), pc); continue; }
    const [op, ...rest] = l.split(/\s+/);
    const args = rest.join(" ").split(",").map((s) => s.trim()).filter(Boolean);
    body.push({ op, args, pc });
    pc += op === "li" ? 8 : 4;
  }
  const out: number[] = [];
  const num = (s: string) => Number(s);
  const target = (s: string, at: number) => (labels.has(s) ? labels.get(s)! - at : num(s));
  const mem = (s: string) => { const m = /^(-?\w*)\((\w+)\)$/.exec(s); if (!m) throw new Error(`bad memory operand ${s}`); return [num(m[1] || "0"), reg(m[2])] as const; };
  const csr: Record<string, number> = { mstatus: 0x300, mie: 0x304, mtvec: 0x305, mepc: 0x341, mcause: 0x342, mtval: 0x343, mip: 0x344, mhartid: 0xf14, mcycle: 0xb00, minstret: 0xb02, mscratch: 0x340 };
  const csrNum = (s: string) => csr[s] ?? num(s);
  for (const { op, args: a, pc } of body) {
    const r = (k: number) => reg(a[k]);
    switch (op) {
      case "li": { const v = num(a[1]) | 0; const lo = (v << 20) >> 20; const hi = (v - lo) >>> 0;
        out.push(((hi & 0xfffff000) | (r(0) << 7) | 0x37) >>> 0, I(lo, r(0), 0, r(0), 0x13)); break; }
      case "lui": out.push(((num(a[1]) << 12) | (r(0) << 7) | 0x37) >>> 0); break;
      case "auipc": out.push(((num(a[1]) << 12) | (r(0) << 7) | 0x17) >>> 0); break;
      case "addi": out.push(I(num(a[2]), r(1), 0, r(0), 0x13)); break;
      case "andi": out.push(I(num(a[2]), r(1), 7, r(0), 0x13)); break;
      case "slli": out.push(I(num(a[2]) & 31, r(1), 1, r(0), 0x13)); break;
      case "srli": out.push(I(num(a[2]) & 31, r(1), 5, r(0), 0x13)); break;
      case "add": out.push(R(0, r(2), r(1), 0, r(0), 0x33)); break;
      case "sub": out.push(R(0x20, r(2), r(1), 0, r(0), 0x33)); break;
      case "xor": out.push(R(0, r(2), r(1), 4, r(0), 0x33)); break;
      case "mul": out.push(R(1, r(2), r(1), 0, r(0), 0x33)); break;
      case "div": out.push(R(1, r(2), r(1), 4, r(0), 0x33)); break;
      case "lw": { const [o, b] = mem(a[1]); out.push(I(o, b, 2, r(0), 0x03)); break; }
      case "lbu": { const [o, b] = mem(a[1]); out.push(I(o, b, 4, r(0), 0x03)); break; }
      case "sw": { const [o, b] = mem(a[1]); out.push(S(o, r(0), b, 2, 0x23)); break; }
      case "sb": { const [o, b] = mem(a[1]); out.push(S(o, r(0), b, 0, 0x23)); break; }
      case "sh": { const [o, b] = mem(a[1]); out.push(S(o, r(0), b, 1, 0x23)); break; }
      case "beq": out.push(B(target(a[2], pc), r(1), r(0), 0)); break;
      case "bne": out.push(B(target(a[2], pc), r(1), r(0), 1)); break;
      case "blt": out.push(B(target(a[2], pc), r(1), r(0), 4)); break;
      case "bltu": out.push(B(target(a[2], pc), r(1), r(0), 6)); break;
      case "bgeu": out.push(B(target(a[2], pc), r(1), r(0), 7)); break;
      case "j": out.push(J(target(a[0], pc), 0)); break;
      case "jal": out.push(J(target(a[1], pc), r(0))); break;
      case "jalr": { const [o, b] = mem(a[1]); out.push(I(o, b, 0, r(0), 0x67)); break; }
      case "amoadd.w": { const [, b] = mem(a[2]); out.push(R(0, r(1), b, 2, r(0), 0x2f)); break; }
      case "amoswap.w": { const [, b] = mem(a[2]); out.push(R(0x04, r(1), b, 2, r(0), 0x2f)); break; }
      case "lr.w": { const [, b] = mem(a[1]); out.push(R(0x08, 0, b, 2, r(0), 0x2f)); break; }
      case "sc.w": { const [, b] = mem(a[2]); out.push(R(0x0c, r(1), b, 2, r(0), 0x2f)); break; }
      case "csrr": out.push(I(csrNum(a[1]), 0, 2, r(0), 0x73)); break;
      case "csrw": out.push(I(csrNum(a[0]), r(1), 1, 0, 0x73)); break;
      case "csrs": out.push(I(csrNum(a[0]), r(1), 2, 0, 0x73)); break;
      case "wfi": out.push(0x10500073); break;
      case "mret": out.push(0x30200073); break;
      case "ecall": out.push(0x00000073); break;
      case "ebreak": out.push(0x00100073); break;
      case "nop": out.push(0x00000013); break;
      case ".word": out.push(num(a[0]) >>> 0); break;
      default: throw new Error(`rv.ts cannot assemble ${op}`);
    }
  }
  return Uint32Array.from(out);
}

export interface TestSegment { vaddr: number; data: Uint8Array; memsz?: number; flags?: number }

/** An ELF32 executable with the given PT_LOAD segments (machine and class overridable for bad-input tests). */
export function writeElf(entry: number, segs: TestSegment[], opts: { machine?: number; cls?: number; type?: number } = {}): Uint8Array {
  const phoff = 52, phsz = 32;
  let off = phoff + phsz * segs.length;
  const offsets = segs.map((s) => { const o = off; off += s.data.length; return o; });
  const out = new Uint8Array(off);
  const dv = new DataView(out.buffer);
  out.set([0x7f, 0x45, 0x4c, 0x46, opts.cls ?? 1, 1, 1]);
  dv.setUint16(16, opts.type ?? 2, true);
  dv.setUint16(18, opts.machine ?? 243, true);
  dv.setUint32(20, 1, true);
  dv.setUint32(24, entry, true);
  dv.setUint32(28, phoff, true);
  dv.setUint16(40, 52, true);
  dv.setUint16(42, phsz, true);
  dv.setUint16(44, segs.length, true);
  segs.forEach((s, i) => {
    const o = phoff + i * phsz;
    dv.setUint32(o, 1, true);
    dv.setUint32(o + 4, offsets[i], true);
    dv.setUint32(o + 8, s.vaddr, true);
    dv.setUint32(o + 12, s.vaddr, true);
    dv.setUint32(o + 16, s.data.length, true);
    dv.setUint32(o + 20, s.memsz ?? s.data.length, true);
    dv.setUint32(o + 24, s.flags ?? 5, true);
    out.set(s.data, offsets[i]);
  });
  return out;
}

/** Where test programs are linked: the top of the default NULL guard (config nullGuardBytes), as the SDK's link.ld. */
export const CODE_BASE = 0x400;

/** An ELF whose one text segment at CODE_BASE is the assembled program. */
export function programElf(src: string): Uint8Array {
  const code = assemble(src, CODE_BASE);
  return writeElf(CODE_BASE, [{ vaddr: CODE_BASE, data: new Uint8Array(code.buffer) }]);
}
