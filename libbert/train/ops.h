/*
 * libbert/train/ops.h - forward and backward kernels of the trainer (llm.c
 * style: raw float arrays, row-major, N = rows, C = channels).
 *
 * Conventions:
 *  - *_forward writes its outputs (no accumulation).
 *  - *_backward ACCUMULATES (+=) into every gradient it produces (dinp,
 *    dweight, dbias), so residual branches and tied weights just add up;
 *    the caller zeroes gradient buffers.
 *  - Every float matrix product goes through libbert's product layer
 *    (libbert/gemm.h: the `rntm` / `gemm_ctx` arguments are a
 *    bert_gemm_ctx), with the kernels inference uses; the double kernels
 *    use BLIS's dgemm with a rntm_t (or NULL: one thread).  No product
 *    splits its k dimension and every other reduction here runs in a fixed
 *    order, so results are bit-identical for a given thread count.
 *  - Dropout masks come from a counter-based hash of (seed, stream, index):
 *    no RNG state, the backward pass regenerates the same mask.
 *  - The kernels are written once over a scalar type (ops_impl.h): ops.c
 *    instantiates these float ones, ops_double.c double ones for the tests.
 * Internal (hidden) names; tests compile this file in.
 */
#ifndef LIBBERT_TRAIN_OPS_H
#define LIBBERT_TRAIN_OPS_H

#include <stddef.h>
#include <stdint.h>

/* The product context (bert_gemm_ctx in float, rntm_t in double) is passed
 * as void* so one template serves both. */

/* out[N,OC] = inp[N,IC] @ W[OC,IC]^T + bias[OC] (bias may be NULL). */
void bert__t_matmul_forward(float *out, const float *inp, const float *w,
                            const float *bias, size_t N, size_t IC, size_t OC,
                            void *rntm);
/* dinp += dout @ W; dw += dout^T @ inp; dbias += colsum(dout).
 * Any of dinp, dw, dbias may be NULL. */
void bert__t_matmul_backward(float *dinp, float *dw, float *dbias,
                             const float *dout, const float *inp,
                             const float *w, size_t N, size_t IC, size_t OC,
                             void *rntm, int n_threads);

/* LayerNorm over the last dim; mean/rstd [N] are saved for backward. */
void bert__t_layernorm_forward(float *out, float *mean, float *rstd,
                               const float *inp, const float *w,
                               const float *b, size_t N, size_t C, float eps,
                               int n_threads);
void bert__t_layernorm_backward(float *dinp, float *dw, float *db,
                                const float *dout, const float *inp,
                                const float *w, const float *mean,
                                const float *rstd, size_t N, size_t C,
                                int n_threads);

enum { BERT_T_ACT_GELU = 0, BERT_T_ACT_GELU_TANH, BERT_T_ACT_RELU,
       BERT_T_ACT_TANH };

void bert__t_act_forward(int act, float *out, const float *inp, size_t n,
                         int n_threads);
/* dinp += dout * act'(inp) */
void bert__t_act_backward(int act, float *dinp, const float *dout,
                          const float *inp, size_t n, int n_threads);

/* Embeddings on N packed rows: out[r] = wte[ids[r]] + wpe[pos[r]] +
 * wtt[types[r]] (types NULL = 0; wtt NULL = no token types). */
void bert__t_embed_forward(float *out, const int32_t *ids,
                           const int32_t *types, const int32_t *pos,
                           const float *wte, const float *wpe,
                           const float *wtt, size_t N, size_t H);
void bert__t_embed_backward(float *dwte, float *dwpe, float *dwtt,
                            const float *dout, const int32_t *ids,
                            const int32_t *types, const int32_t *pos,
                            size_t N, size_t H);

/* Multi-head self-attention core on packed rows: sequence b has lens[b]
 * rows, following the previous ones; q, k, v (rows ld apart; heads of size
 * d = H/NH side by side) and out (rows H apart).  att holds the softmax
 * probabilities (before dropout) of each sequence's NH blocks of n_b x n_b,
 * sequence after sequence, head after head, as the encoder keeps them
 * (bert__keep_layer); out = dropout(att) @ V.  Dropout with p on the
 * probabilities when p > 0, element i of att masked by bert__t_keep(seed,
 * stream, i, p); scratch holds as many floats as att (unused and may be
 * NULL when p == 0).  The trainer's forward is the encoder's; this one is
 * the reference of the tests. */
void bert__t_attention_forward(float *out, float *att, float *scratch,
                               const float *q, const float *k, const float *v,
                               size_t ld, const size_t *lens, size_t B,
                               size_t H, size_t NH, float p, uint64_t seed,
                               uint64_t stream, int n_threads, void *gemm_ctx);
/* dq, dk, dv += ... (rows ld apart); scratch: as many floats as att */
void bert__t_attention_backward(float *dq, float *dk, float *dv,
                                float *scratch, const float *dout,
                                const float *q, const float *k, const float *v,
                                size_t ld, const float *att,
                                const size_t *lens, size_t B, size_t H,
                                size_t NH, float p, uint64_t seed,
                                uint64_t stream, int n_threads,
                                void *gemm_ctx);

/* The dropout stream of a site of a layer in accumulate call `micro`: the
 * forward (encoder.c) and the backward pass (trainer.c) derive their masks
 * from it. */
enum { BERT_T_SITE_EMB = 0, BERT_T_SITE_ATT, BERT_T_SITE_AO, BERT_T_SITE_FFN,
       BERT_T_SITE_HEAD, BERT_T_SITE_HEAD_IN };
static inline uint64_t bert__t_stream(uint64_t micro, size_t layer, int site)
{
    return (micro << 20) | ((uint64_t)layer << 4) | (uint64_t)site;
}

/* Dropout of n values whose masks are elements base.. of (seed, stream):
 * out[i] = in[i] / (1-p) when bert__t_keep(seed, stream, base + i, p), else
 * 0 (out may be in; p <= 0 copies).  One thread: the forward's attention
 * blocks and row ranges, and the kernels below, share it. */
void bert__t_dropout_at(float *out, const float *in, size_t n, float p,
                        uint64_t seed, uint64_t stream, uint64_t base);
void bert__td_dropout_at(double *out, const double *in, size_t n, double p,
                         uint64_t seed, uint64_t stream, uint64_t base);

/* In-place dropout: x[i] = keep ? x[i]/(1-p) : 0.  Backward is the same
 * operation applied to the gradient (same seed/stream). */
void bert__t_dropout(float *x, size_t n, float p, uint64_t seed,
                     uint64_t stream, int n_threads);
/* 1 when element idx of (seed, stream) is kept at drop probability p. */
int bert__t_keep(uint64_t seed, uint64_t stream, uint64_t idx, float p);

/* The same for loops over many elements of one (seed, stream): the hash is
 * mix(mix(mix(seed) ^ stream) ^ idx), whose first two rounds are the
 * stream's key, computed once: bert__t_keep_at(bert__t_mask_key(seed,
 * stream), idx, p) == bert__t_keep(seed, stream, idx, p). */
static inline uint64_t bert__t_mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static inline uint64_t bert__t_mask_key(uint64_t seed, uint64_t stream)
{
    return bert__t_mix64(bert__t_mix64(seed) ^ stream);
}
static inline int bert__t_keep_at(uint64_t key, uint64_t idx, float p)
{
    float u = (float)(bert__t_mix64(key ^ idx) >> 40) * (1.0f / 16777216.0f);
    return u >= p;
}
/* Uniform double in [0,1) from (seed, stream, idx). */
double bert__t_uniform(uint64_t seed, uint64_t stream, uint64_t idx);
/* Standard normal from (seed, stream, idx). */
double bert__t_normal(uint64_t seed, uint64_t stream, uint64_t idx);

/* Softmax cross-entropy over rows of logits[N,C] with targets (< 0 =
 * ignored).  Returns the summed loss over valid rows (double) and writes
 * dlogits = scale * (softmax - onehot) for valid rows, 0 for ignored rows
 * (dlogits may be NULL: loss only). */
double bert__t_crossentropy(float *dlogits, const float *logits,
                            const int32_t *targets, size_t N, size_t C,
                            float scale, int n_threads);

/* R-Drop's symmetric KL term between rows i and N + i of logits[2N, C]
 * (pairs with mask[i] < 0 skipped; mask may be NULL): returns its sum over
 * the pairs, (KL(p||q) + KL(q||p)) / 2 each, and ADDS scale times its
 * gradient to dlogits (may be NULL: the value only). */
double bert__t_sym_kl(float *dlogits, const float *logits,
                      const int32_t *mask, size_t N, size_t C, float scale);

/* The same kernels in double precision (ops_double.c, linked into the tests
 * only, for finite-difference checks).  Same contracts as above; dropout
 * keeps element i when bert__t_keep(seed, stream, i, (float)p). */
void bert__td_matmul_forward(double *out, const double *inp, const double *w,
                             const double *bias, size_t N, size_t IC,
                             size_t OC, void *rntm);
void bert__td_matmul_backward(double *dinp, double *dw, double *dbias,
                              const double *dout, const double *inp,
                              const double *w, size_t N, size_t IC, size_t OC,
                              void *rntm, int n_threads);
void bert__td_layernorm_forward(double *out, double *mean, double *rstd,
                                const double *inp, const double *w,
                                const double *b, size_t N, size_t C,
                                double eps, int n_threads);
void bert__td_layernorm_backward(double *dinp, double *dw, double *db,
                                 const double *dout, const double *inp,
                                 const double *w, const double *mean,
                                 const double *rstd, size_t N, size_t C,
                                 int n_threads);
void bert__td_act_forward(int act, double *out, const double *inp, size_t n,
                          int n_threads);
void bert__td_act_backward(int act, double *dinp, const double *dout,
                           const double *inp, size_t n, int n_threads);
void bert__td_embed_forward(double *out, const int32_t *ids,
                            const int32_t *types, const int32_t *pos,
                            const double *wte, const double *wpe,
                            const double *wtt, size_t N, size_t H);
void bert__td_embed_backward(double *dwte, double *dwpe, double *dwtt,
                             const double *dout, const int32_t *ids,
                             const int32_t *types, const int32_t *pos,
                             size_t N, size_t H);
void bert__td_attention_forward(double *out, double *att, double *scratch,
                                const double *q, const double *k,
                                const double *v, size_t ld,
                                const size_t *lens, size_t B, size_t H,
                                size_t NH, double p, uint64_t seed,
                                uint64_t stream, int n_threads,
                                void *gemm_ctx);
void bert__td_attention_backward(double *dq, double *dk, double *dv,
                                 double *scratch, const double *dout,
                                 const double *q, const double *k,
                                 const double *v, size_t ld,
                                 const double *att, const size_t *lens,
                                 size_t B, size_t H, size_t NH, double p,
                                 uint64_t seed, uint64_t stream,
                                 int n_threads, void *gemm_ctx);
void bert__td_dropout(double *x, size_t n, double p, uint64_t seed,
                      uint64_t stream, int n_threads);
double bert__td_crossentropy(double *dlogits, const double *logits,
                             const int32_t *targets, size_t N, size_t C,
                             double scale, int n_threads);
double bert__td_sym_kl(double *dlogits, const double *logits,
                       const int32_t *mask, size_t N, size_t C, double scale);

#endif
