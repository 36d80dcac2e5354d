/* test_kernels.c - the BLIS wrapper against a naive triple loop (odd shapes,
 * transposed strides, per-head slices, beta 0 over NaN), and hand-computed
 * LayerNorm, GELU (erf and tanh), softmax and bias cases.  The kernel
 * sources are compiled into this program (they are internal). */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "libbert/gemm.h"
#include "libbert/kernels.h"

static unsigned long long rng = 88172645463325252ull;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

/* C = alpha A B + beta C, all strided, in double. */
static void naive(size_t m, size_t n, size_t k, float alpha, const float *A,
                  ptrdiff_t rsa, ptrdiff_t csa, const float *B, ptrdiff_t rsb,
                  ptrdiff_t csb, float beta, float *C, ptrdiff_t rsc,
                  ptrdiff_t csc)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double s = 0;
            for (size_t p = 0; p < k; p++)
                s += (double)A[(ptrdiff_t)i * rsa + (ptrdiff_t)p * csa] *
                     B[(ptrdiff_t)p * rsb + (ptrdiff_t)j * csb];
            float *c = &C[(ptrdiff_t)i * rsc + (ptrdiff_t)j * csc];
            *c = (float)(alpha * s + (beta == 0.0f ? 0.0 : beta * *c));
        }
}

static double maxdiff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m))
            m = isnan(d) ? INFINITY : d;
    }
    return m;
}

static void test_gemm_shapes(void)
{
    static const size_t shapes[][3] = {{1, 1, 1},  {3, 5, 7},   {17, 1, 33},
                                       {1, 29, 5}, {31, 37, 41}, {64, 9, 130},
                                       {2, 200, 3}};
    for (int threads = 1; threads <= 2; threads++) {
        bert_gemm_ctx *g = bert__gemm_ctx_create(threads);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            size_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
            float *A = malloc(m * k * sizeof *A), *B = malloc(k * n * sizeof *B);
            float *C1 = malloc(m * n * sizeof *C1),
                  *C2 = malloc(m * n * sizeof *C2);
            for (size_t i = 0; i < m * k; i++)
                A[i] = frand();
            for (size_t i = 0; i < k * n; i++)
                B[i] = frand();
            /* 4 layouts: A row/col-major x B row-major / B as W^T (1,k). */
            for (int lay = 0; lay < 4; lay++) {
                ptrdiff_t rsa = lay & 1 ? 1 : (ptrdiff_t)k,
                          csa = lay & 1 ? (ptrdiff_t)m : 1;
                ptrdiff_t rsb = lay & 2 ? 1 : (ptrdiff_t)n,
                          csb = lay & 2 ? (ptrdiff_t)k : 1;
                for (size_t i = 0; i < m * n; i++)
                    C1[i] = C2[i] = frand();
                float beta = lay == 3 ? 0.0f : 0.5f;
                if (beta == 0.0f)
                    for (size_t i = 0; i < m * n; i++)
                        C1[i] = NAN; /* beta 0 must overwrite */
                bert__sgemm(g, m, n, k, 0.75f, A, rsa, csa, B, rsb, csb, beta,
                            C1, (ptrdiff_t)n, 1);
                naive(m, n, k, 0.75f, A, rsa, csa, B, rsb, csb, beta, C2,
                      (ptrdiff_t)n, 1);
                double d = maxdiff(C1, C2, m * n);
                if (d > 1e-5)
                    printf("\n  gemm %zux%zux%zu layout %d: %g", m, n, k, lay,
                           d);
                CU_ASSERT(d <= 1e-5);
            }
            free(A);
            free(B);
            free(C1);
            free(C2);
        }
        bert__gemm_ctx_free(g);
    }
}

/* Attention-style head slices: S = Q_h K_h^T and P V_h into a merged
 * layout, exactly as encoder.c calls them. */
static void test_gemm_heads(void)
{
    size_t T = 13, H = 24, NH = 3, hs = H / NH;
    float *q = malloc(T * H * sizeof *q), *k = malloc(T * H * sizeof *k);
    float *S1 = malloc(T * T * sizeof *S1), *S2 = malloc(T * T * sizeof *S2);
    float *ctx1 = calloc(T * H, sizeof *ctx1), *ctx2 = calloc(T * H, sizeof *ctx2);
    for (size_t i = 0; i < T * H; i++) {
        q[i] = frand();
        k[i] = frand();
    }
    bert_gemm_ctx *g = bert__gemm_ctx_create(2);
    for (size_t h = 0; h < NH; h++) {
        bert__sgemm(g, T, T, hs, 0.5f, q + h * hs, (ptrdiff_t)H, 1, k + h * hs,
                    1, (ptrdiff_t)H, 0.0f, S1, (ptrdiff_t)T, 1);
        naive(T, T, hs, 0.5f, q + h * hs, (ptrdiff_t)H, 1, k + h * hs, 1,
              (ptrdiff_t)H, 0.0f, S2, (ptrdiff_t)T, 1);
        CU_ASSERT(maxdiff(S1, S2, T * T) <= 1e-5);
        bert__sgemm(g, T, hs, T, 1.0f, S1, (ptrdiff_t)T, 1, k + h * hs,
                    (ptrdiff_t)H, 1, 0.0f, ctx1 + h * hs, (ptrdiff_t)H, 1);
        naive(T, hs, T, 1.0f, S2, (ptrdiff_t)T, 1, k + h * hs, (ptrdiff_t)H, 1,
              0.0f, ctx2 + h * hs, (ptrdiff_t)H, 1);
    }
    CU_ASSERT(maxdiff(ctx1, ctx2, T * H) <= 1e-4);
    /* k == 0: C := beta C. */
    float c[2] = {2, 4};
    bert__sgemm(g, 1, 2, 0, 1.0f, q, 1, 1, k, 1, 1, 0.5f, c, 2, 1);
    CU_ASSERT_DOUBLE_EQUAL(c[0], 1.0, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(c[1], 2.0, 1e-7);
    bert__gemm_ctx_free(g);
    free(q);
    free(k);
    free(S1);
    free(S2);
    free(ctx1);
    free(ctx2);
}

static void test_layernorm(void)
{
    /* x = [1,2,3,4]: mean 2.5, var 1.25 -> (x-2.5)/sqrt(1.25+eps). */
    float x[8] = {1, 2, 3, 4, 5, 5, 5, 5}, y[8];
    float w[4] = {1, 2, 1, 1}, b[4] = {0, 0, 1, 0};
    bert__layernorm_forward(y, x, w, b, 2, 4, 1e-5f);
    double r = 1.0 / sqrt(1.25 + 1e-5);
    CU_ASSERT_DOUBLE_EQUAL(y[0], -1.5 * r, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[1], 2 * -0.5 * r, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[2], 0.5 * r + 1, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[3], 1.5 * r, 1e-6);
    /* a constant row normalises to the bias */
    CU_ASSERT_DOUBLE_EQUAL(y[4], 0.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[6], 1.0, 1e-6);
    /* add + layernorm, in place */
    float a[4] = {0, 1, 2, 3}, c[4] = {1, 1, 1, 1};
    bert__add_layernorm_forward(a, a, c, w, b, 1, 4, 1e-5f);
    CU_ASSERT_DOUBLE_EQUAL(a[0], -1.5 * r, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(a[3], 1.5 * r, 1e-6);
}

static void test_activations(void)
{
    /* Reference values: torch.nn.functional.gelu (erf and tanh forms). */
    float xs[5] = {-3.0f, -1.0f, 0.0f, 0.5f, 2.0f};
    const double erf_ref[5] = {-0.0040496941, -0.15865525, 0.0, 0.34573123,
                               1.9544997};
    const double tanh_ref[5] = {-0.0036373920, -0.15880801, 0.0, 0.34571401,
                                1.9545977};
    float a[5], t[5], r[5];
    for (int i = 0; i < 5; i++)
        a[i] = t[i] = r[i] = xs[i];
    bert__gelu_erf_forward(a, 5);
    bert__gelu_tanh_forward(t, 5);
    bert__relu_forward(r, 5);
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_DOUBLE_EQUAL(a[i], erf_ref[i], 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(t[i], tanh_ref[i], 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(r[i], xs[i] > 0 ? xs[i] : 0, 0);
    }
    /* the two GELUs differ: the test can tell them apart */
    CU_ASSERT(fabs(a[0] - t[0]) > 1e-4);
    float th[2] = {0.0f, 1.0f};
    bert__tanh_forward(th, 2);
    CU_ASSERT_DOUBLE_EQUAL(th[1], 0.76159416, 1e-6);
}

static void test_softmax(void)
{
    /* row 0: [1,2,3] -> e^x / sum; row 1 huge values stay finite; row 2
     * masked entirely -> zeros; stride 4. */
    float x[12] = {1, 2, 3, 99, 1000, 1000, 1000, 99, 0, 0, 0, 99};
    bert__softmax_forward(x, 2, 3, 4, 1.0f, NULL);
    double s = exp(1) + exp(2) + exp(3);
    CU_ASSERT_DOUBLE_EQUAL(x[0], exp(1) / s, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(x[2], exp(3) / s, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(x[3], 99, 0); /* padding untouched */
    CU_ASSERT_DOUBLE_EQUAL(x[5], 1.0 / 3, 1e-6);
    float mask[3] = {0, -INFINITY, 0};
    float y[3] = {2, 5, 2};
    bert__softmax_forward(y, 1, 3, 3, 0.5f, mask);
    CU_ASSERT_DOUBLE_EQUAL(y[0], 0.5, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[1], 0.0, 0);
    float allm[3] = {-INFINITY, -INFINITY, -INFINITY};
    bert__softmax_forward(x + 8, 1, 3, 3, 1.0f, allm);
    CU_ASSERT_DOUBLE_EQUAL(x[8], 0.0, 0);
    CU_ASSERT(!isnan(x[9]));
    float bias[3] = {1, 2, 3}, out[6];
    bert__bias_fill(out, bias, 2, 3);
    CU_ASSERT_DOUBLE_EQUAL(out[5], 3, 0);
    CU_ASSERT_DOUBLE_EQUAL(out[3], 1, 0);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite su = CU_add_suite("kernels", NULL, NULL);
    CU_add_test(su, "gemm odd shapes and strides", test_gemm_shapes);
    CU_add_test(su, "gemm head slices", test_gemm_heads);
    CU_add_test(su, "layernorm", test_layernorm);
    CU_add_test(su, "gelu/relu/tanh", test_activations);
    CU_add_test(su, "softmax and bias", test_softmax);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures();
    CU_cleanup_registry();
    return fails ? 1 : 0;
}
