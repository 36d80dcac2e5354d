/*
 * libbert/train/ops_impl.h - the trainer's kernels (see ops.h), written once
 * over a scalar type `real` and instantiated per type the way BLIS makes its
 * typed APIs.  A translation unit defines
 *   OPS_REAL    the scalar type (float, double),
 *   OPS(name)   the exported name of kernel `name` (bert__t_##name, ...),
 *   OPS_GEMM    the GEMM of that type, called as OPS_GEMM(ctx, slot, m, n,
 *               k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc):
 *               libbert's product layer in float (ctx a bert_gemm_ctx,
 *               slot < 0 for its threads, else the calling thread's
 *               slot), BLIS's dgemm in double (ctx a rntm_t or NULL),
 * and includes this file once.  ops.c makes the float kernels the trainer
 * runs (bert__t_*); ops_double.c makes double ones (bert__td_*) so the tests
 * can check the derivatives against finite differences in double precision.
 *
 * The trainer's forward is the encoder's (libbert/encoder.c, extended with
 * what backward needs); the forward kernels here serve the heads, and, in
 * double, the tests' reference for the finite differences.  Math goes
 * through <tgmath.h> (exp of a float is expf) and constants are (real)
 * casts of literals, so both instantiations run the same code.
 */
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>
#ifdef _OPENMP
#include <omp.h>
#define OPS_SLOT() omp_get_thread_num()
#else
#define OPS_SLOT() 0
#endif

#include "libbert/train/ops.h"

typedef OPS_REAL real;

#define OMP_FOR _Pragma("omp parallel for schedule(static) num_threads(nth)")
/* An element-wise loop without a reduction, vectorized (GCC's -O2 leaves
 * loops of unknown length scalar): the same operations per element, so the
 * same bits. */
#define SIMD _Pragma("omp simd")

static int clamp_threads(int n) { return n < 1 ? 1 : n; }

/* ---- matmul ------------------------------------------------------------ */

static void gemm(size_t m, size_t n, size_t k, real alpha, const real *a,
                 size_t rsa, size_t csa, const real *b, size_t rsb,
                 size_t csb, real beta, real *c, size_t rsc, size_t csc,
                 void *ctx, int slot)
{
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        /* C = beta*C */
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++)
                c[i * rsc + j * csc] *= beta;
        return;
    }
    OPS_GEMM(ctx, slot, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c,
             rsc, csc);
}

void OPS(matmul_forward)(real *out, const real *inp, const real *w,
                         const real *bias, size_t N, size_t IC, size_t OC,
                         void *rntm)
{
    real beta = 0;
    if (bias) {
        for (size_t i = 0; i < N; i++)
            memcpy(out + i * OC, bias, OC * sizeof(real));
        beta = 1;
    }
    gemm(N, OC, IC, 1, inp, IC, 1, w, 1, IC, beta, out, OC, 1, rntm, -1);
}

void OPS(matmul_backward)(real *dinp, real *dw, real *dbias, const real *dout,
                          const real *inp, const real *w, size_t N, size_t IC,
                          size_t OC, void *rntm, int n_threads)
{
    int nth = clamp_threads(n_threads);
    if (dinp)
        gemm(N, IC, OC, 1, dout, OC, 1, w, IC, 1, 1, dinp, IC, 1, rntm, -1);
    if (dw)
        gemm(OC, IC, N, 1, dout, 1, OC, inp, IC, 1, 1, dw, IC, 1, rntm, -1);
    if (dbias) {
        /* Column sums in blocks of 64 columns, rows in order within each
         * (the same additions in the same order as a loop per column, so
         * the same bits), reading dout row by row instead of down its
         * columns. */
        size_t nb = (OC + 63) / 64;
        OMP_FOR
        for (size_t blk = 0; blk < nb; blk++) {
            size_t o0 = blk * 64, o1 = o0 + 64 < OC ? o0 + 64 : OC;
            real s[64] = {0};
            for (size_t i = 0; i < N; i++) {
                const real *g = dout + i * OC;
                SIMD
                for (size_t o = o0; o < o1; o++)
                    s[o - o0] += g[o];
            }
            for (size_t o = o0; o < o1; o++)
                dbias[o] += s[o - o0];
        }
    }
}

/* ---- LayerNorm --------------------------------------------------------- */

void OPS(layernorm_forward)(real *out, real *mean, real *rstd,
                            const real *inp, const real *w, const real *b,
                            size_t N, size_t C, real eps, int n_threads)
{
    int nth = clamp_threads(n_threads);
    OMP_FOR
    for (size_t i = 0; i < N; i++) {
        const real *x = inp + i * C;
        real m = 0;
        for (size_t c = 0; c < C; c++)
            m += x[c];
        m /= (real)C;
        real v = 0;
        for (size_t c = 0; c < C; c++) {
            real d = x[c] - m;
            v += d * d;
        }
        v /= (real)C;
        real s = (real)1 / sqrt(v + eps);
        real *o = out + i * C;
        SIMD
        for (size_t c = 0; c < C; c++)
            o[c] = (x[c] - m) * s * w[c] + b[c];
        mean[i] = m;
        rstd[i] = s;
    }
}

void OPS(layernorm_backward)(real *dinp, real *dw, real *db, const real *dout,
                             const real *inp, const real *w, const real *mean,
                             const real *rstd, size_t N, size_t C,
                             int n_threads)
{
    int nth = clamp_threads(n_threads);
    OMP_FOR
    for (size_t i = 0; i < N; i++) {
        const real *x = inp + i * C, *g = dout + i * C;
        real m = mean[i], s = rstd[i];
        real a = 0, bsum = 0;
        for (size_t c = 0; c < C; c++) {
            real xh = (x[c] - m) * s;
            real gw = g[c] * w[c];
            a += gw;
            bsum += gw * xh;
        }
        a /= (real)C;
        bsum /= (real)C;
        real *d = dinp + i * C;
        SIMD
        for (size_t c = 0; c < C; c++) {
            real xh = (x[c] - m) * s;
            d[c] += (g[c] * w[c] - a - xh * bsum) * s;
        }
    }
    if (dw || db) {
        /* Column sums in blocks of 64 columns, rows in order within each
         * (as matmul_backward's bias: the same bits as a loop per column,
         * reading the rows contiguously). */
        size_t nb = (C + 63) / 64;
        OMP_FOR
        for (size_t blk = 0; blk < nb; blk++) {
            size_t c0 = blk * 64, c1 = c0 + 64 < C ? c0 + 64 : C;
            real sw[64] = {0}, sb[64] = {0};
            for (size_t i = 0; i < N; i++) {
                const real *g = dout + i * C, *x = inp + i * C;
                real m = mean[i], s = rstd[i];
                SIMD
                for (size_t c = c0; c < c1; c++) {
                    sw[c - c0] += g[c] * (x[c] - m) * s;
                    sb[c - c0] += g[c];
                }
            }
            for (size_t c = c0; c < c1; c++) {
                if (dw)
                    dw[c] += sw[c - c0];
                if (db)
                    db[c] += sb[c - c0];
            }
        }
    }
}

/* ---- activations ------------------------------------------------------- */

#define GELU_K ((real)0.79788456080286535588)       /* sqrt(2/pi) */
#define INV_SQRT2 ((real)0.70710678118654752440)    /* 1/sqrt(2) */
#define INV_SQRT2PI ((real)0.39894228040143267794)  /* 1/sqrt(2 pi) */
#define GELU_C ((real)0.044715)

void OPS(act_forward)(int act, real *out, const real *inp, size_t n,
                      int n_threads)
{
    int nth = clamp_threads(n_threads);
    OMP_FOR
    for (size_t i = 0; i < n; i++) {
        real x = inp[i];
        real y;
        switch (act) {
        case BERT_T_ACT_GELU:
            y = (real)0.5 * x * ((real)1 + erf(x * INV_SQRT2));
            break;
        case BERT_T_ACT_GELU_TANH:
            y = (real)0.5 * x *
                ((real)1 + tanh(GELU_K * (x + GELU_C * x * x * x)));
            break;
        case BERT_T_ACT_RELU:
            y = x > 0 ? x : 0;
            break;
        default:
            y = tanh(x);
            break;
        }
        out[i] = y;
    }
}

void OPS(act_backward)(int act, real *dinp, const real *dout, const real *inp,
                       size_t n, int n_threads)
{
    int nth = clamp_threads(n_threads);
#ifdef OPS_GELU_BACKWARD
    if (act == BERT_T_ACT_GELU) {
        size_t nb = (n + 4095) / 4096;
        OMP_FOR
        for (size_t b = 0; b < nb; b++) {
            size_t i0 = b * 4096, m = n - i0 < 4096 ? n - i0 : 4096;
            OPS_GELU_BACKWARD(dinp + i0, dout + i0, inp + i0, m);
        }
        return;
    }
#endif
    OMP_FOR
    for (size_t i = 0; i < n; i++) {
        real x = inp[i];
        real d;
        switch (act) {
        case BERT_T_ACT_GELU:
            d = (real)0.5 * ((real)1 + erf(x * INV_SQRT2)) +
                x * INV_SQRT2PI * exp((real)-0.5 * x * x);
            break;
        case BERT_T_ACT_GELU_TANH: {
            real u = GELU_K * (x + GELU_C * x * x * x);
            real t = tanh(u);
            /* 3 * GELU_C rounds in real, as 3.0f * 0.044715f did */
            real du = GELU_K * ((real)1 + (real)3 * GELU_C * x * x);
            d = (real)0.5 * ((real)1 + t) +
                (real)0.5 * x * ((real)1 - t * t) * du;
            break;
        }
        case BERT_T_ACT_RELU:
            d = x > 0 ? 1 : 0;
            break;
        default: {
            real t = tanh(x);
            d = (real)1 - t * t;
            break;
        }
        }
        dinp[i] += dout[i] * d;
    }
}

/* ---- embeddings -------------------------------------------------------- */

void OPS(embed_forward)(real *out, const int32_t *ids, const int32_t *types,
                        const int32_t *pos, const real *wte, const real *wpe,
                        const real *wtt, size_t N, size_t H)
{
    for (size_t r = 0; r < N; r++) {
        const real *e = wte + (size_t)ids[r] * H;
        const real *p = wpe + (size_t)pos[r] * H;
        const real *y = wtt ? wtt + (size_t)(types ? types[r] : 0) * H : NULL;
        real *o = out + r * H;
        for (size_t h = 0; h < H; h++)
            o[h] = e[h] + p[h] + (y ? y[h] : 0);
    }
}

void OPS(embed_backward)(real *dwte, real *dwpe, real *dwtt, const real *dout,
                         const int32_t *ids, const int32_t *types,
                         const int32_t *pos, size_t N, size_t H)
{
    for (size_t r = 0; r < N; r++) {
        const real *g = dout + r * H;
        real *e = dwte + (size_t)ids[r] * H;
        real *p = dwpe + (size_t)pos[r] * H;
        real *y = dwtt ? dwtt + (size_t)(types ? types[r] : 0) * H : NULL;
        for (size_t h = 0; h < H; h++) {
            e[h] += g[h];
            p[h] += g[h];
            if (y)
                y[h] += g[h];
        }
    }
}

/* ---- dropout ----------------------------------------------------------- */

/* The mask depends only on (seed, stream, index, (float)p), so both
 * instantiations drop the same elements. */
void OPS(dropout_at)(real *out, const real *in, size_t n, real p,
                     uint64_t seed, uint64_t stream, uint64_t base)
{
    real sc = p > 0 ? (real)1 / ((real)1 - p) : 1;
    uint64_t key = bert__t_mask_key(seed, stream);
#ifdef OPS_DROPOUT_FAST
    /* the same mask, several elements at a time (0: not on this CPU) */
    if (p > 0 && OPS_DROPOUT_FAST(out, in, n, p, sc, key, base))
        return;
#endif
    for (size_t i = 0; i < n; i++)
        out[i] = p <= 0 || bert__t_keep_at(key, base + i, (float)p)
                     ? in[i] * sc
                     : 0;
}

void OPS(dropout)(real *x, size_t n, real p, uint64_t seed, uint64_t stream,
                  int n_threads)
{
    if (p <= 0)
        return;
    int nth = clamp_threads(n_threads);
    /* in blocks of 4096, each with its own mask offset */
    size_t nb = (n + 4095) / 4096;
    OMP_FOR
    for (size_t b = 0; b < nb; b++) {
        size_t i0 = b * 4096, m = n - i0 < 4096 ? n - i0 : 4096;
        OPS(dropout_at)(x + i0, x + i0, m, p, seed, stream, i0);
    }
}

/* ---- attention --------------------------------------------------------- */

/* Where block bh = b * NH + h of the probabilities lies: sequence b's
 * first row *ro and its first head's block *po (NH n_b^2 floats a
 * sequence). */
static void OPS(block_of)(const size_t *lens, size_t NH, size_t bh,
                          size_t *ro, size_t *po)
{
    *ro = *po = 0;
    for (size_t b = 0; b < bh / NH; b++) {
        *ro += lens[b];
        *po += NH * lens[b] * lens[b];
    }
}

void OPS(attention_forward)(real *out, real *att, real *scratch,
                            const real *q0, const real *k0, const real *v0,
                            size_t ld, const size_t *lens, size_t B, size_t H,
                            size_t NH, real p, uint64_t seed, uint64_t stream,
                            int n_threads, void *gemm_ctx)
{
    int nth = clamp_threads(n_threads);
    size_t d = H / NH;
    real scale = (real)1 / sqrt((real)d);
    OMP_FOR
    for (size_t bh = 0; bh < B * NH; bh++) {
        int slot = OPS_SLOT();
        size_t ro, po;
        OPS(block_of)(lens, NH, bh, &ro, &po);
        size_t h = bh % NH, n = lens[bh / NH], at = po + h * n * n;
        const real *q = q0 + ro * ld + h * d, *k = k0 + ro * ld + h * d;
        const real *v = v0 + ro * ld + h * d;
        real *S = att + at;
        /* S[n, n] = scale * Q K^T */
        gemm(n, n, d, scale, q, ld, 1, k, 1, ld, 0, S, n, 1, gemm_ctx, slot);
        for (size_t i = 0; i < n; i++) {
            real *r = S + i * n;
            real mx = -INFINITY;
            for (size_t j = 0; j < n; j++)
                mx = r[j] > mx ? r[j] : mx;
            real sum = 0;
            for (size_t j = 0; j < n; j++) {
                r[j] = exp(r[j] - mx);
                sum += r[j];
            }
            real inv = (real)1 / sum;
            for (size_t j = 0; j < n; j++)
                r[j] *= inv;
        }
        const real *P = S; /* element i of the block: mask element at + i */
        if (p > 0) {
            OPS(dropout_at)(scratch + at, S, n * n, p, seed, stream, at);
            P = scratch + at;
        }
        /* out[n, d] = P V */
        gemm(n, d, n, 1, P, n, 1, v, ld, 1, 0, out + ro * H + h * d, H, 1,
             gemm_ctx, slot);
    }
}

void OPS(attention_backward)(real *dq0, real *dk0, real *dv0, real *scratch,
                             const real *dout, const real *q0,
                             const real *k0, const real *v0, size_t ld,
                             const real *att, const size_t *lens, size_t B,
                             size_t H, size_t NH, real p, uint64_t seed,
                             uint64_t stream, int n_threads, void *gemm_ctx)
{
    int nth = clamp_threads(n_threads);
    size_t d = H / NH;
    real scale = (real)1 / sqrt((real)d);
    OMP_FOR
    for (size_t bh = 0; bh < B * NH; bh++) {
        int slot = OPS_SLOT();
        size_t h = bh % NH, n = lens[bh / NH], ro, po;
        OPS(block_of)(lens, NH, bh, &ro, &po);
        size_t at = po + h * n * n;
        size_t o = ro * ld + h * d;
        const real *q = q0 + o, *k = k0 + o, *v = v0 + o;
        real *dq = dq0 + o, *dk = dk0 + o, *dv = dv0 + o;
        const real *S = att + at;
        const real *g = dout + ro * H + h * d;
        real *W = scratch + at;
        const real *P = S;
        if (p > 0) {
            OPS(dropout_at)(W, S, n * n, p, seed, stream, at);
            P = W;
        }
        /* dV[n, d] += P^T dout */
        gemm(n, d, n, 1, P, 1, n, g, H, 1, 1, dv, ld, 1, gemm_ctx, slot);
        /* dP[n, n] = dout V^T */
        gemm(n, n, d, 1, g, H, 1, v, 1, ld, 0, W, n, 1, gemm_ctx, slot);
        for (size_t i = 0; i < n; i++) {
            real *r = W + i * n;
            const real *s = S + i * n;
            if (p > 0) /* the forward's mask and scale on dP */
                OPS(dropout_at)(r, r, n, p, seed, stream, at + i * n);
            real dot = 0;
            for (size_t j = 0; j < n; j++)
                dot += r[j] * s[j];
            SIMD
            for (size_t j = 0; j < n; j++)
                r[j] = s[j] * (r[j] - dot) * scale;
        }
        /* dQ[n, d] += dS K ; dK[n, d] += dS^T Q */
        gemm(n, d, n, 1, W, n, 1, k, ld, 1, 1, dq, ld, 1, gemm_ctx, slot);
        gemm(n, d, n, 1, W, 1, n, q, ld, 1, 1, dk, ld, 1, gemm_ctx, slot);
    }
}

/* ---- loss -------------------------------------------------------------- */

/* The log-sum-exp and the loss are summed in double whatever real is. */
/* One row's loss (0 for an ignored target) and its dlogits. */
static double OPS(ce_row)(real *d, const real *l, int32_t target, size_t C,
                          real scale)
{
    if (target < 0 || (size_t)target >= C) {
        if (d)
            memset(d, 0, C * sizeof(real));
        return 0.0;
    }
#ifdef OPS_CE_ROW_FAST
    double fast;
    if (OPS_CE_ROW_FAST(d, l, target, C, scale, &fast))
        return fast;
#endif
    real mx = l[0];
    for (size_t c = 1; c < C; c++)
        mx = l[c] > mx ? l[c] : mx;
    double sum = 0.0;
    for (size_t c = 0; c < C; c++)
        sum += exp((double)(l[c] - mx));
    double lse = log(sum) + mx;
    if (d)
        for (size_t c = 0; c < C; c++) {
            double pr = exp((double)l[c] - lse);
            d[c] = (real)(scale * (pr - (c == (size_t)target)));
        }
    return lse - l[target];
}

/* Rows in parallel (MLM's run over the vocabulary), their losses summed in
 * row order afterwards, so the result does not depend on the threads. */
double OPS(crossentropy)(real *dlogits, const real *logits,
                         const int32_t *targets, size_t N, size_t C,
                         real scale, int n_threads)
{
    int nth = clamp_threads(n_threads);
    double loss = 0.0, *rl = nth > 1 ? malloc(N * sizeof *rl) : NULL;
    if (!rl) {
        for (size_t i = 0; i < N; i++)
            loss += OPS(ce_row)(dlogits ? dlogits + i * C : NULL,
                                logits + i * C, targets[i], C, scale);
        return loss;
    }
    OMP_FOR
    for (size_t i = 0; i < N; i++)
        rl[i] = OPS(ce_row)(dlogits ? dlogits + i * C : NULL, logits + i * C,
                            targets[i], C, scale);
    for (size_t i = 0; i < N; i++)
        loss += rl[i];
    free(rl);
    return loss;
}

/* R-Drop's consistency term (Liang et al. 2021) between rows i and N + i
 * of logits[2N, C], two forwards of the same input under different dropout
 * masks: the symmetric KL divergence (KL(p||q) + KL(q||p)) / 2 of their
 * softmaxes p and q, summed over the pairs whose mask[i] >= 0 (mask NULL:
 * all).  ADDS scale times its gradient to dlogits (the cross-entropy
 * wrote them first).  With d = log p - log q, the gradient of the pair's
 * term is (p*(d - KL(p||q)) + p - q) / 2 in the first row's logits and
 * (q*(-d - KL(q||p)) + q - p) / 2 in the second's; both in double. */
double OPS(sym_kl)(real *dlogits, const real *logits, const int32_t *mask,
                   size_t N, size_t C, real scale)
{
    double total = 0.0;
    for (size_t i = 0; i < N; i++) {
        if (mask && mask[i] < 0)
            continue;
        const real *a = logits + i * C, *b = logits + (N + i) * C;
        double ma = a[0], mb = b[0], sa = 0.0, sb = 0.0;
        for (size_t c = 1; c < C; c++) {
            ma = a[c] > ma ? a[c] : ma;
            mb = b[c] > mb ? b[c] : mb;
        }
        for (size_t c = 0; c < C; c++) {
            sa += exp((double)a[c] - ma);
            sb += exp((double)b[c] - mb);
        }
        double la = log(sa) + ma, lb = log(sb) + mb, kpq = 0.0, kqp = 0.0;
        for (size_t c = 0; c < C; c++) {
            double lp = (double)a[c] - la, lq = (double)b[c] - lb;
            kpq += exp(lp) * (lp - lq);
            kqp += exp(lq) * (lq - lp);
        }
        total += 0.5 * (kpq + kqp);
        if (!dlogits)
            continue;
        real *da = dlogits + i * C, *db = dlogits + (N + i) * C;
        for (size_t c = 0; c < C; c++) {
            double lp = (double)a[c] - la, lq = (double)b[c] - lb;
            double p = exp(lp), q = exp(lq), d = lp - lq;
            da[c] += (real)(scale * 0.5 * (p * (d - kpq) + p - q));
            db[c] += (real)(scale * 0.5 * (q * (-d - kqp) + q - p));
        }
    }
    return total;
}

#undef OMP_FOR
#undef GELU_K
#undef INV_SQRT2
#undef INV_SQRT2PI
#undef GELU_C
