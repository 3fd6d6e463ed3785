/*
 * pingpong: engines in pairs (0-1, 2-3, ...) each make a QP, publish its number in HBM, and
 * connect it to their partner's. The even engine SENDs a 64-byte message, the odd one
 * receives it into a posted receive and SENDs it back with a SEND_WITH_IMM carrying the round
 * number; ROUNDS times. The even engine prints the mean round-trip time in cycles. Every
 * message is checked byte by byte. An odd engine count leaves the last engine idle.
 * Buffers, rings and CQs live in each engine's own SRAM, which the NIC reaches through the
 * engine's NIC interface: polling a CQ costs SRAM loads, not HBM round trips.
 */
#include <menic.h>
#include <menic/nic.h>

#define ROUNDS 8
#define MSG 64
#define DEPTH 4
#define MAX_ENGINES 64

struct slice {
  uint8_t tx[MSG], rx[MSG];
  struct menic_wqe sq[DEPTH], rq[DEPTH];
  struct menic_cqe scq[DEPTH], rcq[DEPTH];
};
static struct slice local __attribute__((aligned(64))); /* in this engine's SRAM */
static MENIC_HBM_ZERO volatile uint32_t published[MAX_ENGINES]; /* qpn + 1, 0 = not yet */
static MENIC_HBM_ZERO volatile uint32_t connected[MAX_ENGINES]; /* 1 once the QP is in RTS */

static void post_recv(struct menic_queue *rq, struct slice *s, int32_t lkey) {
  struct menic_wqe w;
  memset(&w, 0, sizeof w);
  w.opcode = MENIC_OPCODE_RECV;
  w.laddr = menic_dma(s->rx);
  w.length = MSG;
  w.lkey = (uint32_t)lkey;
  menic_queue_put(rq, &w);
  menic_ring_rq(rq);
}

static void send(struct menic_queue *sq, struct slice *s, int32_t lkey, uint32_t opcode, uint32_t imm) {
  struct menic_wqe w;
  memset(&w, 0, sizeof w);
  w.opcode = (uint8_t)opcode;
  w.qpn = sq->qpn;
  w.laddr = menic_dma(s->tx);
  w.length = MSG;
  w.lkey = (uint32_t)lkey;
  w.imm = imm;
  menic_post_express(&w);
  sq->pi++;
}

int main(void) {
  uint32_t me = menic_hartid(), n = menic_num_engines();
  uint32_t peer = me ^ 1u;
  if (me >= MAX_ENGINES || peer >= n) return 0;
  struct slice *s = &local;
  int32_t pd = menic_alloc_pd();
  int32_t lkey = menic_reg_mr((uint32_t)pd, s, sizeof *s, MENIC_ACCESS_LOCAL_WRITE);
  struct menic_cq scq, rcq;
  struct menic_queue sq, rq;
  menic_create_cq(&scq, s->scq, DEPTH);
  menic_create_cq(&rcq, s->rcq, DEPTH);
  int32_t qpn = menic_create_qp(&sq, &rq, (uint32_t)pd, &scq, &rcq, s->sq, DEPTH, s->rq, DEPTH, true);
  if (qpn < 0) return 1;
  post_recv(&rq, s, lkey);
  published[me] = (uint32_t)qpn + 1;
  while (published[peer] == 0) {
  }
  if (menic_connect_qp((uint32_t)qpn, published[peer] - 1) != 0) return 1;
  /* a SEND to a QP not yet ready to receive would wait a transport timeout: start together */
  connected[me] = 1;
  while (connected[peer] == 0) {
  }

  struct menic_cqe c;
  uint32_t wrong = 0, cycles = 0;
  for (uint32_t round = 0; round < ROUNDS; round++) {
    if ((me & 1u) == 0) {
      for (int i = 0; i < MSG; i++) s->tx[i] = (uint8_t)(i + round + me);
      uint64_t t0 = menic_mtime();
      send(&sq, s, lkey, MENIC_OPCODE_SEND, 0);
      menic_cq_wait(&rcq, &c); /* the echo */
      cycles += (uint32_t)(menic_mtime() - t0);
      wrong += c.status != 0 || c.imm != round || (c.flags & 1u) == 0;
      for (int i = 0; i < MSG; i++) wrong += s->rx[i] != (uint8_t)(i + round + me);
      post_recv(&rq, s, lkey);
      menic_cq_wait(&scq, &c);
      wrong += c.status != 0;
    } else {
      menic_cq_wait(&rcq, &c);
      wrong += c.status != 0 || c.byte_len != MSG;
      memcpy(s->tx, s->rx, MSG);
      post_recv(&rq, s, lkey);
      send(&sq, s, lkey, MENIC_OPCODE_SEND_WITH_IMM, round);
      menic_cq_wait(&scq, &c);
      wrong += c.status != 0;
    }
  }
  if ((me & 1u) == 0) printf("engines %u-%u: %u round trips of %u bytes, mean %u cycles, %u wrong\n", me, peer, ROUNDS, MSG, cycles / ROUNDS, wrong);
  else if (wrong) printf("engine %u: %u wrong\n", me, wrong);
  return wrong ? 1 : 0;
}
