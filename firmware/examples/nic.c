/*
 * nic: an engine drives the NIC itself. The host creates a QP and CQ owned by engine 0 (their
 * rings in HBM), registers buffers, and sends their numbers, addresses and keys through the
 * mailbox (see test/nic-firmware.test.ts). Engine 0 then
 *   1. posts an RDMA WRITE through the express doorbell and sleeps in wfi until its
 *      completion interrupt;
 *   2. posts a REDUCE (sum of two f32 buffers) through a classic doorbell, and sleeps again;
 * and reports each completion's status and the cycles it waited, then mails them to the host.
 * The other engines have nothing to do and exit.
 */
#include <menic.h>
#include <menic/nic.h>

static uint32_t arg(void) { return menic_mbox_recv(); }

static uint32_t run(struct menic_queue *sq, struct menic_cq *cq, struct menic_wqe *w, bool express, const char *what) {
  struct menic_cqe c;
  uint64_t t0 = menic_mtime();
  if (express) {
    menic_post_express(w);
  } else {
    menic_queue_put(sq, w);
    menic_ring_sq(sq);
  }
  if (express) sq->pi++; /* the NIC puts an express entry in the next ring slot */
  menic_cq_wait(cq, &c);
  uint32_t cycles = (uint32_t)(menic_mtime() - t0);
  printf("%s: status %u, wr_id %u, %u bytes, %u cycles\n", what, c.status, (uint32_t)c.wr_id, c.byte_len, cycles);
  menic_mbox_send(c.status);
  menic_mbox_send(cycles);
  return c.status;
}

int main(void) {
  if (menic_hartid() != 0) return 0;
  struct menic_queue sq = { .qpn = arg() };
  sq.ring = (volatile struct menic_wqe *)(uintptr_t)arg();
  sq.depth = arg();
  struct menic_cq cq = { .cqn = arg() };
  cq.ring = (volatile struct menic_cqe *)(uintptr_t)arg();
  cq.depth = arg();
  uint32_t src = arg(), lkey = arg(), dst = arg(), rkey = arg(), len = arg();
  uint32_t rdst = arg(), rlkey = arg();

  struct menic_wqe w;
  memset(&w, 0, sizeof w);
  w.opcode = MENIC_OPCODE_RDMA_WRITE;
  w.flags = MENIC_WR_FLAG_SIGNALED;
  w.qpn = sq.qpn;
  w.wr_id = 1;
  w.laddr = src;
  w.length = len;
  w.lkey = lkey;
  w.raddr = dst;
  w.rkey = rkey;
  uint32_t bad = run(&sq, &cq, &w, true, "express write");

  memset(&w, 0, sizeof w);
  w.opcode = MENIC_OPCODE_REDUCE;
  w.flags = MENIC_WR_FLAG_SIGNALED;
  w.dtype = MENIC_DTYPE_F32;
  w.redop = MENIC_REDUCE_OP_SUM;
  w.qpn = sq.qpn;
  w.wr_id = 2;
  w.laddr = rdst;
  w.lkey = rlkey;
  w.length = len;
  w.nsrc = 2;
  w.src[0].addr = src;
  w.src[0].lkey = lkey;
  w.src[1].addr = dst;
  w.src[1].lkey = rlkey;
  bad |= run(&sq, &cq, &w, false, "classic reduce");
  return bad ? 1 : 0;
}
