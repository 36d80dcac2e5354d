/* embed.c - sentence embeddings: the last hidden state of each text pooled
 * into one vector, as sentence-transformers' Pooling (and optional
 * Normalize) modules do (contracts in bert.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/internal.h"
#include "libbert/model.h"

bert_embed_params bert_embed_default_params(void)
{
    bert_embed_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.pooling = BERT_POOL_MEAN;
    p.normalize = 0;
    p.max_length = 0;
    return p;
}

int bert_pool(const float *hidden, size_t n, size_t H, bert_pooling pooling,
              int normalize, float *out, bert_error *err)
{
    if (!hidden || !out || n == 0 || H == 0)
        return bert__err(err, BERT_EINVAL,
                         "bert_pool: needs hidden, out, n >= 1 and H >= 1 "
                         "(n %zu, H %zu)", n, H);
    if (pooling != BERT_POOL_MEAN && pooling != BERT_POOL_CLS)
        return bert__err(err, BERT_EINVAL, "bert_pool: unknown pooling %d",
                         (int)pooling);
    if (pooling == BERT_POOL_CLS) {
        memcpy(out, hidden, H * sizeof *out);
    } else {
        /* sum in double, in token order, then one division: the mean of
         * float32 rows to within one rounding, independent of n */
        for (size_t h = 0; h < H; h++) {
            double acc = 0;
            for (size_t t = 0; t < n; t++)
                acc += hidden[t * H + h];
            out[h] = (float)(acc / (double)n);
        }
    }
    if (normalize) {
        /* torch.nn.functional.normalize: x / max(||x||_2, 1e-12) */
        double ss = 0;
        for (size_t h = 0; h < H; h++)
            ss += (double)out[h] * out[h];
        double norm = sqrt(ss);
        if (norm < 1e-12)
            norm = 1e-12;
        for (size_t h = 0; h < H; h++)
            out[h] = (float)(out[h] / norm);
    }
    return BERT_OK;
}

/* The texts of one model run: packed sequences first..last-1. */
typedef struct {
    bert_encoding **enc;  /* one per text of the run */
    bert_input *in;
    float *hidden;        /* (sum n_i, H) */
    size_t cap_enc, cap_rows;
} embed_scratch;

static void scratch_free(embed_scratch *x)
{
    for (size_t i = 0; i < x->cap_enc; i++)
        bert_encoding_free(x->enc[i]);
    free(x->enc);
    free(x->in);
    free(x->hidden);
}

int bert_embed_texts(bert_session *s, const char *const *texts,
                     const size_t *lens, const char *const *pairs,
                     const size_t *pair_lens, size_t n,
                     const bert_embed_params *params, float *out,
                     size_t n_out, bert_error *err)
{
    if (!s)
        return bert__err(err, BERT_EINVAL, "session is NULL");
    bert_embed_params p;
    if (BERT__PARAMS(p, params, bert_embed_default_params, err))
        return BERT_EINVAL;
    const bert_model *m = s->m;
    size_t H = m->cfg.pub.hidden;
    if (n == 0)
        return BERT_OK;
    if (!texts || !out)
        return bert__err(err, BERT_EINVAL, "%s is NULL",
                         !texts ? "texts" : "out");
    if (p.pooling != BERT_POOL_MEAN && p.pooling != BERT_POOL_CLS)
        return bert__err(err, BERT_EINVAL, "unknown pooling %d",
                         (int)p.pooling);
    size_t need;
    if (bert__mul_size(n, H, &need) || n_out < need)
        return bert__err(err, BERT_ERANGE,
                         "output holds %zu floats, %zu texts of "
                         "hidden size %zu need more",
                         n_out, n, H);
    if (!m->tok)
        return bert__err(err, BERT_EINVAL,
                         "the model was loaded without its "
                         "tokenizer");
    size_t maxlen = p.max_length;
    if (maxlen == 0 || maxlen > m->max_len)
        maxlen = m->max_len;
    if (maxlen < 2)
        return bert__err(err, BERT_EINVAL, "max_length %zu < 2",
                         maxlen);
    for (size_t i = 0; i < n; i++)
        if (!texts[i])
            return bert__err(err, BERT_EINVAL, "text %zu is NULL", i);
    /* Runs hold whole texts up to the tokens the session's arena already
     * has room for (at least one text), so that embedding many texts does
     * not grow it. */
    size_t budget = s->cap_tokens > maxlen ? s->cap_tokens : maxlen;
    size_t per_run = budget / 2 + 1; /* texts; most are shorter than half */
    embed_scratch x;
    memset(&x, 0, sizeof x);
    int rc = BERT_OK;
    x.enc = calloc(per_run, sizeof *x.enc);
    x.in = calloc(per_run, sizeof *x.in);
    if (!x.enc || !x.in) {
        scratch_free(&x);
        return bert__err(err, BERT_ENOMEM, "out of memory");
    }
    x.cap_enc = per_run;
    bert_encode_params ep = bert_encode_default_params();
    ep.max_length = maxlen;
    float *pooled = malloc(n * H * sizeof *pooled); /* out untouched on failure */
    if (!pooled)
        rc = bert__err(err, BERT_ENOMEM, "out of memory");
    for (size_t first = 0; rc == BERT_OK && first < n;) {
        size_t k = 0, rows = 0;
        while (first + k < n && k < per_run) {
            size_t i = first + k;
            if (!x.enc[k] && !(x.enc[k] = bert_encoding_create())) {
                rc = bert__err(err, BERT_ENOMEM, "out of memory");
                break;
            }
            size_t len = lens ? lens[i] : strlen(texts[i]);
            const char *pair = pairs ? pairs[i] : NULL;
            size_t plen = pair ? (pair_lens ? pair_lens[i] : strlen(pair)) : 0;
            bert_error te;
            int r = bert_tokenizer_encode(m->tok, texts[i], len, pair, plen,
                                          &ep, x.enc[k], &te);
            if (r != BERT_OK) {
                rc = bert__err(err, r, "text %zu: %s", i, te.text);
                if (err)
                    err->byte_offset = te.byte_offset;
                break;
            }
            if (k > 0 && rows + x.enc[k]->n > budget)
                break; /* the next run starts with it */
            x.in[k].ids = x.enc[k]->ids;
            x.in[k].type_ids = x.enc[k]->type_ids;
            x.in[k].n = x.enc[k]->n;
            rows += x.enc[k]->n;
            k++;
        }
        if (rc != BERT_OK)
            break;
        if (bert__grow(&x.hidden, &x.cap_rows, rows, H * sizeof *x.hidden)) {
            rc = bert__err(err, BERT_ENOMEM, "out of memory");
            break;
        }
        bert_outputs o = {NULL, NULL, x.hidden};
        if ((rc = bert_session_run(s, x.in, k, &o, err)) != BERT_OK)
            break;
        size_t r0 = 0;
        for (size_t j = 0; j < k; j++) {
            bert_pool(x.hidden + r0 * H, x.in[j].n, H, p.pooling, p.normalize,
                      pooled + (first + j) * H, NULL);
            r0 += x.in[j].n;
        }
        first += k;
    }
    if (rc == BERT_OK)
        memcpy(out, pooled, n * H * sizeof *out);
    free(pooled);
    scratch_free(&x);
    return rc;
}
