/*
 * batch.c - the SQL bert_classify_batch: bert-classify's batching
 * (libbert's bert_classify_batch), inside a backend.
 *
 * As apps/bert-classify.c: texts are tokenized and truncated to the model's
 * maximum length, taken in windows of WINDOW_BATCHES batches, sorted by
 * token count within a window (shortest first, ties in input order), and
 * run as packed batches of up to bert.batch_size rows (packed in input
 * order within a batch), so a batch holds sequences of similar length.
 * Scores then equal the one-row-at-a-time results to float rounding (1e-6).
 *
 * The engine is libbert's bert_classify_batch, called once per window.
 * Interrupts (statement_timeout, pg_cancel_backend) are checked through its
 * progress callback (after each text tokenized and each model run; the call
 * returns BERT_ECANCELED and CHECK_FOR_INTERRUPTS raises the interrupt out
 * here), and a batch is also cut at a number of tokens that keeps one
 * model run near BATCH_FLOPS floating-point operations (a few tenths of a
 * second on one core): 8192 tokens for the bundled models, 256 for a
 * BERT-base.  Everything here is palloc'd in the call's context, except the
 * batch's scratch, which is the session's.
 */
#include "bert_pg.h"

#include <stdlib.h>
#include <string.h>

#include "miscadmin.h"

#define WINDOW_BATCHES 8
#define BATCH_FLOPS 4e10
#define MIN_BATCH_TOKENS 256
#define MAX_BATCH_TOKENS 8192

/* Tokens per model run: BATCH_FLOPS over the model's work per token
 * (2 flops per weight of the Q, K, V, output and feed-forward matrices of
 * every layer), within [MIN_BATCH_TOKENS, MAX_BATCH_TOKENS]. */
static size_t batch_tokens(const bert_model *m)
{
    const bert_config *c = bert_model_config(m);
    double per_token = 2.0 * (double)c->layers * (double)c->hidden *
                       (4.0 * (double)c->hidden + 2.0 * (double)c->intermediate);
    double n = per_token > 0 ? BATCH_FLOPS / per_token : MAX_BATCH_TOKENS;
    if (n < MIN_BATCH_TOKENS)
        return MIN_BATCH_TOKENS;
    return n > MAX_BATCH_TOKENS ? MAX_BATCH_TOKENS : (size_t)n;
}

/* bert_classify_batch's progress callback: cancels the call when an
 * interrupt is pending, so that CHECK_FOR_INTERRUPTS raises it outside
 * libbert (no longjmp through the library). */
static int pending_interrupt(size_t done, size_t total, void *data)
{
    (void)done;
    (void)total;
    (void)data;
    return INTERRUPTS_PENDING_CONDITION() ? 1 : 0;
}

/* One bert_classify_batch call under the SIGBUS guard (a function of its
 * own, so that the caller's loop variables are not live across the
 * sigsetjmp).  The scratch of the call is the session's, so a jump out
 * of it leaks nothing. */
static int run_batch(bert_pg_model *pm, const char *const *texts,
                     const size_t *lens, size_t n,
                     const bert_classify_params *p,
                     bert_classify_result *res, float *scores, bert_error *err,
                     const char *fn)
{
    bert_pg_guard_arm(pm);
    if (sigsetjmp(bert_pg_guard_jmp, 1) != 0)
        bert_pg_guard_fail(pm, fn);
    int rc = bert_classify_batch(pm->s, texts, lens, NULL, NULL, n, p, res,
                                 NULL, scores, n * pm->n_labels, err);
    bert_pg_guard_leave();
    return rc;
}

void bert_pg_classify_many(bert_pg_model *pm, const char *const *texts,
                           const size_t *lens, size_t n, int *labels,
                           float *scores, const char *fn)
{
    size_t C = pm->n_labels, B = (size_t)bert_pg_batch_size;
    size_t W = B * WINDOW_BATCHES;
    if (W > n)
        W = n ? n : 1;
    bert_classify_params p = bert_classify_default_params();
    p.window.max_length = pm->max_len;
    p.batch.batch_size = B;
    p.batch.max_batch_tokens = batch_tokens(pm->m);
    p.batch.progress = pending_interrupt;

    /* per window: the non-NULL texts and their input indices */
    const char **wt = palloc(W * sizeof *wt);
    size_t *wl = palloc(W * sizeof *wl), *wi = palloc(W * sizeof *wi);
    bert_classify_result *res = palloc(W * sizeof *res);
    float *sc = palloc(W * C * sizeof *sc);

    for (size_t w0 = 0; w0 < n; w0 += W) {
        size_t nw = n - w0 < W ? n - w0 : W, nvalid = 0;
        CHECK_FOR_INTERRUPTS();
        for (size_t k = 0; k < nw; k++) {
            size_t i = w0 + k;
            labels[i] = -1;
            scores[i] = 0;
            if (!texts[i])
                continue;
            wt[nvalid] = texts[i];
            wl[nvalid] = lens[i];
            wi[nvalid++] = i;
        }
        bert_error err;
        memset(&err, 0, sizeof err);
        int rc = run_batch(pm, wt, wl, nvalid, &p, res, sc, &err, fn);
        if (rc == BERT_ECANCELED) {
            CHECK_FOR_INTERRUPTS();
            ereport(ERROR, (errcode(ERRCODE_QUERY_CANCELED),
                            errmsg("%s: canceled", fn)));
        }
        if (rc != BERT_OK)
            bert_pg_fail(rc, err.text, fn);
        /* the first failed input, as the error of the whole call (a text
         * the tokenizer refused names its input, 1-based) */
        for (size_t k = 0; k < nvalid; k++)
            if (res[k].status != BERT_OK)
                bert_pg_fail(res[k].status,
                             res[k].n_tokens
                                 ? res[k].error.text
                                 : psprintf("input %zu: %s", wi[k] + 1,
                                            res[k].error.text[0]
                                                ? res[k].error.text
                                                : bert_strerror(
                                                      res[k].status)),
                             fn);
        for (size_t k = 0; k < nvalid; k++) {
            labels[wi[k]] = res[k].label;
            scores[wi[k]] = sc[k * C + res[k].label];
        }
    }
}
