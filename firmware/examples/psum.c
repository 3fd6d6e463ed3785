/*
 * psum: a parallel sum over shared HBM, for any number of engines (1..64).
 *
 *   1. Engine e fills slice e of an N-element array in HBM with data[i] = i * i.
 *   2. All engines meet at a barrier.
 *   3. Engine e sums slice (e + 1) mod n, written by its neighbour, so the sum only comes out
 *      right if the other engines' stores are visible, and adds it into a shared 64-bit total
 *      with two 32-bit AMOs.
 *   4. Barrier again; engine 0 compares the total with the closed form
 *      sum_{i<N} i^2 = (N - 1) N (2N - 1) / 6, prints it and exits 0 if right, 1 if wrong.
 *      The other engines exit 0.
 *
 * The barrier is sense-reversing (Mellor-Crummey and Scott, "Algorithms for Scalable
 * Synchronization on Shared-Memory Multiprocessors", 1991, fig. 8 "central barrier"): a
 * shared arrival count and a shared sense flag, each engine flipping its own local sense per
 * episode, so the barrier can be reused immediately without a reset race.
 */
#include <menic.h>

#define N 16384u

/* Filled at run time, so it occupies no file bytes (MENIC_HBM_ZERO). */
MENIC_HBM_ZERO static uint32_t data[N];

/* The barrier and the total also start at zero; MENIC_HBM keeps them as file bytes, which is
 * a handful of words. */
MENIC_HBM static uint32_t barrier_count; /* engines arrived in the current episode */
MENIC_HBM static uint32_t barrier_sense; /* flips when the last engine arrives */
MENIC_HBM static uint32_t total_lo;      /* the 64-bit total as two words, see add_total */
MENIC_HBM static uint32_t total_hi;

/* Wait until all `n` engines have called barrier(). `local_sense` is this engine's own
 * (SRAM) copy of the sense it waits for. The amoadd (acq_rel) orders this engine's earlier
 * stores before its arrival; the acquire load orders its later loads after the release. */
static void barrier(uint32_t n, uint32_t *local_sense) {
  uint32_t sense = *local_sense ^ 1u;
  *local_sense = sense;
  if (__atomic_fetch_add(&barrier_count, 1u, __ATOMIC_ACQ_REL) == n - 1) {
    /* Last to arrive: reset the count for the next episode, then release everyone. Nobody
     * touches the count again before seeing the new sense, so the plain reset is safe. */
    __atomic_store_n(&barrier_count, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&barrier_sense, sense, __ATOMIC_RELEASE);
  } else {
    while (__atomic_load_n(&barrier_sense, __ATOMIC_ACQUIRE) != sense) {
    }
  }
}

/* Add a 64-bit value to the shared total with 32-bit AMOs (RV32A has no 64-bit AMO). The
 * low-word amoadd returns the old low word; if adding overflowed it, the carry goes into the
 * high word with the high half. Additions commute, so once every engine has added, the pair
 * is exact, though it may be torn while additions are in flight. */
static void add_total(uint64_t v) {
  uint32_t lo = (uint32_t)v;
  uint32_t old = __atomic_fetch_add(&total_lo, lo, __ATOMIC_RELAXED);
  uint32_t carry = (uint32_t)(old + lo) < old;
  __atomic_fetch_add(&total_hi, (uint32_t)(v >> 32) + carry, __ATOMIC_RELAXED);
}

/* First element of slice k of n. When n does not divide N (n = 3, say) slices differ in
 * size by at most one; N * k / n fits 32 bits for k <= 64. */
static uint32_t slice_start(uint32_t k, uint32_t n) { return N * k / n; }

int main(void) {
  uint32_t me = menic_hartid();
  uint32_t n = menic_num_engines();
  uint32_t local_sense = 0;

  for (uint32_t i = slice_start(me, n); i < slice_start(me + 1, n); i++) data[i] = i * i;

  barrier(n, &local_sense);

  uint32_t k = (me + 1) % n;
  uint64_t partial = 0;
  for (uint32_t i = slice_start(k, n); i < slice_start(k + 1, n); i++) partial += data[i];
  add_total(partial);

  barrier(n, &local_sense);

  if (me != 0) return 0;
  uint64_t total = ((uint64_t)__atomic_load_n(&total_hi, __ATOMIC_RELAXED) << 32) |
                   __atomic_load_n(&total_lo, __ATOMIC_RELAXED);
  uint64_t expected = (uint64_t)(N - 1) * N * (2 * N - 1) / 6;
  bool ok = total == expected;
  printf("psum: %u engines, %u elements, total %llu, expected %llu: %s\n", n, N,
         (unsigned long long)total, (unsigned long long)expected, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
