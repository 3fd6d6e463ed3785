/* The kernels of `npm run bench -- engines`: portable C (stdint only, no library calls, no
 * platform), so one source runs on menic (menic-main.c), under QEMU linux-user and natively on
 * the host (hosted-main.c). Each kernel starts from a state seeded by `id` (the engine's hart
 * id), runs `passes` passes over it and returns a checksum of the work; it resets all the state
 * it uses, so one process may run it for several ids in turn. Each lives in a translation unit
 * of its own, compiled with the same flags for every riscv32 build (host/fw/build.ts
 * FIRMWARE_CODEGEN_FLAGS, -O2), so its object code is the same whichever main calls it. */
#ifndef MENIC_BENCH_KERNELS_H
#define MENIC_BENCH_KERNELS_H
#include <stdint.h>

/* compute.c: a multiply-add-branch loop over a 4 KiB buffer (a firmware inner loop). */
uint32_t compute_kernel(uint32_t id, uint32_t passes);
/* coremark.c: linked-list walks and a sort, small matrix arithmetic, a token-scanning state
 * machine and CRC-16 over their results (the kinds of work of EEMBC's CoreMark). */
uint32_t coremark_kernel(uint32_t id, uint32_t passes);
/* classic.c: a sieve, a matrix product, an insertion sort and an FNV hash (a compute-bound check
 * the translator was not measured with while it was written). */
uint32_t classic_kernel(uint32_t id, uint32_t passes);

#endif
