// The interpreter: executes one engine's instructions until its cycle count reaches `stop` or
// something happens that the run loop must look at (a trap, CSR access, MMIO access, MRET,
// WFI, exit). pc, cycle and instret live in locals; registers in the engine's register block.
// Dispatch is on opcode bits 6:2 so the switch compiles to a jump table (DESIGN.md section 8).
// Each case cites its instruction; encodings are from the RISC-V unprivileged spec, ch. 2, 7, 8,
// named once in layouts/isa.json (assembly/generated/isa.ts: OPC_*, F3_*, ...). The hot loop
// tests the fields itself rather than calling insnClass; test/isa-table.test.ts holds its
// legality to the table's.

import { memOf, hbmMapped } from "../mem/dma";
import { engOf, hartAt } from "./engines";
import { Device, statAdd, tracePoint } from "../core/device";
import { Hart, EngineState, NO_RESERVATION, MIP_MTIP, CAUSE_MISALIGNED_FETCH, CAUSE_FETCH_ACCESS, CAUSE_ILLEGAL, CAUSE_BREAKPOINT, CAUSE_MISALIGNED_LOAD, CAUSE_LOAD_ACCESS, CAUSE_MISALIGNED_STORE, CAUSE_STORE_ACCESS, CAUSE_ECALL_M } from "./hart";
import { csrRead, csrWrite, CSR_ILLEGAL } from "./csr";
import { mmioLoad, mmioStore, MMIO_FAULT, MMIO_RETRY } from "./mmio";
import { takeTrap, mret, pendingIrqs } from "./trap";
import { schedule, unschedule, EventKind } from "../core/sched";
import { psOfCycle, NEVER } from "../core/time";
import { immI, immS, immB, immJ } from "./decode";
import { jitCacheIfOn, jitCodePages, jitInvalidate, jitStored, jitWantsLanding, JIT_PAGE_SHIFT } from "./jit-cache";
import { aheadOn, aheadPark, aheadJournal, pageFlags } from "./ahead";
import { AHEAD_PAGE_SHIFT, PAGE_CODE, PAGE_JOURNAL } from "./pages";
import { HBM_BASE, STAT_AMO_SC_FAIL, STAT_AMO_RESV_BROKEN, TP_ENGINE_SLEEP } from "../generated/layouts";
import {
  InsnClass, insnClass, isWide, opcodeOf, funct3Of, funct7Of, funct5Of, funct10Of, rs1Of, rs2Of, loadBytes, storeBytes,
  OPC_LUI, OPC_AUIPC, OPC_JAL, OPC_JALR, OPC_BRANCH, OPC_LOAD, OPC_STORE, OPC_OP_IMM, OPC_OP, OPC_MISC_MEM, OPC_AMO, OPC_SYSTEM,
  F3_JALR, F3_BEQ, F3_BNE, F3_BLT, F3_BGE, F3_BLTU, F3_BGEU, F3_LB, F3_LH, F3_LW, F3_LBU, F3_LHU, F3_SB, F3_SH,
  F3_ADDI, F3_SLTI, F3_SLTIU, F3_XORI, F3_ORI, F3_ANDI, F3_SLLI, F7_SLLI, F7_SRLI, F7_SRAI, F3_FENCE, F3_FENCE_I,
  F10_ADD, F10_SUB, F10_SLL, F10_SLT, F10_SLTU, F10_XOR, F10_SRL, F10_SRA, F10_OR, F10_AND,
  F10_MUL, F10_MULH, F10_MULHSU, F10_MULHU, F10_DIV, F10_DIVU, F10_REM, F10_REMU,
  F5_AMOSWAP_W, F5_AMOADD_W, F5_AMOXOR_W, F5_AMOAND_W, F5_AMOOR_W, F5_AMOMIN_W, F5_AMOMAX_W, F5_AMOMINU_W, F5_AMOMAXU_W,
  F3_CSRRW, F3_CSRRWI, F3_CSRRS, F3_CSRRSI,
} from "../generated/isa";

@inline function rget(regs: usize, ir: u32, shift: u32): u32 {
  return load<u32>(regs + (((ir >> shift) & 31) << 2));
}

/** Writes rd; x0's slot stays 0 (at rest and for every read: the JIT keeps to the same). */
@inline function rset(regs: usize, ir: u32, v: u32): void {
  store<u32>(regs + (((ir >> 7) & 31) << 2), v);
  store<u32>(regs, 0);
}

/** A store by engine `self` to HBM word `addr` breaks every other engine's reservation on it. */
function breakReservations(dev: Device, self: u32, addr: u32): void {
  const word = addr & ~(<u32>3);
  for (let j: u32 = 0; j < dev.cfg.engines; j++) {
    if (j == self) continue;
    const o = hartAt(dev, j);
    if (o.resvAddr == word) {
      o.resvAddr = NO_RESERVATION;
      engOf(dev).resvCount--;
      statAdd(dev, STAT_AMO_RESV_BROKEN, 1);
    }
  }
}

@inline function clearReservation(dev: Device, h: Hart): void {
  if (h.resvAddr != NO_RESERVATION) {
    h.resvAddr = NO_RESERVATION;
    engOf(dev).resvCount--;
  }
}

/** Puts an engine to sleep in wfi (unless an enabled interrupt is already pending). */
function sleep(dev: Device, h: Hart): void {
  if ((pendingIrqs(h) & h.mie) != 0) return;
  h.state = EngineState.Sleeping;
  h.wakeGen++;
  h.sleepStart = psOfCycle(h.cycle, dev.cfg.engineClockKhz);
  tracePoint(dev, h.sleepStart, TP_ENGINE_SLEEP, h.id, h.pc - 4);
  if ((h.mie & MIP_MTIP) != 0 && h.mtimecmp != NEVER) {
    // the timer of an earlier sleep (woken by something else) is replaced, not left to go stale
    if (h.timerPending) unschedule(dev, EventKind.Timer, h.id);
    h.timerPending = <u32>schedule(dev, psOfCycle(h.mtimecmp, dev.cfg.engineClockKhz), EventKind.Timer, h.id, h.wakeGen);
  }
}

/** Syncs the interpreter's locals into `h` and takes a synchronous trap at `pc` (running ahead: parks there instead, ahead.ts). */
@inline function raise(dev: Device, h: Hart, pc: u32, cycle: u64, instret: u64, cause: u32, tval: u32): void {
  h.pc = pc;
  h.cycle = cycle;
  h.instret = instret;
  if (aheadOn) aheadPark();
  else takeTrap(dev, h, cause, tval);
}

/** Running ahead, the engine stops before the instruction at `pc`, which is not private (ahead.ts). */
@inline function park(h: Hart, pc: u32, cycle: u64, instret: u64): void {
  h.pc = pc;
  h.cycle = cycle;
  h.instret = instret;
  aheadPark();
}

/**
 * Executes engine `h` until its cycle count reaches `stop` or an instruction the run loop must
 * look at; with `jumps` (the JIT's dispatcher, jit.ts) also right after a taken jump or branch
 * the dispatcher wants (jitWantsLanding),
 * returning true then.
 */
export function execute(dev: Device, h: Hart, stop: u64, jumps: bool = false): bool {
  const regs = h.regs;
  const sram = h.sram;
  // The engine's SRAM is mapped from the NULL guard's top (docs/engine.md, "Guards"). Loads and
  // stores refuse [0, guard) and [sramBytes, ...) with one unsigned compare, `addr - guard < span`.
  // Fetches keep the cheaper `pc >= sramBytes` per instruction: pc enters the guard only by a
  // jump (JAL, JALR: checked there) or from outside this loop (start, trap, mret: checked on
  // entry), since sequential execution only climbs and branches stay inside their function.
  const guard = dev.cfg.nullGuardBytes;
  const span = dev.cfg.sramBytes - guard;
  const sramBytes = dev.cfg.sramBytes;
  const hbm = memOf(dev).hbm;
  const hbmBytes = hbmMapped(dev.cfg); // (none without backing: its addresses fault)
  const cAlu = <u64>dev.cfg.cpiAlu;
  const cMul = <u64>dev.cfg.cpiMul;
  const cDiv = <u64>dev.cfg.cpiDiv;
  const cTaken = <u64>dev.cfg.cpiBranchTaken;
  const cJump = <u64>dev.cfg.cpiJump;
  const cLdS = <u64>dev.cfg.cpiLoadSram;
  const cStS = <u64>dev.cfg.cpiStoreSram;
  const cLdH = <u64>engOf(dev).cpiLoadHbmNow;
  const cStH = <u64>dev.cfg.cpiStoreHbm;
  // with the JIT on: this engine's code pages (jit-cache.ts), to see a store into translated code
  // and, run by the JIT's dispatcher (`jumps`), its cache, to count landings (jitWantsLanding)
  const jc = jitCacheIfOn(dev);
  const codes: usize = jitCodePages(jc, h.id);
  // its run-ahead page bytes (ahead.ts): a store to a page whose byte is not 0 looks further
  const pages = pageFlags(dev, h.id);
  let pc = h.pc;
  let cycle = h.cycle;
  let instret = h.instret;
  if (pc < guard && cycle < stop) {
    raise(dev, h, pc, cycle, instret, CAUSE_FETCH_ACCESS, pc);
    return false;
  }

  while (cycle < stop) {
    if (pc >= sramBytes) {
      raise(dev, h, pc, cycle, instret, CAUSE_FETCH_ACCESS, pc);
      return false;
    }
    const ir = load<u32>(sram + <usize>pc);
    if (!isWide(ir)) {
      raise(dev, h, pc, cycle, instret, CAUSE_ILLEGAL, ir);
      return false;
    }
    switch (opcodeOf(ir)) {
      case OPC_LUI: {
        rset(regs, ir, ir & 0xfffff000);
        pc += 4; cycle += cAlu;
        break;
      }
      case OPC_AUIPC: {
        rset(regs, ir, pc + (ir & 0xfffff000));
        pc += 4; cycle += cAlu;
        break;
      }
      case OPC_JAL: {
        const target = pc + immJ(ir);
        if (target & 3) {
          raise(dev, h, pc, cycle, instret, CAUSE_MISALIGNED_FETCH, target);
          return false;
        }
        rset(regs, ir, pc + 4);
        pc = target; cycle += cJump;
        if (target < guard) { raise(dev, h, pc, cycle, instret + 1, CAUSE_FETCH_ACCESS, pc); return false; } // its fetch faults
        if (jumps && jitWantsLanding(jc, h.id, pc)) { h.pc = pc; h.cycle = cycle; h.instret = instret + 1; return true; }
        break;
      }
      case OPC_JALR: {
        if (funct3Of(ir) != F3_JALR) { raise(dev, h, pc, cycle, instret, CAUSE_ILLEGAL, ir); return false; }
        const target = (rget(regs, ir, 15) + immI(ir)) & ~(<u32>1);
        if (target & 3) {
          raise(dev, h, pc, cycle, instret, CAUSE_MISALIGNED_FETCH, target);
          return false;
        }
        rset(regs, ir, pc + 4);
        pc = target; cycle += cJump;
        if (target < guard) { raise(dev, h, pc, cycle, instret + 1, CAUSE_FETCH_ACCESS, pc); return false; } // e.g. a NULL function pointer
        if (jumps && jitWantsLanding(jc, h.id, pc)) { h.pc = pc; h.cycle = cycle; h.instret = instret + 1; return true; }
        break;
      }
      case OPC_BRANCH: {
        const a = rget(regs, ir, 15);
        const b = rget(regs, ir, 20);
        let taken: bool;
        switch (funct3Of(ir)) {
          case F3_BEQ: taken = a == b; break;
          case F3_BNE: taken = a != b; break;
          case F3_BLT: taken = <i32>a < <i32>b; break;
          case F3_BGE: taken = <i32>a >= <i32>b; break;
          case F3_BLTU: taken = a < b; break;
          case F3_BGEU: taken = a >= b; break;
          default: { raise(dev, h, pc, cycle, instret, CAUSE_ILLEGAL, ir); return false; }
        }
        if (taken) {
          const target = pc + immB(ir);
          if (target & 3) {
            raise(dev, h, pc, cycle, instret, CAUSE_MISALIGNED_FETCH, target);
            return false;
          }
          pc = target; cycle += cTaken;
          if (jumps && jitWantsLanding(jc, h.id, pc)) { h.pc = pc; h.cycle = cycle; h.instret = instret + 1; return true; }
        } else {
          pc += 4; cycle += cAlu;
        }
        break;
      }
      case OPC_LOAD: {
        const f3 = funct3Of(ir);
        const addr = rget(regs, ir, 15) + immI(ir);
        const bytes = loadBytes(f3);
        if (bytes == 0) { raise(dev, h, pc, cycle, instret, CAUSE_ILLEGAL, ir); return false; }
        if (addr & (bytes - 1)) { raise(dev, h, pc, cycle, instret, CAUSE_MISALIGNED_LOAD, addr); return false; }
        let p: usize;
        if (addr - guard < span) { p = sram + <usize>addr; cycle += cLdS; }
        else if (aheadOn) { park(h, pc, cycle, instret); return false; } // HBM and MMIO are shared
        else if (addr - HBM_BASE < hbmBytes) { p = hbm + <usize>(addr - HBM_BASE); cycle += cLdH; }
        else {
          h.pc = pc; h.cycle = cycle; h.instret = instret;
          const r = mmioLoad(dev, h, addr);
          if (r == MMIO_FAULT) { takeTrap(dev, h, CAUSE_LOAD_ACCESS, addr); return false; }
          let v = <u32>r;
          switch (f3) {
            case F3_LB: v = <u32>(<i32>(<i8>v)); break;
            case F3_LH: v = <u32>(<i32>(<i16>v)); break;
            case F3_LBU: v &= 0xff; break;
            case F3_LHU: v &= 0xffff; break;
            default: break; // LW
          }
          rset(regs, ir, v);
          h.pc = pc + 4; h.cycle = cycle + <u64>dev.cfg.cpiMmio; h.instret = instret + 1;
          return false;
        }
        let v: u32;
        switch (f3) {
          case F3_LB: v = <u32>load<i8>(p); break;
          case F3_LH: v = <u32>load<i16>(p); break;
          case F3_LW: v = load<u32>(p); break;
          case F3_LBU: v = <u32>load<u8>(p); break;
          default: v = <u32>load<u16>(p); break; // LHU: loadBytes let no other through
        }
        rset(regs, ir, v);
        pc += 4;
        break;
      }
      case OPC_STORE: {
        const f3 = funct3Of(ir);
        const addr = rget(regs, ir, 15) + immS(ir);
        const v = rget(regs, ir, 20);
        const bytes = storeBytes(f3);
        if (bytes == 0) { raise(dev, h, pc, cycle, instret, CAUSE_ILLEGAL, ir); return false; }
        if (addr & (bytes - 1)) { raise(dev, h, pc, cycle, instret, CAUSE_MISALIGNED_STORE, addr); return false; }
        let p: usize;
        if (addr - guard < span) {
          p = sram + <usize>addr;
          const f = <u32>load<u8>(pages + <usize>(addr >> AHEAD_PAGE_SHIFT));
          if (f != 0) {
            // the page's first store since the engine went ahead: saved first (a full journal parks it)
            if ((f & PAGE_JOURNAL) != 0 && !aheadJournal(dev, h, addr >> AHEAD_PAGE_SHIFT)) { park(h, pc, cycle, instret); return false; }
            // into translated code: the engine's translations go (the JIT translates again what stays hot)
            if ((f & PAGE_CODE) != 0 && codes != 0 && load<u8>(codes + <usize>(addr >> JIT_PAGE_SHIFT)) != 0) jitInvalidate(jc, h.id);
          }
          cycle += cStS;
        } else if (aheadOn) { park(h, pc, cycle, instret); return false; } // HBM and MMIO are shared
        else if (addr - HBM_BASE < hbmBytes) {
          p = hbm + <usize>(addr - HBM_BASE); cycle += cStH;
          if (engOf(dev).resvCount != 0) breakReservations(dev, h.id, addr);
        } else {
          h.pc = pc; h.cycle = cycle; h.instret = instret;
          const cost = mmioStore(dev, h, addr, v, bytes);
          if (cost == MMIO_FAULT) { takeTrap(dev, h, CAUSE_STORE_ACCESS, addr); return false; }
          // the device cannot take the store yet: wait, then execute it again
          if (cost & MMIO_RETRY) { h.cycle = cycle + <u64>(cost & (MMIO_RETRY - 1)); return false; }
          // an exit write leaves the engine stopped at the store; anything else retires it
          if (h.state == EngineState.Running) h.pc = pc + 4;
          h.cycle = cycle + <u64>cost; h.instret = instret + 1;
          return false;
        }
        if (f3 == F3_SB) store<u8>(p, <u8>v);
        else if (f3 == F3_SH) store<u16>(p, <u16>v);
        else store<u32>(p, v); // SW
        pc += 4;
        break;
      }
      case OPC_OP_IMM: {
        const a = rget(regs, ir, 15);
        const imm = immI(ir);
        let v: u32;
        switch (funct3Of(ir)) {
          case F3_ADDI: v = a + imm; break;
          case F3_SLTI: v = <u32>(<i32>a < <i32>imm); break;
          case F3_SLTIU: v = <u32>(a < imm); break;
          case F3_XORI: v = a ^ imm; break;
          case F3_ORI: v = a | imm; break;
          case F3_ANDI: v = a & imm; break;
          case F3_SLLI: {
            if (funct7Of(ir) != F7_SLLI) { raise(dev, h, pc, cycle, instret, CAUSE_ILLEGAL, ir); return false; }
            v = a << (imm & 31); break;
          }
          default: { // F3_SRLI, F3_SRAI
            const f7 = funct7Of(ir);
            if (f7 == F7_SRLI) v = a >>> (imm & 31);
            else if (f7 == F7_SRAI) v = <u32>(<i32>a >> (imm & 31));
            else { raise(dev, h, pc, cycle, instret, CAUSE_ILLEGAL, ir); return false; }
            break;
          }
        }
        rset(regs, ir, v);
        pc += 4; cycle += cAlu;
        break;
      }
      case OPC_OP: { // RV32I register-register and the M extension
        const a = rget(regs, ir, 15);
        const b = rget(regs, ir, 20);
        let v: u32;
        let cost = cAlu;
        switch (funct10Of(ir)) {
          case F10_ADD: v = a + b; break;
          case F10_SUB: v = a - b; break;
          case F10_SLL: v = a << (b & 31); break;
          case F10_SLT: v = <u32>(<i32>a < <i32>b); break;
          case F10_SLTU: v = <u32>(a < b); break;
          case F10_XOR: v = a ^ b; break;
          case F10_SRL: v = a >>> (b & 31); break;
          case F10_SRA: v = <u32>(<i32>a >> (b & 31)); break;
          case F10_OR: v = a | b; break;
          case F10_AND: v = a & b; break;
          case F10_MUL: v = a * b; cost = cMul; break;
          case F10_MULH: v = <u32>((<i64><i32>a * <i64><i32>b) >> 32); cost = cMul; break;
          case F10_MULHSU: v = <u32>((<i64><i32>a * <i64>b) >> 32); cost = cMul; break;
          case F10_MULHU: v = <u32>((<u64>a * <u64>b) >> 32); cost = cMul; break;
          case F10_DIV: // x/0 = -1, MIN/-1 = MIN (spec 7.2)
            v = b == 0 ? 0xffffffff : (a == 0x80000000 && b == 0xffffffff ? a : <u32>(<i32>a / <i32>b));
            cost = cDiv; break;
          case F10_DIVU: v = b == 0 ? 0xffffffff : a / b; cost = cDiv; break;
          case F10_REM: // x%0 = x, MIN%-1 = 0
            v = b == 0 ? a : (a == 0x80000000 && b == 0xffffffff ? 0 : <u32>(<i32>a % <i32>b));
            cost = cDiv; break;
          case F10_REMU: v = b == 0 ? a : a % b; cost = cDiv; break;
          default: { raise(dev, h, pc, cycle, instret, CAUSE_ILLEGAL, ir); return false; }
        }
        rset(regs, ir, v);
        pc += 4; cycle += cost;
        break;
      }
      case OPC_MISC_MEM: { // FENCE, FENCE.I (memory is sequentially consistent here: no-ops)
        const f3 = funct3Of(ir);
        if (f3 != F3_FENCE && f3 != F3_FENCE_I) { raise(dev, h, pc, cycle, instret, CAUSE_ILLEGAL, ir); return false; }
        pc += 4; cycle += cAlu;
        break;
      }
      case OPC_AMO: { // LR.W SC.W AMO*.W
        if (aheadOn) { park(h, pc, cycle, instret); return false; }
        h.pc = pc; h.cycle = cycle; h.instret = instret;
        amo(dev, h, ir);
        return false;
      }
      case OPC_SYSTEM: {
        if (aheadOn) { park(h, pc, cycle, instret); return false; }
        h.pc = pc; h.cycle = cycle; h.instret = instret;
        system(dev, h, ir);
        return false;
      }
      default: {
        raise(dev, h, pc, cycle, instret, CAUSE_ILLEGAL, ir);
        return false;
      }
    }
    instret++;
  }
  h.pc = pc; h.cycle = cycle; h.instret = instret;
  return false;
}

/** Retires the instruction at h.pc: next pc, its cost, one more instruction. */
@inline function retire(h: Hart, cost: u64): void {
  h.pc += 4;
  h.cycle += cost;
  h.instret++;
}

/**
 * A-extension instructions, one at a time with the state in `h` (spec chapter 8). An encoding
 * layouts/isa.json does not list traps as illegal before its address is looked at (an illegal
 * instruction outranks address faults: privileged spec 3.1.15, the priority of exceptions).
 */
function amo(dev: Device, h: Hart, ir: u32): void {
  const regs = h.regs;
  const cls = insnClass(ir);
  if (cls == InsnClass.Illegal) { takeTrap(dev, h, CAUSE_ILLEGAL, ir); return; }
  const f5 = funct5Of(ir);
  const rs2 = rs2Of(ir);
  const addr = rget(regs, ir, 15);
  const isLr = cls == InsnClass.Lr;
  if (addr & 3) { takeTrap(dev, h, isLr ? CAUSE_MISALIGNED_LOAD : CAUSE_MISALIGNED_STORE, addr); return; }
  let p: usize;
  let cost: u64;
  const inHbm = addr - HBM_BASE < hbmMapped(dev.cfg);
  if (addr - dev.cfg.nullGuardBytes < dev.cfg.sramBytes - dev.cfg.nullGuardBytes) { p = h.sram + <usize>addr; cost = <u64>dev.cfg.cpiLoadSram; }
  else if (inHbm) { p = memOf(dev).hbm + <usize>(addr - HBM_BASE); cost = <u64>engOf(dev).cpiAmoHbmNow; }
  else { takeTrap(dev, h, isLr ? CAUSE_LOAD_ACCESS : CAUSE_STORE_ACCESS, addr); return; }
  const b = load<u32>(regs + (<usize>rs2 << 2));
  if (isLr) {
    const v = load<u32>(p);
    if (h.resvAddr == NO_RESERVATION) engOf(dev).resvCount++;
    h.resvAddr = addr;
    rset(regs, ir, v);
    retire(h, cost);
    return;
  }
  if (cls == InsnClass.Sc) {
    const ok = h.resvAddr == addr;
    clearReservation(dev, h);
    if (ok) {
      store<u32>(p, b);
      if (!inHbm) jitStored(dev, h.id, addr);
      if (inHbm && engOf(dev).resvCount != 0) breakReservations(dev, h.id, addr);
    } else {
      statAdd(dev, STAT_AMO_SC_FAIL, 1);
    }
    rset(regs, ir, ok ? 0 : 1);
    retire(h, cost);
    return;
  }
  const a = load<u32>(p);
  let v: u32;
  switch (f5) {
    case F5_AMOSWAP_W: v = b; break;
    case F5_AMOADD_W: v = a + b; break;
    case F5_AMOXOR_W: v = a ^ b; break;
    case F5_AMOAND_W: v = a & b; break;
    case F5_AMOOR_W: v = a | b; break;
    case F5_AMOMIN_W: v = <i32>a < <i32>b ? a : b; break;
    case F5_AMOMAX_W: v = <i32>a > <i32>b ? a : b; break;
    case F5_AMOMINU_W: v = a < b ? a : b; break;
    case F5_AMOMAXU_W: v = a > b ? a : b; break;
    default: { takeTrap(dev, h, CAUSE_ILLEGAL, ir); return; } // (insnClass let no other through)
  }
  store<u32>(p, v);
  if (inHbm && engOf(dev).resvCount != 0) breakReservations(dev, h.id, addr);
  if (!inHbm) jitStored(dev, h.id, addr);
  rset(regs, ir, a);
  retire(h, cost);
}

/** SYSTEM instructions: ECALL EBREAK MRET WFI and the six CSR instructions (their classes: insnClass). */
function system(dev: Device, h: Hart, ir: u32): void {
  const cls = insnClass(ir);
  switch (cls) {
    case InsnClass.Ecall: takeTrap(dev, h, CAUSE_ECALL_M, 0); return;
    case InsnClass.Ebreak: takeTrap(dev, h, CAUSE_BREAKPOINT, h.pc); return;
    case InsnClass.Mret: h.cycle += <u64>dev.cfg.cpiTrap; h.instret++; mret(dev, h); return;
    case InsnClass.Wfi: retire(h, <u64>dev.cfg.cpiAlu); sleep(dev, h); return;
    case InsnClass.Csr: case InsnClass.CsrImm: break;
    default: takeTrap(dev, h, CAUSE_ILLEGAL, ir); return;
  }
  const f3 = funct3Of(ir);
  const csr = ir >> 20;
  const rs1 = rs1Of(ir);
  const src = cls == InsnClass.CsrImm ? rs1 : load<u32>(h.regs + (<usize>rs1 << 2)); // CSRR*I take a 5-bit immediate
  const old = csrRead(h, csr);
  if (old == CSR_ILLEGAL) { takeTrap(dev, h, CAUSE_ILLEGAL, ir); return; }
  const write = f3 == F3_CSRRW || f3 == F3_CSRRWI;
  const writes = write || rs1 != 0; // CSRRS/CSRRC with x0 / zero immediate only read
  if (writes) {
    const v = write ? src : f3 == F3_CSRRS || f3 == F3_CSRRSI ? <u32>old | src : <u32>old & ~src; // else CSRRC, CSRRCI
    if (!csrWrite(dev, h, csr, v)) { takeTrap(dev, h, CAUSE_ILLEGAL, ir); return; }
  }
  rset(h.regs, ir, <u32>old);
  retire(h, <u64>dev.cfg.cpiCsr);
}
