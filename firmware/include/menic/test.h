/*
 * menic/test.h: firmware unit tests, run by `menic fw test <elf|dir>` (host/fw/test.ts), which
 * writes TAP or JUnit XML for CI.
 *
 *     #include <menic.h>
 *     #include <menic/test.h>
 *
 *     MENIC_TEST(adds) {
 *       MENIC_ASSERT_EQ(2 + 2, 4);
 *       MENIC_ASSERT(menic_hartid() == 0);
 *     }
 *
 *     int main(void) { return menic_test_run(); }
 *
 * Each MENIC_TEST puts its name and function in the section .menic_tests (firmware/sdk/link.ld
 * collects them); menic_test_run() runs them in link order on this engine and prints one
 * line per event on the console, which the host reads:
 *     menic-test: plan <n>
 *     menic-test: test <i> <name>              (for each test, before any runs)
 *     menic-test: begin <i> <name>
 *     menic-test: fail <i> <file>:<line>: <message>
 *     menic-test: end <i> <pass|fail>
 *     menic-test: done <passed> <failed>
 * A failed assertion ends its test (the macros return from the test function, so use them in
 * the test function itself); a fault ends the run, and the host reports the test that was
 * running with the fault's location. menic_test_run() returns the number of failed tests
 * (0 = success), which main returns as the exit code.
 */
#ifndef MENIC_TEST_H
#define MENIC_TEST_H

#include <stdint.h>

struct menic_test {
  const char *name;
  void (*fn)(void);
};

/* Called by the assertion macros: records the failure of the running test and prints it. */
void menic_test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(__printf__, 3, 4)));
/* Runs every MENIC_TEST of the image; returns how many failed. */
int menic_test_run(void);

#define MENIC_TEST(name)                                                                   \
  static void menic_test_fn_##name(void);                                                  \
  __attribute__((used, section(".menic_tests"))) static const struct menic_test           \
      menic_test_entry_##name = {#name, menic_test_fn_##name};                             \
  static void menic_test_fn_##name(void)

#define MENIC_ASSERT(cond)                                                                 \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      menic_test_fail(__FILE__, __LINE__, "assertion failed: %s", #cond);                  \
      return;                                                                              \
    }                                                                                      \
  } while (0)

/* Integer equality (both sides as signed 64-bit): the message shows both values. */
#define MENIC_ASSERT_EQ(actual, expected)                                                  \
  do {                                                                                     \
    int64_t menic_a_ = (int64_t)(actual), menic_e_ = (int64_t)(expected);                 \
    if (menic_a_ != menic_e_) {                                                            \
      menic_test_fail(__FILE__, __LINE__, "%s == %s: got %lld, want %lld", #actual,        \
                      #expected, (long long)menic_a_, (long long)menic_e_);                \
      return;                                                                              \
    }                                                                                      \
  } while (0)

#endif
