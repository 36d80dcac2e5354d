/* session.c - sessions: activation arena, BLIS runtime, bert_session_run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libbert/cpu.h"
#include "libbert/internal.h"
#include "libbert/model.h"
#include "libbert/windows.h"

bert_session_params bert_session_default_params(void)
{
    bert_session_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.n_threads = 1;
    p.max_tokens = 4096;
    p.kernels = BERT_KERNELS_AUTO;
    return p;
}

/* Rounds n floats up to a multiple of 16 (64 bytes) so every buffer of the
 * arena starts on a cache line. */
static size_t al16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

/* Floats of the tensor-parallel scratch for a cap of T tokens: for the
 * encoder's largest tensor-parallel run (encoder.c, TP_MAX_ROWS). */
static size_t tp_floats(const bert_session *s, size_t T)
{
    return bert__encode_tp_floats(&s->m->cfg.pub, s->n_threads, T);
}

int bert__session_reserve(bert_session *s, size_t T, size_t maxn)
{
    if (T <= s->cap_tokens && maxn <= s->cap_seq && s->arena &&
        tp_floats(s, s->cap_tokens) <= s->tp_cap)
        return BERT_OK;
    if (T < s->cap_tokens)
        T = s->cap_tokens;
    if (maxn < s->cap_seq)
        maxn = s->cap_seq;
    const bert_config *c = &s->m->cfg.pub;
    size_t H = c->hidden, I = c->intermediate;
    size_t th, ti, ss, tp = tp_floats(s, T), total;
    /* Sizes are bounded by the config limits and max_len, but check anyway:
     * T comes from the caller. */
    if (bert__mul_size(T, H, &th) || bert__mul_size(T, I, &ti) ||
        bert__mul_size(maxn, maxn, &ss) || th > ((size_t)-1) / 64 ||
        ti > ((size_t)-1) / 64 || ss > ((size_t)-1) / 64)
        return BERT_ENOMEM;
    /* the buffers, in arena order, and their sizes in floats */
    float **buf[] = {&s->x,   &s->q,   &s->k,     &s->v,     &s->ctx,
                     &s->tmp, &s->inter, &s->scores, &s->tp};
    size_t len[] = {th, th, th, th, th, th, ti, ss, tp};
    total = 0;
    for (size_t i = 0; i < 9; i++)
        total += al16(len[i]);
    if (total > ((size_t)-1) / sizeof(float))
        return BERT_ENOMEM;
    float *a = NULL;
    if (!(a = bert__big_alloc(total * sizeof(float))))
        return BERT_ENOMEM;
    free(s->arena);
    s->arena = a;
    s->cap_tokens = T;
    s->cap_seq = maxn;
    s->tp_cap = tp;
    for (size_t i = 0; i < 9; i++) {
        *buf[i] = a;
        a += al16(len[i]);
    }
    return BERT_OK;
}

int bert_session_create(const bert_model *m, const bert_session_params *params,
                        bert_session **out, bert_error *err)
{
    bert_session_params p;
    if (out)
        *out = NULL;
    if (BERT__PARAMS(p, params, bert_session_default_params, err))
        return BERT_EINVAL;
    if (!m || !out)
        return bert__err(err, BERT_EINVAL,
                         "bert_session_create: model and out must not be "
                         "NULL");
    if (p.n_threads < 1 || p.n_threads > 1024)
        return bert__err(err, BERT_EINVAL,
                         "bert_session_create: n_threads %d out of range "
                         "1..1024",
                         p.n_threads);
    if (p.max_tokens == 0)
        p.max_tokens = 4096;
    if (p.max_tokens > (size_t)1 << 24)
        return bert__err(err, BERT_EINVAL,
                         "bert_session_create: max_tokens %zu is absurd",
                         p.max_tokens);
    char why[160];
    if (!bert__kernels_supported(p.kernels, why, sizeof why))
        return bert__err(err, BERT_EUNSUPPORTED,
                         "bert_session_create: kernels \"%s\": %s",
                         bert__kernels_name(p.kernels), why);
    /* A model packed in bf16 or int8 needs a tier that runs it (AUTO: the
     * best such tier, as at load). */
    bert_precision prec = m->mats.prec;
    if (prec != BERT_PRECISION_FP32) {
        if (!bert__precision_supported(prec, p.kernels, why, sizeof why))
            return bert__err(err, BERT_EUNSUPPORTED,
                             "bert_session_create: the model holds %s "
                             "weights: %s", bert__precision_name(prec), why);
        if (p.kernels == BERT_KERNELS_AUTO)
            p.kernels = bert__precision_tier(prec);
    }
    bert_session *s = calloc(1, sizeof *s);
    if (!s)
        return bert__err(err, BERT_ENOMEM, "out of memory");
    s->m = m;
    s->n_threads = p.n_threads;
    s->gemm = bert__gemm_ctx_create(p.n_threads, p.kernels, NULL, 0);
    s->score_chunk = bert__score_chunk(bert__cpu_l2_bytes());
    size_t maxn = m->max_len < p.max_tokens ? m->max_len : p.max_tokens;
    if (!s->gemm || bert__session_reserve(s, p.max_tokens, maxn) != BERT_OK) {
        bert_session_free(s);
        return bert__err(err, BERT_ENOMEM,
                         "out of memory for a session of %zu tokens",
                         p.max_tokens);
    }
    *out = s;
    return BERT_OK;
}

void bert_session_free(bert_session *s)
{
    if (!s)
        return;
    bert__gemm_ctx_free(s->gemm);
    free(s->arena);
    if (s->enc)
        bert_encoding_free(s->enc);
    bert__windows_free(s->win);
    free(s->acc);
    bert__batch_free(s->batch);
    free(s);
}

int bert_session_set_threads(bert_session *s, int n_threads,
                             bert_error *err)
{
    if (!s || n_threads < 1 || n_threads > 1024)
        return bert__err(err, BERT_EINVAL,
                         "bert_session_set_threads: %s", !s ? "session is "
                         "NULL" : "n_threads out of range 1..1024");
    if (bert__gemm_ctx_set_threads(s->gemm, n_threads) != 0)
        return bert__err(err, BERT_ENOMEM,
                         "out of memory for %d threads", n_threads);
    /* the tensor-parallel scratch depends on the thread count: the next
     * run's bert__session_reserve grows the arena for it */
    s->n_threads = n_threads;
    return BERT_OK;
}

const char *bert_session_kernels(const bert_session *s, int *packed)
{
    if (packed)
        *packed = s && s->m->mats.packed &&
                  bert__gemm_ctx_tier(s->gemm) != BERT_KERNELS_BLIS;
    return s ? bert__gemm_ctx_kernels(s->gemm) : "";
}

bert_kernels bert_kernels_best(void)
{
    return bert__kernels_best();
}

int bert_kernels_supported(bert_kernels k)
{
    return bert__kernels_supported(k, NULL, 0);
}

int bert_kernels_from_name(const char *name)
{
    return bert__kernels_parse(name);
}

int bert_precision_supported(bert_precision p, bert_kernels k)
{
    return bert__precision_supported(p, k, NULL, 0);
}

const char *bert_precision_name(bert_precision p)
{
    return bert__precision_name(p);
}

int bert_precision_from_name(const char *name)
{
    return bert__precision_parse(name);
}

int bert_session_run(bert_session *s, const bert_input *in, size_t batch,
                     const bert_outputs *out, bert_error *err)
{
    if (!s || !in || !out || batch == 0)
        return bert__err(err, BERT_EINVAL,
                         "bert_session_run: need a session, inputs, outputs "
                         "and batch >= 1");
    const bert_model *m = s->m;
    const bert_config *c = &m->cfg.pub;
    size_t T = 0, maxn = 0;
    for (size_t b = 0; b < batch; b++) {
        size_t n = in[b].n;
        if (n == 0 || n > m->max_len || !in[b].ids)
            return bert__err(err, BERT_EINVAL,
                             "sequence %zu: %zu tokens (need 1..%zu and "
                             "ids)", b, n, m->max_len);
        for (size_t t = 0; t < n; t++) {
            if (in[b].ids[t] < 0 || (size_t)in[b].ids[t] >= c->vocab_size)
                return bert__err(err, BERT_EINVAL,
                                 "sequence %zu token %zu: id %d outside the "
                                 "vocabulary (0..%zu)",
                                 b, t, (int)in[b].ids[t], c->vocab_size - 1);
            if (!c->is_distilbert && in[b].type_ids &&
                (in[b].type_ids[t] < 0 ||
                 (size_t)in[b].type_ids[t] >= c->type_vocab))
                return bert__err(err, BERT_EINVAL,
                                 "sequence %zu token %zu: type id %d outside "
                                 "0..%zu", b, t, (int)in[b].type_ids[t],
                                 c->type_vocab - 1);
        }
        T += n;
        if (n > maxn)
            maxn = n;
    }
    if (bert__session_reserve(s, T, maxn) != BERT_OK)
        return bert__err(err, BERT_ENOMEM,
                         "out of memory growing the arena to %zu tokens", T);
    /* The sequence heads read only the [CLS] rows: unless the caller wants
     * every hidden state, the last layer computes only what those rows need
     * (BERT-base: 7% less work, a 6-layer model 14%). */
    int cls_only = !out->hidden && c->task != BERT_TASK_TOKEN;
    bert__encoder_forward(s, in, batch, T, cls_only);
    bert__heads_forward(s, in, batch, T, m->has_pooler_out ? out->pooler : NULL,
                        c->task != BERT_TASK_BASE ? out->logits : NULL);
    if (out->hidden)
        memcpy(out->hidden, s->x, T * c->hidden * sizeof(float));
    /* A NaN or infinite logit (non-finite weights, or an overflow) would
     * turn into a confident label or into invalid JSON downstream. */
    if (c->task != BERT_TASK_BASE && out->logits) {
        size_t C = c->num_labels, rows = c->task == BERT_TASK_TOKEN ? T : batch;
        for (size_t i = 0; i < rows * C; i++)
            if (!isfinite(out->logits[i])) {
                size_t b = i / C;
                if (c->task == BERT_TASK_TOKEN)
                    for (b = 0; b + 1 < batch && i / C >= in[b].n;)
                        i -= in[b++].n * C;
                return bert__err(err, BERT_EFORMAT,
                                 "sequence %zu: the model produced a "
                                 "non-finite logit (NaN or infinite "
                                 "weights?)", b);
            }
    }
    return BERT_OK;
}
