/* encoder.c - embeddings and the post-norm encoder layers on a packed batch.
 *
 * A packed batch is the concatenation of the sequences' tokens (T rows, no
 * padding).  Every Linear runs once over all T rows; attention runs per
 * sequence and per head, so tokens only attend within their own sequence and
 * the result equals running each sequence alone (HF's additive padding mask
 * gives padded keys exactly zero weight, so this also equals HF's padded
 * batch on the real tokens).
 *
 * Dimension letters: T tokens, H hidden, NH heads, hs = H/NH, I intermediate.
 */
#include <math.h>
#include <string.h>

#include "libbert/kernels.h"
#include "libbert/model.h"

/* y (T,OC) = x (T,C) W^T + b with W PyTorch's (OC,C): W^T read with strides
 * (1,C), no copy. */
static void linear(const bert_gemm_ctx *g, float *y, const float *x,
                   const float *W, const float *b, size_t T, size_t C,
                   size_t OC)
{
    bert__bias_fill(y, b, T, OC);
    bert__sgemm(g, T, OC, C, 1.0f, x, (ptrdiff_t)C, 1, W, 1, (ptrdiff_t)C,
                1.0f, y, (ptrdiff_t)OC, 1);
}

/* x (T,H) = LayerNorm(word[id] + type[tt] + pos[t]) per sequence
 * (BertEmbeddings / DistilBERT Embeddings). */
static void embeddings_forward(const bert_model *m, float *x,
                               const bert_input *in, size_t batch)
{
    const bert_config *c = &m->cfg.pub;
    const bert_weights *w = &m->w;
    size_t H = c->hidden;
    float *row = x;
    for (size_t b = 0; b < batch; b++) {
        for (size_t t = 0; t < in[b].n; t++, row += H) {
            const float *we = w->word_emb + (size_t)in[b].ids[t] * H;
            const float *pe = w->pos_emb + t * H;
            if (w->type_emb) {
                size_t tt = in[b].type_ids ? (size_t)in[b].type_ids[t] : 0;
                const float *te = w->type_emb + tt * H;
                for (size_t i = 0; i < H; i++)
                    row[i] = (we[i] + te[i]) + pe[i];
            } else {
                for (size_t i = 0; i < H; i++)
                    row[i] = we[i] + pe[i];
            }
        }
    }
    size_t T = (size_t)(row - x) / H;
    bert__layernorm_forward(x, x, w->emb_ln_w, w->emb_ln_b, T, H,
                            c->layer_norm_eps);
}

/* Multi-head self-attention of one layer: s->ctx (T,H) from s->q/k/v. */
static void attention_forward(bert_session *s, const bert_input *in,
                              size_t batch)
{
    const bert_config *c = &s->m->cfg.pub;
    size_t H = c->hidden, NH = c->heads, hs = H / NH;
    float scale = 1.0f / sqrtf((float)hs);
    size_t o = 0;
    for (size_t b = 0; b < batch; b++) {
        size_t n = in[b].n;
        for (size_t h = 0; h < NH; h++) {
            const float *Q = s->q + o * H + h * hs; /* (n,hs) rows H apart */
            const float *K = s->k + o * H + h * hs;
            const float *V = s->v + o * H + h * hs;
            float *Ctx = s->ctx + o * H + h * hs;
            float *S = s->scores; /* (n,n) */
            /* S = Q K^T (K^T read with strides (1,H)) */
            bert__sgemm(s->gemm, n, n, hs, 1.0f, Q, (ptrdiff_t)H, 1, K, 1,
                        (ptrdiff_t)H, 0.0f, S, (ptrdiff_t)n, 1);
            bert__softmax_forward(S, n, n, n, scale, NULL);
            /* Ctx_h = P V_h, written straight into the merged layout */
            bert__sgemm(s->gemm, n, hs, n, 1.0f, S, (ptrdiff_t)n, 1, V,
                        (ptrdiff_t)H, 1, 0.0f, Ctx, (ptrdiff_t)H, 1);
        }
        o += n;
    }
}

void bert__encoder_forward(bert_session *s, const bert_input *in,
                           size_t batch, size_t T)
{
    const bert_model *m = s->m;
    const bert_config *c = &m->cfg.pub;
    size_t H = c->hidden, I = c->intermediate;
    float eps = c->layer_norm_eps;

    embeddings_forward(m, s->x, in, batch);
    for (size_t l = 0; l < c->layers; l++) {
        const bert_layer_w *w = &m->w.layers[l];
        linear(s->gemm, s->q, s->x, w->q_w, w->q_b, T, H, H);
        linear(s->gemm, s->k, s->x, w->k_w, w->k_b, T, H, H);
        linear(s->gemm, s->v, s->x, w->v_w, w->v_b, T, H, H);
        attention_forward(s, in, batch);
        linear(s->gemm, s->tmp, s->ctx, w->o_w, w->o_b, T, H, H);
        bert__add_layernorm_forward(s->x, s->x, s->tmp, w->ln1_w, w->ln1_b, T,
                                    H, eps);
        linear(s->gemm, s->inter, s->x, w->f1_w, w->f1_b, T, H, I);
        switch (c->act) {
        case BERT_ACT_GELU:
            bert__gelu_erf_forward(s->inter, T * I);
            break;
        case BERT_ACT_GELU_TANH:
            bert__gelu_tanh_forward(s->inter, T * I);
            break;
        case BERT_ACT_RELU:
            bert__relu_forward(s->inter, T * I);
            break;
        }
        linear(s->gemm, s->tmp, s->inter, w->f2_w, w->f2_b, T, I, H);
        bert__add_layernorm_forward(s->x, s->x, s->tmp, w->ln2_w, w->ln2_b, T,
                                    H, eps);
    }
}
