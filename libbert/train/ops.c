/* libbert/train/ops.c - forward/backward kernels of the trainer.  See ops.h. */
#include "libbert/train/ops.h"

#include <blis.h>
#include <math.h>
#include <string.h>

#define OMP_FOR _Pragma("omp parallel for schedule(static) num_threads(nth)")

static int clamp_threads(int n) { return n < 1 ? 1 : n; }

/* ---- matmul ------------------------------------------------------------ */

static void gemm(size_t m, size_t n, size_t k, float alpha, const float *a,
                 size_t rsa, size_t csa, const float *b, size_t rsb,
                 size_t csb, float beta, float *c, size_t rsc, size_t csc,
                 rntm_t *rntm)
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
    bli_sgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n,
                 (dim_t)k, &alpha, (float *)a, (inc_t)rsa, (inc_t)csa,
                 (float *)b, (inc_t)rsb, (inc_t)csb, &beta, c, (inc_t)rsc,
                 (inc_t)csc, NULL, rntm);
}

void bert__t_matmul_forward(float *out, const float *inp, const float *w,
                            const float *bias, size_t N, size_t IC, size_t OC,
                            void *rntm)
{
    float beta = 0.0f;
    if (bias) {
        for (size_t i = 0; i < N; i++)
            memcpy(out + i * OC, bias, OC * sizeof(float));
        beta = 1.0f;
    }
    gemm(N, OC, IC, 1.0f, inp, IC, 1, w, 1, IC, beta, out, OC, 1, rntm);
}

void bert__t_matmul_backward(float *dinp, float *dw, float *dbias,
                             const float *dout, const float *inp,
                             const float *w, size_t N, size_t IC, size_t OC,
                             void *rntm, int n_threads)
{
    int nth = clamp_threads(n_threads);
    if (dinp)
        gemm(N, IC, OC, 1.0f, dout, OC, 1, w, IC, 1, 1.0f, dinp, IC, 1, rntm);
    if (dw)
        gemm(OC, IC, N, 1.0f, dout, 1, OC, inp, IC, 1, 1.0f, dw, IC, 1, rntm);
    if (dbias) {
        OMP_FOR
        for (size_t o = 0; o < OC; o++) {
            float s = 0.0f;
            for (size_t i = 0; i < N; i++)
                s += dout[i * OC + o];
            dbias[o] += s;
        }
    }
}

/* ---- LayerNorm --------------------------------------------------------- */

void bert__t_layernorm_forward(float *out, float *mean, float *rstd,
                               const float *inp, const float *w,
                               const float *b, size_t N, size_t C, float eps,
                               int n_threads)
{
    int nth = clamp_threads(n_threads);
    OMP_FOR
    for (size_t i = 0; i < N; i++) {
        const float *x = inp + i * C;
        float m = 0.0f;
        for (size_t c = 0; c < C; c++)
            m += x[c];
        m /= (float)C;
        float v = 0.0f;
        for (size_t c = 0; c < C; c++) {
            float d = x[c] - m;
            v += d * d;
        }
        v /= (float)C;
        float s = 1.0f / sqrtf(v + eps);
        float *o = out + i * C;
        for (size_t c = 0; c < C; c++)
            o[c] = (x[c] - m) * s * w[c] + b[c];
        mean[i] = m;
        rstd[i] = s;
    }
}

void bert__t_layernorm_backward(float *dinp, float *dw, float *db,
                                const float *dout, const float *inp,
                                const float *w, const float *mean,
                                const float *rstd, size_t N, size_t C,
                                int n_threads)
{
    int nth = clamp_threads(n_threads);
    OMP_FOR
    for (size_t i = 0; i < N; i++) {
        const float *x = inp + i * C, *g = dout + i * C;
        float m = mean[i], s = rstd[i];
        float a = 0.0f, bsum = 0.0f;
        for (size_t c = 0; c < C; c++) {
            float xh = (x[c] - m) * s;
            float gw = g[c] * w[c];
            a += gw;
            bsum += gw * xh;
        }
        a /= (float)C;
        bsum /= (float)C;
        float *d = dinp + i * C;
        for (size_t c = 0; c < C; c++) {
            float xh = (x[c] - m) * s;
            d[c] += (g[c] * w[c] - a - xh * bsum) * s;
        }
    }
    if (dw || db) {
        OMP_FOR
        for (size_t c = 0; c < C; c++) {
            float sw = 0.0f, sb = 0.0f;
            for (size_t i = 0; i < N; i++) {
                float g = dout[i * C + c];
                sw += g * (inp[i * C + c] - mean[i]) * rstd[i];
                sb += g;
            }
            if (dw)
                dw[c] += sw;
            if (db)
                db[c] += sb;
        }
    }
}

/* ---- activations ------------------------------------------------------- */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

void bert__t_act_forward(int act, float *out, const float *inp, size_t n,
                         int n_threads)
{
    int nth = clamp_threads(n_threads);
    OMP_FOR
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float y;
        switch (act) {
        case BERT_T_ACT_GELU:
            y = 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
            break;
        case BERT_T_ACT_GELU_TANH:
            y = 0.5f * x * (1.0f + tanhf(GELU_K * (x + 0.044715f * x * x * x)));
            break;
        case BERT_T_ACT_RELU:
            y = x > 0.0f ? x : 0.0f;
            break;
        default:
            y = tanhf(x);
            break;
        }
        out[i] = y;
    }
}

void bert__t_act_backward(int act, float *dinp, const float *dout,
                          const float *inp, size_t n, int n_threads)
{
    int nth = clamp_threads(n_threads);
    OMP_FOR
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        float d;
        switch (act) {
        case BERT_T_ACT_GELU:
            d = 0.5f * (1.0f + erff(x * 0.70710678118654752f)) +
                x * 0.3989422804014327f * expf(-0.5f * x * x);
            break;
        case BERT_T_ACT_GELU_TANH: {
            float u = GELU_K * (x + 0.044715f * x * x * x);
            float t = tanhf(u);
            float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
            d = 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
            break;
        }
        case BERT_T_ACT_RELU:
            d = x > 0.0f ? 1.0f : 0.0f;
            break;
        default: {
            float t = tanhf(x);
            d = 1.0f - t * t;
            break;
        }
        }
        dinp[i] += dout[i] * d;
    }
}

/* ---- embeddings -------------------------------------------------------- */

void bert__t_embed_forward(float *out, const int32_t *ids,
                           const int32_t *types, const float *wte,
                           const float *wpe, const float *wtt, size_t B,
                           size_t T, size_t H)
{
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            size_t r = b * T + t;
            const float *e = wte + (size_t)ids[r] * H;
            const float *p = wpe + t * H;
            const float *y = wtt ? wtt + (size_t)(types ? types[r] : 0) * H
                                 : NULL;
            float *o = out + r * H;
            for (size_t h = 0; h < H; h++)
                o[h] = e[h] + p[h] + (y ? y[h] : 0.0f);
        }
}

void bert__t_embed_backward(float *dwte, float *dwpe, float *dwtt,
                            const float *dout, const int32_t *ids,
                            const int32_t *types, size_t B, size_t T,
                            size_t H)
{
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            size_t r = b * T + t;
            const float *g = dout + r * H;
            float *e = dwte + (size_t)ids[r] * H;
            float *p = dwpe + t * H;
            float *y = dwtt ? dwtt + (size_t)(types ? types[r] : 0) * H : NULL;
            for (size_t h = 0; h < H; h++) {
                e[h] += g[h];
                p[h] += g[h];
                if (y)
                    y[h] += g[h];
            }
        }
}

/* ---- counter-based random numbers -------------------------------------- */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t hash3(uint64_t seed, uint64_t stream, uint64_t idx)
{
    return mix64(mix64(mix64(seed) ^ stream) ^ idx);
}

double bert__t_uniform(uint64_t seed, uint64_t stream, uint64_t idx)
{
    return (double)(hash3(seed, stream, idx) >> 11) * (1.0 / 9007199254740992.0);
}

double bert__t_normal(uint64_t seed, uint64_t stream, uint64_t idx)
{
    double u1 = bert__t_uniform(seed, stream, 2 * idx);
    double u2 = bert__t_uniform(seed, stream, 2 * idx + 1);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int bert__t_keep(uint64_t seed, uint64_t stream, uint64_t idx, float p)
{
    uint64_t h = hash3(seed, stream, idx);
    float u = (float)(h >> 40) * (1.0f / 16777216.0f);
    return u >= p;
}

void bert__t_dropout(float *x, size_t n, float p, uint64_t seed,
                     uint64_t stream, int n_threads)
{
    if (p <= 0.0f)
        return;
    int nth = clamp_threads(n_threads);
    float sc = 1.0f / (1.0f - p);
    OMP_FOR
    for (size_t i = 0; i < n; i++)
        x[i] = bert__t_keep(seed, stream, i, p) ? x[i] * sc : 0.0f;
}

/* ---- attention --------------------------------------------------------- */

void bert__t_attention_forward(float *out, float *att, float *scratch,
                               const float *qkv, const size_t *lens, size_t B,
                               size_t T, size_t H, size_t NH, float p,
                               uint64_t seed, uint64_t stream, int n_threads)
{
    int nth = clamp_threads(n_threads);
    size_t d = H / NH, H3 = 3 * H;
    float scale = 1.0f / sqrtf((float)d);
    float dsc = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    OMP_FOR
    for (size_t bh = 0; bh < B * NH; bh++) {
        rntm_t rn;
        bli_rntm_init(&rn);
        bli_rntm_set_num_threads(1, &rn);
        size_t b = bh / NH, h = bh % NH, L = lens[b];
        const float *q = qkv + b * T * H3 + h * d;
        const float *k = q + H, *v = q + 2 * H;
        float *S = att + bh * T * T;
        /* S[T, L] = scale * Q K^T */
        gemm(T, L, d, scale, q, H3, 1, k, 1, H3, 0.0f, S, T, 1, &rn);
        for (size_t i = 0; i < T; i++) {
            float *r = S + i * T;
            float mx = -INFINITY;
            for (size_t j = 0; j < L; j++)
                mx = r[j] > mx ? r[j] : mx;
            float sum = 0.0f;
            for (size_t j = 0; j < L; j++) {
                r[j] = expf(r[j] - mx);
                sum += r[j];
            }
            float inv = 1.0f / sum;
            for (size_t j = 0; j < L; j++)
                r[j] *= inv;
            for (size_t j = L; j < T; j++)
                r[j] = 0.0f;
        }
        const float *P = S;
        if (p > 0.0f) {
            float *Pd = scratch + bh * T * T;
            for (size_t i = 0; i < T; i++)
                for (size_t j = 0; j < T; j++)
                    Pd[i * T + j] =
                        bert__t_keep(seed, stream, (bh * T + i) * T + j, p)
                            ? S[i * T + j] * dsc
                            : 0.0f;
            P = Pd;
        }
        /* out[T, d] = P[T, L] V[L, d] */
        gemm(T, d, L, 1.0f, P, T, 1, v, H3, 1, 0.0f, out + b * T * H + h * d,
             H, 1, &rn);
    }
}

void bert__t_attention_backward(float *dqkv, float *scratch,
                                const float *dout, const float *qkv,
                                const float *att, const size_t *lens,
                                size_t B, size_t T, size_t H, size_t NH,
                                float p, uint64_t seed, uint64_t stream,
                                int n_threads)
{
    int nth = clamp_threads(n_threads);
    size_t d = H / NH, H3 = 3 * H;
    float scale = 1.0f / sqrtf((float)d);
    float dsc = p > 0.0f ? 1.0f / (1.0f - p) : 1.0f;
    OMP_FOR
    for (size_t bh = 0; bh < B * NH; bh++) {
        rntm_t rn;
        bli_rntm_init(&rn);
        bli_rntm_set_num_threads(1, &rn);
        size_t b = bh / NH, h = bh % NH, L = lens[b];
        const float *q = qkv + b * T * H3 + h * d;
        const float *k = q + H, *v = q + 2 * H;
        float *dq = dqkv + b * T * H3 + h * d;
        float *dk = dq + H, *dv = dq + 2 * H;
        const float *S = att + bh * T * T;
        const float *g = dout + b * T * H + h * d;
        float *W = scratch + bh * T * T;
        const float *P = S;
        if (p > 0.0f) {
            for (size_t i = 0; i < T; i++)
                for (size_t j = 0; j < T; j++)
                    W[i * T + j] =
                        bert__t_keep(seed, stream, (bh * T + i) * T + j, p)
                            ? S[i * T + j] * dsc
                            : 0.0f;
            P = W;
        }
        /* dV[L, d] += P^T dout */
        gemm(L, d, T, 1.0f, P, 1, T, g, H, 1, 1.0f, dv, H3, 1, &rn);
        /* dP[T, L] = dout V^T */
        gemm(T, L, d, 1.0f, g, H, 1, v, 1, H3, 0.0f, W, T, 1, &rn);
        for (size_t i = 0; i < T; i++) {
            float *r = W + i * T;
            const float *s = S + i * T;
            if (p > 0.0f) {
                for (size_t j = 0; j < L; j++) {
                    if (!bert__t_keep(seed, stream, (bh * T + i) * T + j, p))
                        r[j] = 0.0f;
                    else
                        r[j] *= dsc;
                }
            }
            float dot = 0.0f;
            for (size_t j = 0; j < L; j++)
                dot += r[j] * s[j];
            for (size_t j = 0; j < L; j++)
                r[j] = s[j] * (r[j] - dot) * scale;
        }
        /* dQ[T, d] += dS K ; dK[L, d] += dS^T Q */
        gemm(T, d, L, 1.0f, W, T, 1, k, H3, 1, 1.0f, dq, H3, 1, &rn);
        gemm(L, d, T, 1.0f, W, 1, T, q, H3, 1, 1.0f, dk, H3, 1, &rn);
    }
}

/* ---- loss -------------------------------------------------------------- */

double bert__t_crossentropy(float *dlogits, const float *logits,
                            const int32_t *targets, size_t N, size_t C,
                            float scale)
{
    double loss = 0.0;
    for (size_t i = 0; i < N; i++) {
        const float *l = logits + i * C;
        float *d = dlogits ? dlogits + i * C : NULL;
        if (targets[i] < 0 || (size_t)targets[i] >= C) {
            if (d)
                memset(d, 0, C * sizeof(float));
            continue;
        }
        float mx = l[0];
        for (size_t c = 1; c < C; c++)
            mx = l[c] > mx ? l[c] : mx;
        double sum = 0.0;
        for (size_t c = 0; c < C; c++)
            sum += exp((double)(l[c] - mx));
        double lse = log(sum) + mx;
        loss += lse - l[targets[i]];
        if (d)
            for (size_t c = 0; c < C; c++) {
                double pr = exp((double)l[c] - lse);
                d[c] = (float)(scale * (pr - (c == (size_t)targets[i])));
            }
    }
    return loss;
}
