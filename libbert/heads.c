/* heads.c - pooler, classification heads and the pipeline's score
 * functions.
 *
 *  BERT pooler:        pooled = tanh(h[CLS] Wp^T + bp)          (B,H)
 *  BERT sequence:      logits = pooled Wc^T + bc                (B,C)
 *  DistilBERT seq.:    logits = ReLU(h[CLS] Wpre^T + bpre) Wc^T + bc
 *  token (both):       logits = h Wc^T + bc                     (T,C)
 * Dropout is the identity at inference.
 */
#include <math.h>
#include <string.h>

#include "libbert/kernels.h"
#include "libbert/model.h"

static void linear(const bert_gemm_ctx *g, float *y, const float *x,
                   const float *W, const float *b, size_t T, size_t C,
                   size_t OC)
{
    bert__bias_fill(y, b, T, OC);
    bert__sgemm(g, T, OC, C, 1.0f, x, (ptrdiff_t)C, 1, W, 1, (ptrdiff_t)C,
                1.0f, y, (ptrdiff_t)OC, 1);
}

void bert__heads_forward(bert_session *s, const bert_input *in, size_t batch,
                         size_t T, float *pooler, float *logits)
{
    const bert_model *m = s->m;
    const bert_config *c = &m->cfg.pub;
    const bert_weights *w = &m->w;
    size_t H = c->hidden, C = c->num_labels;

    if (c->task == BERT_TASK_TOKEN) {
        if (logits)
            linear(s->gemm, logits, s->x, w->cls_w, w->cls_b, T, H, C);
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
    linear(s->gemm, pooled, cls, w->pool_w, w->pool_b, batch, H, H);
    if (c->is_distilbert)
        bert__relu_forward(pooled, batch * H);
    else
        bert__tanh_forward(pooled, batch * H);
    if (pooler)
        memcpy(pooler, pooled, batch * H * sizeof(float));
    if (logits && c->task == BERT_TASK_SEQUENCE)
        linear(s->gemm, logits, pooled, w->cls_w, w->cls_b, batch, H, C);
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
    case BERT_FUNC_SOFTMAX: {
        float mx = logits[0];
        for (size_t i = 1; i < C; i++)
            if (logits[i] > mx)
                mx = logits[i];
        double sum = 0;
        for (size_t i = 0; i < C; i++) {
            scores[i] = expf(logits[i] - mx);
            sum += scores[i];
        }
        for (size_t i = 0; i < C; i++)
            scores[i] = (float)(scores[i] / sum);
        break;
    }
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
