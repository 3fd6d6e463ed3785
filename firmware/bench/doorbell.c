/*
 * Doorbell latency, engine side (`npm run bench -- doorbell`): engine 0 posts 8-byte RDMA
 * WRITEs on its own QP, first OPS through classic doorbells (WQE into the HBM ring, then
 * SQ_DB), then OPS through the express window. Before each post it mails the host the low
 * word of mtime; the host matches it with the NIC's completion time in the trace. Each post
 * waits for the previous completion (polling the CQ), so the operations do not overlap.
 */
#include <menic.h>
#include <menic/nic.h>

#define OPS 8

int main(void) {
  if (menic_hartid() != 0) return 0;
  struct menic_queue sq = { .qpn = menic_mbox_recv() };
  sq.ring = (volatile struct menic_wqe *)(uintptr_t)menic_mbox_recv();
  sq.depth = menic_mbox_recv();
  struct menic_cq cq = { .cqn = menic_mbox_recv() };
  cq.ring = (volatile struct menic_cqe *)(uintptr_t)menic_mbox_recv();
  cq.depth = menic_mbox_recv();
  uint32_t buf = menic_mbox_recv(), lkey = menic_mbox_recv(), rkey = menic_mbox_recv();

  struct menic_wqe w;
  memset(&w, 0, sizeof w);
  w.opcode = MENIC_OPCODE_RDMA_WRITE;
  w.flags = MENIC_WR_FLAG_SIGNALED;
  w.qpn = sq.qpn;
  w.laddr = buf;
  w.length = 8;
  w.lkey = lkey;
  w.raddr = buf + 64;
  w.rkey = rkey;
  struct menic_cqe c;
  uint32_t bad = 0;
  for (uint32_t i = 0; i < 2 * OPS; i++) {
    bool express = i >= OPS;
    w.wr_id = i;
    menic_mbox_send((uint32_t)menic_mtime());
    if (express) {
      menic_post_express(&w);
      sq.pi++;
    } else {
      menic_queue_put(&sq, &w);
      menic_ring_sq(&sq);
    }
    while (!menic_cq_poll(&cq, &c)) {
    }
    bad |= c.status;
  }
  return bad ? 1 : 0;
}
