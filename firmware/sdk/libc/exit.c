/* exit(): the end of every firmware program (crt0 calls it with main's return value). */
#include <menic.h>

void exit(int code) {
  /* The store stops this engine in state `exited` (docs/memory-map.md, SYS.EXIT); nothing
   * after it runs. The loop only tells the compiler that exit does not return; should it ever
   * run, wfi keeps it from burning cycles. */
  MENIC_REG32(MENIC_SYS_EXIT) = (uint32_t)code;
  for (;;) menic_wfi();
}
