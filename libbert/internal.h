/*
 * libbert/internal.h - helpers shared by the library's .c files (never
 * installed).  Internal names shared across files use the bert__ prefix and
 * are hidden by -fvisibility=hidden.
 */
#ifndef LIBBERT_INTERNAL_H
#define LIBBERT_INTERNAL_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/bert_tokenizer.h"

/* Fills err (when non-NULL) with status, byte_offset and a vprintf-style
 * message; returns status.  The one body of every error report:
 * bert__err below and the tokenizer's bert__set_error are its printf-style
 * faces. */
static inline int bert__verr(bert_error *err, int status,
                             long long byte_offset, const char *fmt,
                             va_list ap)
{
    if (err) {
        err->status = status;
        err->byte_offset = byte_offset;
        vsnprintf(err->text, sizeof err->text, fmt, ap);
    }
    return status;
}

/* Fills err (when non-NULL) with status and a printf-style message (no
 * byte offset: -1); returns status so callers can write
 * `return bert__err(err, BERT_EFORMAT, ...)`. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline int bert__err(bert_error *err, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bert__verr(err, status, -1, fmt, ap);
    va_end(ap);
    return status;
}

/* Reads a caller's parameter struct (docs/abi.md).  *out holds the
 * defaults (its size field this library's `size`); params NULL keeps them,
 * else the first params->size bytes after the size field replace them: all
 * of the struct for a caller built against these headers, the fields it
 * knows for one built against an older release (newer fields keep their
 * defaults).  Returns 0, or BERT_EINVAL with err filled (naming the struct)
 * when params->size is below min_size (0: not from *_default_params()) or
 * above `size` (headers newer than this library). */
static inline int bert__params_read(void *out, size_t size,
                                    const void *params, size_t min_size,
                                    const char *name, bert_error *err)
{
    size_t n;
    if (!params)
        return 0;
    memcpy(&n, params, sizeof n);
    if (n < min_size || n > size || n < sizeof n)
        return bert__err(err, BERT_EINVAL,
                         "params->size %zu is not one this library knows "
                         "(%s() gives %zu)%s",
                         n, name, size,
                         n == 0 ? ": start from the struct's "
                                  "*_default_params()"
                         : n > size ? ": the program was built against "
                                      "newer headers than this library"
                                    : "");
    memcpy((char *)out + sizeof n, (const char *)params + sizeof n,
           n - sizeof n);
    return 0;
}

/* `p = def_fn()` and bert__params_read of params into it, for the first
 * release with a size field (min_size = today's size).  Evaluates to 0 or
 * BERT_EINVAL. */
#define BERT__PARAMS(p, params, def_fn, err)                                   \
    ((p) = def_fn(),                                                           \
     bert__params_read(&(p), sizeof(p), (params), sizeof(p), #def_fn, (err)))

/* A params struct nested in another (frozen, docs/abi.md): its size must be
 * exactly `want`.  Returns 0 or BERT_EINVAL with err filled. */
static inline int bert__params_nested(size_t got, size_t want,
                                      const char *name, bert_error *err)
{
    if (got == want)
        return 0;
    return bert__err(err, BERT_EINVAL,
                     "%s.size is %zu, not %zu: start from the default "
                     "params",
                     name, got, want);
}

/* a * b into *out; returns 0 on success, -1 on size_t overflow. */
static inline int bert__mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > (size_t)-1 / a)
        return -1;
    *out = a * b;
    return 0;
}

/* Hugging Face's token-classification rule (gather_pre_entities) for
 * whether a token continues the word before it: tok is its vocabulary
 * string, [s, e) the code points and bs the first byte it covers in text
 * (len bytes), byte_level 1 for byte-level BPE, is_unk 1 for the unknown
 * token.  The tagger's aggregation and the trainer's entity scores
 * (evaluate.c) both use it, so that both find the same words.  tagger.c. */
int bert__tag_is_subword(const char *tok, const char *text, size_t len,
                         int64_t s, int64_t e, int64_t bs, int byte_level,
                         int is_unk);

/* Index of the largest of v[0..n) (n >= 1), the first on ties: the label
 * of a row of logits or probabilities, as numpy's argmax. */
static inline size_t bert__argmax(const float *v, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

/* y = softmax(x) over n >= 1 values as the Hugging Face pipelines compute
 * it: exp(x - max) in float, summed in double; the sum divides in double
 * (the text-classification pipeline's scores) or, with float_div, in
 * float (numpy float32, as the token-classification pipeline's).  y may
 * be x. */
static inline void bert__softmax_scores(float *y, const float *x, size_t n,
                                        int float_div)
{
    float mx = x[bert__argmax(x, n)];
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        y[i] = expf(x[i] - mx);
        sum += y[i];
    }
    float fs = (float)sum;
    for (size_t i = 0; i < n; i++)
        y[i] = float_div ? y[i] / fs : (float)(y[i] / sum);
}

/* Makes the array *pp (of *cap elements of el bytes) hold at least `need`
 * elements, doubling its capacity (from 16) so that appending one element
 * at a time stays linear.  Returns BERT_OK, or BERT_ENOMEM with the array
 * and *cap unchanged.  pp is a pointer to any object pointer. */
static inline int bert__grow(void *pp, size_t *cap, size_t need, size_t el)
{
    void **p = (void **)pp;
    if (need <= *cap)
        return BERT_OK;
    size_t nc = *cap ? *cap : 16, bytes;
    while (nc < need) {
        if (nc > (size_t)-1 / 2)
            return BERT_ENOMEM;
        nc *= 2;
    }
    if (bert__mul_size(nc, el, &bytes))
        return BERT_ENOMEM;
    void *q = realloc(*p, bytes);
    if (!q)
        return BERT_ENOMEM;
    *p = q;
    *cap = nc;
    return BERT_OK;
}

#endif
