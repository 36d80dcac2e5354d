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
#ifdef _OPENMP
#include <omp.h>
#endif

#include "libbert/kernels.h"
#include "libbert/model.h"

/* Element-wise work runs on the session's threads with OpenMP, between
 * BLIS calls (never inside one), so the two never compete for cores.
 * Rows [*t0, *t1) of T for thread id of nt. */
static void row_range(size_t T, int id, int nt, size_t *t0, size_t *t1)
{
    size_t q = T / (size_t)nt, r = T % (size_t)nt, i = (size_t)id;
    *t0 = i * q + (i < r ? i : r);
    *t1 = *t0 + q + (i < r);
}

#ifdef _OPENMP
/* _Pragma takes a string, in which macro parameters are not replaced: the
 * arguments go through PRAGMA's # first. */
#define PRAGMA(x) _Pragma(#x)
#define PAR_ROWS(nt, T)                                                       \
    PRAGMA(omp parallel num_threads(nt) if ((nt) > 1 && (T) >= 32))
#define THREAD_ID() omp_get_thread_num()
#define THREAD_COUNT() omp_get_num_threads()
#else
#define PAR_ROWS(nt, T)
#define THREAD_ID() 0
#define THREAD_COUNT() 1
#endif

/* y (T,OC) = x (T,C) W^T, no bias (the caller's epilogue adds it); W
 * packed once at load where the session's kernels are libbert's. */
static void matmul(const bert_gemm_ctx *g, float *y, const float *x,
                   const bert_wmat *W, size_t T)
{
    bert__gemm_w(g, -1, T, x, W->k, W, 0.0f, y, W->n);
}

/* y (T,OC) = x (T,C) W^T + b. */
static void linear(const bert_gemm_ctx *g, float *y, const float *x,
                   const bert_wmat *W, const float *b, size_t T)
{
    bert__bias_fill(y, b, T, W->n);
    bert__gemm_w(g, -1, T, x, W->k, W, 1.0f, y, W->n);
}

/* y_j (T,OC_j) = x (T,C) W_j^T + b_j for n matrices reading the same x
 * (Q, K, V): one product, which packs x once (gemm.h). */
static void linear_n(const bert_gemm_ctx *g, size_t n, float *const *y,
                     const float *x, const bert_wmat *const *W,
                     const float *const *b, size_t T)
{
    for (size_t j = 0; j < n; j++)
        bert__bias_fill(y[j], b[j], T, W[j]->n);
    bert__gemm_wn(g, -1, T, x, W[0]->k, n, W, 1.0f, y, W[0]->n);
}

/* x (T,E) = LayerNorm(word[id] + type[tt] + pos[p]) per sequence
 * (BertEmbeddings / DistilBERT Embeddings / RobertaEmbeddings /
 * ElectraEmbeddings; E = H except for ELECTRA).  p = t, except for RoBERTa:
 * create_position_ids_from_input_ids, p = pad + (number of non-pad ids up
 * to t) and pad for a pad id, from the ids, not from a mask. */
static void embeddings_forward(const bert_model *m, float *x,
                               const bert_input *in, size_t batch, int nt)
{
    const bert_config *c = &m->cfg.pub;
    const bert_weights *w = &m->w;
    size_t H = c->embedding_size;
    int roberta = c->family == BERT_FAMILY_ROBERTA;
    int32_t pad = m->cfg.pad_token_id;
    float *row = x;
    for (size_t b = 0; b < batch; b++) {
        size_t seen = 0; /* non-pad ids so far (RoBERTa) */
        for (size_t t = 0; t < in[b].n; t++, row += H) {
            const float *we = w->word_emb + (size_t)in[b].ids[t] * H;
            size_t p = t;
            if (roberta)
                p = in[b].ids[t] == pad ? (size_t)pad : (size_t)pad + ++seen;
            const float *pe = w->pos_emb + p * H;
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
    PAR_ROWS(nt, T)
    {
        size_t t0, t1;
        row_range(T, THREAD_ID(), THREAD_COUNT(), &t0, &t1);
        bert__layernorm_forward(x + t0 * H, x + t0 * H, w->emb_ln_w,
                                w->emb_ln_b, t1 - t0, H, c->layer_norm_eps);
    }
}

/* ELECTRA's embeddings_project: x (T,H) = e (T,E) Wp^T + bp. */
static void embeddings_project(bert_session *s, const float *e, size_t T)
{
    const bert_config *c = &s->m->cfg.pub;
    const bert_weights *w = &s->m->w;
    bert__bias_fill(s->x, w->emb_proj_b, T, c->hidden);
    bert__sgemm(s->gemm, T, c->hidden, c->embedding_size, 1.0f, e,
                (ptrdiff_t)c->embedding_size, 1, w->emb_proj_w, 1,
                (ptrdiff_t)c->embedding_size, 1.0f, s->x, (ptrdiff_t)c->hidden,
                1);
}

/* One head of one sequence (n keys from row o of s->k, s->v): Ctx_h =
 * softmax(Q_h K_h^T / sqrt(hs)) V_h for nq query rows (rows H apart from
 * Q and Ctx: the sequence's rows of s->q and s->ctx, or its [CLS] row),
 * the scores in S (cap floats), query rows in chunks of cap / n so that
 * each thread's slice of the score buffer suffices (rows are independent,
 * so chunking changes nothing numerically).  The scale is the GEMM's
 * alpha.  One thread, the GEMM's buffers of thread `slot`. */
static void head_forward(const bert_session *s, int slot, float *S,
                         size_t cap, const float *Q0, float *Ctx0, size_t nq,
                         size_t o, size_t n, size_t h)
{
    const bert_config *c = &s->m->cfg.pub;
    size_t H = c->hidden, hs = H / c->heads;
    float scale = 1.0f / sqrtf((float)hs);
    const float *K = s->k + o * H + h * hs;
    const float *V = s->v + o * H + h * hs;
    size_t rc = cap / n;
    for (size_t r0 = 0; r0 < nq; r0 += rc) {
        size_t m = nq - r0 < rc ? nq - r0 : rc;
        const float *Q = Q0 + r0 * H + h * hs; /* (m,hs) rows H apart */
        float *Ctx = Ctx0 + r0 * H + h * hs;
        /* S = scale Q K^T (K^T read with strides (1,H)) */
        bert__sgemm1(s->gemm, slot, m, n, hs, scale, Q, (ptrdiff_t)H, 1, K, 1,
                     (ptrdiff_t)H, 0.0f, S, (ptrdiff_t)n, 1);
        bert__softmax_forward(S, m, n, n, 1.0f, NULL);
        /* Ctx_h = P V_h, written straight into the merged layout */
        bert__sgemm1(s->gemm, slot, m, hs, n, 1.0f, S, (ptrdiff_t)n, 1, V,
                     (ptrdiff_t)H, 1, 0.0f, Ctx, (ptrdiff_t)H, 1);
    }
}

/* The (sequence, head) pairs of one layer's attention, shared among the
 * n_th threads of the enclosing parallel region (thread id), each with its
 * own slice of s->scores.  With cls, only the [CLS] query of each sequence,
 * from row b of s->q into row b of s->ctx.  An orphaned worksharing loop:
 * call it from every thread of the region; it ends with a barrier. */
static void attention_tasks(const bert_session *s, const bert_input *in,
                            size_t batch, int cls, int id, int n_th)
{
    size_t H = s->m->cfg.pub.hidden;
    size_t NH = s->m->cfg.pub.heads, tasks = batch * NH;
    size_t slice = s->cap_seq * s->cap_seq / (size_t)n_th;
    float *S = s->scores + (size_t)id * slice;
    size_t cb = 0, co = 0; /* cursor: sequence cb starts at row co */
    /* Dynamic chunks reach each thread in increasing order, so the cursor
     * only moves forward. */
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (size_t j = 0; j < tasks; j++) {
        size_t b = j / NH, h = j % NH;
        while (cb < b)
            co += in[cb++].n;
        if (cls)
            head_forward(s, id, S, slice, s->q + b * H, s->ctx + b * H, 1,
                         co, in[b].n, h);
        else
            head_forward(s, id, S, slice, s->q + co * H, s->ctx + co * H,
                         in[b].n, co, in[b].n, h);
    }
}

/* Threads usable for attention: every score slice must hold at least one
 * row of the longest sequence (cap_seq^2 / nt >= cap_seq). */
static int attention_threads(const bert_session *s, size_t batch)
{
    int nt = s->n_threads;
    if ((size_t)nt > s->cap_seq)
        nt = (int)s->cap_seq;
    if ((size_t)nt > batch * s->m->cfg.pub.heads)
        nt = (int)(batch * s->m->cfg.pub.heads);
    return nt;
}

/* Multi-head self-attention of one layer: s->ctx (T,H) from s->q/k/v.  The
 * (sequence, head) pairs are spread over the session's threads, each with
 * single-threaded GEMMs: these products are too small for BLIS to split
 * well. */
static void attention_forward(bert_session *s, const bert_input *in,
                              size_t batch, int cls)
{
    int nt = attention_threads(s, batch);
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
    attention_tasks(s, in, batch, cls, THREAD_ID(), THREAD_COUNT());
}

/* The layers with the tokens split by rows among the threads: every dense
 * product and element-wise pass of a thread works on its own rows with
 * single-threaded GEMMs, so a layer has two barriers (after Q/K/V, after
 * attention) instead of BLIS's many.  Results equal the one-thread ones:
 * each row is computed the same way.  Used for larger batches, and robust
 * when other processes compete for the cores. */
static void layers_rowsplit(bert_session *s, const bert_input *in,
                            size_t batch, size_t T, size_t n_layers, int nt)
{
    const bert_model *m = s->m;
    const bert_config *c = &m->cfg.pub;
    size_t H = c->hidden, I = c->intermediate;
    float eps = c->layer_norm_eps;
    const bert_gemm_ctx *g = s->gemm;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
#endif
    {
        int id = THREAD_ID(), n_th = THREAD_COUNT();
        size_t t0, t1;
        row_range(T, id, n_th, &t0, &t1);
        size_t R = t1 - t0;
        float *x = s->x + t0 * H, *tmp = s->tmp + t0 * H;
        float *inter = s->inter + t0 * I, *ctx = s->ctx + t0 * H;
        for (size_t l = 0; l < n_layers; l++) {
            const bert_layer_w *w = &m->w.layers[l];
            const bert_layer_mats *mw = &m->mats.layers[l];
            const bert_wmat *Ws[3] = {&mw->q, &mw->k, &mw->v};
            const float *bs[3] = {w->q_b, w->k_b, w->v_b};
            float *outs[3] = {s->q + t0 * H, s->k + t0 * H, s->v + t0 * H};
            for (int j = 0; j < 3; j++)
                bert__bias_fill(outs[j], bs[j], R, H);
            bert__gemm_wn(g, id, R, x, H, 3, Ws, 1.0f, outs, H);
#ifdef _OPENMP
#pragma omp barrier
#endif
            attention_tasks(s, in, batch, 0, id, n_th); /* ends with a barrier */
            bert__gemm_w(g, id, R, ctx, H, &mw->o, 0.0f, tmp, H);
            bert__bias_add_layernorm_forward(x, tmp, w->o_b, w->ln1_w,
                                             w->ln1_b, R, H, eps);
            bert__gemm_w(g, id, R, x, H, &mw->f1, 0.0f, inter, I);
            bert__bias_act_forward(inter, w->f1_b, R, I, c->act);
            bert__gemm_w(g, id, R, inter, I, &mw->f2, 0.0f, tmp, H);
            bert__bias_add_layernorm_forward(x, tmp, w->f2_b, w->ln2_w,
                                             w->ln2_b, R, H, eps);
            /* The next layer's Q/K/V of these rows need only these rows. */
        }
    }
}

/* Rows per thread from which the layers split rows among the threads (two
 * barriers a layer); below it each product splits the packed weights'
 * columns among the threads (gemm.c), so that a short sequence still gets
 * every thread.  Not lower, although the column split reads each weight
 * once where the row split reads it once per thread: the column split
 * meets at a barrier after every product, and when other processes keep a
 * core busy a thread descheduled at a barrier stalls the rest (BERT-base
 * 1 x 128 on 2 threads with one core busy elsewhere, Xeon VM: 284-288 ms
 * row-split at 64 rows a thread against 1,052 ms column-split). With the
 * 8-row kernel tile, 64 rows a thread waste nothing. */
#define ROWSPLIT_MIN_ROWS 64

/* x = LayerNorm(x + (y + b)) on R rows (H wide), split by rows among the
 * session's threads between BLIS calls. */
static void add_layernorm(const bert_session *s, float *x, const float *y,
                          const float *b, const float *gamma,
                          const float *beta, size_t R)
{
    const bert_config *c = &s->m->cfg.pub;
    size_t H = c->hidden;
    int nt = s->n_threads;
    PAR_ROWS(nt, R)
    {
        size_t t0, t1;
        row_range(R, THREAD_ID(), THREAD_COUNT(), &t0, &t1);
        bert__bias_add_layernorm_forward(x + t0 * H, y + t0 * H, b, gamma,
                                         beta, t1 - t0, H, c->layer_norm_eps);
    }
}

/* One layer on all T rows, dense products threaded by BLIS, element-wise
 * passes split by rows between them. */
static void layer_forward(bert_session *s, const bert_input *in, size_t batch,
                          size_t T, const bert_layer_w *w,
                          const bert_layer_mats *mw)
{
    const bert_config *c = &s->m->cfg.pub;
    size_t I = c->intermediate;
    int nt = s->n_threads;
    const bert_wmat *qkv[3] = {&mw->q, &mw->k, &mw->v};
    const float *bs[3] = {w->q_b, w->k_b, w->v_b};
    float *outs[3] = {s->q, s->k, s->v};
    linear_n(s->gemm, 3, outs, s->x, qkv, bs, T);
    attention_forward(s, in, batch, 0);
    /* x = LayerNorm(x + (ctx Wo^T + bo)): bias folded into the norm */
    matmul(s->gemm, s->tmp, s->ctx, &mw->o, T);
    add_layernorm(s, s->x, s->tmp, w->o_b, w->ln1_w, w->ln1_b, T);
    /* inter = act(x W1^T + b1), bias fused with the activation */
    matmul(s->gemm, s->inter, s->x, &mw->f1, T);
    PAR_ROWS(nt, T)
    {
        size_t t0, t1;
        row_range(T, THREAD_ID(), THREAD_COUNT(), &t0, &t1);
        bert__bias_act_forward(s->inter + t0 * I, w->f1_b, t1 - t0, I,
                               c->act);
    }
    /* x = LayerNorm(x + (inter W2^T + b2)) */
    matmul(s->gemm, s->tmp, s->inter, &mw->f2, T);
    add_layernorm(s, s->x, s->tmp, w->f2_b, w->ln2_w, w->ln2_b, T);
}

/* The last layer when only the [CLS] rows are read: keys and values for
 * all T rows (every query attends to them), everything else for the B
 * [CLS] rows, gathered into row b of the buffers (B <= T rows fit) and
 * written back to the sequences' first rows of s->x.  Each [CLS] row goes
 * through the same operations as in layer_forward; only the products'
 * row counts differ, which may change the last float bits. */
static void layer_forward_cls(bert_session *s, const bert_input *in,
                              size_t batch, size_t T, const bert_layer_w *w,
                              const bert_layer_mats *mw)
{
    const bert_config *c = &s->m->cfg.pub;
    size_t H = c->hidden, I = c->intermediate, B = batch;
    const bert_wmat *kv[2] = {&mw->k, &mw->v};
    const float *bs[2] = {w->k_b, w->v_b};
    float *outs[2] = {s->k, s->v};
    linear_n(s->gemm, 2, outs, s->x, kv, bs, T);
    float *xc = s->tmp; /* (B,H) the [CLS] rows */
    for (size_t b = 0, o = 0; b < B; o += in[b++].n)
        memcpy(xc + b * H, s->x + o * H, H * sizeof *xc);
    linear(s->gemm, s->q, xc, &mw->q, w->q_b, B);
    attention_forward(s, in, batch, 1); /* s->ctx rows 0..B-1 */
    float *y = s->q; /* the queries are used up */
    matmul(s->gemm, y, s->ctx, &mw->o, B);
    add_layernorm(s, xc, y, w->o_b, w->ln1_w, w->ln1_b, B);
    matmul(s->gemm, s->inter, xc, &mw->f1, B);
    bert__bias_act_forward(s->inter, w->f1_b, B, I, c->act);
    matmul(s->gemm, y, s->inter, &mw->f2, B);
    add_layernorm(s, xc, y, w->f2_b, w->ln2_w, w->ln2_b, B);
    for (size_t b = 0, o = 0; b < B; o += in[b++].n)
        memcpy(s->x + o * H, xc + b * H, H * sizeof *xc);
}

void bert__encoder_forward(bert_session *s, const bert_input *in,
                           size_t batch, size_t T, int cls_only)
{
    const bert_model *m = s->m;
    size_t L = m->cfg.pub.layers;
    size_t full = cls_only && L > 0 ? L - 1 : L; /* layers on all rows */
    int nt = s->n_threads;
    if (m->w.emb_proj_w) {
        /* E < H: the E-wide embeddings fit in s->tmp (T,H) */
        embeddings_forward(m, s->tmp, in, batch, nt);
        embeddings_project(s, s->tmp, T);
    } else {
        embeddings_forward(m, s->x, in, batch, nt);
    }
    if (nt > 1 && T >= (size_t)nt * ROWSPLIT_MIN_ROWS &&
        attention_threads(s, batch) == nt)
        layers_rowsplit(s, in, batch, T, full, nt);
    else
        for (size_t l = 0; l < full; l++)
            layer_forward(s, in, batch, T, &m->w.layers[l],
                          &m->mats.layers[l]);
    if (full < L)
        layer_forward_cls(s, in, batch, T, &m->w.layers[L - 1],
                          &m->mats.layers[L - 1]);
}
