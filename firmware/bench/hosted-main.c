/* The benchmark kernels (kernels.h) as a program of an operating system, for what
 * `npm run bench -- engines` compares the engines with:
 *     <program> compute|coremark <passes> [<ids>]
 * runs the kernel for ids 0 .. ids - 1 (default 16, one per engine of the 16-engine runs) in
 * turn, with `passes` passes each, and prints a line "<id> <checksum in hex>" for each.
 * Built two ways, neither committed:
 *   - riscv32 Linux, run by QEMU's linux-user emulator (bench/engines.ts builds it into build/):
 *     no C library (Debian has none for riscv32), so _start and raw system calls are here;
 *   - the host's own, with its C library (test/bench-kernels.test.ts).
 */
#include "kernels.h"

#if defined(__riscv)
static long syscall3(long n, long a, long b, long c) {
  register long a0 __asm__("a0") = a;
  register long a1 __asm__("a1") = b;
  register long a2 __asm__("a2") = c;
  register long a7 __asm__("a7") = n;
  __asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a7) : "memory");
  return a0;
}
static void put(const char *s, uint32_t n) { syscall3(64 /* write */, 1, (long)s, (long)n); }
static int bench_main(int argc, char **argv);
/* Linux starts a program with sp at argc, argv[] right above it. */
__attribute__((used)) static void start_c(long *sp) {
  syscall3(93 /* exit */, bench_main((int)sp[0], (char **)(sp + 1)), 0, 0);
  for (;;) {
  }
}
__asm__(".text\n.globl _start\n_start:\n  mv a0, sp\n  call start_c\n");
#else
#include <unistd.h>
static void put(const char *s, uint32_t n) {
  if (write(1, s, n) != (long)n) _exit(3);
}
static int bench_main(int argc, char **argv);
int main(int argc, char **argv) { return bench_main(argc, argv); }
#endif

static int same(const char *a, const char *b) {
  while (*a != 0 && *a == *b) a++, b++;
  return *a == *b;
}

/* A decimal number, or -1 when `s` is not one. */
static long number(const char *s) {
  long v = 0;
  if (*s == 0) return -1;
  for (; *s != 0; s++) {
    if (*s < '0' || *s > '9' || v > 100000000) return -1;
    v = v * 10 + (*s - '0');
  }
  return v;
}

static void say(const char *s) {
  uint32_t n = 0;
  while (s[n] != 0) n++;
  put(s, n);
}

static int bench_main(int argc, char **argv) {
  uint32_t (*kernel)(uint32_t, uint32_t) = 0;
  if (argc >= 2 && same(argv[1], "compute")) kernel = compute_kernel;
  if (argc >= 2 && same(argv[1], "coremark")) kernel = coremark_kernel;
  if (argc >= 2 && same(argv[1], "classic")) kernel = classic_kernel;
  long passes = argc >= 3 ? number(argv[2]) : -1;
  long ids = argc >= 4 ? number(argv[3]) : 16;
  if (kernel == 0 || passes < 0 || ids < 0 || argc > 4) {
    say("usage: <program> compute|coremark|classic <passes> [<ids>]\n");
    return 2;
  }
  for (uint32_t id = 0; id < (uint32_t)ids; id++) {
    uint32_t sum = kernel(id, (uint32_t)passes);
    char line[24];
    uint32_t n = 0;
    /* "<id> <8 hex digits>\n" */
    char digits[10];
    uint32_t d = 0, v = id;
    do digits[d++] = (char)('0' + v % 10); while ((v /= 10) != 0);
    while (d > 0) line[n++] = digits[--d];
    line[n++] = ' ';
    for (int shift = 28; shift >= 0; shift -= 4) line[n++] = "0123456789abcdef"[(sum >> shift) & 15u];
    line[n++] = '\n';
    put(line, n);
  }
  return 0;
}
