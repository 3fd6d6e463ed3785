/*
 * printf and friends for the menic firmware SDK: one formatter that writes either to this
 * engine's console (MENIC_SYS_CONSOLE_TX, one byte per store) or into a caller's buffer.
 *
 * Supported (C99 7.19.6.1, a subset): conversions d i u x X o c s p %; flags '-' '0' '+' ' '
 * '#'; width and precision as digits or '*'; length modifiers hh h l (ints; l is 32-bit on
 * ilp32) and ll (64-bit). No floating point: engines have no F/D extension and firmware
 * prints counts and addresses. %p prints "0x" and eight hex digits, so addresses line up.
 * An unknown conversion is copied to the output as written.
 */
#include <menic.h>

/* Where the formatter's characters go. With buf == NULL they go to the console. */
struct sink {
  char *buf;
  size_t size; /* capacity of buf including the NUL */
  size_t len;  /* characters produced so far (also counts those that did not fit) */
};

static void emit(struct sink *o, char c) {
  if (o->buf == NULL) {
    menic_putc(c);
  } else if (o->len + 1 < o->size) {
    o->buf[o->len] = c;
  }
  o->len++;
}

static void emit_n(struct sink *o, char c, int n) {
  for (; n > 0; n--) emit(o, c);
}

enum {
  F_LEFT = 1,  /* '-': left-justify in the field */
  F_ZERO = 2,  /* '0': pad numbers with zeros after the sign/prefix */
  F_PLUS = 4,  /* '+': always print a sign for signed conversions */
  F_SPACE = 8, /* ' ': a space where a plus sign would go */
  F_ALT = 16,  /* '#': 0x/0X prefix for x/X, leading 0 for o */
};

/* Digits of v in `base`, least significant first, into out; returns how many. The 64-bit
 * path (one __udivdi3/__umoddi3 per digit) is taken only for values that need it, so plain
 * %d and %x use the hardware's 32-bit divu/remu. */
static int to_digits(uint64_t v, unsigned base, const char *set, char *out) {
  int n = 0;
  while (v >> 32) {
    out[n++] = set[v % base];
    v /= base;
  }
  uint32_t w = (uint32_t)v;
  do {
    out[n++] = set[w % base];
    w /= base;
  } while (w != 0);
  return n;
}

/* One integer conversion: sign or prefix, precision zeros, digits, padded to width. */
static void format_int(struct sink *o, uint64_t mag, bool negative, unsigned base, bool upper,
                       int flags, int width, int prec, bool is_signed, bool is_pointer) {
  const char *set = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  char digits[24]; /* 2^64 needs 22 octal digits */
  int nd = 0;
  /* C: precision 0 with value 0 prints no digits (except %#o, which prints "0"). */
  if (!(mag == 0 && prec == 0)) nd = to_digits(mag, base, set, digits);

  char prefix[2];
  int np = 0;
  if (is_signed) {
    if (negative) prefix[np++] = '-';
    else if (flags & F_PLUS) prefix[np++] = '+';
    else if (flags & F_SPACE) prefix[np++] = ' ';
  }
  if (is_pointer || ((flags & F_ALT) && base == 16 && mag != 0)) {
    prefix[np++] = '0';
    prefix[np++] = upper ? 'X' : 'x';
  }
  int zeros = prec > nd ? prec - nd : 0;
  /* %#o: the first digit printed must be 0 (digits[nd - 1] is the most significant). */
  if ((flags & F_ALT) && base == 8 && zeros == 0 && (nd == 0 || digits[nd - 1] != '0')) zeros = 1;
  int pad = width - np - zeros - nd;
  if (pad < 0) pad = 0;
  /* '0' pads between prefix and digits, but C ignores it with '-' or an explicit precision. */
  if ((flags & F_ZERO) && !(flags & F_LEFT) && prec < 0) {
    zeros += pad;
    pad = 0;
  }
  if (!(flags & F_LEFT)) emit_n(o, ' ', pad);
  for (int i = 0; i < np; i++) emit(o, prefix[i]);
  emit_n(o, '0', zeros);
  while (nd > 0) emit(o, digits[--nd]);
  if (flags & F_LEFT) emit_n(o, ' ', pad);
}

/* A string of known length, padded to width. */
static void format_str(struct sink *o, const char *s, int len, int flags, int width) {
  int pad = width > len ? width - len : 0;
  if (!(flags & F_LEFT)) emit_n(o, ' ', pad);
  for (int i = 0; i < len; i++) emit(o, s[i]);
  if (flags & F_LEFT) emit_n(o, ' ', pad);
}

static void format(struct sink *o, const char *fmt, va_list ap) {
  while (*fmt) {
    char c = *fmt++;
    if (c != '%') {
      emit(o, c);
      continue;
    }
    const char *spec = fmt - 1; /* for copying an unknown conversion through */

    int flags = 0;
    for (;; fmt++) {
      if (*fmt == '-') flags |= F_LEFT;
      else if (*fmt == '0') flags |= F_ZERO;
      else if (*fmt == '+') flags |= F_PLUS;
      else if (*fmt == ' ') flags |= F_SPACE;
      else if (*fmt == '#') flags |= F_ALT;
      else break;
    }

    int width = 0;
    if (*fmt == '*') {
      width = va_arg(ap, int);
      if (width < 0) { /* C: a negative '*' width is '-' with its magnitude */
        flags |= F_LEFT;
        width = -width;
      }
      fmt++;
    } else {
      while (*fmt >= '0' && *fmt <= '9') width = width * 10 + (*fmt++ - '0');
    }

    int prec = -1; /* none */
    if (*fmt == '.') {
      fmt++;
      prec = 0;
      if (*fmt == '*') {
        prec = va_arg(ap, int);
        if (prec < 0) prec = -1; /* C: a negative '*' precision is as if omitted */
        fmt++;
      } else {
        while (*fmt >= '0' && *fmt <= '9') prec = prec * 10 + (*fmt++ - '0');
      }
    }

    /* Length: 0 = int, 1 = long (32-bit here), 2 = long long. hh and h read an int (default
     * argument promotion) and truncate. */
    int length = 0, shortness = 0;
    for (;; fmt++) {
      if (*fmt == 'l') length++;
      else if (*fmt == 'h') shortness++;
      else break;
    }

    char conv = *fmt;
    if (conv == '\0') { /* '%' at the end of the string: print what we saw */
      while (spec < fmt) emit(o, *spec++);
      break;
    }
    fmt++;

    switch (conv) {
    case 'd':
    case 'i': {
      int64_t v = length >= 2 ? va_arg(ap, long long) : (int64_t)va_arg(ap, int);
      if (shortness == 1) v = (short)v;
      else if (shortness >= 2) v = (signed char)v;
      bool neg = v < 0;
      uint64_t mag = neg ? -(uint64_t)v : (uint64_t)v;
      format_int(o, mag, neg, 10, false, flags, width, prec, true, false);
      break;
    }
    case 'u':
    case 'x':
    case 'X':
    case 'o': {
      uint64_t v = length >= 2 ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned int);
      if (shortness == 1) v = (unsigned short)v;
      else if (shortness >= 2) v = (unsigned char)v;
      unsigned base = conv == 'u' ? 10 : conv == 'o' ? 8 : 16;
      format_int(o, v, false, base, conv == 'X', flags, width, prec, false, false);
      break;
    }
    case 'p': {
      uintptr_t v = (uintptr_t)va_arg(ap, void *);
      format_int(o, v, false, 16, false, flags & ~F_ZERO, width, 8, false, true);
      break;
    }
    case 'c': {
      char ch = (char)va_arg(ap, int);
      format_str(o, &ch, 1, flags, width);
      break;
    }
    case 's': {
      const char *s = va_arg(ap, const char *);
      if (s == NULL) s = "(null)";
      int len = 0;
      while (s[len] && (prec < 0 || len < prec)) len++;
      format_str(o, s, len, flags, width);
      break;
    }
    case '%':
      emit(o, '%');
      break;
    default:
      while (spec < fmt) emit(o, *spec++);
      break;
    }
  }
}

int vprintf(const char *fmt, va_list ap) {
  struct sink o = {NULL, 0, 0};
  format(&o, fmt, ap);
  return (int)o.len;
}

int printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vprintf(fmt, ap);
  va_end(ap);
  return n;
}

int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap) {
  /* A sink with buf == NULL means the console, so a NULL buffer (legal with size 0, to
   * measure) is pointed at a dummy that is never written. */
  char dummy;
  struct sink o = {buf != NULL ? buf : &dummy, buf != NULL ? size : 0, 0};
  format(&o, fmt, ap);
  if (size > 0 && buf != NULL) buf[o.len < size ? o.len : size - 1] = '\0';
  return (int)o.len;
}

int snprintf(char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  return n;
}

int putchar(int c) {
  menic_putc((char)c);
  return (unsigned char)c;
}

int puts(const char *s) {
  while (*s) menic_putc(*s++);
  menic_putc('\n');
  return 0;
}
