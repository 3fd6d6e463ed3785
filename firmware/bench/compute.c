/* Compute-bound loop for `npm run bench -- engines`: ALU, multiply, SRAM loads and stores and
 * branches in the proportions of a firmware inner loop. menic-main.c runs it on an engine, the
 * number of passes over the buffer from the mailbox, so one image serves short and long runs;
 * hosted-main.c runs it under QEMU and on the host (kernels.h). */
#include "kernels.h"

#define WORDS 1024
static uint32_t buf[WORDS];

uint32_t compute_kernel(uint32_t id, uint32_t passes) {
  uint32_t acc = id + 1;
  for (uint32_t i = 0; i < WORDS; i++) buf[i] = i * 2654435761u;
  for (uint32_t p = 0; p < passes; p++) {
    for (uint32_t i = 0; i < WORDS; i++) {
      uint32_t v = buf[i];
      acc = acc * 1664525u + v + i; /* multiply, add */
      if (acc & 0x100) acc ^= v >> 3; /* data-dependent branch */
      buf[i] = acc;
    }
  }
  return acc;
}
