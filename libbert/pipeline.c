/* pipeline.c - text in, scores out: tokenization, truncation or overlapping
 * windows, and the merge of window results (contracts in bert.h). */
#include <stdlib.h>
#include <string.h>

#include "libbert/internal.h"
#include "libbert/model.h"
#include "libbert/windows.h"

bert_window_params bert_window_default_params(void)
{
    bert_window_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.mode = BERT_LONG_TRUNCATE;
    return p;
}

bert_classify_params bert_classify_default_params(void)
{
    bert_classify_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.window = bert_window_default_params();
    p.function = BERT_FUNC_DEFAULT;
    p.batch = bert_batch_default_params();
    return p;
}

/* Resolves max_length and checks the stride.  Returns status. */
static int window_setup(const bert_model *m, const bert_window_params *p,
                        size_t *maxlen, bert_error *err)
{
    size_t ml = p->max_length;
    if (ml == 0 || ml > m->max_len)
        ml = m->max_len;
    if (ml < 3)
        return bert__err(err, BERT_EINVAL,
                         "max_length %zu leaves no room for text "
                         "between [CLS] and [SEP]",
                         ml);
    if (p->mode == BERT_LONG_WINDOWS && p->stride >= ml - 2)
        return bert__err(err, BERT_EINVAL,
                         "stride %zu must be smaller than max_length "
                         "- 2 = %zu (it is the overlap between "
                         "windows)",
                         p->stride, ml - 2);
    *maxlen = ml;
    return BERT_OK;
}

/* Tokenizes text (and pair) with m's tokenizer into enc: truncated to
 * maxlen, or whole when `whole`.  Returns status, err filled. */
static int tokenize(const bert_model *m, bert_encoding *enc, const char *text,
                    size_t len, const char *pair, size_t pair_len,
                    size_t maxlen, int whole, bert_error *err)
{
    if (!m->tok)
        return bert__err(err, BERT_EINVAL,
                         "the model was loaded without its tokenizer");
    bert_encode_params ep = bert_encode_default_params();
    ep.max_length = whole ? 0 : maxlen;
    int rc = bert_tokenizer_encode(m->tok, text, len, pair, pair_len, &ep, enc,
                                   err);
    if (rc != BERT_OK)
        return rc;
    if (enc->n == 0)
        return bert__err(err, BERT_EINVAL, "the text gave no tokens");
    return BERT_OK;
}

/* The session's window engine planned over enc, a whole single-text
 * encoding ([CLS] content [SEP]) longer than maxlen; NULL when out of
 * memory. */
static struct bert__windows *plan(bert_session *s, const bert_encoding *enc,
                                  size_t maxlen, size_t stride)
{
    if (!s->win && !(s->win = bert__windows_create()))
        return NULL;
    bert__windows_plan(s->win, enc->ids + 1, enc->n - 2, enc->ids[0],
                       enc->ids[enc->n - 1], maxlen, stride);
    return s->win;
}

static int ensure_enc(bert_session *s, bert_error *err)
{
    if (!s->enc && !(s->enc = bert_encoding_create()))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    return BERT_OK;
}

int bert_classify_text_ex(bert_session *s, const char *text, size_t len,
                          const char *pair, size_t pair_len,
                          const bert_classify_params *params, float *logits,
                          float *scores, size_t n, int *label,
                          size_t *n_windows, bert_error *err)
{
    if (!s)
        return bert__err(err, BERT_EINVAL, "session is NULL");
    bert_classify_params p;
    if (BERT__PARAMS(p, params, bert_classify_default_params, err) ||
        bert__params_nested(p.window.size, sizeof p.window,
                            "bert_classify_params.window", err))
        return BERT_EINVAL;
    const bert_model *m = s->m;
    size_t C = m->cfg.pub.num_labels, maxlen;
    int rc;
    if ((rc = bert__model_task(m, BERT_TASK_SEQUENCE, err)))
        return rc;
    if (!text)
        return bert__err(err, BERT_EINVAL, "text is NULL");
    if ((logits || scores) && n < C)
        return bert__err(err, BERT_ERANGE,
                         "output holds %zu values, the model has %zu "
                         "labels",
                         n, C);
    if ((rc = window_setup(m, &p.window, &maxlen, err)) ||
        (rc = ensure_enc(s, err)))
        return rc;
    int whole = p.window.mode == BERT_LONG_WINDOWS && !(pair && pair_len);
    if ((rc = tokenize(m, s->enc, text, len, pair, pair_len, maxlen, whole,
                       err)))
        return rc;
    const bert_encoding *enc = s->enc;
    if (!whole && enc->n > maxlen) /* never: the tokenizer truncated */
        return bert__err(err, BERT_EINVAL,
                         "%zu tokens for max_length %zu", enc->n,
                         maxlen);
    if (bert__grow(&s->acc, &s->acc_cap, C, sizeof *s->acc))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    float *acc = s->acc;
    size_t nw = 1;
    if (enc->n <= maxlen) {
        bert_input in = {enc->ids, enc->type_ids, enc->n};
        bert_outputs out = {acc, NULL, NULL};
        if ((rc = bert_session_run(s, &in, 1, &out, err)))
            return rc;
    } else {
        /* one window per run: the mean of exactly what each window gives
         * alone */
        struct bert__windows *w = plan(s, enc, maxlen, p.window.stride);
        if (!w)
            return bert__err(err, BERT_ENOMEM, "out of memory");
        if ((rc = bert__windows_run(s, w, 1, 1, NULL, NULL, err)))
            return rc;
        nw = w->count;
        bert__windows_mean(w->logits, nw, C, acc);
    }
    if (scores)
        bert_apply_function(m, p.function, acc, scores);
    if (logits)
        memcpy(logits, acc, C * sizeof *logits);
    if (label)
        *label = (int)bert__argmax(acc, C);
    if (n_windows)
        *n_windows = nw;
    return BERT_OK;
}

int bert_classify_text(bert_session *s, const char *text, size_t len,
                       const char *pair, size_t pair_len, float *scores,
                       size_t n_scores, int *label, bert_error *err)
{
    return bert_classify_text_ex(s, text, len, pair, pair_len, NULL, NULL,
                                 scores, n_scores, label, NULL, err);
}

/* The text's rows being filled by bert_token_logits. */
typedef struct token_out {
    float *rows;
    size_t C;
} token_out;

/* bert__windows_fn of bert_token_logits: the rows each window owns. */
static int token_rows(void *data, const struct bert__windows *w, size_t g0,
                      size_t g1, const float *logits, bert_error *err)
{
    const token_out *o = data;
    (void)err;
    bert__windows_token_rows(w, g0, g1, logits, o->C, o->rows);
    return BERT_OK;
}

int bert_token_logits(bert_session *s, const char *text, size_t len,
                      const bert_window_params *params, bert_encoding *enc,
                      float *logits, size_t n_logits, size_t *n_windows,
                      bert_error *err)
{
    if (!s)
        return bert__err(err, BERT_EINVAL, "session is NULL");
    bert_window_params p;
    if (BERT__PARAMS(p, params, bert_window_default_params, err))
        return BERT_EINVAL;
    const bert_model *m = s->m;
    size_t C = m->cfg.pub.num_labels, maxlen;
    int rc;
    if ((rc = bert__model_task(m, BERT_TASK_TOKEN, err)))
        return rc;
    if (!text || !enc)
        return bert__err(err, BERT_EINVAL, "text or enc is NULL");
    if ((rc = window_setup(m, &p, &maxlen, err)))
        return rc;
    int whole = p.mode == BERT_LONG_WINDOWS;
    if ((rc = tokenize(m, enc, text, len, NULL, 0, maxlen, whole, err)))
        return rc;
    if (n_logits < enc->n * C || !logits)
        return bert__err(err, BERT_ERANGE,
                         "logits holds %zu floats, %zu tokens x %zu "
                         "labels needed",
                         n_logits, enc->n, C);
    if (enc->n <= maxlen) {
        bert_input in = {enc->ids, enc->type_ids, enc->n};
        bert_outputs out = {logits, NULL, NULL};
        if ((rc = bert_session_run(s, &in, 1, &out, err)))
            return rc;
        if (n_windows)
            *n_windows = 1;
        return BERT_OK;
    }
    /* one window per run: each token's row is exactly what its window
     * gives alone */
    struct bert__windows *w = plan(s, enc, maxlen, p.stride);
    if (!w)
        return bert__err(err, BERT_ENOMEM, "out of memory");
    token_out o = {logits, C};
    if ((rc = bert__windows_run(s, w, 1, 0, token_rows, &o, err)))
        return rc;
    if (n_windows)
        *n_windows = w->count;
    return BERT_OK;
}

/* ---- batched pipelines --------------------------------------------------- */

bert_batch_params bert_batch_default_params(void)
{
    bert_batch_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.batch_size = 32;
    p.max_batch_tokens = 0;
    p.progress = NULL;
    p.progress_data = NULL;
    return p;
}

void bert__batch_free(struct bert__batch *b)
{
    if (!b)
        return;
    free(b->ids);
    free(b->tids);
    free(b->seq);
    free(b->ord);
    free(b->in);
    free(b->logits);
    free(b->run);
    free(b);
}

int bert__batch_add(struct bert__batch *b, size_t item, const int32_t *ids,
                     const int32_t *tids, size_t n)
{
    if (bert__grow(&b->ids, &b->tok_cap, b->ntok + n, sizeof *b->ids) ||
        bert__grow(&b->tids, &b->tids_cap, b->ntok + n, sizeof *b->tids))
        return BERT_ENOMEM;
    if (bert__grow(&b->seq, &b->seq_cap, b->nseq + 1, sizeof *b->seq))
        return BERT_ENOMEM;
    memcpy(b->ids + b->ntok, ids, n * sizeof *ids);
    if (tids)
        memcpy(b->tids + b->ntok, tids, n * sizeof *tids);
    else
        memset(b->tids + b->ntok, 0, n * sizeof *tids);
    bert__seq *q = &b->seq[b->nseq++];
    q->off = b->ntok;
    q->n = n;
    q->row = 0;
    q->item = item;
    q->status = BERT_OK;
    b->ntok += n;
    return BERT_OK;
}

static int cmp_size(const void *x, const void *y)
{
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    return i < j ? -1 : i > j;
}

/* Sorts the index array a[0..n) (in index order) by sequence length, ties
 * in index order: a stable bottom-up merge sort through tmp[n] (qsort has
 * no context argument for the lengths). */
static void sort_by_len(size_t *a, size_t n, const bert__seq *seq, size_t *tmp)
{
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n;
            size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = seq[a[j]].n < seq[a[i]].n ? a[j++] : a[i++];
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        memcpy(a, tmp, n * sizeof *a);
    }
}

int bert__batch_run(bert_session *s, struct bert__batch *b,
                    const bert_batch_params *bp, int token_rows, size_t C,
                    bert_error *err,
                    void (*fail)(void *, const bert__seq *,
                                 const bert_error *),
                    void *fail_data)
{
    size_t nseq = b->nseq, rows = 0;
    for (size_t i = 0; i < nseq; i++) {
        b->seq[i].row = rows;
        rows += token_rows ? b->seq[i].n : 1;
    }
    size_t B = bp->batch_size < nseq ? bp->batch_size : nseq;
    if (bert__grow(&b->ord, &b->ord_cap, 2 * nseq + 1, sizeof *b->ord) ||
        bert__grow(&b->in, &b->in_cap, B + 1, sizeof *b->in) ||
        bert__grow(&b->logits, &b->logits_cap, rows * C + 1, sizeof *b->logits))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    size_t *ord = b->ord, *tmp = b->ord + nseq;
    for (size_t i = 0; i < nseq; i++)
        ord[i] = i;
    sort_by_len(ord, nseq, b->seq, tmp);
    size_t maxtok = bp->max_batch_tokens;
    for (size_t b0 = 0; b0 < nseq;) {
        size_t nb = 0, bt = 0;
        while (b0 + nb < nseq && nb < B &&
               (nb == 0 || !maxtok || bt + b->seq[ord[b0 + nb]].n <= maxtok))
            bt += b->seq[ord[b0 + nb++]].n;
        size_t *run = ord + b0;
        /* packed in input order: the same sequences make the same packed
         * input whatever the sort brought them together */
        qsort(run, nb, sizeof *run, cmp_size);
        size_t run_rows = token_rows ? bt : nb;
        if (bert__grow(&b->run, &b->run_cap, run_rows * C + 1, sizeof *b->run))
            return bert__err(err, BERT_ENOMEM, "out of memory");
        for (size_t k = 0; k < nb; k++) {
            const bert__seq *q = &b->seq[run[k]];
            b->in[k].ids = b->ids + q->off;
            b->in[k].type_ids = b->tids + q->off;
            b->in[k].n = q->n;
        }
        bert_outputs o = {b->run, NULL, NULL};
        if (bert_session_run(s, b->in, nb, &o, NULL) == BERT_OK) {
            size_t r = 0;
            for (size_t k = 0; k < nb; k++) {
                const bert__seq *q = &b->seq[run[k]];
                size_t nr = token_rows ? q->n : 1;
                memcpy(b->logits + q->row * C, b->run + r * C,
                       nr * C * sizeof *b->run);
                r += nr;
            }
        } else {
            /* find the culprits: the sequences one at a time */
            for (size_t k = 0; k < nb; k++) {
                bert__seq *q = &b->seq[run[k]];
                bert_outputs o1 = {b->logits + q->row * C, NULL, NULL};
                bert_error e1;
                int rc = bert_session_run(s, &b->in[k], 1, &o1, &e1);
                if (rc != BERT_OK) {
                    q->status = rc;
                    fail(fail_data, q, &e1);
                }
            }
        }
        b0 += nb;
        if (bp->progress && bp->progress(b0, nseq, bp->progress_data))
            return bert__err(err, BERT_ECANCELED, "canceled after %zu of %zu "
                             "sequences", b0, nseq);
    }
    return BERT_OK;
}

static void classify_fail(void *data, const bert__seq *q,
                          const bert_error *e)
{
    bert_classify_result *r = (bert_classify_result *)data + q->item;
    if (r->status != BERT_OK)
        return; /* the first failed window tells */
    r->status = q->status;
    r->error = *e;
}

struct bert__batch *bert__batch_begin(bert_session *s)
{
    if (!s->batch)
        s->batch = calloc(1, sizeof *s->batch);
    if (s->batch) {
        s->batch->ntok = 0;
        s->batch->nseq = 0;
    }
    return s->batch;
}

int bert_classify_batch(bert_session *s, const char *const *texts,
                        const size_t *lens, const char *const *pairs,
                        const size_t *pair_lens, size_t n,
                        const bert_classify_params *params,
                        bert_classify_result *results, float *logits,
                        float *scores, size_t n_out, bert_error *err)
{
    if (!s)
        return bert__err(err, BERT_EINVAL, "session is NULL");
    bert_classify_params p;
    if (BERT__PARAMS(p, params, bert_classify_default_params, err) ||
        bert__params_nested(p.window.size, sizeof p.window,
                            "bert_classify_params.window", err) ||
        bert__params_nested(p.batch.size, sizeof p.batch,
                            "bert_classify_params.batch", err))
        return BERT_EINVAL;
    const bert_model *m = s->m;
    size_t C = m->cfg.pub.num_labels, maxlen, need;
    int rc;
    if ((rc = bert__model_task(m, BERT_TASK_SEQUENCE, err)))
        return rc;
    if (n == 0)
        return BERT_OK;
    if (!texts || !results)
        return bert__err(err, BERT_EINVAL, "%s is NULL",
                         !texts ? "texts" : "results");
    if (p.batch.batch_size < 1)
        return bert__err(err, BERT_EINVAL, "batch_size is 0");
    if ((logits || scores) && (bert__mul_size(n, C, &need) || n_out < need))
        return bert__err(err, BERT_ERANGE,
                         "output holds %zu floats, %zu texts x %zu labels "
                         "need more",
                         n_out, n, C);
    if (!m->tok)
        return bert__err(err, BERT_EINVAL,
                         "the model was loaded without its tokenizer");
    if ((rc = window_setup(m, &p.window, &maxlen, err)) ||
        (rc = ensure_enc(s, err)))
        return rc;
    struct bert__batch *b = bert__batch_begin(s);
    if (!b)
        return bert__err(err, BERT_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        bert_classify_result *r = &results[i];
        memset(r, 0, sizeof *r);
        r->status = BERT_OK;
        r->label = -1;
        r->error.byte_offset = -1;
        if (!texts[i]) {
            r->status = bert__err(&r->error, BERT_EINVAL, "text %zu is NULL",
                                  i);
            continue;
        }
        size_t len = lens ? lens[i] : strlen(texts[i]);
        const char *pair = pairs ? pairs[i] : NULL;
        size_t plen = pair ? (pair_lens ? pair_lens[i] : strlen(pair)) : 0;
        int whole = p.window.mode == BERT_LONG_WINDOWS && !(pair && plen);
        int r1 = tokenize(m, s->enc, texts[i], len, pair, plen, maxlen, whole,
                          &r->error);
        if (r1 != BERT_OK) {
            r->status = r1;
            continue;
        }
        r->n_tokens = s->enc->n;
        r->n_overflow = s->enc->n_overflow_first + s->enc->n_overflow_second;
        r->error.text[0] = '\0';
        r->error.status = BERT_OK;
        r->error.byte_offset = -1;
        /* the first sequence of item i: the window count tells how many */
        size_t first = b->nseq;
        if (s->enc->n <= maxlen) {
            r->n_windows = 1;
            rc = bert__batch_add(b, i, s->enc->ids, s->enc->type_ids,
                                 s->enc->n);
        } else {
            struct bert__windows *w = plan(s, s->enc, maxlen,
                                           p.window.stride);
            rc = BERT_ENOMEM;
            if (w && (rc = bert__windows_fill(w, 0, w->count)) == BERT_OK)
                rc = bert__windows_add(w, b, i);
            r->n_windows = w ? w->count : 0;
        }
        if (rc)
            return bert__err(err, rc, "out of memory");
        r->label = (int)first; /* its first sequence, until labelled */
        if (p.batch.progress &&
            p.batch.progress(0, 0, p.batch.progress_data))
            return bert__err(err, BERT_ECANCELED, "canceled after "
                             "tokenizing %zu of %zu texts", i + 1, n);
    }
    if ((rc = bert__batch_run(s, b, &p.batch, 0, C, err, classify_fail,
                              results)))
        return rc;
    if (bert__grow(&s->acc, &s->acc_cap, C, sizeof *s->acc))
        return bert__err(err, BERT_ENOMEM, "out of memory");
    float *acc = s->acc;
    for (size_t i = 0; i < n; i++) {
        bert_classify_result *r = &results[i];
        if (r->status != BERT_OK) {
            r->label = -1;
            if (logits)
                memset(logits + i * C, 0, C * sizeof *logits);
            if (scores)
                memset(scores + i * C, 0, C * sizeof *scores);
            continue;
        }
        size_t first = (size_t)r->label;
        /* the windows' rows follow each other, in window order */
        bert__windows_mean(b->logits + b->seq[first].row * C, r->n_windows,
                           C, acc);
        r->label = (int)bert__argmax(acc, C);
        if (scores)
            bert_apply_function(m, p.function, acc, scores + i * C);
        if (logits)
            memcpy(logits + i * C, acc, C * sizeof *logits);
    }
    return BERT_OK;
}
