/* The runner behind menic/test.h: runs the image's MENIC_TESTs and prints the lines the host's
 * `menic fw test` reads. Linked only into images that call menic_test_run (--gc-sections). */
#include <menic.h>
#include <menic/test.h>

/* Bounds of .menic_tests (firmware/sdk/link.ld). */
extern const struct menic_test __menic_tests_start[], __menic_tests_end[];

static int failed_now;
static int current;

void menic_test_fail(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  failed_now = 1;
  printf("menic-test: fail %d %s:%d: ", current, file, line);
  vprintf(fmt, ap);
  putchar('\n');
  va_end(ap);
}

int menic_test_run(void) {
  int n = (int)(__menic_tests_end - __menic_tests_start), failed = 0;
  printf("menic-test: plan %d\n", n);
  for (int i = 0; i < n; i++) printf("menic-test: test %d %s\n", i + 1, __menic_tests_start[i].name);
  for (int i = 0; i < n; i++) {
    current = i + 1;
    failed_now = 0;
    printf("menic-test: begin %d %s\n", current, __menic_tests_start[i].name);
    __menic_tests_start[i].fn();
    printf("menic-test: end %d %s\n", current, failed_now ? "fail" : "pass");
    failed += failed_now;
  }
  printf("menic-test: done %d %d\n", n - failed, failed);
  return failed;
}
