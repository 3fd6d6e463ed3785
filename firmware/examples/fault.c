/*
 * fault: a load from an unmapped address, for tests of the `faulted` engine state. The SDK
 * installs no trap handler (mtvec = 0), so the engine stops with mcause = 5 (load access
 * fault) and mtval = 0x0f000000, an address between the SRAM window and the MMIO window
 * (docs/memory-map.md). The other engines are not affected.
 */
#include <menic.h>

#define UNMAPPED 0x0f000000u

int main(void) {
  printf("engine %u: loading from %p\n", menic_hartid(), (void *)UNMAPPED);
  uint32_t v = MENIC_REG32(UNMAPPED); /* traps here */
  printf("engine %u: not reached (read %u)\n", menic_hartid(), v);
  return 2;
}
