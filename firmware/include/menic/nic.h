/*
 * menic/nic.h: the engine's side of the NIC (docs/nic.md). The host creates an engine's QPs
 * and CQs (their rings live in HBM) and hands their numbers and ring addresses to the
 * firmware; the firmware posts work requests, rings doorbells, and takes completions by
 * polling or by sleeping in wfi until its NIC interrupt.
 *
 * HBM addresses are the same for the engine and the NIC (MENIC_DMA_HBM_BASE == MENIC_HBM_BASE),
 * so a pointer into HBM can go into a work request as it is.
 */
#ifndef MENIC_NIC_H
#define MENIC_NIC_H

#include <stdbool.h>
#include <stdint.h>
#include "menic/memmap.h"
#include "menic/csr.h"

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

/* Express doorbell: the WQE (with its qpn field set) goes straight into the doorbell window,
 * word by word in ascending order; the store to the last word rings the doorbell. The NIC
 * fetches nothing. */
static inline void menic_post_express(const struct menic_wqe *w) {
  const uint32_t *src = (const uint32_t *)w;
  volatile uint32_t *win = (volatile uint32_t *)(uintptr_t)MENIC_NIC_EXPRESS;
  for (uint32_t i = 0; i < MENIC_NIC_EXPRESS_SIZE / 4; i++) win[i] = src[i];
}

/* Classic doorbell, step 1: copy a WQE into the next ring slot (no doorbell yet, so several
 * can be batched behind one). */
static inline void menic_queue_put(struct menic_queue *q, const struct menic_wqe *w) {
  volatile uint32_t *dst = (volatile uint32_t *)&q->ring[q->pi % q->depth];
  const uint32_t *src = (const uint32_t *)w;
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

#endif
