/*
 * menic/nic.h: the engine's side of the NIC (docs/nic.md). The host creates an engine's QPs
 * and CQs (their rings live in HBM) and hands their numbers and ring addresses to the
 * firmware; the firmware posts work requests, rings doorbells, and takes completions by
 * polling or by sleeping in wfi until its NIC interrupt.
 *
 * HBM addresses are the same for the engine and the NIC (MENIC_DMA_HBM_BASE == MENIC_HBM_BASE);
 * the engine's SRAM has a DMA address of its own: menic_dma() gives it.
 */
#ifndef MENIC_NIC_H
#define MENIC_NIC_H

#include <stdbool.h>
#include <stdint.h>
#include "menic/memmap.h"
#include "menic/csr.h"

/* The NIC's (DMA) address of a pointer of this engine: its own SRAM appears to the NIC at
 * MENIC_DMA_SRAM_BASE + hartid x MENIC_SRAM_WINDOW; HBM at the same addresses. Work requests
 * carry DMA addresses; verbs commands take this engine's own addresses and translate them. */
static inline uint64_t menic_dma(const volatile void *p) {
  uint32_t a = (uint32_t)(uintptr_t)p;
  if (a >= MENIC_SRAM_WINDOW) return a;
  return MENIC_DMA_SRAM_BASE + (uint64_t)csr_read(CSR_MHARTID) * MENIC_SRAM_WINDOW + a;
}

/* A send or receive queue of this engine: its ring of WQEs in HBM and the producer index. */
struct menic_queue {
  uint32_t qpn;
  volatile struct menic_wqe *ring; /* depth entries of MENIC_WQE_SIZE bytes, in HBM */
  uint32_t depth;
  uint32_t pi; /* entries posted (free-running) */
};

/* A completion queue of this engine: its ring of CQEs in HBM and the consumer index. */
struct menic_cq {
  uint32_t cqn;
  volatile struct menic_cqe *ring;
  uint32_t depth;
  uint32_t ci; /* entries consumed (free-running) */
};

/* A 32-bit word that may alias any object: the helpers below copy a WQE (whose fields are u8,
 * u32 and u64) a word at a time, which plain uint32_t pointers would make undefined behaviour
 * under C's aliasing rules (clang -O2 then drops the stores to the u8 and u64 fields as dead). */
typedef uint32_t __attribute__((__may_alias__)) menic_word_t;

/* Express doorbell: the WQE (with its qpn field set) goes straight into the doorbell window,
 * word by word in ascending order; the store to the last word rings the doorbell. The NIC
 * fetches nothing. */
static inline void menic_post_express(const struct menic_wqe *w) {
  const menic_word_t *src = (const menic_word_t *)w;
  volatile uint32_t *win = (volatile uint32_t *)(uintptr_t)MENIC_NIC_EXPRESS;
  for (uint32_t i = 0; i < MENIC_NIC_EXPRESS_SIZE / 4; i++) win[i] = src[i];
}

/* Classic doorbell, step 1: copy a WQE into the next ring slot (no doorbell yet, so several
 * can be batched behind one). */
static inline void menic_queue_put(struct menic_queue *q, const struct menic_wqe *w) {
  volatile menic_word_t *dst = (volatile menic_word_t *)&q->ring[q->pi % q->depth];
  const menic_word_t *src = (const menic_word_t *)w;
  for (uint32_t i = 0; i < sizeof(struct menic_wqe) / 4; i++) dst[i] = src[i];
  q->pi++;
}

/* Classic doorbell, step 2: tell the NIC the new producer index; it fetches the new entries
 * from HBM. The fence orders the ring writes before the doorbell. */
static inline void menic_ring_sq(const struct menic_queue *sq) {
  __asm__ volatile("fence w, o" ::: "memory");
  MENIC_REG32(MENIC_NIC_SQ_DB) = (sq->qpn << 16) | (sq->pi & 0xffffu);
}

static inline void menic_ring_rq(const struct menic_queue *rq) {
  __asm__ volatile("fence w, o" ::: "memory");
  MENIC_REG32(MENIC_NIC_RQ_DB) = (rq->qpn << 16) | (rq->pi & 0xffffu);
}

/* Take the next completion into *out if there is one. An entry is new when its owner bit is
 * the phase of this pass over the ring (1 on the first pass, 0 on the second, ...). */
static inline bool menic_cq_poll(struct menic_cq *cq, struct menic_cqe *out) {
  volatile struct menic_cqe *e = &cq->ring[cq->ci % cq->depth];
  uint32_t phase = ((cq->ci / cq->depth) & 1u) == 0 ? 1u : 0u;
  if ((e->owner & 1u) != phase) return false;
  *out = *(const struct menic_cqe *)e;
  cq->ci++;
  MENIC_REG32(MENIC_NIC_CQ_CI) = (cq->cqn << 16) | (cq->ci & 0xffffu);
  return true;
}

/* Ask for this engine's NIC interrupt at the CQ's next completion. */
static inline void menic_cq_arm(const struct menic_cq *cq) { MENIC_REG32(MENIC_NIC_CQ_ARM) = cq->cqn; }

/* Wait for the next completion, asleep in wfi: arm, look once more (a completion may have
 * arrived before the arm), sleep until the interrupt, acknowledge it. Needs no trap handler:
 * with mstatus.MIE = 0 the interrupt wakes the engine without being taken. */
static inline void menic_cq_wait(struct menic_cq *cq, struct menic_cqe *out) {
  uint32_t old = csr_set(CSR_MIE, MIE_MEIE);
  for (;;) {
    menic_cq_arm(cq);
    if (menic_cq_poll(cq, out)) break;
    while (MENIC_REG32(MENIC_NIC_IRQ_COUNT) == 0) __asm__ volatile("wfi" ::: "memory");
    (void)MENIC_REG32(MENIC_NIC_IRQ_CQN); /* acknowledge */
  }
  /* drop an interrupt raised by the arm above if the poll found the entry first */
  while (MENIC_REG32(MENIC_NIC_IRQ_COUNT) != 0) (void)MENIC_REG32(MENIC_NIC_IRQ_CQN);
  if ((old & MIE_MEIE) == 0) csr_clear(CSR_MIE, MIE_MEIE);
}

/* ---- verbs commands (NIC.CMD): the engine makes its own objects. Each call stalls the
 * engine nicCommandPs. Results are numbers or keys, or a negative MENIC_CMD_ERR_*. */

static inline int32_t menic_cmd(uint32_t op, const uint32_t *args, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) MENIC_REG32(MENIC_NIC_CMD_ARG0 + 4 * i) = args[i];
  MENIC_REG32(MENIC_NIC_CMD) = op;
  return (int32_t)MENIC_REG32(MENIC_NIC_CMD_RESULT);
}

/* A protection domain: its number, or a negative error. */
static inline int32_t menic_alloc_pd(void) { return menic_cmd(MENIC_CMD_ALLOC_PD, 0, 0); }

/* Register [addr, addr + len) (this engine's SRAM or HBM) with MENIC_ACCESS_* rights: the lkey (rkey = lkey |
 * MENIC_REMOTE_KEY_BIT), or a negative error. */
static inline int32_t menic_reg_mr(uint32_t pd, const volatile void *addr, uint32_t len, uint32_t access) {
  uint32_t a[5] = { pd, (uint32_t)(uintptr_t)addr, 0, len, access };
  return menic_cmd(MENIC_CMD_REG_MR, a, 5);
}

static inline uint32_t menic_rkey(int32_t lkey) { return (uint32_t)lkey | MENIC_REMOTE_KEY_BIT; }

/* A CQ of `depth` entries whose ring (depth x MENIC_CQE_SIZE zeroed bytes of this engine's
 * SRAM or of HBM) is `ring`. A ring in SRAM is the cheap one to poll. */
static inline int32_t menic_create_cq(struct menic_cq *cq, volatile struct menic_cqe *ring, uint32_t depth) {
  uint32_t a[2] = { (uint32_t)(uintptr_t)ring, depth };
  int32_t r = menic_cmd(MENIC_CMD_CREATE_CQ, a, 2);
  cq->cqn = (uint32_t)r;
  cq->ring = ring;
  cq->depth = depth;
  cq->ci = 0;
  return r;
}

/* A QP owned by this engine, with its send and receive rings in its SRAM or in HBM. */
static inline int32_t menic_create_qp(struct menic_queue *sq, struct menic_queue *rq, uint32_t pd,
                                      const struct menic_cq *scq, const struct menic_cq *rcq,
                                      volatile struct menic_wqe *sring, uint32_t sdepth,
                                      volatile struct menic_wqe *rring, uint32_t rdepth, bool sig_all) {
  uint32_t a[8] = { pd, scq->cqn, rcq->cqn, (uint32_t)(uintptr_t)sring, sdepth, (uint32_t)(uintptr_t)rring, rdepth, sig_all };
  int32_t r = menic_cmd(MENIC_CMD_CREATE_QP, a, 8);
  sq->qpn = rq->qpn = (uint32_t)r;
  sq->ring = sring;
  sq->depth = sdepth;
  sq->pi = 0;
  rq->ring = rring;
  rq->depth = rdepth;
  rq->pi = 0;
  return r;
}

/* Move a QP to MENIC_QP_STATE_* (RTR needs the destination QP). */
static inline int32_t menic_modify_qp(uint32_t qpn, uint32_t state, uint32_t dest_qpn) {
  uint32_t a[3] = { qpn, state, dest_qpn };
  return menic_cmd(MENIC_CMD_MODIFY_QP, a, 3);
}

/* Move an INIT QP to RTR towards QP dest_qpn of device dest_device (RoCEv2 through a port of
 * MENIC_PORT_GROUP_*). */
static inline int32_t menic_modify_qp_remote(uint32_t qpn, uint32_t dest_qpn, uint32_t dest_device, uint32_t port_group) {
  uint32_t a[4] = { qpn, dest_qpn, dest_device, port_group };
  return menic_cmd(MENIC_CMD_MODIFY_QP_REMOTE, a, 4);
}

/* RESET -> INIT -> RTR (to dest_qpn) -> RTS in one go; 0 or the first error. */
static inline int32_t menic_connect_qp(uint32_t qpn, uint32_t dest_qpn) {
  int32_t r = menic_modify_qp(qpn, MENIC_QP_STATE_INIT, 0);
  if (r == 0) r = menic_modify_qp(qpn, MENIC_QP_STATE_RTR, dest_qpn);
  if (r == 0) r = menic_modify_qp(qpn, MENIC_QP_STATE_RTS, 0);
  return r;
}

/* RESET -> INIT -> RTR (to QP dest_qpn of device dest_device) -> RTS in one go; 0 or the first error. */
static inline int32_t menic_connect_qp_remote(uint32_t qpn, uint32_t dest_qpn, uint32_t dest_device, uint32_t port_group) {
  int32_t r = menic_modify_qp(qpn, MENIC_QP_STATE_INIT, 0);
  if (r == 0) r = menic_modify_qp_remote(qpn, dest_qpn, dest_device, port_group);
  if (r == 0) r = menic_modify_qp(qpn, MENIC_QP_STATE_RTS, 0);
  return r;
}

/* Re-split the device's ports: ports 0 .. scale_up_ports - 1 scale-up, the rest scale-out (every
 * connected QP and connection must be quiescent: docs/nic.md, "Port groups"). 0,
 * MENIC_CMD_ERR_ARGUMENT (more than the ports) or MENIC_CMD_ERR_IN_USE. */
static inline int32_t menic_set_port_groups(uint32_t scale_up_ports) {
  uint32_t a[1] = { scale_up_ports };
  return menic_cmd(MENIC_CMD_SET_PORT_GROUPS, a, 1);
}

#endif
