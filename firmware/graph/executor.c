/*
 * The graph executor: the firmware every engine of a device runs to execute a collective's
 * work-queue graph with no host involvement (docs/graph.md, "Running a graph").
 *
 * Before the run the host writes each engine's part of the graph into that engine's SRAM, the
 * `stage` below (GRAPH_STAGE: its tasks in posting order, the work request of each, its
 * dependencies, its queue pairs, a bitmap of its nodes done, its CQ's ring), writes the receive
 * work requests into the receive rings in HBM, and writes a run block (GRAPH_RUN: done flags,
 * semaphores, the first failure, the end time) into HBM. Then it pushes the run block's address
 * into engine 0's mailbox: one doorbell. Engine 0 counts the run for the others and raises every
 * other engine's software interrupt.
 *
 * Each engine walks its tasks in order. A task is posted once the nodes it depends on are done
 * (its own engine's in the stage's bitmap, another engine's by their done flag in HBM): a send,
 * write, read, reduce or copy by storing its work request into the express doorbell window (the
 * NIC fetches nothing), a receive by ringing its queue pair's receive doorbell; a signal adds to
 * its semaphore, a wait is done once its semaphore is high enough. Completions arrive in the
 * engine's CQ (in its SRAM); a node done sets its bit and its flag and raises the engines that
 * wait on it. With nothing to do the engine sleeps in wfi until a completion interrupt or
 * another engine's software interrupt. A signal on semaphore 0 records the time and tells the
 * host (a mailbox word); a failed node is recorded in the run block and reported to the host,
 * and the engine stops.
 *
 * Every step is instructions on the emulated engine: its cost is the executor's real cost.
 */
#include <menic.h>
#include <menic/nic.h>

#define STAGE_BYTES (96 * 1024)

/* This engine's part of the run: written by the host before the doorbell. In .noinit: crt0
 * does not clear it (96 KiB would cost every boot ~100 us, and erase a stage written early). */
static uint8_t stage[STAGE_BYTES] __attribute__((aligned(64), section(".noinit")));

/* Runs started so far: engine 0 counts them for the others (one copy per device, in HBM). */
static MENIC_HBM volatile uint32_t start_gen = 0;

typedef struct menic_graph_stage stage_t;
typedef struct menic_graph_task task_t;
typedef struct menic_graph_stage_qp qp_t;
typedef volatile struct menic_graph_run run_t;

struct ctx {
  uint32_t me;
  run_t *run;
  volatile uint32_t *done, *sems;
  task_t *tasks;
  uint32_t *deps, *bitmap;
  qp_t *qps;
  uint64_t *times; /* per task: mtime when posted, when done */
  struct menic_cq cq;
};

static inline void *at(uint32_t addr) { return (void *)(uintptr_t)addr; }

static bool deps_done(struct ctx *c, const task_t *t) {
  const uint32_t *d = &c->deps[t->deps];
  for (uint32_t k = 0; k < t->ndeps; k++) {
    uint32_t n = d[k];
    if (n & MENIC_GRAPH_DEP_REMOTE) {
      if (__atomic_load_n(&c->done[n & ~MENIC_GRAPH_DEP_REMOTE], __ATOMIC_ACQUIRE) == 0) return false;
    } else if ((c->bitmap[n >> 5] & (1u << (n & 31))) == 0) {
      return false;
    }
  }
  return true;
}

/* Task t's node is done: its bit, its flag for the other engines, then wake those waiting on it. */
static void mark_done(struct ctx *c, const task_t *t) {
  uint32_t n = t->node;
  c->times[2 * (uint32_t)(t - c->tasks) + 1] = menic_mtime();
  c->bitmap[n >> 5] |= 1u << (n & 31);
  __atomic_store_n(&c->done[n], 1u, __ATOMIC_RELEASE);
  uint32_t mask = t->notify & ~(1u << c->me);
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

/* Posts task t (its dependencies are done); true when it is done at once (signal, wait). False
 * for a wait whose semaphore is not there yet: *blocked is then set. */
static bool post(struct ctx *c, const task_t *t, bool *blocked) {
  switch (t->kind) {
    case MENIC_GRAPH_TASK_KIND_EXPRESS:
      menic_post_express((const struct menic_wqe *)&stage[t->wqe]);
      return false;
    case MENIC_GRAPH_TASK_KIND_RECV: {
      qp_t *q = &c->qps[t->qp];
      q->rq_posted++;
      MENIC_REG32(MENIC_NIC_RQ_DB) = (q->qpn << 16) | (q->rq_posted & 0xffffu);
      return false;
    }
    case MENIC_GRAPH_TASK_KIND_SIGNAL: {
      uint32_t v = __atomic_add_fetch(&c->sems[t->sem], t->value, __ATOMIC_ACQ_REL);
      if (t->sem == 0) {
        uint64_t now = menic_mtime();
        c->run->end_lo = (uint32_t)now;
        c->run->end_hi = (uint32_t)(now >> 32);
        menic_mbox_send(MENIC_GRAPH_MSG_SIGNAL | (v & ~MENIC_GRAPH_MSG_KIND_MASK));
      }
      return true;
    }
    default: /* WAIT */
      if (__atomic_load_n(&c->sems[t->sem], __ATOMIC_ACQUIRE) >= t->value) return true;
      *blocked = true;
      return false;
  }
}

/* Runs this engine's part of the run (its stage) to its end, or its first failure. */
static void execute(uint32_t me) {
  const stage_t *S = (const stage_t *)stage;
  if (S->magic != MENIC_GRAPH_STAGE_MARK) return; /* no part in this run */
  struct ctx c;
  c.me = me;
  c.run = (run_t *)at(S->run);
  c.done = (volatile uint32_t *)at(c.run->done);
  c.sems = (volatile uint32_t *)at(c.run->sems);
  c.tasks = (task_t *)&stage[S->task_off];
  c.deps = (uint32_t *)&stage[S->dep_off];
  c.bitmap = (uint32_t *)&stage[S->bitmap_off];
  c.qps = (qp_t *)&stage[S->qp_off];
  c.times = (uint64_t *)&stage[S->times_off];
  c.cq.cqn = S->cqn;
  c.cq.ring = (volatile struct menic_cqe *)&stage[S->cq_off];
  c.cq.depth = S->cq_depth;
  c.cq.ci = 0;
  uint32_t count = S->tasks, cursor = 0, finished = 0;
  while (finished < count) {
    /* clear, then look: a raise or a completion after this point wakes the wfi below */
    menic_swi_clear();
    menic_cq_arm(&c.cq);
    while (MENIC_REG32(MENIC_NIC_IRQ_COUNT) != 0) (void)MENIC_REG32(MENIC_NIC_IRQ_CQN);
    bool progress = false;
    while (cursor < count) {
      const task_t *t = &c.tasks[cursor];
      if (!deps_done(&c, t)) break;
      bool blocked = false;
      c.times[2 * cursor] = menic_mtime();
      if (post(&c, t, &blocked)) {
        mark_done(&c, t);
        finished++;
      } else if (blocked) {
        break;
      }
      cursor++;
      progress = true;
    }
    struct menic_cqe e;
    while (menic_cq_poll(&c.cq, &e)) {
      if (e.status != MENIC_STATUS_SUCCESS) {
        fail(&c, (uint32_t)e.wr_id, e.status);
        return;
      }
      mark_done(&c, &c.tasks[(uint32_t)(e.wr_id >> 32)]);
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
        /* a raise from the run before (a dependent's notify landing after this engine was done)
           would keep wfi from sleeping: clear it; a later one wakes the wfi, and this clears it */
        menic_swi_clear();
        menic_wfi();
      }
      (void)w; /* the run block's address: each engine's stage holds it too */
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
    execute(me);
  }
}
