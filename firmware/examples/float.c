/*
 * float: floating point on the engines. RV32IMA has no F or D extension, so clang compiles
 * float and double arithmetic to calls into the soft-float runtime that menic fw build links
 * (libgcc's: IEEE 754 binary32 and binary64, round to nearest even; docs/engine.md). Engine k
 * sums the harmonic series H(n) = 1 + 1/2 + ... + 1/n, n = 100 (k + 1), in float and in double,
 * and finds sqrt(k + 2) by Newton's method; it prints each value in decimal and as its bits, which a
 * host computing the same operations in IEEE arithmetic reproduces exactly
 * (test/firmware-build.test.ts does).
 */
#include <menic.h>

static uint32_t bits32(float f) {
  union { float f; uint32_t u; } v = { f };
  return v.u;
}

static uint64_t bits64(double d) {
  union { double d; uint64_t u; } v = { d };
  return v.u;
}

/* "2.928968": the whole part and six decimals, truncated (printf has no %f). */
static void print_decimal(double d) {
  int whole = (int)d;
  printf("%d.%06d", whole, (int)((d - whole) * 1000000.0));
}

int main(void) {
  int k = (int)menic_hartid();
  int n = 100 * (k + 1);
  float hf = 0.0f;
  double hd = 0.0;
  for (int i = 1; i <= n; i++) {
    hf += 1.0f / (float)i;
    hd += 1.0 / (double)i;
  }
  double x = (double)(k + 2), root = 1.0;
  for (int i = 0; i < 6; i++) root = 0.5 * (root + x / root);

  printf("H(%d) = ", n);
  print_decimal(hd);
  printf(" (double 0x%016llx); in float ", (unsigned long long)bits64(hd));
  print_decimal(hf);
  /* the float sum's error, in units in the last place of the double sum rounded to float */
  printf(" (float 0x%08x, %d ulp from the double's)\n", bits32(hf), (int)(bits32(hf) - bits32((float)hd)));
  printf("sqrt(%d) = ", k + 2);
  print_decimal(root);
  printf(" (0x%016llx), squared %s %d\n", (unsigned long long)bits64(root), root * root == x ? "==" : "!=", k + 2);
  return 0;
}
