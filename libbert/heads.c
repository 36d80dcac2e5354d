/* heads.c - pooler, classification heads and the pipeline's score
 * functions.
 *
 *  BERT pooler:        pooled = tanh(h[CLS] Wp^T + bp)          (B,H)
 *  BERT sequence:      logits = pooled Wc^T + bc                (B,C)
 *  DistilBERT seq.:    logits = ReLU(h[CLS] Wpre^T + bpre) Wc^T + bc
 *  RoBERTa seq.:       logits = tanh(h[<s>] Wd^T + bd) Wo^T + bo
 *                      (classifier.dense / classifier.out_proj, no pooler)
 *  ELECTRA seq.:       logits = gelu(h[CLS] Wd^T + bd) Wo^T + bo (erf GELU)
 *  token (both):       logits = h Wc^T + bc                     (T,C)
 * Dropout is the identity at inference.
 */
#include <math.h>
#include <string.h>

#include "libbert/internal.h"
#include "libbert/kernels.h"
#include "libbert/model.h"

static void linear(const bert_gemm_ctx *g, float *y, const float *x,
                   const bert_wmat *W, const float *b, size_t T)
{
    bert__bias_fill(y, b, T, W->n);
    bert__gemm_w(g, -1, T, x, W->k, W, 1.0f, y, W->n);
}

void bert__heads_forward(bert_session *s, const bert_input *in, size_t batch,
                         size_t T, float *pooler, float *logits)
{
    const bert_model *m = s->m;
    const bert_config *c = &m->cfg.pub;
    const bert_weights *w = &m->w;
    size_t H = c->hidden;

    if (c->task == BERT_TASK_TOKEN) {
        if (logits)
            linear(s->gemm, logits, s->x, &m->mats.cls, w->cls_b, T);
        return;
    }
    if (!w->pool_w || (!pooler && !logits))
        return;
    /* Gather the [CLS] (first) row of each sequence into ctx (B,H). */
    float *cls = s->ctx, *pooled = s->tmp;
    size_t o = 0;
    for (size_t b = 0; b < batch; b++) {
        memcpy(cls + b * H, s->x + o * H, H * sizeof(float));
        o += in[b].n;
    }
    linear(s->gemm, pooled, cls, &m->mats.pool, w->pool_b, batch);
    if (c->is_distilbert)
        bert__relu_forward(pooled, batch * H);
    else if (c->family == BERT_FAMILY_ELECTRA)
        bert__gelu_erf_forward(pooled, batch * H); /* "gelu" whatever
                                                      hidden_act says */
    else
        bert__tanh_forward(pooled, batch * H);
    if (pooler)
        memcpy(pooler, pooled, batch * H * sizeof(float));
    if (logits && c->task == BERT_TASK_SEQUENCE)
        linear(s->gemm, logits, pooled, &m->mats.cls, w->cls_b, batch);
}

/* ---- score functions (text-classification pipeline) ----------------------- */

bert_function bert_model_function(const bert_model *m)
{
    if (!m)
        return BERT_FUNC_NONE;
    const bert_config *c = &m->cfg.pub;
    if (c->problem == BERT_PROBLEM_REGRESSION)
        return BERT_FUNC_NONE;
    if (c->problem == BERT_PROBLEM_MULTI_LABEL || c->num_labels == 1)
        return BERT_FUNC_SIGMOID;
    if (c->problem == BERT_PROBLEM_SINGLE_LABEL || c->num_labels > 1)
        return BERT_FUNC_SOFTMAX;
    return BERT_FUNC_NONE;
}

void bert_apply_function(const bert_model *m, bert_function f,
                         const float *logits, float *scores)
{
    if (!m || !logits || !scores)
        return;
    size_t C = m->cfg.pub.num_labels;
    if (C == 0)
        return;
    if (f == BERT_FUNC_DEFAULT)
        f = bert_model_function(m);
    switch (f) {
    case BERT_FUNC_SOFTMAX:
        bert__softmax_scores(scores, logits, C, 0);
        break;
    case BERT_FUNC_SIGMOID:
        for (size_t i = 0; i < C; i++)
            scores[i] = 1.0f / (1.0f + expf(-logits[i]));
        break;
    default:
        if (scores != logits)
            memmove(scores, logits, C * sizeof *scores);
        break;
    }
}
