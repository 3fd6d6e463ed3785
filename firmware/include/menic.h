/*
 * menic.h: everything a message-engine firmware needs, in one include.
 *
 *   menic/memmap.h  register addresses (generated from layouts/memmap.json)
 *   menic/csr.h     CSR numbers, bits and csr_read/csr_write/csr_set/csr_clear
 *   menic/libc.h    printf, string functions, exit, 64-bit division helpers
 *
 * and below, inline helpers for the engine's hardware. The architectural contract they rely
 * on is docs/engine.md; the addresses are docs/memory-map.md.
 */
#ifndef MENIC_H
#define MENIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "menic/memmap.h"
#include "menic/csr.h"
#include "menic/libc.h"

/* ---- placement of shared data
 * Each engine has its own copy of ordinary globals (they live in its private SRAM). A
 * variable marked MENIC_HBM lives in HBM instead: one copy for the whole device, loaded once
 * by the host and visible to every engine, e.g.
 *     MENIC_HBM uint32_t shared_counter;
 * MENIC_HBM_ZERO is for large zero-initialised shared buffers: the ELF records only their
 * size and the loader zero-fills them. Such a variable must have no initialiser (one would be
 * silently discarded). */
#define MENIC_HBM      __attribute__((section(".hbm")))
#define MENIC_HBM_ZERO __attribute__((section(".hbm.zero")))

/* ---- identity and device facts */

/* This engine's index, 0 .. menic_num_engines() - 1 (CSR mhartid). */
static inline uint32_t menic_hartid(void) { return csr_read(CSR_MHARTID); }

/* Number of message engines in the device (1..64; MENIC_SYS_NUM_ENGINES). */
static inline uint32_t menic_num_engines(void) { return MENIC_REG32(MENIC_SYS_NUM_ENGINES); }

/* Bytes of private SRAM per engine and of HBM, as configured (the loader refuses an SRAM
 * smaller than the image; the stack is below the image: firmware/sdk/link.ld). */
static inline uint32_t menic_sram_bytes(void) { return MENIC_REG32(MENIC_SYS_SRAM_BYTES); }
static inline uint32_t menic_hbm_bytes(void) { return MENIC_REG32(MENIC_SYS_HBM_BYTES); }

/* Engine clock in kHz: mtime and mcycle advance this many times per millisecond. */
static inline uint32_t menic_clock_khz(void) { return MENIC_REG32(MENIC_SYS_CLOCK_KHZ); }

/* ---- console */

/* Append the byte c to this engine's console (MENIC_SYS_CONSOLE_TX). No buffering: the
 * register takes one byte per store. printf() and puts() are built on this. */
static inline void menic_putc(char c) { MENIC_REG32(MENIC_SYS_CONSOLE_TX) = (uint8_t)c; }

/* ---- memory ordering
 * Engines interleave on shared HBM (docs/engine.md, "Interleaving"). The RVWMO model lets a
 * hart reorder its own accesses to different addresses, so code that publishes data to other
 * engines must order it; these are the fences to do so. Atomics from <stdatomic.h> or the
 * __atomic builtins with acquire/release ordering emit the right fences themselves. */

/* Full fence: all earlier loads and stores before all later ones (fence rw, rw). */
static inline void menic_fence(void) { __asm__ volatile("fence rw, rw" ::: "memory"); }

/* Full fence including device accesses (fence iorw, iorw): use between MMIO accesses and
 * memory accesses whose order matters, e.g. before telling the host through the mailbox that
 * a buffer in HBM is ready. */
static inline void menic_fence_io(void) { __asm__ volatile("fence iorw, iorw" ::: "memory"); }

/* Compiler-only barrier: stops the compiler from moving memory accesses across it; emits no
 * instruction. */
static inline void menic_compiler_barrier(void) { __asm__ volatile("" ::: "memory"); }

/* ---- time (machine timer, privileged spec 3.2.1)
 * mtime counts engine clock cycles since reset and is shared by all engines. */

/* Read the 64-bit mtime. The two halves are separate registers, so read hi, lo, hi again and
 * retry if the high half moved in between (a carry out of the low half). */
static inline uint64_t menic_mtime(void) {
  uint32_t hi, lo, hi2;
  do {
    hi = MENIC_REG32(MENIC_TIMER_MTIME_HI);
    lo = MENIC_REG32(MENIC_TIMER_MTIME_LO);
    hi2 = MENIC_REG32(MENIC_TIMER_MTIME_HI);
  } while (hi != hi2);
  return ((uint64_t)hi << 32) | lo;
}

/* Set mtimecmp: mip.MTIP is set while mtime >= mtimecmp. Written in the order the privileged
 * spec gives (3.2.1): low half to all ones first, so that no intermediate value of the pair
 * is smaller than both the old and the new one and no spurious timer interrupt fires. */
static inline void menic_set_mtimecmp(uint64_t when) {
  MENIC_REG32(MENIC_TIMER_MTIMECMP_LO) = 0xffffffffu;
  MENIC_REG32(MENIC_TIMER_MTIMECMP_HI) = (uint32_t)(when >> 32);
  MENIC_REG32(MENIC_TIMER_MTIMECMP_LO) = (uint32_t)when;
}

/* Cycle and retired-instruction counters of this engine (mcycle, minstret), 64-bit, read
 * with the same hi/lo/hi loop as mtime. */
static inline uint64_t menic_mcycle(void) {
  uint32_t hi, lo, hi2;
  do {
    hi = csr_read(CSR_MCYCLEH);
    lo = csr_read(CSR_MCYCLE);
    hi2 = csr_read(CSR_MCYCLEH);
  } while (hi != hi2);
  return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t menic_minstret(void) {
  uint32_t hi, lo, hi2;
  do {
    hi = csr_read(CSR_MINSTRETH);
    lo = csr_read(CSR_MINSTRET);
    hi2 = csr_read(CSR_MINSTRETH);
  } while (hi != hi2);
  return ((uint64_t)hi << 32) | lo;
}

/* ---- sleeping and interrupts */

/* Sleep until an interrupt enabled in mie is pending (mip & mie != 0), whatever mstatus.MIE
 * says. Costs no host time. With mstatus.MIE = 0 execution simply continues after it, which
 * lets firmware wait for an event without a trap handler. With mie = 0 nothing can wake the
 * engine: it sleeps forever. */
static inline void menic_wfi(void) { __asm__ volatile("wfi" ::: "memory"); }

/* Global interrupt enable (mstatus.MIE). Interrupts are taken only with a handler installed
 * in mtvec (menic_set_trap_vector); without one, enable sources in mie and use menic_wfi()
 * instead. */
static inline void menic_irq_enable(void) { csr_set(CSR_MSTATUS, MSTATUS_MIE); }

/* Disable interrupts and return whether they were enabled, for menic_irq_restore(). */
static inline bool menic_irq_disable(void) {
  return (csr_clear(CSR_MSTATUS, MSTATUS_MIE) & MSTATUS_MIE) != 0;
}

/* Re-enable interrupts if `was_enabled` (the value menic_irq_disable() returned). */
static inline void menic_irq_restore(bool was_enabled) {
  if (was_enabled) csr_set(CSR_MSTATUS, MSTATUS_MIE);
}

/* Per-source enables in mie: the machine timer (MTIE) and the machine external interrupt,
 * raised while the host-to-engine mailbox is not empty (MEIE). */
static inline void menic_timer_irq_enable(void) { csr_set(CSR_MIE, MIE_MTIE); }
static inline void menic_timer_irq_disable(void) { csr_clear(CSR_MIE, MIE_MTIE); }
static inline void menic_mbox_irq_enable(void) { csr_set(CSR_MIE, MIE_MEIE); }
static inline void menic_mbox_irq_disable(void) { csr_clear(CSR_MIE, MIE_MEIE); }

/* Install a trap handler: mtvec = handler | mode (MTVEC_DIRECT or MTVEC_VECTORED). The
 * handler must be 4-byte aligned (mtvec's low bits hold the mode) and, for interrupts,
 * should be declared __attribute__((interrupt("machine"))) so it saves every register and
 * returns with mret. Writing 0 removes it: a synchronous trap then stops the engine in state
 * `faulted`. Address 0 itself is _start, so no handler can be there. */
static inline void menic_set_trap_vector(void (*handler)(void), uint32_t mode) {
  csr_write(CSR_MTVEC, (uint32_t)(uintptr_t)handler | mode);
}

/* ---- software interrupts between engines (MENIC_SWI_*)
 * An engine raises another's machine software interrupt (mip.MSIP), which wakes it from wfi
 * when its mie.MSIE is set, like RISC-V ACLINT's MSWI. The interrupt stays pending until the
 * engine clears it: clear first, then look at what changed, then sleep, so that a raise that
 * comes in between is not lost. */
static inline void menic_swi_enable(void) { csr_set(CSR_MIE, MIE_MSIE); }
static inline void menic_swi_disable(void) { csr_clear(CSR_MIE, MIE_MSIE); }

/* Raise engine `e`'s software interrupt (a number that is not an engine is ignored and counted, engine.bad_raise). */
static inline void menic_swi_raise(uint32_t e) { MENIC_REG32(MENIC_SWI_RAISE) = e; }

/* This engine's pending software interrupt, and clearing it. */
static inline bool menic_swi_pending(void) { return (MENIC_REG32(MENIC_SWI_MSIP) & 1u) != 0; }
static inline void menic_swi_clear(void) { MENIC_REG32(MENIC_SWI_MSIP) = 0; }

/* ---- mailbox between this engine and the host (MENIC_MBOX_*) */

/* Words from the host waiting in this engine's inbox. */
static inline uint32_t menic_mbox_count(void) { return MENIC_REG32(MENIC_MBOX_IN_COUNT); }

/* Free slots in the outbox to the host. */
static inline uint32_t menic_mbox_out_free(void) { return MENIC_REG32(MENIC_MBOX_OUT_FREE); }

/* Push a word to the host. If the outbox is full the word is dropped and counted
 * (mbox.out_overflow); check menic_mbox_out_free() first when that matters. */
static inline void menic_mbox_send(uint32_t word) { MENIC_REG32(MENIC_MBOX_OUT_DATA) = word; }

/* Pop a word from the host into *word if one is waiting; returns whether it did. (IN_DATA
 * reads 0 when empty, which is also a valid word, so the count decides.) */
static inline bool menic_mbox_try_recv(uint32_t *word) {
  if (menic_mbox_count() == 0) return false;
  *word = MENIC_REG32(MENIC_MBOX_IN_DATA);
  return true;
}

/* Wait for a word from the host and return it. Sleeps in wfi with mie.MEIE set (restored
 * afterwards); mip.MEIP is level-triggered (set while the inbox is not empty), so a word
 * arriving between the count check and the wfi still wakes the engine. Needs no handler: with
 * mstatus.MIE = 0 the interrupt only wakes the engine and is not taken. Call with interrupts
 * disabled, or with a handler that does not itself drain the inbox. */
static inline uint32_t menic_mbox_recv(void) {
  uint32_t old_mie = csr_set(CSR_MIE, MIE_MEIE);
  while (menic_mbox_count() == 0) menic_wfi();
  if ((old_mie & MIE_MEIE) == 0) csr_clear(CSR_MIE, MIE_MEIE);
  return MENIC_REG32(MENIC_MBOX_IN_DATA);
}

#endif
