/*
 * libbert/windows.h - one long text as overlapping windows of the model's
 * length, for every pipeline that reads more than max_length tokens
 * (bert_classify_text_ex, bert_token_logits, bert_classify_batch,
 * bert_tag_text, bert_tag_batch).
 *
 * A text's content tokens (no special tokens) are cut as Hugging Face
 * tokenizers cut overflowing tokens (Encoding::truncate with a stride):
 * chunks of W = max_length - 2 tokens starting at 0, W - stride,
 * 2 (W - stride), ..., the last one reaching the end (and maybe shorter).
 * Each window is [CLS] chunk [SEP].  The engine lays the windows out, runs
 * them through a session in groups, and helps map the results back; what a
 * result means (a mean of sequence logits, a row per token, entities) is
 * the caller's.
 */
#ifndef LIBBERT_WINDOWS_H
#define LIBBERT_WINDOWS_H

#include <stddef.h>
#include <stdint.h>

#include "libbert/model.h"

struct bert__windows {
    /* the plan (bert__windows_plan) */
    const int32_t *ids;     /* [n] content tokens, borrowed */
    size_t n;               /* N */
    int32_t cls, sep;       /* put around every chunk */
    size_t W, step;         /* chunk length, W - stride */
    size_t count;           /* windows */
    /* windows g0..g1 laid out back to back (bert__windows_fill) */
    size_t g0, g1;
    int32_t *buf;           /* [sum of window lengths] ids */
    size_t buf_cap;
    bert_input *in;         /* [g1 - g0] pointing into buf */
    size_t in_cap;
    float *logits;          /* bert__windows_run's rows: of one run, or of
                               every window with keep */
    size_t logits_cap;
};

/* An empty engine (all zero); NULL when out of memory. */
struct bert__windows *bert__windows_create(void);
/* NULL is a no-op. */
void bert__windows_free(struct bert__windows *w);

/* Plans the windows of the n content tokens ids (borrowed until the
 * engine's last use) for maxlen tokens per window (>= 3) overlapping by
 * stride tokens (< maxlen - 2; the caller checks both, with its own
 * message): one window when n <= maxlen - 2. */
void bert__windows_plan(struct bert__windows *w, const int32_t *ids,
                        size_t n, int32_t cls, int32_t sep, size_t maxlen,
                        size_t stride);

/* Content tokens [*start, *end) of window i. */
void bert__windows_span(const struct bert__windows *w, size_t i,
                        size_t *start, size_t *end);

/* Lays out windows [g0, g1) as [CLS] chunk [SEP] back to back in w->buf,
 * w->in[i - g0] their inputs (type ids NULL: all 0).  BERT_OK or
 * BERT_ENOMEM. */
int bert__windows_fill(struct bert__windows *w, size_t g0, size_t g1);

/* What bert__windows_run calls after each model run: windows [g0, g1)
 * laid out in w, their logits in `logits` (a row per window for a
 * sequence model, per token for a token model, in window order).  A
 * nonzero return (a status, err filled) stops the run. */
typedef int (*bert__windows_fn)(void *data, const struct bert__windows *w,
                                size_t g0, size_t g1, const float *logits,
                                bert_error *err);

/* Runs every window through s, `group` windows per model run, calling fn
 * (may be NULL) after each run.  group 1 where each window's rows must
 * equal the window run alone bit for bit; more saves runs.  With keep,
 * the rows of every window stay in w->logits in window order (for a caller
 * that merges them at the end: a few rows per window); else each run
 * reuses the rows of the one before (memory bounded by the group).
 * Returns BERT_OK, the status of a failed run, fn's status, or
 * BERT_ENOMEM, with err filled. */
int bert__windows_run(bert_session *s, struct bert__windows *w, size_t group,
                      int keep, bert__windows_fn fn, void *data,
                      bert_error *err);

/* Appends the windows laid out by the last bert__windows_fill to the
 * batch as sequences of text `item`, in window order (so their rows follow
 * each other in b->logits).  BERT_OK or BERT_ENOMEM. */
int bert__windows_add(const struct bert__windows *w, struct bert__batch *b,
                      size_t item);

/* ---- mapping back -------------------------------------------------------- */

/* acc[C] = the mean of nw >= 1 rows of C floats (rows[nw][C]), summed in
 * window order in float from 0, then divided by nw: a windowed text's
 * sequence logits.  One row is copied as it is. */
void bert__windows_mean(const float *rows, size_t nw, size_t C, float *acc);

/* The window whose row content token t takes: the one where t is farthest
 * from the window's edges (most context on both sides; ties: the earlier
 * window). */
size_t bert__windows_owner(const struct bert__windows *w, size_t t);

/* Token rows of windows [g0, g1) (logits as bert__windows_fn gets them)
 * into out[N + 2][C], the text with [CLS] and [SEP]: each content token
 * from its owner window, [CLS] from the first window and the final [SEP]
 * from the last. */
void bert__windows_token_rows(const struct bert__windows *w, size_t g0,
                              size_t g1, const float *logits, size_t C,
                              float *out);

#endif
