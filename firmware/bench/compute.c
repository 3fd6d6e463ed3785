/* Compute-bound loop for `npm run bench -- engines`: ALU, multiply, SRAM loads and stores and
 * branches in the proportions of a firmware inner loop. The host sends the number of passes
 * over the buffer through the mailbox, so one image serves short and long runs. */
#include <menic.h>

#define WORDS 1024
static uint32_t buf[WORDS];

int main(void) {
  uint32_t passes = menic_mbox_recv();
  uint32_t acc = menic_hartid() + 1;
  for (uint32_t i = 0; i < WORDS; i++) buf[i] = i * 2654435761u;
  for (uint32_t p = 0; p < passes; p++) {
    for (uint32_t i = 0; i < WORDS; i++) {
      uint32_t v = buf[i];
      acc = acc * 1664525u + v + i; /* multiply, add */
      if (acc & 0x100) acc ^= v >> 3; /* data-dependent branch */
      buf[i] = acc;
    }
  }
  menic_mbox_send(acc);
  return 0;
}
