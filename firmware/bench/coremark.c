/* CoreMark-like work for `npm run bench -- engines` (kernels.h): the four kinds of work of
 * EEMBC's CoreMark, written here from their description, not from its code, and not
 * comparable with its scores. Each pass
 *   1. walks a linked list of NODES nodes to find keys (hits and a miss), reverses it, sorts it
 *      by key (a merge sort of the list, stable: no pointer value decides anything) and changes
 *      some keys for the next pass;
 *   2. adds a constant to an 8x8 matrix of 16-bit values, scales it, multiplies it by a second
 *      one into 32-bit sums and folds those back into the second;
 *   3. scans a byte string with a state machine that sorts its comma-separated tokens into
 *      integers, decimals, numbers with an exponent and malformed ones, then changes a few bytes;
 *   4. runs CRC-16 over the results of each, chained through the passes.
 * The checksum is that CRC and a running mix of the same results. Unsigned arithmetic only
 * (and no plain char, signed on x86), so the native build of test/bench-kernels.test.ts
 * computes the same checksums as the engines. */
#include "kernels.h"

#define NODES 48
#define MAT 8
#define TEXT 96

struct node {
  struct node *next;
  uint16_t key;
  uint16_t data;
};

static struct node pool[NODES];
static uint16_t ma[MAT * MAT], mb[MAT * MAT];
static uint32_t mc[MAT * MAT];
static uint8_t text[TEXT];

/* The bytes the text is made of: digits most often, then what makes a token a decimal, an
 * exponent or malformed. */
static const uint8_t alphabet[16] = "0123456789.,-e+x";

static uint32_t next_random(uint32_t *s) {
  uint32_t x = *s; /* xorshift32: never 0 once seeded non-zero */
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  *s = x;
  return x;
}

/* CRC-16 (reflected polynomial 0xA001) of v's low `bytes` bytes, bit by bit. */
static uint16_t crc16(uint16_t crc, uint32_t v, uint32_t bytes) {
  for (uint32_t b = 0; b < bytes; b++) {
    crc ^= (uint16_t)(v & 0xff);
    v >>= 8;
    for (int i = 0; i < 8; i++) crc = (crc & 1u) ? (uint16_t)((crc >> 1) ^ 0xA001u) : (uint16_t)(crc >> 1);
  }
  return crc;
}

/* ---- 1. the list ---- */

/* Steps from `head` to the node with `key` (or to the end), and that node's data (0xffff: none). */
static uint32_t find(const struct node *head, uint16_t key, uint32_t *steps) {
  uint32_t n = 0;
  while (head != 0 && head->key != key) {
    head = head->next;
    n++;
  }
  *steps += n;
  return head != 0 ? head->data : 0xffffu;
}

static struct node *reverse(struct node *head) {
  struct node *prev = 0;
  while (head != 0) {
    struct node *next = head->next;
    head->next = prev;
    prev = head;
    head = next;
  }
  return prev;
}

/* Bottom-up merge sort of the list by key: runs of `width` nodes merged in pairs, width doubling
 * until one merge covers the list. Equal keys keep their order. */
static struct node *sort(struct node *head) {
  for (uint32_t width = 1;; width <<= 1) {
    struct node *p = head, *tail = 0;
    uint32_t merges = 0;
    head = 0;
    while (p != 0) {
      merges++;
      struct node *q = p;
      uint32_t pn = 0, qn = width;
      while (pn < width && q != 0) {
        q = q->next;
        pn++;
      }
      while (pn > 0 || (qn > 0 && q != 0)) {
        struct node *e;
        if (pn > 0 && (qn == 0 || q == 0 || p->key <= q->key)) {
          e = p;
          p = p->next;
          pn--;
        } else {
          e = q;
          q = q->next;
          qn--;
        }
        if (tail != 0) tail->next = e;
        else head = e;
        tail = e;
      }
      p = q;
    }
    if (tail != 0) tail->next = 0;
    if (merges <= 1) return head;
  }
}

static uint16_t list_work(struct node **list, uint32_t pass, uint16_t crc, uint32_t *mix) {
  uint32_t steps = 0, found = 0;
  for (uint32_t j = 0; j < 3; j++) found += find(*list, pool[(pass * 7 + j * 13) % NODES].key, &steps);
  found += find(*list, 0xffffu, &steps); /* keys are below 0x400: a miss, the whole list */
  *list = sort(reverse(*list));
  /* the sorted keys' fingerprint; every third node gets a new key for the next pass */
  uint32_t fold = 0, i = 0;
  for (struct node *n = *list; n != 0; n = n->next, i++) {
    fold = (fold << 1 | fold >> 31) ^ n->key;
    if (i % 3 == pass % 3) n->key = (uint16_t)((n->key * 5u + n->data + pass) & 0x3ffu);
  }
  *mix = *mix * 31u + found + steps;
  crc = crc16(crc, found, 4);
  return crc16(crc, fold, 4);
}

/* ---- 2. the matrices ---- */

static uint16_t matrix_work(uint32_t pass, uint16_t crc, uint32_t *mix) {
  uint16_t c = (uint16_t)(pass & 0xffu);
  for (uint32_t i = 0; i < MAT * MAT; i++) ma[i] = (uint16_t)(ma[i] + c);
  uint32_t scaled = 0;
  for (uint32_t i = 0; i < MAT * MAT; i++) scaled += (uint32_t)ma[i] * (c | 1u);
  for (uint32_t r = 0; r < MAT; r++) {
    for (uint32_t col = 0; col < MAT; col++) {
      uint32_t sum = 0;
      for (uint32_t k = 0; k < MAT; k++) sum += (uint32_t)ma[r * MAT + k] * mb[k * MAT + col];
      mc[r * MAT + col] = sum;
    }
  }
  uint32_t total = 0, bits = 0;
  for (uint32_t i = 0; i < MAT * MAT; i++) {
    total += mc[i];
    bits += (mc[i] >> 4) & 0xfu;
    mb[i] = (uint16_t)(mb[i] ^ mc[i] ^ (mc[i] >> 16));
  }
  *mix = *mix * 31u + total + scaled;
  crc = crc16(crc, total, 4);
  return crc16(crc, bits, 2);
}

/* ---- 3. the state machine ---- */

enum state { START, SIGN, INT, POINT, FRAC, EXP, EXP_SIGN, EXP_INT, BAD, STATES };
enum { K_INT, K_DECIMAL, K_EXP, K_BAD, KINDS };

static enum state step(enum state s, uint8_t ch) {
  uint32_t digit = (uint32_t)(ch - '0') < 10u;
  switch (s) {
    case START:
      if (digit) return INT;
      if (ch == '-' || ch == '+') return SIGN;
      if (ch == '.') return POINT;
      return BAD;
    case SIGN:
      if (digit) return INT;
      if (ch == '.') return POINT;
      return BAD;
    case INT:
      if (digit) return INT;
      if (ch == '.') return POINT;
      if (ch == 'e') return EXP;
      return BAD;
    case POINT:
    case FRAC:
      if (digit) return FRAC;
      if (ch == 'e' && s == FRAC) return EXP;
      return BAD;
    case EXP:
      if (digit) return EXP_INT;
      if (ch == '-' || ch == '+') return EXP_SIGN;
      return BAD;
    case EXP_SIGN:
    case EXP_INT:
      if (digit) return EXP_INT;
      return BAD;
    default:
      return BAD;
  }
}

static uint16_t scan_work(uint32_t pass, uint32_t *seed, uint16_t crc, uint32_t *mix) {
  uint32_t kinds[KINDS], visits[STATES];
  /* loops, not initialisers: clang makes a memset call of those, which the Linux build lacks */
  for (uint32_t k = 0; k < KINDS; k++) kinds[k] = 0;
  for (uint32_t v = 0; v < STATES; v++) visits[v] = 0;
  enum state s = START;
  for (uint32_t i = 0; i <= TEXT; i++) {
    uint8_t ch = i < TEXT ? text[i] : (uint8_t)',';
    if (ch == ',') {
      if (s != START) kinds[s == INT ? K_INT : s == FRAC ? K_DECIMAL : s == EXP_INT ? K_EXP : K_BAD]++;
      s = START;
      continue;
    }
    s = step(s, ch);
    visits[s]++;
  }
  uint32_t fold = 0;
  for (uint32_t k = 0; k < KINDS; k++) {
    fold = fold << 8 | (kinds[k] & 0xffu);
    crc = crc16(crc, kinds[k], 1);
  }
  for (uint32_t v = 0; v < STATES; v++) *mix = *mix * 31u + visits[v];
  *mix += fold;
  /* a few bytes change for the next pass, where the random stream says */
  for (uint32_t j = 0; j < 4; j++) {
    uint32_t r = next_random(seed);
    text[(r >> 8) % TEXT] = alphabet[(r + pass) & 15u];
  }
  return crc;
}

uint32_t coremark_kernel(uint32_t id, uint32_t passes) {
  uint32_t seed = 0x9e3779b9u ^ (id * 0x85ebca6bu);
  if (seed == 0) seed = 1;
  for (uint32_t i = 0; i < NODES; i++) {
    pool[i].key = (uint16_t)(next_random(&seed) & 0x3ffu);
    pool[i].data = (uint16_t)i;
    pool[i].next = i + 1 < NODES ? &pool[i + 1] : 0;
  }
  for (uint32_t i = 0; i < MAT * MAT; i++) {
    uint32_t r = next_random(&seed);
    ma[i] = (uint16_t)r;
    mb[i] = (uint16_t)(r >> 16);
    mc[i] = 0;
  }
  for (uint32_t i = 0; i < TEXT; i++) text[i] = alphabet[next_random(&seed) & 15u];

  struct node *list = &pool[0];
  uint16_t crc = 0;
  uint32_t mix = id;
  for (uint32_t p = 0; p < passes; p++) {
    crc = list_work(&list, p, crc, &mix);
    crc = matrix_work(p, crc, &mix);
    crc = scan_work(p, &seed, crc, &mix);
  }
  return ((uint32_t)crc << 16) ^ mix;
}
