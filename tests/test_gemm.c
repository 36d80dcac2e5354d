/* test_gemm.c - libbert's matrix products (libbert/gemm.c) against a
 * double-precision reference, once per kernel tier this CPU supports
 * (avx512, avx2, blis; the others are reported as skipped):
 *  - bert__sgemm on every layout of A, B and C (row/column-major each),
 *    each of m, n, k below 16 and edge tiles around the kernels' 6/8-row
 *    and 16/48-column tiles and the 192-deep k blocks, alpha and beta (0
 *    over NaN, 1, 0.5), k = 0,
 *    on 1 and 2 threads;
 *  - bert__sgemm1 from concurrent threads with distinct slots;
 *  - bert__gemm_w on weights packed once against the same product unpacked,
 *    1 and 2 threads, beta 0 and 1.
 * Tolerance: relative to the sum of |terms| (float accumulation of k
 * terms), 1e-5. */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "libbert/cpu.h"
#include "libbert/gemm.h"
#include "libbert/gemm_kernels.h"

static unsigned long long rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static float *rand_buf(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (size_t i = 0; i < n; i++)
        p[i] = frand();
    return p;
}

/* Worst error of C against alpha A B + beta C0, relative to the magnitude
 * of the terms; NaN counts as infinitely wrong. */
static double check(size_t m, size_t n, size_t k, float alpha, const float *A,
                    ptrdiff_t rsa, ptrdiff_t csa, const float *B,
                    ptrdiff_t rsb, ptrdiff_t csb, float beta, const float *C0,
                    const float *C, ptrdiff_t rsc, ptrdiff_t csc)
{
    double worst = 0;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0, mag = 0;
            for (size_t p = 0; p < k; p++) {
                double x = (double)A[(ptrdiff_t)i * rsa + (ptrdiff_t)p * csa] *
                           B[(ptrdiff_t)p * rsb + (ptrdiff_t)j * csb];
                s += x;
                mag += fabs(x);
            }
            s *= alpha;
            mag *= fabs(alpha);
            ptrdiff_t o = (ptrdiff_t)i * rsc + (ptrdiff_t)j * csc;
            if (beta != 0.0f) {
                s += (double)beta * C0[o];
                mag += fabs((double)beta * C0[o]);
            }
            double d = fabs(s - C[o]) / (mag + 1e-30);
            if (!(d <= worst))
                worst = isnan(d) ? INFINITY : d;
        }
    return worst;
}

static const bert_kernels tiers[] = {BERT_KERNELS_AMX, BERT_KERNELS_AVX512,
                                     BERT_KERNELS_AVX2, BERT_KERNELS_BLIS};
#define N_TIERS (sizeof tiers / sizeof tiers[0])

static bert_gemm_ctx *ctx_or_skip(bert_kernels t, int threads)
{
    char why[160];
    bert_gemm_ctx *g = bert__gemm_ctx_create(threads, t, why, sizeof why);
    if (!g && threads == 1)
        printf("\n  tier %s skipped: %s", bert__kernels_name(t), why);
    return g;
}

static void test_sgemm_layouts(void)
{
    static const size_t shapes[][3] = {
        {1, 1, 1},     {3, 5, 7},      {15, 1, 33},   {1, 15, 5},
        {7, 9, 15},    {6, 16, 8},     {12, 32, 3},   {13, 33, 257},
        {11, 31, 300}, {31, 37, 41},   {64, 9, 130},  {2, 200, 3},
        {145, 65, 20}, {150, 530, 40}, {40, 1030, 9}, {300, 41, 777},
        {8, 48, 192},  {9, 49, 193},   {17, 97, 385}, {16, 96, 191}};
    for (size_t ti = 0; ti < N_TIERS; ti++)
        for (int threads = 1; threads <= 2; threads++) {
            bert_gemm_ctx *g = ctx_or_skip(tiers[ti], threads);
            if (!g)
                continue;
            double tier_worst = 0;
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                size_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                float *A = rand_buf(m * k), *B = rand_buf(k * n);
                float *C = rand_buf(m * n), *C0 = rand_buf(m * n);
                for (int lay = 0; lay < 8; lay++) {
                    ptrdiff_t rsa = lay & 1 ? 1 : (ptrdiff_t)k;
                    ptrdiff_t csa = lay & 1 ? (ptrdiff_t)m : 1;
                    ptrdiff_t rsb = lay & 2 ? 1 : (ptrdiff_t)n;
                    ptrdiff_t csb = lay & 2 ? (ptrdiff_t)k : 1;
                    ptrdiff_t rsc = lay & 4 ? 1 : (ptrdiff_t)n;
                    ptrdiff_t csc = lay & 4 ? (ptrdiff_t)m : 1;
                    static const float alphas[] = {1.0f, 0.75f, -2.0f};
                    static const float betas[] = {0.0f, 1.0f, 0.5f};
                    float alpha = alphas[lay % 3], beta = betas[(lay + s) % 3];
                    for (size_t i = 0; i < m * n; i++)
                        C[i] = beta == 0.0f ? NAN : C0[i];
                    bert__sgemm(g, m, n, k, alpha, A, rsa, csa, B, rsb, csb,
                                beta, C, rsc, csc);
                    double d = check(m, n, k, alpha, A, rsa, csa, B, rsb, csb,
                                     beta, C0, C, rsc, csc);
                    if (!(d <= 1e-5))
                        printf("\n  %s %d thr: %zux%zux%zu layout %d alpha "
                               "%g beta %g: %g",
                               bert__gemm_ctx_kernels(g), threads, m, n, k,
                               lay, alpha, beta, d);
                    CU_ASSERT(d <= 1e-5);
                    if (d > tier_worst)
                        tier_worst = d;
                }
                free(A), free(B), free(C), free(C0);
            }
            /* k == 0: C := beta C (beta 0 clears NaN). */
            float c[3] = {2, 4, NAN}, x = 1;
            bert__sgemm(g, 1, 2, 0, 1.0f, &x, 1, 1, &x, 1, 1, 0.5f, c, 2, 1);
            CU_ASSERT_DOUBLE_EQUAL(c[0], 1.0, 1e-7);
            CU_ASSERT_DOUBLE_EQUAL(c[1], 2.0, 1e-7);
            bert__sgemm(g, 1, 1, 0, 1.0f, &x, 1, 1, &x, 1, 1, 0.0f, c + 2, 1,
                        1);
            CU_ASSERT(c[2] == 0.0f);
            if (threads == 1)
                printf("\n  %s: worst relative error %.2g",
                       bert__gemm_ctx_kernels(g), tier_worst);
            bert__gemm_ctx_free(g);
        }
}

/* Head-sized products from two threads at once, each with its own slot, as
 * encoder.c runs attention. */
static void test_sgemm1_slots(void)
{
    size_t T = 45, H = 96, NH = 3, hs = H / NH;
    for (size_t ti = 0; ti < N_TIERS; ti++) {
        bert_gemm_ctx *g = ctx_or_skip(tiers[ti], 2);
        if (!g)
            continue;
        float *q = rand_buf(T * H), *k = rand_buf(T * H);
        float *S = malloc(NH * T * T * sizeof *S);
        float *zero = calloc(NH * T * T, sizeof *zero);
        int bad = 0;
#ifdef _OPENMP
#pragma omp parallel for num_threads(2) reduction(+ : bad)
#endif
        for (size_t h = 0; h < NH; h++) {
            int slot = 0;
#ifdef _OPENMP
            slot = omp_get_thread_num();
#endif
            float *Sh = S + h * T * T;
            bert__sgemm1(g, slot, T, T, hs, 0.5f, q + h * hs, (ptrdiff_t)H, 1,
                         k + h * hs, 1, (ptrdiff_t)H, 0.0f, Sh, (ptrdiff_t)T,
                         1);
            bad += check(T, T, hs, 0.5f, q + h * hs, (ptrdiff_t)H, 1,
                         k + h * hs, 1, (ptrdiff_t)H, 0.0f, zero, Sh,
                         (ptrdiff_t)T, 1) > 1e-5;
        }
        CU_ASSERT_EQUAL(bad, 0);
        free(q), free(k), free(S), free(zero);
        bert__gemm_ctx_free(g);
    }
}

/* y = x W^T (+ y) from packed panels against the same product from W. */
static void test_packed_weights(void)
{
    static const size_t shapes[][3] = {/* m, n (out), k (in) */
                                       {1, 2, 768},   {5, 33, 17},
                                       {13, 64, 300}, {128, 96, 64},
                                       {200, 65, 513}};
    for (size_t ti = 0; ti < N_TIERS; ti++)
        for (int threads = 1; threads <= 2; threads++) {
            bert_gemm_ctx *g = ctx_or_skip(tiers[ti], threads);
            if (!g)
                continue;
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                size_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                float *X = rand_buf(m * k), *Wt = rand_buf(n * k);
                float *Y = rand_buf(m * n), *Y0 = rand_buf(m * n);
                bert_wmat W = {Wt, NULL, n, k, BERT_PRECISION_FP32};
                CU_ASSERT_EQUAL_FATAL(bert__wmat_pack(&W, threads), BERT_OK);
                CU_ASSERT_PTR_NOT_NULL_FATAL(W.panels);
                CU_ASSERT(bert__wmat_packed_bytes(&W) >= n * k * sizeof(float));
                for (int b = 0; b < 2; b++) {
                    float beta = (float)b;
                    for (size_t i = 0; i < m * n; i++)
                        Y[i] = b ? Y0[i] : NAN;
                    bert__gemm_w(g, -1, m, X, k, &W, beta, Y, n);
                    double d = check(m, n, k, 1.0f, X, (ptrdiff_t)k, 1, Wt, 1,
                                     (ptrdiff_t)k, beta, Y0, Y, (ptrdiff_t)n,
                                     1);
                    if (!(d <= 1e-5))
                        printf("\n  packed %s %d thr %zux%zux%zu beta %g: %g",
                               bert__gemm_ctx_kernels(g), threads, m, n, k,
                               beta, d);
                    CU_ASSERT(d <= 1e-5);
                    /* one thread through a slot gives the same */
                    for (size_t i = 0; i < m * n; i++)
                        Y[i] = b ? Y0[i] : NAN;
                    bert__gemm_w(g, threads - 1, m, X, k, &W, beta, Y, n);
                    CU_ASSERT(check(m, n, k, 1.0f, X, (ptrdiff_t)k, 1, Wt, 1,
                                    (ptrdiff_t)k, beta, Y0, Y, (ptrdiff_t)n,
                                    1) <= 1e-5);
                }
                bert__wmat_free(&W);
                CU_ASSERT_PTR_NULL(W.panels);
                free(X), free(Wt), free(Y), free(Y0);
            }
            bert__gemm_ctx_free(g);
        }
}

/* Worst |Y - (X W^T + beta Y0)| over the bound that quantizing both
 * operands allows: per term |x| ew(j) + |w| ea(i) + ea(i) ew(j) (int8:
 * ea = one activation step of row i, ew = half a weight step of column j)
 * or rel |x||w| (bf16: 8 significant bits, unit roundoff 2^-8 per operand,
 * so rel = 2^-7 + 2^-16), plus
 * 1e-5 of the magnitude for float sums.  Above 1 means out of bounds;
 * a wrong zero point, scale or lane order lands far above. */
static double check_lowp(bert_precision p, size_t m, size_t n, size_t k,
                         const float *X, const float *W, float beta,
                         const float *Y0, const float *Y)
{
    double worst = 0;
    for (size_t i = 0; i < m; i++) {
        double mn = 0, mx = 0;
        for (size_t q = 0; q < k; q++) {
            mn = X[i * k + q] < mn ? X[i * k + q] : mn;
            mx = X[i * k + q] > mx ? X[i * k + q] : mx;
        }
        double ea = (mx - mn) / 255.0 * 1.001;
        for (size_t j = 0; j < n; j++) {
            double wm = 0;
            for (size_t q = 0; q < k; q++)
                wm = fabs(W[j * k + q]) > wm ? fabs(W[j * k + q]) : wm;
            double ew = wm / 127.0 * 0.501;
            double s = 0, mag = 0, bound = 0;
            for (size_t q = 0; q < k; q++) {
                double x = X[i * k + q], w = W[j * k + q];
                s += x * w;
                mag += fabs(x * w);
                bound += p == BERT_PRECISION_INT8
                             ? fabs(x) * ew + fabs(w) * ea + ea * ew
                             : fabs(x * w) * (1.0 / 128 + 1.0 / 65536);
            }
            double want = s + (beta != 0.0f ? (double)beta * Y0[i * n + j] : 0);
            double e = fabs((double)Y[i * n + j] - want);
            double r = e / (bound + 1e-5 * (mag + fabs(want)) + 1e-30);
            if (!(r <= worst))
                worst = r; /* NaN stays */
        }
    }
    return worst;
}

/* bf16 by hand: round to nearest even (no denormals in these tests). */
static double bf16_val(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1);
    u &= 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}

/* The same product from the quantized operands, computed here from the
 * documented scheme (gemm_lowp.c) in double: the kernels' arithmetic must
 * match it to float rounding (1e-5 of the magnitude), so this catches an
 * off-by-one zero point or a mis-ordered lane that the bound above lets
 * through. */
static double check_lowp_exact(bert_precision p, size_t m, size_t n,
                               size_t k, const float *X, const float *W,
                               float beta, const float *Y0, const float *Y)
{
    double worst = 0;
    double *qa = malloc(k * sizeof *qa), *qw = malloc(n * k * sizeof *qw);
    double *cs = malloc(n * sizeof *cs);
    CU_ASSERT_PTR_NOT_NULL_FATAL(qa && qw && cs);
    for (size_t j = 0; j < n; j++) {
        float mx = 0.0f;
        for (size_t q = 0; q < k; q++)
            mx = fabsf(W[j * k + q]) > mx ? fabsf(W[j * k + q]) : mx;
        float inv = mx > 0.0f ? 127.0f / mx : 0.0f;
        cs[j] = mx / 127.0f;
        for (size_t q = 0; q < k; q++)
            qw[j * k + q] = p == BERT_PRECISION_INT8
                                ? nearbyintf(W[j * k + q] * inv)
                                : bf16_val(W[j * k + q]);
    }
    for (size_t i = 0; i < m; i++) {
        float mn = 0.0f, mx = 0.0f;
        for (size_t q = 0; q < k; q++) {
            mn = X[i * k + q] < mn ? X[i * k + q] : mn;
            mx = X[i * k + q] > mx ? X[i * k + q] : mx;
        }
        float sa = (mx - mn) / 255.0f, inv = 1.0f / sa;
        float z = nearbyintf(-mn * inv);
        for (size_t q = 0; q < k; q++) {
            float v = nearbyintf(X[i * k + q] * inv) + z;
            v = v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v;
            qa[q] = p == BERT_PRECISION_INT8 ? v - z : bf16_val(X[i * k + q]);
        }
        for (size_t j = 0; j < n; j++) {
            double s = 0, mag = 0;
            for (size_t q = 0; q < k; q++) {
                s += qa[q] * qw[j * k + q];
                mag += fabs(qa[q] * qw[j * k + q]);
            }
            double sc = p == BERT_PRECISION_INT8 ? (double)sa * cs[j] : 1.0;
            double b0 = beta != 0.0f ? (double)beta * Y0[i * n + j] : 0;
            double e = fabs((double)Y[i * n + j] - (s * sc + b0));
            double r = e / (1e-5 * (mag * sc + fabs(b0)) + 1e-30);
            if (!(r <= worst))
                worst = r;
        }
    }
    free(qa), free(qw), free(cs);
    return worst;
}

/* Int8 and bf16 weights (gemm_lowp.c) on every tier that runs them here:
 * edge tiles (m below and around the 6/8-row tiles, n around 16/48
 * columns), k not a multiple of the 4- or 2-value groups, beta 0 over NaN
 * and 1, 1 and 2 threads, on the threads and through a slot. */
static void test_lowp_weights(void)
{
    static const size_t shapes[][3] = {/* m, n (out), k (in) */
                                       {1, 2, 768},  {5, 33, 17},
                                       {7, 49, 1},   {9, 16, 3},
                                       {13, 64, 301}, {128, 96, 64},
                                       {200, 65, 513}, {64, 48, 3072}};
    static const bert_precision precs[] = {BERT_PRECISION_INT8,
                                           BERT_PRECISION_BF16};
    for (size_t pi = 0; pi < 2; pi++)
        for (size_t ti = 0; ti < N_TIERS; ti++) {
            bert_precision pr = precs[pi];
            char why[160];
            if (!bert__precision_supported(pr, tiers[ti], why, sizeof why)) {
                printf("\n  %s on %s: skipped (%s)", bert__precision_name(pr),
                       bert__kernels_name(tiers[ti]), why);
                CU_ASSERT(strlen(why) > 0);
                continue;
            }
            printf("\n  %s on %s: tested", bert__precision_name(pr),
                   bert__kernels_name(tiers[ti]));
            for (int threads = 1; threads <= 2; threads++) {
                bert_gemm_ctx *g = ctx_or_skip(tiers[ti], threads);
                CU_ASSERT_PTR_NOT_NULL_FATAL(g);
                for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                    size_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                    float *X = rand_buf(m * k), *Wt = rand_buf(n * k);
                    float *Y = rand_buf(m * n), *Y0 = rand_buf(m * n);
                    for (size_t q = 0; q < k; q++) /* skewed rows, as GELU's */
                        X[q] = X[q] * 0.3f + 0.6f;
                    bert_wmat W = {Wt, NULL, n, k, pr};
                    CU_ASSERT_EQUAL_FATAL(bert__wmat_pack(&W, threads), BERT_OK);
                    CU_ASSERT_PTR_NOT_NULL_FATAL(W.panels);
                    CU_ASSERT(bert__wmat_packed_bytes(&W) ==
                              bert__wmat_size(n, k, pr));
                    for (int b = 0; b < 2; b++)
                        for (int slot = -1; slot < 1; slot++) {
                            float beta = (float)b;
                            for (size_t i = 0; i < m * n; i++)
                                Y[i] = b ? Y0[i] : NAN;
                            bert__gemm_w(g, slot < 0 ? -1 : threads - 1, m, X,
                                         k, &W, beta, Y, n);
                            double d = check_lowp(pr, m, n, k, X, Wt, beta,
                                                  Y0, Y);
                            if (!(d <= 1.0))
                                printf("\n  %s %s %d thr slot %d %zux%zux%zu "
                                       "beta %g: %g of the bound",
                                       bert__precision_name(pr),
                                       bert__gemm_ctx_kernels(g), threads,
                                       slot, m, n, k, beta, d);
                            CU_ASSERT(d <= 1.0);
                            d = check_lowp_exact(pr, m, n, k, X, Wt, beta, Y0,
                                                 Y);
                            if (!(d <= 1.0))
                                printf("\n  %s %s %d thr %zux%zux%zu: %g of "
                                       "float rounding from the scheme",
                                       bert__precision_name(pr),
                                       bert__gemm_ctx_kernels(g), threads, m,
                                       n, k, d);
                            CU_ASSERT(d <= 1.0);
                        }
                    bert__wmat_free(&W);
                    free(X), free(Wt), free(Y), free(Y0);
                }
                bert__gemm_ctx_free(g);
            }
        }
    /* names and refusals */
    CU_ASSERT_EQUAL(bert__precision_parse("int8"), BERT_PRECISION_INT8);
    CU_ASSERT_EQUAL(bert__precision_parse("bf16"), BERT_PRECISION_BF16);
    CU_ASSERT_EQUAL(bert__precision_parse("fp32"), BERT_PRECISION_FP32);
    CU_ASSERT_EQUAL(bert__precision_parse("fp16"), -1);
    char why[160] = "";
    CU_ASSERT_FALSE(bert__precision_supported(BERT_PRECISION_INT8,
                                              BERT_KERNELS_BLIS, why,
                                              sizeof why));
    CU_ASSERT(strstr(why, "fp32 only") != NULL);
    CU_ASSERT(bert__precision_supported(BERT_PRECISION_FP32,
                                        BERT_KERNELS_BLIS, NULL, 0));
}

/* The widened int8 kernel (plain AVX2, for CPUs without VNNI) called
 * directly, so that it is checked on CPUs whose avx2 tier runs vpdpbusd
 * instead: its outputs must be bit for bit the documented output stage of
 * the exact int32 sums, for the extreme values (255 x -127 in every lane,
 * where AVX2's vpmaddubsw would saturate) and random ones, both with and
 * without accumulation. */
static void test_i8_widened_kernel(void)
{
#if BERT_HAVE_X86_KERNELS
    if (!(bert__cpu_features() & BERT_CPU_AVX2)) {
        printf("\n  skipped: this CPU (or OS) lacks AVX2");
        return;
    }
    enum { MR = 6, NR = BERT_AVX2W_NR };
    static const size_t kgs[] = {1, 3, 192, 768};
    for (size_t ki = 0; ki < sizeof kgs / sizeof kgs[0]; ki++)
        for (int extreme = 0; extreme < 2; extreme++) {
            size_t kg = kgs[ki];
            uint8_t *qa = malloc(MR * kg * 4);
            int8_t *qw = malloc(NR * kg * 4);
            uint64_t *a = malloc(MR * kg * 8);
            uint32_t *b = malloc(kg * BERT_PANEL * 4);
            CU_ASSERT_FATAL(qa && qw && a && b);
            for (size_t q = 0; q < MR * kg * 4; q++)
                qa[q] = extreme ? 255 : (uint8_t)(frand() * 127.5f + 127.5f);
            for (size_t q = 0; q < NR * kg * 4; q++)
                qw[q] = extreme ? (q % 7 ? -127 : 127)
                                : (int8_t)(frand() * 127.0f);
            /* a[g*MR + i]: group g of row i widened; b: group g of column
             * j at b[g*BERT_PANEL + j], values in byte order. */
            for (size_t g = 0; g < kg; g++) {
                for (size_t i = 0; i < MR; i++) {
                    uint64_t v = 0;
                    for (int e = 0; e < 4; e++)
                        v |= (uint64_t)qa[i * kg * 4 + g * 4 + e] << (16 * e);
                    a[g * MR + i] = v;
                }
                for (size_t j = 0; j < BERT_PANEL; j++) {
                    uint32_t v = 0;
                    for (int e = 0; j < NR && e < 4; e++)
                        v |= (uint32_t)(uint8_t)qw[j * kg * 4 + g * 4 + e]
                             << (8 * e);
                    b[g * BERT_PANEL + j] = v;
                }
            }
            float rs[MR], cs[NR], c[MR * NR], c0[MR * NR];
            int32_t rz[MR], csum[NR];
            for (size_t i = 0; i < MR; i++) {
                rs[i] = 0.01f + 0.001f * (float)i;
                rz[i] = (int32_t)(i * 37 % 256);
            }
            for (size_t j = 0; j < NR; j++) {
                int32_t sum = 0;
                for (size_t q = 0; q < kg * 4; q++)
                    sum += qw[j * kg * 4 + q];
                csum[j] = sum;
                cs[j] = 0.003f * (float)(j + 1);
            }
            for (int accumulate = 0; accumulate < 2; accumulate++) {
                for (size_t i = 0; i < MR * NR; i++)
                    c[i] = c0[i] = frand();
                bert__ukr_i8_avx2w(kg, a, b, c, NR, rs, rz, cs, csum,
                                   accumulate);
                int same = 1;
                for (size_t i = 0; i < MR; i++)
                    for (size_t j = 0; j < NR; j++) {
                        int64_t acc = 0;
                        for (size_t q = 0; q < kg * 4; q++)
                            acc += (int64_t)qa[i * kg * 4 + q] *
                                   qw[j * kg * 4 + q];
                        float f = (float)(int32_t)(acc - (int64_t)rz[i] *
                                                             csum[j]);
                        float sc = rs[i] * cs[j];
                        float want = accumulate ? fmaf(f, sc, c0[i * NR + j])
                                                : f * sc;
                        if (memcmp(&want, &c[i * NR + j], sizeof want)) {
                            if (same)
                                printf("\n  kg %zu%s acc %d (%zu,%zu): %.9g, "
                                       "want %.9g",
                                       kg, extreme ? " extreme" : "",
                                       accumulate, i, j, c[i * NR + j],
                                       want);
                            same = 0;
                        }
                    }
                CU_ASSERT(same);
            }
            free(qa), free(qw), free(a), free(b);
        }
#endif
}

/* bert__gemm_wn (Q, K and V as one product) gives each matrix bit for
 * bit what bert__gemm_w gives it alone, in every precision and tier, on
 * the threads (joint column split) and through a slot. */
static void test_joint_weights(void)
{
    static const bert_precision precs[] = {
        BERT_PRECISION_FP32, BERT_PRECISION_INT8, BERT_PRECISION_BF16};
    static const size_t ns[3] = {64, 48, 100};
    for (size_t pi = 0; pi < 3; pi++)
        for (size_t ti = 0; ti < N_TIERS; ti++) {
            if (!bert__precision_supported(precs[pi], tiers[ti], NULL, 0))
                continue;
            for (int threads = 1; threads <= 2; threads++) {
                bert_gemm_ctx *g = ctx_or_skip(tiers[ti], threads);
                CU_ASSERT_PTR_NOT_NULL_FATAL(g);
                for (size_t m = 1; m <= 302; m += 43) { /* 3 row blocks */
                    size_t k = 200;
                    bert_wmat W[3];
                    const bert_wmat *Wp[3];
                    float *X = rand_buf(m * k), *Y[3], *R[3], *Wt[3];
                    for (int j = 0; j < 3; j++) {
                        Wt[j] = rand_buf(ns[j] * k);
                        W[j] = (bert_wmat){Wt[j], NULL, ns[j], k, precs[pi]};
                        if (tiers[ti] != BERT_KERNELS_BLIS)
                            CU_ASSERT_EQUAL_FATAL(bert__wmat_pack(&W[j], 1),
                                                  BERT_OK);
                        Wp[j] = &W[j];
                        Y[j] = rand_buf(m * 100);
                        R[j] = malloc(m * 100 * sizeof(float));
                        memcpy(R[j], Y[j], m * 100 * sizeof(float));
                        bert__gemm_w(g, -1, m, X, k, &W[j], 1.0f, R[j], 100);
                    }
                    for (int slot = -1; slot < 1; slot++) {
                        float *Z[3];
                        for (int j = 0; j < 3; j++) {
                            Z[j] = malloc(m * 100 * sizeof(float));
                            memcpy(Z[j], Y[j], m * 100 * sizeof(float));
                        }
                        bert__gemm_wn(g, slot < 0 ? -1 : threads - 1, m, X, k,
                                      3, Wp, 1.0f, Z, 100);
                        for (int j = 0; j < 3; j++) {
                            int same = !memcmp(Z[j], R[j],
                                               m * 100 * sizeof(float));
                            if (!same)
                                printf("\n  joint %s %s %d thr slot %d m %zu "
                                       "matrix %d differs",
                                       bert__precision_name(precs[pi]),
                                       bert__gemm_ctx_kernels(g), threads,
                                       slot, m, j);
                            CU_ASSERT(same);
                            free(Z[j]);
                        }
                    }
                    for (int j = 0; j < 3; j++) {
                        bert__wmat_free(&W[j]);
                        free(Wt[j]), free(Y[j]), free(R[j]);
                    }
                    free(X);
                }
                bert__gemm_ctx_free(g);
            }
        }
}

/* bert__gemm_w_part (the encoder's tensor-parallel products): columns
 * [c0,c1) of X[:, k0:k1] W[:, k0:k1]^T, depth ranges within and across
 * the 192-deep blocks of the packed layout, column ranges starting inside
 * a panel; every other column of Y untouched, bit for bit. */
static void test_part_products(void)
{
    static const size_t ms[] = {1, 8, 13, 130};
    static const size_t kr[][2] = {{0, 385}, {0, 70},   {70, 250},
                                   {192, 385}, {384, 385}, {200, 200}};
    static const size_t cr[][2] = {{0, 100}, {17, 100}, {48, 96},
                                   {60, 61}, {5, 40},   {30, 30}};
    const size_t n = 100, k = 385;
    for (size_t ti = 0; ti < N_TIERS; ti++) {
        bert_gemm_ctx *g = ctx_or_skip(tiers[ti], 2);
        if (!g)
            continue;
        float *Wt = rand_buf(n * k);
        bert_wmat W[2] = {{Wt, NULL, n, k, BERT_PRECISION_FP32},
                          {Wt, NULL, n, k, BERT_PRECISION_FP32}};
        if (tiers[ti] != BERT_KERNELS_BLIS)
            CU_ASSERT_EQUAL_FATAL(bert__wmat_pack(&W[0], 1), BERT_OK);
        if (!bert__gemm_w_part_ok(g, &W[0])) {
            /* BLIS: no panels of its own */
            CU_ASSERT_EQUAL(tiers[ti], BERT_KERNELS_BLIS);
            bert__wmat_free(&W[0]);
            free(Wt);
            bert__gemm_ctx_free(g);
            continue;
        }
        W[1].panels = W[0].panels;
        const bert_wmat *Wp[2] = {&W[0], &W[1]};
        for (size_t mi = 0; mi < sizeof ms / sizeof *ms; mi++)
            for (size_t a = 0; a < sizeof kr / sizeof *kr; a++)
                for (size_t c = 0; c < sizeof cr / sizeof *cr; c++)
                    for (int b = 0; b < 2; b++) {
                        size_t m = ms[mi], k0 = kr[a][0], k1 = kr[a][1];
                        size_t c0 = cr[c][0], c1 = cr[c][1];
                        float beta = (float)b;
                        float *X = rand_buf(m * k), *Y0 = rand_buf(m * n);
                        float *Y[2] = {malloc(m * n * sizeof(float)),
                                       malloc(m * n * sizeof(float))};
                        for (int j = 0; j < 2; j++) {
                            memcpy(Y[j], Y0, m * n * sizeof(float));
                            for (size_t i = 0; i < m && !b; i++)
                                for (size_t q = c0; q < c1; q++)
                                    Y[j][i * n + q] = NAN;
                        }
                        /* slot 1: the second thread's buffers */
                        bert__gemm_w_part(g, 1, m, X, k, 2, Wp, k0, k1, c0,
                                          c1, beta, Y, n);
                        for (int j = 0; j < 2; j++) {
                            double d = check(m, c1 - c0, k1 - k0, 1.0f,
                                             X + k0, (ptrdiff_t)k, 1,
                                             Wt + c0 * k + k0, 1,
                                             (ptrdiff_t)k, beta, Y0 + c0,
                                             Y[j] + c0, (ptrdiff_t)n, 1);
                            int kept = 1;
                            for (size_t i = 0; i < m; i++)
                                for (size_t q = 0; q < n; q++)
                                    if ((q < c0 || q >= c1) &&
                                        memcmp(&Y[j][i * n + q],
                                               &Y0[i * n + q], sizeof(float)))
                                        kept = 0;
                            if (!(d <= 1e-5) || !kept)
                                printf("\n  part %s m %zu k [%zu,%zu) cols "
                                       "[%zu,%zu) beta %g matrix %d: %g%s",
                                       bert__gemm_ctx_kernels(g), m, k0, k1,
                                       c0, c1, beta, j, d,
                                       kept ? "" : ", other columns written");
                            CU_ASSERT(d <= 1e-5);
                            CU_ASSERT(kept);
                        }
                        free(X), free(Y0), free(Y[0]), free(Y[1]);
                    }
        bert__wmat_free(&W[0]);
        free(Wt);
        bert__gemm_ctx_free(g);
    }
}

/* The kernels' prefetch plan (bert__pf_plan): for every tile count, the
 * tiles bring disjoint, consecutive row ranges of the next panel into L2
 * that together cover it (the AVX2 kernel's plan), and the last of several
 * also brings all of it into L1 (the AVX-512 kernels', which skip its L2
 * range then).  So every row of the next panel is asked for once before
 * that panel is used, none twice and none outside it. */
static void test_prefetch_plan(void)
{
    const size_t ks[] = {1, 7, 64, 191, 192, 384, 768};
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
        for (size_t n = 1; n <= 40; n++) {
            size_t k = ks[ki], next = 0, l1 = 0;
            for (size_t t = 0; t < n; t++) {
                bert_pf pf = bert__pf_plan(t, n, k);
                if (pf.l1) {
                    l1++;
                    CU_ASSERT_EQUAL(t, n - 1);
                }
                CU_ASSERT(pf.lo <= pf.hi && pf.hi <= k);
                if (pf.hi > pf.lo) {
                    CU_ASSERT_EQUAL(pf.lo, next);
                    next = pf.hi;
                }
            }
            CU_ASSERT_EQUAL(next, k);
            CU_ASSERT_EQUAL(l1, n > 1 ? 1u : 0u);
        }
}

/* Tier names, parsing and what AUTO resolves to. */
static void test_tiers(void)
{
    char buf[128];
    unsigned f = bert__cpu_features();
    printf("\n  cpu features: %s; auto = %s",
           bert__cpu_feature_names(f, buf, sizeof buf),
           bert__kernels_name(bert__kernels_best()));
    CU_ASSERT(bert__kernels_supported(BERT_KERNELS_BLIS, NULL, 0));
    CU_ASSERT(bert__kernels_supported(bert__kernels_best(), NULL, 0));
    CU_ASSERT_EQUAL(bert__kernels_supported(BERT_KERNELS_AVX512, NULL, 0),
                    (f & BERT_CPU_AVX512) != 0);
    CU_ASSERT_EQUAL(bert__kernels_supported(BERT_KERNELS_AVX2, NULL, 0),
                    (f & BERT_CPU_AVX2) != 0);
    CU_ASSERT_EQUAL(bert__kernels_parse("avx2"), BERT_KERNELS_AVX2);
    CU_ASSERT_EQUAL(bert__kernels_parse("auto"), BERT_KERNELS_AUTO);
    CU_ASSERT_EQUAL(bert__kernels_parse("sse"), -1);
    CU_ASSERT_FALSE(bert__kernels_supported((bert_kernels)42, buf, sizeof buf));
    bert_gemm_ctx *g = bert__gemm_ctx_create(1, BERT_KERNELS_AUTO, NULL, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(bert__gemm_ctx_tier(g), bert__kernels_best());
    CU_ASSERT_EQUAL(bert__gemm_ctx_set_threads(g, 3), 0);
    CU_ASSERT_EQUAL(bert__gemm_ctx_threads(g), 3);
    bert__gemm_ctx_free(g);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite su = CU_add_suite("gemm", NULL, NULL);
    CU_add_test(su, "tiers", test_tiers);
    CU_add_test(su, "sgemm layouts, shapes, alpha/beta", test_sgemm_layouts);
    CU_add_test(su, "sgemm1 slots from threads", test_sgemm1_slots);
    CU_add_test(su, "packed weights", test_packed_weights);
    CU_add_test(su, "int8 and bf16 weights", test_lowp_weights);
    CU_add_test(su, "the widened int8 kernel (AVX2 without VNNI)",
                test_i8_widened_kernel);
    CU_add_test(su, "Q, K, V as one product", test_joint_weights);
    CU_add_test(su, "tensor-parallel parts of a product", test_part_products);
    CU_add_test(su, "the kernels' prefetch plan", test_prefetch_plan);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures();
    CU_cleanup_registry();
    return fails ? 1 : 0;
}
