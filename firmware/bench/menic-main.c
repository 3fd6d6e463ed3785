/* The benchmark kernels on an engine (kernels.h): the host sends the number of passes through
 * the mailbox, the engine runs kernel KERNEL (a -D of host/fw/examples.ts) seeded by its hart id
 * and sends the checksum back. */
#include <menic.h>
#include "kernels.h"

int main(void) {
  uint32_t passes = menic_mbox_recv();
  menic_mbox_send(KERNEL(menic_hartid(), passes));
  return 0;
}
