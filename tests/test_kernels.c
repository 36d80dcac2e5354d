/* test_kernels.c - the element-wise kernels against hand-computed
 * LayerNorm, GELU (erf and tanh), softmax and bias cases (the matrix
 * products have tests/test_gemm.c).  The kernel sources are compiled into
 * this program (they are internal). */
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "libbert/kernels.h"

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

/* Against double precision over many values and every row length up to
 * a few vector steps, so the vector paths this CPU runs (AVX-512 or AVX2,
 * with their partial last steps) and the scalar one are held to float
 * accuracy: GELU and its derivative over [-12, 12], softmax rows with
 * masked keys, LayerNorm rows and cross-entropy.  The bounds are 3-80x
 * the largest errors measured on the AVX2 path (Zen 3: GELU 1.4e-6
 * relative, its derivative 1.3e-7, softmax 1e-7, LayerNorm 2.5e-7,
 * cross-entropy 2e-8), far below what a wrong coefficient or a mishandled
 * partial step gives. */
static double gelu_d(double x)
{
    return 0.5 * x * erfc(-x / sqrt(2.0)); /* 1 + erf without cancelling */
}

static void test_against_double(void)
{
    enum { N = 2401 };
    static float x[N], g[N], dg[N], ones[N];
    double worst = 0, worst_d = 0;
    for (int i = 0; i < N; i++) {
        x[i] = g[i] = (float)(-12.0 + 24.0 * i / (N - 1));
        dg[i] = 0.25f;
        ones[i] = 1.0f;
    }
    bert__gelu_erf_forward(g, N);
    bert__gelu_erf_backward(dg, ones, x, N);
    for (int i = 0; i < N; i++) {
        double v = x[i], ref = gelu_d(v);
        double dref = 0.25 + 0.5 * erfc(-v / sqrt(2.0)) +
                      v * exp(-0.5 * v * v) / sqrt(2.0 * M_PI);
        /* relative, down to values of 1e-6: further into the left tail
         * the float argument of erfc's exp alone (about -z^2, an ulp of
         * 8e-6 near 65) limits the relative precision of any float erf
         * GELU, and the values are below 1e-20 there */
        double e = fabs(g[i] - ref) / (fabs(ref) + 1e-6);
        double ed = fabs(dg[i] - dref);
        if (e > worst)
            worst = e;
        if (ed > worst_d)
            worst_d = ed;
    }
    printf("\n  gelu: largest relative error %.2g, derivative %.2g", worst,
           worst_d);
    CU_ASSERT(worst < 5e-6);
    CU_ASSERT(worst_d < 2e-6);

    /* softmax, LayerNorm and cross-entropy rows of every length 1..40 */
    srand(7);
    double ws = 0, wl = 0, wx = 0;
    for (size_t n = 1; n <= 40; n++) {
        float row[40], in[40], mask[40], w[40], b[40], ln[40], d[40];
        for (size_t i = 0; i < n; i++) {
            in[i] = row[i] = (float)(rand() % 2001 - 1000) / 97.0f;
            mask[i] = (i % 5 == 3) ? -INFINITY : 0.0f;
            w[i] = 0.5f + (float)i / 40;
            b[i] = (float)i / 80 - 0.25f;
        }
        bert__softmax_forward(row, 1, n, n, 0.7f, mask);
        double mx = -INFINITY, sum = 0;
        for (size_t i = 0; i < n; i++)
            if (mask[i] == 0.0f && 0.7 * in[i] > mx)
                mx = 0.7 * in[i];
        for (size_t i = 0; i < n; i++)
            sum += mask[i] == 0.0f ? exp(0.7 * in[i] - mx) : 0.0;
        for (size_t i = 0; i < n; i++) {
            double ref = mask[i] == 0.0f ? exp(0.7 * in[i] - mx) / sum : 0.0;
            double e = fabs(row[i] - ref);
            if (mask[i] != 0.0f)
                CU_ASSERT_EQUAL(row[i], 0.0f);
            ws = e > ws ? e : ws;
        }
        bert__layernorm_forward(ln, in, w, b, 1, n, 1e-5f);
        double mean = 0, var = 0;
        for (size_t i = 0; i < n; i++)
            mean += in[i];
        mean /= (double)n;
        for (size_t i = 0; i < n; i++)
            var += (in[i] - mean) * (in[i] - mean);
        var /= (double)n;
        for (size_t i = 0; i < n; i++) {
            double ref = (in[i] - mean) / sqrt(var + 1e-5) * w[i] + b[i];
            double e = fabs(ln[i] - ref);
            wl = e > wl ? e : wl;
        }
        size_t target = n / 2;
        double loss = 0;
        if (bert__xent_row(d, in, target, n, 0.5f, &loss) == 0) {
            double m2 = -INFINITY, s2 = 0;
            for (size_t i = 0; i < n; i++)
                m2 = in[i] > m2 ? in[i] : m2;
            for (size_t i = 0; i < n; i++)
                s2 += exp(in[i] - m2);
            double lref = log(s2) + m2 - in[target];
            wx = fabs(loss - lref) > wx ? fabs(loss - lref) : wx;
            for (size_t i = 0; i < n; i++) {
                double ref = 0.5 * (exp(in[i] - m2) / s2 - (i == target));
                double e = fabs(d[i] - ref);
                wx = e > wx ? e : wx;
            }
        }
    }
    printf(", softmax %.2g, layernorm %.2g, cross-entropy %.2g ", ws, wl, wx);
    CU_ASSERT(ws < 1e-6);
    CU_ASSERT(wl < 2e-5);
    CU_ASSERT(wx < 1e-6);
}

int main(void)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    CU_pSuite su = CU_add_suite("kernels", NULL, NULL);
    CU_add_test(su, "layernorm", test_layernorm);
    CU_add_test(su, "gelu/relu/tanh", test_activations);
    CU_add_test(su, "softmax and bias", test_softmax);
    CU_add_test(su, "against double precision", test_against_double);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned fails = CU_get_number_of_failures();
    CU_cleanup_registry();
    return fails ? 1 : 0;
}
