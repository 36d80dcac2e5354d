/* pipeline.c - text in, scores out: tokenization, truncation or overlapping
 * windows, and the merge of window results (contracts in bert.h). */
#include <stdlib.h>
#include <string.h>

#include "libbert/internal.h"
#include "libbert/model.h"

bert_window_params bert_window_default_params(void)
{
    bert_window_params p;
    memset(&p, 0, sizeof p);
    p.mode = BERT_LONG_TRUNCATE;
    return p;
}

bert_classify_params bert_classify_default_params(void)
{
    bert_classify_params p;
    memset(&p, 0, sizeof p);
    p.window = bert_window_default_params();
    p.function = BERT_FUNC_DEFAULT;
    return p;
}

/* Grows the window scratch to hold n tokens and nl logits. */
static int win_reserve(bert_session *s, size_t n, size_t nl)
{
    if (n > s->win_cap) {
        int32_t *a = realloc(s->win_ids, n * sizeof *a);
        if (!a)
            return BERT_ENOMEM;
        s->win_ids = a;
        int32_t *b = realloc(s->win_types, n * sizeof *b);
        if (!b)
            return BERT_ENOMEM;
        s->win_types = b;
        s->win_cap = n;
    }
    if (nl > s->win_logits_cap) {
        float *l = realloc(s->win_logits, nl * sizeof *l);
        if (!l)
            return BERT_ENOMEM;
        s->win_logits = l;
        s->win_logits_cap = nl;
    }
    return BERT_OK;
}

/* Resolves max_length and checks the stride.  Returns status. */
static int window_setup(bert_session *s, const bert_window_params *p,
                        size_t *maxlen)
{
    size_t ml = p->max_length;
    if (ml == 0 || ml > s->m->max_len)
        ml = s->m->max_len;
    if (ml < 3)
        return bert__session_fail(s, BERT_EINVAL,
                                  "max_length %zu leaves no room for text "
                                  "between [CLS] and [SEP]",
                                  ml);
    if (p->mode == BERT_LONG_WINDOWS && p->stride >= ml - 2)
        return bert__session_fail(s, BERT_EINVAL,
                                  "stride %zu must be smaller than max_length "
                                  "- 2 = %zu (it is the overlap between "
                                  "windows)",
                                  p->stride, ml - 2);
    *maxlen = ml;
    return BERT_OK;
}

/* Tokenizes into enc: truncated to maxlen, or whole when `whole`. */
static int tokenize(bert_session *s, bert_encoding *enc, const char *text,
                    size_t len, const char *pair, size_t pair_len,
                    size_t maxlen, int whole)
{
    const bert_tokenizer *tok = s->m->tok;
    if (!tok)
        return bert__session_fail(s, BERT_EINVAL,
                                  "the model was loaded without its "
                                  "tokenizer");
    bert_encode_params ep = bert_encode_default_params();
    ep.max_length = whole ? 0 : maxlen;
    bert_error err;
    int rc = bert_tokenizer_encode(tok, text, len, pair, pair_len, &ep, enc,
                                   &err);
    if (rc != BERT_OK)
        return bert__session_fail(s, rc, "%s", err.text);
    if (enc->n == 0)
        return bert__session_fail(s, BERT_EINVAL, "the text gave no tokens");
    return BERT_OK;
}

/* Window w of a whole single-text encoding of n tokens ([CLS] c... [SEP]):
 * content chunk [start, end) of the n - 2 content tokens. */
static void window_span(size_t n, size_t W, size_t stride, size_t w,
                        size_t *start, size_t *end)
{
    size_t N = n - 2, step = W - stride;
    *start = w * step;
    *end = *start + W < N ? *start + W : N;
}

/* The window whose row content token i takes: the one where i is farthest
 * from the window's edges (ties: the earlier window). */
static size_t best_window(size_t n, size_t W, size_t stride, size_t nw,
                          size_t i)
{
    size_t step = W - stride;
    size_t lo = i >= W ? (i - W) / step + 1 : 0, hi = i / step;
    size_t best = lo, bestd = 0;
    int found = 0;
    if (hi > nw - 1)
        hi = nw - 1;
    for (size_t w = lo; w <= hi; w++) {
        size_t a, b;
        window_span(n, W, stride, w, &a, &b);
        if (i < a || i >= b)
            continue;
        size_t d = i - a < b - 1 - i ? i - a : b - 1 - i;
        if (!found || d > bestd) {
            best = w;
            bestd = d;
            found = 1;
        }
    }
    return best;
}

static size_t window_count(size_t n, size_t W, size_t stride)
{
    size_t N = n - 2;
    if (N <= W)
        return 1;
    size_t step = W - stride;
    return 1 + (N - W + step - 1) / step;
}

/* Runs window w into s->win_logits; returns status. */
static int run_window(bert_session *s, const bert_encoding *enc, size_t W,
                      size_t stride, size_t w, size_t *a, size_t *b,
                      float *logits)
{
    window_span(enc->n, W, stride, w, a, b);
    size_t k = 0;
    s->win_ids[k] = enc->ids[0];
    s->win_types[k++] = 0;
    for (size_t i = *a; i < *b; i++) {
        s->win_ids[k] = enc->ids[1 + i];
        s->win_types[k++] = 0;
    }
    s->win_ids[k] = enc->ids[enc->n - 1];
    s->win_types[k++] = 0;
    bert_input in = {s->win_ids, s->win_types, k};
    bert_outputs out = {logits, NULL, NULL};
    return bert_session_run(s, &in, 1, &out);
}

static int ensure_enc(bert_session *s)
{
    if (!s->enc && !(s->enc = bert_encoding_create()))
        return bert__session_fail(s, BERT_ENOMEM, "out of memory");
    return BERT_OK;
}

int bert_classify_text_ex(bert_session *s, const char *text, size_t len,
                          const char *pair, size_t pair_len,
                          const bert_classify_params *params, float *logits,
                          float *scores, size_t n, int *label,
                          size_t *n_windows)
{
    if (!s)
        return BERT_EINVAL;
    s->errmsg[0] = '\0';
    bert_classify_params p = params ? *params : bert_classify_default_params();
    const bert_model *m = s->m;
    size_t C = m->cfg.pub.num_labels, maxlen;
    int rc;
    if (m->cfg.pub.task != BERT_TASK_SEQUENCE)
        return bert__session_fail(s, BERT_EINVAL,
                                  "%s is not a sequence-classification model",
                                  m->cfg.architecture);
    if (!text)
        return bert__session_fail(s, BERT_EINVAL, "text is NULL");
    if ((logits || scores) && n < C)
        return bert__session_fail(s, BERT_ERANGE,
                                  "output holds %zu values, the model has %zu "
                                  "labels",
                                  n, C);
    if ((rc = window_setup(s, &p.window, &maxlen)) || (rc = ensure_enc(s)))
        return rc;
    int whole = p.window.mode == BERT_LONG_WINDOWS && !(pair && pair_len);
    if ((rc = tokenize(s, s->enc, text, len, pair, pair_len, maxlen, whole)))
        return rc;
    const bert_encoding *enc = s->enc;
    if (!whole && enc->n > maxlen) /* never: the tokenizer truncated */
        return bert__session_fail(s, BERT_EINVAL,
                                  "%zu tokens for max_length %zu", enc->n,
                                  maxlen);
    size_t W = maxlen - 2, nw = 1;
    if (whole && enc->n > maxlen)
        nw = window_count(enc->n, W, p.window.stride);
    if ((rc = win_reserve(s, maxlen, 2 * C)))
        return bert__session_fail(s, rc, "out of memory");
    float *acc = s->win_logits, *one = s->win_logits + C;
    if (nw == 1 && enc->n <= maxlen) {
        bert_input in = {enc->ids, enc->type_ids, enc->n};
        bert_outputs out = {acc, NULL, NULL};
        if ((rc = bert_session_run(s, &in, 1, &out)))
            return rc;
    } else {
        memset(acc, 0, C * sizeof *acc);
        for (size_t w = 0; w < nw; w++) {
            size_t a, b;
            if ((rc = run_window(s, enc, W, p.window.stride, w, &a, &b, one)))
                return rc;
            for (size_t i = 0; i < C; i++)
                acc[i] += one[i];
        }
        for (size_t i = 0; i < C; i++)
            acc[i] /= (float)nw;
    }
    int best = 0;
    for (size_t i = 1; i < C; i++)
        if (acc[i] > acc[best])
            best = (int)i;
    if (scores)
        bert_apply_function(m, p.function, acc, scores);
    if (logits)
        memcpy(logits, acc, C * sizeof *logits);
    if (label)
        *label = best;
    if (n_windows)
        *n_windows = nw;
    return BERT_OK;
}

int bert_classify_text(bert_session *s, const char *text, size_t len,
                       const char *pair, size_t pair_len, float *scores,
                       size_t n_scores, int *label)
{
    return bert_classify_text_ex(s, text, len, pair, pair_len, NULL, NULL,
                                 scores, n_scores, label, NULL);
}

int bert_token_logits(bert_session *s, const char *text, size_t len,
                      const bert_window_params *params, bert_encoding *enc,
                      float *logits, size_t n_logits, size_t *n_windows)
{
    if (!s)
        return BERT_EINVAL;
    s->errmsg[0] = '\0';
    bert_window_params p = params ? *params : bert_window_default_params();
    const bert_model *m = s->m;
    size_t C = m->cfg.pub.num_labels, maxlen;
    int rc;
    if (m->cfg.pub.task != BERT_TASK_TOKEN)
        return bert__session_fail(s, BERT_EINVAL,
                                  "%s is not a token-classification model",
                                  m->cfg.architecture);
    if (!text || !enc)
        return bert__session_fail(s, BERT_EINVAL, "text or enc is NULL");
    if ((rc = window_setup(s, &p, &maxlen)))
        return rc;
    int whole = p.mode == BERT_LONG_WINDOWS;
    if ((rc = tokenize(s, enc, text, len, NULL, 0, maxlen, whole)))
        return rc;
    if (n_logits < enc->n * C || !logits)
        return bert__session_fail(s, BERT_ERANGE,
                                  "logits holds %zu floats, %zu tokens x %zu "
                                  "labels needed",
                                  n_logits, enc->n, C);
    if (enc->n <= maxlen) {
        bert_input in = {enc->ids, enc->type_ids, enc->n};
        bert_outputs out = {logits, NULL, NULL};
        if ((rc = bert_session_run(s, &in, 1, &out)))
            return rc;
        if (n_windows)
            *n_windows = 1;
        return BERT_OK;
    }
    size_t W = maxlen - 2, nw = window_count(enc->n, W, p.stride);
    if ((rc = win_reserve(s, maxlen, maxlen * C)))
        return bert__session_fail(s, rc, "out of memory");
    for (size_t w = 0; w < nw; w++) {
        size_t a, b;
        if ((rc = run_window(s, enc, W, p.stride, w, &a, &b, s->win_logits)))
            return rc;
        if (w == 0) /* [CLS] */
            memcpy(logits, s->win_logits, C * sizeof *logits);
        if (w == nw - 1) /* final [SEP] */
            memcpy(logits + (enc->n - 1) * C,
                   s->win_logits + (b - a + 1) * C, C * sizeof *logits);
        for (size_t i = a; i < b; i++)
            if (best_window(enc->n, W, p.stride, nw, i) == w)
                memcpy(logits + (1 + i) * C,
                       s->win_logits + (1 + i - a) * C, C * sizeof *logits);
    }
    if (n_windows)
        *n_windows = nw;
    return BERT_OK;
}
