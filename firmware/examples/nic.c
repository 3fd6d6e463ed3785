/*
 * nic: every engine drives the NIC on its own. It makes a protection domain, registers its
 * slice of HBM, creates a CQ and a QP connected to itself (verbs commands through NIC.CMD),
 * then
 *   1. posts an RDMA WRITE through the express doorbell and sleeps in wfi until its
 *      completion interrupt;
 *   2. posts a REDUCE (the sum of the source and the written copy, i32) through a classic
 *      doorbell and sleeps again;
 * checks the bytes, and prints what it saw. Exit code 0 when everything was right.
 */
#include <menic.h>
#include <menic/nic.h>

#define N 256          /* i32 elements per buffer (the engines have no FPU: i32 keeps the check integer) */
#define DEPTH 8
#define MAX_ENGINES 64

struct slice {
  int32_t src[N], dst[N], sum[N];
  struct menic_wqe sq[DEPTH], rq[DEPTH];
  struct menic_cqe cq[DEPTH];
};
static MENIC_HBM_ZERO struct slice hbm[MAX_ENGINES] __attribute__((aligned(64)));

static uint32_t post_and_wait(struct menic_queue *sq, struct menic_cq *cq, struct menic_wqe *w, bool express, uint32_t *cycles) {
  struct menic_cqe c;
  uint64_t t0 = menic_mtime();
  if (express) {
    menic_post_express(w);
    sq->pi++; /* the NIC puts an express entry in the next ring slot */
  } else {
    menic_queue_put(sq, w);
    menic_ring_sq(sq);
  }
  menic_cq_wait(cq, &c);
  *cycles = (uint32_t)(menic_mtime() - t0);
  return c.status;
}

int main(void) {
  uint32_t me = menic_hartid();
  if (me >= MAX_ENGINES) return 2;
  struct slice *s = &hbm[me];
  int32_t pd = menic_alloc_pd();
  int32_t lkey = menic_reg_mr((uint32_t)pd, s, sizeof *s, MENIC_ACCESS_LOCAL_WRITE | MENIC_ACCESS_REMOTE_WRITE);
  struct menic_cq cq;
  struct menic_queue sq, rq;
  int32_t cqn = menic_create_cq(&cq, s->cq, DEPTH);
  int32_t qpn = cqn < 0 ? cqn : menic_create_qp(&sq, &rq, (uint32_t)pd, &cq, &cq, s->sq, DEPTH, s->rq, DEPTH, false);
  if (pd < 0 || lkey < 0 || cqn < 0 || qpn < 0 || menic_connect_qp((uint32_t)qpn, (uint32_t)qpn) != 0) {
    printf("engine %u: setup failed (pd %d, lkey %d, cq %d, qp %d)\n", me, pd, lkey, cqn, qpn);
    return 1;
  }
  for (int i = 0; i < N; i++) s->src[i] = (i - 128) * 7 + (int32_t)me * 1000;

  struct menic_wqe w;
  memset(&w, 0, sizeof w);
  w.opcode = MENIC_OPCODE_RDMA_WRITE;
  w.flags = MENIC_WR_FLAG_SIGNALED;
  w.qpn = sq.qpn;
  w.wr_id = 1;
  w.laddr = (uint32_t)(uintptr_t)s->src;
  w.length = sizeof s->src;
  w.lkey = (uint32_t)lkey;
  w.raddr = (uint32_t)(uintptr_t)s->dst;
  w.rkey = menic_rkey(lkey);
  uint32_t write_cycles, reduce_cycles;
  uint32_t st1 = post_and_wait(&sq, &cq, &w, true, &write_cycles);

  memset(&w, 0, sizeof w);
  w.opcode = MENIC_OPCODE_REDUCE;
  w.flags = MENIC_WR_FLAG_SIGNALED;
  w.dtype = MENIC_DTYPE_I32;
  w.redop = MENIC_REDUCE_OP_SUM;
  w.qpn = sq.qpn;
  w.wr_id = 2;
  w.laddr = (uint32_t)(uintptr_t)s->sum;
  w.lkey = (uint32_t)lkey;
  w.length = sizeof s->sum;
  w.nsrc = 2;
  w.src[0].addr = (uint32_t)(uintptr_t)s->src;
  w.src[0].lkey = (uint32_t)lkey;
  w.src[1].addr = (uint32_t)(uintptr_t)s->dst;
  w.src[1].lkey = (uint32_t)lkey;
  uint32_t st2 = post_and_wait(&sq, &cq, &w, false, &reduce_cycles);

  uint32_t wrong = 0;
  for (int i = 0; i < N; i++) wrong += (s->dst[i] != s->src[i]) + (s->sum[i] != 2 * s->src[i]);
  printf("engine %u: qp %d: express write status %u in %u cycles, classic reduce status %u in %u cycles, %u wrong\n",
         me, qpn, st1, write_cycles, st2, reduce_cycles, wrong);
  return st1 == 0 && st2 == 0 && wrong == 0 ? 0 : 1;
}
