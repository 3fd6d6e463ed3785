/* hello: every engine greets on its own console and exits with code 0. */
#include <menic.h>

int main(void) {
  printf("hello from engine %u of %u\n", menic_hartid(), menic_num_engines());
  return 0;
}
