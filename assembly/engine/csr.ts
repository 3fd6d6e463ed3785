// The CSR file of an engine (Zicsr; privileged spec chapter 2 and 3.1). Reads return the
// value before the reading instruction; see docs/engine.md for the counter conventions.

import { Device } from "../core/device";
import { Hart, MISA, MSTATUS_MIE, MSTATUS_MPIE, MSTATUS_MPP, MIE_MASK } from "./hart";
import { pendingIrqs } from "./trap";

export const CSR_MSTATUS: u32 = 0x300;
export const CSR_MISA: u32 = 0x301;
export const CSR_MIE: u32 = 0x304;
export const CSR_MTVEC: u32 = 0x305;
export const CSR_MSTATUSH: u32 = 0x310;
export const CSR_MSCRATCH: u32 = 0x340;
export const CSR_MEPC: u32 = 0x341;
export const CSR_MCAUSE: u32 = 0x342;
export const CSR_MTVAL: u32 = 0x343;
export const CSR_MIP: u32 = 0x344;
export const CSR_MCYCLE: u32 = 0xb00;
export const CSR_MINSTRET: u32 = 0xb02;
export const CSR_MCYCLEH: u32 = 0xb80;
export const CSR_MINSTRETH: u32 = 0xb82;
export const CSR_CYCLE: u32 = 0xc00;
export const CSR_TIME: u32 = 0xc01;
export const CSR_INSTRET: u32 = 0xc02;
export const CSR_CYCLEH: u32 = 0xc80;
export const CSR_TIMEH: u32 = 0xc81;
export const CSR_INSTRETH: u32 = 0xc82;
export const CSR_MVENDORID: u32 = 0xf11;
export const CSR_MARCHID: u32 = 0xf12;
export const CSR_MIMPID: u32 = 0xf13;
export const CSR_MHARTID: u32 = 0xf14;
// PMP (privileged spec 3.7): pmpcfg0-15, then pmpaddr0-63. With no PMP entries implemented,
// "all PMP CSRs are read-only zero" (3.7.1): they exist, read 0 and ignore writes, so firmware
// (and riscv-tests' pmpaddr test) probing them does not trap.
export const CSR_PMPCFG0: u32 = 0x3a0;
export const CSR_PMPADDR63: u32 = 0x3ef;

export const CSR_ILLEGAL: i64 = -1;

/** Value of CSR `csr`, or CSR_ILLEGAL for a CSR this engine does not have. */
export function csrRead(h: Hart, csr: u32): i64 {
  const mcycle = h.cycle + h.mcycleOffset;
  switch (csr) {
    case CSR_MSTATUS: return <i64>h.mstatus;
    case CSR_MISA: return <i64>MISA;
    case CSR_MIE: return <i64>h.mie;
    case CSR_MTVEC: return <i64>h.mtvec;
    case CSR_MSTATUSH: return 0;
    case CSR_MSCRATCH: return <i64>h.mscratch;
    case CSR_MEPC: return <i64>h.mepc;
    case CSR_MCAUSE: return <i64>h.mcause;
    case CSR_MTVAL: return <i64>h.mtval;
    case CSR_MIP: return <i64>pendingIrqs(h);
    case CSR_MCYCLE: case CSR_CYCLE: return <i64>(<u32>mcycle);
    case CSR_MCYCLEH: case CSR_CYCLEH: return <i64>(<u32>(mcycle >> 32));
    case CSR_MINSTRET: case CSR_INSTRET: return <i64>(<u32>h.instret);
    case CSR_MINSTRETH: case CSR_INSTRETH: return <i64>(<u32>(h.instret >> 32));
    case CSR_TIME: return <i64>(<u32>h.cycle);
    case CSR_TIMEH: return <i64>(<u32>(h.cycle >> 32));
    case CSR_MVENDORID: case CSR_MARCHID: case CSR_MIMPID: return 0;
    case CSR_MHARTID: return <i64>h.id;
    default: return csr >= CSR_PMPCFG0 && csr <= CSR_PMPADDR63 ? 0 : CSR_ILLEGAL;
  }
}

/**
 * Writes CSR `csr` (already known to exist). Returns false for a read-only CSR (number bits
 * 11:10 = 3), which the caller turns into an illegal-instruction trap. A written counter
 * holds the written value after the writing instruction (its own cost and retirement are
 * not counted), as in Spike.
 */
export function csrWrite(dev: Device, h: Hart, csr: u32, v: u32): bool {
  if ((csr >> 10) == 3) return false;
  switch (csr) {
    case CSR_MSTATUS: h.mstatus = (v & (MSTATUS_MIE | MSTATUS_MPIE)) | MSTATUS_MPP; break;
    case CSR_MIE: h.mie = v & MIE_MASK; break;
    case CSR_MTVEC: h.mtvec = v & ~(<u32>2); break; // modes 0 (direct) and 1 (vectored)
    case CSR_MSCRATCH: h.mscratch = v; break;
    case CSR_MEPC: h.mepc = v & ~(<u32>3); break;
    case CSR_MCAUSE: h.mcause = v; break;
    case CSR_MTVAL: h.mtval = v; break;
    case CSR_MCYCLE: case CSR_MCYCLEH: {
      const after = h.cycle + <u64>dev.cfg.cpiCsr;
      const cur = after + h.mcycleOffset;
      const want = csr == CSR_MCYCLE ? (cur & 0xffffffff00000000) | <u64>v : (cur & 0xffffffff) | (<u64>v << 32);
      h.mcycleOffset = want - after;
      break;
    }
    case CSR_MINSTRET: h.instret = ((h.instret & 0xffffffff00000000) | <u64>v) - 1; break;
    case CSR_MINSTRETH: h.instret = ((h.instret & 0xffffffff) | (<u64>v << 32)) - 1; break;
    default: break; // misa, mstatush, mip, the PMP CSRs: writable numbers whose bits are all read-only here
  }
  return true;
}
