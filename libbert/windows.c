/* windows.c - the long-text window engine of the pipelines (windows.h). */
#include <stdlib.h>
#include <string.h>

#include "libbert/internal.h"
#include "libbert/windows.h"

struct bert__windows *bert__windows_create(void)
{
    return calloc(1, sizeof(struct bert__windows));
}

void bert__windows_free(struct bert__windows *w)
{
    if (!w)
        return;
    free(w->buf);
    free(w->in);
    free(w->logits);
    free(w);
}

void bert__windows_plan(struct bert__windows *w, const int32_t *ids,
                        size_t n, int32_t cls, int32_t sep, size_t maxlen,
                        size_t stride)
{
    w->ids = ids;
    w->n = n;
    w->cls = cls;
    w->sep = sep;
    w->W = maxlen - 2;
    w->step = w->W - stride;
    /* the loop of Encoding::truncate: windows start every step tokens and
     * stop after the one that reaches the end */
    w->count = n <= w->W ? 1 : 1 + (n - w->W + w->step - 1) / w->step;
    w->g0 = w->g1 = 0;
}

void bert__windows_span(const struct bert__windows *w, size_t i,
                        size_t *start, size_t *end)
{
    *start = i * w->step;
    *end = *start + w->W < w->n ? *start + w->W : w->n;
}

int bert__windows_fill(struct bert__windows *w, size_t g0, size_t g1)
{
    size_t ntok = 0, a, e, k = 0;
    for (size_t i = g0; i < g1; i++) {
        bert__windows_span(w, i, &a, &e);
        ntok += e - a + 2;
    }
    if (bert__grow(&w->buf, &w->buf_cap, ntok, sizeof *w->buf) ||
        bert__grow(&w->in, &w->in_cap, g1 - g0, sizeof *w->in))
        return BERT_ENOMEM;
    for (size_t i = g0; i < g1; i++) {
        bert__windows_span(w, i, &a, &e);
        bert_input *in = &w->in[i - g0];
        in->ids = w->buf + k;
        in->type_ids = NULL;
        in->n = e - a + 2;
        w->buf[k++] = w->cls;
        if (e > a) /* an empty text has one window, [CLS] [SEP] */
            memcpy(w->buf + k, w->ids + a, (e - a) * sizeof *w->buf);
        k += e - a;
        w->buf[k++] = w->sep;
    }
    w->g0 = g0;
    w->g1 = g1;
    return BERT_OK;
}

int bert__windows_run(bert_session *s, struct bert__windows *w, size_t group,
                      int keep, bert__windows_fn fn, void *data,
                      bert_error *err)
{
    const bert_config *c = &s->m->cfg.pub;
    int token_rows = c->task == BERT_TASK_TOKEN;
    size_t C = c->num_labels, at = 0; /* first row of this run */
    for (size_t g0 = 0; g0 < w->count; g0 += group) {
        size_t g1 = g0 + group < w->count ? g0 + group : w->count, rows = 0;
        if (bert__windows_fill(w, g0, g1))
            return bert__err(err, BERT_ENOMEM, "out of memory");
        for (size_t i = 0; i < g1 - g0; i++)
            rows += token_rows ? w->in[i].n : 1;
        if (!keep)
            at = 0;
        if (bert__grow(&w->logits, &w->logits_cap, (at + rows) * C + 1,
                       sizeof *w->logits))
            return bert__err(err, BERT_ENOMEM, "out of memory");
        bert_outputs out = {w->logits + at * C, NULL, NULL};
        int rc = bert_session_run(s, w->in, g1 - g0, &out, err);
        if (rc == BERT_OK && fn)
            rc = fn(data, w, g0, g1, w->logits + at * C, err);
        if (rc != BERT_OK)
            return rc;
        at += rows;
    }
    return BERT_OK;
}

int bert__windows_add(const struct bert__windows *w, struct bert__batch *b,
                      size_t item)
{
    int rc = BERT_OK;
    for (size_t i = 0; rc == BERT_OK && i < w->g1 - w->g0; i++)
        rc = bert__batch_add(b, item, w->in[i].ids, NULL, w->in[i].n);
    return rc;
}

/* ---- mapping back -------------------------------------------------------- */

void bert__windows_mean(const float *rows, size_t nw, size_t C, float *acc)
{
    if (nw == 1) { /* as it is: 0 + x / 1 would turn -0 into +0 */
        memcpy(acc, rows, C * sizeof *acc);
        return;
    }
    memset(acc, 0, C * sizeof *acc);
    for (size_t i = 0; i < nw; i++)
        for (size_t c = 0; c < C; c++)
            acc[c] += rows[i * C + c];
    for (size_t c = 0; c < C; c++)
        acc[c] /= (float)nw;
}

size_t bert__windows_owner(const struct bert__windows *w, size_t t)
{
    /* only the windows whose span may hold t: lo..hi */
    size_t lo = t >= w->W ? (t - w->W) / w->step + 1 : 0, hi = t / w->step;
    size_t best = lo, bestd = 0;
    int found = 0;
    if (hi > w->count - 1)
        hi = w->count - 1;
    for (size_t i = lo; i <= hi; i++) {
        size_t a, b;
        bert__windows_span(w, i, &a, &b);
        if (t < a || t >= b)
            continue;
        size_t d = t - a < b - 1 - t ? t - a : b - 1 - t;
        if (!found || d > bestd) {
            best = i;
            bestd = d;
            found = 1;
        }
    }
    return best;
}

void bert__windows_token_rows(const struct bert__windows *w, size_t g0,
                              size_t g1, const float *logits, size_t C,
                              float *out)
{
    const float *row = logits; /* window i's [CLS] row */
    for (size_t i = g0; i < g1; i++) {
        size_t a, b;
        bert__windows_span(w, i, &a, &b);
        if (i == 0)
            memcpy(out, row, C * sizeof *out);
        if (i == w->count - 1)
            memcpy(out + (w->n + 1) * C, row + (b - a + 1) * C,
                   C * sizeof *out);
        for (size_t t = a; t < b; t++)
            if (bert__windows_owner(w, t) == i)
                memcpy(out + (1 + t) * C, row + (1 + t - a) * C,
                       C * sizeof *out);
        row += (b - a + 2) * C;
    }
}
