/* Four classic small programs for `npm run bench -- engines`, a compute-bound check the
 * translator was not shaped on (compute.c and coremark.c are the ones it was measured with while
 * it was written): a sieve of Eratosthenes (byte stores, nested loops), a 12 x 12 integer matrix
 * product (loads and multiplies), an insertion sort of 128 pseudo-random words (branches that go
 * either way by the data, in loops of varying length) and an FNV-1a hash of 2 KiB (byte loads,
 * xor and multiply). Each pass runs all four; their results feed the next pass and the checksum. */
#include "kernels.h"

#define SIEVE 4096
#define M 12
#define KEYS 128
#define TEXT 2048

static uint8_t composite[SIEVE];
static uint32_t a[M * M], b[M * M], c[M * M];
static uint32_t keys[KEYS];
static uint8_t text[TEXT];

/* xorshift32: the pseudo-random words of the matrices, the keys and the text */
static uint32_t next(uint32_t *x) {
  uint32_t v = *x;
  v ^= v << 13;
  v ^= v >> 17;
  v ^= v << 5;
  return *x = v;
}

/* the primes below `n`, counted */
static uint32_t sieve(uint32_t n) {
  uint32_t count = 0;
  for (uint32_t i = 0; i < n; i++) composite[i] = 0;
  for (uint32_t i = 2; i < n; i++) {
    if (composite[i]) continue;
    count++;
    for (uint32_t j = i * i; j < n; j += i) composite[j] = 1;
  }
  return count;
}

/* c = a x b; a's diagonal takes the trace, so the next pass's product differs */
static uint32_t matmul(void) {
  uint32_t trace = 0;
  for (uint32_t i = 0; i < M; i++) {
    for (uint32_t j = 0; j < M; j++) {
      uint32_t s = 0;
      for (uint32_t k = 0; k < M; k++) s += a[i * M + k] * b[k * M + j];
      c[i * M + j] = s;
    }
    trace += c[i * M + i];
  }
  for (uint32_t i = 0; i < M; i++) a[i * M + i] ^= trace >> (i & 7);
  return trace;
}

/* new keys, sorted by insertion; their smallest, middle and largest folded */
static uint32_t sort(uint32_t *x) {
  for (uint32_t i = 0; i < KEYS; i++) keys[i] = next(x);
  for (uint32_t i = 1; i < KEYS; i++) {
    uint32_t v = keys[i], j = i;
    while (j > 0 && keys[j - 1] > v) {
      keys[j] = keys[j - 1];
      j--;
    }
    keys[j] = v;
  }
  return keys[0] ^ keys[KEYS / 2] ^ keys[KEYS - 1];
}

/* FNV-1a over the text from `seed`; the hash's low byte goes into the text where `at` says */
static uint32_t fnv(uint32_t seed, uint32_t at) {
  uint32_t h = 2166136261u ^ seed;
  for (uint32_t i = 0; i < TEXT; i++) {
    h ^= text[i];
    h *= 16777619u;
  }
  text[at % TEXT] ^= (uint8_t)h;
  return h;
}

uint32_t classic_kernel(uint32_t id, uint32_t passes) {
  uint32_t x = id * 2654435761u + 1; /* never 0: xorshift's fixed point */
  for (uint32_t i = 0; i < M * M; i++) a[i] = next(&x), b[i] = next(&x);
  for (uint32_t i = 0; i < TEXT; i++) text[i] = (uint8_t)next(&x);
  uint32_t sum = id;
  for (uint32_t p = 0; p < passes; p++) {
    sum = sum * 31u + sieve(SIEVE - (sum & 63u));
    sum = sum * 31u + matmul();
    sum = sum * 31u + sort(&x);
    sum = sum * 31u + fnv(sum, p + sum);
  }
  return sum;
}
