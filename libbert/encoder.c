/* encoder.c - the encoder's forward pass: embeddings and the post-norm
 * layers on a packed batch, for inference and, extended, for training.
 *
 * A packed batch is the concatenation of the sequences' tokens (T rows, no
 * padding).  Every Linear runs once over all T rows; attention runs per
 * sequence and per head, so tokens only attend within their own sequence and
 * the result equals running each sequence alone (HF's additive padding mask
 * gives padded keys exactly zero weight, so this also equals HF's padded
 * batch on the real tokens).
 *
 * Training (libbert/train/trainer.c) runs this same forward with a
 * bert__keep (model.h): dropout, and every activation the backward pass
 * reads kept in the trainer's buffers instead of overwritten.  Inference
 * passes NULL and works in place in the session's arena.
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
#include "libbert/train/ops.h"

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
 * to t) and pad for a pad id, from the ids, not from a mask.  Training
 * keeps the sum, the positions and the norm's statistics, and applies
 * dropout. */
static void embeddings_forward(const bert__enc *e, float *x,
                               const bert_input *in, size_t batch,
                               const bert__keep *kp)
{
    const bert_config *c = &e->cfg->pub;
    const bert_weights *w = e->w;
    size_t H = c->embedding_size;
    /* RoBERTa: a real token's position is pos_offset (padding_idx + 1)
     * plus the real tokens before it, a pad's is padding_idx */
    size_t off = e->cfg->pos_offset;
    int32_t pad = e->cfg->pad_token_id;
    float *sum = kp ? kp->emb : x, *row = sum;
    size_t r = 0;
    for (size_t b = 0; b < batch; b++) {
        size_t seen = 0; /* non-pad ids so far (RoBERTa) */
        for (size_t t = 0; t < in[b].n; t++, row += H, r++) {
            const float *we = w->word_emb + (size_t)in[b].ids[t] * H;
            size_t p = t;
            if (off)
                p = in[b].ids[t] == pad ? (size_t)pad : off + seen++;
            if (kp)
                kp->pos[r] = (int32_t)p;
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
    size_t T = r;
    int nt = e->n_threads;
    if (kp) {
        bert__t_layernorm_forward(x, kp->emean, kp->erstd, sum, w->emb_ln_w,
                                  w->emb_ln_b, T, H, c->layer_norm_eps, nt);
        bert__t_dropout(x, T * H, kp->p_hidden, kp->seed,
                        bert__t_stream(kp->micro, 0, BERT_T_SITE_EMB), nt);
        return;
    }
    PAR_ROWS(nt, T)
    {
        size_t t0, t1;
        row_range(T, THREAD_ID(), THREAD_COUNT(), &t0, &t1);
        bert__layernorm_forward(x + t0 * H, x + t0 * H, w->emb_ln_w,
                                w->emb_ln_b, t1 - t0, H, c->layer_norm_eps);
    }
}

/* ELECTRA's embeddings_project: x (T,H) = xe (T,E) Wp^T + bp. */
static void embeddings_project(const bert__enc *e, float *x, const float *xe,
                               size_t T)
{
    const bert_config *c = &e->cfg->pub;
    const bert_weights *w = e->w;
    bert__bias_fill(x, w->emb_proj_b, T, c->hidden);
    bert__sgemm(e->gemm, T, c->hidden, c->embedding_size, 1.0f, xe,
                (ptrdiff_t)c->embedding_size, 1, w->emb_proj_w, 1,
                (ptrdiff_t)c->embedding_size, 1.0f, x, (ptrdiff_t)c->hidden,
                1);
}

/* One layer's Q, K, V and attention context (T,H) each, and, when
 * training, where its probabilities are kept. */
typedef struct {
    const float *q, *k, *v;
    float *ctx;
    const bert__keep_layer *K; /* NULL at inference */
    const bert__keep *kp;
    uint64_t stream;           /* attention dropout's */
} att_io;

/* Scores a chunk of query rows holds at most (inference) where the L2
 * size is unknown: 256 KB.  Otherwise half the L2 (bert__score_chunk). */
#define SCORE_CHUNK ((size_t)64 * 1024)

size_t bert__score_chunk(size_t l2_bytes)
{
    size_t f = l2_bytes / 2 / sizeof(float);
    return f >= 16 * 1024 ? f : SCORE_CHUNK;
}

/* One head of one sequence (n keys from row o of a->k, a->v): Ctx_h =
 * softmax(Q_h K_h^T / sqrt(hs)) V_h for nq query rows (rows H apart from
 * Q and Ctx: the sequence's rows of a->q and a->ctx, or its [CLS] row),
 * the scores in S (cap floats), query rows in chunks of cap / n so that
 * each thread's slice of the score buffer suffices (rows are independent,
 * so chunking changes nothing numerically).  Training passes the kept
 * probability block as S (cap = n * n, one chunk) and drops out into D,
 * element i of the block being element base + i of the layer's masks.
 * The scale is the GEMM's alpha.  One thread, the GEMM's buffers of thread
 * `slot`. */
static void head_forward(const bert__enc *e, const att_io *a, int slot,
                         float *S, size_t cap, const float *Q0, float *Ctx0,
                         size_t nq, size_t o, size_t n, size_t h, float *D,
                         size_t base)
{
    const bert_config *c = &e->cfg->pub;
    size_t H = c->hidden, hs = H / c->heads;
    float scale = 1.0f / sqrtf((float)hs);
    const float *K = a->k + o * H + h * hs;
    const float *V = a->v + o * H + h * hs;
    size_t rc = cap / n;
    /* At inference, chunks small enough for their scores to stay in L2
     * between Q K^T, the softmax's passes and P V (at 512 keys a whole
     * head's 1 MB went out to L3 and back on each; Zen 3 has 512 KB of
     * L2), but no smaller: each chunk packs K^T and V again (a 2 MB L2,
     * Sapphire Rapids: one chunk of 512 keys, 0.98 of the time of four at
     * BERT-base and MiniLM 1 x 512; bench/ab).  Half the L2 leaves the
     * other half to the head's K, V and context.  Training keeps the
     * whole block, which backward reads. */
    size_t chunk = e->score_chunk ? e->score_chunk : SCORE_CHUNK;
    if (!a->K && rc > chunk / n)
        rc = chunk / n > 1 ? chunk / n : 1;
    for (size_t r0 = 0; r0 < nq; r0 += rc) {
        size_t m = nq - r0 < rc ? nq - r0 : rc;
        const float *Q = Q0 + r0 * H + h * hs; /* (m,hs) rows H apart */
        float *Ctx = Ctx0 + r0 * H + h * hs;
        /* S = scale Q K^T (K^T read with strides (1,H)) */
        bert__sgemm1(e->gemm, slot, m, n, hs, scale, Q, (ptrdiff_t)H, 1, K, 1,
                     (ptrdiff_t)H, 0.0f, S, (ptrdiff_t)n, 1);
        bert__softmax_forward(S, m, n, n, 1.0f, NULL);
        const float *P = S;
        if (a->K && a->kp->p_att > 0.0f) {
            bert__t_dropout_at(D, S, m * n, a->kp->p_att, a->kp->seed,
                               a->stream, base);
            P = D;
        }
        /* Ctx_h = P V_h, written straight into the merged layout */
        bert__sgemm1(e->gemm, slot, m, hs, n, 1.0f, P, (ptrdiff_t)n, 1, V,
                     (ptrdiff_t)H, 1, 0.0f, Ctx, (ptrdiff_t)H, 1);
    }
}

/* The (sequence, head) pairs of one layer's attention, shared among the
 * n_th threads of the enclosing parallel region (thread id), each with its
 * own slice of e->scores (at inference).  With cls, only the [CLS] query
 * of each sequence, from row b of a->q into row b of a->ctx.  An orphaned
 * worksharing loop: call it from every thread of the region; it ends with
 * a barrier. */
static void attention_tasks(const bert__enc *e, const att_io *a,
                            const bert_input *in, size_t batch, int cls,
                            int id, int n_th)
{
    size_t H = e->cfg->pub.hidden;
    size_t NH = e->cfg->pub.heads, tasks = batch * NH;
    size_t slice = e->cap_seq * e->cap_seq / (size_t)n_th;
    float *S = a->K ? NULL : e->scores + (size_t)id * slice;
    /* cursor: sequence cb starts at row co and probability block po */
    size_t cb = 0, co = 0, po = 0;
    /* Dynamic chunks reach each thread in increasing order, so the cursor
     * only moves forward. */
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
    for (size_t j = 0; j < tasks; j++) {
        size_t b = j / NH, h = j % NH;
        while (cb < b) {
            co += in[cb].n;
            po += NH * in[cb].n * in[cb].n;
            cb++;
        }
        size_t n = in[b].n;
        if (a->K) {
            size_t at = po + h * n * n;
            head_forward(e, a, id, a->K->probs + at, n * n, a->q + co * H,
                         a->ctx + co * H, n, co, n, h, a->K->dropped + at,
                         at);
        } else if (cls) {
            head_forward(e, a, id, S, slice, a->q + b * H, a->ctx + b * H, 1,
                         co, n, h, NULL, 0);
        } else {
            head_forward(e, a, id, S, slice, a->q + co * H, a->ctx + co * H,
                         n, co, n, h, NULL, 0);
        }
    }
}

/* Threads usable for attention: every score slice must hold at least one
 * row of the longest sequence (cap_seq^2 / nt >= cap_seq). */
static int attention_threads(const bert__enc *e, size_t batch)
{
    int nt = e->n_threads;
    if ((size_t)nt > e->cap_seq)
        nt = (int)e->cap_seq;
    if ((size_t)nt > batch * e->cfg->pub.heads)
        nt = (int)(batch * e->cfg->pub.heads);
    return nt < 1 ? 1 : nt;
}

/* Multi-head self-attention of one layer: a->ctx (T,H) from a->q/k/v.  The
 * (sequence, head) pairs are spread over the session's threads, each with
 * single-threaded GEMMs: these products are too small for BLIS to split
 * well. */
static void attention_forward(const bert__enc *e, const att_io *a,
                              const bert_input *in, size_t batch, int cls)
{
    int nt = attention_threads(e, batch);
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
    attention_tasks(e, a, in, batch, cls, THREAD_ID(), THREAD_COUNT());
}

/* Rows per thread from which the layers split rows among the threads (two
 * barriers a layer), where the tensor-parallel layers (below) do not run;
 * below it each product splits the packed weights' columns among the
 * threads (gemm.c), so that a short sequence still gets every thread.
 * Not lower, although the column split reads each weight
 * once where the row split reads it once per thread: the column split
 * meets at a barrier after every product, and when other processes keep a
 * core busy a thread descheduled at a barrier stalls the rest (BERT-base
 * 1 x 128 on 2 threads with one core busy elsewhere, Xeon VM: 284-288 ms
 * row-split at 64 rows a thread against 1,052 ms column-split). With the
 * 8-row kernel tile, 64 rows a thread waste nothing. */
#define ROWSPLIT_MIN_ROWS 64

/* out = LayerNorm(res + dropout(y + b)) on R rows (H wide): the post-norm
 * residual, split by rows among nt threads between products.  Inference:
 * in place (out == res), no dropout.  Training keeps the sum in r and the
 * norm's statistics in mean and rstd, and drops out with p. */
static void residual_norm(const bert__enc *e, int nt, float *out,
                          const float *res, float *y, const float *b,
                          const float *gamma, const float *beta, size_t R,
                          float *r, float *mean, float *rstd,
                          const bert__keep *kp, float p, uint64_t stream)
{
    const bert_config *c = &e->cfg->pub;
    size_t H = c->hidden;
    if (r) {
        PAR_ROWS(nt, R)
        {
            size_t t0, t1;
            row_range(R, THREAD_ID(), THREAD_COUNT(), &t0, &t1);
            for (size_t t = t0; t < t1; t++)
                for (size_t i = 0; i < H; i++)
                    y[t * H + i] += b[i];
            if (p > 0.0f)
                bert__t_dropout_at(y + t0 * H, y + t0 * H, (t1 - t0) * H, p,
                                   kp->seed, stream, t0 * H);
            for (size_t i = t0 * H; i < t1 * H; i++)
                r[i] = res[i] + y[i];
        }
        bert__t_layernorm_forward(out, mean, rstd, r, gamma, beta, R, H,
                                  c->layer_norm_eps, nt);
        return;
    }
    PAR_ROWS(nt, R)
    {
        size_t t0, t1;
        row_range(R, THREAD_ID(), THREAD_COUNT(), &t0, &t1);
        bert__bias_add_layernorm_forward(out + t0 * H, y + t0 * H, b, gamma,
                                         beta, t1 - t0, H, c->layer_norm_eps);
    }
}

/* inter (R,I) = act(inter + b), the feed-forward epilogue, split by rows
 * among nt threads; training keeps inter + b in pre. */
static void activation(const bert__enc *e, int nt, float *inter,
                       const float *b, size_t R, float *pre)
{
    const bert_config *c = &e->cfg->pub;
    size_t I = c->intermediate;
    PAR_ROWS(nt, R)
    {
        size_t t0, t1;
        row_range(R, THREAD_ID(), THREAD_COUNT(), &t0, &t1);
        if (pre)
            for (size_t t = t0; t < t1; t++)
                for (size_t i = 0; i < I; i++)
                    pre[t * I + i] = inter[t * I + i] + b[i];
        bert__bias_act_forward(inter + t0 * I, b, t1 - t0, I, c->act);
    }
}

/* Layer l on rows [t0, t1) of the T rows.  Inference works in place in
 * e's buffers (x in and out); training (kp) reads the previous layer's kept
 * output and keeps its own activations.  Two ways to share the work:
 *  - slot < 0 (t0 = 0, t1 = T): products split among the threads by the
 *    product layer (by columns of the packed weights where rows are few),
 *    element-wise passes by rows between them;
 *  - slot >= 0: thread `slot` of a parallel region of n_th threads, each
 *    with its own rows and single-threaded products, so that a layer has
 *    two barriers (after Q/K/V, after attention) instead of one per
 *    product.  Each row is computed the same way either way. */
static void layer_rows(const bert__enc *e, const bert_input *in, size_t batch,
                       size_t l, const bert__keep *kp, size_t t0, size_t t1,
                       int slot, int n_th)
{
    const bert_config *c = &e->cfg->pub;
    size_t H = c->hidden, I = c->intermediate, R = t1 - t0;
    int nt = slot < 0 ? e->n_threads : 1;
    const bert_gemm_ctx *g = e->gemm;
    const bert_layer_w *w = &e->w->layers[l];
    const bert_layer_mats *mw = &e->mats[l];
    const bert__keep_layer *K = kp ? &kp->layers[l] : NULL;
    const float *x = (K ? (l ? kp->layers[l - 1].x2 : kp->x0) : e->x) + t0 * H;
    float *x1 = (K ? K->x1 : e->x) + t0 * H, *x2 = (K ? K->x2 : e->x) + t0 * H;
    float *inter = (K ? K->fca : e->inter) + t0 * I, *tmp = e->tmp + t0 * H;
    float p_ao = kp ? kp->p_ao : 0.0f, p_h = kp ? kp->p_hidden : 0.0f;
    uint64_t mi = kp ? kp->micro : 0;
    /* Q, K, V of these rows: one product, which packs x once (gemm.h) */
    att_io a = {K ? K->q : e->q, K ? K->k : e->k, K ? K->v : e->v,
                K ? K->ctx : e->ctx, K, kp,
                bert__t_stream(mi, l, BERT_T_SITE_ATT)};
    const bert_wmat *qkv[3] = {&mw->q, &mw->k, &mw->v};
    const float *bs[3] = {w->q_b, w->k_b, w->v_b};
    float *outs[3] = {(float *)a.q + t0 * H, (float *)a.k + t0 * H,
                      (float *)a.v + t0 * H};
    for (int j = 0; j < 3; j++)
        bert__bias_fill(outs[j], bs[j], R, H);
    bert__gemm_wn(g, slot, R, x, H, 3, qkv, 1.0f, outs, H);
    /* attention reads every row's keys and values */
    if (slot < 0) {
        attention_forward(e, &a, in, batch, 0);
    } else {
#ifdef _OPENMP
#pragma omp barrier
#endif
        attention_tasks(e, &a, in, batch, 0, slot, n_th); /* ends with a barrier */
    }
    float *ctx = a.ctx + t0 * H;
    /* x1 = LayerNorm(x + (ctx Wo^T + bo)): bias folded into the norm */
    bert__gemm_w(g, slot, R, ctx, H, &mw->o, 0.0f, tmp, H);
    residual_norm(e, nt, x1, x, tmp, w->o_b, w->ln1_w, w->ln1_b, R,
                  K ? K->r1 + t0 * H : NULL, K ? K->mean1 + t0 : NULL,
                  K ? K->rstd1 + t0 : NULL, kp, p_ao,
                  bert__t_stream(mi, l, BERT_T_SITE_AO));
    /* inter = act(x1 W1^T + b1), bias fused with the activation */
    bert__gemm_w(g, slot, R, x1, H, &mw->f1, 0.0f, inter, I);
    activation(e, nt, inter, w->f1_b, R, K ? K->fch + t0 * I : NULL);
    /* x2 = LayerNorm(x1 + (inter W2^T + b2)) */
    bert__gemm_w(g, slot, R, inter, I, &mw->f2, 0.0f, tmp, H);
    residual_norm(e, nt, x2, x1, tmp, w->f2_b, w->ln2_w, w->ln2_b, R,
                  K ? K->r2 + t0 * H : NULL, K ? K->mean2 + t0 : NULL,
                  K ? K->rstd2 + t0 : NULL, kp, p_h,
                  bert__t_stream(mi, l, BERT_T_SITE_FFN));
}

/* ---- tensor-parallel layers ------------------------------------------------
 * A few rows on two threads (one sentence on two cores): splitting the
 * rows gives each thread too few of them to amortise streaming every
 * weight matrix (BERT-base 1 x 128 on 2 threads, row split: the kernels
 * ran at about 68% of the FMA peak against 85-89% on one thread), and
 * splitting every product's columns meets at a barrier after each one.
 * Instead each thread owns whole heads and a share of the feed-forward
 * columns for all rows, as Megatron-LM splits a layer across devices:
 *  - Q, K, V: the columns of its heads; attention on its heads; the output
 *    projection over the depth of its heads' context columns: a partial
 *    (T,H) sum of its own;
 *  - barrier; each thread adds the partials, the bias and the residual and
 *    normalises every row into its own copy of the hidden state (the
 *    copies are bit-identical: the same operations in the same order);
 *  - the first feed-forward product on its share of the columns, the
 *    activation on them, the second product over that depth: a partial;
 *  - barrier; the same sum and norm.
 * Two barriers a layer, as the row split has, and each thread streams
 * 1/nt of the weights.  The partials' sum rounds differently from one
 * product over the whole depth, so results move in the last bits with the
 * thread count (the parity tests run 1 and 2 threads).  Two threads
 * only: each thread sums every partial and normalises every row, work that
 * grows with the thread count (BERT-base 1 x 128 on the 16-core Xeon device
 * machine: 10-14% faster than the row split on 2 threads, 21% slower on
 * 4).  Inference and FP32 panels only.  Where a thread's heads begin
 * inside a 48-column panel (not BERT-base's: 6 heads of 64 are 8 panels),
 * it computes that panel's whole tile and keeps its own columns.  The
 * shares follow the threads OpenMP gives the region, which may be fewer
 * than asked (nested in a caller's region: one). */
#define TP_MAX_ROWS 256
#define TP_MAX_THREADS 2
#define TP_MIN_HIDDEN 512

/* Heads [*h0, *h1) of thread id of nt. */
static void tp_heads(size_t NH, int id, int nt, size_t *h0, size_t *h1)
{
    row_range(NH, id, nt, h0, h1);
}

/* Feed-forward columns [*c0, *c1) of thread id: whole panels. */
static void tp_cols(size_t I, int id, int nt, size_t *c0, size_t *c1)
{
    size_t p0, p1;
    row_range((I + BERT_PANEL - 1) / BERT_PANEL, id, nt, &p0, &p1);
    *c0 = p0 * BERT_PANEL;
    *c1 = p1 * BERT_PANEL < I ? p1 * BERT_PANEL : I;
}

size_t bert__encode_tp_floats(const bert_config *c, int nt, size_t T)
{
    if (nt < 2 || nt > TP_MAX_THREADS)
        return 0;
    if (T > TP_MAX_ROWS)
        T = TP_MAX_ROWS;
    size_t n = (size_t)nt, H = c->hidden;
    if (H < TP_MIN_HIDDEN)
        return 0;
    /* two partial sums per thread, nt - 1 copies of x */
    return (3 * n - 1) * T * H;
}

/* Whether the layers run tensor-parallel for T rows. */
static int tp_usable(const bert__enc *e, size_t T, size_t full)
{
    const bert_config *c = &e->cfg->pub;
    int nt = e->n_threads;
    size_t need = bert__encode_tp_floats(c, nt, T);
    if (need == 0 || need > e->tp_cap || !e->tp || T > TP_MAX_ROWS ||
        full == 0 || c->heads < (size_t)nt || e->cap_seq < (size_t)nt)
        return 0;
    for (size_t l = 0; l < full; l++) {
        const bert_layer_mats *m = &e->mats[l];
        if (!bert__gemm_w_part_ok(e->gemm, &m->q) ||
            !bert__gemm_w_part_ok(e->gemm, &m->k) ||
            !bert__gemm_w_part_ok(e->gemm, &m->v) ||
            !bert__gemm_w_part_ok(e->gemm, &m->o) ||
            !bert__gemm_w_part_ok(e->gemm, &m->f1) ||
            !bert__gemm_w_part_ok(e->gemm, &m->f2))
            return 0;
    }
    return 1;
}

/* x (T,H) = LayerNorm((x + P_1 + ... + P_nt-1) + (P_0 + b)) in place, the
 * partials P_t at P + t*T*H: the same order on every thread, so every
 * copy of x stays the same. */
static void tp_reduce_norm(const bert__enc *e, float *x, const float *P,
                           int nt, size_t T, const float *b,
                           const float *gamma, const float *beta)
{
    const bert_config *c = &e->cfg->pub;
    size_t H = c->hidden;
    for (int t = 1; t < nt; t++) {
        const float *q = P + (size_t)t * T * H;
        for (size_t i = 0; i < T * H; i++)
            x[i] += q[i];
    }
    bert__bias_add_layernorm_forward(x, P, b, gamma, beta, T, H,
                                     c->layer_norm_eps);
}

/* Layers [0, full) on all T rows, tensor-parallel (above); the result in
 * e->x, which is thread 0's copy. */
static void layers_tp(const bert__enc *e, const bert_input *in, size_t batch,
                      size_t T, size_t full)
{
    const bert_config *c = &e->cfg->pub;
    size_t H = c->hidden, I = c->intermediate, NH = c->heads, hs = H / NH;
    int nt = e->n_threads;
    const bert_gemm_ctx *g = e->gemm;
    float *PA = e->tp, *PB = PA + (size_t)nt * T * H;
    float *X = PB + (size_t)nt * T * H;
    size_t slice = e->cap_seq * e->cap_seq / (size_t)nt;
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
#endif
    {
        int id = THREAD_ID(), n_th = THREAD_COUNT(); /* n_th <= nt */
        size_t h0, h1, c0, c1;
        tp_heads(NH, id, n_th, &h0, &h1);
        tp_cols(I, id, n_th, &c0, &c1);
        size_t a0 = h0 * hs, a1 = h1 * hs; /* its heads' columns */
        float *x = id ? X + (size_t)(id - 1) * T * H : e->x;
        float *pa = PA + (size_t)id * T * H, *pb = PB + (size_t)id * T * H;
        float *S = e->scores + (size_t)id * slice;
        if (id)
            memcpy(x, e->x, T * H * sizeof *x);
        for (size_t l = 0; l < full; l++) {
            const bert_layer_w *w = &e->w->layers[l];
            const bert_layer_mats *mw = &e->mats[l];
            const bert_wmat *qkv[3] = {&mw->q, &mw->k, &mw->v};
            const float *bs[3] = {w->q_b, w->k_b, w->v_b};
            float *outs[3] = {e->q, e->k, e->v};
            for (int j = 0; j < 3; j++)
                for (size_t r = 0; r < T; r++)
                    memcpy(outs[j] + r * H + a0, bs[j] + a0,
                           (a1 - a0) * sizeof(float));
            bert__gemm_w_part(g, id, T, x, H, 3, qkv, 0, H, a0, a1, 1.0f,
                              outs, H);
            att_io a = {e->q, e->k, e->v, e->ctx, NULL, NULL, 0};
            for (size_t b = 0, o = 0; b < batch; o += in[b++].n)
                for (size_t h = h0; h < h1; h++)
                    head_forward(e, &a, id, S, slice, e->q + o * H,
                                 e->ctx + o * H, in[b].n, o, in[b].n, h, NULL,
                                 0);
            const bert_wmat *wo = &mw->o, *f1 = &mw->f1, *f2 = &mw->f2;
            bert__gemm_w_part(g, id, T, e->ctx, H, 1, &wo, a0, a1, 0, H, 0.0f,
                              &pa, H);
#ifdef _OPENMP
#pragma omp barrier
#endif
            tp_reduce_norm(e, x, PA, n_th, T, w->o_b, w->ln1_w, w->ln1_b);
            float *inter = e->inter;
            bert__gemm_w_part(g, id, T, x, H, 1, &f1, 0, H, c0, c1, 0.0f,
                              &inter, I);
            for (size_t r = 0; r < T; r++)
                bert__bias_act_forward(inter + r * I + c0, w->f1_b + c0, 1,
                                       c1 - c0, c->act);
            bert__gemm_w_part(g, id, T, inter, I, 1, &f2, c0, c1, 0, H, 0.0f,
                              &pb, H);
#ifdef _OPENMP
#pragma omp barrier
#endif
            tp_reduce_norm(e, x, PB, n_th, T, w->f2_b, w->ln2_w, w->ln2_b);
        }
    }
}

/* The last layer when only the [CLS] rows are read: keys and values for
 * all T rows (every query attends to them), everything else for the B
 * [CLS] rows, gathered into row b of the buffers (B <= T rows fit) and
 * written back to the sequences' first rows of e->x.  Each [CLS] row goes
 * through the same operations as in layer_rows; only the products' row
 * counts differ, which may change the last float bits.  Inference only. */
static void layer_forward_cls(const bert__enc *e, const bert_input *in,
                              size_t batch, size_t T, size_t l)
{
    const bert_layer_w *w = &e->w->layers[l];
    const bert_layer_mats *mw = &e->mats[l];
    size_t H = e->cfg->pub.hidden, B = batch;
    const bert_wmat *kv[2] = {&mw->k, &mw->v};
    const float *bs[2] = {w->k_b, w->v_b};
    float *outs[2] = {e->k, e->v};
    linear_n(e->gemm, 2, outs, e->x, kv, bs, T);
    float *xc = e->tmp; /* (B,H) the [CLS] rows */
    for (size_t b = 0, o = 0; b < B; o += in[b++].n)
        memcpy(xc + b * H, e->x + o * H, H * sizeof *xc);
    linear(e->gemm, e->q, xc, &mw->q, w->q_b, B);
    att_io a = {e->q, e->k, e->v, e->ctx, NULL, NULL, 0};
    attention_forward(e, &a, in, batch, 1); /* e->ctx rows 0..B-1 */
    float *y = e->q; /* the queries are used up */
    matmul(e->gemm, y, e->ctx, &mw->o, B);
    residual_norm(e, e->n_threads, xc, xc, y, w->o_b, w->ln1_w, w->ln1_b, B,
                  NULL, NULL, NULL, NULL, 0.0f, 0);
    matmul(e->gemm, e->inter, xc, &mw->f1, B);
    activation(e, e->n_threads, e->inter, w->f1_b, B, NULL);
    matmul(e->gemm, y, e->inter, &mw->f2, B);
    residual_norm(e, e->n_threads, xc, xc, y, w->f2_b, w->ln2_w, w->ln2_b, B,
                  NULL, NULL, NULL, NULL, 0.0f, 0);
    for (size_t b = 0, o = 0; b < B; o += in[b++].n)
        memcpy(e->x + o * H, xc + b * H, H * sizeof *xc);
}

/* All the layers on one block of sequences (T rows). */
static void encode_block(const bert__enc *e, const bert_input *in,
                         size_t batch, size_t T, int cls_only,
                         const bert__keep *kp)
{
    size_t L = e->cfg->pub.layers;
    size_t full = cls_only && !kp && L > 0 ? L - 1 : L; /* on all rows */
    int nt = e->n_threads;
    float *x = kp ? kp->x0 : e->x;
    if (e->w->emb_proj_w) {
        /* E < H: at inference the E-wide embeddings fit in e->tmp (T,H) */
        float *xe = kp ? kp->x0e : e->tmp;
        embeddings_forward(e, xe, in, batch, kp);
        embeddings_project(e, x, xe, T);
    } else {
        embeddings_forward(e, x, in, batch, kp);
    }
    if (!kp && tp_usable(e, T, full)) {
        layers_tp(e, in, batch, T, full);
    } else if (!kp && nt > 1 && T >= (size_t)nt * ROWSPLIT_MIN_ROWS &&
               attention_threads(e, batch) == nt) {
        /* rows split among the threads for all the layers: the next
         * layer's Q/K/V of a thread's rows need only those rows */
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
#endif
        {
            int id = THREAD_ID(), n_th = THREAD_COUNT();
            size_t t0, t1;
            row_range(T, id, n_th, &t0, &t1);
            for (size_t l = 0; l < full; l++)
                layer_rows(e, in, batch, l, NULL, t0, t1, id, n_th);
        }
    } else {
        for (size_t l = 0; l < full; l++)
            layer_rows(e, in, batch, l, kp, 0, T, -1, 0);
    }
    if (full < L)
        layer_forward_cls(e, in, batch, T, L - 1);
}

/* Rows per thread of one inference pass through all the layers.  A large
 * batch goes through the encoder in blocks of whole sequences of about this
 * many rows a thread, so that a block's activations (its 3,072-wide
 * feed-forward rows above all) stay in the caches from one product to the
 * next instead of streaming through memory, at the price of reading each
 * weight once per block.  BERT-base 32 x 128 on the Xeon VM (family 6
 * model 207), three interleaved runs each, against one block of 4,096
 * rows: +3% on one thread (6.40 against 6.20 seq/s), +4% on two (12.78
 * against 12.27).  Chunking the feed-forward rows further (128 or 256)
 * did not measurably help, 1 x 512 included.  Every row is computed the
 * same way in any block, so the results do not change.  Training keeps
 * every row's activations and runs one block. */
#define BLOCK_ROWS 512

void bert__encode(const bert__enc *e, const bert_input *in, size_t batch,
                  size_t T, int cls_only, const bert__keep *kp)
{
    size_t cap = BLOCK_ROWS * (size_t)(e->n_threads > 1 ? e->n_threads : 1);
    if (kp || T <= cap) {
        encode_block(e, in, batch, T, cls_only, kp);
        return;
    }
    /* each block writes its rows of x; the scratch buffers are reused
     * from their start, which keeps them in the caches */
    bert__enc blk = *e;
    size_t H = e->cfg->pub.hidden;
    for (size_t b0 = 0, o = 0; b0 < batch;) {
        size_t b1 = b0, rows = 0;
        do
            rows += in[b1++].n;
        while (b1 < batch && rows + in[b1].n <= cap);
        blk.x = e->x + o * H;
        encode_block(&blk, in + b0, b1 - b0, rows, cls_only, NULL);
        o += rows;
        b0 = b1;
    }
}

void bert__encoder_forward(bert_session *s, const bert_input *in,
                           size_t batch, size_t T, int cls_only)
{
    const bert_model *m = s->m;
    bert__enc e = {&m->cfg,  &m->w,   m->mats.layers, s->gemm,
                   s->n_threads, s->x, s->q,  s->k,
                   s->v,     s->ctx,  s->tmp,         s->inter,
                   s->scores, s->cap_seq, s->tp, s->tp_cap, s->score_chunk};
    bert__encode(&e, in, batch, T, cls_only, NULL);
}
