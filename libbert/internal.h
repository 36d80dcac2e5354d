/*
 * libbert/internal.h - helpers shared by the library's .c files (never
 * installed).  Internal names shared across files use the bert__ prefix and
 * are hidden by -fvisibility=hidden.
 */
#ifndef LIBBERT_INTERNAL_H
#define LIBBERT_INTERNAL_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "libbert/bert_tokenizer.h"

/* Fills err (when non-NULL) with status and a printf-style message; returns
 * status so callers can write `return bert__err(err, BERT_EFORMAT, ...)`. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline int bert__err(bert_error *err, int status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->status = status;
        err->byte_offset = -1;
        vsnprintf(err->text, sizeof err->text, fmt, ap);
        va_end(ap);
    }
    return status;
}

/* a * b into *out; returns 0 on success, -1 on size_t overflow. */
static inline int bert__mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > (size_t)-1 / a)
        return -1;
    *out = a * b;
    return 0;
}

#endif
