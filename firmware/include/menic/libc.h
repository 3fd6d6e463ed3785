/*
 * The small C library of the menic firmware SDK (firmware/sdk/libc/). There is no hosted C
 * library on a message engine: output goes to this engine's console register, and exit()
 * writes the exit register. Everything here is freestanding, reentrant and allocation-free.
 */
#ifndef MENIC_LIBC_H
#define MENIC_LIBC_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* ---- program end */

/* Stop this engine in state `exited` with exit code `code` (MENIC_SYS_EXIT). Returning from
 * main() calls this with main's return value. */
void exit(int code) __attribute__((noreturn));

/* ---- console output (MENIC_SYS_CONSOLE_TX of this engine)
 * Formats: %d %i %u %x %X %o %s %c %p %%, flags '-' (left-justify) and '0' (zero-pad), a
 * decimal or '*' width, a precision for strings (%.5s, %.*s), and the length modifiers
 * l (32-bit on ilp32, accepted for portability) and ll (64-bit), e.g. %llu for mtime. There
 * is no floating point. The return value is the number of characters produced. */
int printf(const char *fmt, ...) __attribute__((format(__printf__, 1, 2)));
int vprintf(const char *fmt, va_list ap) __attribute__((format(__printf__, 1, 0)));

/* As printf, into buf; writes at most size bytes including the terminating NUL and returns
 * the length the full output would have had (C99 7.19.6.5). */
int snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(__printf__, 3, 4)));
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
    __attribute__((format(__printf__, 3, 0)));

/* Write the character c; returns c as an unsigned char. */
int putchar(int c);
/* Write s and a newline; returns a non-negative value. */
int puts(const char *s);

/* ---- memory and strings (C99 7.21); memmove handles overlap, memcpy must not overlap */
void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);

/* ---- 64-bit division helpers. RV32IM divides 32-bit values only; clang calls these for
 * 64-bit / and %. Debian ships no riscv32 compiler-rt, so the SDK provides them. Division by
 * zero gives what the RISC-V DIV/REM instructions give (quotient all ones, remainder the
 * dividend); INT64_MIN / -1 gives INT64_MIN, remainder 0 (unprivileged spec, table 7.1). */
uint64_t __udivdi3(uint64_t a, uint64_t b);
uint64_t __umoddi3(uint64_t a, uint64_t b);
int64_t __divdi3(int64_t a, int64_t b);
int64_t __moddi3(int64_t a, int64_t b);

#endif
