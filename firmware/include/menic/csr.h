/*
 * Control and status registers of a menic message engine (docs/engine.md, "CSRs"), and
 * macros to access them. The numbers and bit positions are from the RISC-V privileged spec
 * (v1.12, table 2.5 and sections 3.1.6, 3.1.9).
 */
#ifndef MENIC_CSR_H
#define MENIC_CSR_H

#include <stdint.h>

/* ---- CSR numbers (privileged spec table 2.5); any other number is an illegal instruction */
#define CSR_MSTATUS   0x300
#define CSR_MISA      0x301
#define CSR_MIE       0x304
#define CSR_MTVEC     0x305
#define CSR_MSTATUSH  0x310
#define CSR_MSCRATCH  0x340
#define CSR_MEPC      0x341
#define CSR_MCAUSE    0x342
#define CSR_MTVAL     0x343
#define CSR_MIP       0x344
#define CSR_MCYCLE    0xb00
#define CSR_MINSTRET  0xb02
#define CSR_MCYCLEH   0xb80
#define CSR_MINSTRETH 0xb82
#define CSR_CYCLE     0xc00
#define CSR_TIME      0xc01
#define CSR_INSTRET   0xc02
#define CSR_CYCLEH    0xc80
#define CSR_TIMEH     0xc81
#define CSR_INSTRETH  0xc82
#define CSR_MVENDORID 0xf11
#define CSR_MARCHID   0xf12
#define CSR_MIMPID    0xf13
#define CSR_MHARTID   0xf14

/* ---- mstatus bits (section 3.1.6.1); only MIE and MPIE are writable on a menic engine */
#define MSTATUS_MIE   (1u << 3)
#define MSTATUS_MPIE  (1u << 7)
#define MSTATUS_MPP   (3u << 11)

/* ---- mie / mip bits (section 3.1.9): machine timer and machine external interrupts.
 * External = "the host's mailbox to this engine is not empty". */
#define MIE_MSIE      (1u << 3)
#define MIE_MTIE      (1u << 7)
#define MIE_MEIE      (1u << 11)
#define MIP_MSIP      (1u << 3)
#define MIP_MTIP      (1u << 7)
#define MIP_MEIP      (1u << 11)

/* ---- mcause values (section 3.1.15); interrupts have bit 31 set */
#define MCAUSE_INTERRUPT          0x80000000u
#define MCAUSE_INSN_MISALIGNED    0u
#define MCAUSE_INSN_ACCESS        1u
#define MCAUSE_ILLEGAL_INSN       2u
#define MCAUSE_BREAKPOINT         3u
#define MCAUSE_LOAD_MISALIGNED    4u
#define MCAUSE_LOAD_ACCESS        5u
#define MCAUSE_STORE_MISALIGNED   6u
#define MCAUSE_STORE_ACCESS       7u
#define MCAUSE_ECALL_M            11u
#define MCAUSE_TIMER_IRQ          (MCAUSE_INTERRUPT | 7u)
#define MCAUSE_EXTERNAL_IRQ       (MCAUSE_INTERRUPT | 11u)

/* ---- mtvec modes (section 3.1.7): vectored sends interrupt `cause` to base + 4 * cause */
#define MTVEC_DIRECT   0u
#define MTVEC_VECTORED 1u

/* The CSR number must be a compile-time constant: it is encoded in the instruction. The
 * "memory" clobber keeps the compiler from moving memory accesses across a CSR access, which
 * matters for mstatus.MIE (critical sections) and for counter reads that time code. */
#define MENIC_STR_(x) #x
#define MENIC_STR(x) MENIC_STR_(x)

/* Read CSR `csr`: uint32_t v = csr_read(CSR_MCAUSE); */
#define csr_read(csr) __extension__({                                   \
    uint32_t csr_v_;                                                    \
    __asm__ volatile("csrr %0, " MENIC_STR(csr)                         \
                     : "=r"(csr_v_) : : "memory");                      \
    csr_v_;                                                             \
  })

/* Write `val` to CSR `csr`. */
#define csr_write(csr, val) do {                                        \
    uint32_t csr_w_ = (uint32_t)(val);                                  \
    __asm__ volatile("csrw " MENIC_STR(csr) ", %0"                      \
                     : : "r"(csr_w_) : "memory");                       \
  } while (0)

/* Set the bits of `mask` in CSR `csr`; returns the old value (csrrs). */
#define csr_set(csr, mask) __extension__({                              \
    uint32_t csr_o_;                                                    \
    __asm__ volatile("csrrs %0, " MENIC_STR(csr) ", %1"                 \
                     : "=r"(csr_o_) : "r"((uint32_t)(mask)) : "memory"); \
    csr_o_;                                                             \
  })

/* Clear the bits of `mask` in CSR `csr`; returns the old value (csrrc). */
#define csr_clear(csr, mask) __extension__({                            \
    uint32_t csr_o_;                                                    \
    __asm__ volatile("csrrc %0, " MENIC_STR(csr) ", %1"                 \
                     : "=r"(csr_o_) : "r"((uint32_t)(mask)) : "memory"); \
    csr_o_;                                                             \
  })

/* Swap CSR `csr` with `val`; returns the old value (csrrw). */
#define csr_swap(csr, val) __extension__({                              \
    uint32_t csr_o_;                                                    \
    __asm__ volatile("csrrw %0, " MENIC_STR(csr) ", %1"                 \
                     : "=r"(csr_o_) : "r"((uint32_t)(val)) : "memory"); \
    csr_o_;                                                             \
  })

#endif
