/*
 * batch.c - bert_classify_batch's engine: bert-classify's batching, inside
 * a backend.
 *
 * As apps/bert-classify.c: texts are tokenized and truncated to the model's
 * maximum length, taken in windows of WINDOW_BATCHES batches, sorted by
 * token count within a window (shortest first, ties in input order), and
 * run as packed batches of up to bert.batch_size rows (packed in input
 * order within a batch), so a batch holds sequences of similar length.
 * Scores then equal the one-row-at-a-time results to float rounding (1e-6).
 *
 * Interrupts (statement_timeout, pg_cancel_backend) are checked between
 * texts while tokenizing and between batches, and libbert has no cancel
 * callback, so a batch is also cut at a number of tokens that keeps one
 * model run near BATCH_FLOPS floating-point operations (a few tenths of a
 * second on one core): 8192 tokens for the bundled models, 256 for a
 * BERT-base.  Everything here is palloc'd in the call's context.
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

typedef struct by_len {
    size_t n, i;    /* tokens, index in the window */
} by_len;

static int cmp_len(const void *x, const void *y)
{
    const by_len *p = x, *q = y;
    if (p->n != q->n)
        return p->n < q->n ? -1 : 1;
    return p->i < q->i ? -1 : p->i > q->i;
}

static int cmp_index(const void *x, const void *y)
{
    const by_len *p = x, *q = y;
    return p->i < q->i ? -1 : p->i > q->i;
}

/* One packed model run, under the SIGBUS guard (a function of its own, so
 * that the caller's loop variables are not live across the sigsetjmp). */
static void run_batch(bert_pg_model *pm, const bert_input *in, size_t nb,
                      float *logits, const char *fn)
{
    bert_outputs o = {logits, NULL, NULL};
    bert_pg_guard_arm(pm);
    if (sigsetjmp(bert_pg_guard_jmp, 1) != 0)
        bert_pg_guard_fail(pm, fn);
    int rc = bert_session_run(pm->s, in, nb, &o);
    bert_pg_guard_leave();
    if (rc != BERT_OK)
        bert_pg_fail(pm, rc, fn);
}

void bert_pg_classify_many(bert_pg_model *pm, const char *const *texts,
                           const size_t *lens, size_t n, int *labels,
                           float *scores, const char *fn)
{
    const bert_tokenizer *tok = bert_model_tokenizer(pm->m);
    bert_function f = bert_model_function(pm->m);
    size_t C = pm->n_labels, B = (size_t)bert_pg_batch_size;
    size_t max_tokens = batch_tokens(pm->m);
    size_t W = B * WINDOW_BATCHES;
    if (W > n)
        W = n ? n : 1;
    bert_encode_params ep = bert_encode_default_params();
    ep.max_length = pm->max_len;

    /* per window: token offsets/counts of its rows, their ids back to back */
    size_t *off = palloc(W * sizeof *off), *cnt = palloc(W * sizeof *cnt);
    by_len *ord = palloc(W * sizeof *ord);
    size_t ids_cap = W * 32;
    int32_t *ids = palloc(ids_cap * sizeof *ids);
    int32_t *tids = palloc(ids_cap * sizeof *tids);
    bert_input *in = palloc(B * sizeof *in);
    float *logits = palloc(B * C * sizeof *logits);

    for (size_t w0 = 0; w0 < n; w0 += W) {
        size_t nw = n - w0 < W ? n - w0 : W, nvalid = 0, ntok = 0;
        CHECK_FOR_INTERRUPTS();
        for (size_t k = 0; k < nw; k++) {
            size_t i = w0 + k;
            labels[i] = -1;
            scores[i] = 0;
            if (!texts[i])
                continue;
            CHECK_FOR_INTERRUPTS(); /* long texts take a while to tokenize */
            bert_error err;
            memset(&err, 0, sizeof err);
            int rc = bert_tokenizer_encode(tok, texts[i], lens[i], NULL, 0,
                                           &ep, pm->enc, &err);
            if (rc != BERT_OK)
                ereport(ERROR,
                        (errcode(rc == BERT_EUTF8
                                     ? ERRCODE_CHARACTER_NOT_IN_REPERTOIRE
                                     : ERRCODE_EXTERNAL_ROUTINE_EXCEPTION),
                         errmsg("%s: input %zu: %s", fn, i + 1,
                                err.text[0] ? err.text : bert_strerror(rc))));
            size_t m = pm->enc->n;
            if (ntok + m > ids_cap) {
                while (ntok + m > ids_cap)
                    ids_cap *= 2;
                ids = repalloc(ids, ids_cap * sizeof *ids);
                tids = repalloc(tids, ids_cap * sizeof *tids);
            }
            memcpy(ids + ntok, pm->enc->ids, m * sizeof *ids);
            memcpy(tids + ntok, pm->enc->type_ids, m * sizeof *tids);
            off[k] = ntok;
            cnt[k] = m;
            ntok += m;
            ord[nvalid].n = m;
            ord[nvalid].i = k;
            nvalid++;
        }
        qsort(ord, nvalid, sizeof *ord, cmp_len);
        for (size_t b0 = 0; b0 < nvalid;) {
            size_t nb = 0, bt = 0;
            while (b0 + nb < nvalid && nb < B &&
                   (nb == 0 || bt + ord[b0 + nb].n <= max_tokens))
                bt += ord[b0 + nb++].n;
            by_len *b = ord + b0;
            qsort(b, nb, sizeof *b, cmp_index);
            for (size_t k = 0; k < nb; k++) {
                in[k].ids = ids + off[b[k].i];
                in[k].type_ids = tids + off[b[k].i];
                in[k].n = cnt[b[k].i];
            }
            CHECK_FOR_INTERRUPTS();
            run_batch(pm, in, nb, logits, fn);
            for (size_t k = 0; k < nb; k++) {
                float *lg = logits + k * C;
                size_t i = w0 + b[k].i;
                int best = 0;
                for (size_t c = 1; c < C; c++)
                    if (lg[c] > lg[best])
                        best = (int)c;
                bert_apply_function(pm->m, f, lg, lg);
                labels[i] = best;
                scores[i] = lg[best];
            }
            b0 += nb;
        }
    }
}
