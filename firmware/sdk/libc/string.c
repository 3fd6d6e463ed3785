/*
 * Memory and string functions (C99 7.21). clang may also call memcpy, memmove and memset
 * itself, for struct copies and large initialisers, so these must exist in every image.
 *
 * Misaligned loads and stores trap on a menic engine (docs/engine.md, "Traps"), so the word
 * loops run only when both pointers are 4-byte aligned; every other case goes byte by byte.
 * Word copies matter for HBM, where each access costs a round trip (cpiLoadHbm).
 *
 * The SDK builds with -fno-builtin, which keeps clang from recognising these loops as
 * memcpy/memset idioms and turning them into calls to themselves.
 */
#include <menic/libc.h>

static inline int both_aligned(const void *a, const void *b) {
  return (((uintptr_t)a | (uintptr_t)b) & 3u) == 0;
}

/* Forward copy, shared by memcpy and memmove. Deliberately not `restrict`: memmove uses it
 * for overlapping ranges with dst below src, where each byte must be read before the store
 * that may overwrite it, which only holds if the compiler keeps the plain forward order. */
static void copy_forward(unsigned char *d, const unsigned char *s, size_t n) {
  if (both_aligned(d, s)) {
    for (; n >= 4; n -= 4, d += 4, s += 4) *(uint32_t *)d = *(const uint32_t *)s;
  }
  while (n--) *d++ = *s++;
}

void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
  copy_forward(dst, src, n);
  return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d == s || n == 0) return dst;
  if (d < s || d >= s + n) {
    /* dst starts before src, or the ranges do not overlap: copying forwards is safe. */
    copy_forward(d, s, n);
    return dst;
  }
  /* dst overlaps the tail of src: copy backwards, from the ends. */
  d += n;
  s += n;
  if (both_aligned(d, s)) {
    for (; n >= 4; n -= 4) {
      d -= 4;
      s -= 4;
      *(uint32_t *)d = *(const uint32_t *)s;
    }
  }
  while (n--) *--d = *--s;
  return dst;
}

void *memset(void *dst, int c, size_t n) {
  unsigned char *d = dst;
  unsigned char b = (unsigned char)c;
  /* Byte stores up to a word boundary, then words, then the tail. */
  while (n > 0 && ((uintptr_t)d & 3u) != 0) {
    *d++ = b;
    n--;
  }
  uint32_t w = b * 0x01010101u;
  for (; n >= 4; n -= 4, d += 4) *(uint32_t *)d = w;
  while (n--) *d++ = b;
  return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
  const unsigned char *p = a, *q = b;
  for (; n > 0; n--, p++, q++) {
    if (*p != *q) return *p < *q ? -1 : 1;
  }
  return 0;
}

size_t strlen(const char *s) {
  const char *p = s;
  while (*p) p++;
  return (size_t)(p - s);
}

/* Characters compare as unsigned char (C99 7.21.4). */
int strcmp(const char *a, const char *b) {
  const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
  while (*p && *p == *q) {
    p++;
    q++;
  }
  return (*p > *q) - (*p < *q);
}
