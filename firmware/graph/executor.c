/*
 * The graph executor: the firmware every engine of a device runs to execute a collective's
 * work-queue graph with no host involvement (docs/graph.md, "Running a graph").
 *
 * The host writes the graph and a run block (GRAPH_RUN: queue pairs, keys, buffer addresses,
 * each node's queue pair and the engines to wake when it is done) into HBM, and pushes the run
 * block's address into engine 0's mailbox. Engine 0 publishes it and raises every other
 * engine's software interrupt. Each engine then walks its own nodes in list order: a node is
 * posted once the nodes it depends on are done (their done flags in HBM); sends, writes and
 * reads go to the NIC through express doorbells, receives into their queue's ring, reduce and
 * copy to the engine's own queue pair (the near-memory reduction block). Completions arrive in
 * the engine's CQ; a node done sets its flag and wakes the engines that wait on it. With
 * nothing to do the engine sleeps in wfi until a completion interrupt or another engine's
 * software interrupt. A signal on semaphore 0 tells the host (a mailbox word); a failed node
 * is recorded in the run block and reported to the host, and the engine stops.
 *
 * Every step is instructions on the emulated engine: its cost is the executor's real cost.
 */
#include <menic.h>
#include <menic/nic.h>

#define MAX_QPS 256 /* queue pairs one engine may own in a run */

/* The run block engine 0 publishes for the others: one copy per device, in HBM. */
static MENIC_HBM volatile uint32_t start_run = 0;
static MENIC_HBM volatile uint32_t start_gen = 0;

/* Per queue pair of this engine (index - first_qp): entries posted and completed. */
static uint32_t sq_posted[MAX_QPS], sq_done[MAX_QPS], rq_posted[MAX_QPS], rq_done[MAX_QPS];

typedef volatile struct menic_graph_run run_t;
typedef volatile struct menic_graph_header graph_t;
typedef volatile struct menic_graph_node node_t;
typedef volatile struct menic_graph_qp qp_t;
typedef volatile struct menic_graph_bind bind_t;

struct ctx {
  uint32_t me;
  run_t *run;
  graph_t *g;
  node_t *nodes;
  volatile uint32_t *deps, *done, *sems, *bufs, *rkeys;
  bind_t *bind;
  qp_t *qps;
  uint32_t first_qp, nqps, lkey;
  struct menic_cq cq;
};

enum { BLOCKED = 0, POSTED = 1, DONE = 2 };

static inline void *at(uint32_t addr) { return (void *)(uintptr_t)addr; }

/* The HBM address of a place (buffer index, offset): buffers lie at the same address on every device. */
static inline uint32_t place(struct ctx *c, uint32_t buf, uint32_t off) { return c->bufs[buf] + off; }

static bool deps_done(struct ctx *c, node_t *n) {
  uint32_t first = n->deps, k = n->ndeps;
  for (uint32_t i = 0; i < k; i++)
    if (c->done[c->deps[first + i]] == 0) return false;
  return true;
}

/* Node i is done: set its flag, then wake the engines that wait on it. */
static void mark_done(struct ctx *c, uint32_t i) {
  __atomic_store_n(&c->done[i], 1u, __ATOMIC_RELEASE);
  uint32_t mask = c->bind[i].notify & ~(1u << c->me);
  for (uint32_t e = 0; mask != 0; e++, mask >>= 1)
    if (mask & 1u) menic_swi_raise(e);
}

static void fail(struct ctx *c, uint32_t node, uint32_t status) {
  uint32_t none = 0xffffffffu;
  if (__atomic_compare_exchange_n(&c->run->error_node, &none, node, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    c->run->error_status = status;
    c->run->error_engine = c->me;
  }
  menic_mbox_send(MENIC_GRAPH_MSG_ERROR | (node & ~MENIC_GRAPH_MSG_KIND_MASK));
}

/* Posts node i (its dependencies are done): POSTED when the NIC has it, DONE when it is done at once, BLOCKED when it cannot be posted yet. */
static int post(struct ctx *c, uint32_t i) {
  node_t *n = &c->nodes[i];
  uint32_t op = n->op;
  if (op == MENIC_GRAPH_OP_SIGNAL) {
    uint32_t v = __atomic_add_fetch(&c->sems[n->sem], n->value, __ATOMIC_ACQ_REL);
    if (n->sem == 0) {
      uint64_t now = menic_mtime();
      c->run->end_lo = (uint32_t)now;
      c->run->end_hi = (uint32_t)(now >> 32);
      menic_mbox_send(MENIC_GRAPH_MSG_SIGNAL | (v & ~MENIC_GRAPH_MSG_KIND_MASK));
    }
    return DONE;
  }
  if (op == MENIC_GRAPH_OP_WAIT) return __atomic_load_n(&c->sems[n->sem], __ATOMIC_ACQUIRE) >= n->value ? DONE : BLOCKED;
  uint32_t qi = c->bind[i].qp;
  qp_t *q = &c->qps[qi];
  uint32_t l = qi - c->first_qp;
  struct menic_wqe w;
  memset(&w, 0, sizeof w);
  w.flags = MENIC_WR_FLAG_SIGNALED;
  w.qpn = q->qpn;
  w.wr_id = i;
  w.length = n->bytes;
  w.lkey = c->lkey;
  if (op == MENIC_GRAPH_OP_RECV) {
    if (rq_posted[l] - rq_done[l] >= q->rq_depth) return BLOCKED;
    w.opcode = MENIC_OPCODE_RECV;
    if (n->bytes) w.laddr = place(c, n->dst.buf, n->dst.off);
    struct menic_queue rq = { q->qpn, (volatile struct menic_wqe *)at(q->rq_ring), q->rq_depth, rq_posted[l] };
    menic_queue_put(&rq, &w);
    menic_ring_rq(&rq);
    rq_posted[l] = rq.pi;
    return POSTED;
  }
  if (sq_posted[l] - sq_done[l] >= q->sq_depth) return BLOCKED;
  switch (op) {
    case MENIC_GRAPH_OP_SEND:
      w.opcode = MENIC_OPCODE_SEND;
      w.laddr = place(c, n->src[0].buf, n->src[0].off);
      break;
    case MENIC_GRAPH_OP_WRITE:
      w.opcode = (n->flags & MENIC_GRAPH_FLAG_NOTIFY) ? MENIC_OPCODE_RDMA_WRITE_WITH_IMM : MENIC_OPCODE_RDMA_WRITE;
      w.laddr = place(c, n->src[0].buf, n->src[0].off);
      w.raddr = place(c, n->dst.buf, n->dst.off);
      w.rkey = c->rkeys[n->peer];
      w.imm = i;
      break;
    case MENIC_GRAPH_OP_READ:
      w.opcode = MENIC_OPCODE_RDMA_READ;
      w.laddr = place(c, n->dst.buf, n->dst.off);
      w.raddr = place(c, n->src[0].buf, n->src[0].off);
      w.rkey = c->rkeys[n->peer];
      break;
    case MENIC_GRAPH_OP_COPY:
      w.opcode = MENIC_OPCODE_COPY;
      w.laddr = place(c, n->dst.buf, n->dst.off);
      w.raddr = place(c, n->src[0].buf, n->src[0].off);
      w.rkey = c->lkey;
      break;
    case MENIC_GRAPH_OP_REDUCE: {
      w.opcode = MENIC_OPCODE_REDUCE;
      w.dtype = n->dtype;
      w.redop = n->redop;
      w.laddr = place(c, n->dst.buf, n->dst.off);
      uint32_t ns = n->nsrc;
      w.nsrc = (uint8_t)ns;
      for (uint32_t k = 0; k < ns; k++) {
        w.src[k].addr = place(c, n->src[k].buf, n->src[k].off);
        w.src[k].lkey = c->lkey;
      }
      break;
    }
    default:
      fail(c, i, MENIC_STATUS_LOC_QP_OP_ERR);
      return BLOCKED;
  }
  menic_post_express(&w);
  sq_posted[l]++;
  return POSTED;
}

/* Runs this engine's part of the run at `addr` to its end (or its first failure). */
static void execute(uint32_t addr, uint32_t me) {
  struct ctx c;
  c.me = me;
  c.run = (run_t *)at(addr);
  c.g = (graph_t *)at(c.run->graph);
  if (me >= c.g->engines) return;
  uint32_t g = c.run->graph;
  c.nodes = (node_t *)at(g + c.g->node_off);
  c.deps = (volatile uint32_t *)at(g + c.g->dep_off);
  c.done = (volatile uint32_t *)at(c.run->done);
  c.sems = (volatile uint32_t *)at(c.run->sems);
  c.bufs = (volatile uint32_t *)at(c.run->bufs);
  c.rkeys = (volatile uint32_t *)at(c.run->rkeys);
  c.bind = (bind_t *)at(c.run->bind);
  c.qps = (qp_t *)at(c.run->qps);
  c.lkey = c.run->lkey;
  volatile struct menic_graph_engine *E = &((volatile struct menic_graph_engine *)at(c.run->engines))[me];
  c.first_qp = E->first_qp;
  c.nqps = E->qps;
  c.cq.cqn = E->cqn;
  c.cq.ring = (volatile struct menic_cqe *)at(E->cq_ring);
  c.cq.depth = E->cq_depth;
  c.cq.ci = 0;
  volatile uint32_t *list = (volatile uint32_t *)at(E->list);
  uint32_t count = E->nodes;
  if (c.nqps > MAX_QPS) {
    fail(&c, count ? list[0] : 0, MENIC_STATUS_LOC_QP_OP_ERR);
    return;
  }
  for (uint32_t l = 0; l < c.nqps; l++) sq_posted[l] = sq_done[l] = rq_posted[l] = rq_done[l] = 0;

  uint32_t cursor = 0, finished = 0;
  while (finished < count) {
    /* clear, then look: a raise or a completion after this point wakes the wfi below */
    menic_swi_clear();
    menic_cq_arm(&c.cq);
    while (MENIC_REG32(MENIC_NIC_IRQ_COUNT) != 0) (void)MENIC_REG32(MENIC_NIC_IRQ_CQN);
    bool progress = false;
    while (cursor < count) {
      uint32_t i = list[cursor];
      if (!deps_done(&c, &c.nodes[i])) break;
      int r = post(&c, i);
      if (r == BLOCKED) {
        if (c.run->error_node != 0xffffffffu) return;
        break;
      }
      if (r == DONE) {
        mark_done(&c, i);
        finished++;
      }
      cursor++;
      progress = true;
    }
    struct menic_cqe e;
    while (menic_cq_poll(&c.cq, &e)) {
      uint32_t i = (uint32_t)e.wr_id;
      if (e.status != MENIC_STATUS_SUCCESS) {
        fail(&c, i, e.status);
        return;
      }
      if (e.opcode == MENIC_OPCODE_RECV) rq_done[c.bind[i].qp - c.first_qp]++;
      else sq_done[c.bind[i].qp - c.first_qp]++;
      mark_done(&c, i);
      finished++;
      progress = true;
    }
    if (!progress) menic_wfi();
  }
  __atomic_fetch_add(&c.run->finished, 1u, __ATOMIC_RELEASE);
}

int main(void) {
  uint32_t me = menic_hartid(), n = menic_num_engines(), gen = 0;
  csr_set(CSR_MIE, MIE_MEIE | MIE_MSIE);
  for (;;) {
    if (me == 0) {
      uint32_t w;
      for (;;) {
        while (MENIC_REG32(MENIC_NIC_IRQ_COUNT) != 0) (void)MENIC_REG32(MENIC_NIC_IRQ_CQN);
        if (menic_mbox_try_recv(&w)) break;
        menic_wfi();
      }
      start_run = w;
      __atomic_store_n(&start_gen, gen + 1, __ATOMIC_RELEASE);
      for (uint32_t e = 1; e < n; e++) menic_swi_raise(e);
    } else {
      for (;;) {
        menic_swi_clear();
        if (__atomic_load_n(&start_gen, __ATOMIC_ACQUIRE) != gen) break;
        menic_wfi();
      }
    }
    gen = start_gen;
    execute(start_run, me);
  }
}
