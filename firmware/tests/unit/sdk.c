/*
 * Unit tests of the SDK's libc, run in CI by `menic fw test firmware/tests/unit` (they also
 * show menic/test.h at work). One test fails on purpose when built with -DMENIC_TEST_DEMO_FAIL,
 * for the runner's own tests (test/fw-test.test.ts).
 */
#include <menic.h>
#include <menic/test.h>

MENIC_TEST(snprintf_formats) {
  char buf[32];
  MENIC_ASSERT_EQ(snprintf(buf, sizeof buf, "%d|%5u|%-3x|%s", -42, 7u, 0xau, "ok"), 16);
  MENIC_ASSERT(strcmp(buf, "-42|    7|a  |ok") == 0);
}

MENIC_TEST(snprintf_truncates) {
  char buf[4];
  MENIC_ASSERT_EQ(snprintf(buf, sizeof buf, "%s", "abcdef"), 6);
  MENIC_ASSERT(strcmp(buf, "abc") == 0);
}

MENIC_TEST(memmove_overlaps) {
  char s[8] = "abcdef";
  memmove(s + 1, s, 5);
  MENIC_ASSERT(memcmp(s, "aabcde", 6) == 0);
}

MENIC_TEST(divides_64_bit) {
  volatile uint64_t a = 0x123456789abcdefull, b = 1000003;
  MENIC_ASSERT_EQ(a / b, 81985529216486895ull / 1000003);
  MENIC_ASSERT_EQ(a % b, 81985529216486895ull % 1000003);
}

#ifdef MENIC_TEST_DEMO_FAIL
MENIC_TEST(demo_fails) {
  MENIC_ASSERT_EQ(1 + 1, 3);
}

MENIC_TEST(demo_faults) {
  volatile int *p = 0;
  MENIC_ASSERT_EQ(*p, 0);
}
#endif

int main(void) { return menic_test_run(); }
