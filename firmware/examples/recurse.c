/*
 * recurse: a recursion far deeper than the stack, for the stack-guard example (docs/engine.md,
 * "Guards"). Each call pushes a frame; the stack grows down from its top (the SDK puts it below
 * the code, right above the NULL guard) into the guard, and the first store there traps:
 *     stack overflow on engine N (store to 0x3fc with sp 0x3f0, ...) at pc ... (depth+0x4, recurse.c:NN)
 * With the stack above the data, it would silently overwrite .bss, .data and then the code.
 */
#include <menic.h>

/* Counts down to 0; the volatile array keeps each frame real at -O2. */
int depth(int n) {
  volatile int frame[4];
  frame[0] = n; /* faults here when the stack reaches the guard */
  if (n == 0) return 0;
  return 1 + depth(n - 1) + (frame[0] - n);
}

int main(void) {
  printf("engine %u: recursing\n", menic_hartid());
  return depth(100000) == 100000 ? 0 : 1;
}
